// The moderation page, /admin, for the admins the server names (their own
// user object says "admin": true): open reports first, with the statuses
// reported, each resolved or its account suspended from here; the resolved
// reports below; the suspended accounts, each with "Lift suspension"; the
// sign-ups waiting for approval; and the audit log, newest first. Each list
// shows a page and reads a page more per "Load more". Anyone else finds no
// such page, and the page asks the server nothing for them.

import { h, announce, loginEl, plural, confirmControls, sameLogin } from './dom.js';
import { api, isAbort, query } from './api.js';
import { profileHref, statusHref } from './router.js';
import { heading } from './page.js';
import { messageNodes } from './status.js';
import { timeEl } from './time.js';
import { notFoundView } from './views.js';

// The server's page sizes (docs/API.md, Reports and suspensions; Who may join).
const REPORTS_PAGE = 20;
const USERS_PAGE = 100;
const LOG_PAGE = 50;

// How the audit log's actions read: "@root suspended @bob".
const ACTIONS = {
  approve: 'approved the sign-up of',
  resolve_report: 'resolved a report on',
  suspend: 'suspended',
  unsuspend: 'lifted the suspension of',
};

const enc = encodeURIComponent;

/** isAdmin says whether the signed-in user me may see the moderation page. */
export function isAdmin(me) {
  return Boolean(me && me.admin === true);
}

// section is a titled part of the page: its h2 (a focus target after an
// action empties the part), a note saying it is loading, empty or why it
// failed, and its list.
function section(title, testid) {
  const h2 = h('h2', { class: 'admin-heading', tabindex: '-1', id: `${testid}-heading` }, title);
  const note = h('p', { class: 'timeline-note', role: 'status', dataset: { testid: `${testid}-note` } }, 'Loading…');
  const list = h('ul', { class: 'list-rows admin-rows', 'aria-labelledby': `${testid}-heading`, dataset: { testid } });
  const el = h('section', { class: 'card admin-section', 'aria-labelledby': `${testid}-heading` }, h2, note, list);
  return { el, h2, note, list };
}

// who is a person as the page names them: name and @login, linked to
// their profile unless link is false (a suspended profile answers 404).
function who(user, { link = true, testid } = {}) {
  // A deleted account is its id alone.
  if (!user.login) return h('span', { class: 'admin-who muted', dataset: { testid } }, 'a deleted account');
  const body = [h('span', { class: 'admin-name' }, user.name || user.login), ' ', loginEl(user.login)];
  const attrs = { class: 'admin-who', dataset: { testid, login: user.login } };
  return link ? h('a', { ...attrs, href: profileHref(user.login) }, body) : h('span', attrs, body);
}

// actionError is the line under an item that says why its action failed.
function actionError() {
  return h('p', { class: 'status-error', role: 'alert', hidden: true, dataset: { testid: 'admin-action-error' } });
}

