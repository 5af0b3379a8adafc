// The pages behind each hash route. A view is {el, title, heading, destroy};
// app.js mounts one at a time in <main>.

import { h, avatar, loginEl, profileHref, announce, formatCount, sameLogin } from './dom.js';
import { api, isAbort, query, userPath } from './api.js';
import { Timeline } from './timeline.js';
import { timeEl, parseTime } from './time.js';

export const MAX_CHARS = 500;
const PAGE = 30;

/** charCount counts what the server limits: code points after trimming. */
export function charCount(text) {
  return [...text.trim()].length;
}

function heading(text, extra = {}) {
  // tabindex -1: the router moves focus here on navigation, for screen
  // reader and keyboard users, without adding a tab stop.
  return h('h1', { class: 'page-title', tabindex: '-1', ...extra }, text);
}

// ---------------------------------------------------------------- home

function composer(ctx) {
  const input = h('textarea', {
    id: 'composer-input', name: 'message', rows: '3',
    placeholder: 'What’s happening?',
    'aria-describedby': 'composer-count composer-error',
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

  const form = h('form', { class: 'card composer', 'aria-label': 'Post a status', dataset: { testid: 'composer' } },
    h('label', { class: 'visually-hidden', for: 'composer-input' }, 'Your status'),
    input,
    h('div', { class: 'composer-bar' },
      h('span', { class: 'hint' }, /Mac|iPhone|iPad/.test(navigator.platform) ? '⌘ Enter to post' : 'Ctrl+Enter to post'),
      counter,
      submit,
    ),
    error,
  );

  const send = async () => {
    if (submit.disabled) return;
    const n = charCount(input.value);
    error.hidden = true;
    if (n === 0) {
      error.textContent = 'Write something first.';
      error.hidden = false;
      input.focus();
      return;
    }
    if (n > MAX_CHARS) {
      error.textContent = `That is ${n} characters; a status can have at most ${MAX_CHARS}.`;
      error.hidden = false;
      input.focus();
      return;
    }
    submit.disabled = true;
    submit.textContent = 'Posting…';
    try {
      const res = await api('POST', '/statuses', { message: input.value });
      input.value = '';
      ctx.draft = '';
      update();
      ctx.homeFeed.add(res.status);
      announce('Posted.');
    } catch (err) {
      error.textContent = err.message;
      error.hidden = false;
    } finally {
      submit.disabled = false;
      submit.textContent = 'Post';
      input.focus();
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
  return form;
}

/** homeView: the composer over the home feed, which outlives the view. */
export function homeView(ctx) {
  const feed = ctx.homeFeed;
  if (ctx.homeStale || (!feed.loaded && !feed.loading)) {
    ctx.homeStale = false;
    feed.reload();
  }
  const h1 = heading('Home', { class: 'page-title visually-hidden' });
  const el = h('div', { class: 'view view-home' }, h1, composer(ctx), feed.el);
  return {
    el,
    title: 'Home',
    heading: h1,
    mounted: () => feed.rearm(),
    destroy() {}, // the feed keeps living (and receiving frames) off-screen
  };
}

/** homeEmpty is what an empty home feed says. */
export function homeEmpty() {
  return [
    h('p', { class: 'empty-title' }, 'Your home feed is empty.'),
    h('p', { class: 'muted' }, 'Post something above, or ', h('a', { href: '#/global' }, 'browse the global timeline'), ' to find people to follow.'),
  ];
}

// ---------------------------------------------------------------- global

function timelineFor(ctx, { label, path, empty }) {
  const tl = new Timeline({
    testid: 'timeline',
    label,
    empty,
    me: ctx.me,
    onDelete: ctx.deleteStatus,
    fetchPage: (before, signal) => api('GET', path + query({ limit: PAGE, before }), undefined, { signal }),
  });
  ctx.timelines.add(tl);
  tl.load();
  return tl;
}

/** globalView: everyone's latest statuses. Not live; a button refreshes. */
export function globalView(ctx) {
  const tl = timelineFor(ctx, { label: 'Global timeline', path: '/timelines/global', empty: h('p', { class: 'empty-title' }, 'No one has posted yet.') });
  const h1 = heading('Global');
  const el = h('div', { class: 'view' },
    h('div', { class: 'page-head' },
      h('div', {}, h1, h('p', { class: 'muted' }, 'The latest posts from everyone on Chorus.')),
      h('button', { type: 'button', class: 'btn btn-secondary', onclick: () => tl.reload() }, 'Refresh'),
    ),
    tl.el,
  );
  return { el, title: 'Global', heading: h1, destroy: () => { tl.destroy(); ctx.timelines.delete(tl); } };
}

// ---------------------------------------------------------------- profile

// followState answers whether the viewer follows `login`: from `you_follow`
// when the server sends it, else by scanning the viewer's following list.
async function followState(ctx, user, signal) {
  if (typeof user.you_follow === 'boolean') return user.you_follow;
  const me = ctx.me();
  for (let offset = 0; offset < 1000; offset += 100) {
    const page = await api('GET', userPath(me.login, '/following') + query({ limit: 100, offset }), undefined, { signal });
    const users = page.users || [];
    if (users.some((u) => sameLogin(u.login, user.login))) return true;
    if (users.length < 100) return false;
  }
  return false;
}

function countLink(href, n, one, many) {
  const num = h('strong', {}, '');
  const word = h('span', {}, '');
  const el = h(href ? 'a' : 'span', { href, class: 'count-item' }, num, ' ', word);
  const set = (v) => {
    num.textContent = formatCount(v);
    word.textContent = Number(v) === 1 ? one : many;
  };
  set(n);
  return { el, set };
}

function profileCard(ctx, user, signal) {
  const self = sameLogin(ctx.me().login, user.login);
  const posts = countLink(null, user.posts, 'post', 'posts');
  const followers = countLink(profileHref(user.login, '/followers'), user.followers, 'follower', 'followers');
  const following = countLink(profileHref(user.login, '/following'), user.following, 'following', 'following');
  const error = h('p', { class: 'form-error', role: 'alert', hidden: true, dataset: { testid: 'profile-error' } });
  const setCounts = (u) => {
    posts.set(u.posts);
    followers.set(u.followers);
    following.set(u.following);
  };

  let action;
  if (self) {
    action = h('span', { class: 'badge' }, 'This is you');
  } else {
    let state = null; // null while unknown
    const btn = h('button', { type: 'button', class: 'btn btn-primary', disabled: true, dataset: { testid: 'follow-button' } }, 'Follow');
    const show = (v) => {
      state = v;
      btn.textContent = v ? 'Unfollow' : 'Follow';
      btn.classList.toggle('btn-primary', !v);
      btn.classList.toggle('btn-secondary', v);
      btn.disabled = false;
    };
    followState(ctx, user, signal).then(show, (err) => {
      if (isAbort(err)) return;
      show(false);
      error.textContent = `Could not tell whether you follow them: ${err.message}`;
      error.hidden = false;
    });
    btn.addEventListener('click', async () => {
      if (state === null) return;
      btn.disabled = true;
      btn.setAttribute('aria-busy', 'true');
      error.hidden = true;
      const path = `/following/${encodeURIComponent(user.login)}`;
      try {
        if (state) {
          await api('DELETE', path);
          show(false);
          announce(`You unfollowed ${user.login}.`);
        } else {
          const res = await api('PUT', path);
          show(true);
          if (res && res.user) setCounts(res.user);
          announce(`You follow ${user.login} now.`);
        }
        ctx.followChanged(user.login, state);
        if (!state) {
          // DELETE answers 204: fetch the counts it changed.
          api('GET', userPath(user.login), undefined, { signal }).then((res) => setCounts(res.user), () => {});
        }
      } catch (err) {
        btn.disabled = false;
        error.textContent = err.message;
        error.hidden = false;
      } finally {
        btn.removeAttribute('aria-busy');
      }
    });
    action = btn;
  }

  const joined = parseTime(user.signup);
  const meta = [];
  if (joined) meta.push(`Joined ${new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric' }).format(joined)}`);
  let presence = null;
  if (typeof user.online === 'boolean' && !self) {
    presence = user.online
      ? h('span', { class: 'presence is-online' }, 'Online now')
      : h('span', { class: 'presence' }, timeEl(user.last_seen, { prefix: 'Last seen ', missing: 'Not seen yet' }));
  }

  const h1 = heading(user.name || user.login, { class: 'page-title profile-name' });
  const el = h('section', { class: 'card profile', 'aria-labelledby': 'profile-name' },
    h('div', { class: 'profile-top' },
      avatar(user, 'lg'),
      h('div', { class: 'profile-id' },
        h1,
        h('p', { class: 'profile-login' }, loginEl(user.login)),
        // Flex items with a gap rather than " · " text, so a wrap on a phone
        // leaves no separator dangling at the end of a line.
        h('p', { class: 'muted small profile-meta' }, meta.map((m) => h('span', {}, m)), presence),
      ),
      h('div', { class: 'profile-action' }, action),
    ),
    h('p', { class: 'counts' }, posts.el, followers.el, following.el),
    error,
  );
  h1.id = 'profile-name';
  return { el, heading: h1 };
}

/** profileView: a user's card and their statuses. */
export function profileView(ctx, login) {
  const abort = new AbortController();
  const h1 = heading(`@${login}`, { class: 'page-title visually-hidden' });
  const top = h('div', { class: 'profile-slot' }, h1, h('p', { class: 'muted' }, 'Loading profile…'));
  const tl = timelineFor(ctx, {
    label: `Posts by ${login}`,
    path: userPath(login, '/statuses'),
    empty: h('p', { class: 'empty-title' }, 'No posts yet.'),
  });
  const view = { el: h('div', { class: 'view' }, top, tl.el), title: `@${login}`, heading: h1 };

  api('GET', userPath(login), undefined, { signal: abort.signal }).then((res) => {
    const card = profileCard(ctx, res.user, abort.signal);
    const hadFocus = document.activeElement === h1;
    top.replaceChildren(card.el);
    view.heading = card.heading;
    document.title = `${res.user.name || res.user.login} (@${res.user.login}) · Chorus`;
    if (hadFocus) card.heading.focus();
  }, (err) => {
    if (isAbort(err)) return;
    const text = err.status === 404 ? `No one here goes by @${login}.` : err.message;
    top.replaceChildren(heading(err.status === 404 ? 'Not found' : 'Could not load this profile'), h('p', { class: 'muted' }, text));
    tl.destroy();
    tl.el.remove();
  });

  view.destroy = () => {
    abort.abort();
    tl.destroy();
    ctx.timelines.delete(tl);
  };
  return view;
}

// ---------------------------------------------------------------- people

function userItem(u) {
  return h('li', { class: 'user-item', dataset: { testid: 'user', login: u.login } },
    h('a', { class: 'user-link', href: profileHref(u.login) },
      avatar(u),
      h('span', { class: 'user-text' },
        h('span', { class: 'user-name' }, u.name || u.login),
        loginEl(u.login),
      ),
    ),
    h('span', { class: 'muted small user-stats' },
      `${formatCount(u.followers)} ${u.followers === 1 ? 'follower' : 'followers'} · ${formatCount(u.posts)} ${u.posts === 1 ? 'post' : 'posts'}`),
  );
}

/** peopleView: who follows `login` (which "followers") or whom they follow. */
export function peopleView(ctx, login, which) {
  const abort = new AbortController();
  const followers = which === 'followers';
  const title = followers ? `People following @${login}` : `People @${login} follows`;
  const h1 = heading(title);
  const list = h('ul', { class: 'user-list', 'aria-labelledby': 'people-heading', dataset: { testid: 'user-list' } });
  h1.id = 'people-heading';
  const note = h('p', { class: 'timeline-note', role: 'status' });
  const more = h('button', { type: 'button', class: 'btn btn-secondary', hidden: true }, 'Load more');
  let offset = 0;

  const load = async () => {
    more.hidden = true;
    note.textContent = 'Loading…';
    try {
      const res = await api('GET', userPath(login, `/${which}`) + query({ limit: PAGE, offset }), undefined, { signal: abort.signal });
      const users = res.users || [];
      for (const u of users) list.append(userItem(u));
      offset += users.length;
      more.hidden = users.length < PAGE;
      if (offset === 0) note.textContent = followers ? 'No followers yet.' : 'Not following anyone yet.';
      else note.textContent = '';
    } catch (err) {
      if (isAbort(err)) return;
      note.textContent = err.status === 404 ? `No one here goes by @${login}.` : err.message;
      more.textContent = 'Try again';
      more.hidden = err.status === 404;
    }
  };
  more.addEventListener('click', () => {
    more.textContent = 'Load more';
    load();
  });
  load();

  const tab = (name, label) => h('a', {
    href: profileHref(login, `/${name}`), class: 'tab', 'aria-current': name === which ? 'page' : null,
  }, label);

  const el = h('div', { class: 'view' },
    h('p', { class: 'back' }, h('a', { href: profileHref(login) }, `← Back to @${login}`)),
    h1,
    h('nav', { class: 'tabs', 'aria-label': 'Lists' }, tab('followers', 'Followers'), tab('following', 'Following')),
    h('div', { class: 'card list-card' }, list, h('div', { class: 'timeline-foot' }, note, more)),
  );
  return { el, title, heading: h1, destroy: () => abort.abort() };
}

/** notFoundView: a hash that matches no route. */
export function notFoundView() {
  const h1 = heading('Page not found');
  const el = h('div', { class: 'view' }, h1, h('p', {}, 'There is nothing at this address. ', h('a', { href: '#/' }, 'Go to your home feed'), '.'));
  return { el, title: 'Not found', heading: h1, destroy() {} };
}
