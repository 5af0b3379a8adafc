// The stream's way in when WebSockets are blocked (a corporate proxy, a
// network that refuses the upgrade, antivirus that accepts it and then
// delivers nothing): the same stream as Server-Sent Events, with what the
// client sends posted by REST (docs/API.md, "Server-Sent Events").
//
// Transport chooses, for each dial of the Stream (stream.js), a WebSocket
// or an EventSocket. It falls back to events when a WebSocket does not
// open, or opens and brings no `ready` within READY_WAIT_MS; while on
// events it tries a WebSocket again every so often, beside the live event
// stream, and switches back once one brings its `ready`.

import { api } from './api.js';

/**
 * FRAME_TYPES are the types of the frames the server sends (protocol/frames.go),
 * each an event of that name on an event stream, and `message` (a frame
 * without a type).
 */
const FRAME_TYPES = [
  'ready', 'status', 'status_deleted', 'presence', 'friend_removed', 'followed', 'profile', 'relation',
  'service', 'error', 'notification', 'notification_removed', 'notifications_removed',
  'notifications_read', 'watching', 'global_status', 'global_status_deleted', 'thread_status',
  'thread_status_deleted', 'reconnect', 'close', 'message',
];

/** READY_WAIT_MS: how long a dial may go without its `ready` before it counts as failed. */
const READY_WAIT_MS = 5000;

// How long a client on events waits, on average, before trying a WebSocket
// again: each wait is drawn from half to one and a half times this, so that
// clients moved to events together (a network change) do not all come back
// at the same instant.
let webSocketRetryMs = 120000;

/**
 * setWebSocketRetry sets how long a client on events waits, on average,
 * before trying a WebSocket again (from its next dial); for a page that
 * knows its network.
 */
export function setWebSocketRetry(ms) {
  if (Number.isFinite(ms) && ms > 0) webSocketRetryMs = ms;
}

/**
 * EventSocket is an event stream (EventSource) dressed as the WebSocket the
 * Stream drives: onmessage gets each frame's text, send posts a frame for
 * the stream by REST, the server's `close` frame (or a failed connection)
 * ends it with the close code the WebSocket would have had. The browser's
 * own reconnecting is stopped: the Stream reconnects, with its backoff and
 * its `resume`.
 */
export class EventSocket {
  constructor(url) {
    this.readyState = 0; // WebSocket.CONNECTING
    this.onmessage = null;
    this.onclose = null;
    this.onerror = null;
    this.id = null; // the stream's id, from its `ready`
    // The frames posted so far, each after the answer to the one before:
    // two POSTs in flight at once could be acted on in either order (an
    // unwatch overtaken by the watch sent after it).
    this.posted = Promise.resolve();
    // Same origin: the session cookie goes without withCredentials.
    this.es = new EventSource(url);
    this.es.onopen = () => {
      if (this.readyState === 0) this.readyState = 1; // WebSocket.OPEN
    };
    // Each frame is an event named after its type: one listener for each
    // type there is (a type missing here is not heard).
    const onEvent = (ev) => {
      if (this.readyState === 3 || typeof ev.data !== 'string') return; // not a frame: a failure (below)
      let frame;
      try {
        frame = JSON.parse(ev.data);
      } catch {
        return; // the Stream would drop it too
      }
      if (frame && frame.type === 'close') {
        this.end(frame.close_code || 1006, frame.reason || '');
        return;
      }
      if (frame && frame.type === 'ready' && typeof frame.stream === 'string') this.id = frame.stream;
      if (this.onmessage) this.onmessage({ data: ev.data });
    };
    for (const type of FRAME_TYPES) this.es.addEventListener(type, onEvent);
    // A network failure or a refusal (401, 429, 503): over, as a
    // WebSocket's failed dial is. An `error` frame comes as an event of the
    // same name, with data: heard above, no failure.
    this.es.onerror = (ev) => {
      if (typeof ev.data !== 'string') this.end(1006, '');
    };
  }

  send(data) {
    if (this.readyState !== 1 || !this.id) return;
    let frame;
    try {
      frame = JSON.parse(data);
    } catch {
      return;
    }
    const path = '/stream/' + encodeURIComponent(this.id);
    this.posted = this.posted
      .then(() => api('POST', path, frame))
      .catch((err) => {
        console.warn('stream: frame not sent:', err.message);
      });
  }

  close(code = 1000, reason = '') {
    this.end(code, reason);
  }

  end(code, reason) {
    if (this.readyState === 3) return;
    this.readyState = 3; // WebSocket.CLOSED
    this.es.close();
    const onclose = this.onclose;
    if (onclose) setTimeout(() => onclose({ code, reason, wasClean: code !== 1006 }), 0);
  }
}

/** eventsURL is the stream's address for an EventSource: this origin's. */
export function eventsURL() {
  return '/api/v1/stream';
}

/**
 * Transport picks what each dial of stream opens, and moves it between a
 * WebSocket and events. The Stream tells it of each socket's `ready`
 * (ready) and end (closed); it has the Stream drop a socket that brought no
 * `ready` in time and dial again after the backoff (dropSilent), and dial
 * again at once (restart) when it finds a WebSocket works again.
 */
