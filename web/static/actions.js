// A status's action row: Reply, Repost and Like, each with its count and,
// for a signed-in viewer, their own state (aria-pressed). Like and Repost
// change at once and go back, saying why, if the server refuses; the
// server's answer then sets the counts. Every row shown for the same status
// changes together, wherever it is on the page. A visitor sees the counts;
// the buttons lead to the sign-in form.

import { h, formatCount, announce, toast, Registry } from './dom.js';
import { api } from './api.js';
import { icon } from './icons.js';

// The rows on the page: {id, el, set(status), raise(status)}. A row out
// of the document is dropped, unless it is in a list kept off-screen (the
// home feed, marked data-kept): what is free (an answer, a frame's
// counts) reaches it there too, but it is never read again for.
const shown = new Registry((el) => el.closest('[data-kept]') !== null);

function rowsOf(id) {
  return shown.live().filter((row) => row.id === Number(id));
}

// onScreen is every row in the document, by status id: rows kept
// off-screen are not read again for.
function onScreen() {
  const out = new Map();
  for (const row of shown.live()) {
    if (!row.el.isConnected) continue;
    if (!out.has(row.id)) out.set(row.id, []);
    out.get(row.id).push(row);
  }
  return out;
}

/** isShown says whether a row in the document shows status id. */
export function isShown(id) {
  return rowsOf(id).some((row) => row.el.isConnected);
}

/** statusChanged gives every row showing status.id the server's fresher counts and state. */
export function statusChanged(status) {
  for (const row of rowsOf(status.id)) row.set(status);
}

/**
 * countsRaised gives every row showing status.id its counts where they
 * are higher, and nothing else: a notification frame's status was read
 * before the frame was published, so another frame, or an answer, may
 * have told a newer count already, and its liked and reposted may
 * predate a toggle of yours (your own come from your actions' answers).
 */
export function countsRaised(status) {
  for (const row of rowsOf(status.id)) row.raise(status);
}

// Counts told by the stream (a reply, a like of yours) are read again from
// the server rather than counted up here: a reply comes by its status
// frame, by its parent's author's notification, again by a resume, and
// the answer to an action (a like, a reply posted here) may hold it
// already; one read after the news is exact however they interleave.
// The server limits reads per user, across all tabs, so these reads are
// few: a burst waits REREAD_MS and reads each status once; a status is
// read at most once per REREAD_GAP_MS (news meanwhile waits for the
// gap's end) and never twice at once, so that an older answer cannot
// land last; the page reads at most BUDGET times per BUDGET_MS, the rows
// in the window first, and drops the rest (the next read of the page
// counts them), except for your own replies, always read for. Only rows
// in the document are read for.
const REREAD_MS = 300;
const REREAD_GAP_MS = 5000;
const BUDGET = 10;
const BUDGET_MS = 60000;
const stale = new Map(); // id of a status to read again -> whether for your own reply
const reading = new Map(); // id being read -> actSeq when it was sent
const readAt = new Map(); // id -> when it was last read, for REREAD_GAP_MS
let tokens = BUDGET;
let tokensAt = performance.now();
let rereadTimer = 0;
let rereadAt = 0;

// Toggles of yours (a like, a repost) under way, and the last one begun,
// by status id: a read sent before a toggle began may have been served
// before its write, and would undo it landing after its answer; a read
// is not sent while one is under way, which may have begun before the
// news the read is for.
let actSeq = 0;
const acting = new Map(); // id -> toggles under way
const actedAt = new Map(); // id -> actSeq when the last toggle began

function actBegun(id) {
  acting.set(id, (acting.get(id) || 0) + 1);
  actedAt.set(id, ++actSeq);
}

function actEnded(id) {
  const n = acting.get(id) - 1;
  if (n > 0) acting.set(id, n);
  else acting.delete(id);
  if (stale.has(id)) rereadSoon(REREAD_MS);
}

