// Hash routes: #/ home, #/global, #/u/<login>, #/u/<login>/followers,
// #/u/<login>/following. Hash routing needs nothing from the server beyond
// serving index.html at "/".

/** parseRoute turns a location hash into {name, login?}. */
export function parseRoute(hash) {
  const path = String(hash || '').replace(/^#/, '') || '/';
  if (path === '/' || path === '') return { name: 'home' };
  if (path === '/global' || path === '/global/') return { name: 'global' };
  const m = path.match(/^\/u\/([^/]+)(?:\/(followers|following))?\/?$/);
  if (m) {
    let login;
    try {
      login = decodeURIComponent(m[1]);
    } catch {
      return { name: 'notfound' };
    }
    return { name: m[2] || 'profile', login };
  }
  return { name: 'notfound' };
}
