// Import templates through the page. A template made through the API is listed and shown in the
// Templates panel and offered by the upload's template chooser. A CSV with planted errors,
// uploaded through the page against it, shows the task's exact counts and its rows with errors
// as the API gives them (each field's text, the bad cells flagged, the records' messages) in a
// grid over two pages, and its rejected rows download as the API gives them. The same file with the policy overridden to reject_file is FAILED and still
// shows its report. Server text in the report is shown as text, and the report fits a phone.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { before, describe, test } from 'node:test';

import {
  api, browserForThisFile, createKey, fileRow, parseCsv, screenshot, signIn, waitForText,
} from './helpers.mjs';

// A tenant of its own: its templates and files are only these tests'.
const KEY = createKey('browser-templates', `templates-${randomUUID()}`);
const TEMPLATE = 'contacts';
const FIELDS = [
  { name: 'id', type: 'integer', constraints: { required: true, unique: true }, transforms: ['trim'] },
  { name: 'name', type: 'string', constraints: { required: true, maxLength: 40 } },
  { name: 'age', type: 'integer', constraints: { minimum: 0, maximum: 150 } },
  { name: 'country', type: 'string', constraints: { enum: ['FR', 'DE', 'NL'] },
    transforms: ['trim', { map: { France: 'FR' }, ignore_case: true }, 'upper'] },
];
// The grid's page of rows with errors; the planted errors fill more than one.
const GRID_ROWS = 25;
// Text that would run as markup if the page put server text into innerHTML.
const MARKUP = '<img src=x onerror=window.__xss=1>';

/**
 * contacts.csv: 40 records under a header that also has a column the template does not name
 * (`note`). Records 1–10 are valid; each of 11–40 has one planted error, in turn an age that is
 * not a number, an age over the maximum and a country outside the enum; record 12 has a second
 * one (its country), and record 40's age is markup. 30 rejected rows, 31 errors. Record r is
 * row r + 1 of the file.
 */
function contacts() {
  const lines = ['id,name,age,country,note'];
  for (let r = 1; r <= 40; r += 1) {
    let age = String(20 + r);
    let country = ['FR', 'DE', 'NL'][r % 3];
    if (r > 10) {
      if (r % 3 === 0) age = 'abc';
      else if (r % 3 === 1) age = '200';
      else country = 'XX';
    }
    if (r === 12) country = 'XX';
    if (r === 40) age = MARKUP;
    lines.push(`${r},Person ${r},${age},${country},note ${r}`);
  }
  return lines;
}
const CONTACTS = contacts();
const REJECTED_ROWS = Array.from({ length: 30 }, (_, k) => k + 12); // file rows 12..41

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

const chooser = () => page.getByLabel('Template', { exact: true });
const policy = () => page.getByLabel('Rows with errors', { exact: true });

/** Picks `name` in the file input with the template (and policy) chosen; waits for its task. */
async function uploadAgainstTemplate(name, onInvalid, final) {
  await chooser().selectOption(TEMPLATE);
  if (onInvalid) await policy().selectOption(onInvalid);
  await page.getByLabel('Choose files').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from(`${CONTACTS.join('\n')}\n`),
  });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), final);
  const id = await row.getAttribute('data-file-id');
  const { body: file } = await api(KEY, `/api/v1/files/${id}`);
  const { status, body } = await api(KEY, `/api/v1/files/${id}/errors?limit=1000`);
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.next_after, null);
  return { row, id, task: file.task, errors: body.errors };
}

async function openPreview(name) {
  await fileRow(page, name).getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(page.locator('#preview-title'), `Preview: ${name}`);
}

/** The grid as shown: each row's number, its cells' text, the fields flagged and its problems. */
function shownRows() {
  return page.locator('#errors-report tbody tr').evaluateAll((rows, fields) => rows.map((tr) => ({
    row: tr.querySelector('th').textContent,
    cells: [...tr.querySelectorAll('td[data-c] input')].map((input) => input.value),
    bad: [...tr.querySelectorAll('td.bad')].map((td) => fields[td.dataset.c - 1]),
    problems: tr.querySelector('.grid-problems').textContent,
  })), FIELDS.map((f) => f.name));
}

/** What the grid shows for file rows `rows`, from the file's text and the API's error records. */
function expectedRows(rows, errors) {
  return rows.map((row) => {
    const own = errors.filter((e) => e.row === row);
    return {
      row: String(row),
      cells: CONTACTS[row - 1].split(',').slice(0, FIELDS.length),
      bad: FIELDS.map((f) => f.name).filter((f) => own.some((e) => e.field === f)),
      problems: own.map((e) => e.message).join('; '),
    };
  });
}

