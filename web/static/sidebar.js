// The friends sidebar: who is online now (from the stream's `ready` and
// `presence` frames) and who is away, with when they were last seen.

import { h, avatar, loginEl, announce, plural } from './dom.js';
import { profileHref } from './router.js';
import { timeEl, parseTime } from './time.js';
import { learnName } from './names.js';

const key = (login) => String(login).toLowerCase();
const byName = (a, b) => (a.user.name || a.user.login).localeCompare(b.user.name || b.user.login);

// Most recently seen first; never-seen friends last.
function byLastSeen(a, b) {
  const ta = parseTime(a.lastSeen)?.getTime() ?? -Infinity;
  const tb = parseTime(b.lastSeen)?.getTime() ?? -Infinity;
  return tb - ta || byName(a, b);
}

// Beside the feed or above it (a phone): the Away group opens or closes
// with the width. One listener for the page, which finds the panel shown
// when the width changes, not one per panel: session.js drops a signed-out
// session's panel without telling it, and a listener of its own would keep
// it alive for the life of the page, one more for each sign-in.
const wide = window.matchMedia('(min-width: 821px)');
wide.addEventListener('change', () => {
  for (const group of document.querySelectorAll('details.away-group')) group.open = wide.matches;
});

/** Sidebar renders the friends panel; session.js feeds it lists, frames.js frames. */
export class Sidebar {
  constructor() {
    // login (lower case) → {user: {id, login, name}, online, lastSeen, li, shape}
    this.friends = new Map();
    this.snapshotSeen = false;

    this.count = h('span', { class: 'count', dataset: { testid: 'online-count' } }, '0');
    this.onlineList = h('ul', { class: 'friend-list', 'aria-label': 'Online now' });
    this.noneOnline = h('p', { class: 'muted small' }, 'None of your friends are online right now.');
    this.awayCount = h('span', { class: 'group-count' }, '0');
    this.awayList = h('ul', { class: 'friend-list', 'aria-labelledby': 'away-heading' });
    // A disclosure, open beside the feed but closed on a phone, where the
    // panel sits above the feed and every line of it pushes the feed down.
    this.awayGroup = h('details', { class: 'away-group' },
      h('summary', { class: 'group-summary' },
        h('h3', { class: 'group-heading', id: 'away-heading' }, 'Away'), ' ', this.awayCount),
      this.awayList,
    );
    this.awayGroup.open = wide.matches;
    this.hint = h('p', { class: 'muted small', hidden: true },
      'Friends are people you follow who follow you back. ',
      h('a', { href: '/search' }, 'Find people'), ' by name, or on the ', h('a', { href: '/global' }, 'global timeline'), '.');
    this.staleNote = h('p', { class: 'muted small stale-note', hidden: true }, 'Not live: this list may be out of date.');
    this.site = h('p', { class: 'muted small site-presence', hidden: true });

    this.el = h('div', { class: 'sidebar-inner' },
      h('section', { class: 'panel friends', dataset: { testid: 'online-friends' }, 'aria-labelledby': 'friends-heading' },
        h('h2', { class: 'panel-heading', id: 'friends-heading' }, 'Friends online ', this.count),
        this.staleNote,
        this.onlineList,
        this.noneOnline,
        this.awayGroup,
        this.hint,
      ),
      this.site,
    );
    this.render();
  }

  /** has says whether login is among the friends shown. */
  has(login) {
    return this.friends.has(key(login));
  }

  entry(user) {
    learnName(user);
    const k = key(user.login);
    let e = this.friends.get(k);
    if (!e) {
      e = { user: { id: user.id, login: user.login, name: user.name }, online: false, lastSeen: null, li: null, shape: '' };
      this.friends.set(k, e);
    } else if (user.name) {
      e.user.name = user.name;
    }
    return e;
  }

  /** setSnapshot takes the `ready` frame's online_friends: exactly these are online now. */
  setSnapshot(items) {
    this.snapshotSeen = true;
    for (const e of this.friends.values()) e.online = false;
    for (const item of items || []) {
      if (!item || !item.user) continue;
      const e = this.entry(item.user);
      e.online = true;
      e.lastSeen = item.last_seen ?? e.lastSeen;
    }
    this.render();
  }

  /** presence applies a `presence` frame: a friend came or went. */
  presence(frame) {
    if (!frame.user || !frame.user.login) return;
    const e = this.entry(frame.user);
    const was = e.online;
    e.online = frame.online === true;
    e.lastSeen = frame.last_seen ?? e.lastSeen;
    this.render();
    if (was !== e.online) {
      announce(`${e.user.name || e.user.login} ${e.online ? 'is online' : 'went away'}`);
    }
  }

