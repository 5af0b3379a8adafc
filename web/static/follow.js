// Follow buttons for lists of people: "Follow", "Follow back" (they follow
// you, you do not follow them), or "Following" (press to unfollow), and a
// "Follows you" badge. Every button shown for the same person changes
// together, wherever it is on the page.

import { h, announce, toast, sameLogin, Registry, oneAtATime } from './dom.js';
import { api } from './api.js';

// The buttons on the page: {login, el, set(following)}. Those no longer in
// the document are dropped.
const shown = new Registry();

/** followChangedHere tells every button for login that you (un)follow them now. */
export function followChangedHere(login, following) {
  for (const c of shown.live()) {
    if (sameLogin(c.login, login)) c.set(following);
  }
}

/**
 * followControl is the follow button (and "Follows you" badge) for user u
 * in a list, or null for yourself and for a visitor. u may carry
 * you_follow and follows_you, as the server sends them to a signed-in
 * viewer. onChange(following) is called after each change.
 */
export function followControl(ctx, u, { onChange = null } = {}) {
  const me = ctx.me();
  if (!me || sameLogin(me.login, u.login)) return null;
  let following = u.you_follow === true;
  const followsYou = u.follows_you === true;
  const label = h('span', { class: 'follow-label' });
  const btn = h('button', { type: 'button', class: 'btn btn-small', dataset: { testid: 'follow-toggle', login: u.login } },
    label, h('span', { class: 'visually-hidden' }, ` ${u.login}`));
  const badge = followsYou ? h('span', { class: 'badge badge-small', dataset: { testid: 'follows-you' } }, 'Follows you') : null;
  const el = h('span', { class: 'follow-control' }, badge, btn);

  const set = (v) => {
    following = v;
    label.textContent = v ? 'Following' : followsYou ? 'Follow back' : 'Follow';
    btn.dataset.state = v ? 'following' : 'not-following';
    btn.title = v ? `Unfollow @${u.login}` : '';
    btn.classList.toggle('btn-primary', !v);
    btn.classList.toggle('btn-secondary', v);
    btn.classList.toggle('btn-following', v);
  };
  set(following);

  // A press while a change is under way is ignored.
  btn.addEventListener('click', oneAtATime(btn, async () => {
    const path = `/following/${encodeURIComponent(u.login)}`;
    const want = !following;
    try {
      await api(want ? 'PUT' : 'DELETE', path);
      followChangedHere(u.login, want);
      announce(want ? `You follow ${u.login} now.` : `You unfollowed ${u.login}.`);
      ctx.followChanged(u.login, want);
      if (onChange) onChange(want);
    } catch (err) {
      toast(`Could not ${want ? 'follow' : 'unfollow'} ${u.login}: ${err.message}`, 'error');
    }
  }));
  shown.add({ login: u.login, el, set });
  return el;
}
