// The signed-out screen: one form at a time (sign in or sign up), so the
// single `form-error` on the page always belongs to the visible form.

import { h, touchScreen } from './dom.js';
import { api } from './api.js';

// Which input an API error code is about, to mark it invalid and focus it.
const FIELD_OF_CODE = {
  invalid_login: 'login',
  login_taken: 'login',
  invalid_name: 'name',
  invalid_password: 'password',
};

let uid = 0;

function field({ label, name, type = 'text', autocomplete, hint, value = '', extra = {} }) {
  const id = `f-${name}-${++uid}`;
  const hintId = hint ? `${id}-hint` : null;
  const input = h('input', {
    id, name, type, autocomplete, value,
    required: true,
    'aria-describedby': hintId,
    ...extra,
  });
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    input,
    hint && h('p', { class: 'hint', id: hintId }, hint),
  );
}

/**
 * renderAuth fills root with the sign-in (mode "signin") or sign-up form.
 * onSignedIn(user) runs once the server has set the session cookie; a
 * sign-up held for approval gets the sign-in form instead, with the
 * server's message.
 */
export function renderAuth(root, { mode = 'signin', notice = '', login = '', onSignedIn, focus = false }) {
  const signup = mode === 'signup';
  const error = h('p', { class: 'form-error', role: 'alert', dataset: { testid: 'form-error' }, hidden: true });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, signup ? 'Create account' : 'Sign in');

  const loginExtra = { autocapitalize: 'none', autocorrect: 'off', spellcheck: 'false' };
  const fields = signup
    ? [
      field({ label: 'Login', name: 'login', autocomplete: 'username', value: login, hint: '3 to 32 letters, digits or _. People find you by it.', extra: loginExtra }),
      field({ label: 'Name', name: 'name', autocomplete: 'name', hint: 'How you appear to others; up to 64 characters.' }),
      field({ label: 'Password', name: 'password', type: 'password', autocomplete: 'new-password', hint: 'At least 8 characters, and not a common password.' }),
    ]
    : [
      field({ label: 'Login', name: 'login', autocomplete: 'username', value: login, extra: loginExtra }),
      field({ label: 'Password', name: 'password', type: 'password', autocomplete: 'current-password' }),
    ];

  // novalidate: the server's rules and messages are the ones that count,
  // and they should appear in form-error rather than a browser bubble.
  // method post: should anything submit the form without its submit event
  // (form.submit() skips it), the password still stays out of the URL.
  const form = h('form', {
    class: 'auth-form',
    method: 'post',
    novalidate: true,
    'aria-labelledby': 'auth-heading',
    dataset: { testid: signup ? 'signup-form' : 'signin-form' },
  }, fields, error, submit);

  const switchTo = (next) => {
    const typed = form.elements.login.value;
    renderAuth(root, { mode: next, login: typed, onSignedIn, focus: true });
  };

  const switcher = signup
    ? h('p', { class: 'auth-switch' }, 'Already have an account? ',
      h('button', { type: 'button', class: 'btn-link', dataset: { testid: 'show-signin' }, onclick: () => switchTo('signin') }, 'Sign in'))
    : h('p', { class: 'auth-switch' }, 'New to Chorus? ',
      h('button', { type: 'button', class: 'btn-link', dataset: { testid: 'show-signup' }, onclick: () => switchTo('signup') }, 'Create an account'));

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    for (const input of form.querySelectorAll('[aria-invalid]')) input.removeAttribute('aria-invalid');
    error.hidden = true;
    error.textContent = '';

    const values = Object.fromEntries(new FormData(form));
    const body = { login: String(values.login || '').trim(), password: String(values.password || '') };
    if (signup) body.name = String(values.name || '');

    submit.disabled = true;
    submit.textContent = signup ? 'Creating account…' : 'Signing in…';
    try {
      const res = await api('POST', signup ? '/users' : '/sessions', body);
      // Under approval the account waits for an admin and no session was
      // made: the sign-in form, saying so, is where it goes once approved.
      if (res && res.pending) {
        renderAuth(root, { mode: 'signin', notice: res.message || 'Your account waits for approval.', login: body.login, onSignedIn, focus: true });
        return;
      }
      onSignedIn(res.user);
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
      const name = FIELD_OF_CODE[err.code];
      const input = name && form.elements[name];
      if (input) {
        input.setAttribute('aria-invalid', 'true');
        input.focus();
      }
      if (err.code === 'invalid_credentials') form.elements.password.select();
    } finally {
      submit.disabled = false;
      submit.textContent = signup ? 'Create account' : 'Sign in';
    }
  });

  root.replaceChildren(
    h('div', { class: 'auth' },
      h('div', { class: 'auth-intro' },
        h('p', { class: 'auth-brand' }, 'Chorus'),
        h('p', { class: 'auth-tagline' }, 'Short posts from people you follow, as they happen — and which friends are around right now.'),
      ),
      h('div', { class: 'card auth-card' },
        h('h1', { id: 'auth-heading', class: 'auth-heading', tabindex: '-1' }, signup ? 'Create your account' : 'Sign in'),
        notice && h('p', { class: 'notice', role: 'status' }, notice),
        form,
        switcher,
      ),
    ),
  );
  document.title = signup ? 'Create account · Chorus' : 'Sign in · Chorus';
  const heading = root.querySelector('h1');
  // The first empty field, except on a touch screen, where focusing a field
  // pops up a keyboard over the page the visitor has not read yet.
  const focusFirst = () => {
    if (touchScreen()) {
      heading.focus();
      return;
    }
    const first = [...form.elements].find((el) => el.tagName === 'INPUT' && !el.value) || form.elements[0];
    first.focus();
  };
  if (focus) focusFirst();
  return { heading, focus: focusFirst };
}
