// Fixing bad cells in place through the page (contract v1.3, "Corrections"). A file with 50
// planted errors is uploaded against a template; a person opens its report, where each bad cell
// is a field flagged with its problem, and fixes them by keyboard: types the right value, moves
// to the next bad cell with the arrow key, saves with Enter, page after page as the server pages
// the report. A wrong fix is answered with what is still wrong. Once every error is fixed, the
// sheet's export equals the hand-fixed reference, row for row in file order.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';

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

/** Waits for the report read again from the server after a save, `left` errors in it. */
function settled(left) {
  return page.waitForFunction((n) => {
    const report = document.getElementById('errors-report');
    if (n === 0) return report.hidden;
    return !report.hidden && report.getAttribute('aria-busy') === 'false'
      && document.getElementById('errors-status').textContent.endsWith(` of ${n}`);
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
  await waitForText(page.locator('#errors-status'), 'Errors 1–25 of 50');
  const cells = page.locator('#errors-body input.cell-fix');
  assert.equal(await cells.count(), 25);
  assert.equal(await cells.first().getAttribute('aria-invalid'), 'true');
  await screenshot(page, 'corrections-grid');

  // A wrong fix first: saved, and answered with what is still wrong.
  await cells.first().fill('-1');
  await cells.first().press('Enter');
  await page.locator('#errors-saved', { hasText: 'Saved as revision 1:' }).waitFor();
  assert.match(await page.locator('#errors-saved').innerText(), /Still wrong on those rows: 1/);
  await settled(50);
  let left = 50;

  let revision = 1;
  for (let round = 0; round < 5; round += 1) {
    if (left === 0) break;
    const n = await cells.count();
    await cells.first().focus();
    for (let i = 0; i < n; i += 1) {
      const focused = page.locator('#errors-body input.cell-fix:focus');
      const label = await focused.getAttribute('aria-label');
      await page.keyboard.press('Control+A');
      await page.keyboard.type(rightValue(label));
      if (i + 1 < n) await page.keyboard.press('ArrowDown');
    }
    await page.keyboard.press('Enter');
    revision += 1;
    await page.locator('#errors-saved', { hasText: `Saved as revision ${revision}:` }).waitFor();
    // The grid is read again from the server: the cells saved are gone from it.
    left -= n;
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
