// Blocking, muting and reporting from the client: the "…" menu of someone
// else's post and of a profile. Blocking, muting and reporting ask first;
// taking a block or mute back does not. After either, the person's posts
// leave every timeline on the page (the server leaves them out of every
// later read); taken back, the home feed reads them again. Every profile
// menu of theirs on the page says so; on the user's other devices too, as
// the stream tells them.

import { h, announce, toast, confirmControls, limitChars, sameLogin, Registry, oneAtATime } from './dom.js';
import { api } from './api.js';

// The profile menus on the page: {el, login, set(kind, on)}.
const profiles = new Registry();

/** setRelation blocks or mutes login (kind 'blocks' or 'mutes') when on, else takes it back. */
export async function setRelation(ctx, kind, login, on) {
  await api(on ? 'PUT' : 'DELETE', `/${kind}/${encodeURIComponent(login)}`);
  relationChanged(ctx, kind, login, on);
}

// The blocks and mutes taken back as last told, "uid kind login": told
// twice (by the answer, then by the frame), one has the home feed read
// again once. Made again, it is forgotten, so that the next taking back
// counts.
const takenBack = new Set();

/**
 * relationChanged shows a block or mute of login made (on) or taken back,
 * here or on another device (the stream's `relation` frame): made, their
 * posts leave the page; taken back, the server shows them again, which no
 * frame brings, so the home feed reads them again (homeChanged); either
 * way, their profile menus say so. Told twice (by the answer, then by the
 * frame), it changes nothing more.
 */
export function relationChanged(ctx, kind, login, on) {
  const key = `${ctx.me() ? ctx.me().id : ''} ${kind} ${login.toLowerCase()}`;
  if (on) {
    takenBack.delete(key);
    ctx.hideAuthor(login, kind === 'blocks');
  } else if (!takenBack.has(key)) {
    takenBack.add(key);
    ctx.homeChanged();
  }
  for (const p of profiles.live()) {
    if (sameLogin(p.login, login)) p.set(kind, on);
  }
}

const ASK = {
  mutes: (login) => `Hide @${login}'s posts and notifications from you? They are not told.`,
  blocks: (login) => `Block @${login}? You stop following each other, and neither sees the other's posts or whether the other is online.`,
};

// act is one confirmed act of a menu: Mute or Block login.
function act(ctx, kind, login, onDone) {
  const mute = kind === 'mutes';
  return confirmControls({
    label: mute ? 'Mute' : 'Block', ariaLabel: `${mute ? 'Mute' : 'Block'} @${login}`, question: ASK[kind](login),
    busy: mute ? 'Muting…' : 'Blocking…', failure: `Could not ${mute ? 'mute' : 'block'}`,
    testid: mute ? 'mute' : 'block',
    act: async () => {
      await setRelation(ctx, kind, login, true);
      announce(mute ? `You muted ${login}.` : `You blocked ${login}.`);
      if (onDone) onDone();
    },
  });
}

// The longest reason a report may give, in characters (docs/API.md,
// "Reports and suspensions").
const REASON_MAX = 1000;
let reasonIds = 0;

// report is the confirmed act "Report…" of a menu: login, and the post
// statusId when reported from one, with a reason the reporter writes.
// done says, in place, that the report went in.
function report(login, statusId) {
  const id = `report-reason-${++reasonIds}`;
  const reason = h('textarea', {
    id, class: 'report-reason', rows: '3', 'aria-describedby': `${id}-rule`, dataset: { testid: 'report-reason' },
  });
  limitChars(reason, REASON_MAX);
  const fields = h('div', { class: 'report-fields' },
    h('label', { for: id }, 'Why? Only the admins read this.'),
    reason,
    h('p', { id: `${id}-rule`, class: 'muted small' }, `1 to ${REASON_MAX.toLocaleString()} characters. @${login} is not told.`));
  const done = h('p', { class: 'report-done', role: 'status', hidden: true, dataset: { testid: 'report-done' } });
  const what = statusId ? `this post by @${login}` : `@${login}`;
  const c = confirmControls({
    label: 'Report…', confirmLabel: 'Send report', ariaLabel: `Report ${what}`,
    question: `Report ${what} to the admins?`, busy: 'Sending…', failure: 'Could not report',
    testid: 'report', fields, first: reason,
    act: async () => {
      const text = reason.value.trim();
      const n = [...text].length;
      if (n < 1 || n > REASON_MAX) {
        reason.focus();
        throw new Error(`say why, in 1 to ${REASON_MAX.toLocaleString()} characters`);
      }
      const body = { login, reason: text };
      if (statusId) body.status_ids = [Number(statusId)];
      await api('POST', '/reports', body);
      reason.value = '';
      done.textContent = 'Reported. An admin will look at it.';
      done.hidden = false;
    },
  });
  c.open.addEventListener('click', () => {
    done.hidden = true;
  });
  // Enter writes a new line in the reason; Ctrl+Enter sends, as a form would.
  reason.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      c.ask.querySelector('[data-testid="report-confirm"]').click();
    }
  });
  return { ...c, done };
}

