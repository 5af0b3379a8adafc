// /settings: your own account. Your name and bio, your password (every
// other session of yours ends when it changes), a download of everything
// of yours, and the deletion of the account, which asks for the password.

import { h, announce, limitChars, linkable } from './dom.js';
import { api } from './api.js';
import { heading } from './page.js';

// The server's rules (docs/API.md, Inputs).
const MAX_NAME = 64;
const MAX_BIO = 300;

/**
 * form is a settings form: its fields, a submit button and a line that
 * tells how it went. submit() resolves with the sentence to say, or
 * rejects with the error to show.
 */
function form({ testid, legend, fields, button, submit, danger = false }) {
  const send = h('button', { type: 'submit', class: `btn ${danger ? 'btn-danger' : 'btn-primary'}`, dataset: { testid: `${testid}-submit` } }, button);
  const note = h('p', { class: 'form-error', role: 'alert', hidden: true, dataset: { testid: `${testid}-note` } });
  const el = h('form', { class: 'card settings-form', dataset: { testid } },
    h('h2', { class: 'settings-title' }, legend), ...fields, h('div', { class: 'settings-row' }, send), note);
  el.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (send.disabled) return;
    send.disabled = true;
    note.hidden = true;
    try {
      const said = await submit();
      if (said) {
        note.textContent = said;
        note.classList.remove('is-error');
        note.hidden = false;
        announce(said);
      }
    } catch (err) {
      note.textContent = err.message;
      note.classList.add('is-error');
      note.hidden = false;
    } finally {
      send.disabled = false;
    }
  });
  return el;
}

/** field is a labelled input (or textarea) of a form. */
function field({ id, label, hint = '', ...attrs }) {
  const tag = attrs.rows ? 'textarea' : 'input';
  const input = h(tag, { id, name: id, dataset: { testid: id }, ...(hint ? { 'aria-describedby': `${id}-hint` } : {}), ...attrs });
  return {
    input,
    el: h('div', { class: 'settings-field' },
      h('label', { for: id, class: 'field-label' }, label), input,
      hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null),
  };
}

/** settingsView: the signed-in user's own account. */
export function settingsView(ctx) {
  const h1 = heading('Settings');
  const me = ctx.me();
  if (!me) {
    const el = h('div', { class: 'view' }, h1,
      h('p', { class: 'card' }, ctx.signInLink('Sign in', ''), ' to change your profile, password and account.'));
    return { el, title: 'Settings', heading: h1, destroy() {} };
  }
  const abort = new AbortController();

  const name = field({ id: 'settings-name', label: 'Name', autocomplete: 'name', required: true });
  const bio = field({
    id: 'settings-bio', label: 'Bio', rows: '3',
    hint: `Up to ${MAX_BIO} characters, on one line. Links are shown as links.`,
  });
  // Characters as the server counts them, not maxlength's UTF-16 units.
  limitChars(name.input, MAX_NAME);
  limitChars(bio.input, MAX_BIO);
  name.input.value = me.name || '';
  api('GET', '/me', undefined, { signal: abort.signal }).then((res) => {
    bio.input.value = res.user.bio || '';
  }, () => {});
  const profile = form({
    testid: 'settings-profile', legend: 'Profile', fields: [name.el, bio.el], button: 'Save profile',
    submit: async () => {
      // One line: every run of white space (a line break, a pasted tab) is one space.
      const res = await api('PATCH', '/me', { name: name.input.value, bio: bio.input.value.replace(/\s+/g, ' ') });
      name.input.value = res.user.name;
      bio.input.value = res.user.bio;
      ctx.profileSaved(res.user);
      return 'Profile saved.';
    },
  });

  const current = field({ id: 'settings-current', label: 'Current password', type: 'password', autocomplete: 'current-password', required: true });
  const next = field({
    id: 'settings-new', label: 'New password', type: 'password', autocomplete: 'new-password', required: true,
    minlength: '8', maxlength: '128', hint: 'At least 8 characters; not a common password. Your other devices are signed out.',
  });
  const password = form({
    testid: 'settings-password', legend: 'Password', fields: [current.el, next.el], button: 'Change password',
    submit: async () => {
      await api('PUT', '/me/password', { current: current.input.value, new: next.input.value });
      current.input.value = '';
      next.input.value = '';
      return 'Password changed. Every other session of yours has ended.';
    },
  });

  const exportLink = h('a', { class: 'btn btn-secondary', href: '/api/v1/me/export', download: '', dataset: { testid: 'settings-export' } }, 'Download your data');
  const exporting = h('section', { class: 'card settings-form', 'aria-labelledby': 'settings-export-title' },
    h('h2', { class: 'settings-title', id: 'settings-export-title' }, 'Your data'),
    h('p', { class: 'muted' }, 'One JSON file with your profile, every post, whom you follow and who follows you, your lists, blocks, mutes and likes.'),
    h('div', { class: 'settings-row' }, exportLink));

  const confirm = field({ id: 'settings-delete-password', label: 'Your password, to confirm', type: 'password', autocomplete: 'current-password', required: true });
  const deletion = form({
    testid: 'settings-delete', legend: 'Delete your account', danger: true,
    fields: [h('p', { class: 'muted' }, 'Your posts, follows, lists and likes go, for good. Your login stays reserved: nobody can take it.'), confirm.el],
    button: 'Delete my account',
    submit: async () => {
      await api('DELETE', '/me', { password: confirm.input.value });
      ctx.accountDeleted();
      return '';
    },
  });

  const el = h('div', { class: 'view settings' }, h1, profile, password, exporting, deletion);
  return { el, title: 'Settings', heading: h1, destroy: () => abort.abort() };
}

/** bioNodes shows a bio as text, its http(s) links as links: never as HTML. */
export function bioNodes(bio) {
  const out = [];
  let last = 0;
  const re = /https?:\/\/[^\s<>"]+[^\s<>".,;:!?)\]']/g;
  for (const m of String(bio || '').matchAll(re)) {
    if (!linkable(m[0])) continue;
    if (m.index > last) out.push(bio.slice(last, m.index));
    out.push(h('a', { href: m[0], rel: 'nofollow noopener noreferrer', target: '_blank' }, m[0]));
    last = m.index + m[0].length;
  }
  if (last < String(bio || '').length) out.push(bio.slice(last));
  return out;
}
