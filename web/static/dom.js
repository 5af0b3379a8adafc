// DOM helpers. Everything that shows data goes through createElement and
// text nodes, never innerHTML, so a status reading "<script>" stays text.

/**
 * h creates an element. attrs: `class`, `text`, `dataset` (object), `on<event>`
 * handlers, booleans (true sets an empty attribute, false/null skips),
 * anything else as a string attribute. Children may be nodes, strings
 * (added as text), arrays, or null/false (skipped). Whatever a caller
 * passes, no attribute it sets runs code: an `on<event>` that is not a
 * function, and an href that is neither a path of this site nor an
 * http(s) URL (a javascript: or data: one), are left out.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (/^on/i.test(k)) {
      if (typeof v === 'function') el.addEventListener(k.slice(2), v);
      else console.error(`h: ${k} is not a function; left out`);
    } else if (k === 'href' && !safeHref(v)) console.error(`h: href ${JSON.stringify(String(v))} left out`);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** safeHref says whether v is a path of this site or an http(s) URL. */
function safeHref(v) {
  const s = String(v);
  return /^\/(?![/\\])/.test(s) || /^https?:\/\//i.test(s);
}

/**
 * linkable says whether an http(s) URL a user wrote may be shown as a
 * link: not one into this site's API, which a reader's click would call
 * with their session (an export of their account, say). This site is its
 * host under either scheme and any port: a redirect to https, or HSTS,
 * brings an http link to the API all the same.
 */
export function linkable(href) {
  let url;
  try {
    url = new URL(href);
  } catch {
    return false;
  }
  if (url.hostname !== location.hostname) return true;
  let path = url.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    return false;
  }
  return !/^\/+api(\/|$)/i.test(path);
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// The least size at which a Registry looks for what left the page on add.
const REGISTRY_FLOOR = 256;

/**
 * Registry holds what a module must reach again wherever it is on the page
 * (every action row, every follow button), as entries {el, ...}. An entry
 * whose el left the page is forgotten when found (live), and on add once
 * the registry has doubled since it last looked, so that a page open for
 * days does not hold everything it ever built. kept(el) says whether a
 * detached el still counts (a list kept off-screen). The look on add
 * spares what was added since the look before: built, it may not be placed
 * yet.
 */
export class Registry {
  constructor(kept = () => false) {
    this.kept = kept;
    this.entries = new Map(); // entry -> the look it was added after
    this.looks = 0;
    this.lookAt = REGISTRY_FLOOR;
  }

  add(entry) {
    if (this.entries.size >= this.lookAt) {
      for (const [e, look] of this.entries) {
        if (look < this.looks && this.gone(e)) this.entries.delete(e);
      }
      this.looks++;
      this.lookAt = Math.max(REGISTRY_FLOOR, 2 * this.entries.size);
    }
    this.entries.set(entry, this.looks);
  }

  gone(entry) {
    return !entry.el.isConnected && !this.kept(entry.el);
  }

  /** live is every entry still on the page (or kept); the others are forgotten. */
  live() {
    const out = [];
    for (const e of [...this.entries.keys()]) {
      if (this.gone(e)) this.entries.delete(e);
      else out.push(e);
    }
    return out;
  }
}

/**
 * limitChars holds input (or textarea) to max characters as the server
 * counts them, code points: maxlength counts UTF-16 units, so it would let
 * only half as many emoji in. What is typed or pasted past the limit is
 * cut from what went in, before the caret, as maxlength does.
 */
export function limitChars(input, max) {
  const cut = () => {
    const value = input.value;
    const over = [...value].length - max;
    if (over <= 0) return;
    const caret = input.selectionEnd ?? value.length;
    const head = [...value.slice(0, caret)];
    let kept = [...value].slice(0, max).join('');
    let at = kept.length;
    if (head.length >= over) {
      const before = head.slice(0, head.length - over).join('');
      kept = before + value.slice(caret);
      at = before.length;
    }
    input.value = kept;
    input.setSelectionRange(at, at);
  };
  // Not mid-composition (an input method's text is not final); its end is.
  input.addEventListener('input', (ev) => {
    if (!ev.isComposing) cut();
  });
  input.addEventListener('compositionend', cut);
}

