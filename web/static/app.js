// The composition root of the Chorus web client: asks GET /me whether
// someone is signed in, then routes every page (PAGES) for them or for a
// visitor, and shows one at a time in <main>. Signed in, a Session
// (session.js) runs the home feed, the friends sidebar, the stream and the
// connection indicator; its frames are dispatched by frames.js.

import { api, setUnauthorizedHandler } from './api.js';
import { h, announce, toast, sameLogin } from './dom.js';
import { startClock, refreshTimes } from './time.js';
import { Header } from './header.js';
import { startShortcuts } from './keys.js';
import { parseRoute, startRouter, navigate, savedScroll } from './router.js';
import { homeView, welcomeView, globalView, peopleView, notFoundView } from './views.js';
import { profileView } from './profile.js';
import { statusView } from './statuspage.js';
import { searchView } from './search.js';
import { listsView, listView } from './lists.js';
import { settingsView } from './settings.js';
import { Session } from './session.js';
import { notificationsView } from './notifications.js';
import { parentGone } from './status.js';
import { replyRemoved } from './actions.js';
import { adminView } from './admin.js';

const main = document.getElementById('main');
const aside = document.getElementById('sidebar');

// What exists only while signed in (a Session); null for a visitor.
let session = null;
let view = null; // the page shown
let route = null; // and its route
let notice = ''; // said once by the next sign-in form

// ctx is what the pages get to work with.
const ctx = {
  me: () => (session ? session.me : null),
  timelines: new Set(), // every Timeline shown or kept, for deletions
  homeFeed: null,
  stream: null, // signed in: {live(), send(frame)} of the session's stream
  homeStale: false, // set after a follow, an unmute, an unblock: reload the feed on the next visit
  draft: '', // the composer's text, kept across pages
  liveAgain: new Set(), // called each time the connection turns live, after a break too
  deleteStatus,
  removeStatus, // a status found gone (a 404): it leaves the page, as a deleted one
  followChanged,
  hideAuthor,
  homeChanged,
  signedIn,
  signInLink,
  askSignIn,
  profileSaved,
  accountDeleted,
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
  notifications: () => (session ? notificationsView(ctx, session.notes) : signInFirstView('Notifications', 'Sign in to see who followed, mentioned, replied to, liked or reposted you.')),
  settings: () => settingsView(ctx),
  admin: () => adminView(ctx),
  notfound: () => notFoundView(),
};

