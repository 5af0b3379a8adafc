// Whom you block and whom you mute, on the settings page: a list of each,
// newest first, with Unblock or Unmute on every row. A block or mute made
// or taken back anywhere (this tab, another, another device: the stream's
// `relation` frame) shows here too.

import { h, announce, toast, oneAtATime, sameLogin } from './dom.js';
import { api, query } from './api.js';
import { UserList } from './userlist.js';
import { setRelation } from './safety.js';

const WORDS = {
  blocks: {
    title: 'Blocked accounts', frame: 'block', undo: 'Unblock', undone: 'unblocked',
    empty: 'You block no one. Block someone from the “…” menu of their profile or of a post of theirs.',
  },
  mutes: {
    title: 'Muted accounts', frame: 'mute', undo: 'Unmute', undone: 'unmuted',
    empty: 'You mute no one. Mute someone from the “…” menu of their profile or of a post of theirs.',
  },
};

/**
 * hiddenSection is the settings section listing whom you block (kind
 * 'blocks') or mute ('mutes'). Its onRelation takes the stream's
 * `relation` frames; destroy stops its reads.
 */
export function hiddenSection(ctx, kind) {
  const words = WORDS[kind];
  const titleId = `settings-${kind}-title`;
  let list = null;
  const slot = h('div', {});
  const el = h('section', { class: 'card settings-form', 'aria-labelledby': titleId, dataset: { testid: `settings-${kind}` } },
    h('h2', { class: 'settings-title', id: titleId }, words.title), slot);

  // load shows the list from its first page: on opening, and when a
  // block or mute made elsewhere adds someone (newest first, at the top).
  const load = () => {
    const hadFocus = slot.contains(document.activeElement);
    if (list) list.destroy();
    list = new UserList({
      label: words.title,
      fetchPage: (offset, limit, signal) => api('GET', `/${kind}` + query({ limit, offset }), undefined, { signal }),
      empty: words.empty,
      item: (u) => ({ action: undoButton(u) }),
    });
    slot.replaceChildren(list.el);
    list.load();
    if (hadFocus) focusTitle();
  };

  const focusTitle = () => {
    const title = el.querySelector('h2');
    title.tabIndex = -1;
    title.focus();
  };

  // leave takes login's row out, if shown: its block or mute was taken
  // back. The focus, if it was in the row, goes to the row beside it, or
  // to the section's title.
  const leave = (login) => {
    const row = [...list.list.children].find((li) => sameLogin(li.dataset.login, login));
    if (!row) return;
    const next = row.nextElementSibling || row.previousElementSibling;
    const hadFocus = row.contains(document.activeElement);
    list.removed();
    row.remove();
    if (list.list.children.length === 0) list.note.textContent = words.empty;
    if (!hadFocus) return;
    if (next) next.querySelector('a').focus();
    else focusTitle();
  };

  const undoButton = (u) => {
    const btn = h('button', {
      type: 'button', class: 'btn btn-secondary btn-small', 'aria-label': `${words.undo} @${u.login}`,
      dataset: { testid: `settings-${kind}-undo` },
    }, words.undo);
    btn.addEventListener('click', oneAtATime(btn, async () => {
      try {
        await setRelation(ctx, kind, u.login, false);
        leave(u.login);
        announce(`You ${words.undone} ${u.login}.`);
      } catch (err) {
        toast(`Could not ${words.undo.toLowerCase()} ${u.login}: ${err.message}`, 'error');
      }
    }));
    return btn;
  };

  load();
  return {
    el,
    onRelation(frame) {
      if (frame.kind !== words.frame || !frame.user || !frame.user.login) return;
      if (frame.on) load();
      else leave(frame.user.login);
    },
    destroy() {
      if (list) list.destroy();
    },
  };
}
