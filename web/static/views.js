// The pages behind the routes. A view is {el, title, heading, destroy} and
// may have mounted(), focus(), onFrame(frame) (stream frames while it is
// shown), onDeleted(id) and onFollows(user) (someone followed you, or a
// friendship was made or ended); app.js mounts one at a time in <main>.
// Profiles are in profile.js, a status's own page in statuspage.js.

import { h } from './dom.js';
import { api, query, userPath } from './api.js';
import { profileHref } from './router.js';
import { Timeline } from './timeline.js';
import { composer } from './composer.js';
import { renderAuth } from './auth.js';
import { UserList } from './userlist.js';
import { followControl } from './follow.js';

const PAGE = 30;
// How often a timeline the stream does not feed (global, a list) asks for
// what is new while it is shown.
const POLL_MS = 15000;

/** heading is a page's h1, focused (without a tab stop) when the route changes. */
export function heading(text, extra = {}) {
  return h('h1', { class: 'page-title', tabindex: '-1', ...extra }, text);
}

/** statusTimeline is a Timeline of path (a statuses page), loading now. */
export function statusTimeline(ctx, { label, path, empty, newer = false }) {
  const tl = new Timeline({
    testid: 'timeline',
    label,
    empty,
    me: ctx.me,
    onDelete: ctx.deleteStatus,
    fetchPage: (before, signal) => api('GET', path + query({ limit: PAGE, before }), undefined, { signal }),
    fetchNewer: newer ? (after, signal) => api('GET', path + query({ limit: PAGE, after }), undefined, { signal }) : null,
  });
  ctx.timelines.add(tl);
  tl.load();
  return tl;
}

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
    destroy() {}, // the feed keeps living (and receiving frames) off-screen
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

/**
 * pollNewer has tl ask for newer statuses every 15 s while the page is
 * visible, and at once when it becomes visible again; it returns what
 * stops it.
 */
export function pollNewer(tl) {
  const poll = () => {
    if (!document.hidden) tl.loadNewer();
  };
  const timer = setInterval(poll, POLL_MS);
  // Back to a tab that was hidden: catch up now rather than in up to 15 s.
  document.addEventListener('visibilitychange', poll);
  return () => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', poll);
  };
}

// ---------------------------------------------------------------- global

/**
 * globalView: everyone's latest statuses. The stream brings only the
 * statuses of those you follow, so while the page is shown and visible it
 * asks for newer ones every 15 s (pollNewer): one small read each time,
 * whatever is happening on the site.
 */
export function globalView(ctx) {
  const tl = statusTimeline(ctx, {
    label: 'Global timeline',
    path: '/timelines/global',
    empty: h('p', { class: 'empty-title' }, 'No one has posted yet.'),
    newer: true,
  });
  const h1 = heading('Global');
  const el = h('div', { class: 'view' },
    h('div', { class: 'page-head' }, h('div', {}, h1, h('p', { class: 'muted' }, 'The latest posts from everyone on Chorus.'))),
    tl.el,
  );
  const stopPolling = pollNewer(tl);
  return {
    el,
    title: 'Global',
    heading: h1,
    destroy: () => {
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
