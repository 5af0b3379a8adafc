// Chorus web client: asks GET /me whether someone is signed in, then routes
// every page (PAGES) for them or for a visitor. Signed in, it also runs the
// home feed, the friends sidebar, the stream and the connection indicator.

import { api, query, setUnauthorizedHandler, setHealthHandler } from './api.js';
import { h, announce, toast, sameLogin } from './dom.js';
import { startClock, refreshTimes } from './time.js';
import { Stream } from './stream.js';
import { Timeline } from './timeline.js';
import { Sidebar } from './sidebar.js';
import { Header } from './header.js';
import { Health } from './health.js';
import { learnName } from './names.js';
import { startShortcuts } from './keys.js';
import { parseRoute, startRouter, navigate, savedScroll } from './router.js';
import { homeView, homeEmpty, welcomeView, globalView, peopleView, notFoundView } from './views.js';
import { profileView } from './profile.js';
import { statusView } from './statuspage.js';
import { searchView } from './search.js';
import { listsView, listView } from './lists.js';
import { Suggestions } from './suggestions.js';
import { Notifications } from './notifications.js';

const main = document.getElementById('main');
const aside = document.getElementById('sidebar');

// What exists only while signed in; null for a visitor.
let session = null;
let view = null; // the page shown
let route = null; // and its route
let notice = ''; // said once by the next sign-in form

// ctx is what the pages get to work with.
const ctx = {
  me: () => (session ? session.me : null),
  timelines: new Set(), // every Timeline shown or kept, for deletions
  homeFeed: null,
  homeStale: false, // set after a follow: reload the feed on the next visit
  draft: '', // the composer's text, kept across pages
  deleteStatus,
  followChanged,
  signedIn,
  signInLink,
};

// PAGES builds the view of each route (router.js ROUTES).
const PAGES = {
  home: () => (session ? homeView(ctx) : welcomeView(ctx, authOptions())),
  global: () => globalView(ctx),
  profile: (r) => profileView(ctx, r.login),
  followers: (r) => peopleView(ctx, r.login, 'followers'),
  following: (r) => peopleView(ctx, r.login, 'following'),
  status: (r) => statusView(ctx, r.id),
  search: () => searchView(ctx),
  lists: () => listsView(ctx),
  list: (r) => listView(ctx, r.id),
  notfound: () => notFoundView(),
};

const header = new Header({
  nav: document.getElementById('nav'),
  session: document.getElementById('session'),
  onSignOut: signOut,
  onRetry: () => session && session.stream.retryNow(),
  signInLink,
});

// ------------------------------------------------------------ boot

let started = false;

async function boot() {
  main.replaceChildren(h('p', { class: 'muted boot' }, 'Loading…'));
  try {
    const res = await api('GET', '/me');
    enterApp(res.user);
  } catch (err) {
    if (err.status !== 401) {
      // Not "signed out": the server is unreachable or unwell. Say so.
      main.replaceChildren(h('div', { class: 'card boot-error' },
        h('h1', { class: 'page-title' }, 'Chorus is not answering'),
        h('p', {}, err.message),
        h('button', { type: 'button', class: 'btn btn-primary', onclick: boot }, 'Try again'),
      ));
      return;
    }
    header.signedOut();
  }
  if (started) {
    show({ first: true });
    return;
  }
  started = true;
  startRouter(show);
  startClock(document);
  startShortcuts({ compose, open: (path) => navigate(path) });
}

setUnauthorizedHandler(() => {
  if (session) leaveApp('Your session has ended. Please sign in again.');
});

// ------------------------------------------------------------ pages

function show({ pop = false, first = false } = {}) {
  const r = parseRoute(location.pathname);
  if (view) view.destroy();
  view = (PAGES[r.name] || PAGES.notfound)(r);
  route = r;
  document.body.dataset.route = r.name;
  main.replaceChildren(view.el);
  if (view.mounted) view.mounted();
  refreshTimes(view.el); // a kept feed's ages stood still while it was away
  document.title = `${view.title} · Chorus`;
  header.setRoute(r);
  if (session && r.name === 'home') setUnseen(0);
  window.scrollTo(0, (pop && savedScroll()) || 0);
  // Move focus to the new page, for keyboard and screen reader users; on
  // the first page, leave it where the browser puts it, but for the form.
  if (!first) view.heading.focus({ preventScroll: true });
  else if (view.focus) view.focus();
}

function authOptions() {
  const state = history.state || {};
  const opts = { mode: state.auth === 'signup' ? 'signup' : 'signin', notice, focus: false };
  notice = '';
  return opts;
}

/**
 * signInLink is a link to the sign-in (or, with mode "signup", sign-up)
 * form that comes back to this page once signed in.
 */
