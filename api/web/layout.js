// Where a sheet's table lies, in words (a result's `sheets[].layout`, or a review's `layout`):
// its header, its data, and every range set aside and why. And the control that moves the header
// or the table's end when the guess is wrong: it PUTs /api/v1/tasks/{id}/layout, and the task is
// parsed again with that layout (the preview and the mapping review both offer it).

import * as api from './api.js';
import { announce } from './util.js';

const ASIDE = {
  above: 'above the table',
  notes: 'notes below the table',
  table: 'another table',
};

/** `row 3` or `rows 1–2`. */
function rowRange(from, to) {
  return from === to ? `row ${from}` : `rows ${from}–${to}`;
}

/** What a sheet's layout says in words: header, data, and each range set aside. */
export function layoutText(layout) {
  if (!layout) return '';
  const parts = [];
  const header = layout.header_rows || [];
  parts.push(header.length ? `Header: ${rowRange(header[0], header[header.length - 1])}.` : 'No header row.');
  if (layout.data) parts.push(`Data: ${rowRange(layout.data.first_row, layout.data.last_row)}.`);
  const aside = (layout.set_aside || []).map((s) => {
    const its = s.header_row ? `, its header on row ${s.header_row}` : '';
    return `${rowRange(s.from_row, s.to_row)} (${ASIDE[s.kind] || s.kind}${its})`;
  });
  if (aside.length) parts.push(`Set aside, not imported: ${aside.join('; ')}.`);
  return parts.join(' ');
}

/** A labelled number input for a row of a sheet of `records` rows. */
function rowInput(id, text, value, records) {
  const label = document.createElement('label');
  label.htmlFor = id;
  label.textContent = text;
  const input = document.createElement('input');
  input.type = 'number';
  input.id = id;
  input.min = '1';
  if (records) input.max = String(records);
  input.value = value === null || value === undefined ? '' : String(value);
  const field = document.createElement('div');
  field.className = 'field';
  field.append(label, input);
  return { field, input };
}

/**
 * The control that moves sheet `sheetIndex`'s header or table end for `task`, from `layout` as the
 * last parse found it (`prefix` keeps its ids apart from another control's). Whatever other sheets
 * a person set before stays set. done(task) gets the task, PENDING again.
 */
export function layoutControl({ task, sheetIndex, layout, prefix, done }) {
  const box = document.createElement('details');
  box.className = 'layout-fix';
  const summary = document.createElement('summary');
  summary.textContent = 'Wrong header or table end? Move it';
  const records = layout ? layout.records : null;
  const headerRows = (layout && layout.header_rows) || [];
  const header = rowInput(`${prefix}-header-row`, 'Header row',
    headerRows.length ? headerRows[headerRows.length - 1] : null, records);
  const none = document.createElement('label');
  none.className = 'check';
  const noHeader = document.createElement('input');
  noHeader.type = 'checkbox';
  noHeader.id = `${prefix}-no-header`;
  noHeader.checked = layout ? headerRows.length === 0 : false;
  none.append(noHeader, ' No header row: every row is data');
  header.input.disabled = noHeader.checked;
  noHeader.addEventListener('change', () => { header.input.disabled = noHeader.checked; });
  const last = rowInput(`${prefix}-last-row`, 'Last row of the table',
    layout && layout.data ? layout.data.last_row : null, records);
  const hint = document.createElement('p');
  hint.className = 'hint';
  hint.textContent = `Empty: the table runs to the sheet's last row${records ? ` (row ${records})` : ''}. `
    + 'The rows above the header and below the last row are set aside, and the file is parsed again.';
  const error = document.createElement('p');
  error.className = 'error';
  error.setAttribute('role', 'alert');
  const send = document.createElement('button');
  send.type = 'button';
  send.className = 'secondary';
  send.id = `${prefix}-reparse`;
  send.textContent = 'Parse again with this layout';
  send.addEventListener('click', async () => {
    const earlier = ((task.layout_override && task.layout_override.sheets) || [])
      .filter((s) => s.sheet !== sheetIndex);
    const mine = {
      sheet: sheetIndex,
      header_row: noHeader.checked || header.input.value === '' ? null : Number(header.input.value),
      last_row: last.input.value === '' ? null : Number(last.input.value),
    };
    send.disabled = true;
    error.textContent = '';
    try {
      const body = { sheets: [...earlier, mine] };
      const pending = await api.sendJson(`/api/v1/tasks/${task.id}/layout`, 'PUT', body);
      announce('Parsing again with the layout you set');
      done(pending);
    } catch (e) {
      send.disabled = false;
      if (e.status === 401) return;
      const details = (e.details || []).map((d) => d.message).join('; ');
      error.textContent = details ? `${e.message}: ${details}` : e.message;
    }
  });
  const fields = document.createElement('div');
  fields.className = 'row';
  fields.append(header.field, last.field);
  box.append(summary, fields, none, hint, error, send);
  return box;
}
