// The sheetrelay upload page: sign-in with an API key (typed, or from the URL fragment #key=…),
// uploads with a progress bar each, live task status, the caller's files newest first, and the
// preview (preview.js). The key lives in sessionStorage only: it is gone when the tab closes.

import * as api from './api.js';
import * as preview from './preview.js';
import { announce, formatBytes, formatTime, plural } from './util.js';

const KEY_STORAGE = 'sheetrelay.api-key';
const FILES_PAGE = 25;
const PARALLEL_UPLOADS = 3;
const TERMINAL = new Set(['COMPLETED', 'FAILED']);

const $ = (id) => document.getElementById(id);

const files = new Map(); // source file id -> file view {…source_file, task}
const polls = new Map(); // source file id -> timeout id of its next task poll
let nextAfter = null; // cursor of the next page of the files list
let session = 0; // bumped on sign-out: callbacks of an older session do nothing

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

function showSignIn(message = '') {
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  $('api-key').value = '';
  $('api-key').focus();
}

function resetSession() {
  session += 1;
  for (const timer of polls.values()) clearTimeout(timer);
  polls.clear();
  files.clear();
  nextAfter = null;
  sessionStorage.removeItem(KEY_STORAGE);
  api.setKey(null);
  preview.close();
  $('uploads').replaceChildren();
  $('files-body').replaceChildren();
  $('files-error').textContent = '';
}

function signOut() {
  resetSession();
  showSignIn();
  announce('Signed out');
}

function keyRejected() {
  resetSession();
  showSignIn('Key rejected: sign in with a valid API key.');
}

/** Checks the key by listing the first page of files; shows the app when it is accepted. */
async function signIn(key) {
  const button = $('signin-form').querySelector('button');
  button.disabled = true;
  $('signin-error').textContent = '';
  api.setKey(key);
  try {
    const page = await api.getJson(`/api/v1/files?limit=${FILES_PAGE}`);
    sessionStorage.setItem(KEY_STORAGE, key);
    $('signin').hidden = true;
    $('app').hidden = false;
    $('sign-out').hidden = false;
    renderFilesPage(page, { replace: true });
    announce('Signed in');
    $('main').focus();
  } catch (error) {
    if (error.status !== 401) {
      $('signin').hidden = false;
      $('signin-error').textContent = `Cannot sign in: ${error.message}`;
    }
  } finally {
    button.disabled = false;
  }
}

// --- my files -------------------------------------------------------------------------------

async function loadFiles({ replace }) {
  const mine = session;
  const query = replace || nextAfter === null
    ? `limit=${FILES_PAGE}`
    : `limit=${FILES_PAGE}&after=${encodeURIComponent(nextAfter)}`;
  $('files-error').textContent = '';
  $('load-more').disabled = true;
  try {
    const page = await api.getJson(`/api/v1/files?${query}`);
    if (mine === session) renderFilesPage(page, { replace });
  } catch (error) {
    if (mine === session && error.status !== 401) {
      $('files-error').textContent = `Files could not be loaded: ${error.message}`;
    }
  } finally {
    $('load-more').disabled = false;
  }
}

function renderFilesPage(page, { replace }) {
  if (replace) {
    for (const timer of polls.values()) clearTimeout(timer);
    polls.clear();
    files.clear();
    $('files-body').replaceChildren();
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
  const open = document.createElement('button');
  open.type = 'button';
  open.className = 'secondary preview-button';
  open.textContent = 'Preview';
  open.setAttribute('aria-label', `Preview ${file.file_name}`);
  open.addEventListener('click', () => openPreview(file.id));
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.className = 'danger-outline';
  remove.textContent = 'Delete';
  remove.setAttribute('aria-label', `Delete ${file.file_name}`);
  remove.addEventListener('click', () => confirmDelete(file.id));
  actions.append(open, remove);

  tr.append(name, format, size, created, status, actions);
  renderStatus(status, file);
  open.disabled = file.task.status !== 'COMPLETED';
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
    detail.textContent = plural(task.result.rows_total, 'row');
  } else if (task.status === 'FAILED' && task.error) {
    detail.classList.add('error');
    detail.textContent = `${task.error.code}: ${task.error.message}`;
  } else if (task.status === 'PENDING') {
    detail.textContent = 'waiting for a worker';
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
    row.querySelector('.preview-button').disabled = task.status !== 'COMPLETED';
  }
  const card = $('uploads').querySelector(`li[data-file-id="${CSS.escape(fileId)}"]`);
  if (card && file) {
    renderStatus(card.querySelector('.upload-status'), file);
    card.querySelector('.preview-button').hidden = task.status !== 'COMPLETED';
  }
  if (file && previous !== task.status && TERMINAL.has(task.status)) {
    announce(task.status === 'COMPLETED'
      ? `${file.file_name}: COMPLETED, ${plural(task.result ? task.result.rows_total : 0, 'row')}`
      : `${file.file_name}: FAILED, ${task.error ? task.error.message : ''}`);
  }
}

/** Polls a file's task until it is COMPLETED or FAILED: quickly at first, then every 2 s. */
function watch(file, delay = 300) {
  if (TERMINAL.has(file.task.status) || polls.has(file.id)) return;
  const mine = session;
  const tick = async (wait) => {
    try {
      const task = await api.getJson(`/api/v1/tasks/${file.task.id}`);
      if (mine !== session || !files.has(file.id)) return;
      updateTask(file.id, task);
      if (TERMINAL.has(task.status)) {
        polls.delete(file.id);
        return;
      }
    } catch (error) {
      if (mine !== session || error.status === 401 || error.status === 404) {
        polls.delete(file.id);
        return;
      }
      // A transient failure: keep trying at the slow pace.
    }
    const next = Math.min(wait * 1.5, 2000);
    polls.set(file.id, setTimeout(() => tick(next), next));
  };
  polls.set(file.id, setTimeout(() => tick(delay), delay));
}

