// Notifications, as the server keeps them: the bell (a link to the
// notifications page, with the number unread), and the page itself.
// The number unread comes with each connection's `ready`, grows with each
// `notification` frame (and shrinks when one is taken back,
// `notification_removed`, or many, `notifications_removed`) and goes to
// zero once read here or, through a `notifications_read` frame, on another
// device. The page (/notifications) pages through GET /notifications,
// groups adjacent likes and reposts of one post ("Ada and 3 others liked
// your post"), marks those newer than the server's read marker, and then
// moves the marker to the newest. Live arrivals and removals change only
// the rows they touch, and past MAX_SHOWN an arrival pushes the oldest
// out, to be paged back.

import { h, avatar, announce, plural, loginEl } from './dom.js';
import { api, isAbort, query } from './api.js';
import { profileHref, statusHref } from './router.js';
import { timeEl } from './time.js';
import { learnName } from './names.js';
import { icon } from './icons.js';
import { heading } from './page.js';
import { badgeText } from './header.js';

const PAGE = 30;
// Past this many notifications held, a live arrival drops the oldest (as
// the timeline's MAX_SHOWN does): a page left open for days would
// otherwise hold, and group on every frame, each one come meanwhile.
// "Load more" brings the dropped ones back.
const MAX_SHOWN = 300;
// The least time between two asks of the unread count, and between two
// moves of the read marker: another user's like and unlike over and over
// sends a frame each, which must not spend this user's read limit.
const COALESCE_MS = 2500;

/**
 * coalesced wraps fn, which returns a promise, so that calls within
 * COALESCE_MS of its last run make one more run at the end of that time,
 * not one each. It returns {call, flush, cancel}: flush runs a pending
 * call now, cancel drops it.
 */
function coalesced(fn) {
  let timer = 0;
  let lastRun = -Infinity;
  const run = () => {
    timer = 0;
    lastRun = Date.now();
    return fn();
  };
  return {
    call() {
      if (timer) return; // the run planned will see this call's reason too
      timer = setTimeout(run, Math.max(0, lastRun + COALESCE_MS - Date.now()));
    },
    flush() {
      if (!timer) return;
      clearTimeout(timer);
      run();
    },
    cancel() {
      clearTimeout(timer);
      timer = 0;
    },
  };
}

/**
 * Notifications is the signed-in session's count of unread notifications
 * and the bell that shows it. listen(fn) calls fn(n) on each change (the
 * phone's tab bar shows it too).
 */
export class Notifications {
  constructor() {
    this.unread = 0;
    this.newest = 0; // the highest notification id heard of
    this.lastRead = 0; // the read marker, as far as known here
    this.viewing = false; // the page is shown: arrivals are read as they come
    this.listeners = new Set();
    this.closed = false;
    this.again = 0; // the timer of changed's second ask
    this.asking = coalesced(() => api('GET', '/notifications/unread').then((res) => {
      if (!this.closed) this.setUnread(res.count);
    }, () => {}));
    this.count = h('span', { class: 'bell-count', hidden: true, dataset: { testid: 'notes-count' } });
    this.button = h('a', { href: '/notifications', class: 'bell', dataset: { testid: 'notes-button', route: 'notifications' } },
      icon('bell'), this.count);
    // Said once per arrival, apart from the link, which is read only on focus.
    this.live = h('span', { class: 'visually-hidden', 'aria-live': 'polite', dataset: { testid: 'notes-live' } });
    this.el = h('span', { class: 'notes' }, this.button, this.live);
    this.setUnread(0);
  }

  listen(fn) {
    this.listeners.add(fn);
    fn(this.unread);
    return () => this.listeners.delete(fn);
  }

  /** setUnread shows n unread (the `ready` frame's count, or a fresh GET /notifications/unread). */
  setUnread(n) {
    this.unread = Math.max(0, Number(n) || 0);
    const u = this.unread;
    this.count.hidden = u === 0;
    this.count.textContent = badgeText(u); // "99+" past 99, as on the phone's tab bar
    this.button.dataset.unread = String(u);
    this.button.title = u ? `Notifications: ${u} unread` : 'Notifications';
    // The accessible name holds the exact number, and says what it counts.
    this.button.setAttribute('aria-label', u ? `Notifications, ${u} unread` : 'Notifications');
    for (const fn of this.listeners) fn(u);
  }

