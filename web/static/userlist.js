// Lists of people: one row per user (avatar, name, @login, counts, and an
// optional action such as a follow button), paged with a "Load more".
// Followers and following use it; any other list of users can.

import { h, avatar, loginEl, formatCount } from './dom.js';
import { profileHref } from './router.js';
import { isAbort } from './api.js';
import { learnName } from './names.js';

const PAGE = 30;

/**
 * userItem renders one user. action, if given, is a node placed at the end
 * of the row (a button, say).
 */
export function userItem(u, { action = null } = {}) {
  learnName(u);
  const followers = `${formatCount(u.followers)} ${u.followers === 1 ? 'follower' : 'followers'}`;
  const posts = `${formatCount(u.posts)} ${u.posts === 1 ? 'post' : 'posts'}`;
  return h('li', { class: 'user-item', dataset: { testid: 'user', login: u.login } },
    h('a', { class: 'user-link', href: profileHref(u.login) },
      avatar(u),
      h('span', { class: 'user-text' },
        h('span', { class: 'user-name' }, u.name || u.login),
        loginEl(u.login),
      ),
    ),
    h('span', { class: 'muted small user-stats' }, h('span', { class: 'nowrap' }, followers), ' · ', h('span', { class: 'nowrap' }, posts)),
    action,
  );
}

/**
 * UserList shows pages of users.
 *  label      accessible name of the list
 *  fetchPage  (offset, limit, signal) => {users}
 *  empty      what an empty list says
 *  item       (user) => options for userItem (optional)
 *  keep       (user) => whether to show a user a page brings (optional:
 *             all); one left out still counts for the next page's offset
 *  notFound   what to say when fetchPage answers 404 (optional)
 */
export class UserList {
  constructor(opts) {
    this.opts = opts;
    this.offset = 0;
    this.abort = new AbortController();
    this.list = h('ul', { class: 'user-list', 'aria-label': opts.label, dataset: { testid: 'user-list' } });
    this.note = h('p', { class: 'timeline-note', role: 'status' });
    this.more = h('button', { type: 'button', class: 'btn btn-secondary', hidden: true }, 'Load more');
    this.more.addEventListener('click', () => this.load());
    this.el = h('div', { class: 'card list-card' }, this.list, h('div', { class: 'timeline-foot' }, this.note, this.more));
  }

  /**
   * load fetches the next page. Pressed from the keyboard, "Load more"
   * stays in place, busy, while it loads (hidden, it would drop the focus
   * to the page's start), and the focus then goes to the first user it
   * brought.
   */
  async load() {
    if (this.loading) return;
    this.loading = true;
    const byKeyboard = document.activeElement === this.more;
    if (byKeyboard) {
      this.more.setAttribute('aria-disabled', 'true');
      this.more.setAttribute('aria-busy', 'true');
    } else {
      this.more.hidden = true;
    }
    this.note.textContent = 'Loading…';
    try {
      const res = await this.opts.fetchPage(this.offset, PAGE, this.abort.signal);
      const users = res.users || [];
      const shown = this.opts.keep ? users.filter(this.opts.keep) : users;
      const items = shown.map((u) => userItem(u, this.opts.item ? this.opts.item(u) : {}));
      this.list.append(...items);
      this.offset += users.length;
      this.more.textContent = 'Load more';
      this.more.hidden = users.length < PAGE;
      this.note.textContent = this.list.children.length === 0 && this.more.hidden ? this.opts.empty : '';
      if (byKeyboard && items.length > 0) items[0].querySelector('a').focus();
    } catch (err) {
      if (isAbort(err)) return;
      const gone = err.status === 404;
      this.note.textContent = gone && this.opts.notFound ? this.opts.notFound : err.message;
      this.more.textContent = 'Try again';
      this.more.hidden = gone;
    } finally {
      this.loading = false;
      this.more.removeAttribute('aria-disabled');
      this.more.removeAttribute('aria-busy');
    }
  }

  /**
   * removed tells the list that one of the users it shows left the list on
   * the server: the next page starts one sooner, or it would skip someone.
   */
  removed() {
    if (this.offset > 0) this.offset--;
  }

  /**
   * added puts item, a row for a user who came to the list on the server
   * at its start (newest first), at the list's start: the next page
   * starts one later, or it would show someone twice.
   */
  added(item) {
    this.list.prepend(item);
    this.offset++;
    this.note.textContent = '';
  }

  destroy() {
    this.abort.abort();
  }
}