/** touchScreen says whether the main pointer is a finger: no autofocus there. */
export function touchScreen() {
  return window.matchMedia('(pointer: coarse)').matches;
}

/** loginEl shows a login; CSS adds the "@" so textContent is the bare login. */
export function loginEl(login, attrs = {}) {
  return h('span', { class: 'login', ...attrs }, login);
}

// A stable hue per user so avatars tell people apart at a glance.
function hueOf(key) {
  let x = 0;
  for (const ch of String(key)) x = (x * 31 + ch.codePointAt(0)) >>> 0;
  return x % 360;
}

/** avatar is a coloured circle with the first letter of the login, the same wherever the user appears. */
export function avatar(user, size = 'md') {
  const label = String(user.login || '?');
  const first = [...label][0] || '?';
  const el = h('span', { class: `avatar avatar-${size}`, 'aria-hidden': 'true' }, first.toUpperCase());
  // CSSOM, not a style attribute, so a strict CSP without unsafe-inline holds.
  el.style.setProperty('--hue', String(hueOf(user.login || user.id)));
  return el;
}

let announceTimer = 0;

/** announce reads a short message to screen readers via the polite live region. */
export function announce(text) {
  const region = document.getElementById('announcer');
  if (!region) return;
  // Clearing first makes a repeated identical message be read again.
  region.textContent = '';
  clearTimeout(announceTimer);
  announceTimer = setTimeout(() => {
    region.textContent = text;
  }, 50);
}

let toastTimer = 0;

/** toast shows a short message at the bottom of the screen for a few seconds. */
export function toast(text, kind = 'info') {
  const el = document.getElementById('toast');
  if (!el) return;
  el.textContent = text;
  el.dataset.kind = kind;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    el.hidden = true;
  }, 6000);
}

/** plural picks "1 post" / "2 posts". */
export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

/** formatCount shortens big numbers: 1234 → "1.2K". */
export function formatCount(n) {
  const v = Number(n) || 0;
  if (v < 10000) return v.toLocaleString();
  return new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 }).format(v);
}

/** sameLogin compares logins the way the server does: ignoring case. */
export function sameLogin(a, b) {
  return typeof a === 'string' && typeof b === 'string' && a.toLowerCase() === b.toLowerCase();
}

/**
 * oneAtATime wraps act, a button's async handler, so that a press while
 * it runs is ignored and the button says it is busy meanwhile (aria-busy,
 * aria-disabled). The button is not disabled: that would drop the focus
 * to <body> (confirmControls). The wrapper passes its arguments to act
 * and resolves with act's result, or with undefined for a press ignored.
 */
export function oneAtATime(btn, act) {
  let busy = false;
  return async (...args) => {
    if (busy) return undefined;
    busy = true;
    btn.setAttribute('aria-disabled', 'true');
    btn.setAttribute('aria-busy', 'true');
    try {
      return await act(...args);
    } finally {
      busy = false;
      btn.removeAttribute('aria-disabled');
      btn.removeAttribute('aria-busy');
    }
  };
}

/**
 * confirmControls is a button that asks before it acts, in place. open is
 * the button; ask the question with its confirm and "Keep" buttons,
 * hidden until open is pressed; error says why the act failed. act()
 * resolves once done, or rejects with the error to show after `failure`.
 * testid names open; the confirm and Keep buttons add "-confirm" and
 * "-cancel". Optional: confirmLabel, the confirm button's text (label
 * otherwise); fields, nodes asked for between the question and the
 * buttons; first, what takes the focus when asked (the confirm button
 * otherwise).
 *
 * While act() runs, the buttons say aria-disabled and ignore presses
 * rather than being disabled: a disabled button loses the focus, and the
 * page would drop it to <body>. Once act() resolves the question closes;
 * where the focus was on it, open takes it, or where the act (or a frame
 * meanwhile) took the status it was in off the page, the status nearest
 * it, else the page's heading.
 */
