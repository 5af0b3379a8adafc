// Home (the composer over your feed, or for a visitor the sign-in form),
// the global timeline, someone's followers and following, and not found.
// The other pages are profile.js, statuspage.js, search.js and lists.js;
// page.js holds what they are built from, and what a page is.

import { h } from './dom.js';
import { api, query, userPath, isAbort } from './api.js';
import { profileHref } from './router.js';
import { composer } from './composer.js';
import { renderAuth } from './auth.js';
import { UserList } from './userlist.js';
import { followControl } from './follow.js';
import { heading, statusTimeline, pollNewer } from './page.js';

// ---------------------------------------------------------------- home

/** homeView: the composer over the home feed, which outlives the view. */
export function homeView(ctx) {
  const feed = ctx.homeFeed;
  if (ctx.homeStale || (!feed.loaded && !feed.loading)) {
    ctx.homeStale = false;
    feed.reload();
  }
  const h1 = heading('Home', { class: 'page-title visually-hidden' });
  const form = composer(ctx);
  const el = h('div', { class: 'view view-home' }, h1, form.el, feed.el);
  return {
    el,
    title: 'Home',
    heading: h1,
    composer: form.input,
    mounted: () => feed.rearm(),
    destroy: () => form.destroy(), // the feed keeps living (and receiving frames) off-screen
  };
}

/** homeEmpty is what an empty home feed says. */
export function homeEmpty() {
  return [
    h('p', { class: 'empty-title' }, 'Your home feed is empty.'),
    h('p', { class: 'muted' }, 'Post something above, or ', h('a', { href: '/global' }, 'browse the global timeline'), ' to find people to follow.'),
  ];
}

/**
 * welcomeView is home for a visitor who is not signed in: sign in or sign
 * up (auth is {mode, notice, focus}), and a way to look around first.
 */
export function welcomeView(ctx, auth) {
  const slot = h('div', {});
  const form = renderAuth(slot, { ...auth, onSignedIn: ctx.signedIn });
  const el = h('div', { class: 'view' }, slot,
    h('p', { class: 'muted welcome-browse' }, 'Or look around first: ', h('a', { href: '/global' }, 'the latest posts from everyone'), '.'));
  return {
    el,
    title: auth.mode === 'signup' ? 'Create account' : 'Sign in',
    heading: form.heading,
    focus: form.focus,
    destroy() {},
  };
}

// ---------------------------------------------------------------- global

// A catch-up reads at most this many pages of what came while the page did
// not watch; past them it starts over from the newest page.
const CATCH_UP_PAGES = 3;

/**
 * globalView: everyone's latest statuses. Signed in, with the stream open,
 * the page watches the global timeline: the stream's `watching` frame
 * (after each watch, and again after the server's own subscription came
 * back) has it read what came after the newest status shown, and from then
 * on `global_status` frames add the new ones and `global_status_deleted`
 * frames take deleted ones off, with nothing asked of the server. Otherwise
 * (a visitor, the stream down, the catch-up failed) it asks for newer ones
 * every 15 s while shown and visible (pollNewer).
 */
export function globalView(ctx) {
  let watched = false; // this connection's watch is live
  let caughtUp = false; // and what came before it is read: arrivals are a gapless run
  let reading = null; // the AbortController of a catch-up under way
  const tl = statusTimeline(ctx, {
    label: 'Global timeline',
    path: '/timelines/global',
    empty: h('p', { class: 'empty-title' }, 'No one has posted yet.'),
    newer: true,
    onLoaded: () => {
      if (watched) catchUp();
    },
  });
  const h1 = heading('Global');
  const el = h('div', { class: 'view' },
    h('div', { class: 'page-head' }, h('div', {}, h1, h('p', { class: 'muted' }, 'The latest posts from everyone on Chorus.'))),
    tl.el,
  );
  const live = () => caughtUp && !!ctx.stream && ctx.stream.live();
  const setCaughtUp = (v) => {
    caughtUp = v;
    el.dataset.live = String(v); // for tests: the page is fed by the stream
  };

  // catchUp reads, page by page, what came after the newest status shown.
  async function catchUp() {
    if (reading) reading.abort();
    const abort = new AbortController();
    reading = abort;
    setCaughtUp(false);
    try {
      for (let pages = 0; ; pages++) {
        if (pages === CATCH_UP_PAGES) {
          tl.reload(); // its onLoaded catches up again, from the newest page
          return;
        }
        const page = await api('GET', '/timelines/global' + query({ limit: 30, after: tl.maxId ?? 0 }), undefined, { signal: abort.signal });
        if (abort.signal.aborted) return;
        for (const s of page.statuses || []) tl.add(s, { complete: true });
        if (page.next_after === null || page.next_after === undefined) break;
      }
      setCaughtUp(true);
    } catch (err) {
      if (!isAbort(err)) console.warn('global catch-up:', err.message); // polling goes on meanwhile
    } finally {
      if (reading === abort) reading = null;
    }
  }

  const watch = () => {
    watched = false;
    if (reading) reading.abort(); // the last connection's
    setCaughtUp(false);
    if (ctx.stream && ctx.stream.live()) ctx.stream.send({ type: 'watch', timeline: 'global' });
  };
  watch();
  const stopPolling = pollNewer(tl, live);
  return {
    el,
    title: 'Global',
    heading: h1,
    onReady: watch, // a new connection watches nothing yet
    onFrame(frame) {
      switch (frame.type) {
        case 'watching':
          if (frame.timeline !== 'global') return;
          watched = true;
          if (tl.loaded) catchUp();
          break;
        case 'global_status':
          if (frame.status) tl.add(frame.status, { complete: caughtUp });
          break;
        case 'global_status_deleted':
          tl.remove(frame.id);
          break;
        default:
      }
    },
    destroy: () => {
      if (ctx.stream && ctx.stream.live()) ctx.stream.send({ type: 'unwatch', timeline: 'global' });
      if (reading) reading.abort();
      stopPolling();
      tl.destroy();
      ctx.timelines.delete(tl);
    },
  };
}

// ---------------------------------------------------------------- people

/** peopleView: who follows `login` (which "followers") or whom they follow. */
export function peopleView(ctx, login, which) {
  const followers = which === 'followers';
  const title = followers ? `People following @${login}` : `People @${login} follows`;
  const h1 = heading(title);
  const list = new UserList({
    label: title,
    fetchPage: (offset, limit, signal) => api('GET', userPath(login, `/${which}`) + query({ limit, offset }), undefined, { signal }),
    empty: followers ? 'No followers yet.' : 'Not following anyone yet.',
    notFound: `No one here goes by @${login}.`,
    item: (u) => ({ action: followControl(ctx, u) }),
  });
  list.load();

  const tab = (name, label) => h('a', {
    href: profileHref(login, `/${name}`), class: 'tab', 'aria-current': name === which ? 'page' : null,
  }, label);

  const el = h('div', { class: 'view' },
    h('p', { class: 'back' }, h('a', { href: profileHref(login) }, '← Back to ', h('span', { class: 'login' }, login))),
    h1,
    h('nav', { class: 'tabs', 'aria-label': 'Lists' }, tab('followers', 'Followers'), tab('following', 'Following')),
    list.el,
  );
  return { el, title, heading: h1, destroy: () => list.destroy() };
}

/** notFoundView: an address that matches no page. */
export function notFoundView() {
  const h1 = heading('Page not found');
  const el = h('div', { class: 'view' }, h1, h('p', {}, 'There is nothing at this address. ', h('a', { href: '/' }, 'Go to the home page'), '.'));
  return { el, title: 'Not found', heading: h1, destroy() {} };
}
