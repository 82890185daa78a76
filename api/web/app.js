// The sheetrelay upload page: sign-in with an API key (typed, or from the URL fragment #key=…),
// uploads with a progress bar each, live task status (the end of a task from the event stream,
// events.js; progress polled, not while the page is hidden), the caller's files newest first, and
// the preview (preview.js); the upload cards and the template chooser are uploads.js, the
// Templates panel templates.js. The key lives in sessionStorage
// only: it is gone when the tab closes.

import * as api from './api.js';
import * as events from './events.js';
import * as preview from './preview.js';
import * as review from './review.js';
import * as templates from './templates.js';
import * as uploads from './uploads.js';
import { announce, button, formatBytes, formatCount, formatTime, plural } from './util.js';

const KEY_STORAGE = 'sheetrelay.api-key';
const FILES_PAGE = 25;

const $ = (id) => document.getElementById(id);

const files = new Map(); // source file id -> file view {…source_file, task}
const polls = new Map(); // source file id -> its task poll {timer, wait, paused, tick}
const deleting = new Set(); // source file ids whose DELETE is on its way
let nextAfter = null; // cursor of the next page of the files list
let session = 0; // bumped by every sign-in and sign-out: callbacks of an older session do nothing
let uploadsAccepted = 0; // uploads the server has accepted: numbers them in order (file.accepted)
let previewRequest = 0; // bumped by every Preview click: only the newest may open the preview

// --- sign-in --------------------------------------------------------------------------------

