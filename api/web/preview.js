// The preview of a parsed file: its sheets as tabs (hidden ones marked), each sheet's columns
// with their inferred types, and its rows in pages that reach every row of the sheet. Rows are
// numbered 0..rows-1 in a sheet, so page p is `after = p * PAGE_SIZE - 1` and the last page is
// one request away. Above the rows, where the sheet's table was found and what was set aside
// (result.sheets[].layout: rows above it, notes below it, another table), so nothing left out
// goes unsaid, with a control to move the header or the table's end and parse again. Export downloads the selected sheet as CSV, NDJSON or Parquet. A templated upload's
// validation report (report.js) shows above the sheets, also for a file its template rejected,
// which has a report and no rows.

import { ApiError, download, getJson } from './api.js';
import { layoutControl, layoutText } from './layout.js';
import * as report from './report.js';
import { announce, formatBytes, formatCount, plural, stem } from './util.js';

export const PAGE_SIZE = 100;

const $ = (id) => document.getElementById(id);

const state = {
  file: null, // the file view {id, file_name, ..., task}
  sheets: [], // task.result.sheets
  sheet: 0, // index into state.sheets
  page: 0,
  loading: 0, // a counter: only the newest request may draw
  exporting: false, // an export is streaming in: the Export buttons wait for it
};

export function currentFileId() {
  return state.file ? state.file.id : null;
}

export function close() {
  state.file = null;
  state.loading += 1;
  report.hide();
  $('preview').hidden = true;
}

/**
 * Shows a COMPLETED file's first sheet, or a rejected file's report, then moves focus to the
 * preview's title. Opens can overlap (Preview on A, then on B before A's rows came): the later
 * open owns the preview, and an earlier one, once its rows are in, neither draws nor takes focus
 * from where the reader has gone since.
 */
export async function open(file) {
  state.file = file;
  // A rejected file's result lists its sheets, but none of their rows were stored.
  const rows = file.task.status === 'COMPLETED';
  state.sheets = (rows && file.task.result && file.task.result.sheets) || [];
  $('preview').hidden = false;
  $('preview-title').textContent = `Preview: ${file.file_name}`;
  // Never show the previous file's rows under this file's title while its first page loads.
  $('rows-head').replaceChildren();
  $('rows-body').replaceChildren();
  $('rows-caption').textContent = '';
  $('preview-error').textContent = '';
  $('sheet-layout').hidden = true;
  $('sheet-layout-fix').replaceChildren();
  if (!state.exporting) $('export-status').hidden = true;
  const total = file.task.result ? file.task.result.rows_total : 0;
  $('preview-summary').textContent = rows
    ? `${plural(total, 'row')} in ${plural(state.sheets.length, 'sheet')}`
    : 'Rejected by its template: no rows were stored.';
  report.show(file);
  renderTabs();
  setExportButtons();
  $('preview-title').scrollIntoView({ block: 'start' });
  if (state.sheets.length === 0) {
    // Nothing to ask for: a request for sheet 0 would only fail. Rows still on their way for
    // the previous file must not draw here either.
    state.loading += 1;
    state.page = 0;
    setPagerBusy(false);
    $('page-status').textContent = rows
      ? 'This file has no sheets: there are no rows to show.'
      : 'The template rejected this file: there are no rows to show.';
    if (!rows) {
      const result = file.task.result || {};
      const sheets = result.sheets || [];
      const validated = result.validation ? result.validation.sheet : 0;
      showLayout(file, sheets.find((s) => s.index === validated) || sheets[0]);
    }
  } else {
    $('page-status').textContent = 'Loading rows…';
    await selectSheet(0, { focusTab: false });
  }
  if (state.file !== file) return;
  $('preview-title').tabIndex = -1;
  $('preview-title').focus({ preventScroll: true });
}

function sheetRows() {
  const sheet = state.sheets[state.sheet];
  return sheet ? sheet.rows : 0;
}

function lastPage() {
  return Math.max(0, Math.ceil(sheetRows() / PAGE_SIZE) - 1);
}