async function openPreview(fileId) {
  try {
    const file = await api.getJson(`/api/v1/files/${fileId}`);
    if (files.has(fileId)) updateTask(fileId, file.task);
    await preview.open(file);
  } catch (error) {
    if (error.status !== 401) $('files-error').textContent = `Cannot open the preview: ${error.message}`;
  }
}

// --- delete ---------------------------------------------------------------------------------

function confirmDelete(fileId) {
  const file = files.get(fileId);
  if (!file) return;
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

async function deleteFile(fileId) {
  const file = files.get(fileId);
  const row = rowOf(fileId);
  $('files-error').textContent = '';
  try {
    await api.request(`/api/v1/files/${fileId}`, { method: 'DELETE' });
  } catch (error) {
    if (error.status !== 401 && error.status !== 404) {
      $('files-error').textContent = `${file.file_name} was not deleted: ${error.message}`;
      return;
    }
    if (error.status === 401) return;
  }
  clearTimeout(polls.get(fileId));
  polls.delete(fileId);
  files.delete(fileId);
  const next = row && (row.nextElementSibling || row.previousElementSibling);
  if (row) row.remove();
  const card = $('uploads').querySelector(`li[data-file-id="${CSS.escape(fileId)}"]`);
  if (card) card.remove();
  if (preview.currentFileId() === fileId) preview.close();
  $('files-empty').hidden = files.size > 0;
  announce(`Deleted ${file.file_name}`);
  if (next) next.querySelector('button.danger-outline').focus();
  else $('files-title').focus();
}

// --- upload ---------------------------------------------------------------------------------

function uploadCard(file) {
  const li = document.createElement('li');
  li.className = 'upload';
  const name = document.createElement('span');
  name.className = 'file-name';
  name.textContent = file.name;
  const size = document.createElement('span');
  size.className = 'hint';
  size.textContent = formatBytes(file.size);
  const bar = document.createElement('progress');
  bar.max = 100;
  bar.value = 0;
  bar.setAttribute('aria-label', `Upload of ${file.name}`);
  const status = document.createElement('div');
  status.className = 'upload-status';
  status.textContent = 'waiting to upload';
  const open = document.createElement('button');
  open.type = 'button';
  open.className = 'secondary preview-button';
  open.textContent = 'Preview';
  open.setAttribute('aria-label', `Preview ${file.name}`);
  open.hidden = true;
  open.addEventListener('click', () => openPreview(li.dataset.fileId));
  li.append(name, size, bar, status, open);
  return li;
}

async function uploadOne(file, card) {
  const mine = session;
  const bar = card.querySelector('progress');
  const status = card.querySelector('.upload-status');
  status.textContent = 'uploading';
  try {
    const accepted = await api.upload(file, (sent, total) => {
      bar.value = Math.round((100 * sent) / Math.max(total, 1));
      status.textContent = `uploading: ${bar.value}%`;
    });
    if (mine !== session) return;
    bar.value = 100;
    const view = { ...accepted.source_file, task: accepted.task };
    card.dataset.fileId = view.id;
    files.set(view.id, view);
    $('files-body').prepend(fileRow(view));
    $('files-empty').hidden = true;
    renderStatus(status, view);
    announce(`${file.name} uploaded`);
    watch(view);
  } catch (error) {
    if (mine !== session || error.status === 401) return;
    card.classList.add('refused');
    bar.hidden = true;
    status.className = 'upload-status error';
    status.textContent = error.status
      ? `Refused: ${error.message} (${error.code}, HTTP ${error.status})`
      : `Failed: ${error.message}`;
    announce(`${file.name} refused: ${error.message}`);
  }
}

async function uploadAll(fileList) {
  const queue = [...fileList].map((file) => {
    const card = uploadCard(file);
    $('uploads').prepend(card);
    return [file, card];
  });
  if (queue.length === 0) return;
  announce(`Uploading ${queue.length} ${queue.length === 1 ? 'file' : 'files'}`);
  const workers = Array.from({ length: Math.min(PARALLEL_UPLOADS, queue.length) }, async () => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      await uploadOne(...item);
    }
  });
  await Promise.all(workers);
}

function initDropzone() {
  const zone = $('dropzone');
  const input = $('file-input');
  input.addEventListener('change', () => {
    const chosen = [...input.files];
    input.value = '';
    uploadAll(chosen);
  });
  const carriesFiles = (event) => event.dataTransfer && [...event.dataTransfer.types].includes('Files');
  zone.addEventListener('dragenter', (event) => {
    if (carriesFiles(event)) zone.classList.add('dragging');
  });
  zone.addEventListener('dragover', (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    zone.classList.add('dragging');
  });
  zone.addEventListener('dragleave', (event) => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove('dragging');
  });
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    uploadAll(event.dataTransfer.files);
  });
  // A file dropped next to the zone must not make the browser leave the page to open it.
  window.addEventListener('dragover', (event) => {
    if (carriesFiles(event)) event.preventDefault();
  });
  window.addEventListener('drop', (event) => event.preventDefault());
}

// --- start ----------------------------------------------------------------------------------

function init() {
  api.setUnauthorizedHandler(keyRejected);
  preview.init();
  initDropzone();
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

  // A #key= link opened in a tab that already shows the page changes only the fragment.
  window.addEventListener('hashchange', () => {
    const key = keyFromFragment();
    if (key) {
      resetSession();
      signIn(key);
    }
  });

  const key = keyFromFragment() || sessionStorage.getItem(KEY_STORAGE);
  if (key) signIn(key);
  else showSignIn();
}

init();
