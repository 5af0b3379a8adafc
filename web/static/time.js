// Relative times ("2 min ago") with the exact time on hover. Pure helpers
// first so they can be checked outside a browser.

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

// The server's clock is the one that stamped the times we show; a client
// clock that runs ahead or behind would otherwise make fresh posts read
// "5 min ago". api.js sets this from the HTTP Date header.
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
 * shortTime is the compact age shown on a status: "now", "12s", "5m", "3h",
 * then a short date, as timelines commonly write it.
 */
export function shortTime(date, now = serverNow(), locale = undefined) {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) return '';
  const secs = Math.floor((now.getTime() - date.getTime()) / 1000);
  if (secs < 5) return 'now';
  if (secs < MINUTE) return `${secs}s`;
  if (secs < HOUR) return `${Math.floor(secs / MINUTE)}m`;
  if (secs < DAY) return `${Math.floor(secs / HOUR)}h`;
  return relativeTime(date, now, locale);
}

/** spokenAge is shortTime in words, for a screen reader: "5 minutes ago". */
export function spokenAge(date, now = serverNow()) {
  const secs = Math.floor((now.getTime() - date.getTime()) / 1000);
  const say = (n, unit) => `${n} ${unit}${n === 1 ? '' : 's'} ago`;
  if (secs < 5) return 'just now';
  if (secs < MINUTE) return say(secs, 'second');
  if (secs < HOUR) return say(Math.floor(secs / MINUTE), 'minute');
  if (secs < DAY) return say(Math.floor(secs / HOUR), 'hour');
  return exactTime(date);
}

/**
 * timeEl builds <time datetime title> showing `prefix` + the relative time;
 * refreshTimes keeps it current. `short` writes the compact form. A missing
 * time shows `missing`.
 */
export function timeEl(iso, { prefix = '', missing = 'unknown', short = false } = {}) {
  const el = document.createElement('time');
  const d = parseTime(iso);
  if (!d) {
    el.textContent = missing;
    return el;
  }
  el.dateTime = d.toISOString();
  el.title = exactTime(d);
  el.dataset.rel = short ? 'short' : '';
  el.dataset.prefix = prefix;
  el.textContent = prefix + (short ? shortTime(d) : relativeTime(d));
  return el;
}

// Younger than this, a time is rewritten on every tick; older, once a minute.
const FRESH_MS = 5 * 60 * 1000;
const TICK_MS = 10000;

/** refreshTimes rewrites the relative times under root; with onlyFresh, only the young ones. */
export function refreshTimes(root = document, onlyFresh = false) {
  const now = serverNow();
  for (const el of root.querySelectorAll('time[data-rel]')) {
    const d = parseTime(el.dateTime);
    if (!d || (onlyFresh && now - d > FRESH_MS)) continue;
    const text = (el.dataset.prefix || '') + (el.dataset.rel === 'short' ? shortTime(d, now) : relativeTime(d, now));
    if (el.textContent !== text) el.textContent = text;
    speak(el, d, now);
  }
}

// A link around a compact time ("5m") is also named in words for screen
// readers: mark it data-spoken-time. The name starts with what it shows
// ("5m, 5 minutes ago"), so that someone who says or types the visible text
// to pick the link still finds it.
function speak(el, d, now) {
  const link = el.parentElement;
  if (link && 'spokenTime' in link.dataset) link.setAttribute('aria-label', timeName(el.textContent, spokenAge(d, now)));
}

// timeName names a link that shows `shown` by the time in words, `spoken`:
// what it shows first, unless the words say it already ("now", "just now").
function timeName(shown, spoken) {
  return spoken.toLowerCase().includes(shown.toLowerCase()) ? spoken : `${shown}, ${spoken}`;
}

/** nameTimeLink names link, which holds a compact timeEl, by what it shows and the time in words. */
export function nameTimeLink(link) {
  link.dataset.spokenTime = '';
  const el = link.querySelector('time[data-rel]');
  const d = el && parseTime(el.dateTime);
  if (d) speak(el, d, serverNow());
  return link;
}

/**
 * startClock keeps the page's relative times true: every 10 s for those a
 * few minutes old ("12s" moves fast), every minute for the rest, and at
 * once when a hidden tab is shown again. It returns a stop function.
 */
export function startClock(root = document) {
  let ticks = 0;
  const timer = setInterval(() => {
    if (document.hidden) return;
    ticks++;
    refreshTimes(root, ticks % 6 !== 0);
  }, TICK_MS);
  const onShow = () => {
    if (!document.hidden) refreshTimes(root);
  };
  document.addEventListener('visibilitychange', onShow);
  return () => {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onShow);
  };
}
