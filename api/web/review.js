// The mapping review step: a task waiting in NEEDS_REVIEW shows, in a dialog, each template field
// with a choice of the file's columns (with their sample values), prefilled from the suggested
// mapping; a suggestion that is only a guess (a loose name, or values that do not fit the field)
// says so under its choice. Confirming PUTs the mapping; the task goes back to PENDING and the
// page follows it to its end as it follows any task. Above the fields, where the sheet's table
// was found and what was set aside, with the control that moves its header or end instead
// (layout.js): the file is then parsed again and may need no review at all. Below the fields, the
// texts an enum or boolean field cannot read, each with a choice of the values it allows: what a
// person maps is applied to this file and learned for the template (contract v1.3).

import * as api from './api.js';
import { layoutControl, layoutText } from './layout.js';
import { announce } from './util.js';

const $ = (id) => document.getElementById(id);

const REASONS = {
  required_field_unmapped: 'A required field matches no column of the file.',
  competing_columns: 'Two columns match one field equally well.',
  low_confidence: 'A column matches a field only loosely.',
};

/** The file being reviewed and what to do with its task once answered. */
let current = null;

/** Text of a column's option: its name and up to five sample values. */
function columnText(column) {
  return column.samples.length
    ? `${column.name} (e.g. ${column.samples.join(', ')})`
    : `${column.name} (no values)`;
}

/** Below this a suggestion is not certain (the matcher's threshold). */
const CERTAIN = 0.9;

/**
 * Why a pre-filled suggestion is only a guess, or '' when it is certain: a name match whose
 * values do not fit the field keeps its `match` with a low confidence.
 */
function doubtText(suggested) {
  if (suggested.column_index === null || suggested.confidence >= CERTAIN) return '';
  const percent = Math.round(suggested.confidence * 100);
  const why = suggested.match === 'fuzzy'
    ? 'the names are only alike'
    : 'its values do not fit the field';
  return `Unsure (${percent} %): ${why}. Check this column.`;
}

function fieldRow(suggested, index, columns) {
  const row = document.createElement('div');
  row.className = 'field';
  const label = document.createElement('label');
  label.htmlFor = `review-field-${index}`;
  label.textContent = suggested.field;
  const select = document.createElement('select');
  select.id = `review-field-${index}`;
  select.dataset.field = suggested.field;
  select.append(new Option('No column', ''));
  for (const column of columns) select.append(new Option(columnText(column), String(column.index)));
  select.value = suggested.column_index === null ? '' : String(suggested.column_index);
  row.append(label, select);
  const doubt = doubtText(suggested);
  if (doubt) {
    const hint = document.createElement('p');
    hint.className = 'hint doubt';
    hint.id = `review-doubt-${index}`;
    hint.textContent = doubt;
    select.setAttribute('aria-describedby', hint.id);
    row.append(hint);
  }
  return row;
}

/** The texts one field cannot read, each with a choice of its allowed values (or none). */
function valuesSet(entry, index) {
  const set = document.createElement('fieldset');
  const legend = document.createElement('legend');
  legend.textContent = `Values of ${entry.field} it does not know`;
  set.append(legend);
  entry.unknown.forEach((text, j) => {
    const row = document.createElement('div');
    row.className = 'field';
    const label = document.createElement('label');
    label.htmlFor = `review-value-${index}-${j}`;
    label.textContent = `“${text}” means`;
    const select = document.createElement('select');
    select.id = `review-value-${index}-${j}`;
    select.dataset.field = entry.field;
    select.dataset.text = text;
    select.append(new Option('(leave it: an error)', ''));
    for (const value of entry.allowed) select.append(new Option(value, value));
    row.append(label, select);
    set.append(row);
  });
  return set;
}

/** The value maps chosen: field → {text → value}, the texts left alone out. */
function chosenValues() {
  const values = {};
  for (const select of $('review-values').querySelectorAll('select')) {
    if (select.value === '') continue;
    (values[select.dataset.field] ||= {})[select.dataset.text] = select.value;
  }
  return values;
}

/**
 * Opens the review of `file` (its task NEEDS_REVIEW, with its review); answered(task) gets the
 * task the answer made PENDING again.
 */
export function open(file, answered) {
  const review = file.task.review;
  if (!review) return;
  current = { file, answered };
  $('review-title').textContent = `Map the columns of ${file.file_name}`;
  $('review-reason').textContent = `${REASONS[review.reason] || review.reason} `
    + `The header is on row ${review.header_row}. Choose the column of each field.`;
  $('review-fields').replaceChildren(
    ...review.suggested_mapping.map((s, i) => fieldRow(s, i, review.columns)));
  $('review-values').replaceChildren(...(review.values || []).map(valuesSet));
  $('review-values').hidden = !(review.values || []).length;
  // Where the table was found: when the header is wrong, no mapping can be right.
  $('review-layout').textContent = layoutText(review.layout);
  $('review-layout').hidden = !review.layout;
  $('review-layout-fix').replaceChildren(layoutControl({
    task: file.task,
    sheetIndex: review.sheet_index || 0,
    layout: review.layout,
    prefix: 'review-layout',
    done: (task) => {
      if (current && current.file === file) close();
      answered(task);
    },
  }));
  $('review-error').textContent = '';
  $('review-confirm').disabled = false;
  $('review-dialog').showModal();
}

async function confirm(event) {
  event.preventDefault();
  if (!current) return;
  const { file, answered } = current;
  const mapping = {};
  for (const select of $('review-fields').querySelectorAll('select')) {
    mapping[select.dataset.field] = select.value === '' ? null : Number(select.value);
  }
  $('review-confirm').disabled = true;
  $('review-error').textContent = '';
  try {
    const body = { mapping, values: chosenValues() };
    const task = await api.sendJson(`/api/v1/tasks/${file.task.id}/mapping`, 'PUT', body);
    if (current && current.file === file) close();
    announce(`${file.file_name}: mapping confirmed, processing again`);
    answered(task);
  } catch (error) {
    $('review-confirm').disabled = false;
    if (error.status === 401) return;
    const details = (error.details || []).map((d) => d.message).join('; ');
    $('review-error').textContent = details ? `${error.message}: ${details}` : error.message;
  }
}

export function close() {
  current = null;
  if ($('review-dialog').open) $('review-dialog').close();
}

export function init() {
  $('review-form').addEventListener('submit', confirm);
  $('review-cancel').addEventListener('click', close);
  $('review-dialog').addEventListener('close', () => { current = null; });
}