function keyFromFragment() {
  const match = /(?:^#|&)key=([^&]*)/.exec(window.location.hash);
  if (!match) return null;
  // Out of the address bar (and history) before anything else happens.
  window.history.replaceState(null, '', window.location.pathname + window.location.search);
  try {
    return decodeURIComponent(match[1]).trim() || null;
  } catch {
    return null;
  }
}

/** The sign-in form, with a message and the key to try again (an empty field by default). */
function showSignIn(message = '', key = '') {
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  $('api-key').value = key;
  $('signin-form').querySelector('button').disabled = false;
  $('api-key').focus();
}

/** Ends the page's session: its key, polls, files, uploads, preview and templates (not the stored key). */
function resetSession() {
  session += 1;
  events.stop();
  for (const id of [...polls.keys()]) unwatch(id);
  files.clear();
  deleting.clear();
  nextAfter = null;
  api.setKey(null);
  preview.close();
  review.close();
  uploads.clear();
  templates.clear();
  $('files-body').replaceChildren();
  $('files-error').textContent = '';
}

function signOut() {
  resetSession();
  sessionStorage.removeItem(KEY_STORAGE);
  showSignIn();
  announce('Signed out');
}

function keyRejected() {
  resetSession();
  sessionStorage.removeItem(KEY_STORAGE);
  showSignIn('Key rejected: sign in with a valid API key.');
}

/**
 * Checks the key by listing the first page of files; shows the app when it is accepted.
 * Sign-ins can overlap (a #key= link followed while a stored key is checked, the form while a
 * link's key is): each starts a session of its own, and an answer to an older one is dropped, so
 * the last sign-in wins and the key stored is always the one whose files are shown. When the key
 * cannot be checked (server down, network), it stays in the field, so a key that came from a
 * link, and is gone from the address bar, can be tried again.
 */
async function signIn(key) {
  resetSession();
  const mine = session;
  api.setKey(key);
  // Never leave another key stored behind this one's sign-in; a retry of this key keeps it.
  if (sessionStorage.getItem(KEY_STORAGE) !== key) sessionStorage.removeItem(KEY_STORAGE);
  const button = $('signin-form').querySelector('button');
  button.disabled = true;
  $('signin-error').textContent = '';
  try {
    const page = await api.getJson(`/api/v1/files?limit=${FILES_PAGE}`);
    if (mine !== session) return;
    sessionStorage.setItem(KEY_STORAGE, key);
    $('signin').hidden = true;
    $('app').hidden = false;
    $('sign-out').hidden = false;
    renderFilesPage(page, { replace: true });
    events.start((event) => onEvent(mine, event));
    templates.load();
    announce('Signed in');
    $('main').focus();
  } catch (error) {
    // A 401 of this session has already sent the page back to sign-in (keyRejected).
    if (mine !== session || error.status === 401) return;
    showSignIn(`Cannot sign in: ${error.message}`, key);
  } finally {
    if (mine === session) button.disabled = false;
  }
}

// --- my files -------------------------------------------------------------------------------

async function loadFiles({ replace }) {
  const mine = session;
  const asked = uploadsAccepted;
  const query = replace || nextAfter === null
    ? `limit=${FILES_PAGE}`
    : `limit=${FILES_PAGE}&after=${encodeURIComponent(nextAfter)}`;
  $('files-error').textContent = '';
  $('load-more').disabled = true;
  try {
    const page = await api.getJson(`/api/v1/files?${query}`);
    if (mine === session) renderFilesPage(page, { replace, asked });
  } catch (error) {
    if (mine === session && error.status !== 401) {
      $('files-error').textContent = `Files could not be loaded: ${error.message}`;
    }
  } finally {
    $('load-more').disabled = false;
  }
}

/**
 * Adds a page of the list, or with `replace` draws the list anew from its first page. `asked` is
 * uploadsAccepted when the page was asked for: an upload accepted after that (a Refresh answered
 * late) cannot be in the page, so its row and its poll stay rather than vanish.
 */
function renderFilesPage(page, { replace, asked = uploadsAccepted }) {
  if (replace) {
    for (const [id, file] of files) {
      if (file.accepted > asked) continue;
      unwatch(id);
      files.delete(id);
    }
    $('files-body').replaceChildren(
      ...[...$('files-body').children].filter((tr) => files.has(tr.dataset.fileId)));
  }
  for (const file of page.files) {
    if (files.has(file.id)) continue;
    files.set(file.id, file);
    $('files-body').append(fileRow(file));
    watch(file);
  }
  nextAfter = page.next_after ?? null;
  $('load-more').hidden = nextAfter === null;
  $('files-empty').hidden = files.size > 0;
}

function rowOf(id) {
  return $('files-body').querySelector(`tr[data-file-id="${CSS.escape(id)}"]`);
}

function fileRow(file) {
  const tr = document.createElement('tr');
  tr.dataset.fileId = file.id;

  const name = document.createElement('th');
  name.scope = 'row';
  name.className = 'file-name';
  name.textContent = file.file_name;

  const format = document.createElement('td');
  format.textContent = file.format;

  const size = document.createElement('td');
  size.className = 'number';
  size.textContent = formatBytes(file.size_bytes);

  const created = document.createElement('td');
  const time = document.createElement('time');
  time.dateTime = file.created_at;
  time.textContent = formatTime(file.created_at);
  created.append(time);

  const status = document.createElement('td');
  status.className = 'status-cell';

  const actions = document.createElement('td');
  actions.className = 'actions';
  const open = button('Preview', 'secondary preview-button', `Preview ${file.file_name}`,
    () => openPreview(file.id));
  const remove = button('Delete', 'danger-outline', `Delete ${file.file_name}`,
    () => confirmDelete(file.id));
  actions.append(open, remove);

  tr.append(name, format, size, created, status, actions);
  renderStatus(status, file);
  open.disabled = !api.previewable(file.task);
  return tr;
}

/** Fills `cell` with a task's status: its word, and progress, row count or error under it. */
function renderStatus(cell, file) {
  const task = file.task;
  const badge = document.createElement('span');
  badge.className = `status status-${task.status.toLowerCase()}`;
  badge.textContent = task.status;
  const parts = [badge];
  const detail = document.createElement('span');
  detail.className = 'status-detail';
  if (task.status === 'RUNNING' && task.progress) {
    const bar = document.createElement('progress');
    bar.max = Math.max(file.size_bytes, 1);
    bar.value = Math.min(task.progress.bytes ?? 0, bar.max);
    bar.setAttribute('aria-label', `Parsing ${file.file_name}`);
    detail.textContent = `${plural(task.progress.rows ?? 0, 'row')}, `
      + `${formatBytes(task.progress.bytes ?? 0)} of ${formatBytes(file.size_bytes)} read`;
    parts.push(bar);
  } else if (task.status === 'COMPLETED' && task.result) {
    // A templated file's rejected rows: dropped (not among its rows), or kept with their errors.
    const checked = task.result.validation;
    const kept = checked && checked.on_invalid === 'keep_invalid_rows';
    detail.textContent = checked
      ? `${plural(task.result.rows_total, 'row')}, ${formatCount(checked.rows_rejected)} `
        + `${kept ? 'with errors' : 'rejected'}`
      : plural(task.result.rows_total, 'row');
  } else if (task.status === 'FAILED' && task.error) {
    detail.classList.add('error');
    detail.textContent = `${task.error.code}: ${task.error.message}`;
  } else if (task.status === 'PENDING') {
    detail.textContent = 'waiting for a worker';
  } else if (task.status === 'NEEDS_REVIEW') {
    detail.textContent = 'the columns need a review';
    parts.push(detail, button('Review mapping', 'secondary review-button',
      `Review mapping of ${file.file_name}`, () => review.open(file, (t) => followAgain(file.id, t))));
    cell.replaceChildren(...parts);
    return;
  }
  parts.push(detail);
  cell.replaceChildren(...parts);
}

/** Draws a file's new task state wherever the file is shown. */
function updateTask(fileId, task) {
  const file = files.get(fileId);
  const previous = file ? file.task.status : null;
  if (file) file.task = task;
  const row = rowOf(fileId);
  if (row && file) {
    renderStatus(row.querySelector('.status-cell'), file);
    row.querySelector('.preview-button').disabled = !api.previewable(task);
  }
  const card = uploads.cardOf(fileId);
  if (card && file) uploads.showTask(card, file);
  if (file && previous !== task.status && api.TERMINAL.has(task.status)) {
    announce(task.status === 'COMPLETED'
      ? `${file.file_name}: COMPLETED, ${plural(task.result ? task.result.rows_total : 0, 'row')}`
      : `${file.file_name}: FAILED, ${task.error ? task.error.message : ''}`);
  }
}

/** A file sent back to be parsed (a mapping answered, a layout set): drawn, then followed. */
function followAgain(fileId, task) {
  updateTask(fileId, task);
  const file = files.get(fileId);
  if (file) watch(file);
}

/**
 * Polls a file's task until it is COMPLETED or FAILED: quickly at first, then every 2 s. While
 * the page is hidden (another tab, a minimised window) a poll that comes due pauses instead of
 * asking; onVisible resumes it at once. A poll that is no longer the file's (unwatched, or the
 * file listed anew) ends at its next step, so a file is never polled twice over.
 */
function watch(file, delay = 300) {
  if (api.TERMINAL.has(file.task.status) || polls.has(file.id)) return;
  const mine = session;
  const poll = { timer: null, wait: delay, paused: false };
  const current = () => mine === session && polls.get(file.id) === poll;
  poll.tick = async () => {
    poll.timer = null;
    if (document.hidden) {
      poll.paused = true;
      return;
    }
    try {
      const task = await api.getJson(`/api/v1/tasks/${file.task.id}`);
      if (!current()) return;
      updateTask(file.id, task);
      if (api.TERMINAL.has(task.status)) {
        polls.delete(file.id);
        return;
      }
    } catch (error) {
      if (!current()) return;
      if (error.status === 401 || error.status === 404) {
        polls.delete(file.id);
        return;
      }
      // A transient failure: keep trying at the slow pace.
    }
    // With the event stream live, the end of the task comes from it: poll only for progress.
    poll.wait = Math.min(poll.wait * 1.5, events.live() ? 5000 : 2000);
    poll.timer = setTimeout(poll.tick, poll.wait);
  };
  polls.set(file.id, poll);
  poll.timer = setTimeout(poll.tick, delay);
}

/** An event from the stream: a watched file whose task ended is drawn at once, without its poll. */
async function onEvent(mine, event) {
  const data = event.data || {};
  const file = files.get(data.source_file_id);
  if (mine !== session || !file || !event.type.startsWith('task.')) return;
  try {
    // The file with its task (not the task's own URL, which the poll asks).
    const current = await api.getJson(`/api/v1/files/${file.id}`);
    if (mine !== session || !files.has(file.id)) return;
    updateTask(file.id, current.task);
    if (api.TERMINAL.has(current.task.status)) unwatch(file.id);
  } catch {
    // The poll still watches it.
  }
}

function unwatch(fileId) {
  const poll = polls.get(fileId);
  if (poll) clearTimeout(poll.timer);
  polls.delete(fileId);
}

/** The page is shown again: the polls that paused while it was hidden ask at once. */
function onVisible() {
  if (document.hidden) return;
  for (const poll of polls.values()) {
    if (poll.paused) {
      poll.paused = false;
      poll.tick();
    }
  }
}

/**
 * Opens a file's preview with its current task. Only the newest click counts: when Preview is
 * pressed on A and then on B, A's answer arriving last must not replace B.
 */
async function openPreview(fileId) {
  const request = ++previewRequest;
  const mine = session;
  try {
    const file = await api.getJson(`/api/v1/files/${fileId}`);
    if (request !== previewRequest || mine !== session) return;
    if (files.has(fileId)) updateTask(fileId, file.task);
    await preview.open(file);
  } catch (error) {
    if (request !== previewRequest || mine !== session || error.status === 401) return;
    $('files-error').textContent = `Cannot open the preview: ${error.message}`;
  }
}

// --- delete ---------------------------------------------------------------------------------

function confirmDelete(fileId) {
  const file = files.get(fileId);
  // Gone already, or its deletion is on its way: a second one would only find it missing.
  if (!file || deleting.has(fileId)) return;
  const dialog = $('delete-dialog');
  $('delete-text').textContent =
    `“${file.file_name}” and everything parsed from it will be deleted. This cannot be undone.`;
  dialog.returnValue = '';
  const trigger = document.activeElement;
  dialog.addEventListener('close', async () => {
    if (dialog.returnValue !== 'delete') {
      if (trigger instanceof HTMLElement) trigger.focus();
      return;
    }
    await deleteFile(fileId);
  }, { once: true });
  dialog.showModal();
}

/** Marks a file's Delete button as unavailable (still focusable) while its DELETE is on its way. */
function setDeleting(fileId, busy) {
  if (busy) deleting.add(fileId);
  else deleting.delete(fileId);
  const button = rowOf(fileId)?.querySelector('button.danger-outline');
  if (button) button.setAttribute('aria-disabled', String(busy));
}

async function deleteFile(fileId) {
  const file = files.get(fileId);
  // The dialog can close on a file deleted while it was open: nothing is left to do.
  if (!file || deleting.has(fileId)) return;
  const mine = session;
  $('files-error').textContent = '';
  setDeleting(fileId, true);
  let error = null;
  try {
    await api.request(`/api/v1/files/${fileId}`, { method: 'DELETE' });
  } catch (e) {
    error = e;
  }
  if (mine !== session) return;
  setDeleting(fileId, false);
  // A 404: deleted meanwhile (another tab), which is what was asked.
  if (error && error.status === 401) return;
  if (error && error.status !== 404) {
    $('files-error').textContent = `${file.file_name} was not deleted: ${error.message}`;
    return;
  }
  unwatch(fileId);
  files.delete(fileId);
  const row = rowOf(fileId);
  const next = row && (row.nextElementSibling || row.previousElementSibling);
  if (row) row.remove();
  const card = uploads.cardOf(fileId);
  if (card) card.remove();
  if (preview.currentFileId() === fileId) preview.close();
  $('files-empty').hidden = files.size > 0;
  announce(`Deleted ${file.file_name}`);
  if (next) next.querySelector('button.danger-outline').focus();
  else $('files-title').focus();
}

// --- upload ---------------------------------------------------------------------------------

/**
 * An upload the server accepted (uploads.js): listed at the top of My files unless a Refresh
 * answered in between has listed it already, numbered in acceptance order, and watched.
 */
function accepted(upload) {
  uploadsAccepted += 1;
  if (!files.has(upload.source_file.id)) {
    const view = { ...upload.source_file, task: upload.task, accepted: uploadsAccepted };
    files.set(view.id, view);
    $('files-body').prepend(fileRow(view));
  }
  const view = files.get(upload.source_file.id);
  $('files-empty').hidden = true;
  watch(view);
  return view;
}

// --- start ----------------------------------------------------------------------------------

function init() {
  api.setUnauthorizedHandler(keyRejected);
  preview.init({ reparsed: (file, task) => followAgain(file.id, task) });
  review.init();
  uploads.init({ session: () => session, accepted, renderStatus, openPreview });
  templates.init({ onList: uploads.setTemplates });
  $('signin-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('api-key').value.trim();
    if (!key) {
      $('signin-error').textContent = 'Enter an API key.';
      $('api-key').focus();
      return;
    }
    signIn(key);
  });
  $('sign-out').addEventListener('click', signOut);
  $('refresh-files').addEventListener('click', () => loadFiles({ replace: true }));
  $('load-more').addEventListener('click', () => loadFiles({ replace: false }));
  $('files-title').tabIndex = -1;

  document.addEventListener('visibilitychange', onVisible);

  // A #key= link opened in a tab that already shows the page changes only the fragment.
  window.addEventListener('hashchange', () => {
    const key = keyFromFragment();
    if (key) signIn(key);
  });

  const key = keyFromFragment() || sessionStorage.getItem(KEY_STORAGE);
  if (key) signIn(key);
  else showSignIn();
}

init();
