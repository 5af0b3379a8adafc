// /settings: your own account. Your name and bio, your password (every
// other session of yours ends when it changes), whom you block and mute
// (hidden.js), a download of everything of yours, and the deletion of the
// account, which asks for the password.

import { h, announce, limitChars, linkable, oneAtATime } from './dom.js';
import { api, isAbort } from './api.js';
import { heading } from './page.js';
import { hiddenSection } from './hidden.js';

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
  // While submit() runs, the form ignores a second submit (and the button
  // says it is busy).
  const run = oneAtATime(send, async () => {
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
    }
  });
  el.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run();
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

  // The link is what a click without scripts would follow; the click is
  // taken over so that a refused export is told here (downloadExport).
  const exportLink = h('a', { class: 'btn btn-secondary', href: EXPORT_URL, download: '', dataset: { testid: 'settings-export' } }, 'Download your data');
  const exportNote = h('p', { class: 'form-error is-error', role: 'alert', hidden: true, dataset: { testid: 'settings-export-note' } });
  let exportBusy = false;
  exportLink.addEventListener('click', async (ev) => {
    ev.preventDefault();
    if (exportBusy) return;
    exportBusy = true;
    exportLink.setAttribute('aria-disabled', 'true');
    exportLink.textContent = 'Preparing your data…';
    exportNote.hidden = true;
    try {
      await downloadExport(`chorus-${me.login}.json`, abort.signal);
      announce('Your data is downloaded.');
    } catch (err) {
      if (isAbort(err) && abort.signal.aborted) return; // the page was left
      exportNote.textContent = err.message;
      exportNote.hidden = false;
    } finally {
      exportBusy = false;
      exportLink.removeAttribute('aria-disabled');
      exportLink.textContent = 'Download your data';
    }
  });
  const exporting = h('section', { class: 'card settings-form', 'aria-labelledby': 'settings-export-title' },
    h('h2', { class: 'settings-title', id: 'settings-export-title' }, 'Your data'),
    h('p', { class: 'muted' }, 'One JSON file with your profile, every post, whom you follow and who follows you, your lists, blocks, mutes and likes.'),
    h('div', { class: 'settings-row' }, exportLink), exportNote);

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

  const blocks = hiddenSection(ctx, 'blocks');
  const mutes = hiddenSection(ctx, 'mutes');

  const el = h('div', { class: 'view settings' }, h1, profile, password, blocks.el, mutes.el, exporting, deletion);
  return {
    el,
    title: 'Settings',
    heading: h1,
    onFrame: (frame) => {
      if (frame.type !== 'relation') return;
      blocks.onRelation(frame);
      mutes.onRelation(frame);
    },
    // A stream back from a drop may have missed changes: read again.
    onReady: () => {
      blocks.onReady();
      mutes.onReady();
    },
    destroy: () => {
      abort.abort();
      blocks.destroy();
      mutes.destroy();
    },
  };
}

const EXPORT_URL = '/api/v1/me/export';
// The server bounds an export by 25 s of its own (docs/API.md); past this,
// the answer is not coming.
const EXPORT_TIMEOUT_MS = 60000;

/**
 * downloadExport fetches GET /me/export and, when the whole document came,
 * hands it to the browser as the download name. It rejects with an Error
 * to show: a refusal (429 past the export limit, 503) says when to try
 * again, from its Retry-After. A plain <a download> would leave a refused
 * export a download the browser cancels, unexplained; nor can HEAD
 * /me/export tell beforehand, since it counts among reads, not exports.
 */
async function downloadExport(name, signal) {
  const ctl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctl.abort();
  }, EXPORT_TIMEOUT_MS);
  const forward = () => ctl.abort(signal.reason);
  signal.addEventListener('abort', forward, { once: true });
  // gaveUp is the error for a request that failed as where says.
  const gaveUp = (err, where) => {
    if (timedOut) return new Error('Chorus did not send your data in time. Please try again in a moment.');
    if (isAbort(err)) return err;
    return new Error(where);
  };
  try {
    let res;
    try {
      res = await fetch(EXPORT_URL, { credentials: 'same-origin', signal: ctl.signal, headers: { Accept: 'application/json' } });
    } catch (err) {
      throw gaveUp(err, 'Could not reach the server. Check your connection and try again.');
    }
    if (!res.ok) throw await exportRefusal(res);
    // Held once, as the browser keeps it: not as text, nor parsed.
    let blob;
    try {
      blob = await res.blob();
    } catch (err) {
      throw gaveUp(err, 'The download was cut short. Please try again.');
    }
    if (!(await whole(res, blob))) throw new Error('The download was cut short. Please try again.');
    const url = URL.createObjectURL(blob);
    // Not h(), which leaves out a blob: href (dom.js safeHref): this one is
    // our own, made just above.
    const a = document.createElement('a');
    a.href = url;
    a.download = name;
    a.hidden = true;
    document.body.append(a);
    a.click();
    a.remove();
    // Late: the browser reads the file after the click returns.
    setTimeout(() => URL.revokeObjectURL(url), EXPORT_TIMEOUT_MS);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', forward);
  }
}

// whole tells whether blob, res's body, is the whole export. A server
// failing after the answer began leaves it cut short (docs/API.md): short
// of its Content-Length where it sent one (and the body came as sent, not
// decoded), else not ending as the document does, with "]}".
async function whole(res, blob) {
  const length = res.headers.get('Content-Length');
  if (length !== null && !res.headers.has('Content-Encoding')) return blob.size === Number(length);
  const tail = await blob.slice(-64).text();
  return /\]\}\s*$/.test(tail);
}

// exportRefusal is the Error to show for a refused export: the server's
// words, and for 429 or 503 when to try again.
async function exportRefusal(res) {
  let message = '';
  try {
    message = (await res.json()).error.message || '';
  } catch {
    // no API error body (a proxy's page): said below
  }
  if (!message) message = res.status === 429 ? 'You have downloaded your data too often for now.' : `The download failed (HTTP ${res.status}).`;
  if (res.status === 429 || res.status === 503) message += ` ${tryAgain(Number(res.headers.get('Retry-After')))}`;
  return new Error(message);
}

// tryAgain says when to try again, Retry-After seconds from now.
function tryAgain(secs) {
  if (!(secs > 0)) return 'Please try again later.';
  if (secs <= 60) return 'Please try again in a minute.';
  const at = new Date(Date.now() + secs * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  // From 55 minutes on, "about an hour": a Retry-After of 3600 read a
  // second late would say "60 minutes".
  if (secs < 55 * 60) return `Please try again in ${Math.ceil(secs / 60)} minutes (at ${at}).`;
  const hours = Math.round(secs / 3600);
  return `Please try again in about ${hours === 1 ? 'an hour' : `${hours} hours`} (at ${at}).`;
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
