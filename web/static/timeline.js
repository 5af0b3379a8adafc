// A list of statuses, newest first: first page, older pages on scroll (with
// a "Load more" button for when the observer cannot help), live inserts
// deduplicated by id, and removal of deleted statuses.

import { h, avatar, loginEl, profileHref, sameLogin } from './dom.js';
import { timeEl } from './time.js';
import { isAbort } from './api.js';

// @mentions (not inside e-mail addresses) and plain http(s) links.
const LINKS = /(?<![A-Za-z0-9_])@([A-Za-z0-9_]{3,32})(?![A-Za-z0-9_])|\bhttps?:\/\/[^\s<>"]+/g;

/** messageNodes splits a message into text nodes and links, never parsing HTML. */
export function messageNodes(message) {
  const out = [];
  let last = 0;
  for (const m of message.matchAll(LINKS)) {
    let text = m[0];
    let href;
    if (m[1]) {
      href = profileHref(m[1]);
    } else {
      // A sentence's closing punctuation is not part of the link.
      text = text.replace(/[.,;:!?)\]'"]+$/, '');
      href = text;
    }
    if (m.index > last) out.push(message.slice(last, m.index));
    out.push(h('a', { href, class: m[1] ? 'mention' : 'ext', rel: m[1] ? null : 'noopener noreferrer nofollow ugc' }, text));
    last = m.index + text.length;
  }
  if (last < message.length) out.push(message.slice(last));
  return out;
}

/** statusEl renders one status; `mine` adds a Delete button. */
export function statusEl(status, { mine, onDelete }) {
  const author = { id: status.uid, login: status.login };
  const href = profileHref(status.login);
  const error = h('p', { class: 'status-error', role: 'alert', hidden: true });
  const li = h('li', { class: 'status', tabindex: '-1', dataset: { testid: 'status', id: String(status.id), login: status.login } },
    h('a', { class: 'status-avatar', href, tabindex: '-1', 'aria-hidden': 'true' }, avatar(author)),
    h('div', { class: 'status-body' },
      // The actions share the author's line so a status of yours is no
      // taller than anyone else's.
      h('div', { class: 'status-head' },
        h('p', { class: 'status-meta' },
          h('a', { class: 'status-author', href }, loginEl(status.login)),
          h('span', { class: 'sep', 'aria-hidden': 'true' }, '·'),
          timeEl(status.posted),
        ),
        mine && h('button', {
          type: 'button',
          class: 'btn btn-quiet btn-small status-action',
          dataset: { testid: 'status-delete' },
          'aria-label': 'Delete this status',
          onclick: (ev) => onDelete(status, li, ev.currentTarget, error),
        }, 'Delete'),
      ),
      h('p', { class: 'status-message', dataset: { testid: 'status-message' } }, messageNodes(String(status.message ?? ''))),
      error,
    ),
  );
  return li;
}

/**
 * Timeline options:
 *  testid     data-testid of the list ("feed" for home)
 *  label      accessible name of the list
 *  fetchPage  (before, signal) => {statuses, next_before}
 *  me         () => the signed-in user, to know which statuses are ours
 *  onDelete   (status, li, button, errorEl) => void
 *  empty      node or text shown when there is nothing
 *  onLoaded   () => void, after each successful first page (optional)
 */
export class Timeline {
  constructor(opts) {
    this.opts = opts;
    this.byId = new Map();
    this.pending = new Map(); // live arrivals before the first page came
    // The id up to which this list has seen everything: set by a first page
    // (which is complete at the top), raised by stream arrivals, never by
    // our own posts (posting 105 says nothing about 101..104). The stream's
    // `resume` asks for what came after it.
    this.maxId = null;
    this.nextBefore = null;
    this.hasMore = false;
    this.loaded = false;
    this.loading = false;
    this.failed = false;
    this.abort = null;

    this.list = h('ol', { class: 'timeline', 'aria-label': opts.label, dataset: { testid: opts.testid } });
    this.empty = h('div', { class: 'empty', hidden: true }, opts.empty);
    this.note = h('p', { class: 'timeline-note', role: 'status' });
    // onclick is a property, not a listener, so it can be pointed at
    // retrying the first page when that failed.
    this.more = h('button', { type: 'button', class: 'btn btn-secondary', hidden: true }, 'Load more');
    this.more.onclick = () => this.loadMore(true);
    this.foot = h('div', { class: 'timeline-foot' }, this.note, this.more);
    this.el = h('div', { class: 'timeline-wrap' }, this.list, this.empty, this.foot);

    // Start fetching the next page while the end is still a screen away.
    this.observer = 'IntersectionObserver' in window
      ? new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) this.loadMore(false);
      }, { rootMargin: '0px 0px 600px 0px' })
      : null;
    if (this.observer) this.observer.observe(this.foot);
  }

  /** load fetches the first page, replacing whatever is shown. */
  async load() {
    if (this.abort) this.abort.abort();
    const abort = new AbortController();
    this.abort = abort;
    this.loading = true;
    this.failed = false;
    this.list.setAttribute('aria-busy', 'true');
    this.setNote('Loading…');
    this.more.hidden = true;
    try {
      const page = await this.opts.fetchPage(null, abort.signal);
      if (abort.signal.aborted) return;
      this.byId.clear();
      this.list.replaceChildren();
      this.loaded = true;
      const statuses = page.statuses || [];
      if (this.maxId === null) this.maxId = 0;
      for (const s of statuses) {
        this.bumpMax(s.id);
        this.insert(s, false);
      }
      for (const s of this.pending.values()) this.insert(s, false);
      this.pending.clear();
      this.setPaging(page.next_before);
      this.rearm();
      if (this.opts.onLoaded) this.opts.onLoaded();
    } catch (err) {
      if (isAbort(err)) return;
      this.failed = true;
      this.setNote(err.message);
      this.more.textContent = 'Try again';
      this.more.hidden = false;
      this.more.onclick = () => this.load();
    } finally {
      if (this.abort === abort) {
        this.abort = null;
        this.loading = false;
        this.list.removeAttribute('aria-busy');
      }
    }
  }

  /** loadMore fetches the page older than what is shown. */
  async loadMore(byHand) {
    if (!this.loaded || this.loading || !this.hasMore || !this.el.isConnected) return;
    if (this.failed && !byHand) return; // after an error only a click retries
    const abort = new AbortController();
    this.abort = abort;
    this.loading = true;
    this.failed = false;
    this.setNote('Loading older posts…');
    this.more.hidden = true;
    try {
      const page = await this.opts.fetchPage(this.nextBefore, abort.signal);
      if (abort.signal.aborted) return;
      for (const s of page.statuses || []) this.insert(s, false, true);
      this.setPaging(page.next_before);
    } catch (err) {
      if (isAbort(err)) return;
      this.failed = true;
      this.setNote(`Could not load older posts: ${err.message}`);
      this.more.textContent = 'Try again';
      this.more.hidden = false;
    } finally {
      if (this.abort === abort) {
        this.abort = null;
        this.loading = false;
      }
    }
    if (!this.failed) this.rearm();
  }

  // rearm re-observes the end of the list. The observer only reports
  // changes, so if the end is still in view after a page (a short page on a
  // tall screen, or the list was off-screen) it would never fire again.
  rearm() {
    if (!this.observer || !this.hasMore) return;
    this.observer.unobserve(this.foot);
    this.observer.observe(this.foot);
  }

  setPaging(nextBefore) {
    this.nextBefore = nextBefore ?? null;
    this.hasMore = this.nextBefore !== null;
    this.more.textContent = 'Load more';
    this.more.onclick = () => this.loadMore(true);
    this.more.hidden = !this.hasMore;
    this.setNote(this.hasMore || this.byId.size === 0 ? '' : 'You’ve reached the end.');
    this.updateEmpty();
  }

  setNote(text) {
    this.note.textContent = text;
  }

  updateEmpty() {
    this.empty.hidden = !(this.loaded && this.byId.size === 0);
  }

  /**
   * add shows a status that arrived live (fromStream) or was just posted.
   * It returns true if the status is new to this list. Before the first
   * page has come there is nothing to add to: arrivals during that load are
   * kept and merged, others are left for the load to fetch.
   */
  add(status, fromStream = false) {
    if (fromStream && this.maxId !== null) this.bumpMax(status.id);
    if (!this.loaded) {
      if (this.loading) this.pending.set(Number(status.id), status);
      return false;
    }
    const added = this.insert(status, true);
    if (added) this.updateEmpty();
    return added;
  }

  has(id) {
    return this.byId.has(Number(id));
  }

  // insert places a status by id, newest first, unless it is already shown.
  // An arrival older than everything shown while older pages remain is left
  // for paging, so the list never has a hole in the middle.
  insert(status, live, atEnd = false) {
    const id = Number(status.id);
    if (!Number.isFinite(id) || this.byId.has(id)) return false;
    const me = this.opts.me();
    const li = statusEl(status, { mine: me && (me.id === status.uid || sameLogin(me.login, status.login)), onDelete: this.opts.onDelete });
    if (live) li.classList.add('is-new');
    let before = null;
    if (!atEnd) {
      for (const child of this.list.children) {
        if (Number(child.dataset.id) < id) {
          before = child;
          break;
        }
      }
      if (!before && this.hasMore && this.byId.size > 0) return false;
    }
    this.list.insertBefore(li, before);
    this.byId.set(id, li);
    return true;
  }

  bumpMax(id) {
    const n = Number(id);
    if (Number.isFinite(n) && (this.maxId === null || n > this.maxId)) this.maxId = n;
  }

  /** remove takes a status off the list; true if it was shown. */
  remove(id) {
    const n = Number(id);
    this.pending.delete(n);
    const li = this.byId.get(n);
    if (!li) return false;
    this.byId.delete(n);
    li.remove();
    this.updateEmpty();
    return true;
  }

  /** removeWhere drops every status for which pred(login) holds. */
  removeWhere(pred) {
    for (const [id, li] of [...this.byId]) {
      if (pred(li.dataset.login)) this.remove(id);
    }
  }

  /** reload starts over from the newest page (after a follow changed it). */
  reload() {
    this.loaded = false;
    return this.load();
  }

  destroy() {
    if (this.abort) this.abort.abort();
    if (this.observer) this.observer.disconnect();
  }
}
