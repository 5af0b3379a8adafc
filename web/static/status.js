// One status as a list item: its author (name and @login), its age linking
// to its own page, whom it answers, its text with links, its action row
// (actions.js) and for its author a Delete that asks first, in place. A
// repost entry shows the original under "↻ <reposter> reposted". Reply
// opens a reply box under the status; the reply appears there.

import { h, avatar, loginEl, confirmControls, sameLogin, linkable } from './dom.js';
import { profileHref, statusHref } from './router.js';
import { timeEl, nameTimeLink } from './time.js';
import { knownName, learnName, nameOf } from './names.js';
import { actionRow, replyAdded } from './actions.js';
import { replyComposer } from './composer.js';
import { api } from './api.js';
import { statusMenu } from './safety.js';

// @login words (not inside words or e-mail addresses, of any script, as the
// server finds mentions) and plain http(s) links.
const LINKS = /(?<![\p{L}\p{N}_@])@([A-Za-z0-9_]{3,32})(?![\p{L}\p{N}_])|\bhttps?:\/\/[^\s<>"]+/gu;

/**
 * messageNodes splits a message into text nodes and links, never parsing
 * HTML. An @login is a link to the profile only when mentions (the
 * status's, [{uid, login}]) names it: the server found that user; any
 * other @word stays text.
 */
export function messageNodes(message, mentions = []) {
  const known = new Set((mentions || []).map((m) => String(m.login).toLowerCase()));
  const out = [];
  let last = 0;
  for (const m of message.matchAll(LINKS)) {
    let text = m[0];
    let href;
    if (m[1]) {
      if (!known.has(m[1].toLowerCase())) continue;
      href = profileHref(m[1]);
    } else {
      // A sentence's closing punctuation is not part of the link.
      text = text.replace(/[.,;:!?)\]'"]+$/, '');
      if (!linkable(text)) continue;
      href = text;
    }
    if (m.index > last) out.push(message.slice(last, m.index));
    out.push(h('a', { href, class: m[1] ? 'mention' : 'ext', rel: m[1] ? null : 'noopener noreferrer nofollow ugc' }, text));
    last = m.index + text.length;
  }
  if (last < message.length) out.push(message.slice(last));
  return out;
}

// A message keeps its line breaks, but not without bound: a run of blank
// lines shows as one, and past FOLD_LINES lines the message is folded
// behind "Show more". 500 characters of line breaks would otherwise make
// one status thousands of pixels tall.
const FOLD_LINES = 12;

// shownMessage is message as a status shows it: runs of blank lines cut to one.
function shownMessage(message) {
  return String(message ?? '').replace(/\r\n?/g, '\n').replace(/\n(?:[^\S\n]*\n){2,}/g, '\n\n');
}

let messageIds = 0;

// messageEl is a status's message and, for a long one, the button that
// unfolds it (null otherwise).
function messageEl(status) {
  const text = shownMessage(status.message);
  const el = h('p', { class: 'status-message', dataset: { testid: 'status-message' } }, messageNodes(text, status.mentions));
  if (text.split('\n').length <= FOLD_LINES) return { el, more: null };
  el.classList.add('is-folded');
  el.id = `message-${++messageIds}`;
  const more = h('button', {
    type: 'button', class: 'btn-link status-more', 'aria-expanded': 'false', 'aria-controls': el.id, dataset: { testid: 'status-more' },
  }, 'Show more');
  more.addEventListener('click', () => {
    const open = el.classList.toggle('is-folded') === false;
    more.setAttribute('aria-expanded', String(open));
    more.textContent = open ? 'Show less' : 'Show more';
  });
  return { el, more };
}

/**
 * authorName is a span with the display name of a status's author: the
 * status's own name when it carries one, else filled in once known.
 */
export function authorName(login, name) {
  if (name) learnName({ login, name });
  const el = h('span', { class: 'status-name' }, name || knownName(login) || '');
  if (!el.textContent) nameOf(login).then((name) => { el.textContent = name; });
  return el;
}

/**
 * parentGone notes that status id is deleted: every reply to it shown in
 * roots (and any rendered later) says it answers a deleted post.
 */
export function parentGone(id, roots = [document]) {
  const n = Number(id);
  remember(n, false);
  for (const root of roots) {
    for (const p of root.querySelectorAll(`[data-testid="status-reply"][data-reply-to="${n}"]`)) {
      p.replaceChildren(...replyWords(null));
    }
  }
}

// replyWords: "Replying to @login" with a link to the status answered, or
// "Replying to a deleted post" (ref null).
function replyWords(ref) {
  if (!ref) return ['Replying to ', h('span', { class: 'reply-gone' }, 'a deleted post')];
  return ['Replying to ', h('a', { href: statusHref(ref.id), class: 'reply-link' }, loginEl(ref.login))];
}

// A reply carries whom it answers even after that post is deleted, so
// whether it still exists is asked (GET /statuses/{id}) for replies that
// come into view, each parent once, one at a time, and at most
// CHECKS_PER_MINUTE a minute, well inside the read limit; a thread page
// knows from its context instead.
const CHECKS_PER_MINUTE = 10;
// What is known of the statuses replies answer: id -> true, or false once
// found deleted (so that a reply to one says so), the newest MAX_KNOWN
// kept: a tab open for days hears of every deletion in its timelines.
const MAX_KNOWN = 2000;
const parentExists = new Map();

function remember(id, exists) {
  parentExists.delete(id);
  parentExists.set(id, exists);
  if (parentExists.size > MAX_KNOWN) parentExists.delete(parentExists.keys().next().value);
}
const checkQueue = [];
let checking = false;
let checksLeft = CHECKS_PER_MINUTE;
let checksResetAt = 0;
let watcher = null;

function watchParent(line) {
  if (!('IntersectionObserver' in window)) return;
  if (!watcher) {
    watcher = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        watcher.unobserve(e.target);
        const id = Number(e.target.dataset.replyTo);
        if (parentExists.get(id) === false) parentGone(id);
        else if (!parentExists.has(id) && !checkQueue.includes(id)) checkQueue.push(id);
      }
      checkParents();
    });
  }
  watcher.observe(line);
}

