// The validation report of a templated upload, in the preview: the exact counts of
// result.validation (valid and rejected rows, errors, errors by code, whether the stored records
// were capped), the rows with errors as an editable grid (grid.js, served ahead of this module:
// RowGrid and its notes are in scope here), and the rejected rows as CSV to fix and upload again.
//
// The grid fixes bad cells in place (contract v1.3, "Corrections"): a save is one PATCH (one
// revision); its answer (what is still wrong) is shown below the grid, and the preview shows the
// file again (its rows may have joined), with the grid read again from the server.

import { ApiError, getJson, sendJson } from './api.js';
import { policyText } from './templates.js';
import { formatCount, stem } from './util.js';

export const GRID_ROWS = 25;

const $ = (id) => document.getElementById(id);

const state = {
  file: null, // the file view shown, when it has a report
  grid: null, // its RowGrid, kept while the same file is shown again (its edits and page with it)
};

/**
 * From preview.js: save(path, fallbackName, label) downloads through the preview's export line
 * (one download at a time, its progress shown), as the Export buttons do; corrected(file) shows
 * the file again after a revision.
 */
let hooks;

/** Shows the report of a file's task, or hides the report when the task has none. */
export function show(file) {
  const validation = (file.task.result && file.task.result.validation) || null;
  const same = state.grid !== null && state.file?.id === file.id;
  state.file = validation ? file : null;
  $('validation').hidden = !validation;
  if (!validation) return;
  renderSummary(validation);
  $('download-rejected').hidden = validation.rows_rejected === 0;
  $('errors-report').hidden = validation.errors_total === 0;
  // Another file: its grid, its edits and the last save's note go (the same file, shown again
  // after a save, keeps them).
  if (!same) $('errors-saved').replaceChildren();
  const options = gridFileOptions(validation, file.task.status);
  if (validation.errors_total === 0) {
    state.grid = null;
    $('errors-report').replaceChildren();
  } else if (same) {
    state.grid.refresh(options);
  } else {
    state.grid = new RowGrid({ ...options, ...gridOf(file) });
    $('errors-report').replaceChildren(state.grid.element);
    state.grid.load(0);
  }
}

export function hide() {
  state.file = null;
  state.grid = null;
  $('validation').hidden = true;
}

/** The grid's file and transport (the page's key). */
function gridOf(file) {
  return {
    fileId: file.id,
    pageRows: GRID_ROWS,
    label: `Rows of ${file.file_name}`,
    get: getJson,
    patch: (path, body) => sendJson(path, 'PATCH', body),
    saved: (answer) => saved(file.id, answer),
    failed: (error) => {
      if (!(error instanceof ApiError && error.status === 401)) $('errors-saved').replaceChildren(...gridFailedNote(error));
    },
  };
}

/** After a revision: its counts and what is still wrong, then the file shown again. */
async function saved(id, answer) {
  const file = state.file;
  if (!file || file.id !== id) return;
  file.task.result.validation = answer.validation;
  renderSummary(answer.validation);
  $('errors-saved').replaceChildren(...gridSavedNote(answer));
  await hooks.corrected(file);
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
    ? 'The file has more errors than the server keeps: the counts are exact, the list below stops at the limit. Rows past it cannot be corrected here: fix them in the file and upload it again.'
    : '';
}

function codeBadge(code) {
  const badge = document.createElement('span');
  badge.className = 'badge code';
  badge.textContent = code;
  return badge;
}

function downloadRejected() {
  if (!state.file) return;
  hooks.save(`/api/v1/files/${state.file.id}/errors/export?format=csv`,
    `${stem(state.file.file_name)}-rejected.csv`, 'rejected rows');
}

/** `h` is what this module needs of the preview: save and corrected (see hooks). */
export function init(h) {
  hooks = h;
  $('download-rejected').addEventListener('click', downloadRejected);
}