/** adminView: the moderation page; to anyone but an admin, no page at all. */
export function adminView(ctx) {
  const me = ctx.me();
  if (!isAdmin(me)) return notFoundView();

  const h1 = heading('Moderation');
  const abort = new AbortController();
  const signal = abort.signal;
  const open = section('Open reports', 'reports-open');
  const resolved = section('Resolved reports', 'reports-resolved');
  const suspended = section('Suspended accounts', 'suspended');
  const approvals = section('Sign-ups waiting for approval', 'approvals');
  const log = section('Audit log, newest first', 'audit-log');
  approvals.el.hidden = true; // shown when any sign-up waits
  const el = h('div', { class: 'view admin', dataset: { testid: 'admin' } },
    h('div', { class: 'page-head' }, h('div', {}, h1,
      h('p', { class: 'muted' }, 'Reports from members, suspended accounts, sign-ups waiting, and every admin action.'))),
    open.el, resolved.el, suspended.el, approvals.el, log.el);

  const fail = (part, what, err) => {
    if (isAbort(err)) return;
    part.note.textContent = `Could not load ${what}: ${err.message}`;
    part.el.hidden = false;
  };

  // pager is a list's "Load more" button, under part, and how many of the
  // list the page reads (shown): a page more per click, read by load.
  function pager(part, what, size, testid, load) {
    const button = h('button', { type: 'button', class: 'btn btn-secondary btn-small', hidden: true, dataset: { testid } }, `Load more ${what}`);
    part.el.append(h('div', { class: 'timeline-foot' }, button));
    const p = { shown: size, button };
    button.addEventListener('click', async () => {
      button.disabled = true;
      p.shown += size;
      try {
        await load();
      } catch (err) {
        fail(part, what, err);
      } finally {
        button.disabled = false;
      }
    });
    return p;
  }

  // readPages reads path's list (the answer's key) in pages of size, up to
  // p.shown (the server's page cap), and shows p's button while the last
  // page read was full.
  async function readPages(path, key, size, p) {
    const got = [];
    for (let offset = 0; offset < p.shown; offset += size) {
      const res = await api('GET', `${path}${query({ limit: size, offset })}`, undefined, { signal });
      const page = res[key] || []; // none: null
      got.push(...page);
      if (page.length < size) {
        p.button.hidden = true;
        return got;
      }
    }
    p.button.hidden = false;
    return got;
  }

  // run does an action of item's button: on failure it says why in error
  // and gives the button back; on success everything is read again and
  // then focus() says where the keyboard goes.
  async function run(button, error, act, said, focus) {
    button.disabled = true;
    error.hidden = true;
    try {
      await act();
    } catch (err) {
      if (isAbort(err)) return;
      error.textContent = err.message;
      error.hidden = false;
      button.disabled = false;
      button.focus();
      return;
    }
    announce(said);
    await refresh();
    focus();
  }

  // focusIn moves focus to the index-th of the buttons sel in part's list,
  // or the last one, or, when none is left, the part's heading.
  const focusIn = (part, sel, index) => {
    const all = part.list.querySelectorAll(sel);
    const target = all[Math.min(index, all.length - 1)] || part.h2;
    target.focus();
  };

  // ------------------------------------------------------------ reports

  function statusItem(st) {
    return h('li', { class: 'admin-status', dataset: { testid: 'report-status', id: String(st.id) } },
      h('p', { class: 'admin-status-text', dataset: { testid: 'report-status-text' } }, messageNodes(st.message || '', st.mentions)),
      h('a', { class: 'muted small', href: statusHref(st.id) }, timeEl(st.posted, { prefix: 'posted ' })));
  }

  function reportItem(r, index) {
    const account = r.account;
    const named = account.login ? `@${account.login}` : 'a deleted account';
    const facts = h('p', { class: 'admin-facts' },
      who(account, { link: !r.account_suspended, testid: 'report-account' }),
      h('span', { class: 'muted' }, ' reported by '),
      who(r.reporter, { testid: 'report-reporter' }),
      h('span', { class: 'muted' }, ', '), timeEl(r.created));
    const reason = h('p', { class: 'admin-reason', dataset: { testid: 'report-reason' } }, r.reason);
    const statuses = (r.statuses || []).length
      ? h('ul', { class: 'admin-statuses', 'aria-label': `Posts reported (${plural(r.statuses.length, 'post')})` }, r.statuses.map(statusItem))
      : h('p', { class: 'muted small' }, 'No posts are pointed at, or they are gone.');
    const li = h('li', { class: 'list-row admin-report', dataset: { testid: 'report', id: String(r.id), login: account.login || '' } },
      facts, reason, statuses);
    if (r.resolved) {
      li.append(h('p', { class: 'muted small', dataset: { testid: 'report-resolved' } },
        timeEl(r.resolved, { prefix: 'Resolved ' }),
        r.resolved_by && r.resolved_by.login ? [' by ', loginEl(r.resolved_by.login)] : null));
      return li;
    }
    const error = actionError();
    const resolve = h('button', {
      type: 'button', class: 'btn btn-secondary btn-small',
      'aria-label': `Resolve the report on ${named}`, dataset: { testid: 'report-resolve' },
    }, 'Resolve');
    resolve.addEventListener('click', () => run(resolve, error,
      () => api('POST', `/admin/reports/${enc(r.id)}/resolve`, undefined, { signal }),
      'Report resolved.',
      // The next open report takes its place; none left: the heading.
      () => focusIn(open, '[data-testid="report-resolve"]', index)));
    const actions = h('div', { class: 'admin-actions' }, resolve);
    if (!account.login || sameLogin(account.login, me.login)) {
      // A deleted account is gone already, and an admin cannot suspend
      // themselves: nothing to offer.
    } else if (r.account_suspended) {
      actions.append(h('span', { class: 'muted small', dataset: { testid: 'report-suspended' } }, 'Suspended'));
    } else {
      const c = confirmControls({
        label: `Suspend @${account.login}`,
        ariaLabel: `Suspend @${account.login}`,
        question: `Suspend @${account.login}? Their sessions end at once and their profile and posts are hidden from everyone until the suspension is lifted.`,
        busy: 'Suspending…',
        failure: 'Could not suspend',
        testid: 'report-suspend',
        act: async () => {
          await api('PUT', `/admin/suspensions/${enc(account.login)}`, undefined, { signal });
          announce(`@${account.login} is suspended.`);
          await refresh();
          // The report stays open: resolving it is what is left to do.
          const again = open.list.querySelector(`[data-testid="report"][data-id="${r.id}"] [data-testid="report-resolve"]`);
          (again || open.h2).focus();
        },
      });
      actions.append(c.open);
      li.append(actions, c.ask, c.error, error);
      return li;
    }
    li.append(actions, error);
    return li;
  }

  const reportsMore = pager(resolved, 'reports', REPORTS_PAGE, 'reports-more', loadReports);

  async function loadReports() {
    const got = await readPages('/admin/reports', 'reports', REPORTS_PAGE, reportsMore);
    const opened = got.filter((r) => !r.resolved);
    const closed = got.filter((r) => r.resolved);
    open.list.replaceChildren(...opened.map(reportItem));
    resolved.list.replaceChildren(...closed.map(reportItem));
    open.note.textContent = opened.length ? '' : 'No open reports.';
    resolved.note.textContent = closed.length ? '' : 'No resolved reports yet.';
  }

  // ------------------------------------------------------------ accounts

  function suspendedItem(u, index) {
    const error = actionError();
    const lift = h('button', {
      type: 'button', class: 'btn btn-secondary btn-small',
      'aria-label': `Lift the suspension of @${u.login}`, dataset: { testid: 'suspension-lift' },
    }, 'Lift suspension');
    lift.addEventListener('click', () => run(lift, error,
      () => api('DELETE', `/admin/suspensions/${enc(u.login)}`, undefined, { signal }),
      `The suspension of @${u.login} is lifted.`,
      () => focusIn(suspended, '[data-testid="suspension-lift"]', index)));
    return h('li', { class: 'list-row', dataset: { testid: 'suspended-user', login: u.login } },
      h('div', { class: 'list-row-main' }, who(u, { link: false }), lift), error);
  }

  const suspendedMore = pager(suspended, 'suspended accounts', USERS_PAGE, 'suspended-more', loadSuspended);

  async function loadSuspended() {
    const users = await readPages('/admin/suspensions', 'users', USERS_PAGE, suspendedMore);
    suspended.list.replaceChildren(...users.map(suspendedItem));
    suspended.note.textContent = users.length ? '' : 'No account is suspended.';
  }

  function pendingItem(u, index) {
    const error = actionError();
    const approve = h('button', {
      type: 'button', class: 'btn btn-primary btn-small',
      'aria-label': `Approve @${u.login}`, dataset: { testid: 'approval-approve' },
    }, 'Approve');
    approve.addEventListener('click', () => run(approve, error,
      () => api('PUT', `/admin/approvals/${enc(u.login)}`, undefined, { signal }),
      `@${u.login} may sign in now.`,
      () => focusIn(approvals, '[data-testid="approval-approve"]', index)));
    return h('li', { class: 'list-row', dataset: { testid: 'pending-user', login: u.login } },
      h('div', { class: 'list-row-main' }, who(u, { link: false }), approve), error);
  }

  const approvalsMore = pager(approvals, 'sign-ups waiting', USERS_PAGE, 'approvals-more', loadApprovals);

  async function loadApprovals() {
    const users = await readPages('/admin/approvals', 'users', USERS_PAGE, approvalsMore);
    approvals.list.replaceChildren(...users.map(pendingItem));
    // The part shows while any sign-up waits, and stays once shown, so
    // that focus after the last approval has its heading to go to.
    if (users.length) approvals.el.hidden = false;
    approvals.note.textContent = users.length ? '' : 'No sign-up is waiting.';
  }

  // ------------------------------------------------------------ the log

  function logItem(e) {
    return h('li', { class: 'list-row admin-log-entry', dataset: { testid: 'audit-entry', action: e.action, target: e.target } },
      h('p', {}, loginEl(e.admin), ` ${ACTIONS[e.action] || e.action} `, loginEl(e.target), ' ',
        h('span', { class: 'muted small' }, timeEl(e.at))));
  }

  const logMore = pager(log, 'audit log entries', LOG_PAGE, 'audit-log-more', loadLog);

  async function loadLog() {
    const entries = await readPages('/admin/log', 'entries', LOG_PAGE, logMore);
    log.list.replaceChildren(...entries.map(logItem));
    log.note.textContent = entries.length ? '' : 'No admin action yet.';
  }

  // refresh reads every part again; each part that fails says so itself.
  async function refresh() {
    await Promise.all([
      loadSuspended().catch((err) => fail(suspended, 'the suspended accounts', err)),
      loadReports().catch((err) => fail(open, 'reports', err)),
      loadApprovals().catch((err) => fail(approvals, 'sign-ups waiting', err)),
      loadLog().catch((err) => fail(log, 'the audit log', err)),
    ]);
    if (!signal.aborted) el.dataset.loaded = 'true';
  }

  refresh();
  return { el, title: 'Moderation', heading: h1, destroy() { abort.abort(); } };
}