async function checkParents() {
  if (checking) return;
  checking = true;
  try {
    while (checkQueue.length > 0) {
      const id = checkQueue[0];
      // A parent shown on the page exists; no need to ask.
      if (parentExists.has(id) || document.querySelector(`[data-testid="status"][data-id="${id}"]`)) {
        remember(id, parentExists.get(id) ?? true);
        checkQueue.shift();
        continue;
      }
      const now = Date.now();
      if (now >= checksResetAt) {
        checksLeft = CHECKS_PER_MINUTE;
        checksResetAt = now + 60000;
      }
      if (checksLeft === 0) {
        setTimeout(checkParents, checksResetAt - now);
        return;
      }
      checksLeft--;
      checkQueue.shift();
      try {
        await api('GET', `/statuses/${encodeURIComponent(id)}`);
        remember(id, true);
      } catch (err) {
        if (err.status === 404) parentGone(id);
      }
    }
  } finally {
    checking = false;
  }
}

/**
 * replyLine says whom status answers, or null when it answers no one;
 * check: ask, once it is seen, whether that post still exists.
 */
function replyLine(status, check) {
  const ref = status.reply_to;
  if (!ref || !ref.id) return null;
  const isGone = parentExists.get(Number(ref.id)) === false;
  const line = h('p', { class: 'status-reply muted small', dataset: { testid: 'status-reply', replyTo: String(ref.id) } },
    ...replyWords(isGone ? null : ref));
  if (check && !isGone) watchParent(line);
  return line;
}

// deleteControls is the Delete button and the confirmation it opens.
// onDelete(status, li) resolves once the status is gone, or rejects with
// an error to show.
function deleteControls(status, li, onDelete) {
  return confirmControls({
    label: 'Delete', ariaLabel: 'Delete this post', question: 'Delete this post for everyone?',
    busy: 'Deleting…', failure: 'Could not delete', testid: 'status-delete',
    act: () => onDelete(status, li),
  });
}

/** isMine says whether me (or null) wrote status. */
export function isMine(me, status) {
  return !!me && (me.id === status.uid || sameLogin(me.login, status.login));
}

