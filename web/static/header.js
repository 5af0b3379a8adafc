// The site header: the main navigation (Search and Lists included), and on the
// right either who is signed in (with the connection indicator, the
// notifications and Sign out) or, for a visitor, Sign in and Create account.
// On a phone, signed in, a tab bar at the foot of the screen (Home, Global,
// Search, Notifications, Profile) takes the place of the links it repeats.

import { h, loginEl, sameLogin } from './dom.js';
import { profileHref } from './router.js';
import { icon } from './icons.js';

// BADGE_MAX is the largest count a badge shows whole: past it, "99+"
// (the tab bar's and the bell's alike); the exact count is in the
// accessible name.
const BADGE_MAX = 99;

/** badgeText is how a badge shows count n: "" for none, "99+" past BADGE_MAX. */
export function badgeText(n) {
  if (n <= 0) return '';
  return n > BADGE_MAX ? `${BADGE_MAX}+` : String(n);
}

/**
 * keepFocusClear keeps what scrolls into view (a control taking the focus
 * from the keyboard) out from under the sticky header and the phone's
 * fixed tab bar: their heights, which change as the header wraps or the
 * tab bar comes, are the page's scroll padding (style.css, html).
 */
function keepFocusClear(header, tabbar) {
  if (!header || typeof ResizeObserver === 'undefined') return;
  const root = document.documentElement.style;
  const bars = new ResizeObserver(() => {
    root.setProperty('--header-h', `${header.offsetHeight}px`);
    root.setProperty('--tabbar-h', `${tabbar && !tabbar.hidden ? tabbar.offsetHeight : 0}px`);
  });
  bars.observe(header);
  if (tabbar) bars.observe(tabbar);
}

/**
 * Header fills #nav and #session.
 *  onSignOut(button)  the Sign out button was pressed
 *  onRetry()          "Retry now" was pressed
 *  signInLink(label, className, mode)  a link to the sign-in page that returns here
 */
export class Header {
  constructor({ nav, session, tabbar, onSignOut, onRetry, signInLink }) {
    this.nav = nav;
    this.session = session;
    this.tabbar = tabbar;
    this.tabBadges = null;
    this.opts = { onSignOut, onRetry, signInLink };
    this.me = null;
    this.badge = null;
    keepFocusClear(nav.closest('.site-header'), tabbar);
  }

  link(href, label, name, extra) {
    return h('a', { href, class: 'nav-link', dataset: { route: name } }, label, extra);
  }

  // tab is one tab of the phone's tab bar: an icon over its name, and a
  // count (hidden at zero) whose words, exact, ride in the accessible name.
  tab(href, label, name, iconName) {
    const badge = h('span', { class: 'tab-badge', hidden: true, 'aria-hidden': 'true' });
    const a = h('a', { href, class: 'tabbar-link', dataset: { route: name, testid: `tab-${name}` } },
      icon(iconName, 22), h('span', { class: 'tabbar-label' }, label), badge);
    const set = (n, what) => {
      badge.hidden = n === 0;
      badge.textContent = badgeText(n);
      if (n === 0) a.removeAttribute('aria-label');
      else a.setAttribute('aria-label', `${label}, ${n} ${what}`);
    };
    return { a, set };
  }

