// A list of statuses, newest first: first page, older pages on scroll (with
// a "Load more" button for when the observer cannot help), live arrivals
// deduplicated by id, and removal of deleted statuses. Arrivals while the
// reader is scrolled down wait behind an "N new posts" button rather than
// push what they are reading out of place. Live arrivals past MAX_SHOWN
// entries push the oldest out, to be paged back.

import { h, announce } from './dom.js';
import { statusEl } from './status.js';
import { statusChanged } from './actions.js';
import { isAbort } from './api.js';

// Past this many waiting arrivals, stop holding them: the button reloads.
const MAX_WAITING = 100;
// Past this many entries shown, a live arrival drops the oldest: a page
// left open for days would otherwise hold every status posted meanwhile.
// Paging brings the dropped ones back.
const MAX_SHOWN = 300;

/**
 * Timeline options:
 *  testid      data-testid of the list ("feed" for home)
 *  label       accessible name of the list
 *  fetchPage   (before, signal) => {statuses, next_before}
 *  fetchNewer  (after, signal) => {statuses (oldest first), next_after} (optional; see loadNewer)
 *  ctx         the app's (status.js statusEl): who is signed in, sign-in, deletion
 *  onDelete    (status, li) => Promise, once it is deleted
 *  empty       node or text shown when there is nothing
 *  onLoaded    () => void, after each successful first page (optional)
 */
export class Timeline {
  constructor(opts) {
    this.opts = opts;
    this.byId = new Map();
    this.pending = new Map(); // live arrivals before the first page came
    this.waiting = new Map(); // live arrivals held behind the "new posts" button
    this.overflow = false; // more arrived than were held: the button reloads
    // The id up to which this list has seen everything: set by a first page
    // (which is complete at the top), raised by complete arrivals (the
    // stream's, loadNewer's), never by our own posts (posting 105 says
    // nothing about 101..104). `resume` and loadNewer ask for what came after.
    this.maxId = null;
    this.nextBefore = null;
    this.hasMore = false;
    this.loaded = false;
    this.loading = false;
    this.failed = false;
    this.abort = null;
    this.newer = null; // the AbortController of a loadNewer under way
    this.checking = null; // the AbortController of a recheck under way

    this.list = h('ol', { class: 'timeline', 'aria-label': opts.label, dataset: { testid: opts.testid } });
    this.empty = h('div', { class: 'empty', hidden: true }, opts.empty);
    this.note = h('p', { class: 'timeline-note', role: 'status' });
    // onclick is a property, not a listener, so it can be pointed at
    // retrying the first page when that failed.
    this.more = h('button', { type: 'button', class: 'btn btn-secondary', hidden: true }, 'Load more');
    this.more.onclick = () => this.loadMore(true);
    this.foot = h('div', { class: 'timeline-foot' }, this.note, this.more);
    this.newButton = h('button', { type: 'button', class: 'btn btn-primary new-posts', dataset: { testid: 'new-posts' }, onclick: () => this.showWaiting(true) });
    // A bar of no height, so that the button appearing moves nothing.
    this.newBar = h('div', { class: 'new-posts-bar', hidden: true }, this.newButton);
    this.el = h('div', { class: 'timeline-wrap' }, this.newBar, this.list, this.empty, this.foot);
    this.onScroll = () => {
      if (!this.scrolledPast()) this.showWaiting(false);
    };

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
    if (this.newer) this.newer.abort();
    if (this.checking) this.checking.abort(); // its page would be older than this one
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
      this.clearWaiting();
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
    // With the keyboard's focus (tabbed to, which also brings it into view
    // and so starts the load), the button stays, busy: hidden, it would
    // drop the focus to the page's start. The focus then goes to the
    // first post it brought.
    const focused = document.activeElement === this.more;
    if (focused) {
      this.more.setAttribute('aria-disabled', 'true');
      this.more.setAttribute('aria-busy', 'true');
    } else {
      this.more.hidden = true;
    }
    try {
      const page = await this.opts.fetchPage(this.nextBefore, abort.signal);
      if (abort.signal.aborted) return;
      const statuses = page.statuses || [];
      for (const s of statuses) this.insert(s, false, true);
      this.setPaging(page.next_before);
      // Unless the reader moved it meanwhile (setPaging may have hidden
      // the button, the last page: the focus fell to the page).
      const here = document.activeElement;
      if (focused && (here === this.more || here === document.body) && statuses.length > 0) {
        const first = this.list.querySelector(`[data-testid="status"][data-id="${Number(statuses[0].id)}"]`);
        if (first) first.focus();
      }
    } catch (err) {
      if (isAbort(err)) return;
      this.failed = true;
      this.setNote(`Could not load older posts: ${err.message}`);
      this.more.textContent = 'Try again';
      this.more.hidden = false;
    } finally {
      this.more.removeAttribute('aria-disabled');
      this.more.removeAttribute('aria-busy');
      if (this.abort === abort) {
        this.abort = null;
        this.loading = false;
      }
    }
    if (!this.failed) this.rearm();
  }

