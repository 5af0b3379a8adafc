// A status's action row: Reply, Repost and Like, each with its count and,
// for a signed-in viewer, their own state (aria-pressed). Like and Repost
// change at once and go back, saying why, if the server refuses; the
// server's answer then sets the counts. Every row shown for the same status
// changes together, wherever it is on the page. A visitor sees the counts;
// the buttons lead to the sign-in form.

import { h, formatCount, announce, toast, Registry } from './dom.js';
import { api } from './api.js';
import { icon } from './icons.js';

// The rows on the page: {id, el, set(status), bumpReplies(n)}. A row out
// of the document is dropped, unless it is in a list kept off-screen (the
// home feed, marked data-kept).
const shown = new Registry((el) => el.closest('[data-kept]') !== null);

function rowsOf(id) {
  return shown.live().filter((row) => row.id === Number(id));
}

/** isShown says whether a row shows status id (or is kept to show it again). */
export function isShown(id) {
  return rowsOf(id).length > 0;
}

/** statusChanged gives every row showing status.id the server's fresher counts and state. */
export function statusChanged(status) {
  for (const row of rowsOf(status.id)) row.set(status);
}

// Counts told by the stream (a reply, a like of yours) are read again from
// the server rather than counted up here: a reply comes by its status
// frame, by its parent's author's notification, again by a resume, and
// the answer to an action (a like, a reply posted here) may hold it
// already; one read after the news is exact however they interleave.
// Reads wait REREAD_MS, so that a burst reads each status once, and one
// status is never read twice at once, so that an older answer cannot
// land last.
const REREAD_MS = 300;
const stale = new Set(); // ids of statuses to read again
const reading = new Set(); // ids being read
let rereadTimer = 0;

/** countsChanged reads status id's counts again, soon, if a row shows it. */
export function countsChanged(id) {
  if (!isShown(id)) return;
  stale.add(Number(id));
  if (!rereadTimer) rereadTimer = setTimeout(reread, REREAD_MS);
}

function reread() {
  rereadTimer = 0;
  for (const id of [...stale]) {
    if (reading.has(id)) continue; // read again once this read is in
    stale.delete(id);
    reading.add(id);
    api('GET', `/statuses/${encodeURIComponent(id)}`).then((res) => {
      if (res && res.status) statusChanged(res.status);
    }, () => {}).finally(() => { // gone or unreadable: its rows learn so otherwise
      reading.delete(id);
      if (stale.has(id) && !rereadTimer) rereadTimer = setTimeout(reread, REREAD_MS);
    });
  }
}

// The replies told already, so that each is read for once.
const told = new Set();

/**
 * replyAdded notes one more reply to status id (posted here, or, given as
 * {id}, told by the stream): every row showing it reads the server's
 * count soon.
 */
export function replyAdded(id, reply = null) {
  if (reply) {
    if (told.has(Number(reply.id))) return;
    told.add(Number(reply.id));
  }
  countsChanged(id);
}

const WORDS = {
  reply: ['Reply', 'reply', 'replies'],
  repost: ['Repost', 'repost', 'reposts'],
  like: ['Like', 'like', 'likes'],
};

// label is a button's accessible name: what it does, then its count in
// words ("Like, 3 likes"), which holds the number it shows.
function label(kind, n) {
  const [verb, one, many] = WORDS[kind];
  const shown = formatCount(n);
  return `${verb}, ${shown} ${Number(n) === 1 ? one : many}`;
}

/**
 * actionRow builds the row for status (an original, never a repost entry).
 *  ctx      the app's: me(), askSignIn()
 *  onReply  () => boolean: a signed-in viewer pressed Reply; it answers
 *           whether the reply box is open now (for aria-expanded)
 */
