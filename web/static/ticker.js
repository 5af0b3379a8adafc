// A dedicated worker that ticks at a given pace. A hidden tab's own timers
// may be throttled to once a minute (Chrome's intensive throttling), far
// slower than the heartbeat the server needs to keep us online; a worker's
// timers are not. Messages in: {every: ms} to start, {every: 0} to stop.
let timer = 0;
self.onmessage = (ev) => {
  clearInterval(timer);
  const every = ev.data && ev.data.every;
  if (every > 0) timer = setInterval(() => self.postMessage('tick'), every);
};
