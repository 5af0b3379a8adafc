// The one WebSocket to /api/v1/stream: reconnects with exponential backoff
// and jitter, and `resume` so a reconnect misses nothing. It sends no
// heartbeats: the server pings, and the browser answers by itself, even
// from a background tab whose timers are throttled or frozen. Where
// WebSockets are blocked, the same stream comes as Server-Sent Events
// (events.js picks which for each dial).

import { Transport } from './events.js';

const BACKOFF_BASE_MS = 500;
// Capped low: after an outage every client is back within seconds, and the
// jitter spreads them over the cap. Failures that go on past
// BACKOFF_SHORT_TRIES in a row are no blip: the cap rises to
// BACKOFF_LONG_CAP_MS, so that a server refusing for long is not dialled
// by every client every few seconds for as long as it lasts.
const BACKOFF_CAP_MS = 5000;
const BACKOFF_SHORT_TRIES = 5;
const BACKOFF_LONG_CAP_MS = 30000;
// Of the dials in a row that bring no `ready`, the first and every
// CHECK_EVERY-th after it ask /me whether the session is still there.
const CHECK_EVERY = 4;
// The reasons of a 1008 close that mean the session is over (docs/API.md,
// "Close codes"); 1008 also fails a stream for too many frames, which a
// reconnect gets over.
const SIGNED_OUT_REASONS = new Set(['signed out', 'session ended', 'account suspended']);
// The close of a draining instance (1001, after a `reconnect` frame): come
// back at once, or within the frame's within_ms, to another instance. A
// 1001 of another reason (a shutdown past its drain) is met with the backoff.
const CLOSE_GOING_AWAY = 1001;
const DRAINING_REASON = 'server draining: reconnect';
// A connection must stay up this long before a drop counts as a fresh
// failure; otherwise a server that accepts and at once closes (1013) would
// be redialled in a tight loop.
const STABLE_MS = 10000;

/**
 * backoffDelay is the wait before reconnect attempt n (0-based): the
 * exponential step, capped (higher from attempt BACKOFF_SHORT_TRIES on),
 * with "equal jitter" (half fixed, half random) so a restarted server is
 * not hit by every client at the same instant.
 */
export function backoffDelay(attempt, random = Math.random) {
  const cap = attempt < BACKOFF_SHORT_TRIES ? BACKOFF_CAP_MS : BACKOFF_LONG_CAP_MS;
  const step = Math.min(cap, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 16));
  return Math.round(step / 2 + random() * (step / 2));
}