const header = new Header({
  nav: document.getElementById('nav'),
  session: document.getElementById('session'),
  tabbar: document.getElementById('tabbar'),
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

setUnauthorizedHandler((err) => {
  // A wrong password typed in a form (settings) is no ended session.
  if (err && err.code === 'invalid_credentials') return;
  if (session) leaveApp('Your session has ended. Please sign in again.');
});

// profileSaved shows the signed-in user's new name at once; the stream's
// profile frame tells the other tabs.
function profileSaved(user) {
  if (!session) return;
  session.me.name = user.name;
  header.setName(session.me);
}

// accountDeleted leaves the app after the account is deleted: every
// session of it has ended, this one too.
function accountDeleted() {
  leaveApp(null);
  notice = 'Your account is deleted.';
  navigate('/');
}

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
  if (session && r.name === 'home') session.setUnseen(0);
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

// askSignIn takes a visitor who pressed what needs an account (Like, say)
// to the sign-in form, which comes back here.
function askSignIn() {
  const here = location.pathname;
  navigate('/', { state: { auth: 'signin', next: here === '/' ? null : here } });
}

// signInFirstView is a page only the signed-in see, shown to a visitor.
function signInFirstView(title, text) {
  const h1 = h('h1', { class: 'page-title', tabindex: '-1' }, title);
  const el = h('div', { class: 'view' }, h1, h('div', { class: 'card' }, h('p', {}, text), h('p', {}, signInLink('Sign in', 'btn btn-primary'))));
  return { el, title, heading: h1, destroy() {} };
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

// enterApp starts a session for user. It is held before it starts, so
// that what it starts finds it (ctx.me, the page's frames).
function enterApp(user) {
  if (session) leaveApp(null);
  session = new Session(user, {
    ctx,
    header,
    aside,
    view: () => view,
    route: () => route,
    removeStatus,
    leave: leaveApp,
  });
  session.start();
}

// leaveApp ends the signed-in session here. The page shown stays (public
// pages read the same to a visitor); notice, if any, is said on the
// sign-in form, or in a toast elsewhere.
function leaveApp(text) {
  if (!session) return;
  const old = session;
  session = null;
  old.close();
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
  try {
    await session.signOut();
  } catch (err) {
    btn.disabled = false;
    toast(`Could not sign out: ${err.message}`, 'error');
    return;
  }
  leaveApp(null);
  notice = 'You have signed out.';
  navigate('/');
}

// ------------------------------------------------------------ actions

function removeStatus(id) {
  if (view && view.onDeleted) view.onDeleted(id);
  for (const tl of ctx.timelines) tl.remove(id);
  const roots = [document, ...[...ctx.timelines].map((tl) => tl.el).filter((el) => !el.isConnected)];
  // Rows no Timeline holds (a reply shown under the post it answers) and
  // reposts of it go too; a list of replies left empty goes with them.
  for (const root of roots) {
    for (const li of root.querySelectorAll(`[data-testid="status"][data-id="${Number(id)}"], [data-testid="status"][data-original="${Number(id)}"]`)) {
      const list = li.parentElement;
      li.remove();
      if (list && list.matches('.inline-replies') && !list.querySelector('[data-testid="status"]')) list.remove();
    }
  }
  // Replies to it, wherever shown or kept, now answer a deleted post.
  parentGone(id, roots);
}

// followChanged: you (un)followed login on some page.
function followChanged(login, following) {
  if (session) session.followChanged(login, following);
}

// hideAuthor: you blocked or muted login: their statuses, and anyone's
// reposts of them, leave every timeline kept and the page shown (a
// thread: its onHidden), and a block ended your follows both ways.
function hideAuthor(login, blocked) {
  for (const tl of ctx.timelines) tl.removeWhere((l) => sameLogin(l, login), { reposted: true });
  if (view && view.onHidden) view.onHidden(login);
  if (blocked) followChanged(login, false);
}

// homeChanged: your home timeline changed in a way no frame tells: a
// follow brought the person's latest statuses in, or a block or mute taken
// back shows theirs again, and anyone's reposts of them. The home feed,
// kept between visits, reads its first page again: now if shown, else the
// next time it is. No other timeline is kept: each reads afresh with its
// page, and the person's profile reads theirs again as its menu changes
// (profile.js).
function homeChanged() {
  if (!ctx.homeFeed) return;
  if (ctx.homeFeed.el.isConnected) ctx.homeFeed.reload();
  else ctx.homeStale = true;
}

// deleteStatus deletes a status of yours; it rejects with the error to show.
async function deleteStatus(status) {
  try {
    await api('DELETE', `/statuses/${encodeURIComponent(status.id)}`);
  } catch (err) {
    if (err.status !== 404) throw err; // 404: it is gone already, as wanted
  }
  // Its likes' and reposts' notifications went with it, with no frame:
  // the first of them before the answer.
  if (session) session.notes.changed();
  // The post it answered has one reply less, read again now that the
  // deletion is in (the status_deleted frame names it too, but reads
  // within the page's budget; your own is read past it).
  if (status.reply_to && status.reply_to.id) replyRemoved(status.reply_to.id);
  // The focus, if it was on the question, goes to the post beside it
  // (dom.js confirmControls), though the stream's status_deleted took it
  // off the page first.
  removeStatus(status.id);
  announce('Post deleted.');
}

boot();
