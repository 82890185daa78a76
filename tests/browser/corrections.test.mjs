// Fixing bad cells in place through the page (contract v1.3, "Corrections"). A file with 50
// planted errors is uploaded against a template; a person opens its report, a grid of the file's
// rows (one column per field) where each bad cell is flagged with its problem. They turn "Show
// only rows with errors" off and find the rows with errors among the valid ones in file order,
// walk the grid with the arrow keys, turn it back on, and fix the bad cells by keyboard: move to
// each with the arrows, type the right value, save with Enter (one revision per save), page
// after page as the server pages the rows. A wrong fix is answered with what is still wrong, and
// the grid shows it still flagged. Once every error is fixed, the sheet's export equals the
// hand-fixed reference, row for row in file order. With keep_invalid_rows, the stored invalid
// rows are shown once each, in their own place, as the rows with errors.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';

import { badCells, fixByKeyboard, focusedCell, moveTo } from './grid.mjs';
import {
  api, browserForThisFile, createKey, fileRow, screenshot, signIn, waitForTask, waitForText,
} from './helpers.mjs';

const KEY = createKey('browser-corrections', `corrections-${randomUUID()}`);
const TEMPLATE = 'orders';
const FIELDS = [
  { name: 'id', type: 'integer', constraints: { required: true, unique: true } },
  { name: 'qty', type: 'integer', constraints: { minimum: 1 } },
  { name: 'code', type: 'string', constraints: { pattern: 'A-[0-9]{2}' } },
];

/** Record r (1-based) as it should be. */
const good = (r) => [String(r), String((r % 7) + 1), `A-${String(r % 100).padStart(2, '0')}`];

/** 70 records; each of records 21..70 has one planted error, in turn qty not a number, qty 0,
 * a code off its pattern. Record r is row r + 1 of the file. */
function planted() {
  const lines = ['id,qty,code'];
  for (let r = 1; r <= 70; r += 1) {
    const cells = good(r);
    if (r > 20) {
      if (r % 3 === 0) cells[1] = 'many';
      else if (r % 3 === 1) cells[1] = '0';
      else cells[2] = `a${r}`;
    }
    lines.push(cells.join(','));
  }
  return `${lines.join('\n')}\n`;
}

const open = browserForThisFile();
let page;

