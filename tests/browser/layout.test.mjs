// What the preview says about a sheet's layout (result.sheets[].layout): where the header and the
// data are, and every range set aside and why (rows above the table, notes below it), so a
// person sees what was not imported without reading the API; and the control, in the preview and
// in the mapping review, that moves the header or the table's end and parses the file again.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import {
  api, browserForThisFile, createKey, fileRow, KEY_A, screenshot, signIn, waitForTask, waitForText,
} from './helpers.mjs';

const open = browserForThisFile();

const FILE = 'Sales report\nExported 2026-11-28\nid,amount\n1,2\n3,4\n5,6\n\nSource: the ledger\n';

test('the preview says which rows were the header, the data, and what was set aside', async () => {
  const page = await open();
  await signIn(page, KEY_A);
  const name = `layout-${randomUUID().slice(0, 8)}.csv`;
  await page.getByLabel('Choose files').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(FILE) });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'COMPLETED');
  await row.getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(page.locator('#preview-title'), `Preview: ${name}`);

  const id = await row.getAttribute('data-file-id');
  const { body: file } = await api(KEY_A, `/api/v1/files/${id}`);
  const { layout } = file.task.result.sheets[0];
  assert.deepEqual(layout.header_rows, [3], JSON.stringify(layout));
  assert.deepEqual(layout.set_aside.map((s) => [s.from_row, s.kind]), [[1, 'above'], [7, 'notes']]);

  const text = page.locator('#sheet-layout');
  await waitForText(text, 'Header: row 3.');
  const shown = await text.innerText();
  assert.match(shown, /Data: rows 4–6\./, shown);
  assert.match(shown, /Set aside, not imported: rows 1–2 \(above the table\); rows 7–8 \(notes below the table\)\./, shown);
  await screenshot(page, 'sheet-layout');
});

// A customs export whose source line the guess keeps as a row of the table.
const IMPORTS = 'Imports by year\nUnit: tonnes\n\ncountry,1989,1990,1991\nFrance,12,13,14\n'
  + 'Spain,16,17,18\n\nSource: customs office\nItaly (revised),20,21,22\n';

test('a person moves the table end in the preview and the file is parsed again', async () => {
  const page = await open();
  await signIn(page, KEY_A);
  const name = `imports-${randomUUID().slice(0, 8)}.csv`;
  await page.getByLabel('Choose files').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(IMPORTS) });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'COMPLETED');
  await row.getByRole('button', { name: `Preview ${name}` }).click();
  const text = page.locator('#sheet-layout');
  await waitForText(text, 'Data: rows 5–9.');

  // The control starts from the guess.
  await page.getByText('Wrong header or table end? Move it').click();
  const header = page.getByLabel('Header row', { exact: true });
  const last = page.getByLabel('Last row of the table');
  assert.equal(await header.inputValue(), '4');
  assert.equal(await last.inputValue(), '9');
  // A table ending above its header is refused with the API's reason; nothing changes.
  await last.fill('3');
  await page.getByRole('button', { name: 'Parse again with this layout' }).click();
  await waitForText(page.locator('#sheet-layout-fix .error'), 'must be below its header');

  await last.fill('6');
  await page.getByRole('button', { name: 'Parse again with this layout' }).click();
  await page.locator('#preview').waitFor({ state: 'hidden' });
  const id = await row.getAttribute('data-file-id');
  const { body: file } = await api(KEY_A, `/api/v1/files/${id}`);
  assert.deepEqual(file.task.layout_override, { sheets: [{ sheet: 0, header_row: 4, last_row: 6 }] });
  await waitForTask(KEY_A, file.task.id);
  await waitForText(row.locator('.status'), 'COMPLETED');

  await row.getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(text, 'Data: rows 5–6.');
  const shown = await text.innerText();
  assert.match(shown, /rows 7–9 \(another table, its header on row 9\)\. \(set by hand\)/, shown);
  await waitForText(page.locator('#page-status'), 'Rows 1–2 of 2');
  assert.equal(await page.locator('#rows-body tr').count(), 2);
  await screenshot(page, 'layout-moved');
});

test('the mapping review shows where the table is and moves its end', async () => {
  const key = createKey('browser-layout', `layout-${randomUUID()}`);
  const fields = [
    { name: 'invoice', type: 'string', constraints: { required: true } },
    { name: 'amount', type: 'number' },
  ];
  const put = await api(key, '/api/v1/templates/ledger', {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ schema: { fields } }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const page = await open();
  await signIn(page, key);
  const name = 'ledger.csv';
  await page.getByLabel('Template', { exact: true }).selectOption('ledger');
  await page.getByLabel('Choose files').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from('Ledger export\n\nRef,Sum\nA-1,5\nA-2,7\n'),
  });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'NEEDS_REVIEW');
  await row.getByRole('button', { name: `Review mapping of ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: `Map the columns of ${name}` });
  await dialog.waitFor();
  await waitForText(dialog.locator('#review-layout'), 'Header: row 3. Data: rows 4–5. Set aside, not imported: rows 1–2 (above the table).');

  await dialog.getByText('Wrong header or table end? Move it').click();
  await dialog.getByLabel('Last row of the table').fill('4');
  await dialog.getByRole('button', { name: 'Parse again with this layout' }).click();
  await dialog.waitFor({ state: 'hidden' });
  // Parsed again, the file asks for its review again, with the end moved.
  await waitForText(row.locator('.status'), 'NEEDS_REVIEW');
  await row.getByRole('button', { name: `Review mapping of ${name}` }).click();
  await dialog.waitFor();
  await waitForText(dialog.locator('#review-layout'), 'row 5 (notes below the table)');
  await screenshot(page, 'review-layout');
});

test('a file its template rejected for the notes under its table completes once they are set aside', async () => {
  const key = createKey('browser-layout-rejected', `layout-${randomUUID()}`);
  const put = await api(key, '/api/v1/templates/people', {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      on_invalid: 'reject_file',
      schema: { fields: [{ name: 'id', type: 'integer' }, { name: 'name', type: 'string' }] },
    }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const page = await open();
  await signIn(page, key);
  const name = 'people.csv';
  await page.getByLabel('Template', { exact: true }).selectOption('people');
  await page.getByLabel('Choose files').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from('id,name\n1,Ada\n2,Grace\n\nSource: HR export\n'),
  });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'FAILED');
  await row.getByRole('button', { name: `Preview ${name}` }).click();
  // No rows, but the layout that made the rows fail, and the way to move its end.
  await waitForText(page.locator('#sheet-layout'), 'Data: rows 2–5.');
  await page.getByText('Wrong header or table end? Move it').click();
  await page.getByLabel('Last row of the table').fill('3');
  await page.getByRole('button', { name: 'Parse again with this layout' }).click();
  await page.locator('#preview').waitFor({ state: 'hidden' });
  await waitForText(row.locator('.status'), 'COMPLETED');
  await row.getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(page.locator('#sheet-layout'), 'Set aside, not imported: rows 4–5 (notes below the table). (set by hand)');
  await waitForText(page.locator('#page-status'), 'Rows 1–2 of 2');
  assert.equal(await page.locator('#rows-body tr').count(), 2);
});
