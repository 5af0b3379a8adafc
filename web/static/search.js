// The search page: people by login or name, as you type. Each keystroke
// waits 250 ms for the next; a new search cancels the one in flight. The
// words searched for ride in the address (/search?q=ada), so a search can
// be shared and reloaded.

import { h, plural } from './dom.js';
import { api, isAbort, query } from './api.js';
import { userItem } from './userlist.js';
import { followControl } from './follow.js';
import { heading } from './page.js';

const WAIT_MS = 250;
const LIMIT = 20;

/** searchView: a search box over the people it finds. */
export function searchView(ctx) {
  const h1 = heading('Find people');
  const input = h('input', {
    type: 'search', id: 'search-q', name: 'q', maxlength: '64', autocomplete: 'off', spellcheck: 'false',
    placeholder: 'A name or @login', 'aria-controls': 'search-results', dataset: { testid: 'search-input' },
  });
  input.value = new URLSearchParams(location.search).get('q') || '';
  const form = h('form', { class: 'card search-form', role: 'search' },
    h('label', { for: 'search-q', class: 'field-label' }, 'Search people by name or login'), input);
  const note = h('p', { class: 'timeline-note', role: 'status', dataset: { testid: 'search-note' } });
  const list = h('ul', { class: 'user-list', id: 'search-results', 'aria-label': 'People found', dataset: { testid: 'search-results' } });
  const results = h('div', { class: 'card list-card' }, list, h('div', { class: 'timeline-foot' }, note));

  let timer = 0;
  let inFlight = null;
  let shownFor = null;

  const run = async () => {
    clearTimeout(timer);
    const term = input.value.trim();
    // A search under way is for words the box no longer holds, even where
    // they are back to those shown ("a", "an", "a"): its answer must not
    // land, and the address says the box's words.
    if (inFlight) inFlight.abort();
    inFlight = null;
    list.removeAttribute('aria-busy');
    const path = term ? `/search?q=${encodeURIComponent(term)}` : '/search';
    if (location.pathname + location.search !== path) history.replaceState(history.state, '', path);
    if (term === shownFor) return;
    if (!term) {
      shownFor = term;
      list.replaceChildren();
      note.textContent = 'Type the start of a name or a login.';
      return;
    }
    const ctl = new AbortController();
    inFlight = ctl;
    list.setAttribute('aria-busy', 'true');
    try {
      const res = await api('GET', '/users' + query({ q: term, limit: LIMIT }), undefined, { signal: ctl.signal });
      const users = res.users || [];
      list.replaceChildren(...users.map((u) => userItem(u, { action: followControl(ctx, u) })));
      note.textContent = users.length ? `${plural(users.length, 'person', 'people')} found` : `No one’s name or login starts with “${term}”.`;
      shownFor = term;
    } catch (err) {
      if (isAbort(err)) return;
      note.textContent = err.message;
      shownFor = null;
    } finally {
      if (inFlight === ctl) {
        inFlight = null;
        list.removeAttribute('aria-busy');
      }
    }
  };

  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(run, WAIT_MS);
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run();
  });
  run();

  const el = h('div', { class: 'view' },
    h('div', { class: 'page-head' }, h('div', {}, h1, h('p', { class: 'muted' }, 'Look someone up by the start of their name or login.'))),
    form, results);
  return {
    el,
    title: 'Find people',
    // A new page focuses its heading; here the box is where one starts,
    // and its label says what the page is.
    heading: input,
    focus: () => input.focus(),
    destroy: () => {
      clearTimeout(timer);
      if (inFlight) inFlight.abort();
    },
  };
}