  /**
   * loadNewer asks fetchNewer for what came after maxId, one page at a
   * time, and adds it as live arrivals. It does nothing while a page load
   * is under way or once the held arrivals overflowed (the button reloads).
   */
  async loadNewer() {
    if (!this.opts.fetchNewer || !this.loaded || this.loading || this.newer || this.overflow) return;
    const abort = new AbortController();
    this.newer = abort;
    try {
      const page = await this.opts.fetchNewer(this.maxId, abort.signal);
      if (abort.signal.aborted) return;
      for (const s of page.statuses || []) this.add(s, { complete: true });
    } catch (err) {
      if (!isAbort(err)) console.warn('newer posts:', err.message);
    } finally {
      if (this.newer === abort) this.newer = null;
    }
  }

  /**
   * recheck reads the newest page again, after the stream's break, for
   * what no resume replays: an entry within the page's reach that it no
   * longer holds was deleted, or hidden, meanwhile, and leaves; one it
   * holds that is not shown (a follow made on another device brought it)
   * comes in; and each shown takes its counts and your likes and reposts
   * as they are now. Entries older than the page stay as they were.
   */
  async recheck() {
    if (!this.loaded || this.loading || this.checking) return;
    const abort = new AbortController();
    this.checking = abort;
    try {
      const page = await this.opts.fetchPage(null, abort.signal);
      if (abort.signal.aborted || this.loading) return;
      const statuses = page.statuses || [];
      const ids = statuses.map((s) => Number(s.id));
      const held = new Set(ids);
      // Newer than the page: arrived since it was read. Older: past it,
      // unless the page is the whole timeline.
      const top = ids.length ? Math.max(...ids) : Infinity;
      const bottom = page.next_before == null ? -Infinity : (ids.length ? Math.min(...ids) : Infinity);
      for (const id of [...this.byId.keys(), ...this.waiting.keys()]) {
        if (id <= top && id >= bottom && !held.has(id)) this.remove(id);
      }
      for (const s of statuses) {
        const id = Number(s.id);
        if (this.waiting.has(id)) this.waiting.set(id, s); // shown later as it is now
        else if (this.byId.has(id)) statusChanged(s.repost_of || s);
        else this.add(s);
      }
      this.updateEmpty();
    } catch (err) {
      if (!isAbort(err)) console.warn('timeline re-read:', err.message);
    } finally {
      if (this.checking === abort) this.checking = null;
    }
  }

