// A status's own page (/s/{id}): its thread (GET /statuses/{id}/context):
// the posts it answers, oldest first, the status itself, highlighted, and
// the replies under it in thread order, each indented by how deep it
// answers; then when it was posted and its author's card. A reply posted
// from any post of the thread appears under that post, and so does one
// told live (its status frame, or your notification of it). Signed in, with
// the stream open, the page watches its thread (the context names it):
// every reply posted in it comes as a `thread_status` frame, and each
// deletion as `thread_status_deleted` (a deleted reply takes the replies
// under it along, as a reload leaves them out), and each `watching` frame
// (after the watch, and again after the server's subscription came back)
// has it read the context again for the replies it missed. Otherwise (a
// visitor, the stream down) it reads the context again every 15 s while
// shown. Someone you block or mute leaves the thread. Open to visitors who
// are signed out.

import { h, avatar, loginEl, sameLogin } from './dom.js';
import { api, isAbort, userPath } from './api.js';
import { profileHref, statusHref, navigate } from './router.js';
import { timeEl, exactTime, parseTime } from './time.js';
import { learnName } from './names.js';
import { heading, poll } from './page.js';
import { statusEl, parentGone } from './status.js';
import { replyAdded, countsChanged } from './actions.js';

function authorCard(user) {
  return h('a', { class: 'card author-card', href: profileHref(user.login), dataset: { testid: 'status-page-author' } },
    avatar(user, 'md'),
    h('span', { class: 'user-text' },
      h('span', { class: 'user-name' }, user.name || user.login),
      loginEl(user.login),
    ),
    h('span', { class: 'muted small author-more' }, 'View profile'),
  );
}

// The most replies told live that a page keeps while its thread is read.
const MAX_EARLY = 200;