function signInLink(label, className, mode = 'signin') {
  const a = h('a', { href: '/', class: className, dataset: { testid: `${mode}-link` } }, label);
  a.addEventListener('click', (ev) => {
    if (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
    ev.preventDefault();
    const here = location.pathname;
    navigate('/', { state: { auth: mode, next: here === '/' ? null : here } });
  });
  return a;
}

// compose is the n shortcut: to the composer, from wherever.
function compose() {
  if (!session) return false;
  if (!route || route.name !== 'home') navigate('/');
  if (view && view.composer) view.composer.focus();
  return true;
}

// The skip link goes to the page's heading, not to the address "#main".
document.querySelector('.skip-link').addEventListener('click', (ev) => {
  ev.preventDefault();
  ((view && view.heading) || main).focus();
});

// ------------------------------------------------------------ signed in

// signedIn: the form signed someone in. Back to the page they came from.
function signedIn(user) {
  enterApp(user);
  const next = history.state && history.state.next;
  if (next && parseRoute(next).name !== 'notfound') navigate(next, { replace: true });
  else navigate(location.pathname, { replace: true });
}

function enterApp(user) {
  if (session) leaveApp(null);
  document.body.classList.remove('signed-out');
  learnName(user);
  session = {
    me: user,
    unseen: 0,
    newBatch: [],
    batchTimer: 0,
    friendsTimer: 0,
    friendsKnown: false, // GET /friends answered once: unknown friends are new ones
    countsAt: 0,
    countsTimer: 0,
    timers: [],
  };

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
      if (session && session.stream.state === 'live') session.stream.send({ type: 'resume', after: ctx.homeFeed.maxId });
    },
  });
  ctx.timelines.add(ctx.homeFeed);

  session.sidebar = new Sidebar();
  session.suggestions = new Suggestions(ctx);
  session.sidebar.el.append(session.suggestions.el);
  aside.replaceChildren(session.sidebar.el);
  aside.hidden = false;
  session.notes = new Notifications(ctx);
  header.signedIn(user, { tools: session.notes.el });

  const sidebar = session.sidebar;
  const health = new Health((v) => {
    header.setConn(v);
    sidebar.setLive(v.state === 'live');
  });
  session.health = health;
  setHealthHandler((ok) => health.setApi(ok));

  session.stream = new Stream({
    onReady,
    onFrame,
    onState: (state, info) => health.setStream(state, info),
    resumeAfter: () => ctx.homeFeed.maxId,
    onSignedOut: () => leaveApp('You were signed out.'),
    checkSession: () => api('GET', '/me').then(() => true, (err) => (err.status === 401 ? false : Promise.reject(err))),
  });
  session.stream.start();

  refreshFriends();
  refreshSiteCounts();
  session.suggestions.load();
  session.timers.push(setInterval(refreshSiteCounts, 60000));
  // Frames sent while the stream was down are not replayed, so GET
  // /friends now and then keeps the panel whole.
  session.timers.push(setInterval(() => {
    if (!document.hidden) refreshFriends();
  }, 60000));
}

// leaveApp ends the signed-in session here. The page shown stays (public
// pages read the same to a visitor); notice, if any, is said on the
// sign-in form, or in a toast elsewhere.
function leaveApp(text) {
  if (!session) return;
  const old = session;
  session = null;
  old.health.stop();
  old.stream.stop();
  old.notes.destroy();
  setHealthHandler(null);
  for (const t of old.timers) clearInterval(t);
  clearTimeout(old.batchTimer);
  clearTimeout(old.friendsTimer);
  clearTimeout(old.countsTimer);
  for (const tl of ctx.timelines) tl.destroy();
  ctx.timelines.clear();
  ctx.homeFeed = null;
  ctx.draft = '';
  aside.replaceChildren();
  aside.hidden = true;
  document.body.classList.add('signed-out');
  header.signedOut();
  if (text === null) return; // another session follows at once
  notice = text;
  if (route && route.name !== 'home' && text) {
    notice = '';
    toast(text);
  }
  show();
}

async function signOut(btn) {
  btn.disabled = true;
  // Close the stream first: once the token is revoked the server closes it
  // with 1008, which would read as "you were signed out" by someone else.
  session.stream.stop();
  try {
    await api('DELETE', '/sessions/current');
  } catch (err) {
    if (err.status !== 401 && session) {
      btn.disabled = false;
      session.stream.start();
      toast(`Could not sign out: ${err.message}`, 'error');
      return;
    }
  }
  leaveApp(null);
  notice = 'You have signed out.';
  navigate('/');
}

function setUnseen(n) {
  session.unseen = n;
  header.setUnseen(n);
}