/** The counts panel as shown: {term: number text}. */
async function shownCounts() {
  return Object.fromEntries(await page.locator('#validation-counts > div').evaluateAll((items) =>
    items.map((d) => [d.querySelector('dt').textContent, d.querySelector('dd').textContent])));
}

const errorsStatus = (text) => waitForText(page.locator('#errors-report .grid-status'), text);

test('the Templates panel lists the template, and shows its fields', async () => {
  const row = page.locator('#templates-body tr')
    .filter({ has: page.getByRole('rowheader', { name: TEMPLATE, exact: true }) });
  await row.waitFor();
  assert.deepEqual(await row.locator('td').allInnerTexts(), ['1', 'Drop invalid rows', '4', 'Show']);
  // The upload's chooser offers it, and the policy applies only once a template is chosen.
  assert.deepEqual(await chooser().locator('option').allTextContents(), ['No template', TEMPLATE]);
  assert.equal(await chooser().inputValue(), '');
  assert.equal(await policy().isDisabled(), true);

  await row.getByRole('button', { name: `Show template ${TEMPLATE}` }).click();
  const title = page.getByRole('heading', { name: `Template ${TEMPLATE}, version 1` });
  await title.waitFor();
  assert.equal(await page.evaluate(() => document.activeElement.id), 'template-title');
  const fields = await page.locator('#template-fields-body tr').evaluateAll((rows) => rows.map((tr) => ({
    name: tr.querySelector('th').textContent,
    type: tr.children[1].textContent,
    format: tr.children[2].textContent,
    constraints: [...tr.children[3].querySelectorAll('li')].map((li) => li.textContent),
    transforms: [...tr.children[4].querySelectorAll('li')].map((li) => li.textContent),
  })));
  assert.deepEqual(fields, [
    { name: 'id', type: 'integer', format: 'default', constraints: ['required', 'unique'], transforms: ['trim'] },
    { name: 'name', type: 'string', format: 'default', constraints: ['required', 'maxLength: 40'], transforms: [] },
    { name: 'age', type: 'integer', format: 'default', constraints: ['minimum: 0', 'maximum: 150'], transforms: [] },
    { name: 'country', type: 'string', format: 'default', constraints: ['enum: "FR", "DE", "NL"'],
      transforms: ['trim', 'map (any case): "France" → "FR"', 'upper'] },
  ]);
  const meta = await page.locator('#template-meta dt').allInnerTexts();
  assert.deepEqual(meta, ['Rows with errors', 'Sheet', 'Missing values', 'Created']);
  await screenshot(page, 'template-detail');
});

