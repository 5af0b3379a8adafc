// Relative times ("2 min ago") with the exact time on hover. Pure helpers
// first so they can be checked outside a browser.

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// The server's clock is the one that stamped the times we show; a client
// clock that runs ahead or behind would otherwise make fresh posts read
// "5 min ago". app.js sets this from the HTTP Date header.
let serverOffsetMs = 0;

/** setServerOffset records how far the server's clock is ahead of ours. */
export function setServerOffset(ms) {
  // The Date header has one-second resolution; ignore noise below that.
  serverOffsetMs = Math.abs(ms) > 2000 ? ms : 0;
}

/** serverNow is the current time as the server would stamp it. */
export function serverNow() {
  return new Date(Date.now() + serverOffsetMs);
}

/**
 * relativeTime says how long ago `date` was, for a person: "just now",
 * "5 min ago", "3 h ago", then a short date ("Mar 5", or "Mar 5, 2023"
 * outside the current year). Future times (clock skew) read "just now".
 */
export function relativeTime(date, now = serverNow(), locale = undefined) {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) return 'unknown';
  const secs = Math.floor((now.getTime() - date.getTime()) / 1000);
  if (secs < 45) return 'just now';
  if (secs < HOUR) return `${Math.max(1, Math.floor(secs / MINUTE))} min ago`;
  if (secs < DAY) return `${Math.floor(secs / HOUR)} h ago`;
  const opts = { month: 'short', day: 'numeric' };
  if (date.getFullYear() !== now.getFullYear()) opts.year = 'numeric';
  return new Intl.DateTimeFormat(locale, opts).format(date);
}

/** exactTime is the full local date and time, for the hover title. */
export function exactTime(date, locale = undefined) {
  if (Number.isNaN(date.getTime())) return '';
  return new Intl.DateTimeFormat(locale, { dateStyle: 'full', timeStyle: 'medium' }).format(date);
}

/** parseTime turns an RFC 3339 string (or null) into a Date, or null. */
export function parseTime(s) {
  if (typeof s !== 'string' || s === '') return null;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) ? null : d;
}

/**
 * timeEl builds <time datetime title> showing `prefix` + the relative time;
 * refreshTimes keeps it current. A missing time shows `missing`.
 */
export function timeEl(iso, { prefix = '', missing = 'unknown' } = {}) {
  const el = document.createElement('time');
  const d = parseTime(iso);
  if (!d) {
    el.textContent = missing;
    return el;
  }
  el.dateTime = d.toISOString();
  el.title = exactTime(d);
  el.dataset.rel = '';
  el.dataset.prefix = prefix;
  el.textContent = prefix + relativeTime(d);
  return el;
}

/** refreshTimes rewrites every relative time under root. */
export function refreshTimes(root = document) {
  const now = serverNow();
  for (const el of root.querySelectorAll('time[data-rel]')) {
    const d = parseTime(el.dateTime);
    if (d) el.textContent = (el.dataset.prefix || '') + relativeTime(d, now);
  }
}
