// Chorus web client: decides signed in or out (GET /me), then wires the
// header, the router, the home feed, the friends sidebar and the stream.

import { api, query, setUnauthorizedHandler } from './api.js';
import { h, announce, toast, profileHref, loginEl, sameLogin } from './dom.js';
import { refreshTimes } from './time.js';
import { Stream } from './stream.js';
import { Timeline } from './timeline.js';
import { Sidebar } from './sidebar.js';
import { renderAuth } from './auth.js';
import { parseRoute } from './router.js';
import { homeView, homeEmpty, globalView, profileView, peopleView, notFoundView } from './views.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const session = document.getElementById('session');
const aside = document.getElementById('sidebar');

// Everything that exists only while signed in; reset by leaveApp.
let app = null;

// ------------------------------------------------------------ boot

async function boot() {
  main.replaceChildren(h('p', { class: 'muted boot' }, 'Loading…'));
  try {
    const res = await api('GET', '/me');
    enterApp(res.user, { fromForm: false });
  } catch (err) {
    if (err.status === 401) {
      showAuth({ focus: true });
      return;
    }
    // Not "signed out": the server is unreachable or unwell. Say so.
    main.replaceChildren(h('div', { class: 'card boot-error' },
      h('h1', { class: 'page-title' }, 'Chorus is not answering'),
      h('p', {}, err.message),
      h('button', { type: 'button', class: 'btn btn-primary', onclick: boot }, 'Try again'),
    ));
  }
}

function showAuth({ notice = '', focus = false } = {}) {
  document.body.classList.add('signed-out');
  renderAuth(main, { mode: 'signin', notice, focus, onSignedIn: (user) => enterApp(user, { fromForm: true }) });
}

setUnauthorizedHandler(() => {
  if (app) leaveApp('Your session has ended. Please sign in again.');
});

// ------------------------------------------------------------ signed in

function enterApp(user, { fromForm }) {
  if (app) leaveApp('');
  document.body.classList.remove('signed-out');

  app = {
    me: user,
    view: null,
    route: null,
    timelines: new Set(),
    unseen: 0,
    newBatch: [],
    batchTimer: 0,
    timers: [],
    friendsTimer: 0,
  };
  const ctx = {
    me: () => app && app.me,
    timelines: app.timelines,
    homeStale: false, // set after a follow: reload the feed on the next visit
    homeFeed: null,
    draft: '', // the composer's text, kept across pages
    deleteStatus,
    followChanged,
  };
  app.ctx = ctx;

  ctx.homeFeed = new Timeline({
    testid: 'feed',
    label: 'Home feed',
    empty: homeEmpty(),
    me: ctx.me,
    onDelete: deleteStatus,
    fetchPage: (before, signal) => api('GET', '/timelines/home' + query({ limit: 30, before }), undefined, { signal }),
    // The page and the stream race: a page read just before the stream
    // subscribed would leave a gap that the `ready` resume (sent while the
    // page was still loading) could not cover. Asking again closes it;
    // anything sent twice is dropped by id.
    onLoaded: () => {
      if (app && app.stream.state === 'live') app.stream.send({ type: 'resume', after: ctx.homeFeed.maxId });
    },
  });
  app.timelines.add(ctx.homeFeed);

  app.sidebar = new Sidebar();
  aside.replaceChildren(app.sidebar.el);
  aside.hidden = false;
  buildHeader();

  app.stream = new Stream({
    onReady,
    onFrame,
    onState: showConnState,
    resumeAfter: () => ctx.homeFeed.maxId,
    onSignedOut: () => leaveApp('You were signed out.'),
    checkSession: () => api('GET', '/me').then(() => true, (err) => (err.status === 401 ? false : Promise.reject(err))),
  });
  app.stream.start();

  refreshFriends();
  refreshSiteCounts();
  app.timers.push(setInterval(() => refreshTimes(document), 30000));
  app.timers.push(setInterval(refreshSiteCounts, 60000));
  // No frame says "someone you follow followed you back", so a friendship
  // the other side made shows up here only through GET /friends.
  app.timers.push(setInterval(() => {
    if (!document.hidden) refreshFriends();
  }, 60000));

  route({ moveFocus: fromForm });
}