// spend takes one read from the page's budget, if there is one left.
function spend() {
  const now = performance.now();
  tokens = Math.min(BUDGET, tokens + ((now - tokensAt) * BUDGET) / BUDGET_MS);
  tokensAt = now;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

function rereadSoon(ms) {
  const at = performance.now() + ms;
  if (rereadTimer && rereadAt <= at) return;
  clearTimeout(rereadTimer);
  rereadAt = at;
  rereadTimer = setTimeout(reread, ms);
}

/**
 * countsChanged reads status id's counts again, soon, if a row in the
 * document shows it; own: for your own reply (posted or deleted here),
 * read even past the page's budget.
 */
export function countsChanged(id, { own = false } = {}) {
  if (!isShown(id)) return;
  id = Number(id);
  stale.set(id, stale.get(id) === true || own);
  rereadSoon(REREAD_MS);
}

function inWindow(rows) {
  return rows.some((row) => {
    const r = row.el.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight;
  });
}

function reread() {
  rereadTimer = 0;
  const now = performance.now();
  for (const [id, at] of readAt) if (now - at >= REREAD_GAP_MS) readAt.delete(id);
  const sentSince = Math.min(actSeq, ...reading.values());
  for (const [id, seq] of actedAt) if (seq <= sentSince && !acting.has(id)) actedAt.delete(id);
  const rows = onScreen();
  const due = [];
  let next = Infinity;
  for (const [id, own] of stale) {
    if (!rows.has(id)) { // left the screen
      stale.delete(id);
      continue;
    }
    if (reading.has(id) || acting.has(id)) continue; // again once it is in
    if (readAt.has(id)) {
      next = Math.min(next, readAt.get(id) + REREAD_GAP_MS);
      continue;
    }
    due.push({ id, own, seen: inWindow(rows.get(id)) });
  }
  due.sort((a, b) => Number(b.own) - Number(a.own) || Number(b.seen) - Number(a.seen));
  for (const { id, own } of due) {
    stale.delete(id);
    if (spend() || own) read(id);
  }
  if (next < Infinity) rereadSoon(Math.max(REREAD_MS, next - now));
}

function read(id) {
  const sent = actSeq;
  reading.set(id, sent);
  readAt.set(id, performance.now());
  api('GET', `/statuses/${encodeURIComponent(id)}`).then((res) => {
    // A toggle begun since may have been written after this was read.
    if (res && res.status && !((actedAt.get(id) || 0) > sent)) statusChanged(res.status);
  }, () => {}).finally(() => { // gone or unreadable: its rows learn so otherwise
    reading.delete(id);
    if (stale.has(id)) rereadSoon(REREAD_MS);
  });
}

// The replies told already, so that each is read for once: the newest
// TOLD_MAX (as many as frames.js remembers notifications), each to a
// post on screen when told.
const TOLD_MAX = 500;
const told = new Set();

/**
 * replyAdded notes one more reply to status id (posted here, or, given as
 * {id}, told by the stream): every row showing it reads the server's
 * count soon.
 */
export function replyAdded(id, reply = null) {
  if (!reply) {
    countsChanged(id, { own: true });
    return;
  }
  if (!isShown(id) || told.has(Number(reply.id))) return;
  told.add(Number(reply.id));
  if (told.size > TOLD_MAX) told.delete(told.values().next().value);
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
  let raised = null; // counts a frame told while a toggle was under way
  const toggle = async (kind) => {
    if (!ctx.me()) return ctx.askSignIn();
    if (busy[kind]) return;
    busy[kind] = true;
    actBegun(Number(status.id));
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
      actEnded(Number(status.id));
      if (raised && !busy.like && !busy.repost) {
        const s = raised;
        raised = null;
        entry.raise(s);
      }
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
    // raise takes counts only where higher (actions.js countsRaised);
    // told while a toggle is under way, after its answer.
    raise: (s) => {
      if (busy.like || busy.repost) {
        raised = raised || { replies: 0, likes: 0, reposts: 0 };
        for (const k of ['replies', 'likes', 'reposts']) raised[k] = Math.max(raised[k], Number(s[k]) || 0);
        return;
      }
      for (const k of ['replies', 'likes', 'reposts']) st[k] = Math.max(st[k], Number(s[k]) || 0);
      render();
    },
  };
  shown.add(entry);
  return { el: row, error, replyButton: reply.b };
}

/**
 * replyRemoved has status id's count read again: a reply to it was
 * deleted here. Read after the deletion, it is exact; counted down, it
 * would be once too many after a read that had the deletion already.
 */
export function replyRemoved(id) {
  countsChanged(id, { own: true });
}