  /** rename applies a `profile` frame: a friend took a new name. */
  rename(user) {
    const e = this.friends.get(key(user.login));
    if (!e || typeof user.name !== 'string') return;
    e.user.name = user.name;
    e.shape = ''; // drawn again, with the new name
    this.render();
  }

  /** removeFriend applies a `friend_removed` frame: an unfollow ended the friendship. */
  removeFriend(user) {
    if (!user || !user.login) return;
    if (this.friends.delete(key(user.login))) this.render();
  }

  /**
   * setFriends merges GET /friends. For friends the stream already spoke of,
   * its frames stay the word on who is online; the list adds the rest (and
   * when they were last seen). With `complete`, people missing from the
   * list are no longer friends and leave the panel.
   */
  setFriends(users, complete) {
    const seen = new Set();
    for (const u of users) {
      seen.add(key(u.login));
      const known = this.friends.has(key(u.login));
      const e = this.entry(u);
      // Fresh from the server, so it is the best word on a friend the
      // stream has not mentioned yet (say, one made a moment ago).
      if (!known && typeof u.online === 'boolean') e.online = u.online;
      if (u.last_seen && (!e.lastSeen || !e.online)) e.lastSeen = u.last_seen;
    }
    if (complete) {
      for (const k of [...this.friends.keys()]) {
        if (!seen.has(k)) this.friends.delete(k);
      }
    }
    this.render();
  }

  /** setLive dims the panel while the stream is down, since it cannot be trusted then. */
  setLive(live) {
    this.el.classList.toggle('is-stale', !live);
    this.staleNote.hidden = live || !this.snapshotSeen;
  }

  /** setSiteCounts shows GET /presence, or hides the line when null. */
  setSiteCounts(counts) {
    if (!counts) {
      this.site.hidden = true;
      return;
    }
    // Two unbreakable halves, so a narrow panel wraps at the separator.
    this.site.replaceChildren(
      h('span', { class: 'nowrap' }, `${plural(counts.online, 'person', 'people')} on Chorus now`),
      ' · ',
      h('span', { class: 'nowrap' }, `${counts.active_last_10m} active in the last 10 min`),
    );
    this.site.hidden = false;
  }

  render() {
    const all = [...this.friends.values()];
    const online = all.filter((e) => e.online).sort(byName);
    const away = all.filter((e) => !e.online).sort(byLastSeen);
    this.sync(this.onlineList, online, 'online-friend');
    this.sync(this.awayList, away, 'away-friend');
    this.count.textContent = String(online.length);
    this.count.dataset.zero = String(online.length === 0);
    this.awayCount.textContent = String(away.length);
    this.noneOnline.hidden = online.length > 0 || all.length === 0;
    this.awayGroup.hidden = away.length === 0;
    this.hint.hidden = all.length > 0;
  }

  // sync makes list show exactly `entries` in order, reusing their <li>s so
  // keyboard focus survives updates elsewhere in the list.
  sync(list, entries, testid) {
    entries.forEach((e, i) => {
      const shape = `${testid}|${e.user.name}|${e.online ? '' : e.lastSeen}`;
      if (!e.li || e.shape !== shape) {
        const fresh = friendEl(e, testid);
        if (e.li) e.li.replaceWith(fresh);
        e.li = fresh;
        e.shape = shape;
      }
      if (list.children[i] !== e.li) list.insertBefore(e.li, list.children[i] || null);
    });
    while (list.children.length > entries.length) list.lastElementChild.remove();
  }

  reset() {
    this.friends.clear();
    this.snapshotSeen = false;
    this.onlineList.replaceChildren();
    this.awayList.replaceChildren();
    this.setSiteCounts(null);
    this.render();
  }
}

function friendEl(e, testid) {
  const online = testid === 'online-friend';
  return h('li', { class: `friend ${online ? 'is-online' : 'is-away'}`, dataset: { testid, login: e.user.login } },
    h('a', { class: 'friend-link', href: profileHref(e.user.login) },
      h('span', { class: 'friend-avatar' }, avatar(e.user, 'sm'), h('span', { class: 'dot', 'aria-hidden': 'true' })),
      h('span', { class: 'friend-text' },
        h('span', { class: 'friend-name' }, e.user.name || e.user.login),
        h('span', { class: 'friend-sub' },
          loginEl(e.user.login),
          online
            ? h('span', { class: 'visually-hidden' }, ', online')
            : [' · ', timeEl(e.lastSeen, { prefix: 'last seen ', missing: 'not seen yet' })],
        ),
      ),
    ),
  );
}
