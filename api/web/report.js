// The validation report of a templated upload, in the preview: the exact counts of
// result.validation (valid and rejected rows, errors, errors by code, whether the stored records
// were capped), the stored error records in file order, ERRORS_PAGE at a time (row, column,
// value, message, code), and the rejected rows as CSV to fix and upload again. The records are
// paged with the API's next_after cursor; the cursors of the pages seen are kept, so Previous
// asks for a page again rather than holding every page.
//
// Each bad cell's value is a field to fix it in place (contract v1.3, "Corrections"): edits are
// kept across pages, arrow keys move between the bad cells, Enter or "Save corrections" sends
// them all as one PATCH (one revision), and the report is read again from the server, showing
// what is still wrong.

import { ApiError, getJson, sendJson } from './api.js';
import { policyText } from './templates.js';
import { formatCount, stem } from './util.js';

export const ERRORS_PAGE = 25;

const $ = (id) => document.getElementById(id);

const state = {
  file: null, // the file view shown, when it has a report
  validation: null, // its task's result.validation
  starts: [null], // the `after` of each page seen so far (the first page has none)
  page: 0,
  loading: 0, // a counter: only the newest request may draw
  edits: new Map(), // "sheet:row:field" → {sheet, row, field, value}, not saved yet
  saving: false,
};

/**
 * From preview.js: save(path, fallbackName, label) downloads through the preview's export line
 * (one download at a time, its progress shown), as the Export buttons do.
 */
let hooks;

/** Shows the report of a file's task, or hides the report when the task has none. */
export function show(file) {
  const validation = (file.task.result && file.task.result.validation) || null;
  state.loading += 1;
  state.file = validation ? file : null;
  state.validation = validation;
  $('validation').hidden = !validation;
  if (!validation) return;
  renderSummary(validation);
  state.starts = [null];
  state.page = 0;
  // Another file: its edits and the last save's note go (the same file, shown again after a
  // save, keeps the note).
  if (state.file?.id !== state.editsOf) {
    state.edits.clear();
    $('errors-saved').replaceChildren();
  }
  state.editsOf = state.file?.id;
  setEdits();
  $('errors-body').replaceChildren();
  $('errors-error').textContent = '';
  $('errors-status').textContent = '';
  $('errors-report').hidden = validation.errors_total === 0;
  $('download-rejected').hidden = validation.rows_rejected === 0;
  if (validation.errors_total > 0) loadErrors(0);
}

export function hide() {
  state.file = null;
  state.loading += 1;
  $('validation').hidden = true;
}

function renderSummary(v) {
  $('validation-template').textContent =
    `Checked against template ${v.template}, version ${v.template_version}. `
    + `Rows with errors: ${policyText(v.on_invalid).toLowerCase()}.`;
  const counts = [['Valid rows', v.rows_valid], ['Rejected rows', v.rows_rejected], ['Errors', v.errors_total]];
  $('validation-counts').replaceChildren(...counts.map(([term, n]) => {
    const item = document.createElement('div');
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = formatCount(n);
    item.append(dt, dd);
    return item;
  }));
  const codes = Object.entries(v.errors_by_code || {}).sort((a, b) => b[1] - a[1]);
  $('validation-codes').replaceChildren(...codes.flatMap(([code, n], i) => [
    ...(i > 0 ? [', '] : []),
    codeBadge(code),
    ` ${formatCount(n)}`,
  ]));
  $('validation-codes').hidden = codes.length === 0;
  const truncated = $('validation-truncated');
  truncated.hidden = !v.errors_truncated;
  truncated.textContent = v.errors_truncated
    ? 'The file has more errors than the server keeps: the counts are exact, the list below stops at the limit.'
    : '';
}

function codeBadge(code, constraint = null) {
  const badge = document.createElement('span');
  badge.className = 'badge code';
  badge.textContent = code;
  if (constraint) badge.title = `constraint: ${constraint}`;
  return badge;
}

