// Home (the composer over your feed, or for a visitor the sign-in form),
// the global timeline, someone's followers and following, and not found.
// The other pages are profile.js, statuspage.js, search.js and lists.js;
// page.js holds what they are built from, and what a page is.

import { h } from './dom.js';
import { api, query, userPath } from './api.js';
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
