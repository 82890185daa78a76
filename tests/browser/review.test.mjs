// The mapping review through the page. A CSV whose columns carry other names than the template's
// fields, uploaded through the page against the template, stops in NEEDS_REVIEW: its row offers
// "Review mapping", whose dialog lists each field with a choice of the file's columns (with their
// sample values), prefilled from the suggested mapping. A wrong choice is refused with the API's
// reason; the right one PUTs the mapping and the page follows the task to COMPLETED, with the
// rows under the template's fields and the mapping shown as confirmed by the API. A column named
// exactly like a field whose values do not fit it is still suggested, and the dialog says why it
// is unsure. Texts an enum or boolean field does not know are listed with the values it allows;
// what a person maps is applied, and the next file with those texts needs no review.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, test } from 'node:test';

import {
  api, browserForThisFile, createKey, fileRow, screenshot, signIn, waitForText,
} from './helpers.mjs';

// A tenant of its own: its templates, files and remembered mappings are only this test's.
const KEY = createKey('browser-review', `review-${randomUUID()}`);
const TEMPLATE = 'ledger';
// The same fields, for a file of its own: nothing the first test confirms is remembered for it.
const VALUES_TEMPLATE = 'ledger-values';
const FIELDS = [
  { name: 'invoice', type: 'string', constraints: { required: true } },
  { name: 'amount', type: 'number', constraints: { required: true } },
  { name: 'note', type: 'string' },
];
const FILE = 'Ledger export\n\nRef,Sum,note\nA-1,5,first\nA-2,7,second\n';
// Yes and no in the application's words, under a boolean field.
const PAID_TEMPLATE = 'ledger-paid';
const PAID_FIELDS = [
  { name: 'invoice', type: 'string', constraints: { required: true } },
  { name: 'paid', type: 'boolean' },
];
const PAID_FILE = 'invoice,paid\nA-1,Y\nA-2,N\nA-3,ja\n';

const open = browserForThisFile();
let page;

before(async () => {
  for (const template of [TEMPLATE, VALUES_TEMPLATE]) {
    const put = await api(KEY, `/api/v1/templates/${template}`, {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ schema: { fields: FIELDS } }),
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));
  }
  const put = await api(KEY, `/api/v1/templates/${PAID_TEMPLATE}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ schema: { fields: PAID_FIELDS } }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  page = await open();
  await signIn(page, KEY);
});

test('a file whose columns need a review is mapped in the page and completes', async () => {
  const name = 'ledger.csv';
  await page.getByLabel('Template', { exact: true }).selectOption(TEMPLATE);
  await page.getByLabel('Choose files').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from(FILE),
  });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'NEEDS_REVIEW');
  await row.getByRole('button', { name: `Review mapping of ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: `Map the columns of ${name}` });
  await dialog.waitFor();

  // Each field with the file's columns and their samples, prefilled from the suggestion.
  const invoice = dialog.getByLabel('invoice', { exact: true });
  const amount = dialog.getByLabel('amount', { exact: true });
  const note = dialog.getByLabel('note', { exact: true });
  assert.deepEqual(await invoice.locator('option').allTextContents(), [
    'No column', 'Ref (e.g. A-1, A-2)', 'Sum (e.g. 5, 7)', 'note (e.g. first, second)',
  ]);
  assert.equal(await invoice.inputValue(), '');
  assert.equal(await amount.inputValue(), '');
  assert.equal(await note.inputValue(), '2');
  await screenshot(page, 'review-dialog');

  // A required field left without a column: the API's reason, and the dialog stays.
  await invoice.selectOption({ label: 'Ref (e.g. A-1, A-2)' });
  await dialog.getByRole('button', { name: 'Confirm mapping' }).click();
  await waitForText(dialog.locator('#review-error'), '"amount" is required');

  await amount.selectOption({ label: 'Sum (e.g. 5, 7)' });
  await dialog.getByRole('button', { name: 'Confirm mapping' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await waitForText(row.locator('.status'), 'COMPLETED');

  const id = await row.getAttribute('data-file-id');
  const { body: file } = await api(KEY, `/api/v1/files/${id}`);
  const mapping = file.task.result.validation.mapping.map((m) => [m.field, m.column_index, m.match]);
  assert.deepEqual(mapping, [
    ['invoice', 0, 'confirmed'], ['amount', 1, 'confirmed'], ['note', 2, 'confirmed'],
  ]);
  const { body: rows } = await api(KEY, `/api/v1/files/${id}/rows?sheet=0`);
  assert.deepEqual(rows.rows.map((r) => r.values), [['A-1', 5, 'first'], ['A-2', 7, 'second']]);
});

test('a suggestion whose values do not fit its field says so in the review', async () => {
  const template = VALUES_TEMPLATE;
  // `amount` is named exactly, but holds names.
  const name = 'names-as-amounts.csv';
  await page.getByLabel('Template', { exact: true }).selectOption(template);
  await page.getByLabel('Choose files').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from('Ref,amount,note\nA-1,Ann,x\nA-2,Bo,y\nA-3,Cy,z\n'),
  });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'NEEDS_REVIEW');
  await row.getByRole('button', { name: `Review mapping of ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: `Map the columns of ${name}` });
  await dialog.waitFor();
  const amount = dialog.getByLabel('amount', { exact: true });
  assert.equal(await amount.inputValue(), '1', 'still suggested');
  const doubt = await amount.getAttribute('aria-describedby');
  await waitForText(dialog.locator(`#${doubt}`), 'Unsure (30 %): its values do not fit the field.');
  // A certain suggestion has no such line.
  assert.equal(await dialog.getByLabel('note', { exact: true }).getAttribute('aria-describedby'), null);
  await screenshot(page, 'review-doubt');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
});

test('texts a boolean field does not know are mapped in the review and learned', async () => {
  const upload = async (name) => {
    await page.getByLabel('Template', { exact: true }).selectOption(PAID_TEMPLATE);
    await page.getByLabel('Choose files').setInputFiles({
      name, mimeType: 'text/csv', buffer: Buffer.from(PAID_FILE),
    });
    return fileRow(page, name);
  };
  const row = await upload('paid.csv');
  await waitForText(row.locator('.status'), 'NEEDS_REVIEW');
  await row.getByRole('button', { name: 'Review mapping of paid.csv' }).click();
  const dialog = page.getByRole('dialog', { name: 'Map the columns of paid.csv' });
  await dialog.waitFor();
  const values = dialog.getByRole('group', { name: 'Values of paid it does not know' });
  const yes = values.getByLabel('“Y” means');
  assert.deepEqual(await yes.locator('option').allTextContents(), [
    '(leave it: an error)', 'true', 'True', 'TRUE', '1', 'false', 'False', 'FALSE', '0',
  ]);
  await yes.selectOption('true');
  await values.getByLabel('“N” means').selectOption('false');
  await values.getByLabel('“ja” means').selectOption('true');
  await screenshot(page, 'review-values');
  await dialog.getByRole('button', { name: 'Confirm mapping' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await waitForText(row.locator('.status'), 'COMPLETED');
  const id = await row.getAttribute('data-file-id');
  const { body: rows } = await api(KEY, `/api/v1/files/${id}/rows?sheet=0`);
  assert.deepEqual(rows.rows.map((r) => r.values), [['A-1', true], ['A-2', false], ['A-3', true]]);

  // The same texts next month: no review.
  const next = await upload('paid-next.csv');
  await waitForText(next.locator('.status'), 'COMPLETED');
});