  /** seen notes that notification id exists (the page showed it). */
  seen(id) {
    this.newest = Math.max(this.newest, Number(id) || 0);
  }

  /** notification takes a `notification` frame's notification. */
  notification(n) {
    if (!n || !n.id) return;
    this.seen(n.id);
    if (this.viewing && !document.hidden) return; // the page shows it and reads it
    if (Number(n.id) <= this.lastRead) return;
    this.setUnread(this.unread + 1);
    this.live.textContent = `${describe([n])}. ${plural(this.unread, 'unread notification')}.`;
  }

  /**
   * removed takes a `notification_removed` frame's id: what it told of was
   * undone. Unread, it counted: ask the server how many are left.
   */
  removed(id) {
    if (Number(id) <= this.lastRead || this.unread === 0) return;
    this.refresh();
  }

  /**
   * removedMany takes a `notifications_removed` frame's ids (a block or a
   * mute took the other's): as removed, one ask for them all.
   */
  removedMany(ids) {
    if (!Array.isArray(ids) || !ids.some((id) => Number(id) > this.lastRead)) return;
    if (this.unread > 0) this.refresh();
  }

  /** refresh asks the server how many are unread: soon, once for every call in a burst. */
  refresh() {
    this.asking.call();
  }

  /**
   * changed is told that notifications may have been taken back with no
   * frame each (a status deleted takes its likes' and reposts'): unread,
   * they counted, so ask, and ask again a little later for those taken
   * back after the word came (a status's later pages of likes, in the
   * server's own time). Nothing unread, nothing to ask.
   */
  changed() {
    if (this.unread === 0 || this.closed) return;
    this.refresh();
    clearTimeout(this.again);
    this.again = setTimeout(() => {
      if (!this.closed && this.unread > 0) this.refresh();
    }, COALESCE_MS * 2);
  }

  /** read takes the read marker moved to lastRead, here or on another device. */
  read(lastRead) {
    const marker = Number(lastRead) || 0;
    if (marker <= this.lastRead) return;
    this.lastRead = marker;
    // Past the newest heard of since this page loaded: nothing is left.
    // Before any arrival the newest is unknown, so ask.
    if (this.newest > 0 && marker >= this.newest) {
      this.setUnread(0);
      return;
    }
    this.refresh(); // some came after the marker: ask how many
  }

  destroy() {
    this.closed = true;
    this.asking.cancel();
    clearTimeout(this.again);
    this.listeners.clear();
  }
}

// whoName is how a notification names its sender.
function whoName(u) {
  return u.name || u.login;
}

const DOES = {
  followed: 'followed you',
  liked: 'liked your post',
  reposted: 'reposted your post',
  replied: 'replied to your post',
  mentioned: 'mentioned you',
};

/** describe says a group of notifications (newest first) in words. */
function describe(group) {
  const n = group[0];
  const who = whoName(n.from);
  const does = DOES[n.type] || n.type;
  if (group.length === 1) return `${who} ${does}`;
  if (group.length === 2) return `${who} and ${whoName(group[1].from)} ${does}`;
  return `${who} and ${group.length - 1} others ${does}`;
}

// groupable: notifications of one kind that make one line when adjacent.
const GROUPED = new Set(['liked', 'reposted']);

/** groups folds adjacent likes (or reposts) of one status into one group. */
export function groups(items) {
  const out = [];
  for (const n of items) {
    const last = out[out.length - 1];
    const same = last && GROUPED.has(n.type) && last[0].type === n.type &&
      n.status && last[0].status && Number(n.status.id) === Number(last[0].status.id);
    if (same) last.push(n);
    else out.push([n]);
  }
  return out;
}