  // rearm re-observes the end of the list. The observer only reports
  // changes, so if the end is still in view after a page (a short page on a
  // tall screen, or the list was off-screen) it would never fire again.
  // Arrivals held while the list was away are shown if its top is in view.
  rearm() {
    if (this.waiting.size > 0 && !this.scrolledPast()) this.showWaiting(false);
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
   * add shows a status that arrived live or was just posted (own). With
   * complete, the arrival is one of a gapless run (the stream's, or
   * loadNewer's) and raises maxId. It returns true if the status is new to
   * this list. Before the first page has come there is nothing to add to:
   * arrivals during that load are kept and merged, others are left for the
   * load to fetch. While the reader is scrolled past the top of the list,
   * arrivals wait behind the "new posts" button.
   */
  add(status, { complete = false, own = false } = {}) {
    const id = Number(status.id);
    if (complete && this.maxId !== null) this.bumpMax(id);
    if (!this.loaded) {
      if (this.loading) this.pending.set(id, status);
      return false;
    }
    if (this.byId.has(id) || this.waiting.has(id)) return false;
    if (!own && this.scrolledPast()) {
      this.hold(status);
      return true;
    }
    const added = this.insert(status, true);
    if (added) {
      this.trim();
      this.updateEmpty();
    }
    return added;
  }

  has(id) {
    return this.byId.has(Number(id)) || this.waiting.has(Number(id));
  }

  // scrolledPast says whether the top of the list is out of sight under
  // the sticky header, where an insert would move what is being read.
  scrolledPast() {
    if (!this.list.isConnected || this.byId.size === 0) return false;
    const header = document.querySelector('.site-header');
    const top = header ? header.getBoundingClientRect().bottom : 0;
    return this.list.getBoundingClientRect().top < top;
  }

  hold(status) {
    if (this.waiting.size >= MAX_WAITING) {
      this.overflow = true;
    } else {
      this.waiting.set(Number(status.id), status);
    }
    window.addEventListener('scroll', this.onScroll, { passive: true });
    this.updateButton();
  }

  updateButton() {
    const n = this.waiting.size;
    this.newButton.textContent = this.overflow ? `${MAX_WAITING}+ new posts` : `${n} new ${n === 1 ? 'post' : 'posts'}`;
    this.newBar.hidden = n === 0 && !this.overflow;
  }

  clearWaiting() {
    this.waiting.clear();
    this.overflow = false;
    this.newBar.hidden = true;
    window.removeEventListener('scroll', this.onScroll);
  }

  // showWaiting puts the held arrivals in the list. byHand (the button):
  // also scroll to the top of the list and focus the newest.
  showWaiting(byHand) {
    const held = [...this.waiting.values()];
    const overflow = this.overflow;
    this.clearWaiting();
    if (overflow) {
      this.reload();
    } else {
      for (const s of held) this.insert(s, true);
      this.trim();
      this.updateEmpty();
    }
    if (!byHand) return;
    const header = document.querySelector('.site-header');
    const offset = (header ? header.getBoundingClientRect().bottom : 0) + 8;
    window.scrollTo({ top: Math.max(0, this.el.getBoundingClientRect().top + window.scrollY - offset) });
    const first = this.list.firstElementChild;
    if (first) first.focus({ preventScroll: true });
    announce(overflow ? 'Loading the newest posts.' : `${held.length} new ${held.length === 1 ? 'post' : 'posts'} shown.`);
  }

  // insert places a status by id, newest first, unless it is already shown.
  // An arrival older than everything shown while older pages remain is left
  // for paging, so the list never has a hole in the middle.
  insert(status, live, atEnd = false) {
    const id = Number(status.id);
    if (!Number.isFinite(id) || this.byId.has(id)) return false;
    const li = statusEl(status, { ctx: this.opts.ctx, onDelete: this.opts.onDelete });
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

  // trim drops the oldest entries past MAX_SHOWN, after live arrivals, and
  // moves the paging cursor up to the oldest kept, so that older pages go
  // on from there. Not while an older page is under way: it would land
  // past a hole; the next arrival trims.
  trim() {
    if (this.byId.size <= MAX_SHOWN || this.loading) return;
    while (this.byId.size > MAX_SHOWN && this.list.lastElementChild) {
      const last = this.list.lastElementChild;
      this.byId.delete(Number(last.dataset.id));
      last.remove();
    }
    this.setPaging(this.list.lastElementChild ? Number(this.list.lastElementChild.dataset.id) : null);
    this.rearm();
  }

  bumpMax(id) {
    const n = Number(id);
    if (Number.isFinite(n) && (this.maxId === null || n > this.maxId)) this.maxId = n;
  }

  /**
   * remove takes a status off the list, and every repost of it (a deleted
   * original takes its reposts with it); true if the status was shown.
   */
  remove(id) {
    const n = Number(id);
    this.pending.delete(n);
    for (const [rid, s] of [...this.waiting]) {
      if (s.repost_of && Number(s.repost_of.id) === n) this.remove(rid);
    }
    for (const li of [...this.list.querySelectorAll(`:scope > [data-original="${n}"]`)]) this.remove(li.dataset.id);
    if (this.waiting.delete(n)) {
      if (this.waiting.size === 0 && !this.overflow) this.clearWaiting();
      else this.updateButton();
    }
    const li = this.byId.get(n);
    if (!li) return false;
    this.byId.delete(n);
    li.remove();
    this.updateEmpty();
    return true;
  }

  /**
   * removeWhere drops every entry whose poster (a repost's reposter) pred
   * holds; with reposted, also every repost of a status by such an author
   * (a block or mute hides their statuses however they come, while an
   * unfollow leaves the reposts of people still followed).
   */
  removeWhere(pred, { reposted = false } = {}) {
    const hit = (s) => pred(s.login) || (reposted && s.repost_of && pred(s.repost_of.login));
    for (const [id, s] of [...this.pending]) {
      if (hit(s)) this.pending.delete(id);
    }
    for (const [id, s] of [...this.waiting]) {
      if (hit(s)) this.remove(id);
    }
    for (const [id, li] of [...this.byId]) {
      if (pred(li.dataset.login) || (reposted && pred(li.dataset.author))) this.remove(id);
    }
  }

  /** reload starts over from the newest page (after a follow changed it). */
  reload() {
    this.loaded = false;
    return this.load();
  }

  destroy() {
    delete this.el.dataset.kept; // nothing shows it again: its rows may go (actions.js)
    if (this.abort) this.abort.abort();
    if (this.newer) this.newer.abort();
    if (this.checking) this.checking.abort();
    if (this.observer) this.observer.disconnect();
    window.removeEventListener('scroll', this.onScroll);
  }
}