/**
 * statusEl renders one status (a timeline entry: a repost shows its
 * original).
 *  ctx        the app's: me(), askSignIn(), deleteStatus
 *  onDelete   (status, li) => Promise; given, the author gets Delete
 *  onReplied  (reply, li) => void: where a reply posted from this status
 *             goes; without it, under the status
 *  depth      how deep in a thread (indents), 0 or absent: no indent
 *  inThread   shown in its thread, which says whether what it answers exists
 */
export function statusEl(entry, { ctx, onDelete = null, onReplied = null, depth = 0, inThread = false }) {
  const status = entry.repost_of || entry; // what is shown
  const href = profileHref(status.login);
  const li = h('li', {
    class: 'status', tabindex: '-1',
    dataset: { testid: 'status', id: String(entry.id), login: entry.login, author: status.login },
  });
  if (entry.repost_of) li.dataset.original = String(status.id);
  if (depth > 0) {
    li.dataset.depth = String(depth);
    li.classList.add(`depth-${Math.min(depth, 6)}`);
  }
  const me = ctx.me();
  const message = messageEl(status);
  const del = isMine(me, status) && onDelete ? deleteControls(status, li, onDelete) : null;
  // Someone else's post, to a signed-in viewer: the "…" menu (mute, block).
  const menu = isMine(me, status) ? null : statusMenu(ctx, status);

  const replyArea = h('div', { class: 'reply-area' });
  let box = null;
  const closeBox = (refocus) => {
    if (!box) return;
    box.destroy();
    box.el.remove();
    box = null;
    actions.replyButton.setAttribute('aria-expanded', 'false');
    if (refocus) actions.replyButton.focus();
  };
  const actions = actionRow(ctx, status, {
    onReply: () => {
      if (box) {
        closeBox(false);
        return false;
      }
      box = replyComposer(status, {
        onPosted: (reply) => {
          closeBox(false);
          replyAdded(status.id);
          if (onReplied) {
            onReplied(reply, li);
            return;
          }
          let list = replyArea.querySelector(':scope > .inline-replies');
          if (!list) {
            list = h('ol', { class: 'inline-replies', 'aria-label': `Your replies to @${status.login}` });
            replyArea.append(list);
          }
          const rli = statusEl(reply, { ctx, onDelete, inThread: true }); // it answers the post above it
          rli.classList.add('is-new');
          list.append(rli);
          rli.focus({ preventScroll: true });
        },
        onCancel: () => closeBox(true),
      });
      replyArea.prepend(box.el);
      box.input.focus();
      return true;
    },
  });

  li.append(...[
    entry.repost_of && h('p', { class: 'status-repost muted small', dataset: { testid: 'status-repost' } },
      h('span', { class: 'repost-mark', 'aria-hidden': 'true' }, '↻ '),
      h('a', { href: profileHref(entry.login), class: 'repost-by' }, authorName(entry.login, entry.name), loginEl(entry.login)),
      ' reposted'),
    h('a', { class: 'status-avatar', href, tabindex: '-1', 'aria-hidden': 'true' }, avatar({ id: status.uid, login: status.login })),
    h('div', { class: 'status-body' },
      // Delete shares the author's line so a status of yours is no taller
      // than anyone else's.
      h('div', { class: 'status-head' },
        h('p', { class: 'status-meta' },
          h('a', { class: 'status-author', href, dataset: { testid: 'status-author' } }, authorName(status.login, status.name), loginEl(status.login)),
          h('span', { class: 'sep', 'aria-hidden': 'true' }, '·'),
          nameTimeLink(h('a', { class: 'status-time', href: statusHref(status.id) }, timeEl(status.posted, { short: true }))),
        ),
        del && del.open,
        menu && menu.open,
      ),
      replyLine(status, !inThread),
      message.el,
      message.more,
      del && del.ask,
      del && del.error,
      menu && menu.items,
      actions.el,
      actions.error,
      replyArea,
    ),
  ].filter(Boolean));
  if (entry.repost_of) li.classList.add('is-repost');
  return li;
}
