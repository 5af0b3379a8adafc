// A status's own page (/s/{id}): the status, its author's card, and for its
// author a Delete (asking first). Open to visitors who are signed out.

import { h, avatar, loginEl, sameLogin } from './dom.js';
import { api, isAbort, userPath } from './api.js';
import { profileHref } from './router.js';
import { timeEl, exactTime, parseTime } from './time.js';
import { learnName } from './names.js';
import { heading } from './page.js';
import { statusEl } from './status.js';
import { statusMenu } from './safety.js';

function authorCard(user) {
  return h('a', { class: 'card author-card', href: profileHref(user.login), dataset: { testid: 'status-page-author' } },
    avatar(user, 'md'),
    h('span', { class: 'user-text' },
      h('span', { class: 'user-name' }, user.name || user.login),
      loginEl(user.login),
    ),
    h('span', { class: 'muted small author-more' }, 'View profile'),
  );
}

/** statusView shows status `id`. */
export function statusView(ctx, id) {
  const abort = new AbortController();
  const h1 = heading('Post', { class: 'page-title visually-hidden' });
  const body = h('div', { class: 'status-page' }, h('p', { class: 'muted' }, 'Loading…'));
  const view = { el: h('div', { class: 'view' }, h1, body), title: 'Post', heading: h1 };
  let shown = null; // the status once loaded

  const gone = (text) => {
    body.replaceChildren(h('div', { class: 'card' },
      h('p', { class: 'empty-title', dataset: { testid: 'status-gone' } }, text),
      shown && h('p', { class: 'muted' }, h('a', { href: profileHref(shown.login) }, 'See more from ', h('span', { class: 'login' }, shown.login)), '.'),
    ));
  };

  api('GET', `/statuses/${encodeURIComponent(id)}`, undefined, { signal: abort.signal }).then((res) => {
    const s = res.status;
    shown = s;
    const me = ctx.me();
    const mine = !!me && (me.id === s.uid || sameLogin(me.login, s.login));
    const li = statusEl(s, { mine, onDelete: ctx.deleteStatus, menu: mine ? null : statusMenu(ctx, s) });
    const posted = parseTime(s.posted);
    const author = h('div', { class: 'author-slot' });
    body.replaceChildren(
      h('ol', { class: 'timeline status-single', 'aria-label': 'Post', dataset: { testid: 'status-page' } }, li),
      posted && h('p', { class: 'muted small status-when' }, 'Posted ', h('span', {}, exactTime(posted)), ' (', timeEl(s.posted), ')'),
      author,
    );
    h1.textContent = `Post by @${s.login}`;
    document.title = `@${s.login}: “${String(s.message).slice(0, 60)}” · Chorus`;
    return api('GET', userPath(s.login), undefined, { signal: abort.signal }).then((u) => {
      learnName(u.user);
      author.replaceChildren(authorCard(u.user));
    }, (err) => {
      if (!isAbort(err)) author.replaceChildren(authorCard({ login: s.login, id: s.uid }));
    });
  }, (err) => {
    if (isAbort(err)) return;
    if (err.status === 404) {
      h1.textContent = 'Post not found';
      h1.classList.remove('visually-hidden');
      body.replaceChildren(h('p', { class: 'muted', dataset: { testid: 'status-gone' } }, 'This post does not exist, or was deleted.'));
    } else {
      body.replaceChildren(h('p', { class: 'form-error', role: 'alert' }, `Could not load this post: ${err.message}`));
    }
  });

  view.onDeleted = (deletedId) => {
    if (shown && Number(deletedId) === Number(shown.id)) gone('This post was deleted.');
  };
  view.destroy = () => abort.abort();
  return view;
}
