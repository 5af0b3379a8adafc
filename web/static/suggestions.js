// "Who to follow": GET /suggestions in the sidebar, each person with why
// (they follow you, people you follow follow them, or they are popular)
// and a Follow button. A row you follow stays, marked, until the next load.

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

/** Suggestions is the sidebar's "Who to follow" panel. */
export class Suggestions {
  constructor(ctx) {
    this.ctx = ctx;
    this.list = h('ul', { class: 'suggestion-list', 'aria-labelledby': 'suggest-heading' });
    this.note = h('p', { class: 'muted small' });
    // Open beside the feed; closed on a phone, where it would push the feed down.
    this.group = h('details', { class: 'suggest-group' },
      h('summary', { class: 'group-summary' }, h('h2', { class: 'panel-heading', id: 'suggest-heading' }, 'Who to follow')),
      this.list, this.note);
    const wide = window.matchMedia('(min-width: 821px)');
    this.group.open = wide.matches;
    wide.addEventListener('change', () => { this.group.open = wide.matches; });
    this.el = h('section', { class: 'panel suggestions', dataset: { testid: 'suggestions' }, 'aria-labelledby': 'suggest-heading', hidden: true }, this.group);
  }

  /** load asks for suggestions again. */
  async load() {
    try {
      const res = await api('GET', '/suggestions' + `?limit=${LIMIT}`);
      const users = res.users || [];
      this.list.replaceChildren(...users.map((u) => this.row(u)));
      this.note.textContent = users.length ? '' : 'No suggestions right now.';
      this.el.hidden = users.length === 0;
    } catch (err) {
      console.warn('suggestions:', err.message);
    }
  }

  row(u) {
    learnName(u);
    const li = h('li', { class: 'suggestion', dataset: { testid: 'suggestion', login: u.login } });
    const action = followControl(this.ctx, { ...u, follows_you: u.reason === 'follows_you' || u.follows_you === true }, {
      onChange: (following) => li.classList.toggle('is-followed', following),
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
