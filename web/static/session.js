// The signed-in session: what exists only while someone is signed in (the
// home feed, the friends sidebar with suggestions, the notifications, the
// connection indicator and the stream), how it starts and ends, and what
// keeps the friends list and the site-wide counts fresh.

import { api, query, setHealthHandler } from './api.js';
import { sameLogin } from './dom.js';
import { Stream } from './stream.js';
import { Timeline } from './timeline.js';
import { Sidebar } from './sidebar.js';
import { Health } from './health.js';
import { learnName } from './names.js';
import { Suggestions } from './suggestions.js';
import { Notifications } from './notifications.js';
import { homeEmpty } from './views.js';
import { Frames } from './frames.js';

// How often the site-wide counts are asked for before the stream's `ready`
// says the server's heartbeat interval, and the least interval ever used.
const COUNTS_EVERY_MS = 15000;
const COUNTS_MIN_MS = 5000;

/**
 * Session is built for user, then start()ed once the app holds it (what
 * it starts calls back into the app at once), and close()d for good.
 *
 * app is what it reaches of the page around it:
 *  ctx               what the pages get to work with; the session keeps its homeFeed
 *  header            the site header (header.js)
 *  aside             the element the sidebar goes in
 *  view(), route()   the page shown and its route
 *  removeStatus(id)  a status is gone: take it off the page and every timeline
 *  leave(text)       end this session here, saying text
 */
export class Session {
  constructor(user, app) {
    this.app = app;
    this.me = user;
    this.closed = false;
    this.unseen = 0;
    this.recheckOnShow = null; // a recheck waiting for the tab to be shown
    this.friendsTimer = 0;
    this.friendsKnown = false; // GET /friends answered once: unknown friends are new ones
    this.countsAt = 0;
    this.countsTimer = 0;
    this.countsPoll = 0;
    this.countsEvery = COUNTS_EVERY_MS; // until `ready` says the server's pace
    this.timers = [];

    const { ctx, header, aside } = app;
    document.body.classList.remove('signed-out');
    learnName(user);
    ctx.homeFeed = new Timeline({
      testid: 'feed',
      label: 'Home feed',
      empty: homeEmpty(),
      ctx,
      onDelete: ctx.deleteStatus,
        fetchPage: (before, signal) => api('GET', '/timelines/home' + query({ limit: 30, before }), undefined, { signal }),
      // The page and the stream race: a page read just before the stream
      // subscribed would leave a gap that the `ready` resume (sent while the
      // page was still loading) could not cover. Asking again closes it;
      // anything sent twice is dropped by id.
      onLoaded: () => {
        if (!this.closed && this.stream.state === 'live') this.stream.send({ type: 'resume', after: ctx.homeFeed.maxId });
      },
    });
    ctx.timelines.add(ctx.homeFeed);
    ctx.homeFeed.el.dataset.kept = 'true'; // it lives off-screen between visits (actions.js)

    this.sidebar = new Sidebar();
    this.suggestions = new Suggestions(ctx);
    this.sidebar.el.append(this.suggestions.el);
    aside.replaceChildren(this.sidebar.el);
    aside.hidden = false;
    this.notes = new Notifications();
    header.signedIn(user, { tools: this.notes.el });
    this.notes.listen((n) => header.setNotes(n));

    const sidebar = this.sidebar;
    let wasLive = false;
    const health = new Health((v) => {
      header.setConn(v);
      const live = v.state === 'live';
      sidebar.setLive(live);
      if (live && !wasLive) ctx.liveAgain.forEach((f) => f());
      wasLive = live;
    });
    this.health = health;
    setHealthHandler((ok) => health.setApi(ok));

    this.frames = new Frames(this, app);
    let readies = 0;
    this.stream = new Stream({
      onReady: (frame) => {
        this.frames.ready(frame);
        // A stream back after a break, not the first: what no resume
        // replays is read again. (A failed API call that leaves the stream
        // open is no break.)
        if (readies++ > 0) this.recheck();
      },
      onFrame: (frame) => this.frames.dispatch(frame),
      onState: (state, info) => health.setStream(state, info),
      resumeAfter: () => ctx.homeFeed.maxId,
      onSignedOut: (reason) => app.leave(reason === 'account suspended' ? 'Your account has been suspended.' : 'You were signed out.'),
      checkSession: () => api('GET', '/me').then(() => true, (err) => (err.status === 401 ? false : Promise.reject(err))),
    });
    // What a page may ask of the stream: whether it is open, and to send
    // a frame on it (the global page's watch).
    ctx.stream = {
      live: () => !this.closed && this.stream.state === 'live',
      send: (frame) => this.stream.send(frame),
    };
  }

  /**
   * recheck reads again, once the stream is back after a break, what the
   * page shows and no resume replays (a deletion, a like or a follow made
   * on another device): the first page of each timeline shown (of the kept
   * home feed, off-screen, when next shown), and what the page itself
   * reads (view.recheck: a profile's counts). A hidden tab waits until it
   * is shown, so that a server's restart is not read again by every tab.
   */
  recheck() {
    if (this.closed) return;
    if (document.hidden) {
      if (this.recheckOnShow) return;
      this.recheckOnShow = () => {
        if (document.hidden) return;
        document.removeEventListener('visibilitychange', this.recheckOnShow);
        this.recheckOnShow = null;
        this.recheck();
      };
      document.addEventListener('visibilitychange', this.recheckOnShow);
      return;
    }
    const { ctx } = this.app;
    for (const tl of ctx.timelines) {
      if (tl.el.isConnected) tl.recheck();
      else if (tl === ctx.homeFeed) ctx.homeStale = true;
    }
    const view = this.app.view();
    if (view && view.recheck) view.recheck();
  }