// groupEl renders one group; unread when any of it is newer than lastRead.
function groupEl(group, lastRead) {
  const n = group[0];
  const unread = group.some((x) => Number(x.id) > lastRead);
  for (const x of group) learnName(x.from);
  const who = h('a', { href: profileHref(n.from.login), class: 'note-who' }, whoName(n.from));
  let rest;
  if (group.length === 1) rest = [' ', DOES[n.type] || n.type];
  else if (group.length === 2) rest = [' and ', h('a', { href: profileHref(group[1].from.login), class: 'note-who' }, whoName(group[1].from)), ' ', DOES[n.type]];
  else rest = [` and ${group.length - 1} others `, DOES[n.type]];
  // The @login of each sender named: a display name alone could be anyone's.
  const named = group.length === 2 ? group : group.slice(0, 1);
  const from = h('p', { class: 'note-from', dataset: { testid: 'note-from' } },
    named.map((x, i) => [i > 0 && ' · ', loginEl(x.from.login)]));
  const st = n.status;
  const excerpt = st && h('a', { href: statusHref(st.id), class: 'note-status', dataset: { testid: 'note-status' } },
    String(st.message || '').slice(0, 200) || 'A post');
  return h('li', {
    class: `note note-${n.type}${unread ? ' is-unread' : ''}`,
    dataset: { testid: 'note', type: n.type, id: String(n.id), unread: String(unread), count: String(group.length) },
  },
  h('span', { class: 'note-avatars', 'aria-hidden': 'true' }, group.slice(0, 4).map((x) => avatar(x.from, 'sm'))),
  h('div', { class: 'note-body' },
    h('p', { class: 'note-text', dataset: { testid: 'note-text' } },
      unread && h('span', { class: 'unread-dot', dataset: { testid: 'note-unread' } }, h('span', { class: 'visually-hidden' }, 'Unread: ')),
      who, ...rest),
    from,
    excerpt,
    h('span', { class: 'muted small' }, timeEl(n.created)),
  ));
}

