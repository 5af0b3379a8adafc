// What the pages are built from: a page's heading, a timeline of statuses,
// and polling for newer ones. A page (a view) is {el, title, heading,
// destroy} and may have mounted(), focus(), onReady() (the stream is open,
// anew after each reconnection), onFrame(frame) (stream frames while it is
// shown), onDeleted(id) and onFollows(user) (someone followed you, or a
// friendship was made or ended); app.js mounts one at a time in <main>.

import { h } from './dom.js';
import { api, query } from './api.js';
import { Timeline } from './timeline.js';

const PAGE = 30;
// How often a page the stream does not feed (global, a list, a thread)
// asks for what is new while it is shown.
const POLL_MS = 15000;

/** heading is a page's h1, focused (without a tab stop) when the route changes. */
export function heading(text, extra = {}) {
  return h('h1', { class: 'page-title', tabindex: '-1', ...extra }, text);
}

/** statusTimeline is a Timeline of path (a statuses page), loading now. */
export function statusTimeline(ctx, { label, path, empty, newer = false, onLoaded }) {
  const tl = new Timeline({
    testid: 'timeline',
    label,
    empty,
    ctx,
    onDelete: ctx.deleteStatus,
    fetchPage: (before, signal) => api('GET', path + query({ limit: PAGE, before }), undefined, { signal }),
    fetchNewer: newer ? (after, signal) => api('GET', path + query({ limit: PAGE, after }), undefined, { signal }) : null,
    onLoaded,
  });
  ctx.timelines.add(tl);
  tl.load();
  return tl;
}

/**
 * poll calls read every 15 s while the page is visible, and at once when
 * it becomes visible again, except while paused() says the stream brings
 * what it would read; it returns what stops it.
 */
export function poll(read, paused = () => false) {
  const tick = () => {
    if (!document.hidden && !paused()) read();
  };
  const timer = setInterval(tick, POLL_MS);
  // Back to a tab that was hidden: catch up now rather than in up to 15 s.
  document.addEventListener('visibilitychange', tick);
  return () => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', tick);
  };
}

/** pollNewer has tl ask for newer statuses as poll says. */
export function pollNewer(tl, paused = () => false) {
  return poll(() => tl.loadNewer(), paused);
}
