// Lists of people: /lists, the lists you made (make one, rename, delete),
// and /lists/{id}, one list: its posts, newest first, and its members,
// whom its owner adds by login and removes. Lists are private: the server
// shows a list to its owner alone, and to anyone else it is no list.

import { h, announce, plural, sameLogin, confirmControls, limitChars, oneAtATime } from './dom.js';
import { api, isAbort, query } from './api.js';
import { listHref, profileHref } from './router.js';
import { heading, statusTimeline, pollNewer } from './page.js';
import { UserList } from './userlist.js';
import { learnName } from './names.js';

// The server's caps (docs/API.md, Lists).
const MAX_NAME = 64;
const MAX_LISTS = 20;
const MAX_MEMBERS = 500;

const listPath = (id, rest = '') => `/lists/${encodeURIComponent(id)}${rest}`;

/**
 * nameForm is a one-field form: a labelled input, a submit button (and
 * extra, if given, beside it) and an error line. submit(value) resolves
 * once done, or rejects with the error to show; fail(text) shows one.
 */
function nameForm({ label, button, value = '', maxlength = MAX_NAME, placeholder = '', testid, submit, extra = null }) {
  const id = `${testid}-input`;
  const input = h('input', {
    id, name: 'name', autocomplete: 'off', placeholder,
    'aria-describedby': `${testid}-error`, dataset: { testid: id },
  });
  input.value = value;
  limitChars(input, maxlength); // characters as the server counts them, not UTF-16 units
  const send = h('button', { type: 'submit', class: 'btn btn-primary', dataset: { testid: `${testid}-submit` } }, button);
  const error = h('p', { class: 'form-error', id: `${testid}-error`, role: 'alert', hidden: true, dataset: { testid: `${testid}-error` } });
  const form = h('form', { class: 'list-form', dataset: { testid } },
    h('label', { for: id, class: 'field-label' }, label),
    h('div', { class: 'list-form-row' }, input, send, extra),
    error,
  );
  const fail = (text) => {
    error.textContent = text;
    error.hidden = false;
  };
  // clear takes away what the last submit said was wrong.
  const clear = () => {
    error.hidden = true;
    input.removeAttribute('aria-invalid');
  };
  // While submit() runs, the form ignores a second submit (and the button
  // says it is busy).
  const run = oneAtATime(send, async () => {
    error.hidden = true;
    input.setAttribute('aria-invalid', 'false');
    try {
      await submit(input.value.trim());
    } catch (err) {
      fail(err.message);
      input.setAttribute('aria-invalid', 'true');
      input.focus();
    }
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run();
  });
  return { el: form, input, fail, clear };
}

// ---------------------------------------------------------------- /lists

/** listsView: the signed-in user's lists, and the form that makes one. */
export function listsView(ctx) {
  const h1 = heading('Lists');
  const intro = h('p', { class: 'muted' }, 'Lists gather people you follow whose posts you want to read together.');
  const head = h('div', { class: 'page-head' }, h('div', {}, h1, intro));
  if (!ctx.me()) {
    const el = h('div', { class: 'view' }, head,
      h('p', { class: 'card' }, ctx.signInLink('Sign in', ''), ' to make lists and see yours.'));
    return { el, title: 'Lists', heading: h1, destroy() {} };
  }

  const abort = new AbortController();
  const rows = h('ul', { class: 'list-rows', 'aria-label': 'Your lists', dataset: { testid: 'lists' } });
  const note = h('p', { class: 'timeline-note', role: 'status', dataset: { testid: 'lists-note' } }, 'Loading…');
  const count = () => {
    const n = rows.children.length;
    note.textContent = n === 0 ? 'You have no lists yet.' : '';
  };
  const create = nameForm({
    label: 'Make a list', button: 'Create', placeholder: 'A name, such as “Astronomers”', testid: 'list-create',
    submit: async (name) => {
      const res = await api('POST', '/lists', { name });
      rows.append(listRow(res.list, count));
      create.input.value = '';
      count();
      announce(`List ${res.list.name} made.`);
    },
  });
  const el = h('div', { class: 'view' }, head,
    h('div', { class: 'card list-card' }, create.el,
      h('p', { class: 'hint list-hint' }, `Up to ${MAX_LISTS} lists of up to ${MAX_MEMBERS} people each.`)),
    h('div', { class: 'card list-card' }, rows, h('div', { class: 'timeline-foot' }, note)),
  );

  api('GET', '/lists', undefined, { signal: abort.signal }).then((res) => {
    rows.replaceChildren(...(res.lists || []).map((l) => listRow(l, count)));
    count();
  }, (err) => {
    if (!isAbort(err)) note.textContent = `Could not load your lists: ${err.message}`;
  });
  return { el, title: 'Lists', heading: h1, destroy: () => abort.abort() };
}

