// Keyboard shortcuts, as Mastodon has them: j and k move between posts, o
// (or Enter) opens the one in focus, n goes to the composer, ? lists them.
// None acts while a field has the keyboard or a modifier key is held.

import { h, focusJustMoved } from './dom.js';
import { statusHref } from './router.js';

const SHORTCUTS = [
  ['j', 'Next post'],
  ['k', 'Previous post'],
  ['o', 'Open the post in focus (Enter too)'],
  ['n', 'Write a new post'],
  ['?', 'Show these shortcuts'],
  ['Esc', 'Close this list, or cancel'],
];

function typing(el) {
  return el instanceof Element && (el.isContentEditable || !!el.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]'));
}

function posts() {
  return [...document.querySelectorAll('main [data-testid="status"]')];
}

// The first post whose bottom is below the header: where j or k starts
// when no post has focus yet.
function firstInView(list) {
  const header = document.querySelector('.site-header');
  const top = header ? header.getBoundingClientRect().bottom : 0;
  return list.find((li) => li.getBoundingClientRect().bottom > top) || list[0];
}

function move(step) {
  const list = posts();
  if (list.length === 0) return;
  const current = document.activeElement && document.activeElement.closest('[data-testid="status"]');
  const i = list.indexOf(current);
  let next;
  if (i < 0) next = firstInView(list);
  else next = list[Math.min(list.length - 1, Math.max(0, i + step))];
  next.focus();
}

let dialog = null;

function help() {
  if (!dialog) {
    const close = h('button', { type: 'button', class: 'btn btn-secondary btn-small', dataset: { testid: 'shortcuts-close' } }, 'Close');
    dialog = h('dialog', { class: 'card shortcuts', 'aria-labelledby': 'shortcuts-heading', dataset: { testid: 'shortcuts' } },
      h('h2', { id: 'shortcuts-heading', class: 'panel-heading' }, 'Keyboard shortcuts'),
      h('dl', { class: 'shortcut-list' }, SHORTCUTS.map(([key, what]) => [h('dt', {}, h('kbd', {}, key)), h('dd', {}, what)])),
      h('p', { class: 'muted small' }, 'They do nothing while you type in a field.'),
      close,
    );
    close.addEventListener('click', () => dialog.close());
    // A click on the backdrop (outside the box) closes it too.
    dialog.addEventListener('click', (ev) => {
      if (ev.target === dialog) dialog.close();
    });
    document.body.append(dialog);
  }
  if (!dialog.open) dialog.showModal();
}

/**
 * startShortcuts listens for the shortcuts. compose() is called for n;
 * open(path) for o.
 */
export function startShortcuts({ compose, open }) {
  document.addEventListener('keydown', (ev) => {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing) return;
    if (typing(ev.target) || (dialog && dialog.open)) return;
    const onPost = ev.target instanceof Element && ev.target.matches('[data-testid="status"]');
    switch (ev.key) {
      case 'j': move(+1); break;
      case 'k': move(-1); break;
      case 'n':
        if (!compose()) return;
        break;
      case 'o':
      case 'Enter':
        // Not a key held down, nor one pressed for the post that was here
        // a moment ago (a second Enter on its Delete): it would open
        // another post than meant.
        if (!onPost || ev.repeat || focusJustMoved(ev.target)) return;
        open(statusHref(ev.target.dataset.original || ev.target.dataset.id)); // a repost opens its original
        break;
      case '?': help(); break;
      default: return;
    }
    ev.preventDefault();
  });
}
