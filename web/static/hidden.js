// Whom you block and whom you mute, on the settings page: a list of each,
// newest first, with Unblock or Unmute on every row. A block or mute made
// or taken back anywhere (this tab, another, another device: the stream's
// `relation` frame) shows here too.

import { h, announce, toast, oneAtATime, sameLogin } from './dom.js';
import { api, query, userPath } from './api.js';
import { UserList, userItem } from './userlist.js';
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
 * `relation` frames, onReady each (re)connection's `ready`; destroy stops
 * its reads.
 */
export function hiddenSection(ctx, kind) {
  const words = WORDS[kind];
  const titleId = `settings-${kind}-title`;
  const title = h('h2', { class: 'settings-title', id: titleId, tabindex: '-1' }, words.title);
  const slot = h('div', {});
  const el = h('section', { class: 'card settings-form', 'aria-labelledby': titleId, dataset: { testid: `settings-${kind}` } },
    title, slot);
  let list = null;
  // The newest word on each login told since the list's first page was
  // asked for: a page read before it (an unblock's answer racing the
  // read) must not show someone taken out since, nor twice someone put in.
  let told = new Map(); // login, lower case -> on
  const rowOf = (login) => [...list.list.children].find((li) => sameLogin(li.dataset.login, login));

  // load shows the list from its first page: on opening, and at each
  // (re)connection, whose stream may have missed changes meanwhile.
  const load = () => {
    const hadFocus = slot.contains(document.activeElement);
    if (list) list.destroy();
    told = new Map();
    list = new UserList({
      label: words.title,
      fetchPage: (offset, limit, signal) => api('GET', `/${kind}` + query({ limit, offset }), undefined, { signal }),
      empty: words.empty,
      keep: (u) => told.get(u.login.toLowerCase()) !== false && !rowOf(u.login),
      item: (u) => ({ action: undoButton(u) }),
    });
    slot.replaceChildren(list.el);
    list.load();
    if (hadFocus) title.focus();
  };

  // leave takes login's row out, if shown: its block or mute was taken
  // back. The focus, if it was in the row, goes to the row beside it, or
  // to the section's title. Emptied, the list reads on if there is more.
  const leave = (login) => {
    const row = rowOf(login);
    if (!row) return;
    const next = row.nextElementSibling || row.previousElementSibling;
    const hadFocus = row.contains(document.activeElement);
    list.removed();
    row.remove();
    if (list.list.children.length === 0) {
      if (list.more.hidden) list.note.textContent = words.empty;
      else list.load();
    }
    if (hadFocus) (next ? next.querySelector('a') : title).focus();
  };

  // arrive puts login's row at the top: their block or mute was made
  // elsewhere. Read first, as the server shows them.
  const arrive = async (login) => {
    const key = login.toLowerCase();
    const asked = list;
    let user;
    try {
      user = (await api('GET', userPath(login))).user;
    } catch {
      return; // gone meanwhile (their account deleted), or unreadable: the next load shows what stands
    }
    if (list !== asked || told.get(key) !== true || rowOf(login)) return;
    list.added(userItem(user, { action: undoButton(user) }));
  };

  const undoButton = (u) => {
    const btn = h('button', {
      type: 'button', class: 'btn btn-secondary btn-small', 'aria-label': `${words.undo} @${u.login}`,
      dataset: { testid: `settings-${kind}-undo` },
    }, words.undo);
    btn.addEventListener('click', oneAtATime(btn, async () => {
      try {
        await setRelation(ctx, kind, u.login, false);
        told.set(u.login.toLowerCase(), false);
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
      const login = frame.user.login;
      told.set(login.toLowerCase(), frame.on === true);
      if (frame.on !== true) leave(login);
      else if (!rowOf(login)) arrive(login);
    },
    onReady: load,
    destroy() {
      if (list) list.destroy();
    },
  };
}
