// History routing. The server answers every page below with index.html
// (web/client.go clientPages), so each is a real address that can be shared,
// reloaded and opened in a new tab. Links are plain <a href>s; a click on
// one is turned into history.pushState here, and back/forward into popstate.

// ROUTES: the client's pages. A new page is a line here, a builder in
// app.js's PAGES, and its path in clientPages on the server.
const ROUTES = [
  { name: 'home', pattern: /^\/$/ },
  { name: 'global', pattern: /^\/global$/ },
  { name: 'profile', pattern: /^\/u\/([^/]+)$/, keys: ['login'] },
  { name: 'followers', pattern: /^\/u\/([^/]+)\/followers$/, keys: ['login'] },
  { name: 'following', pattern: /^\/u\/([^/]+)\/following$/, keys: ['login'] },
  { name: 'status', pattern: /^\/s\/([1-9][0-9]*)$/, keys: ['id'] },
  { name: 'search', pattern: /^\/search$/ },
  { name: 'lists', pattern: /^\/lists$/ },
  { name: 'list', pattern: /^\/lists\/([1-9][0-9]*)$/, keys: ['id'] },
  { name: 'notifications', pattern: /^\/notifications$/ },
  { name: 'settings', pattern: /^\/settings$/ },
  { name: 'admin', pattern: /^\/admin$/ },
];

/** parseRoute turns a path ("/u/ada") into {name, path, ...params}; unknown paths are "notfound". */
export function parseRoute(pathname) {
  const path = String(pathname || '/').replace(/(.)\/+$/, '$1');
  for (const r of ROUTES) {
    const m = path.match(r.pattern);
    if (!m) continue;
    const route = { name: r.name, path };
    try {
      (r.keys || []).forEach((k, i) => { route[k] = decodeURIComponent(m[i + 1]); });
    } catch {
      break; // a malformed %-escape names nothing
    }
    return route;
  }
  return { name: 'notfound', path };
}

/** profileHref is the address of a user's profile, or of one of its lists with rest "/followers". */
export function profileHref(login, rest = '') {
  return `/u/${encodeURIComponent(login)}${rest}`;
}

/** listHref is the address of a list's own page. */
export function listHref(id) {
  return `/lists/${encodeURIComponent(id)}`;
}

/** statusHref is the address of a status's own page. */
export function statusHref(id) {
  return `/s/${encodeURIComponent(id)}`;
}

let onChange = () => {};

/**
 * navigate shows path: a new history entry (or, with replace, the current
 * one rewritten), then the page. state rides along in history.state.
 */
export function navigate(path, { replace = false, state = null } = {}) {
  rememberScroll();
  const entry = { ...(state || {}) };
  if (replace) history.replaceState(entry, '', path);
  else if (path !== location.pathname + location.search || state) history.pushState(entry, '', path);
  onChange({ pop: false });
}

// The scroll position of the page being left, so that "back" returns to it.
function rememberScroll() {
  const cur = history.state || {};
  history.replaceState({ ...cur, scrollY: window.scrollY }, '');
}

/** savedScroll is where the page shown by back/forward had been scrolled to, if known. */
export function savedScroll() {
  const y = history.state && history.state.scrollY;
  return Number.isFinite(y) ? y : null;
}

// legacyPath maps an old "#/u/ada" link onto "/u/ada"; null for other hashes
// ("#main" is the skip link's) and for one that would leave this origin:
// "#//evil.example" (or "#/\evil.example", or "#/.//evil.example" once
// resolved) reads as a protocol-relative address, which
// history.replaceState refuses with an exception.
function legacyPath(hash) {
  if (!hash.startsWith('#/')) return null;
  let url;
  try {
    url = new URL(hash.slice(1), location.origin);
  } catch {
    return null;
  }
  if (url.origin !== location.origin || url.pathname.startsWith('//')) return null;
  return url.pathname + url.search;
}

// routable answers the path a click on `a` should show without a page load,
// or null when the browser should follow it itself.
function routable(a, ev) {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return null;
  if ((a.target && a.target !== '_self') || a.hasAttribute('download')) return null;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return null;
  const legacy = legacyPath(url.hash);
  if (legacy) return legacy;
  // Only the hash differs: an in-page link such as the skip link.
  if (url.hash && url.pathname === location.pathname && url.search === location.search) return null;
  if (parseRoute(url.pathname).name === 'notfound') return null;
  return url.pathname + url.search;
}

/**
 * startRouter calls show({pop}) for the page now at the address, and again
 * each time it changes: a routed click, navigate, or back/forward (pop).
 */
export function startRouter(show) {
  onChange = show;
  if ('scrollRestoration' in history) history.scrollRestoration = 'manual';
  const legacy = legacyPath(location.hash);
  if (legacy) history.replaceState(null, '', legacy);

  document.addEventListener('click', (ev) => {
    const a = ev.target instanceof Element && ev.target.closest('a[href]');
    if (!a) return;
    const path = routable(a, ev);
    if (path === null) return;
    ev.preventDefault();
    navigate(path);
  });
  window.addEventListener('popstate', () => onChange({ pop: true }));
  // An old "#/..." link followed from within the page.
  window.addEventListener('hashchange', () => {
    const path = legacyPath(location.hash);
    if (path) navigate(path, { replace: true });
  });
  onChange({ pop: false, first: true });
}
