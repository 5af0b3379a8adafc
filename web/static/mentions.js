// @mention autocomplete for a composer's text box: typing "@ad" asks the
// people search (GET /users?q=ad, as the search page does) after a pause,
// and offers at most five logins in a listbox under the box. Up and Down
// move through them, Enter or Tab takes one, Escape closes the list; a
// click or tap takes one too. The box is the combobox that owns the list.

import { h, avatar, loginEl } from './dom.js';
import { api, isAbort, query } from './api.js';

const WAIT_MS = 200;
const LIMIT = 5;
// An @ not inside a word (an e-mail address), then the start of a login,
// just before the caret.
const TOKEN = /(?:^|[^\p{L}\p{N}_@])@([A-Za-z0-9_]{1,32})$/u;

let serial = 0;

/**
 * mentionAutocomplete attaches the suggestions to input (a textarea) and
 * returns {el, destroy}: el wraps input and the list, to be put where
 * input would go.
 */
export function mentionAutocomplete(input) {
  const id = `mention-list-${++serial}`;
  const list = h('ul', { class: 'mention-list', id, role: 'listbox', 'aria-label': 'People to mention', hidden: true, dataset: { testid: 'mention-list' } });
  const el = h('div', { class: 'mention-wrap' }, input, list);
  input.setAttribute('role', 'combobox');
  input.setAttribute('aria-autocomplete', 'list');
  input.setAttribute('aria-controls', id);
  input.setAttribute('aria-expanded', 'false');
  input.setAttribute('aria-haspopup', 'listbox');

  let users = [];
  let active = -1;
  let token = null; // {start, end, term} of the "@abc" being completed
  let timer = 0;
  let inFlight = null;

  const close = () => {
    users = [];
    active = -1;
    list.hidden = true;
    list.replaceChildren();
    input.setAttribute('aria-expanded', 'false');
    input.removeAttribute('aria-activedescendant');
  };

  const highlight = (i) => {
    active = i;
    [...list.children].forEach((li, j) => li.setAttribute('aria-selected', String(j === i)));
    if (i >= 0) input.setAttribute('aria-activedescendant', `${id}-${i}`);
    else input.removeAttribute('aria-activedescendant');
  };

  const choose = (i) => {
    const u = users[i];
    if (!u || !token) return;
    const text = `@${u.login} `;
    input.setRangeText(text, token.start, token.end, 'end');
    close();
    // The composer counts and keeps its draft on input events.
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.focus();
  };

  const show = (found) => {
    // The one picked with the arrows stays picked when the list comes
    // again (the answer for a longer term), wherever it is in it.
    const picked = active >= 0 && users[active] ? users[active].login : null;
    users = found.slice(0, LIMIT);
    if (users.length === 0) return close();
    list.replaceChildren(...users.map((u, i) => {
      const li = h('li', { id: `${id}-${i}`, role: 'option', class: 'mention-option', 'aria-selected': 'false', dataset: { testid: 'mention-option', login: u.login } },
        avatar(u, 'sm'), h('span', { class: 'mention-name' }, u.name || u.login), loginEl(u.login));
      // pointerdown, not click: the box keeps the focus (and its caret).
      li.addEventListener('pointerdown', (ev) => {
        ev.preventDefault();
        choose(i);
      });
      return li;
    }));
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
    highlight(Math.max(0, users.findIndex((u) => u.login === picked)));
  };

  // current finds the "@abc" just before the caret, or null.
  const current = () => {
    if (input.selectionStart !== input.selectionEnd) return null;
    const end = input.selectionEnd;
    const m = input.value.slice(0, end).match(TOKEN);
    if (!m) return null;
    return { start: end - m[1].length - 1, end, term: m[1] };
  };

  const lookup = async () => {
    const t = current();
    if (inFlight) inFlight.abort();
    inFlight = null;
    token = t;
    if (!t) return close();
    const ctl = new AbortController();
    inFlight = ctl;
    try {
      const res = await api('GET', '/users' + query({ q: t.term, limit: LIMIT }), undefined, { signal: ctl.signal });
      // An answer for a box left meanwhile opens nothing under it (the
      // blur aborts the lookup; this covers an answer already on its way).
      if (inFlight !== ctl || document.activeElement !== input) return;
      show(res.users || []);
    } catch (err) {
      if (!isAbort(err)) close(); // suggestions are a help: a failure only hides them
    } finally {
      if (inFlight === ctl) inFlight = null;
    }
  };

  const onInput = () => {
    clearTimeout(timer);
    if (!current()) {
      if (inFlight) inFlight.abort();
      return close();
    }
    timer = setTimeout(lookup, WAIT_MS);
  };
  input.addEventListener('input', onInput);
  input.addEventListener('click', onInput); // the caret moved
  input.addEventListener('blur', () => {
    clearTimeout(timer);
    // A lookup still out would open the list again when it answers.
    if (inFlight) inFlight.abort();
    inFlight = null;
    close();
  });
  input.addEventListener('keydown', (ev) => {
    if (list.hidden || ev.isComposing) return;
    switch (ev.key) {
      case 'ArrowDown':
        highlight((active + 1) % users.length);
        break;
      case 'ArrowUp':
        highlight((active - 1 + users.length) % users.length);
        break;
      case 'Enter':
      case 'Tab':
        if (ev.ctrlKey || ev.metaKey || active < 0) return;
        choose(active);
        break;
      case 'Escape':
        close();
        break;
      default:
        return;
    }
    // The key was the list's: not the box's own keydown handlers' too
    // (a reply box's Escape cancels the reply), nor the page's shortcuts.
    ev.preventDefault();
    ev.stopImmediatePropagation();
  });

  return {
    el,
    destroy: () => {
      clearTimeout(timer);
      if (inFlight) inFlight.abort();
    },
  };
}