export class Transport {
  constructor(stream, webSocketURL) {
    this.stream = stream;
    this.webSocketURL = webSocketURL;
    this.mode = 'websocket';
    this.failures = 0; // WebSocket dials in a row that brought no `ready`
    this.everLive = false; // a WebSocket of this page brought its `ready`
    this.watchdog = 0;
    this.retryTimer = 0;
    this.probe = null; // a WebSocket trying its luck beside the live events
    this.checks = 0; // reachability checks asked so far (checkReachable)
    this.asking = 0; // the one whose answer still counts, 0 when none does
  }

  /** dial opens a socket of the current mode. */
  dial() {
    clearTimeout(this.watchdog);
    const ws = this.mode === 'events' ? new EventSocket(eventsURL()) : new WebSocket(this.webSocketURL());
    // Events that bring nothing either: try a WebSocket again.
    const wait = this.mode === 'events' ? 2 * READY_WAIT_MS : READY_WAIT_MS;
    this.watchdog = setTimeout(() => this.silent(ws), wait);
    return ws;
  }

  /** ready: ws, the Stream's socket, brought its `ready`. */
  ready(ws) {
    clearTimeout(this.watchdog);
    this.asking = 0;
    if (ws instanceof EventSocket) {
      this.planRetry();
    } else {
      this.mode = 'websocket';
      this.failures = 0;
      this.everLive = true;
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    // A probe kept the user online while the Stream switched: done.
    if (this.probe) {
      this.probe.close(1000, 'switched');
      this.probe = null;
    }
    document.body.dataset.transport = this.mode; // what the page is on, for whoever asks
  }

  /** closed: ws, the Stream's socket, ended, after its `ready` or not. */
  closed(ws, wasReady) {
    clearTimeout(this.watchdog);
    if (!wasReady) this.failed(ws);
  }

  /** silent: ws brought no `ready` in time. */
  silent(ws) {
    if (this.stream.ws !== ws) return;
    this.failed(ws);
    this.stream.dropSilent(ws);
  }

  failed(ws) {
    if (this.probe) {
      this.probe.close(1000, 'gave up');
      this.probe = null;
    }
    if (ws instanceof EventSocket) {
      this.mode = 'websocket'; // not the events either: the next dial tries a WebSocket
      return;
    }
    this.failures++;
    // One failed dial is enough on a page that never had a WebSocket.
    if (!this.everLive) {
      this.mode = 'events';
      this.failures = 0;
      return;
    }
    // One that had needs two in a row, and a server that answers: a
    // WebSocket that worked on this page and fails now is most often the
    // server restarting, whose events fail too. Were those dials counted,
    // every client of a restart of a second or more would come back on
    // events, and all of them try a WebSocket again, and resume, together.
    if (this.failures >= 2) {
      this.failures = 0;
      this.checkReachable();
    }
  }

  /**
   * checkReachable asks the server, with a HEAD of the event stream (which
   * opens nothing, costs Redis nothing and counts toward no limit), whether
   * it answers at all: if it does, the WebSocket's way is what fails, and
   * the next dial goes to events; if it does not (no answer, or a 5xx of a
   * proxy in front of an instance that is down), the WebSocket stays, to be
   * dialled again after the backoff. A dial made before the answer is a
   * WebSocket still.
   */
  checkReachable() {
    const serial = ++this.checks;
    this.asking = serial;
    fetch(eventsURL(), {
      method: 'HEAD',
      headers: { Accept: 'text/event-stream' },
      cache: 'no-store',
      signal: AbortSignal.timeout(READY_WAIT_MS),
    }).then((res) => res.status < 500, () => false).then((answers) => {
      if (this.asking !== serial || this.stream.stopped) return; // a dial has brought its `ready` since
      this.asking = 0;
      if (answers && this.mode === 'websocket') this.mode = 'events';
    });
  }

  /**
   * planRetry tries a WebSocket again later, while events carry the stream:
   * a try already planned stands, so that events reconnecting more often
   * than the retry's delay (a proxy that cuts long answers) do not put it
   * off for good.
   */
  planRetry() {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.tryWebSocket();
    }, Math.round(webSocketRetryMs * (0.5 + Math.random())));
  }

  /**
   * tryWebSocket opens a WebSocket beside the live events. Once it brings
   * its `ready`, the Stream switches to a WebSocket, the probe holding the
   * user online meanwhile; else events go on, and it tries again later.
   */
  tryWebSocket() {
    if (this.mode !== 'events' || this.probe || this.stream.stopped) return;
    const probe = new WebSocket(this.webSocketURL());
    this.probe = probe;
    let works = false;
    // No `ready` in time: given up at once, not when the browser is done
    // closing it (a proxy that passes nothing never answers the close).
    const giveUp = () => {
      probe.onclose = null;
      probe.close();
      if (this.probe === probe) this.probe = null;
      if (this.mode === 'events' && !this.stream.stopped) this.planRetry();
    };
    const timer = setTimeout(giveUp, READY_WAIT_MS);
    probe.onmessage = (ev) => {
      if (works) return;
      let frame;
      try {
        frame = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (!frame || frame.type !== 'ready') return;
      works = true;
      clearTimeout(timer);
      this.mode = 'websocket';
      this.stream.restart();
    };
    probe.onclose = () => {
      clearTimeout(timer);
      if (works) {
        if (this.probe === probe) this.probe = null;
        return;
      }
      giveUp();
    };
    probe.onerror = () => {};
  }

  /** stop ends whatever the transport holds open. */
  stop() {
    clearTimeout(this.watchdog);
    this.asking = 0;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.probe) {
      this.probe.close(1000, 'bye');
      this.probe = null;
    }
  }
}