/** Loads page p of the report (p is at most one past the last page seen). */
async function loadErrors(p) {
  if (!state.file || p < 0 || p >= state.starts.length) return;
  const ticket = ++state.loading;
  const after = state.starts[p];
  let query = `limit=${ERRORS_PAGE}`;
  if (after !== null) query += `&after=${encodeURIComponent(after)}`;
  $('errors-error').textContent = '';
  $('errors-report').setAttribute('aria-busy', 'true');
  try {
    const body = await getJson(`/api/v1/files/${state.file.id}/errors?${query}`);
    if (ticket !== state.loading) return;
    state.page = p;
    state.starts.length = p + 1;
    if (body.next_after !== null && body.next_after !== undefined) state.starts.push(body.next_after);
    renderErrors(body.errors);
  } catch (error) {
    if (ticket !== state.loading) return;
    if (error instanceof ApiError && error.status === 401) return;
    $('errors-error').textContent = `Errors could not be loaded: ${error.message}`;
  } finally {
    if (ticket === state.loading) $('errors-report').setAttribute('aria-busy', 'false');
  }
}

function renderErrors(errors) {
  $('errors-body').replaceChildren(...errors.map(errorRow));
  const first = state.page * ERRORS_PAGE + 1;
  const last = state.page * ERRORS_PAGE + errors.length;
  // Past the cap the records are fewer than errors_total: no "of" that the pages never reach.
  const of = state.validation.errors_truncated ? '' : ` of ${formatCount(state.validation.errors_total)}`;
  const status = errors.length
    ? `Errors ${formatCount(first)}–${formatCount(last)}${of}`
    : 'No error records are stored';
  $('errors-status').textContent = status;
  $('errors-caption').textContent = `Errors of ${state.file.file_name}: ${status}`;
  $('errors-scroll').scrollTop = 0;
  setPager();
}

function setPager() {
  const prev = $('errors-prev');
  const next = $('errors-next');
  const hadFocus = document.activeElement;
  prev.disabled = state.page === 0;
  next.disabled = state.page + 1 >= state.starts.length;
  // A button that has just become unavailable would drop the reader's focus on the page.
  if (hadFocus === next && next.disabled && !prev.disabled) prev.focus();
  if (hadFocus === prev && prev.disabled && !next.disabled) next.focus();
}

function errorRow(e) {
  const tr = document.createElement('tr');
  const row = document.createElement('th');
  row.scope = 'row';
  row.className = 'number';
  row.textContent = String(e.row);
  const column = document.createElement('td');
  const name = document.createElement('span');
  name.className = 'error-column';
  name.textContent = e.column ?? '';
  column.append(name);
  // The field the column was matched to, when its header says something else (an alias), or
  // the field no column was found for.
  if (e.field && e.field !== e.column) {
    const field = document.createElement('span');
    field.className = 'error-field';
    field.textContent = e.column === null ? `no column for ${e.field}` : `field ${e.field}`;
    column.append(field);
  }
  const value = document.createElement('td');
  value.className = 'error-value';
  if (fixable(e)) value.append(cellInput(e));
  else if (e.value === null || e.value === undefined) value.classList.add('empty');
  else value.textContent = e.value;
  const message = document.createElement('td');
  const text = document.createElement('span');
  text.className = 'error-message';
  text.textContent = e.message;
  message.append(codeBadge(e.code, e.constraint), ' ', text);
  tr.append(row, column, value, message);
  return tr;
}

/** Whether a record is a data cell that a correction can fix (not a header's or a row's). */
function fixable(e) {
  return Boolean(e.field) && e.column !== null && e.row > (state.validation.header_row || 0)
    && !['extra-cell', 'blank-row'].includes(e.code);
}

const editKey = (e) => `${e.sheet}:${e.row}:${e.field}`;

/** The bad cell as a field holding its text (or the edit not saved yet), flagged invalid. */
function cellInput(e) {
  const input = document.createElement('input');
  input.type = 'text';
  input.className = 'cell-fix';
  input.setAttribute('aria-invalid', 'true');
  input.setAttribute('aria-label', `Row ${e.row}, ${e.field}: ${e.message}`);
  input.title = e.message;
  const pending = state.edits.get(editKey(e));
  input.value = pending ? pending.value ?? '' : e.value ?? '';
  if (pending) input.classList.add('edited');
  input.dataset.key = editKey(e);
  input.addEventListener('input', () => {
    const original = e.value ?? '';
    if (input.value === original) state.edits.delete(editKey(e));
    else state.edits.set(editKey(e), { sheet: e.sheet, row: e.row, field: e.field, value: input.value });
    input.classList.toggle('edited', input.value !== original);
    setEdits();
  });
  return input;
}

