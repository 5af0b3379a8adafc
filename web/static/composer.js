// The composer on the home page: a draft that survives a look elsewhere, a
// character count that speaks only when it matters, and a post that fails
// within the request timeout, keeping the draft, when the server cannot
// take it. replyComposer is the smaller one a status opens to answer it.
// Both suggest people as an @mention is typed (mentions.js).

import { h, announce, touchScreen } from './dom.js';
import { api } from './api.js';
import { mentionAutocomplete } from './mentions.js';

export const MAX_CHARS = 500;

/** charCount counts what the server limits: code points after trimming. */
export function charCount(text) {
  return [...text.trim()].length;
}

// failureText says what went wrong with a post, and what became of it.
function failureText(err) {
  if (err.code === 'timeout') {
    return 'Chorus did not answer within 10 seconds, so your post may not have been saved. Your text is still here: check your feed in a moment before posting it again.';
  }
  if (err.status === 0 || err.status >= 500) return `Your post was not sent. ${err.message} Your text is still here.`;
  return err.message;
}

// unsentFailure: the post failed because Chorus could not be reached or
// did not answer, which a live connection again makes old news.
function unsentFailure(err) {
  return err.code === 'timeout' || err.status === 0 || err.status >= 500;
}

/**
 * composer builds the form; ctx.draft keeps its text, ctx.homeFeed gets the
 * post. destroy() stops it listening to ctx.liveAgain.
 */
export function composer(ctx) {
  const input = h('textarea', {
    id: 'composer-input', name: 'message', rows: '3',
    placeholder: 'What’s happening?',
    'aria-describedby': 'composer-count composer-error',
    'aria-keyshortcuts': 'n',
    dataset: { testid: 'composer-input' },
  });
  const left = h('span', { class: 'count-num' }, String(MAX_CHARS));
  const counter = h('span', { class: 'char-count', id: 'composer-count' }, left, h('span', { class: 'visually-hidden' }, ' characters left'));
  const error = h('p', { class: 'form-error', id: 'composer-error', role: 'alert', hidden: true, dataset: { testid: 'composer-error' } });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', dataset: { testid: 'composer-submit' } }, 'Post');

  // Announce only when the remaining count changes band, not per keystroke.
  let band = 'ok';
  const update = () => {
    const remaining = MAX_CHARS - charCount(input.value);
    left.textContent = String(remaining);
    const next = remaining < 0 ? 'over' : remaining <= 20 ? 'low' : 'ok';
    counter.dataset.band = next;
    if (next !== band && next !== 'ok') {
      announce(next === 'over' ? `${-remaining} characters over the limit` : `${remaining} characters left`);
    }
    band = next;
  };

  const mentions = mentionAutocomplete(input);
  const form = h('form', { class: 'card composer', 'aria-label': 'Post a status', dataset: { testid: 'composer' } },
    h('label', { class: 'visually-hidden', for: 'composer-input' }, 'Your status'),
    mentions.el,
    h('div', { class: 'composer-bar' },
      h('span', { class: 'hint' }, /Mac|iPhone|iPad/.test(navigator.platform) ? '⌘ Enter to post' : 'Ctrl+Enter to post'),
      counter,
      submit,
    ),
    error,
  );

  // Back to the text after a post or a failure, but on a touch screen,
  // where focusing it would pop the keyboard up over what just happened.
  const refocus = () => {
    if (!touchScreen()) input.focus();
  };
  // unsent: the error shown says the post could not be sent. Once the
  // connection is live again it no longer holds, so it goes (the draft
  // stays); a refusal (too long, too many) stays until the next try.
  let unsent = false;
  const fail = (text, connection = false) => {
    error.textContent = text;
    error.hidden = false;
    unsent = connection;
    refocus();
  };
  const onLive = () => {
    if (unsent) error.hidden = true;
    unsent = false;
  };
  ctx.liveAgain.add(onLive);

  const send = async () => {
    if (submit.disabled) return;
    const n = charCount(input.value);
    error.hidden = true;
    unsent = false;
    if (n === 0) return fail('Write something first.');
    if (n > MAX_CHARS) return fail(`That is ${n} characters; a status can have at most ${MAX_CHARS}.`);
    submit.disabled = true;
    submit.textContent = 'Posting…';
    input.readOnly = true; // what is sent is what gets cleared
    try {
      const res = await api('POST', '/statuses', { message: input.value });
      input.value = '';
      ctx.draft = '';
      update();
      ctx.homeFeed.add(res.status, { own: true });
      announce('Posted.');
      refocus();
    } catch (err) {
      fail(failureText(err), unsentFailure(err));
    } finally {
      input.readOnly = false;
      submit.disabled = false;
      submit.textContent = 'Post';
    }
  };

  // A draft survives a look at someone's profile and back.
  input.value = ctx.draft || '';
  update();
  input.addEventListener('input', () => {
    ctx.draft = input.value;
    update();
  });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      send();
    }
  });
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    send();
  });
  return {
    el: form,
    input,
    destroy: () => {
      ctx.liveAgain.delete(onLive);
      mentions.destroy();
    },
  };
}