// ------------------------------------------------------------ stream frames

function onReady(frame) {
  if (!session) return;
  if (frame.user) {
    session.me = { ...session.me, ...frame.user };
    header.setName(session.me);
  }
  session.health.setService(true); // `ready` comes only from a server that can serve
  session.sidebar.setSnapshot(frame.online_friends);
  // The counts fetched at sign-in predate this connection, so they left you out.
  refreshSiteCounts();
}

function onFrame(frame) {
  if (!session) return;
  if (frame.type === 'service') {
    session.health.setService(frame.available !== false);
    return;
  }
  if (frame.type !== 'status_deleted' && view && view.onFrame) view.onFrame(frame);
  switch (frame.type) {
    case 'status': {
      const s = frame.status;
      if (!s) return;
      const added = ctx.homeFeed.add(s, { complete: true });
      if (added && s.uid !== session.me.id) noteNew(s);
      break;
    }
    case 'status_deleted':
      removeStatus(frame.id);
      break;
    case 'presence': {
      const made = session.friendsKnown && frame.user && !session.sidebar.has(frame.user.login);
      session.sidebar.presence(frame);
      if (made) followsChanged(frame.user);
      siteCountsSoon();
      break;
    }
    case 'friend_removed':
      session.sidebar.removeFriend(frame.user);
      if (frame.user) followsChanged(frame.user);
      break;
    case 'followed':
      if (!frame.user) break;
      session.notes.followed(frame);
      followsChanged(frame.user);
      break;
    case 'error':
      console.warn('stream error frame', frame.code, frame.message);
      break;
    default:
      // Unknown types are extensions this client predates.
  }
}

// followsChanged tells the page that user followed you, or that a
// friendship with them was made or ended: counts on a profile change.
function followsChanged(user) {
  if (view && view.onFollows) view.onFollows(user);
}

// noteNew batches arrivals (a resume can bring dozens at once) into one
// announcement, or a count on the Home link while you are elsewhere.
function noteNew(status) {
  session.newBatch.push(status);
  clearTimeout(session.batchTimer);
  session.batchTimer = setTimeout(() => {
    if (!session) return;
    const batch = session.newBatch;
    session.newBatch = [];
    if (route && route.name === 'home') {
      const s = batch[0];
      announce(batch.length === 1 ? `New post from ${s.login}: ${String(s.message).slice(0, 140)}` : `${batch.length} new posts`);
    } else {
      setUnseen(session.unseen + batch.length);
    }
  }, 800);
}

// ------------------------------------------------------------ actions

function removeStatus(id) {
  if (view && view.onDeleted) view.onDeleted(id);
  for (const tl of ctx.timelines) tl.remove(id);
}

// deleteStatus deletes a status of yours; it rejects with the error to show.
async function deleteStatus(status, li) {
  try {
    await api('DELETE', `/statuses/${encodeURIComponent(status.id)}`);
  } catch (err) {
    if (err.status !== 404) throw err; // 404: it is gone already, as wanted
  }
  // Keep keyboard focus near where it was rather than losing it to <body>.
  const hadFocus = li.contains(document.activeElement);
  const next = li.nextElementSibling || li.previousElementSibling;
  removeStatus(status.id);
  if (hadFocus && view) (next && next.isConnected ? next : view.heading).focus();
  announce('Post deleted.');
}

// followChanged keeps the home feed and friends honest after (un)following.
function followChanged(login, following) {
  if (!session) return;
  if (following) {
    ctx.homeStale = true; // the server backfilled their latest posts
  } else {
    ctx.homeFeed.removeWhere((l) => sameLogin(l, login));
  }
  clearTimeout(session.friendsTimer);
  session.friendsTimer = setTimeout(refreshFriends, 300);
}

async function refreshFriends() {
  if (!session) return;
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
  if (!session) return;
  session.sidebar.setFriends(users, complete);
  session.friendsKnown = true;
}

async function refreshSiteCounts() {
  if (!session || document.hidden) return;
  session.countsAt = Date.now();
  try {
    const counts = await api('GET', '/presence');
    if (session) session.sidebar.setSiteCounts(counts);
  } catch {
    if (session) session.sidebar.setSiteCounts(null);
  }
}

// siteCountsSoon refreshes the site-wide counts after a friend came or
// went, at most every 15 s (the server recomputes them no more often).
function siteCountsSoon() {
  if (session.countsTimer) return;
  const wait = Math.max(0, session.countsAt + 15000 - Date.now());
  session.countsTimer = setTimeout(() => {
    if (!session) return;
    session.countsTimer = 0;
    refreshSiteCounts();
  }, wait);
}

boot();