/** Arrow keys move between the bad cells; Enter saves. */
function onGridKey(event) {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || !input.classList.contains('cell-fix')) return;
  if (event.key === 'Enter') {
    event.preventDefault();
    save();
    return;
  }
  if (event.key !== 'ArrowDown' && event.key !== 'ArrowUp') return;
  const cells = [...$('errors-body').querySelectorAll('input.cell-fix')];
  const at = cells.indexOf(input) + (event.key === 'ArrowDown' ? 1 : -1);
  if (at >= 0 && at < cells.length) {
    event.preventDefault();
    cells[at].focus();
    cells[at].select();
  }
}

function setEdits() {
  const n = state.edits.size;
  $('errors-save').disabled = n === 0 || state.saving;
  $('errors-edits').textContent = n ? `${formatCount(n)} cell${n === 1 ? '' : 's'} changed, not saved` : '';
}

/** Sends every edit as one revision, then shows the new counts and what is still wrong. */
async function save() {
  if (!state.file || state.edits.size === 0 || state.saving) return;
  const file = state.file;
  state.saving = true;
  setEdits();
  const corrections = [...state.edits.values()]
    .map(({ sheet, row, field, value }) => ({ sheet, row, field, value: value === '' ? null : value }));
  const out = $('errors-saved');
  try {
    const answer = await sendJson(`/api/v1/files/${file.id}/corrections`, 'PATCH', { corrections });
    if (state.file !== file) return;
    state.edits.clear();
    state.validation = answer.validation;
    file.task.result.validation = answer.validation;
    renderSummary(answer.validation);
    const still = answer.errors || [];
    const head = document.createElement('p');
    head.textContent = `Saved as revision ${answer.revision}: ${formatCount(answer.applied)} `
      + `correction${answer.applied === 1 ? '' : 's'}. `
      + (still.length ? `Still wrong on those rows: ${formatCount(still.length)}.` : 'Those rows are valid now.');
    const list = document.createElement('ul');
    list.append(...still.slice(0, 10).map((e) => {
      const li = document.createElement('li');
      li.textContent = `Row ${e.row}: ${e.message}`;
      return li;
    }));
    out.replaceChildren(head, list);
    $('errors-report').hidden = answer.validation.errors_total === 0;
    // The preview shows the file again (its rows may have joined), and with it this report,
    // read again from the server: busy until then, so nobody edits a grid about to be redrawn.
    $('errors-report').setAttribute('aria-busy', 'true');
    if (hooks.corrected) hooks.corrected(file);
    else if (answer.validation.errors_total > 0) show(file);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return;
    const p = document.createElement('p');
    p.className = 'error';
    p.textContent = `The corrections were not saved: ${error.message}`;
    const list = document.createElement('ul');
    list.append(...(error.details || []).map((d) => {
      const li = document.createElement('li');
      li.textContent = d.message;
      return li;
    }));
    out.replaceChildren(p, list);
  } finally {
    state.saving = false;
    setEdits();
  }
}

function downloadRejected() {
  if (!state.file) return;
  hooks.save(`/api/v1/files/${state.file.id}/errors/export?format=csv`,
    `${stem(state.file.file_name)}-rejected.csv`, 'rejected rows');
}

/** `h` is what this module needs of the preview: save (see hooks). */
export function init(h) {
  hooks = h;
  $('errors-prev').addEventListener('click', () => loadErrors(state.page - 1));
  $('errors-next').addEventListener('click', () => loadErrors(state.page + 1));
  $('download-rejected').addEventListener('click', downloadRejected);
  $('errors-save').addEventListener('click', save);
  $('errors-body').addEventListener('keydown', onGridKey);
}