describe('a CSV with planted errors uploaded against the template', () => {
  const name = 'contacts.csv';
  let upload;

  before(async () => {
    upload = await uploadAgainstTemplate(name, null, 'COMPLETED');
  });

  test('the upload named the template: the task was checked and counted exactly', async () => {
    const v = upload.task.result.validation;
    assert.equal(v.template, TEMPLATE);
    assert.equal(v.on_invalid, 'drop_invalid_rows');
    assert.deepEqual([v.rows_valid, v.rows_rejected, v.errors_total, v.errors_truncated], [10, 30, 31, false]);
    assert.deepEqual([...new Set(upload.errors.map((e) => e.row))], REJECTED_ROWS);
    assert.equal(upload.errors.length, 31);
    const total = upload.task.result.rows_total;
    assert.equal(await upload.row.locator('.status-detail').innerText(),
      `${total} row${total === 1 ? '' : 's'}, 30 rejected`);
    const card = page.locator('.upload').filter({ hasText: name });
    assert.match(await card.locator('.hint').innerText(), / · template contacts$/);
  });

  test('the preview shows the counts and the first page of the rows with errors', async () => {
    await openPreview(name);
    await errorsStatus(`Rows with errors 1–${GRID_ROWS} of 30`);
    assert.deepEqual(await shownCounts(), { 'Valid rows': '10', 'Rejected rows': '30', Errors: '31' });
    assert.equal(await page.locator('#validation-template').innerText(),
      'Checked against template contacts, version 1. Rows with errors: drop invalid rows.');
    const byCode = Object.entries(upload.task.result.validation.errors_by_code);
    for (const [code, n] of byCode) {
      await waitForText(page.locator('#validation-codes'), `${code} ${n}`);
    }
    assert.deepEqual(await shownRows(), expectedRows(REJECTED_ROWS.slice(0, GRID_ROWS), upload.errors));
    assert.equal(await page.getByRole('button', { name: 'Previous rows' }).isDisabled(), true);
    assert.equal(await page.locator('#validation-truncated').isVisible(), false);
    await screenshot(page, 'template-report');
  });

  test('Next and Previous page through the rows, each page as the API has it', async () => {
    const next = page.getByRole('button', { name: 'Next rows' });
    const previous = page.getByRole('button', { name: 'Previous rows' });
    await next.click();
    await errorsStatus(`Rows with errors ${GRID_ROWS + 1}–30 of 30`);
    const shown = await shownRows();
    assert.deepEqual(shown, expectedRows(REJECTED_ROWS.slice(GRID_ROWS), upload.errors));
    assert.equal(await next.isDisabled(), true);
    // Focus left the button that became unavailable for the one that is not.
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Previous rows');

    // The markup in record 40's age is shown as the text it is.
    assert.equal(shown.find((r) => r.row === '41').cells[2], MARKUP);
    assert.equal(await page.locator('#errors-report img').count(), 0);
    assert.equal(await page.evaluate(() => window.__xss), undefined);

    await page.keyboard.press('Enter');
    await errorsStatus(`Rows with errors 1–${GRID_ROWS} of 30`);
    assert.deepEqual(await shownRows(), expectedRows(REJECTED_ROWS.slice(0, GRID_ROWS), upload.errors));
    assert.equal(await previous.isDisabled(), true);
  });

  test('Download rejected rows saves the rejected rows as the API exports them', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download rejected rows' }).click(),
    ]);
    const path = await download.path();
    assert.ok(path, `the download failed: ${await download.failure()}`);
    const text = await readFile(path, 'utf8');
    const exported = await api(KEY, `/api/v1/files/${upload.id}/errors/export?format=csv`);
    assert.equal(exported.status, 200);
    assert.equal(text, exported.body);

    // The file's own columns with each rejected row's original text, then its errors.
    const [header, ...records] = parseCsv(text);
    assert.deepEqual(header, ['id', 'name', 'age', 'country', 'note', 'errors']);
    assert.deepEqual(records.map((r) => r.slice(0, 5)),
      REJECTED_ROWS.map((row) => CONTACTS[row - 1].split(',')));
    for (const [k, record] of records.entries()) {
      const messages = upload.errors.filter((e) => e.row === REJECTED_ROWS[k]).map((e) => e.message);
      assert.equal(record[5], messages.join('; '), `row ${REJECTED_ROWS[k]}`);
    }
    await waitForText(page.locator('#export-text'), `Exported ${download.suggestedFilename()}`);
  });
});

test('with the template\'s policy overridden to reject_file the file is FAILED and its report still shows', async () => {
  const name = 'contacts-rejected.csv';
  const upload = await uploadAgainstTemplate(name, 'reject_file', 'FAILED');
  assert.equal(upload.task.error.code, 'validation_failed');
  const v = upload.task.result.validation;
  assert.equal(v.on_invalid, 'reject_file');
  assert.deepEqual([v.rows_rejected, v.errors_total], [30, 31]);
  assert.equal(await upload.row.locator('.status-detail').innerText(),
    `validation_failed: ${upload.task.error.message}`);

  await openPreview(name);
  await errorsStatus(`Rows with errors 1–${GRID_ROWS} of 30`);
  assert.equal(await page.locator('#preview-summary').innerText(), 'Rejected by its template: no rows were stored.');
  assert.deepEqual(await shownCounts(), { 'Valid rows': String(v.rows_valid), 'Rejected rows': '30', Errors: '31' });
  assert.deepEqual(await shownRows(), expectedRows(REJECTED_ROWS.slice(0, GRID_ROWS), upload.errors));
  // No rows were stored to show between them.
  assert.equal(await page.getByLabel('Show only rows with errors').isVisible(), false);
  await waitForText(page.locator('#page-status'), 'The template rejected this file');
  assert.equal(await page.getByRole('tab').count(), 0);
  assert.equal(await page.getByRole('button', { name: 'Export CSV' }).isDisabled(), true);
  assert.equal(await page.getByRole('button', { name: 'Download rejected rows' }).isEnabled(), true);
  await screenshot(page, 'template-rejected');
});

test('on a phone-sized screen a template\'s report fits its width', async () => {
  const phone = await open({ viewport: { width: 390, height: 844 } });
  await signIn(phone, KEY);
  await fileRow(phone, 'contacts.csv').getByRole('button', { name: 'Preview contacts.csv' }).click();
  await waitForText(phone.locator('#errors-report .grid-status'), `Rows with errors 1–${GRID_ROWS} of 30`);
  const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
  await screenshot(phone, 'template-report-phone');
});