function renderTabs() {
  const tabs = $('sheet-tabs');
  tabs.replaceChildren();
  tabs.hidden = state.sheets.length === 0;
  state.sheets.forEach((sheet, i) => {
    const tab = document.createElement('button');
    tab.type = 'button';
    tab.setAttribute('role', 'tab');
    tab.id = `sheet-tab-${i}`;
    tab.setAttribute('aria-controls', 'sheet-panel');
    tab.dataset.index = String(i);
    tab.append(sheet.name);
    if (sheet.hidden) {
      const mark = document.createElement('span');
      mark.className = 'badge';
      mark.textContent = 'hidden';
      tab.append(' ', mark);
      tab.title = 'A hidden sheet of the workbook';
    }
    tab.addEventListener('click', () => selectSheet(i));
    tab.addEventListener('keydown', onTabKey);
    tabs.append(tab);
  });
}

// Arrow keys, Home and End move between tabs (the WAI-ARIA tabs pattern, activation on focus).
function onTabKey(event) {
  const n = state.sheets.length;
  const moves = { ArrowRight: state.sheet + 1, ArrowLeft: state.sheet - 1 + n, Home: 0, End: n - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  selectSheet(moves[event.key] % n);
}

function renderLayout() {
  showLayout(state.file, state.sheets[state.sheet]);
}

/**
 * A sheet's layout in words, and the control that moves its header or table end (the file is
 * then parsed again: the preview closes and the file is followed to its end). A file its
 * template rejected has no rows, but its layout may be why: it is shown for it too.
 */
function showLayout(file, sheet) {
  const forced = sheet && ((file.task.layout_override || {}).sheets || [])
    .some((s) => s.sheet === sheet.index);
  const text = layoutText(sheet && sheet.layout) + (forced ? ' (set by hand)' : '');
  $('sheet-layout').textContent = text;
  $('sheet-layout').hidden = !sheet;
  $('sheet-layout-fix').replaceChildren(...(sheet ? [layoutControl({
    task: file.task,
    sheetIndex: sheet.index,
    layout: sheet.layout,
    prefix: 'sheet-layout',
    done: (task) => {
      if (state.file === file) close();
      reparsed(file, task);
    },
  })] : []));
}

async function selectSheet(index, { focusTab = true } = {}) {
  state.sheet = index;
  state.page = 0;
  renderLayout();
  for (const tab of $('sheet-tabs').children) {
    const selected = Number(tab.dataset.index) === index;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
    if (selected) {
      $('sheet-panel').setAttribute('aria-labelledby', tab.id);
      if (focusTab) tab.focus();
    }
  }
  await loadPage(0);
}

/** Loads page p of the selected sheet (clamped to the sheet). */
export async function loadPage(p) {
  if (!state.file) return;
  const page = Math.min(Math.max(0, p), lastPage());
  const ticket = ++state.loading;
  const sheet = state.sheets[state.sheet];
  const sheetIndex = sheet ? sheet.index : 0;
  let query = `sheet=${sheetIndex}&limit=${PAGE_SIZE}`;
  if (page > 0) query += `&after=${page * PAGE_SIZE - 1}`;
  $('preview-error').textContent = '';
  setPagerBusy(true);
  try {
    const body = await getJson(`/api/v1/files/${state.file.id}/rows?${query}`);
    if (ticket !== state.loading) return;
    state.page = page;
    renderRows(body);
  } catch (error) {
    if (ticket !== state.loading) return;
    if (error instanceof ApiError && error.status === 401) return;
    $('preview-error').textContent = `Rows could not be loaded: ${error.message}`;
  } finally {
    if (ticket === state.loading) setPagerBusy(false);
  }
}

function setPagerBusy(busy) {
  $('sheet-panel').setAttribute('aria-busy', String(busy));
  const last = lastPage();
  $('page-first').disabled = busy || state.page === 0;
  $('page-prev').disabled = busy || state.page === 0;
  $('page-next').disabled = busy || state.page >= last;
  $('page-last').disabled = busy || state.page >= last;
}

function renderRows({ sheet, rows }) {
  const head = document.createElement('tr');
  const corner = document.createElement('th');
  corner.scope = 'col';
  corner.textContent = '#';
  head.append(corner);
  (sheet.columns || []).forEach((name, i) => {
    const th = document.createElement('th');
    th.scope = 'col';
    const label = document.createElement('span');
    label.className = 'column-name';
    label.textContent = name;
    const type = document.createElement('span');
    type.className = 'column-type';
    type.textContent = (sheet.column_types && sheet.column_types[i]) || '';
    th.append(label, ' ', type);
    head.append(th);
  });
  $('rows-head').replaceChildren(head);

  const body = document.createDocumentFragment();
  for (const row of rows) {
    const tr = document.createElement('tr');
    const number = document.createElement('th');
    number.scope = 'row';
    number.textContent = String(row.index + 1);
    tr.append(number);
    for (const value of row.values) {
      const td = document.createElement('td');
      if (value === null || value === undefined) {
        td.className = 'empty';
      } else {
        td.textContent = String(value);
        if (typeof value === 'number') td.className = 'number';
      }
      tr.append(td);
    }
    body.append(tr);
  }
  $('rows-body').replaceChildren(body);

  const total = sheetRows();
  const first = rows.length ? rows[0].index + 1 : 0;
  const last = rows.length ? rows[rows.length - 1].index + 1 : 0;
  const status = rows.length
    ? `Rows ${formatCount(first)}–${formatCount(last)} of ${formatCount(total)}, page ${state.page + 1} of ${lastPage() + 1}`
    : 'This sheet has no rows';
  $('page-status').textContent = status;
  $('rows-caption').textContent = `${sheet.name}: ${status}`;
  $('rows-scroll').scrollTop = 0;
}

/**
 * Every download button waits while a download streams in (the report's Download rejected rows
 * too), and there is nothing to export without sheets.
 */
function setExportButtons() {
  const off = state.exporting || state.sheets.length === 0;
  $('export-csv').disabled = off;
  $('export-ndjson').disabled = off;
  $('export-parquet').disabled = off;
  $('download-rejected').disabled = state.exporting;
}

/** Exports the selected sheet as `format` (csv, ndjson or parquet). */
function exportSheet(format) {
  if (!state.file || state.sheets.length === 0) return;
  const sheet = state.sheets[state.sheet];
  const suffix = state.sheets.length > 1 ? `-${sheet.name}` : '';
  save(`/api/v1/files/${state.file.id}/rows/export?sheet=${sheet.index}&format=${format}`,
    `${stem(state.file.file_name)}${suffix}.${format}`, format.toUpperCase());
}

/**
 * Downloads `path` as a file named by the server (else `fallback`), `label` saying what it is.
 * The server streams it, and a large one takes a while: the bytes received so far show beside
 * a busy bar, and one download runs at a time (a second press would start the same download
 * again).
 */
async function save(path, fallback, label) {
  if (!state.file || state.exporting) return;
  const text = $('export-text');
  state.exporting = true;
  setExportButtons();
  $('preview-error').textContent = '';
  $('export-progress').hidden = false;
  $('export-status').hidden = false;
  text.textContent = `Exporting ${label}…`;
  announce(`Exporting ${label}…`);
  try {
    const saved = await download(path, fallback, (received) => {
      text.textContent = `Exporting ${label}: ${formatBytes(received)} received`;
    });
    text.textContent = `Exported ${saved.name}: ${formatBytes(saved.bytes)}`;
    announce(`Exported ${saved.name} (${formatCount(saved.bytes)} bytes)`);
  } catch (error) {
    $('export-status').hidden = true;
    if (!(error instanceof ApiError && error.status === 401)) {
      $('preview-error').textContent = `Export failed: ${error.message}`;
    }
  } finally {
    state.exporting = false;
    $('export-progress').hidden = true;
    setExportButtons();
  }
}

/** What to do once a person's layout sent a file back to be parsed: set by init. */
let reparsed = () => {};

/** After a revision: the file again, its rows (some may have joined) and counts as they are now. */
async function reopen(file) {
  try {
    const fresh = await getJson(`/api/v1/files/${file.id}`);
    if (state.file && state.file.id === file.id) await open(fresh);
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) announce(`The file could not be read again: ${error.message}`);
  }
}

export function init({ reparsed: onReparsed }) {
  reparsed = onReparsed;
  $('page-first').addEventListener('click', () => loadPage(0));
  $('page-prev').addEventListener('click', () => loadPage(state.page - 1));
  $('page-next').addEventListener('click', () => loadPage(state.page + 1));
  $('page-last').addEventListener('click', () => loadPage(lastPage()));
  $('export-csv').addEventListener('click', () => exportSheet('csv'));
  $('export-ndjson').addEventListener('click', () => exportSheet('ndjson'));
  $('export-parquet').addEventListener('click', () => exportSheet('parquet'));
  report.init({ save, corrected: reopen });
}