function leaveApp(notice) {
  if (!app) return;
  const old = app;
  app = null;
  old.stream.stop();
  for (const t of old.timers) clearInterval(t);
  clearTimeout(old.batchTimer);
  clearTimeout(old.friendsTimer);
  if (old.view) old.view.destroy();
  for (const tl of old.timelines) tl.destroy();
  nav.replaceChildren();
  nav.hidden = true;
  session.replaceChildren();
  session.hidden = true;
  aside.replaceChildren();
  aside.hidden = true;
  delete document.body.dataset.route;
  if (notice !== '') showAuth({ notice, focus: true });
}

// ------------------------------------------------------------ header

function buildHeader() {
  const link = (href, label, name, extra) => h('a', { href, class: 'nav-link', dataset: { route: name } }, label, extra);
  app.badge = h('span', { class: 'nav-badge', hidden: true });
  nav.replaceChildren(
    link('#/', 'Home', 'home', app.badge),
    link('#/global', 'Global', 'global'),
    link(profileHref(app.me.login), 'Profile', 'profile'),
  );
  nav.hidden = false;

  app.connLabel = h('span', { class: 'conn-label' }, 'Connecting…');
  app.conn = h('span', { class: 'conn', role: 'status', dataset: { testid: 'conn-state', state: 'connecting' } },
    h('span', { class: 'conn-dot', 'aria-hidden': 'true' }), app.connLabel);
  app.retry = h('button', { type: 'button', class: 'btn-link small', hidden: true, onclick: () => app.stream.retryNow() }, 'Retry now');
  app.meName = h('span', { class: 'me-name' }, app.me.name || '');
  const signout = h('button', { type: 'button', class: 'btn btn-quiet btn-small', dataset: { testid: 'signout' }, onclick: signOut }, 'Sign out');
  session.replaceChildren(
    h('span', { class: 'conn-wrap' }, app.conn, app.retry),
    h('a', { class: 'me-link', href: profileHref(app.me.login), title: 'Your profile' },
      app.meName, loginEl(app.me.login, { dataset: { testid: 'me' } })),
    signout,
  );
  session.hidden = false;
}

function showConnState(state, info) {
  if (!app) return;
  const label = state === 'live' ? 'Live' : state === 'offline' ? 'Offline' : info.attempt > 0 ? 'Reconnecting…' : 'Connecting…';
  app.conn.dataset.state = state;
  app.connLabel.textContent = label;
  const waiting = state !== 'live' && info.retryAt > Date.now();
  app.conn.title = waiting ? `Next attempt in ${Math.ceil((info.retryAt - Date.now()) / 1000)} s` : '';
  app.retry.hidden = !waiting;
  app.sidebar.setLive(state === 'live');
}

function updateNav() {
  const r = app.route;
  // "Profile" is your own; someone else's profile is no tab of the header.
  const name = r.name === 'profile' && !sameLogin(r.login, app.me.login) ? '' : r.name;
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.route === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  app.badge.hidden = app.unseen === 0;
  app.badge.replaceChildren(String(app.unseen), h('span', { class: 'visually-hidden' }, ' new'));
}

async function signOut(ev) {
  const btn = ev.currentTarget;
  btn.disabled = true;
  // Close the stream first: once the token is revoked the server closes it
  // with 1008, which would read as "you were signed out" by someone else.
  app.stream.stop();
  try {
    await api('DELETE', '/sessions/current');
  } catch (err) {
    if (err.status !== 401 && app) {
      btn.disabled = false;
      app.stream.start();
      toast(`Could not sign out: ${err.message}`, 'error');
      return;
    }
  }
  leaveApp('You have signed out.');
}

// ------------------------------------------------------------ routing

