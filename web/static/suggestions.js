// "Who to follow": GET /suggestions in the sidebar, each person with why
// (they follow you, people you follow follow them, or they are popular)
// and a Follow button. A row you follow is marked, and the list is read
// again just after any follow or unfollow (session.js), which drops it.

import { h, avatar, loginEl } from './dom.js';
import { api } from './api.js';
import { profileHref } from './router.js';
import { learnName } from './names.js';
import { followControl } from './follow.js';

const LIMIT = 5;

/** reasonText puts a suggestion's reason in words. */
export function reasonText(u) {
  if (u.reason === 'follows_you') return 'Follows you';
  if (u.reason === 'followed_by_following') {
    const names = (u.followed_by || []).map((f) => `@${f.login}`);
    if (names.length === 0) return 'Followed by people you follow';
    const last = names.pop();
    return `Followed by ${names.length ? `${names.join(', ')} and ` : ''}${last}`;
  }
  return 'Popular';
}

// Open beside the feed, closed on a phone: one listener for the page, which
// finds the panel shown when the width changes, not one per panel, which
// would keep each signed-out session's panel alive (session.js drops it
// without telling it).
const wide = window.matchMedia('(min-width: 821px)');
wide.addEventListener('change', () => {
  for (const group of document.querySelectorAll('details.suggest-group')) group.open = wide.matches;
});

/** Suggestions is the sidebar's "Who to follow" panel. */
export class Suggestions {
  constructor(ctx) {
    this.ctx = ctx;
    this.pressed = false; // a row's button was pressed since the last load
    this.list = h('ul', { class: 'suggestion-list', 'aria-labelledby': 'suggest-heading' });
    this.note = h('p', { class: 'muted small' });
    // Open beside the feed; closed on a phone, where it would push the feed down.
    this.group = h('details', { class: 'suggest-group' },
      h('summary', { class: 'group-summary' }, h('h2', { class: 'panel-heading', id: 'suggest-heading' }, 'Who to follow')),
      this.list, this.note);
    this.group.open = wide.matches;
    this.el = h('section', { class: 'panel suggestions', dataset: { testid: 'suggestions' }, 'aria-labelledby': 'suggest-heading', hidden: true }, this.group);
  }

  /** load asks for suggestions again. */
  async load() {
    try {
      const res = await api('GET', '/suggestions' + `?limit=${LIMIT}`);
      const users = res.users || [];
      // Whoever just pressed Follow in a row that goes keeps the focus in
      // the panel rather than losing it to the page (the button let go of
      // it already while it was disabled, waiting for the server).
      const active = document.activeElement;
      const refocus = this.list.contains(active) || (this.pressed && (!active || active === document.body));
      this.pressed = false;
      this.list.replaceChildren(...users.map((u) => this.row(u)));
      this.note.textContent = users.length ? '' : 'No suggestions right now.';
      this.el.hidden = users.length === 0;
      if (refocus && !this.list.contains(document.activeElement)) {
        (this.list.querySelector('[data-testid="follow-toggle"]') || this.group.querySelector('summary')).focus();
      }
    } catch (err) {
      console.warn('suggestions:', err.message);
    }
  }

  row(u) {
    learnName(u);
    const li = h('li', { class: 'suggestion', dataset: { testid: 'suggestion', login: u.login } });
    const action = followControl(this.ctx, { ...u, follows_you: u.reason === 'follows_you' || u.follows_you === true }, {
      onChange: (following) => {
        li.classList.toggle('is-followed', following);
        this.pressed = true;
      },
    });
    li.append(
      h('a', { class: 'friend-link', href: profileHref(u.login) },
        avatar(u, 'sm'),
        h('span', { class: 'friend-text' },
          h('span', { class: 'friend-name' }, u.name || u.login),
          h('span', { class: 'friend-sub' }, loginEl(u.login)),
        ),
      ),
      h('span', { class: 'suggestion-reason', dataset: { testid: 'suggestion-reason' } }, reasonText(u)),
      action,
    );
    return li;
  }
}
