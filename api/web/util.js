// Small helpers shared by the page's modules: screen-reader announcements, labelled buttons, and
// number, size and time formatting in the reader's locale.

const counts = new Intl.NumberFormat(undefined);

/** Reads text out through the page's polite live region. */
export function announce(text) {
  const region = document.getElementById('announcer');
  // Clearing first makes a repeated message be read again.
  region.textContent = '';
  requestAnimationFrame(() => {
    region.textContent = text;
  });
}

/**
 * A button showing `text` whose accessible name is `label` (e.g. "Preview orders.csv", so that a
 * screen reader can tell one row's Preview from another's), calling `onClick`.
 */
export function button(text, className, label, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = className;
  b.textContent = text;
  b.setAttribute('aria-label', label);
  b.addEventListener('click', onClick);
  return b;
}

export function formatCount(n) {
  return counts.format(n);
}

/** "1 row", "2,500 rows". */
export function plural(n, word) {
  return `${counts.format(n)} ${word}${n === 1 ? '' : 's'}`;
}

export function formatBytes(n) {
  if (n < 1024) return `${counts.format(n)} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A file name without its extension: the start of a download's name. */
export function stem(name) {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(0, dot) : name;
}

export function formatTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}