before(async () => {
  const put = await api(KEY, `/api/v1/templates/${TEMPLATE}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ schema: { fields: FIELDS }, on_invalid: 'drop_invalid_rows' }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  page = await open();
  await signIn(page, KEY);
});

/** The right value of a bad cell, from its field's label "Row N, field: message". */
function rightValue(label) {
  const [, row, field] = /^Row (\d+), (\w+):/.exec(label);
  return good(Number(row) - 1)[FIELDS.findIndex((f) => f.name === field)];
}

const grid = () => page.locator('#errors-report table');
const gridStatus = () => page.locator('#errors-report .grid-status');

/** Waits for the grid read again from the server after a save, `left` rows with errors in it. */
function settled(left) {
  return page.waitForFunction((n) => {
    const report = document.getElementById('errors-report');
    if (n === 0) return report.hidden;
    const grid = report.querySelector('.row-grid');
    return !report.hidden && grid && grid.getAttribute('aria-busy') === 'false'
      && report.querySelector('.grid-status').textContent.endsWith(` of ${n}`);
  }, left);
}

test('a person fixes 50 planted errors in the grid and the export equals the hand-fixed file', async () => {
  const form = new FormData();
  form.append('template', TEMPLATE);
  form.append('file', new Blob([planted()]), 'orders.csv');
  const upload = await api(KEY, '/api/v1/files', { method: 'POST', body: form });
  assert.equal(upload.status, 202, JSON.stringify(upload.body));
  const task = await waitForTask(KEY, upload.body.task.id);
  assert.equal(task.result.validation.errors_total, 50);
  const id = upload.body.source_file.id;

  await page.reload();
  const name = 'orders.csv';
  await fileRow(page, name).getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(gridStatus(), 'Rows with errors 1–25 of 50');
  // One row per row with errors, one column per field: every cell editable, the bad one flagged
  // with its message.
  assert.deepEqual(await grid().locator('thead th').allInnerTexts(), ['Row', 'id', 'qty', 'code', 'Problems']);
  assert.equal(await grid().locator('tbody tr').count(), 25);
  assert.equal(await grid().locator('tbody input.cell-fix').count(), 75);
  const firstBad = grid().locator('td.bad').first();
  assert.equal(await firstBad.locator('input').getAttribute('aria-invalid'), 'true');
  assert.match(await firstBad.getAttribute('title'), /many/);
  assert.deepEqual(await grid().locator('tbody tr').first().locator('input').evaluateAll(
    (inputs) => inputs.map((i) => i.value)), ['21', 'many', 'A-21']);
  await screenshot(page, 'corrections-grid');

  // Every row, in file order: the valid ones read-only, the rows with errors among them.
  const only = page.getByLabel('Show only rows with errors');
  assert.equal(await only.isChecked(), true);
  await only.uncheck();
  await waitForText(gridStatus(), 'Rows 1–25');
  const rows = grid().locator('tbody tr');
  assert.deepEqual(await rows.first().locator('td.valid').allInnerTexts(), good(1));
  assert.equal(await rows.nth(19).locator('input').count(), 0);
  assert.equal(await rows.nth(20).locator('th').innerText(), '22');
  assert.equal(await rows.nth(20).locator('input').count(), 3);
  // The arrow keys walk the read-only cells into the editable ones, and back.
  await rows.first().locator('td').first().focus();
  await moveTo(page, grid(), [20, 2]);
  assert.equal(await grid().locator('input:focus').getAttribute('aria-label'), 'Row 22, qty: '
    + (await rows.nth(20).locator('td.bad').getAttribute('title')));
  await moveTo(page, grid(), [18, 3]);
  assert.deepEqual(await focusedCell(grid()), [18, 3]);
  await page.getByRole('button', { name: 'Next rows' }).click();
  await waitForText(gridStatus(), 'Rows 26–50');
  assert.equal(await rows.first().locator('th').innerText(), '27');
  await screenshot(page, 'corrections-all-rows');
  await only.check();
  await waitForText(gridStatus(), 'Rows with errors 1–25 of 50');

  // A wrong fix first: saved, answered with what is still wrong, and still flagged in the grid.
  const qty = grid().locator('tbody tr').first().locator('td.bad input');
  await qty.fill('-1');
  await qty.press('Enter');
  await page.locator('#errors-saved', { hasText: 'Saved as revision 1:' }).waitFor();
  assert.match(await page.locator('#errors-saved').innerText(), /Still wrong on those rows: 1/);
  await settled(50);
  assert.equal(await qty.inputValue(), '-1');
  assert.match(await grid().locator('td.bad').first().getAttribute('title'), /1/);
  let left = 50;

  let revision = 1;
  for (let round = 0; round < 5 && left > 0; round += 1) {
    const bad = await badCells(grid());
    await grid().locator('tbody input').first().focus();
    await fixByKeyboard(page, grid(), bad, rightValue);
    await page.keyboard.press('Enter');
    revision += 1;
    await page.locator('#errors-saved', { hasText: `Saved as revision ${revision}:` }).waitFor();
    // The grid is read again from the server: the rows fixed are gone from it.
    left -= bad.length;
    await settled(left);
  }
  await page.locator('#errors-report').waitFor({ state: 'hidden' });
  assert.equal(await page.locator('#validation-counts > div').last().locator('dd').innerText(), '0');
  const file = await api(KEY, `/api/v1/files/${id}`);
  assert.equal(file.body.task.result.validation.errors_total, 0);
  assert.equal(file.body.task.result.validation.rows_valid, 70);
  await screenshot(page, 'corrections-done');

  const exported = await api(KEY, `/api/v1/files/${id}/rows/export?format=csv`);
  assert.equal(exported.status, 200);
  const reference = ['id,qty,code', ...Array.from({ length: 70 }, (_, k) => good(k + 1).join(','))];
  assert.deepEqual(exported.body.trimEnd().split('\n').map((l) => l.replace(/\r$/, '')), reference);
});

test('kept invalid rows stand in their own place among the rows, once each', async () => {
  const lines = ['id,qty,code', ...[1, 2, 3, 4, 5, 6].map((r) => good(r).join(','))];
  lines[2] = '2,many,A-02';
  lines[5] = '5,3,b5';
  const form = new FormData();
  form.append('template', TEMPLATE);
  form.append('on_invalid', 'keep_invalid_rows');
  form.append('file', new Blob([`${lines.join('\n')}\n`]), 'kept.csv');
  const upload = await api(KEY, '/api/v1/files', { method: 'POST', body: form });
  assert.equal(upload.status, 202, JSON.stringify(upload.body));
  await waitForTask(KEY, upload.body.task.id);

  await page.reload();
  await fileRow(page, 'kept.csv').getByRole('button', { name: 'Preview kept.csv' }).click();
  await waitForText(gridStatus(), 'Rows with errors 1–2 of 2');
  await page.getByLabel('Show only rows with errors').uncheck();
  await waitForText(gridStatus(), 'Rows 1–6');
  // Each row once, in file order: the stored invalid rows are the rows with errors, editable.
  const shown = await grid().locator('tbody tr').evaluateAll((rows) => rows.map((tr) => [
    tr.querySelector('th').textContent,
    tr.querySelector('td[data-c="1"] input')?.value ?? tr.querySelector('td[data-c="1"]').textContent,
  ]));
  assert.deepEqual(shown, [['', '1'], ['3', '2'], ['', '3'], ['', '4'], ['6', '5'], ['', '6']]);
});