// menu is a "…" button and the group it shows and hides.
function menu(label, testid, ...children) {
  const items = h('div', { class: 'safety-menu', role: 'group', 'aria-label': label, hidden: true, dataset: { testid: `${testid}-items` } }, children);
  const open = h('button', {
    type: 'button', class: 'btn btn-quiet btn-small status-action', 'aria-label': label, 'aria-expanded': 'false', dataset: { testid },
  }, '…');
  open.addEventListener('click', () => {
    items.hidden = !items.hidden;
    open.setAttribute('aria-expanded', String(!items.hidden));
  });
  // Escape closes it, from within or from the button itself (where a
  // click, or Enter, leaves the focus), the focus on the button.
  const close = (ev) => {
    if (ev.key !== 'Escape' || items.hidden) return;
    ev.preventDefault();
    items.hidden = true;
    open.setAttribute('aria-expanded', 'false');
    open.focus();
  };
  items.addEventListener('keydown', close);
  open.addEventListener('keydown', close);
  return { open, items };
}

/**
 * statusMenu is the "…" menu of a status by someone else, for a signed-in
 * viewer (null otherwise): {open, items}, items holding Mute, Block and
 * Report… and their questions.
 */
export function statusMenu(ctx, status) {
  if (!ctx.me() || ctx.me().id === status.uid) return null;
  const mute = act(ctx, 'mutes', status.login);
  const block = act(ctx, 'blocks', status.login);
  const rep = report(status.login, status.id);
  return menu(`More for this post by @${status.login}`, 'status-menu',
    h('div', { class: 'safety-acts' }, mute.open, block.open, rep.open),
    mute.ask, block.ask, rep.ask, mute.error, block.error, rep.error, rep.done);
}

/**
 * profileMenu is the "…" menu of someone else's profile: Mute or Unmute,
 * Block or Unblock, as user.muting and user.blocking say, and Report….
 * It follows a mute or block made anywhere on the page (setRelation).
 * onBlocked runs after a block (the follows it ended change the card);
 * onChange({mutes, blocks}) after any change of either.
 */
export function profileMenu(ctx, user, { onBlocked = null, onChange = null } = {}) {
  const slot = h('div', { class: 'safety-acts' });
  const asks = h('div', {});
  const rep = report(user.login, null);
  const m = menu(`More for @${user.login}`, 'profile-menu', slot, asks, rep.ask, rep.error, rep.done);
  const state = { mutes: user.muting === true, blocks: user.blocking === true };
  const buttons = {}; // kind -> the button shown for it
  const questions = {}; // kind -> its Mute or Block question, when it asks one
  // render shows the state; focusKind, when given, has the button now
  // shown for that kind take the focus (the one pressed is gone). The
  // focus on a control it replaces (a change made elsewhere) goes to the
  // button now shown for the same kind, or stays on Report….
  const render = (focusKind = null) => {
    const active = document.activeElement;
    const heldBy = Object.keys(buttons).find((k) => buttons[k] === active || (questions[k] && questions[k].contains(active)));
    focusKind = focusKind || heldBy || null;
    const onReport = rep.open === active;
    const parts = [];
    asks.replaceChildren();
    for (const k of Object.keys(questions)) delete questions[k];
    for (const kind of ['mutes', 'blocks']) {
      const word = kind === 'mutes' ? 'mute' : 'block';
      if (state[kind]) {
        const undo = h('button', { type: 'button', class: 'btn btn-secondary btn-small', dataset: { testid: `un${word}` } },
          word === 'mute' ? 'Unmute' : 'Unblock');
        undo.addEventListener('click', oneAtATime(undo, async () => {
          try {
            await setRelation(ctx, kind, user.login, false);
            announce(`You ${word === 'mute' ? 'unmuted' : 'unblocked'} ${user.login}.`);
            render(kind);
          } catch (err) {
            toast(`Could not un${word} ${user.login}: ${err.message}`, 'error');
          }
        }));
        parts.push(undo);
        buttons[kind] = undo;
      } else {
        const a = act(ctx, kind, user.login, () => render(kind));
        parts.push(a.open);
        asks.append(a.ask, a.error);
        buttons[kind] = a.open;
        questions[kind] = a.ask;
      }
    }
    slot.replaceChildren(...parts, rep.open);
    if (focusKind) buttons[focusKind].focus();
    else if (onReport) rep.open.focus();
  };
  render();
  profiles.add({
    el: m.open,
    login: user.login,
    set: (kind, on) => {
      if (state[kind] === on) return;
      state[kind] = on;
      render();
      if (kind === 'blocks' && on && onBlocked) onBlocked();
      if (onChange) onChange({ ...state });
    },
  });
  return m;
}