function route({ moveFocus = true } = {}) {
  if (!app) return;
  const r = parseRoute(location.hash);
  if (app.view) app.view.destroy();
  const ctx = app.ctx;
  let view;
  switch (r.name) {
    case 'home': view = homeView(ctx); break;
    case 'global': view = globalView(ctx); break;
    case 'profile': view = profileView(ctx, r.login); break;
    case 'followers':
    case 'following': view = peopleView(ctx, r.login, r.name); break;
    default: view = notFoundView();
  }
  app.view = view;
  app.route = r;
  document.body.dataset.route = r.name;
  main.replaceChildren(view.el);
  if (view.mounted) view.mounted();
  refreshTimes(main);
  document.title = `${view.title} · Chorus`;
  if (r.name === 'home') app.unseen = 0;
  updateNav();
  if (moveFocus) {
    window.scrollTo(0, 0);
    view.heading.focus({ preventScroll: true });
  }
}

window.addEventListener('hashchange', () => route());

// The skip link must not change the hash, which is the router's.
document.querySelector('.skip-link').addEventListener('click', (ev) => {
  ev.preventDefault();
  const target = (app && app.view && app.view.heading) || main;
  target.focus();
});

// ------------------------------------------------------------ stream frames

function onReady(frame) {
  if (!app) return;
  if (frame.user) {
    app.me = { ...app.me, ...frame.user };
    app.meName.textContent = app.me.name || '';
  }
  app.sidebar.setSnapshot(frame.online_friends);
  // The counts fetched at sign-in predate this connection, so they left you out.
  refreshSiteCounts();
}

function onFrame(frame) {
  if (!app) return;
  switch (frame.type) {
    case 'status': {
      const s = frame.status;
      if (!s) return;
      const added = app.ctx.homeFeed.add(s, true);
      if (added && s.uid !== app.me.id) noteNew(s);
      break;
    }
    case 'status_deleted':
      removeStatus(frame.id);
      break;
    case 'presence':
      app.sidebar.presence(frame);
      break;
    case 'friend_removed':
      app.sidebar.removeFriend(frame.user);
      break;
    case 'error':
      console.warn('stream error frame', frame.code, frame.message);
      break;
    default:
      // Unknown types are extensions this client predates.
  }
}

// noteNew batches arrivals (a resume can bring dozens at once) into one
// announcement, or a count on the Home link while you are elsewhere.
function noteNew(status) {
  app.newBatch.push(status);
  clearTimeout(app.batchTimer);
  app.batchTimer = setTimeout(() => {
    if (!app) return;
    const batch = app.newBatch;
    app.newBatch = [];
    if (app.route && app.route.name === 'home') {
      const s = batch[0];
      announce(batch.length === 1 ? `New post from ${s.login}: ${String(s.message).slice(0, 140)}` : `${batch.length} new posts`);
    } else {
      app.unseen += batch.length;
      updateNav();
    }
  }, 800);
}

// ------------------------------------------------------------ actions

function removeStatus(id) {
  if (!app) return;
  for (const tl of app.timelines) tl.remove(id);
}

async function deleteStatus(status, li, button, errorEl) {
  button.disabled = true;
  errorEl.hidden = true;
  try {
    await api('DELETE', `/statuses/${encodeURIComponent(status.id)}`);
  } catch (err) {
    // 404: it is gone already, which is what was wanted.
    if (err.status !== 404) {
      button.disabled = false;
      errorEl.textContent = err.message;
      errorEl.hidden = false;
      return;
    }
  }
  // Keep keyboard focus near where it was rather than losing it to <body>.
  const hadFocus = li.contains(document.activeElement);
  const next = li.nextElementSibling || li.previousElementSibling;
  removeStatus(status.id);
  if (hadFocus && app) (next || app.view.heading).focus();
  announce('Status deleted.');
}

// followChanged keeps the home feed and friends honest after (un)following.
function followChanged(login, following) {
  if (!app) return;
  if (following) {
    app.ctx.homeStale = true; // the server backfilled their latest posts
  } else {
    app.ctx.homeFeed.removeWhere((l) => sameLogin(l, login));
  }
  clearTimeout(app.friendsTimer);
  app.friendsTimer = setTimeout(refreshFriends, 300);
}

async function refreshFriends() {
  if (!app) return;
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
  if (app) app.sidebar.setFriends(users, complete);
}

async function refreshSiteCounts() {
  if (!app || document.hidden) return;
  try {
    const counts = await api('GET', '/presence');
    if (app) app.sidebar.setSiteCounts(counts);
  } catch {
    if (app) app.sidebar.setSiteCounts(null);
  }
}

boot();
