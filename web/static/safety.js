// Blocking and muting from the client: the "…" menu of someone else's post
// and of a profile. Blocking and muting ask first; taking them back does
// not. After either, the person's posts leave every timeline on the page
// (the server leaves them out of every later read).

import { h, announce, toast, confirmControls } from './dom.js';
import { api } from './api.js';

/** setRelation blocks or mutes login (kind 'blocks' or 'mutes') when on, else takes it back. */
export async function setRelation(ctx, kind, login, on) {
  await api(on ? 'PUT' : 'DELETE', `/${kind}/${encodeURIComponent(login)}`);
  if (on) ctx.hideAuthor(login, kind === 'blocks');
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
  items.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      items.hidden = true;
      open.setAttribute('aria-expanded', 'false');
      open.focus();
    }
  });
  return { open, items };
}

/**
 * statusMenu is the "…" menu of a status by someone else, for a signed-in
 * viewer (null otherwise): {open, items}, items holding Mute and Block and
 * their questions.
 */
export function statusMenu(ctx, status) {
  if (!ctx.me() || ctx.me().id === status.uid) return null;
  const mute = act(ctx, 'mutes', status.login);
  const block = act(ctx, 'blocks', status.login);
  return menu(`More for this post by @${status.login}`, 'status-menu',
    h('div', { class: 'safety-acts' }, mute.open, block.open), mute.ask, block.ask, mute.error, block.error);
}

/**
 * profileMenu is the "…" menu of someone else's profile: Mute or Unmute,
 * Block or Unblock, as user.muting and user.blocking say. onBlocked runs
 * after a block (the follows it ended change the card).
 */
export function profileMenu(ctx, user, onBlocked) {
  const slot = h('div', { class: 'safety-acts' });
  const asks = h('div', {});
  const m = menu(`More for @${user.login}`, 'profile-menu', slot, asks);
  const state = { mutes: user.muting === true, blocks: user.blocking === true };
  const render = () => {
    const parts = [];
    asks.replaceChildren();
    for (const kind of ['mutes', 'blocks']) {
      const word = kind === 'mutes' ? 'mute' : 'block';
      if (state[kind]) {
        const undo = h('button', { type: 'button', class: 'btn btn-secondary btn-small', dataset: { testid: `un${word}` } },
          word === 'mute' ? 'Unmute' : 'Unblock');
        undo.addEventListener('click', async () => {
          undo.disabled = true;
          try {
            await setRelation(ctx, kind, user.login, false);
            state[kind] = false;
            announce(`You ${word === 'mute' ? 'unmuted' : 'unblocked'} ${user.login}.`);
            render();
          } catch (err) {
            undo.disabled = false;
            toast(`Could not un${word} ${user.login}: ${err.message}`, 'error');
          }
        });
        parts.push(undo);
      } else {
        const a = act(ctx, kind, user.login, () => {
          state[kind] = true;
          render();
          if (kind === 'blocks' && onBlocked) onBlocked();
        });
        parts.push(a.open);
        asks.append(a.ask, a.error);
      }
    }
    slot.replaceChildren(...parts);
  };
  render();
  return m;
}