let replySerial = 0;

/**
 * replyComposer is the box that answers parent (a status): POST /statuses
 * {message, reply_to}. onPosted(reply) gets the new status; onCancel() is
 * called by Cancel and by Escape. It returns {el, input, destroy}.
 */
export function replyComposer(parent, { onPosted, onCancel }) {
  const n = ++replySerial;
  const ids = { input: `reply-input-${n}`, count: `reply-count-${n}`, error: `reply-error-${n}` };
  const input = h('textarea', {
    id: ids.input, name: 'message', rows: '2', placeholder: `Reply to @${parent.login}`,
    'aria-describedby': `${ids.count} ${ids.error}`, dataset: { testid: 'reply-input' },
  });
  const left = h('span', { class: 'count-num' }, String(MAX_CHARS));
  const counter = h('span', { class: 'char-count', id: ids.count }, left, h('span', { class: 'visually-hidden' }, ' characters left'));
  const error = h('p', { class: 'form-error', id: ids.error, role: 'alert', hidden: true, dataset: { testid: 'reply-error' } });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-small', dataset: { testid: 'reply-submit' } }, 'Reply');
  const cancel = h('button', { type: 'button', class: 'btn btn-quiet btn-small', dataset: { testid: 'reply-cancel' } }, 'Cancel');
  const mentions = mentionAutocomplete(input);
  const form = h('form', { class: 'composer reply-composer', 'aria-label': `Reply to @${parent.login}`, dataset: { testid: 'reply-composer' } },
    h('label', { class: 'visually-hidden', for: ids.input }, `Your reply to @${parent.login}`),
    mentions.el,
    h('div', { class: 'composer-bar' }, counter, cancel, submit),
    error,
  );
  const update = () => {
    const remaining = MAX_CHARS - charCount(input.value);
    left.textContent = String(remaining);
    counter.dataset.band = remaining < 0 ? 'over' : remaining <= 20 ? 'low' : 'ok';
  };
  const fail = (text) => {
    error.textContent = text;
    error.hidden = false;
    input.focus();
  };
  const send = async () => {
    if (submit.disabled) return;
    const count = charCount(input.value);
    error.hidden = true;
    if (count === 0) return fail('Write something first.');
    if (count > MAX_CHARS) return fail(`That is ${count} characters; a reply can have at most ${MAX_CHARS}.`);
    submit.disabled = true;
    submit.textContent = 'Replying…';
    input.readOnly = true;
    try {
      const res = await api('POST', '/statuses', { message: input.value, reply_to: Number(parent.id) });
      input.value = '';
      update();
      announce('Reply posted.');
      onPosted(res.status);
    } catch (err) {
      fail(failureText(err));
    } finally {
      input.readOnly = false;
      submit.disabled = false;
      submit.textContent = 'Reply';
    }
  };
  input.addEventListener('input', update);
  input.addEventListener('keydown', (ev) => {
    // A key the @mention list took (Escape closes only the list) is not
    // the box's.
    if (ev.defaultPrevented) return;
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      send();
    } else if (ev.key === 'Escape') {
      ev.preventDefault();
      ev.stopPropagation();
      onCancel();
    }
  });
  cancel.addEventListener('click', () => onCancel());
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    send();
  });
  update();
  return { el: form, input, destroy: () => mentions.destroy() };
}