/** notificationsView is the notifications page; notes is the session's Notifications. */
export function notificationsView(ctx, notes) {
  const abort = new AbortController();
  const h1 = heading('Notifications');
  const list = h('ol', { class: 'notes-list card', 'aria-label': 'Notifications', dataset: { testid: 'notes-list' } });
  const note = h('p', { class: 'timeline-note', role: 'status', dataset: { testid: 'notes-note' } }, 'Loading…');
  const more = h('button', { type: 'button', class: 'btn btn-secondary', hidden: true, dataset: { testid: 'notes-more' } }, 'Load more');
  const empty = h('div', { class: 'empty', hidden: true },
    h('p', { class: 'empty-title' }, 'Nothing yet.'),
    h('p', { class: 'muted' }, 'When someone follows you, replies, mentions, likes or reposts your posts, it shows here.'));
  const el = h('div', { class: 'view' }, h1, list, empty, h('div', { class: 'timeline-foot' }, note, more));

  let items = []; // newest first
  let lastRead = 0; // the marker when the page opened: what it marks unread
  let sentUpTo = 0; // the highest up_to this page sent
  let readTo = 0; // the newest notification a page read, shown or left out: read once shown
  let nextBefore = null;
  let loading = false;

  // shown holds each row by its key (its notifications' ids, and whether
  // it is marked unread), and groupOf each row's group: render makes rows
  // only for the groups new or changed and leaves the others in place. A
  // list built anew on each frame would drop a keyboard or screen reader
  // user's focus to the page's start at every arrival, and make every row
  // again for one.
  let shown = new Map();
  const groupOf = new WeakMap();
  const keyOf = (g) => g.map((x) => x.id).join(',') + (g.some((x) => Number(x.id) > lastRead) ? '*' : '');

  const render = () => {
    const old = [...list.children];
    const active = list.contains(document.activeElement) ? document.activeElement : null;
    const next = new Map();
    const made = new Map(); // notification id → the row made for it this time
    const rows = groups(items).map((g) => {
      const key = keyOf(g);
      let li = shown.get(key);
      if (!li) {
        li = groupEl(g, lastRead);
        groupOf.set(li, g);
        for (const x of g) made.set(Number(x.id), li);
      }
      next.set(key, li);
      return li;
    });
    shown = next;
    // What stays keeps its order (notifications are only ever added at
    // either end or taken out), so the rows kept are not moved, which
    // would blur them: the new ones go in between.
    const keep = new Set(rows);
    for (const li of old) if (!keep.has(li)) li.remove();
    let at = list.firstElementChild;
    for (const li of rows) {
      if (li === at) at = at.nextElementSibling;
      else list.insertBefore(li, at);
    }
    list.hidden = items.length === 0;
    empty.hidden = items.length > 0 || loading;
    if (active && !active.isConnected) refocus(active, old, made);
  };

  // refocus puts the focus, lost with the row that held it, on that row
  // made again (merged into a group, or its mark gone), else on the
  // nearest row left, the next first, at the same spot in it (the same
  // kind of link); else on the list, or the heading when nothing is left.
  const refocus = (active, old, made) => {
    const heir = (li) => {
      if (li.isConnected) return li;
      for (const x of groupOf.get(li) || []) {
        const again = made.get(Number(x.id));
        if (again) return again;
      }
      return null;
    };
    const i = old.findIndex((li) => li.contains(active));
    let to = i < 0 ? null : heir(old[i]);
    for (let j = i + 1; !to && i >= 0 && j < old.length; j++) to = heir(old[j]);
    for (let j = i - 1; !to && j >= 0; j--) to = heir(old[j]);
    if (to) {
      const like = (root) => [...root.querySelectorAll('a[href], button')]
        .filter((x) => x.className === active.className);
      const from = i < 0 ? [] : like(old[i]);
      const there = like(to);
      const spot = there[Math.min(Math.max(from.indexOf(active), 0), there.length - 1)] ||
        to.querySelector('a[href], button');
      if (spot) {
        spot.focus();
        return;
      }
    }
    if (!list.hidden) {
      list.tabIndex = -1;
      list.focus();
    } else {
      h1.focus();
    }
  };

  // trim drops the oldest past MAX_SHOWN, after live arrivals, and moves
  // the paging cursor to the oldest kept, so that "Load more" goes on
  // from there. Not while a page is under way: it would land past a hole;
  // the next arrival trims.
  const trim = () => {
    if (items.length <= MAX_SHOWN || loading) return;
    items = items.slice(0, MAX_SHOWN);
    nextBefore = Number(items[items.length - 1].id);
    note.textContent = '';
    more.textContent = 'Load more';
    more.hidden = false;
  };

  // markRead moves the server's marker to the newest shown, once visible,
  // at most once per COALESCE_MS: arrivals meanwhile wait for the next.
  // Left before its time, the page sends the last one at once (destroy),
  // which the page's abort then does not cancel.
  let leaving = false;
  const marking = coalesced(async () => {
    const newest = Math.max(items.length ? Number(items[0].id) : 0, readTo);
    if (document.hidden || newest <= sentUpTo) return;
    sentUpTo = newest;
    notes.seen(newest);
    notes.read(newest);
    try {
      await api('PUT', '/notifications/read', { up_to: newest }, { signal: leaving ? undefined : abort.signal });
    } catch (err) {
      if (!isAbort(err)) console.warn('notifications read:', err.message);
    }
  });
  const markRead = () => marking.call();

  // deleted holds the statuses this page was told were deleted: a
  // notification about one that comes after (its frame late, or a page
  // read before the deletion) is not shown.
  const deleted = new Set();
  const goneStatus = (x) => Boolean(x.status) && deleted.has(Number(x.status.id));

  // drop takes out the notifications gone that match says.
  const drop = (match) => {
    const before = items.length;
    items = items.filter((x) => !match(x));
    if (items.length !== before) render();
  };

  const loadPage = async (before) => {
    loading = true;
    more.hidden = true;
    note.textContent = before ? 'Loading older notifications…' : 'Loading…';
    try {
      const page = await api('GET', '/notifications' + query({ limit: PAGE, before }), undefined, { signal: abort.signal });
      readTo = Math.max(readTo, Number(page.up_to) || 0);
      const have = new Set(items.map((x) => Number(x.id)));
      items = items.concat((page.notifications || []).filter((x) => x.from && !have.has(Number(x.id)) && !goneStatus(x)));
      nextBefore = page.next_before ?? null;
      note.textContent = nextBefore === null && items.length ? 'That is all.' : '';
      more.hidden = nextBefore === null;
      return true;
    } catch (err) {
      if (isAbort(err)) return false;
      note.textContent = `Could not load notifications: ${err.message}`;
      more.textContent = 'Try again';
      more.hidden = false;
      return false;
    } finally {
      loading = false;
      render();
    }
  };

  more.addEventListener('click', () => {
    more.textContent = 'Load more';
    loadPage(items.length ? nextBefore : null);
  });

  (async () => {
    try {
      const unread = await api('GET', '/notifications/unread', undefined, { signal: abort.signal });
      lastRead = Number(unread.last_read) || 0;
    } catch (err) {
      if (isAbort(err)) return;
      lastRead = Number.MAX_SAFE_INTEGER; // unknown: mark nothing
    }
    if (await loadPage(null)) markRead();
  })();

  // Frames missed while the connection was down are not replayed: once it
  // is live again, the newest page fills the gap, and what this page
  // shows within that page's reach but the server no longer holds (taken
  // back meanwhile) goes.
  const catchUp = async () => {
    if (loading) return;
    try {
      const page = await api('GET', '/notifications' + query({ limit: PAGE }), undefined, { signal: abort.signal });
      // What the page read, shown or left out (a suspended sender's), is
      // read with it, as at the page's first load.
      const unshown = Number(page.up_to) > readTo;
      readTo = Math.max(readTo, Number(page.up_to) || 0);
      const got = (page.notifications || []).filter((x) => x.from);
      const held = new Set(got.map((x) => Number(x.id)));
      const reach = page.next_before == null || got.length === 0 ? -Infinity : Number(got[got.length - 1].id);
      const top = items.length ? Number(items[0].id) : 0;
      const fresh = got.filter((x) => Number(x.id) > top && !goneStatus(x));
      const kept = items.filter((x) => Number(x.id) < reach || held.has(Number(x.id)));
      if (fresh.length || kept.length !== items.length) {
        items = fresh.concat(kept);
        trim();
        render();
      }
      if (fresh.length || unshown) markRead();
    } catch (err) {
      if (!isAbort(err)) console.warn('notifications:', err.message);
    }
  };
  ctx.liveAgain.add(catchUp);

  const onVisible = () => {
    if (!document.hidden) markRead();
  };
  document.addEventListener('visibilitychange', onVisible);
  notes.viewing = true;

  return {
    el,
    title: 'Notifications',
    heading: h1,
    onFrame(frame) {
      if (frame.type === 'notification' && frame.notification && frame.notification.from) {
        const n = frame.notification;
        if (goneStatus(n) || items.some((x) => Number(x.id) === Number(n.id))) return;
        items.unshift(n);
        trim();
        render();
        announce(describe([n]));
        markRead();
      } else if (frame.type === 'notification_removed') {
        drop((x) => Number(x.id) === Number(frame.id));
      } else if (frame.type === 'notifications_removed' && Array.isArray(frame.ids)) {
        const gone = new Set(frame.ids.map(Number));
        drop((x) => gone.has(Number(x.id)));
      } else if (frame.type === 'notifications_read') {
        // Read on another device: the marks go. (Our own read moves the
        // marker too; what this page marked stays marked until it is left.)
        const marker = Number(frame.last_read) || 0;
        if (marker > sentUpTo && marker > lastRead) {
          lastRead = marker;
          render();
        }
      }
    },
    // A status deleted takes its likes' and reposts' notifications with
    // it, with no frame each (Notifications.changed).
    onDeleted(id) {
      deleted.add(Number(id));
      drop(goneStatus);
    },
    destroy() {
      abort.abort();
      leaving = true;
      marking.flush();
      ctx.liveAgain.delete(catchUp);
      notes.viewing = false;
      document.removeEventListener('visibilitychange', onVisible);
    },
  };
}