/** statusView shows status `id` in its thread. */
export function statusView(ctx, id) {
  const abort = new AbortController();
  const h1 = heading('Post', { class: 'page-title visually-hidden' });
  const body = h('div', { class: 'status-page' }, h('p', { class: 'muted' }, 'Loading…'));
  const view = { el: h('div', { class: 'view' }, h1, body), title: 'Post', heading: h1 };
  let shown = null; // the status once loaded
  let thread = null; // the <ol> of the thread
  let live = false; // the replies read are shown: those told live go in place
  const early = []; // replies told live before then, once the status is shown
  let watched = 0; // the thread watched, as the context named it (0: none)
  let watching = false; // this connection's watch of it is answered
  let rereading = null; // the AbortController of a read of the context under way

  // gone says the status is no more to be seen, in place of its thread.
  const gone = (text) => {
    thread = null;
    body.replaceChildren(h('div', { class: 'card' },
      h('p', { class: 'empty-title', dataset: { testid: 'status-gone' } }, text),
      shown && h('p', { class: 'muted' }, h('a', { href: profileHref(shown.login) }, 'See more from ', h('span', { class: 'login' }, shown.login)), '.'),
    ));
  };

  const depthOf = (li) => Number(li.dataset.depth || 0);

  // item renders one post of the thread at depth (0: the status and what
  // it answers).
  const item = (s, depth) => {
    const li = statusEl(s, { ctx, onDelete: ctx.deleteStatus, onReplied: placeReply, depth, inThread: true });
    if (s.reply_to) li.dataset.replyTo = String(s.reply_to.id);
    return li;
  };

  const rowOf = (id) => thread && thread.querySelector(`:scope > [data-testid="status"][data-id="${Number(id)}"]`);

  // addReply puts reply after the replies already under parentLi, one
  // step deeper, unless the thread shows it already (its frame may come
  // before the answer to the post, or after).
  function addReply(reply, parentLi) {
    const there = rowOf(reply.id);
    if (there) return there;
    const depth = depthOf(parentLi) + 1;
    let after = parentLi;
    for (let next = parentLi.nextElementSibling; next && depthOf(next) >= depth; next = next.nextElementSibling) after = next;
    const li = item(reply, depth);
    li.classList.add('is-new', 'is-reply');
    after.after(li);
    return li;
  }

  // placeReply puts a reply posted from parentLi under it, and the focus on it.
  function placeReply(reply, parentLi) {
    const li = addReply(reply, parentLi);
    li.focus({ preventScroll: true });
    li.scrollIntoView({ block: 'nearest' });
  }

  // liveReply shows reply s, told live, under the post it answers, when the
  // thread shows that post among the replies (what the status answers
  // shows without its other replies).
  const liveReply = (s) => {
    const parentLi = rowOf(s.reply_to.id);
    if (parentLi && !parentLi.classList.contains('is-ancestor')) addReply(s, parentLi);
  };

  // goLive shows the replies told while the thread was read, then each as it comes.
  const goLive = () => {
    live = true;
    for (const s of early.splice(0)) liveReply(s);
  };

  const showContext = (s, ctxRes) => {
    const ancestors = ctxRes.ancestors || [];
    const descendants = ctxRes.descendants || [];
    const focus = thread.querySelector('.is-focus');
    for (const a of ancestors) {
      const li = item(a, 0);
      li.classList.add('is-ancestor');
      focus.before(li);
    }
    // Thread order puts each reply after its parent: its depth is one more.
    const depths = new Map([[Number(s.id), 0]]);
    let last = focus;
    for (const d of descendants) {
      const parent = d.reply_to ? Number(d.reply_to.id) : NaN;
      const depth = (depths.get(parent) ?? 0) + 1;
      depths.set(Number(d.id), depth);
      const li = item(d, depth);
      li.classList.add('is-reply');
      last.after(li);
      last = li;
    }
    // The context reads a bounded part of a big thread: a post whose
    // replies it did not read whole (more_replies), with more replies than
    // shown under it, links to its own thread for the rest. Elsewhere the
    // replies counted and not shown are hidden from the reader (a block, a
    // mute, a suspension), and no page shows them.
    const cut = new Set((ctxRes.more_replies || []).map(Number));
    const children = new Map();
    for (const d of descendants) {
      const p = d.reply_to && Number(d.reply_to.id);
      children.set(p, (children.get(p) || 0) + 1);
    }
    for (const st of [s, ...descendants]) {
      const more = (Number(st.replies) || 0) - (children.get(Number(st.id)) || 0);
      if (more <= 0 || !cut.has(Number(st.id))) continue;
      const li = thread.querySelector(`:scope > [data-id="${Number(st.id)}"]`);
      const depth = depthOf(li) + 1;
      let after = li;
      for (let next = li.nextElementSibling; next && depthOf(next) >= depth; next = next.nextElementSibling) after = next;
      after.after(h('li', { class: `thread-more depth-${Math.min(depth, 6)}`, dataset: { depth: String(depth), testid: 'thread-more' } },
        h('a', { href: statusHref(st.id) }, `${more} more ${more === 1 ? 'reply' : 'replies'} to `, loginEl(st.login))));
    }
    // The status answers a post the context does not hold: it was deleted.
    const parent = s.reply_to && Number(s.reply_to.id);
    if (parent && !ancestors.some((a) => Number(a.id) === parent)) parentGone(parent, [thread]);
    for (const d of descendants) {
      const p = d.reply_to && Number(d.reply_to.id);
      if (p && !depths.has(p)) parentGone(p, [thread]);
    }
    thread.setAttribute('aria-label', ancestors.length || descendants.length ? `Thread, ${1 + ancestors.length + descendants.length} posts` : 'Post');
    // Keep the status itself in view below the posts it answers.
    if (ancestors.length && document.activeElement !== focus) focus.scrollIntoView({ block: 'start' });
  };

  // watch asks the stream for the thread's changes, once its context
  // named it; a new connection watches nothing, so each one asks again.
  const watch = () => {
    watching = false;
    if (thread) delete thread.dataset.live;
    if (watched && ctx.stream && ctx.stream.live()) ctx.stream.send({ type: 'watch', timeline: 'thread', thread: watched });
  };

  // reread reads the context again, once the watch is live, for what
  // changed while it was not: replies not shown yet go in place, as if
  // told live, and a reply shown before the read that a status's replies,
  // all read, leave out was deleted (or hidden) meanwhile, and leaves. The
  // status itself is read beside the context for its replies count. fed:
  // the stream's watch tells what comes after the read.
  const reread = (fed) => {
    if (rereading) rereading.abort();
    const again = new AbortController();
    rereading = again;
    const signal = AbortSignal.any([abort.signal, again.signal]);
    const before = thread ? [...thread.querySelectorAll(':scope > .is-reply[data-testid="status"]')] : [];
    Promise.all([
      api('GET', `/statuses/${encodeURIComponent(id)}/context`, undefined, { signal }),
      api('GET', `/statuses/${encodeURIComponent(id)}`, undefined, { signal }),
    ]).then(([c, res]) => {
      if (signal.aborted) return;
      const replies = new Map([[Number(res.status.id), Number(res.status.replies) || 0]]);
      const read = new Map(); // a status's id -> its replies read
      for (const d of c.descendants || []) {
        if (!d.reply_to) continue;
        const p = Number(d.reply_to.id);
        replies.set(Number(d.id), Number(d.replies) || 0);
        if (!read.has(p)) read.set(p, new Set());
        read.get(p).add(Number(d.id));
        if (rowOf(d.id)) continue;
        liveReply(d);
        // Counted on what it answers as if told live (once, however told).
        replyAdded(p, { id: d.id });
      }
      for (const li of before) {
        const p = Number(li.dataset.replyTo);
        const got = read.get(p) || new Set();
        if (replies.has(p) && got.size >= replies.get(p) && !got.has(Number(li.dataset.id)) && li.isConnected) {
          // Gone from every page, as a status found deleted: its replies
          // now answer a deleted post.
          ctx.removeStatus(Number(li.dataset.id));
          countsChanged(p);
        }
      }
      if (thread && fed) thread.dataset.live = 'true'; // for tests: the page is fed by the stream
    }, (err) => {
      if (isAbort(err)) return;
      if (err.status === 404 && thread) gone('This post was deleted.');
      else console.warn('thread re-read:', err.message);
    }).finally(() => {
      if (rereading === again) rereading = null;
    });
  };

  api('GET', `/statuses/${encodeURIComponent(id)}`, undefined, { signal: abort.signal }).then((res) => {
    if (res.status.repost_of) {
      // A repost entry's address: its thread is the original's.
      navigate(statusHref(res.status.repost_of.id), { replace: true });
      return null;
    }
    const s = res.status;
    shown = s;
    const li = item(s, 0);
    li.classList.add('is-focus');
    li.setAttribute('aria-current', 'true');
    const posted = parseTime(s.posted);
    const author = h('div', { class: 'author-slot' });
    thread = h('ol', { class: 'timeline status-single thread', 'aria-label': 'Post', dataset: { testid: 'status-page' } }, li);
    const note = h('p', { class: 'timeline-note', role: 'status', dataset: { testid: 'thread-note' } });
    body.replaceChildren(
      thread,
      note,
      posted && h('p', { class: 'muted small status-when' }, 'Posted ', h('span', {}, exactTime(posted)), ' (', timeEl(s.posted), ')'),
      author,
    );
    h1.textContent = `Post by @${s.login}`;
    document.title = `@${s.login}: “${String(s.message).slice(0, 60)}” · Chorus`;
    const context = api('GET', `/statuses/${encodeURIComponent(id)}/context`, undefined, { signal: abort.signal }).then((c) => {
      if (thread) showContext(s, c);
      goLive();
      watched = Number(c.thread) || 0;
      watch();
    }, (err) => {
      if (!isAbort(err) && err.status !== 404) note.textContent = `Could not load the replies: ${err.message}`;
      goLive();
    });
    const card = api('GET', userPath(s.login), undefined, { signal: abort.signal }).then((u) => {
      learnName(u.user);
      author.replaceChildren(authorCard(u.user));
    }, (err) => {
      if (!isAbort(err)) author.replaceChildren(authorCard({ login: s.login, id: s.uid }));
    });
    return Promise.all([context, card]);
  }, (err) => {
    if (isAbort(err)) return;
    if (err.status === 404) {
      h1.textContent = 'Post not found';
      h1.classList.remove('visually-hidden');
      body.replaceChildren(h('p', { class: 'muted', dataset: { testid: 'status-gone' } }, 'This post does not exist, or was deleted.'));
    } else {
      body.replaceChildren(h('p', { class: 'form-error', role: 'alert' }, `Could not load this post: ${err.message}`));
    }
  });

  view.onDeleted = (deletedId) => {
    if (shown && Number(deletedId) === Number(shown.id)) {
      gone('This post was deleted.');
      return;
    }
    // Another post of the thread: it leaves. A reply's own replies go
    // with it, as a reload leaves them out (the context reads down from
    // the status through the replies there are); a deleted post above the
    // status leaves its replies, the status among them, in place.
    const li = rowOf(deletedId);
    if (!li) return;
    if (li.classList.contains('is-reply')) {
      const depth = depthOf(li);
      for (let next = li.nextElementSibling; next && depthOf(next) > depth; next = li.nextElementSibling) next.remove();
    }
    li.remove();
  };
  // A reply told live to a post of the thread takes its place there, the
  // focus staying where it is. Before the context is shown, the replies
  // it reads hold it.
  view.onFrame = (frame) => {
    if (frame.type === 'watching') {
      if (frame.timeline === 'thread' && watched && Number(frame.thread) === watched) {
        watching = true;
        reread(true);
      }
      return;
    }
    let s = null;
    if (frame.type === 'status') s = frame.status;
    else if (frame.type === 'thread_status' && watched && Number(frame.thread) === watched) s = frame.status;
    else if (frame.type === 'notification' && frame.notification && ['replied', 'mentioned'].includes(frame.notification.type)) s = frame.notification.status;
    if (!s || s.repost_of || !s.reply_to) return;
    if (live) liveReply(s);
    // Before the status is shown, the context read after it holds what
    // came; a page that never shows it (not found) keeps nothing.
    else if (shown && early.length < MAX_EARLY) early.push(s);
  };

  // You blocked or muted login: their posts leave the thread (replies to
  // them stay, answering a post you do not see); the status itself, theirs,
  // goes as a deleted one does.
  view.onHidden = (login) => {
    if (shown && sameLogin(shown.login, login)) {
      gone('You no longer see this post.');
      return;
    }
    if (!thread) return;
    for (const li of thread.querySelectorAll(':scope > [data-testid="status"]')) {
      if (sameLogin(li.dataset.author, login) || sameLogin(li.dataset.login, login)) li.remove();
    }
  };
  // Not fed by the stream, the page reads the thread again now and then,
  // once it shows it.
  const stopPolling = poll(() => {
    if (live && thread) reread(false);
  }, () => watching && !!ctx.stream && ctx.stream.live());
  view.onReady = watch; // a new connection watches nothing yet
  view.destroy = () => {
    stopPolling();
    abort.abort();
    if (watched && ctx.stream && ctx.stream.live()) ctx.stream.send({ type: 'unwatch', timeline: 'thread', thread: watched });
  };
  return view;
}
