// What the header's connection indicator says. "Live" needs three things:
// the stream is open, the server says it can serve (the stream's `service`
// frames), and API calls are being answered (no 503, no timeout, no
// network failure since the last good answer).

const PROBE_MS = 10000;
const PROBE_TIMEOUT_MS = 5000;

/** Health combines what it is told and calls onChange(view) when the indicator should change. */
export class Health {
  constructor(onChange) {
    this.onChange = onChange;
    this.stream = 'connecting';
    this.info = { attempt: 0, retryAt: 0 };
    this.serviceUp = true;
    this.apiUp = true;
    this.probeTimer = 0;
    this.stopped = false;
  }

  /** setStream takes the Stream's state; a fresh `ready` means the server could serve then. */
  setStream(state, info) {
    this.stream = state;
    this.info = info;
    this.emit();
  }

  /** setService takes a `service` frame's `available`, or true on `ready`. */
  setService(available) {
    this.serviceUp = available;
    if (available) this.apiUp = true; // the server says it is well again
    this.emit();
  }

  /** setApi takes the outcome of an API call. */
  setApi(ok) {
    if (ok === this.apiUp) return;
    this.apiUp = ok;
    if (!ok) this.probeSoon();
    this.emit();
  }

  // While calls fail and nothing else would tell us it is over (the page
  // may make no call for minutes), ask /readyz now and then.
  probeSoon() {
    clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(() => this.probe(), PROBE_MS);
  }

  async probe() {
    if (this.stopped || this.apiUp) return;
    let ok = false;
    try {
      const res = await fetch('/readyz', { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS), cache: 'no-store' });
      ok = res.ok;
    } catch {
      ok = false;
    }
    if (this.stopped) return;
    if (ok) this.setApi(true);
    else this.probeSoon();
  }

  /** view is what the indicator shows: {state, label, title, retryAt}. */
  view() {
    const { attempt, retryAt } = this.info;
    if (this.stream === 'live' && this.serviceUp && this.apiUp) {
      return { state: 'live', label: 'Live', title: 'Connected: new posts and friends’ comings and goings appear as they happen.' };
    }
    if (this.stream === 'live') {
      return {
        state: 'trouble',
        label: 'Server trouble',
        title: 'Chorus cannot reach its data store right now. Posting and live updates may fail; this page catches up by itself when it recovers.',
      };
    }
    if (this.stream === 'offline') {
      return { state: 'offline', label: 'Offline', title: 'Not connected. New posts will appear once the connection is back.', retryAt };
    }
    return { state: 'connecting', label: attempt > 0 ? 'Reconnecting…' : 'Connecting…', title: '', retryAt };
  }

  emit() {
    if (!this.stopped) this.onChange(this.view());
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.probeTimer);
  }
}
