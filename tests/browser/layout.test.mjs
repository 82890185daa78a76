// What the preview says about a sheet's layout (result.sheets[].layout): where the header and the
// data are, and every range set aside and why (rows above the table, notes below it), so a
// person sees what was not imported without reading the API.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import {
  api, browserForThisFile, fileRow, KEY_A, screenshot, signIn, waitForText,
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