export function actionRow(ctx, status, { onReply }) {
  const signedIn = !!ctx.me();
  const st = {
    replies: Number(status.replies) || 0,
    likes: Number(status.likes) || 0,
    reposts: Number(status.reposts) || 0,
    liked: status.liked === true,
    reposted: status.reposted === true,
  };
  const error = h('p', { class: 'status-error', role: 'alert', hidden: true, dataset: { testid: 'action-error' } });

  const button = (kind) => {
    const count = h('span', { class: 'action-count', dataset: { testid: `${kind}-count` } });
    const b = h('button', { type: 'button', class: `action action-${kind}`, dataset: { testid: `${kind}-button` } }, icon(kind, 18), count);
    return { b, count };
  };
  const reply = button('reply');
  const repost = button('repost');
  const like = button('like');

  const render = () => {
    for (const [kind, btn, n, on] of [['reply', reply, st.replies, null], ['repost', repost, st.reposts, st.reposted], ['like', like, st.likes, st.liked]]) {
      btn.count.textContent = n > 0 ? formatCount(n) : '';
      btn.b.setAttribute('aria-label', label(kind, n));
      if (signedIn && on !== null) btn.b.setAttribute('aria-pressed', String(on));
    }
  };
  render();

  const row = h('div', { class: 'status-actions', role: 'group', 'aria-label': 'Actions', dataset: { testid: 'status-actions' } },
    reply.b, repost.b, like.b);

  reply.b.addEventListener('click', () => {
    if (!ctx.me()) return ctx.askSignIn();
    reply.b.setAttribute('aria-expanded', String(onReply()));
  });
  if (signedIn) reply.b.setAttribute('aria-expanded', 'false');

  // toggle flips liked (or reposted) at once and asks the server; a
  // refusal puts it back and says why.
  const busy = { like: false, repost: false };
  const toggle = async (kind) => {
    if (!ctx.me()) return ctx.askSignIn();
    if (busy[kind]) return;
    busy[kind] = true;
    const btn = kind === 'like' ? like.b : repost.b;
    btn.setAttribute('aria-busy', 'true'); // pressed again meanwhile, it waits for this answer
    const on = kind === 'like' ? 'liked' : 'reposted';
    const count = kind === 'like' ? 'likes' : 'reposts';
    const before = { ...st };
    st[on] = !st[on];
    st[count] = Math.max(0, st[count] + (st[on] ? 1 : -1));
    error.hidden = true;
    render();
    try {
      const res = await api(st[on] ? 'PUT' : 'DELETE', `/statuses/${encodeURIComponent(status.id)}/${kind}`);
      busy[kind] = false; // so that this row takes the answer too
      if (res && res.status) statusChanged(res.status);
      announce(st[on] ? (kind === 'like' ? 'Liked.' : 'Reposted.') : (kind === 'like' ? 'Like taken back.' : 'Repost undone.'));
    } catch (err) {
      if (err.status === 404 && ctx.removeStatus) {
        // Deleted, or its author suspended (or muted) since it was shown:
        // it leaves every place it is shown, as a deletion does.
        ctx.removeStatus(status.id);
        toast('That post is no longer available.');
        return;
      }
      Object.assign(st, before);
      render();
      const what = before[on] ? (kind === 'like' ? 'take back the like' : 'undo the repost') : `${kind} this post`;
      error.textContent = `Could not ${what}: ${err.message}`;
      error.hidden = false;
    } finally {
      busy[kind] = false;
      btn.removeAttribute('aria-busy');
    }
  };
  like.b.addEventListener('click', () => toggle('like'));
  repost.b.addEventListener('click', () => toggle('repost'));

  const entry = {
    id: Number(status.id),
    el: row,
    set: (s) => {
      if (busy.like || busy.repost) return; // the answer under way decides
      st.replies = Number(s.replies) || 0;
      st.likes = Number(s.likes) || 0;
      st.reposts = Number(s.reposts) || 0;
      if (typeof s.liked === 'boolean') st.liked = s.liked;
      if (typeof s.reposted === 'boolean') st.reposted = s.reposted;
      render();
    },
    bumpReplies: (d) => {
      st.replies = Math.max(0, st.replies + d);
      render();
    },
  };
  shown.add(entry);
  return { el: row, error, replyButton: reply.b };
}

/** replyRemoved counts one reply less on every row showing status id (a reply to it was deleted). */
export function replyRemoved(id) {
  for (const row of rowsOf(id)) row.bumpReplies(-1);
}
