// Display names by login. A status carries its author's name (statuses from
// before names were stored carry only the login): for those, the name comes
// from here, learned from every user object and status the client sees
// (lists, profiles, friends, the stream), and otherwise asked of
// GET /users/{login} once per author and session, a few at a time.

import { api, userPath } from './api.js';

const MAX_KNOWN = 5000;
const AT_ONCE = 3;

const known = new Map(); // lower-case login → name
const asked = new Map(); // lower-case login → Promise<name | ''>
const queue = [];
let running = 0;

const key = (login) => String(login).toLowerCase();

/** learnName records the name of a user object ({login, name}). */
export function learnName(user) {
  if (!user || !user.login || typeof user.name !== 'string') return;
  if (known.size >= MAX_KNOWN) known.clear();
  known.set(key(user.login), user.name);
}

/** knownName is the name of login if already known, else undefined. */
export function knownName(login) {
  return known.get(key(login));
}

/** nameOf resolves to the name of login ('' when it cannot be had now). */
export function nameOf(login) {
  const k = key(login);
  if (known.has(k)) return Promise.resolve(known.get(k));
  if (!asked.has(k)) {
    // Bounded as known is: a long session meets more authors than it
    // should remember (one still being asked for resolves all the same).
    if (asked.size >= MAX_KNOWN) asked.clear();
    asked.set(k, new Promise((resolve) => {
      queue.push({ login, resolve });
      pump();
    }));
  }
  return asked.get(k);
}

function pump() {
  while (running < AT_ONCE && queue.length > 0) {
    const { login, resolve } = queue.shift();
    running++;
    api('GET', userPath(login)).then((res) => {
      learnName(res.user);
      resolve(res.user.name || '');
    }, () => {
      // Not kept: a later status of theirs asks again.
      asked.delete(key(login));
      resolve('');
    }).finally(() => {
      running--;
      pump();
    });
  }
}