// listRow is one of your lists: a link to it, and Rename and Delete, each
// opening in place. gone() is called once it is deleted.
function listRow(list, gone) {
  const name = h('span', { class: 'list-name', dataset: { testid: 'list-name' } }, list.name);
  const link = h('a', { class: 'list-link', href: listHref(list.id) },
    name, h('span', { class: 'muted small' }, plural(Number(list.members) || 0, 'member')));
  const li = h('li', { class: 'list-row', dataset: { testid: 'list-row', id: String(list.id) } });
  const renameBtn = h('button', {
    type: 'button', class: 'btn btn-quiet btn-small status-action', 'aria-expanded': 'false',
    'aria-label': `Rename ${list.name}`, dataset: { testid: 'list-rename' },
  }, 'Rename');
  const cancel = h('button', { type: 'button', class: 'btn btn-secondary' }, 'Cancel');
  const rename = nameForm({
    label: 'New name', button: 'Save', value: list.name, testid: `list-rename-${list.id}`, extra: cancel,
    submit: async (value) => {
      const res = await api('PATCH', listPath(list.id), { name: value });
      list.name = res.list.name;
      name.textContent = list.name;
      renameBtn.setAttribute('aria-label', `Rename ${list.name}`);
      showRename(false);
      announce(`Renamed to ${list.name}.`);
    },
  });
  rename.el.hidden = true;
  const showRename = (open) => {
    rename.el.hidden = !open;
    renameBtn.setAttribute('aria-expanded', String(open));
    if (open) {
      rename.input.value = list.name;
      rename.clear(); // an error of the last time it was open is old news
      rename.input.focus();
    } else {
      renameBtn.focus();
    }
  };
  renameBtn.addEventListener('click', () => showRename(rename.el.hidden));
  cancel.addEventListener('click', () => showRename(false));
  const del = confirmControls({
    label: 'Delete', ariaLabel: `Delete the list ${list.name}`,
    question: 'Delete this list? Its members keep their posts; only the list goes.',
    busy: 'Deleting…', failure: 'Could not delete', testid: 'list-delete',
    act: async () => {
      try {
        await api('DELETE', listPath(list.id));
      } catch (err) {
        if (err.status !== 404) throw err; // 404: gone already, as wanted
      }
      const next = li.nextElementSibling || li.previousElementSibling;
      li.remove();
      gone();
      if (next) next.querySelector('a').focus();
      announce(`List ${list.name} deleted.`);
    },
  });
  li.append(
    h('div', { class: 'list-row-main' }, link, h('span', { class: 'list-actions' }, renameBtn, del.open)),
    rename.el, del.ask, del.error,
  );
  return li;
}

// ---------------------------------------------------------------- /lists/{id}

