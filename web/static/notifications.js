// The header's notifications: a bell with the number unread, opening a
// panel of who followed you (newest first, the last 20 kept while the page
// is open), each with Follow back while you do not follow them. Fed by the
// stream's `followed` frames; opening the panel marks them read. Escape or
// a click elsewhere closes it.

import { h, avatar, loginEl } from './dom.js';
import { profileHref } from './router.js';
import { timeEl } from './time.js';
import { learnName } from './names.js';
import { followControl } from './follow.js';

const KEEP = 20;

export class Notifications {
  constructor(ctx) {
    this.ctx = ctx;
    this.items = []; // newest first: {user, youFollow, at, li}
    this.unread = 0;
    this.count = h('span', { class: 'bell-count', hidden: true, dataset: { testid: 'notes-count' } });
    this.button = h('button', {
      type: 'button', class: 'bell', 'aria-expanded': 'false', 'aria-controls': 'notes-panel',
      dataset: { testid: 'notes-button' },
    }, bellIcon(), h('span', { class: 'visually-hidden' }, 'Notifications'), this.count);
    // Said once per change, apart from the button, which is read only on focus.
    this.live = h('span', { class: 'visually-hidden', 'aria-live': 'polite', dataset: { testid: 'notes-live' } });
    this.list = h('ul', { class: 'notes-list', 'aria-labelledby': 'notes-heading', dataset: { testid: 'notes-list' } });
    this.empty = h('p', { class: 'muted small' }, 'Nothing yet. When someone follows you, it shows here.');
    this.panel = h('div', { class: 'notes-panel', id: 'notes-panel', hidden: true, dataset: { testid: 'notes-panel' } },
      h('h2', { class: 'panel-heading', id: 'notes-heading' }, 'Notifications'), this.list, this.empty);
    this.el = h('span', { class: 'notes' }, this.button, this.live, this.panel);

    this.button.addEventListener('click', () => (this.isOpen() ? this.close() : this.open()));
    this.el.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && this.isOpen()) {
        ev.preventDefault();
        ev.stopPropagation();
        this.close(true);
      }
    });
    this.outside = (ev) => {
      if (this.isOpen() && ev.target instanceof Node && !this.el.contains(ev.target)) this.close();
    };
    document.addEventListener('pointerdown', this.outside);
    this.setUnread(0);
    this.render();
  }

  isOpen() {
    return !this.panel.hidden;
  }

  open() {
    this.panel.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    this.setUnread(0);
  }

  close(refocus = false) {
    this.panel.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
    if (refocus) this.button.focus();
  }

  /** followed takes a `followed` frame: someone started following you. */
  followed(frame) {
    if (!frame.user || !frame.user.login) return;
    learnName(frame.user);
    const item = { user: frame.user, youFollow: frame.you_follow === true, at: new Date().toISOString() };
    item.li = this.itemEl(item);
    this.items.unshift(item);
    this.items.length = Math.min(this.items.length, KEEP);
    this.render();
    if (this.isOpen()) return; // seen as it comes
    this.setUnread(Math.min(this.unread + 1, KEEP));
    this.live.textContent = `${frame.user.login} followed you. ${this.unread} unread ${this.unread === 1 ? 'notification' : 'notifications'}.`;
  }

  setUnread(n) {
    this.unread = n;
    this.count.hidden = n === 0;
    this.count.textContent = String(n);
    this.button.title = n ? `Notifications: ${n} unread` : 'Notifications';
    this.button.dataset.unread = String(n);
    // The accessible name says how many, for whoever lands on the button.
    this.button.setAttribute('aria-label', n ? `Notifications, ${n} unread` : 'Notifications');
  }

  itemEl(item) {
    const u = item.user;
    const action = item.youFollow ? null : followControl(this.ctx, { ...u, you_follow: false, follows_you: true });
    return h('li', { class: 'note', dataset: { testid: 'note', login: u.login } },
      h('a', { class: 'note-link', href: profileHref(u.login) },
        avatar(u, 'sm'),
        h('span', { class: 'note-text' },
          h('span', {}, loginEl(u.login), ' followed you'),
          h('span', { class: 'muted small' }, timeEl(item.at)),
        ),
      ),
      action,
    );
  }

  render() {
    this.list.replaceChildren(...this.items.map((i) => i.li));
    this.empty.hidden = this.items.length > 0;
  }

  destroy() {
    document.removeEventListener('pointerdown', this.outside);
  }
}

// A bell drawn in SVG: no image file, and no inline style for the CSP.
function bellIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '20');
  svg.setAttribute('height', '20');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', 'M12 3a6 6 0 0 0-6 6v3.6L4.3 16h15.4L18 12.6V9a6 6 0 0 0-6-6Zm-2.5 15a2.5 2.5 0 0 0 5 0');
  path.setAttribute('fill', 'none');
  path.setAttribute('stroke', 'currentColor');
  path.setAttribute('stroke-width', '1.8');
  path.setAttribute('stroke-linejoin', 'round');
  svg.append(path);
  return svg;
}