/** streamURL is ws(s)://<this host>/api/v1/stream, matching the page's scheme. */
export function streamURL(loc = location) {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${loc.host}/api/v1/stream`;
}

/**
 * Stream keeps one connection open while started.
 *
 * handlers:
 *  onReady(frame)      the `ready` frame of each (re)connection
 *  onFrame(frame)      every later frame
 *  onState(state, i)   'connecting' | 'live' | 'offline'; i = {attempt, retryAt}
 *  resumeAfter()       highest home status id seen, or null to skip resume
 *  onSignedOut(reason) the server closed with 1008 for an ended session (reason:
 *                      the close's, such as 'account suspended'), or /me says
 *                      it is gone (reason: '')
 *  checkSession()      resolves true/false (signed in?) or rejects if unknown
 */
export class Stream {
  constructor(handlers) {
    this.h = handlers;
    this.ws = null;
    this.stopped = true;
    this.attempt = 0;
    // Dials in a row that brought no `ready`: counted apart from attempt,
    // which the drop of a live connection has already raised by the time
    // the first redial fails.
    this.failedDials = 0;
    this.retryTimer = 0;
    this.retryAt = 0;
    this.state = 'offline';
    this.transport = new Transport(this, streamURL);
    this.onOnline = () => this.retryNow();
    this.onOffline = () => {
      if (this.state !== 'live') this.setState('offline');
    };
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.attempt = 0;
    this.failedDials = 0;
    window.addEventListener('online', this.onOnline);
    window.addEventListener('offline', this.onOffline);
    this.connect();
  }

  /** stop closes the connection on purpose; nothing reconnects afterwards. */
  stop() {
    this.stopped = true;
    window.removeEventListener('online', this.onOnline);
    window.removeEventListener('offline', this.onOffline);
    clearTimeout(this.retryTimer);
    this.transport.stop();
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, 'bye');
    this.setState('offline');
  }

  /** restart drops the connection and dials again at once: the transport changed. */
  restart() {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    const ws = this.ws;
    this.ws = null;
    if (ws) ws.close(1000, 'switching');
    this.connect();
  }

  /**
   * dropSilent drops ws, which brought no `ready` in time, and dials again
   * after the backoff, as after any failed dial: what opens sockets and
   * sends nothing on them is not dialled again at once, forever.
   */
  dropSilent(ws) {
    if (this.stopped || this.ws !== ws) return;
    this.ws = null;
    ws.close(1000, 'no ready');
    this.scheduleRetry(true);
  }

  /** retryNow skips the rest of a backoff wait. */
  retryNow() {
    if (this.stopped || this.ws) return;
    clearTimeout(this.retryTimer);
    this.connect();
  }

  send(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
  }

  setState(state) {
    this.state = state;
    if (this.h.onState) this.h.onState(state, { attempt: this.attempt, retryAt: this.retryAt });
  }

  connect() {
    this.retryAt = 0;
    this.setState('connecting');
    let ws;
    try {
      ws = this.transport.dial();
    } catch (err) {
      // Only a malformed URL throws here; treat it like a failed dial.
      console.warn('stream: cannot open', err);
      this.scheduleRetry(false);
      return;
    }
    this.ws = ws;
    let readyAt = 0;
    let reconnectWithin = 0; // the `reconnect` frame's within_ms

    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      let frame;
      try {
        frame = JSON.parse(ev.data);
      } catch {
        console.warn('stream: not JSON', ev.data);
        return;
      }
      if (!frame || typeof frame.type !== 'string') return;
      if (frame.type === 'reconnect') {
        reconnectWithin = Math.max(0, Number(frame.within_ms) || 0);
        return;
      }
      if (frame.type === 'ready') {
        readyAt = Date.now();
        this.failedDials = 0;
        this.transport.ready(ws);
        this.setState('live');
        this.h.onReady(frame);
        // After ready, so the server knows who we are; the feed dedupes
        // anything that also arrives live.
        const after = this.h.resumeAfter();
        if (after !== null && after !== undefined) this.send({ type: 'resume', after });
        return;
      }
      this.h.onFrame(frame);
    };

    ws.onclose = (ev) => {
      if (this.ws !== ws) return; // a socket we already gave up on
      this.ws = null;
      this.transport.closed(ws, readyAt !== 0);
      if (this.stopped) return;
      if (ev.code === 1008 && SIGNED_OUT_REASONS.has(ev.reason)) {
        this.stop();
        this.h.onSignedOut(ev.reason);
        return;
      }
      if (ev.code === CLOSE_GOING_AWAY && ev.reason === DRAINING_REASON) {
        // A drain, not a failure: no backoff.
        this.attempt = 0;
        this.scheduleIn(Math.round(Math.random() * reconnectWithin));
        return;
      }
      if (readyAt && Date.now() - readyAt >= STABLE_MS) this.attempt = 0;
      // Any other 1008 (too many frames, or a reason this client predates)
      // says nothing of the session: back after the backoff, asking /me
      // meanwhile in case it did end.
      this.scheduleRetry(readyAt === 0, ev.code === 1008);
    };
    // An error is always followed by close, which does the work.
    ws.onerror = () => {};
  }

  // scheduleRetry dials again after the backoff. neverReady: the dial
  // failed before `ready`. A browser cannot see the HTTP status of a
  // refused upgrade, so ask /me whether we were signed out rather than
  // redialling a 401 forever: on the first such failure in a row and every
  // CHECK_EVERY-th after it, not on each (a refusal that lasts would have
  // every client ask every few seconds). check: ask this time regardless.
  scheduleRetry(neverReady, check = false) {
    const ask = check || (neverReady && this.failedDials % CHECK_EVERY === 0);
    if (neverReady) this.failedDials++;
    const delay = backoffDelay(this.attempt);
    this.attempt++;
    this.scheduleIn(delay);
    if (ask && this.h.checkSession) {
      this.h.checkSession().then(
        (signedIn) => {
          if (!signedIn && !this.stopped) {
            this.stop();
            this.h.onSignedOut('');
          }
        },
        () => {}, // unreachable server: keep backing off
      );
    }
  }

  /** scheduleIn connects again after delay ms. */
  scheduleIn(delay) {
    this.retryAt = Date.now() + delay;
    this.setState(navigator.onLine === false ? 'offline' : 'connecting');
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}