/** listView: one list, its posts and its members. */
export function listView(ctx, id) {
  const abort = new AbortController();
  const h1 = heading('List', { id: 'list-title', dataset: { testid: 'list-title' } });
  const byline = h('p', { class: 'muted list-byline' }, 'Loading…');
  const top = h('section', { class: 'card list-head', 'aria-labelledby': 'list-title' }, h1, byline);
  const members = h('details', { class: 'card list-members', dataset: { testid: 'list-members' } });
  members.hidden = true;
  const tl = statusTimeline(ctx, {
    label: 'Posts in this list',
    path: listPath(id, '/statuses'),
    empty: h('p', { class: 'empty-title' }, 'No posts from the people in this list yet.'),
    newer: true,
  });
  const stopPolling = pollNewer(tl);
  const el = h('div', { class: 'view' },
    ctx.me() ? h('p', { class: 'back' }, h('a', { href: '/lists' }, '← Your lists')) : null,
    top, members, tl.el);
  const view = { el, title: 'List', heading: h1 };

  let list = null;
  let people = null; // the UserList of members
  const summary = h('summary', { class: 'group-summary list-members-summary' });

  const showList = (l) => {
    list = l;
    h1.textContent = l.name;
    document.title = `${l.name} · Chorus`;
    learnName(l.owner);
    byline.replaceChildren('A list by ', h('a', { href: profileHref(l.owner.login) }, l.owner.name || l.owner.login),
      ' · ', h('span', { dataset: { testid: 'list-count' } }, plural(Number(l.members) || 0, 'member')));
    summary.replaceChildren(h('span', { class: 'group-heading' }, 'Members'), ' ',
      h('span', { class: 'group-count' }, String(l.members)));
  };
  // loadMembers shows the members from the first page on.
  const loadMembers = () => {
    if (people) people.destroy();
    people = new UserList({
      label: 'Members',
      fetchPage: (offset, limit, signal) => api('GET', listPath(id, '/members') + query({ limit, offset }), undefined, { signal }),
      empty: 'No one yet: add someone you follow by their login above.',
      item: (u) => ({ action: removeButton(u) }),
    });
    people.load();
    members.replaceChildren(summary, addForm.el, people.el);
  };
  // changed: a member came or went; the list's posts changed with them.
  const changed = (l) => {
    showList(l);
    tl.reload();
  };
  const removeButton = (u) => {
    const btn = h('button', {
      type: 'button', class: 'btn btn-secondary btn-small', dataset: { testid: 'member-remove', login: u.login },
    }, 'Remove', h('span', { class: 'visually-hidden' }, ` ${u.login}`));
    btn.addEventListener('click', oneAtATime(btn, async () => {
      try {
        const res = await api('DELETE', listPath(id, `/members/${encodeURIComponent(u.login)}`));
        const row = btn.closest('li');
        const next = row && (row.nextElementSibling || row.previousElementSibling);
        // The server's list shifted up by one: the next page starts a row sooner.
        if (row && people && people.list.contains(row)) people.removed();
        if (row) row.remove();
        (next ? next.querySelector('a') : summary).focus();
        changed(res.list);
        announce(`${u.login} left the list.`);
      } catch (err) {
        addForm.fail(`Could not remove ${u.login}: ${err.message}`);
      }
    }));
    return btn;
  };
  const addForm = nameForm({
    label: 'Add someone you follow, by their login', button: 'Add', maxlength: 33, placeholder: 'login', testid: 'list-add',
    submit: async (value) => {
      const login = value.replace(/^@/, '');
      if (!login) throw new Error('Type the login of someone to add.');
      const res = await api('PUT', listPath(id, `/members/${encodeURIComponent(login)}`));
      addForm.input.value = '';
      changed(res.list);
      loadMembers();
      addForm.input.focus();
      announce(`${login} is in the list now.`);
    },
  });

  api('GET', listPath(id), undefined, { signal: abort.signal }).then((res) => {
    showList(res.list);
    members.open = Number(res.list.members) === 0;
    members.hidden = false;
    loadMembers();
  }, (err) => {
    if (isAbort(err)) return;
    const missing = err.status === 404;
    h1.textContent = missing ? 'List not found' : 'Could not load this list';
    byline.textContent = missing
      ? 'There is no list of yours here: it may have been deleted, and a list is seen only by the one who made it.'
      : err.message;
    if (missing) {
      tl.destroy();
      tl.el.remove();
    }
  });

  // The stream brings the statuses of those you follow: one of a member
  // shows at once.
  view.onFrame = (frame) => {
    if (frame.type !== 'status' || !frame.status || !people) return;
    const shown = [...people.list.querySelectorAll('[data-testid="user"]')].some((li) => sameLogin(li.dataset.login, frame.status.login));
    if (shown) tl.add(frame.status, { complete: false });
  };
  view.destroy = () => {
    abort.abort();
    stopPolling();
    if (people) people.destroy();
    tl.destroy();
    ctx.timelines.delete(tl);
  };
  return view;
}
