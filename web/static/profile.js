// A user's page: their card (name, @login, counts, follow button, presence
// for a friend) over their statuses. Open to visitors who are signed out.

import { h, avatar, loginEl, announce, formatCount, sameLogin, oneAtATime } from './dom.js';
import { api, isAbort, query, userPath } from './api.js';
import { profileHref } from './router.js';
import { timeEl, parseTime } from './time.js';
import { learnName } from './names.js';
import { heading, statusTimeline } from './page.js';
import { profileMenu } from './safety.js';
import { bioNodes } from './settings.js';

// followState answers whether the viewer follows `login`: from `you_follow`
// when the server sends it, else by scanning the viewer's following list.
async function followState(me, user, signal) {
  if (typeof user.you_follow === 'boolean') return user.you_follow;
  for (let offset = 0; offset < 1000; offset += 100) {
    const page = await api('GET', userPath(me.login, '/following') + query({ limit: 100, offset }), undefined, { signal });
    const users = page.users || [];
    if (users.some((u) => sameLogin(u.login, user.login))) return true;
    if (users.length < 100) return false;
  }
  return false;
}

function countLink(href, n, one, many, testid) {
  const num = h('strong', {}, '');
  const word = h('span', {}, '');
  const el = h(href ? 'a' : 'span', { href, class: 'count-item', dataset: { testid } }, num, ' ', word);
  const set = (v) => {
    num.textContent = formatCount(v);
    word.textContent = Number(v) === 1 ? one : many;
  };
  set(n);
  return { el, set };
}

// followButton follows and unfollows; setCounts takes the user it returns.
// It returns the button and show(following), which sets what it says.
function followButton(ctx, user, signal, error, setCounts, refresh) {
  let state = null; // null while unknown
  let presses = 0; // presses that changed the follow, or are changing it
  let busy = false; // while one is
  const btn = h('button', { type: 'button', class: 'btn btn-primary', disabled: true, dataset: { testid: 'follow-button' } }, 'Follow');
  const show = (v) => {
    state = v;
    btn.textContent = v ? 'Unfollow' : user.follows_you ? 'Follow back' : 'Follow';
    btn.classList.toggle('btn-primary', !v);
    btn.classList.toggle('btn-secondary', v);
    btn.disabled = false;
  };
  followState(ctx.me(), user, signal).then(show, (err) => {
    if (isAbort(err)) return;
    show(false);
    error.textContent = `Could not tell whether you follow them: ${err.message}`;
    error.hidden = false;
  });
  // A press before it knows whether you follow them, or while a change is
  // under way, is ignored.
  const toggle = oneAtATime(btn, async () => {
    presses++;
    busy = true;
    error.hidden = true;
    const path = `/following/${encodeURIComponent(user.login)}`;
    try {
      if (state) {
        await api('DELETE', path);
        show(false);
        announce(`You unfollowed ${user.login}.`);
        refresh(); // DELETE answers 204: fetch the counts it changed
      } else {
        const res = await api('PUT', path);
        show(true);
        if (res && res.user) setCounts(res.user);
        announce(`You follow ${user.login} now.`);
      }
      ctx.followChanged(user.login, state);
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
    } finally {
      busy = false;
    }
  });
  btn.addEventListener('click', () => {
    if (state !== null) toggle();
  });
  // stamp is taken as the user is asked for: null while a press is under
  // way. sync takes u, the user as read then: what it says of the follow
  // stands unless a press was under way or began since (a block of yours,
  // or of you, ended it elsewhere, say).
  const stamp = () => (busy ? null : presses);
  const sync = (u, asked) => {
    if (state === null || busy || asked !== presses || typeof u.you_follow !== 'boolean') return;
    user.follows_you = u.follows_you === true;
    show(u.you_follow);
  };
  return { btn, show, sync, stamp };
}

function presenceLine(user) {
  if (typeof user.online !== 'boolean') return null;
  return user.online
    ? h('span', { class: 'presence is-online' }, 'Online now')
    : h('span', { class: 'presence' }, timeEl(user.last_seen, { prefix: 'Last seen ', missing: 'Not seen yet' }));
}