  /** signedIn shows me's navigation and session. */
  signedIn(me, { tools = null } = {}) {
    this.me = me;
    this.badge = h('span', { class: 'nav-badge', hidden: true });
    this.nav.replaceChildren(
      this.link('/', 'Home', 'home', this.badge),
      this.link('/global', 'Global', 'global'),
      this.link(profileHref(me.login), 'Profile', 'profile'),
      this.link('/search', 'Search', 'search'),
      this.link('/lists', 'Lists', 'lists'),
      ...(me.admin ? [this.link('/admin', 'Moderation', 'admin')] : []),
    );
    this.connLabel = h('span', { class: 'conn-label' }, 'Connecting…');
    this.conn = h('span', { class: 'conn', role: 'status', dataset: { testid: 'conn-state', state: 'connecting' } },
      h('span', { class: 'conn-dot', 'aria-hidden': 'true' }), this.connLabel);
    this.retry = h('button', { type: 'button', class: 'btn-link small', hidden: true, onclick: () => this.opts.onRetry() }, 'Retry now');
    this.meName = h('span', { class: 'me-name' }, me.name || '');
    const signout = h('button', { type: 'button', class: 'btn btn-quiet btn-small', dataset: { testid: 'signout' } }, 'Sign out');
    signout.addEventListener('click', () => this.opts.onSignOut(signout));
    this.session.replaceChildren(
      h('span', { class: 'conn-wrap' }, this.conn, this.retry),
      tools,
      h('a', { class: 'me-link', href: profileHref(me.login), title: 'Your profile' },
        this.meName, loginEl(me.login, { dataset: { testid: 'me' } })),
      signout,
    );
    delete this.session.dataset.testid;
    this.nav.hidden = false;
    this.session.hidden = false;

    const tabs = {
      home: this.tab('/', 'Home', 'home', 'home'),
      global: this.tab('/global', 'Global', 'global', 'globe'),
      search: this.tab('/search', 'Search', 'search', 'search'),
      notifications: this.tab('/notifications', 'Notifications', 'notifications', 'bell'),
      profile: this.tab(profileHref(me.login), 'Profile', 'profile', 'user'),
    };
    this.tabBadges = tabs;
    this.tabbar.replaceChildren(...Object.values(tabs).map((t) => t.a));
    this.tabbar.hidden = false;
    document.body.classList.add('has-tabbar');
  }

  /** signedOut shows a visitor's navigation: the public timeline, and ways in. */
  signedOut() {
    this.me = null;
    this.badge = null;
    this.conn = null;
    this.nav.replaceChildren(this.link('/global', 'Global', 'global'), this.link('/search', 'Search', 'search'));
    this.session.replaceChildren(
      this.opts.signInLink('Sign in', 'btn btn-secondary btn-small', 'signin'),
      this.opts.signInLink('Create account', 'btn btn-primary btn-small', 'signup'),
    );
    this.session.dataset.testid = 'visitor';
    this.nav.hidden = false;
    this.session.hidden = false;
    this.tabBadges = null;
    this.tabbar.replaceChildren();
    this.tabbar.hidden = true;
    document.body.classList.remove('has-tabbar');
  }

  /** setName shows a fresher copy of the signed-in user. */
  setName(me) {
    this.me = me;
    if (this.meName) this.meName.textContent = me.name || '';
  }

  /** setRoute marks the current page in the navigation. */
  setRoute(route) {
    // "Profile" is your own; someone else's profile is no tab of the header.
    // One list's page is under the "Lists" tab.
    const own = this.me && route.name === 'profile' && sameLogin(route.login, this.me.login);
    let name = route.name === 'profile' && !own ? '' : route.name;
    if (name === 'list') name = 'lists';
    for (const a of [...this.nav.querySelectorAll('a'), ...this.tabbar.querySelectorAll('a'), ...this.session.querySelectorAll('a[data-route]')]) {
      if (a.dataset.route === name) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    // A visitor on the home page has the forms in front of them already.
    this.session.classList.toggle('is-home', route.name === 'home');
  }

  /** setUnseen shows how many new posts wait in the home feed. */
  setUnseen(n) {
    if (!this.badge) return;
    this.badge.hidden = n === 0;
    this.badge.replaceChildren(String(n), h('span', { class: 'visually-hidden' }, ' new'));
    if (this.tabBadges) this.tabBadges.home.set(n, 'new');
  }

  /** setNotes shows n unread notifications on the tab bar. */
  setNotes(n) {
    if (this.tabBadges) this.tabBadges.notifications.set(n, 'unread');
  }

  /** setConn shows the connection indicator's view (health.js). */
  setConn(v) {
    if (!this.conn) return;
    this.conn.dataset.state = v.state;
    this.connLabel.textContent = v.label;
    const waiting = v.retryAt > Date.now();
    this.conn.title = waiting ? `${v.title} Next attempt in ${Math.ceil((v.retryAt - Date.now()) / 1000)} s.`.trim() : v.title;
    this.retry.hidden = !waiting;
  }
}