export function confirmControls({ label, ariaLabel, question, busy, failure, testid, act, confirmLabel = label, fields = null, first = null }) {
  const error = h('p', { class: 'status-error', role: 'alert', hidden: true });
  const open = h('button', {
    type: 'button', class: 'btn btn-quiet btn-small status-action',
    'aria-label': ariaLabel, 'aria-expanded': 'false', dataset: { testid },
  }, label);
  const yes = h('button', { type: 'button', class: 'btn btn-danger btn-small', dataset: { testid: `${testid}-confirm` } }, confirmLabel);
  const no = h('button', { type: 'button', class: 'btn btn-secondary btn-small', dataset: { testid: `${testid}-cancel` } }, 'Keep');
  const ask = h('div', { class: 'status-confirm', role: 'group', 'aria-label': `${ariaLabel}?`, hidden: true },
    h('span', { class: 'status-confirm-text' }, question), fields, yes, no);

  let acting = false;
  const setActing = (on) => {
    acting = on;
    for (const b of [yes, no]) {
      if (on) b.setAttribute('aria-disabled', 'true');
      else b.removeAttribute('aria-disabled');
    }
    yes.textContent = on ? busy : confirmLabel;
  };
  const show = (asking) => {
    ask.hidden = !asking;
    open.setAttribute('aria-expanded', String(asking));
    (asking ? first || yes : open).focus();
  };
  open.addEventListener('click', () => {
    if (acting) return;
    error.hidden = true;
    show(true);
  });
  no.addEventListener('click', () => {
    if (!acting) show(false);
  });
  ask.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Escape') return;
    // Kept from a menu around it too while it acts: closing that would
    // hide the result (an error, say) when it comes.
    ev.stopPropagation();
    if (acting) ev.preventDefault();
    else show(false);
  });
  yes.addEventListener('click', async () => {
    if (acting) return; // pressed again while it acts: one act only
    setActing(true);
    error.hidden = true;
    // Noted now: a live frame may take the status away before act() ends.
    const place = ask.contains(document.activeElement) ? focusPlace(ask) : null;
    try {
      await act();
    } catch (err) {
      setActing(false);
      error.textContent = `${failure}: ${err.message}`;
      error.hidden = false;
      return;
    }
    setActing(false);
    const focused = ask.contains(document.activeElement);
    ask.hidden = true;
    open.setAttribute('aria-expanded', 'false');
    if (focused && open.isConnected) open.focus();
    else if (place) place.restore();
  });
  return { open, ask, error };
}

/**
 * focusPlace notes where the focus, now in el, may go should el leave the
 * page: the statuses beside el's status, nearest first, then the one it is
 * shown under, then the page's heading. restore() moves it there, unless
 * it has gone somewhere else meanwhile.
 */
function focusPlace(el) {
  const li = el.closest('[data-testid="status"]');
  const near = [];
  if (li) {
    for (let e = li.nextElementSibling; e; e = e.nextElementSibling) near.push(e);
    for (let e = li.previousElementSibling; e; e = e.previousElementSibling) near.push(e);
    const above = li.parentElement && li.parentElement.closest('[data-testid="status"]');
    if (above) near.push(above);
  }
  return {
    restore() {
      const now = document.activeElement;
      if (now && now !== document.body && now.isConnected) return;
      const next = near.find((e) => e.isConnected && e.matches('[data-testid="status"]'))
        || document.querySelector('#main h1[tabindex]');
      if (!next) return;
      moved = { el: next, at: performance.now() };
      next.focus();
    },
  };
}

// moved is where focusPlace last moved the focus, and when.
let moved = { el: null, at: 0 };

/**
 * focusJustMoved tells whether el took the focus from focusPlace (after
 * the status it was in went) within the last ms: a key pressed for what
 * was there (a second Enter on "Delete") is not meant for el.
 */
export function focusJustMoved(el, ms = 500) {
  return moved.el === el && performance.now() - moved.at < ms;
}