// profileCard is the card of user; onRelation({mutes, blocks}) runs once
// the viewer mutes, blocks or takes either back, here or from a post.
function profileCard(ctx, user, signal, onRelation) {
  const me = ctx.me();
  const self = !!me && sameLogin(me.login, user.login);
  const posts = countLink(null, user.posts, 'post', 'posts', 'count-posts');
  const followers = countLink(profileHref(user.login, '/followers'), user.followers, 'follower', 'followers', 'count-followers');
  const following = countLink(profileHref(user.login, '/following'), user.following, 'following', 'following', 'count-following');
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true, dataset: { testid: 'profile-error' } });
  const setCounts = (u) => {
    posts.set(u.posts);
    followers.set(u.followers);
    following.set(u.following);
  };
  let follow = null;
  // refresh reads the counts again, and whether you follow them: a
  // friendship ended elsewhere (a block) changes both.
  const refresh = () => {
    const asked = follow ? follow.stamp() : 0;
    return api('GET', userPath(user.login), undefined, { signal }).then((res) => {
      setCounts(res.user);
      if (follow) follow.sync(res.user, asked);
    }, () => {});
  };

  let action;
  let more = null; // the "…" menu: mute, block
  if (self) action = h('a', { class: 'btn btn-secondary btn-small', href: '/settings', dataset: { testid: 'edit-profile' } }, 'Edit profile');
  else if (me) {
    follow = followButton(ctx, user, signal, error, setCounts, refresh);
    action = follow.btn;
    more = profileMenu(ctx, user, {
      onBlocked: () => {
        // The block ended the follows both ways.
        user.follows_you = false;
        follow.show(false);
        refresh();
      },
      onChange: onRelation,
    });
  } else action = ctx.signInLink('Sign in to follow', 'btn btn-primary');

  const joined = parseTime(user.signup);
  const meta = [];
  if (joined) meta.push(h('span', {}, `Joined ${new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric' }).format(joined)}`));
  const presence = h('span', { class: 'presence-slot' }, self ? null : presenceLine(user));

  const h1 = heading(user.name || user.login, { class: 'page-title profile-name', id: 'profile-name' });
  const el = h('section', { class: 'card profile', 'aria-labelledby': 'profile-name' },
    h('div', { class: 'profile-top' },
      avatar(user, 'lg'),
      h('div', { class: 'profile-id' },
        h1,
        h('p', { class: 'profile-login' }, loginEl(user.login)),
        // Flex items with a gap rather than " · " text, so a wrap on a phone
        // leaves no separator dangling at the end of a line.
        h('p', { class: 'muted small profile-meta' }, meta, presence),
      ),
      h('div', { class: 'profile-action' }, action, more && more.open),
    ),
    user.bio ? h('p', { class: 'profile-bio', dataset: { testid: 'profile-bio' } }, ...bioNodes(user.bio)) : null,
    more && more.items,
    h('p', { class: 'counts' }, posts.el, followers.el, following.el),
    error,
  );
  return {
    el,
    heading: h1,
    refresh,
    posted: (delta) => {
      user.posts = Math.max(0, (Number(user.posts) || 0) + delta);
      posts.set(user.posts);
    },
    // renamed shows the new name user took (a `profile` frame).
    renamed: (u) => {
      user.name = u.name;
      h1.textContent = user.name || user.login;
    },
    presence: (frame) => {
      if (self) return;
      presence.replaceChildren(presenceLine({ online: frame.online === true, last_seen: frame.last_seen ?? null }) || '');
    },
  };
}

const profileTitle = (u) => `${u.name || u.login} (@${u.login}) · Chorus`;

/** profileView: a user's card and their statuses. */
export function profileView(ctx, login) {
  const abort = new AbortController();
  const h1 = heading(`@${login}`, { class: 'page-title visually-hidden' });
  const top = h('div', { class: 'profile-slot' }, h1, h('p', { class: 'muted' }, 'Loading profile…'));
  const empty = h('p', { class: 'empty-title', dataset: { testid: 'profile-empty' } }, 'No posts yet.');
  const tl = statusTimeline(ctx, {
    label: `Posts by ${login}`,
    path: userPath(login, '/statuses'),
    empty,
  });
  // What the empty timeline says: whom you muted or blocked has posts you
  // are not shown, rather than none; so has someone whose posts are
  // counted but none shown to you (they block you: not said).
  let posts = 0;
  const sayRelation = ({ mutes, blocks }) => {
    empty.textContent = blocks ? `You blocked @${login}. You don’t see each other’s posts.`
      : mutes ? `You muted @${login}. Their posts are hidden from you.`
        : posts > 0 ? 'No posts to show.' : 'No posts yet.';
  };
  // A mute or block made here took their posts off; taking it back brings
  // them again.
  const onRelation = (state) => {
    sayRelation(state);
    if (state.mutes || state.blocks) tl.setNote('');
    else tl.reload();
  };
  const view = { el: h('div', { class: 'view' }, top, tl.el), title: `@${login}`, heading: h1 };
  let card = null;
  let refreshTimer = 0;

  api('GET', userPath(login), undefined, { signal: abort.signal }).then((res) => {
    learnName(res.user);
    card = profileCard(ctx, res.user, abort.signal, onRelation);
    posts = Number(res.user.posts) || 0;
    sayRelation({ mutes: res.user.muting === true, blocks: res.user.blocking === true });
    const hadFocus = document.activeElement === h1;
    top.replaceChildren(card.el);
    view.heading = card.heading;
    document.title = profileTitle(res.user);
    if (hadFocus) card.heading.focus();
  }, (err) => {
    if (isAbort(err)) return;
    const text = err.status === 404 ? `No one here goes by @${login}.` : err.message;
    top.replaceChildren(heading(err.status === 404 ? 'Not found' : 'Could not load this profile'), h('p', { class: 'muted' }, text));
    tl.destroy();
    tl.el.remove();
  });

  const mine = () => ctx.me() && sameLogin(ctx.me().login, login);
  // Live: their statuses as the stream brings them, their new name (yours,
  // or a friend's), and counts that follow the friendships the stream
  // reports.
  view.onFrame = (frame) => {
    if (!card) return;
    if (frame.type === 'status' && frame.status && sameLogin(frame.status.login, login)) {
      if (tl.add(frame.status)) card.posted(+1);
    } else if (frame.type === 'presence' && frame.user && sameLogin(frame.user.login, login)) {
      card.presence(frame);
    } else if (frame.type === 'profile' && frame.user && sameLogin(frame.user.login, login)) {
      card.renamed(frame.user);
      document.title = profileTitle(frame.user);
    }
  };
  // Called before the status leaves the timeline, so it can still be counted.
  view.onDeleted = (id) => {
    if (card && tl.has(id)) card.posted(-1);
  };
  // After the stream's break: the counts, and whether you follow them
  // (a follow made on another device), as they are now.
  view.recheck = () => {
    if (card) card.refresh();
  };
  view.onFollows = (user) => {
    if (!card || !(mine() || sameLogin(user.login, login))) return;
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(card.refresh, 300);
  };
  view.destroy = () => {
    abort.abort();
    clearTimeout(refreshTimer);
    tl.destroy();
    ctx.timelines.delete(tl);
  };
  return view;
}
