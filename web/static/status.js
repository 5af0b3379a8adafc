// One status as a list item: its author (name and @login), its age linking
// to its own page, its text with links, and for its author a Delete that
// asks first, in place.

import { h, avatar, loginEl, confirmControls } from './dom.js';
import { profileHref, statusHref } from './router.js';
import { timeEl, nameTimeLink } from './time.js';
import { knownName, learnName, nameOf } from './names.js';

// @mentions (not inside e-mail addresses) and plain http(s) links.
const LINKS = /(?<![A-Za-z0-9_])@([A-Za-z0-9_]{3,32})(?![A-Za-z0-9_])|\bhttps?:\/\/[^\s<>"]+/g;

/** messageNodes splits a message into text nodes and links, never parsing HTML. */
export function messageNodes(message) {
  const out = [];
  let last = 0;
  for (const m of message.matchAll(LINKS)) {
    let text = m[0];
    let href;
    if (m[1]) {
      href = profileHref(m[1]);
    } else {
      // A sentence's closing punctuation is not part of the link.
      text = text.replace(/[.,;:!?)\]'"]+$/, '');
      href = text;
    }
    if (m.index > last) out.push(message.slice(last, m.index));
    out.push(h('a', { href, class: m[1] ? 'mention' : 'ext', rel: m[1] ? null : 'noopener noreferrer nofollow ugc' }, text));
    last = m.index + text.length;
  }
  if (last < message.length) out.push(message.slice(last));
  return out;
}

/**
 * authorName is a span with the display name of a status's author: the
 * status's own name when it carries one, else filled in once known.
 */
export function authorName(login, name) {
  if (name) learnName({ login, name });
  const el = h('span', { class: 'status-name' }, name || knownName(login) || '');
  if (!el.textContent) nameOf(login).then((name) => { el.textContent = name; });
  return el;
}

// deleteControls is the Delete button and the confirmation it opens.
// onDelete(status, li) resolves once the status is gone, or rejects with
// an error to show.
function deleteControls(status, li, onDelete) {
  return confirmControls({
    label: 'Delete', ariaLabel: 'Delete this post', question: 'Delete this post for everyone?',
    busy: 'Deleting…', failure: 'Could not delete', testid: 'status-delete',
    act: () => onDelete(status, li),
  });
}

/** statusEl renders one status; `mine` adds Delete, `menu` (safety.js statusMenu) the "…" of someone else's. */
export function statusEl(status, { mine, onDelete, menu = null }) {
  const href = profileHref(status.login);
  const li = h('li', { class: 'status', tabindex: '-1', dataset: { testid: 'status', id: String(status.id), login: status.login } });
  const del = mine && onDelete ? deleteControls(status, li, onDelete) : null;
  li.append(
    h('a', { class: 'status-avatar', href, tabindex: '-1', 'aria-hidden': 'true' }, avatar({ id: status.uid, login: status.login })),
    h('div', { class: 'status-body' },
      // The actions share the author's line so a status of yours is no
      // taller than anyone else's.
      h('div', { class: 'status-head' },
        h('p', { class: 'status-meta' },
          h('a', { class: 'status-author', href, dataset: { testid: 'status-author' } }, authorName(status.login, status.name), loginEl(status.login)),
          h('span', { class: 'sep', 'aria-hidden': 'true' }, '·'),
          nameTimeLink(h('a', { class: 'status-time', href: statusHref(status.id) }, timeEl(status.posted, { short: true }))),
        ),
        del && del.open,
        menu && menu.open,
      ),
      h('p', { class: 'status-message', dataset: { testid: 'status-message' } }, messageNodes(String(status.message ?? ''))),
      del && del.ask,
      del && del.error,
      menu && menu.items,
    ),
  );
  return li;
}