  /** start opens the stream and reads the friends, the counts and the suggestions. */
  start() {
    this.stream.start();
    this.refreshFriends();
    this.refreshSiteCounts();
    this.suggestions.load();
    this.pollSiteCounts();
    // Frames sent while the stream was down are not replayed, so GET
    // /friends now and then keeps the panel whole.
    this.timers.push(setInterval(() => {
      if (!document.hidden) this.refreshFriends();
    }, 60000));
  }

  /** close ends the session here: nothing of it runs or shows afterwards. */
  close() {
    const { ctx, header, aside } = this.app;
    this.closed = true;
    if (this.recheckOnShow) document.removeEventListener('visibilitychange', this.recheckOnShow);
    this.health.stop();
    this.stream.stop();
    this.notes.destroy();
    setHealthHandler(null);
    for (const t of this.timers) clearInterval(t);
    this.frames.close();
    clearTimeout(this.friendsTimer);
    clearTimeout(this.countsTimer);
    clearInterval(this.countsPoll);
    for (const tl of ctx.timelines) tl.destroy();
    ctx.timelines.clear();
    ctx.homeFeed = null;
    ctx.stream = null;
    ctx.draft = '';
    aside.replaceChildren();
    aside.hidden = true;
    document.body.classList.add('signed-out');
    header.signedOut();
  }

  /**
   * signOut revokes the session on the server. Where the server would not,
   * it reopens the stream and rejects with the error to show.
   */
  async signOut() {
    // Close the stream first: once the token is revoked the server closes it
    // with 1008, which would read as "you were signed out" by someone else.
    this.stream.stop();
    try {
      await api('DELETE', '/sessions/current');
    } catch (err) {
      if (err.status === 401 || this.closed) return; // signed out already
      this.stream.start();
      throw err;
    }
  }

  /** setUnseen shows n new statuses on the Home link. */
  setUnseen(n) {
    this.unseen = n;
    this.app.header.setUnseen(n);
  }

  /** followChanged keeps the home feed and friends honest after (un)following login. */
  followChanged(login, following) {
    const { ctx } = this.app;
    if (following) {
      ctx.homeChanged(); // the server backfilled their latest posts
    } else {
      ctx.homeFeed.removeWhere((l) => sameLogin(l, login));
    }
    clearTimeout(this.friendsTimer);
    this.friendsTimer = setTimeout(() => {
      this.refreshFriends();
      // Who to follow no longer holds someone you follow now, and may
      // hold someone you stopped following or whom they follow.
      if (!this.closed) this.suggestions.load();
    }, 300);
  }

  async refreshFriends() {
    if (this.closed) return;
    const users = [];
    let complete = false;
    try {
      for (let offset = 0; offset < 1000; offset += 100) {
        const page = await api('GET', '/friends' + query({ limit: 100, offset }));
        users.push(...(page.users || []));
        if ((page.users || []).length < 100) {
          complete = true;
          break;
        }
      }
    } catch (err) {
      console.warn('friends:', err.message);
      if (users.length === 0) return;
    }
    if (this.closed) return;
    this.sidebar.setFriends(users, complete);
    this.friendsKnown = true;
  }

  async refreshSiteCounts() {
    if (this.closed || document.hidden) return;
    this.countsAt = Date.now();
    try {
      const counts = await api('GET', '/presence');
      if (!this.closed) this.sidebar.setSiteCounts(counts);
    } catch {
      if (!this.closed) this.sidebar.setSiteCounts(null);
    }
  }

  /**
   * siteCountsPace sets how often the site-wide counts are asked for to the
   * server's heartbeat interval, heartbeatMs from `ready`: each instance
   * counts afresh at most that often, so asking as often shows anyone who
   * came online, friend or not, within about two intervals. Never more than
   * once per COUNTS_MIN_MS, so the reads stay well inside the read limit.
   */
  siteCountsPace(heartbeatMs) {
    if (!Number.isFinite(heartbeatMs) || heartbeatMs <= 0) return;
    const every = Math.max(COUNTS_MIN_MS, heartbeatMs);
    if (every === this.countsEvery) return;
    this.countsEvery = every;
    this.pollSiteCounts();
  }

  pollSiteCounts() {
    clearInterval(this.countsPoll);
    if (!this.closed) this.countsPoll = setInterval(() => this.refreshSiteCounts(), this.countsEvery);
  }

  /**
   * siteCountsSoon refreshes the site-wide counts after a friend came or
   * went, at most once per poll interval (the server recomputes them no
   * more often).
   */
  siteCountsSoon() {
    if (this.countsTimer) return;
    const wait = Math.max(0, this.countsAt + this.countsEvery - Date.now());
    this.countsTimer = setTimeout(() => {
      if (this.closed) return;
      this.countsTimer = 0;
      this.refreshSiteCounts();
    }, wait);
  }
}
