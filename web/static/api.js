// A thin fetch wrapper for /api/v1. The session lives in the HttpOnly
// `chorus_session` cookie, so requests only need credentials: 'same-origin'
// and the client never sees or stores a token.

import { setServerOffset } from './time.js';

const BASE = '/api/v1';

/** ApiError carries the API's `{"error": {code, message}}`, or a stand-in. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'ApiError';
    this.status = status; // 0 when the server could not be reached
    this.code = code;
  }
}

/** TIMEOUT_MS: how long any call waits for its answer before giving up. */
const TIMEOUT_MS = 10000;

let onUnauthorized = null;
let onHealth = null;

/** setUnauthorizedHandler registers what to do when any call answers 401. */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/**
 * setHealthHandler registers fn(ok): false after a call the server could
 * not serve (503, no answer, a timeout), true after one it answered.
 */
export function setHealthHandler(fn) {
  onHealth = fn;
}

// Used when a response carries no API error body (a proxy's 502, say).
function fallbackMessage(status) {
  if (status === 401) return 'Please sign in.';
  if (status === 404) return 'There is nothing here.';
  if (status === 413) return 'That is too large to send.';
  if (status === 429) return 'Too many attempts; please wait a little and try again.';
  if (status >= 500) return 'The server is having trouble; please try again shortly.';
  return `The request failed (HTTP ${status}).`;
}

function report(ok) {
  if (onHealth) onHealth(ok);
}

/**
 * api calls `method path` with an optional JSON body and resolves to the
 * decoded answer (null for 204). It rejects with an ApiError (code
 * "timeout" when no answer came within `timeout` ms, "network" when the
 * server could not be reached), or with the AbortError when `signal` aborts.
 */
export async function api(method, path, body, { signal, timeout = TIMEOUT_MS } = {}) {
  // One controller for both ways of giving up: the caller's signal and the clock.
  const ctl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ctl.abort();
  }, timeout);
  const forward = () => ctl.abort(signal.reason);
  if (signal) {
    if (signal.aborted) ctl.abort(signal.reason);
    else signal.addEventListener('abort', forward, { once: true });
  }
  const init = { method, credentials: 'same-origin', signal: ctl.signal, headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  try {
    return await send(path, init);
  } catch (err) {
    if (!isAbort(err)) throw err;
    if (!timedOut) throw err;
    report(false);
    const secs = Math.round(timeout / 1000);
    throw new ApiError(0, 'timeout', `Chorus did not answer within ${secs} seconds. Please try again in a moment.`);
  } finally {
    clearTimeout(timer);
    if (signal) signal.removeEventListener('abort', forward);
  }
}

async function send(path, init) {
  let res;
  try {
    res = await fetch(BASE + path, init);
  } catch (err) {
    if (isAbort(err)) throw err;
    report(false);
    throw new ApiError(0, 'network', 'Could not reach the server. Check your connection and try again.');
  }
  const date = res.headers.get('Date');
  if (date) setServerOffset(new Date(date).getTime() - Date.now());

  let data = null;
  if (res.status !== 204) {
    try {
      data = await res.json();
    } catch (err) {
      if (isAbort(err)) throw err;
      data = null; // not JSON; fall back below
    }
  }
  report(res.status < 500);
  if (!res.ok) {
    const e = data && data.error;
    const apiErr = new ApiError(res.status, (e && e.code) || `http_${res.status}`, (e && e.message) || fallbackMessage(res.status));
    if (res.status === 401 && onUnauthorized) onUnauthorized(apiErr);
    throw apiErr;
  }
  return data;
}

/** isAbort says whether err is a cancelled request, which nobody should report. */
export function isAbort(err) {
  return err && err.name === 'AbortError';
}

/** query builds "?a=1&b=2" from the non-null entries of params. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== null && v !== undefined) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** userPath is /users/<login> with the login escaped for a URL. */
export function userPath(login, rest = '') {
  return `/users/${encodeURIComponent(login)}${rest}`;
}
