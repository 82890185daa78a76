// Uploading through the page and reading the result: a CSV and a workbook at once through the
// file input (progress, the server's processing step, live status), the preview (values, types,
// paging to the last row, sheet tabs with the hidden sheet marked, by mouse and keyboard, only
// the last of two quick opens shown), both exports compared with the sources and their progress,
// drag and drop, a workbook without sheets, refused files with the server's message, and
// dismissing finished uploads.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { before, describe, test } from 'node:test';

import {
  CUSTOMER_COLUMNS, CUSTOMER_TYPES, customersCsv, customerValues, inventoryXlsx, workbookValues,
  WORKBOOK,
} from './fixtures.mjs';
import {
  answersTo, api, apiUpload, browserForThisFile, createKey, fileRow, holdRequests, listAllFiles,
  parseCsv, recorded, recordTexts, screenshot, signIn, waitForAnswers, waitForText, xlsx,
} from './helpers.mjs';

const CSV = customersCsv();
const XLSX = inventoryXlsx();
// A tenant of its own: the list holds only what these tests upload.
const KEY = createKey('browser-upload', `upload-${randomUUID()}`);

const open = browserForThisFile();
let page;

before(async () => {
  page = await open({ traceFetches: true });
  await signIn(page, KEY);
});

/** The cell texts of the preview's body rows (row number first). */
function previewRows() {
  return page.locator('#rows-body tr').evaluateAll((rows) => rows.map((tr) =>
    [...tr.children].map((cell) => cell.textContent)));
}

/** What the preview shows for a row of values: its number, then each value as text. */
function shown(number, values) {
  return [String(number), ...values.map((v) => (v === null ? '' : String(v)))];
}

async function pageStatus(expected) {
  await waitForText(page.locator('#page-status'), expected);
}

async function openPreview(name) {
  await fileRow(page, name).getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(page.locator('#preview-title'), `Preview: ${name}`);
}

async function exportFile(format) {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: `Export ${format}` }).click(),
  ]);
  const file = await download.path();
  assert.ok(file, `the ${format} download failed: ${await download.failure()}`);
  return { name: download.suggestedFilename(), text: await readFile(file, 'utf8') };
}

describe('uploading a CSV and a workbook through the file input', () => {
  before(async () => {
    await recordTexts(page, 'upload', '.upload-status');
    await recordTexts(page, 'status', '#files-body .status');
    await page.getByLabel('Choose files').setInputFiles([
      { name: 'customers.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) },
      { name: 'inventory.xlsx', mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', buffer: XLSX },
    ]);
    for (const name of ['customers.csv', 'inventory.xlsx']) {
      await waitForText(fileRow(page, name).locator('.status'), 'COMPLETED');
    }
  });

  test('each file had its own upload progress bar, filled when the server accepted it', async () => {
    const cards = page.locator('.upload');
    assert.equal(await cards.count(), 2);
    for (const name of ['customers.csv', 'inventory.xlsx']) {
      const bar = cards.filter({ hasText: name }).getByRole('progressbar', { name: `Upload of ${name}` });
      assert.equal(await bar.evaluate((p) => p.value), 100);
    }
    // What the card said: the percentages of the upload's progress events while sending (on
    // loopback a small file goes in one event, so there may be none), never going back; then,
    // with every byte sent, that the server is at work, until its answer gave the task status.
    for (const name of ['customers.csv', 'inventory.xlsx']) {
      const states = (await recorded(page, 'upload')).filter((s) => s.file === name).map((s) => s.text);
      const sending = states.filter((s) => /^uploading: \d+% · /.test(s));
      const progress = sending.map((s) => Number(/(\d+)%/.exec(s)[1]));
      assert.ok(progress.every((p) => p < 100), `${name}: ${JSON.stringify(states)}`);
      assert.deepEqual(progress, [...progress].sort((a, b) => a - b), `${name} went backwards`);
      const processing = states.indexOf('processing on the server…');
      assert.ok(processing >= 0, `${name}: ${JSON.stringify(states)}`);
      assert.ok(states.slice(processing + 1).every((s) => !s.startsWith('uploading')), `${name}: ${JSON.stringify(states)}`);
      assert.match(states.at(-1), /^COMPLETED/, `${name}: ${JSON.stringify(states)}`);
    }
  });

  test('the status went from PENDING to COMPLETED live, without a reload', async () => {
    const order = ['PENDING', 'RUNNING', 'COMPLETED'];
    for (const name of ['customers.csv', 'inventory.xlsx']) {
      const states = (await recorded(page, 'status')).filter((s) => s.file === name).map((s) => s.text);
      assert.equal(states[0], 'PENDING', `${name}: ${states}`);
      assert.equal(states.at(-1), 'COMPLETED', `${name}: ${states}`);
      const ranks = states.map((s) => order.indexOf(s));
      assert.ok(ranks.every((r, i) => r >= 0 && (i === 0 || r >= ranks[i - 1])), `${name}: ${states}`);
    }
    const detail = await fileRow(page, 'customers.csv').locator('.status-detail').innerText();
    assert.equal(detail, '250 rows');
    // The page never navigated: the recordings above would be gone.
    assert.equal(await page.evaluate(() => performance.getEntriesByType('navigation').length), 1);
  });

  test('the CSV preview shows its columns, types and known values', async () => {
    await openPreview('customers.csv');
    await pageStatus('Rows 1–100 of 250, page 1 of 3');
    const headers = await page.locator('#rows-head th').allInnerTexts();
    assert.deepEqual(headers.map((h) => h.replace(/\s+/g, ' ').trim()),
      ['#', ...CUSTOMER_COLUMNS.map((c, i) => `${c} ${CUSTOMER_TYPES[i]}`)]);
    const rows = await previewRows();
    assert.equal(rows.length, 100);
    assert.deepEqual(rows[0], shown(1, customerValues(1)));
    assert.deepEqual(rows[2], shown(3, customerValues(3)));
    assert.equal(rows[2][6], 'Smith, "Jr."');
    assert.deepEqual(rows[99], shown(100, customerValues(100)));
  });

  test('the preview pages through the whole CSV to its last row and back', async () => {
    await page.getByRole('button', { name: 'Next' }).click();
    await pageStatus('Rows 101–200 of 250, page 2 of 3');
    assert.deepEqual((await previewRows())[0], shown(101, customerValues(101)));

    await page.getByRole('button', { name: 'Last' }).click();
    await pageStatus('Rows 201–250 of 250, page 3 of 3');
    const last = await previewRows();
    assert.equal(last.length, 50);
    assert.deepEqual(last.at(-1), shown(250, customerValues(250)));
    assert.equal(await page.getByRole('button', { name: 'Next' }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Last' }).isDisabled(), true);

    // By keyboard: Previous, then First.
    await page.getByRole('button', { name: 'Previous' }).focus();
    await page.keyboard.press('Enter');
    await pageStatus('Rows 101–200 of 250, page 2 of 3');
    await page.getByRole('button', { name: 'First' }).focus();
    await page.keyboard.press('Enter');
    await pageStatus('Rows 1–100 of 250, page 1 of 3');
    assert.equal(await page.getByRole('button', { name: 'Previous' }).isDisabled(), true);
  });

  test('the CSV export holds the source file, cell for cell', async () => {
    const { name, text } = await exportFile('CSV');
    assert.match(name, /\.csv$/);
    assert.deepEqual(parseCsv(text), parseCsv(CSV));
  });

  test('the NDJSON export holds every row of the source, typed', async () => {
    const { name, text } = await exportFile('NDJSON');
    assert.match(name, /\.ndjson$/);
    const lines = text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
    const expected = Array.from({ length: 250 }, (_, k) => customerValues(k + 1));
    assert.deepEqual(lines, expected);
  });

  test('the workbook preview has a tab per sheet, the hidden one marked', async () => {
    await openPreview('inventory.xlsx');
    const tabs = page.getByRole('tab');
    assert.deepEqual(await tabs.allTextContents(), ['Stock', 'Costs hidden']);
    const stock = page.getByRole('tab', { name: 'Stock' });
    const costs = page.getByRole('tab', { name: /Costs/ });
    assert.equal(await stock.getAttribute('aria-selected'), 'true');
    assert.equal(await costs.getAttribute('aria-selected'), 'false');
    assert.equal(await stock.locator('.badge').count(), 0);
    await pageStatus('Rows 1–12 of 12, page 1 of 1');
    assert.deepEqual(await previewRows(), workbookValues(0).map((v, k) => shown(k + 1, v)));
    await screenshot(page, 'preview-workbook');
  });

  test('sheets switch by click and by arrow keys', async () => {
    await page.getByRole('tab', { name: /Costs/ }).click();
    await pageStatus('Rows 1–3 of 3, page 1 of 1');
    assert.deepEqual(await previewRows(), workbookValues(1).map((v, k) => shown(k + 1, v)));
    const headers = await page.locator('#rows-head .column-name').allInnerTexts();
    assert.deepEqual(headers, ['center', 'budget']);

    // The selected tab has focus after a click; ArrowRight wraps to the first sheet.
    await page.keyboard.press('ArrowRight');
    await pageStatus('Rows 1–12 of 12, page 1 of 1');
    assert.equal(await page.getByRole('tab', { name: 'Stock' }).getAttribute('aria-selected'), 'true');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Stock');
    await page.keyboard.press('End');
    await pageStatus('Rows 1–3 of 3, page 1 of 1');
  });

  test('the export of the hidden sheet holds that sheet', async () => {
    // The hidden sheet is still selected from the test above.
    assert.equal(await page.getByRole('tab', { name: /Costs/ }).getAttribute('aria-selected'), 'true');
    const csv = await exportFile('CSV');
    assert.deepEqual(parseCsv(csv.text), WORKBOOK[1].rows.map((row) => row.map(String)));
    const ndjson = await exportFile('NDJSON');
    const lines = ndjson.text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
    assert.deepEqual(lines, workbookValues(1));
  });

  test('the export of the first sheet holds its dates and booleans', async () => {
    await page.getByRole('tab', { name: 'Stock' }).click();
    await pageStatus('Rows 1–12 of 12, page 1 of 1');
    const ndjson = await exportFile('NDJSON');
    const lines = ndjson.text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
    assert.deepEqual(lines, workbookValues(0));
  });

  test('Preview on one file and at once on another shows the other, whichever answer is last', async () => {
    // The workbook is in the preview (from the tests above); customers.csv is opened after it.
    const book = await fileRow(page, 'inventory.xlsx').getAttribute('data-file-id');
    const bookFile = new RegExp(`/api/v1/files/${book}$`);
    const bookRows = new RegExp(`/api/v1/files/${book}/rows\\?`);

    // The workbook's file answer comes after customers.csv is shown.
    const file = await holdRequests(page, `**/api/v1/files/${book}`);
    const files = await answersTo(page, bookFile);
    await fileRow(page, 'inventory.xlsx').getByRole('button', { name: 'Preview inventory.xlsx' }).click();
    await file.caught();
    await openPreview('customers.csv');
    await pageStatus('Rows 1–100 of 250, page 1 of 3');
    file.release();
    await waitForAnswers(page, bookFile, { count: files + 1 });
    assert.equal(await page.locator('#preview-title').innerText(), 'Preview: customers.csv');
    assert.deepEqual((await previewRows())[0], shown(1, customerValues(1)));

    // Now its first rows come after customers.csv is shown and the reader has moved on: the
    // workbook takes neither the preview nor the focus.
    const rows = await holdRequests(page, (url) => url.pathname === `/api/v1/files/${book}/rows`);
    const pages = await answersTo(page, bookRows);
    await openPreview('inventory.xlsx');
    await rows.caught();
    await openPreview('customers.csv');
    await pageStatus('Rows 1–100 of 250, page 1 of 3');
    await page.getByRole('button', { name: 'Refresh' }).focus();
    rows.release();
    await waitForAnswers(page, bookRows, { count: pages + 1 });
    assert.equal(await page.locator('#preview-title').innerText(), 'Preview: customers.csv');
    const headers = await page.locator('#rows-head .column-name').allInnerTexts();
    assert.deepEqual(headers, CUSTOMER_COLUMNS);
    assert.deepEqual((await previewRows())[0], shown(1, customerValues(1)));
    assert.equal(await page.evaluate(() => document.activeElement.id), 'refresh-files');
  });

  test('an export shows how much it has received, and a second press waits for it', async () => {
    // customers.csv is in the preview (from the test above). Its export is held at the start.
    const exports = await holdRequests(page, (url) => url.pathname.endsWith('/rows/export'));
    const csv = page.getByRole('button', { name: 'Export CSV' });
    const ndjson = page.getByRole('button', { name: 'Export NDJSON' });
    const bar = page.getByRole('progressbar', { name: 'Export download' });
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      (async () => {
        await csv.click();
        await exports.caught();
        await waitForText(page.locator('#export-text'), 'Exporting CSV…');
        assert.equal(await bar.isVisible(), true);
        assert.equal(await csv.isDisabled(), true);
        assert.equal(await ndjson.isDisabled(), true);
        exports.release();
      })(),
    ]);
    const text = await readFile(await download.path(), 'utf8');
    assert.deepEqual(parseCsv(text), parseCsv(CSV));
    const size = await page.evaluate(async (n) => (await import('/assets/util.js')).formatBytes(n),
      Buffer.byteLength(text));
    await waitForText(page.locator('#export-text'), `Exported ${download.suggestedFilename()}: ${size}`);
    assert.equal(await bar.isVisible(), false);
    assert.equal(await csv.isDisabled(), false);
    assert.equal((await exports.caught()).length, 1);
  });

  test('the sheet downloads as a Parquet file', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export Parquet' }).click(),
    ]);
    assert.match(download.suggestedFilename(), /^customers.*\.parquet$/);
    const bytes = await readFile(await download.path());
    // A Parquet file begins and ends with its magic number.
    assert.equal(bytes.subarray(0, 4).toString('latin1'), 'PAR1');
    assert.equal(bytes.subarray(bytes.length - 4).toString('latin1'), 'PAR1');
    await waitForText(page.locator('#export-text'), `Exported ${download.suggestedFilename()}`);
  });
});

describe('other ways in, and files the server refuses', () => {
  test('a file dropped on the drop zone is uploaded and parsed', async () => {
    const zone = page.locator('#dropzone');
    const transfer = await page.evaluateHandle(() => {
      const data = new DataTransfer();
      data.items.add(new File(['city,people\nLyon,522000\nNantes,320000\n'], 'dropped.csv', { type: 'text/csv' }));
      return data;
    });
    await zone.dispatchEvent('dragenter', { dataTransfer: transfer });
    assert.equal(await zone.evaluate((z) => z.classList.contains('dragging')), true);
    await zone.dispatchEvent('drop', { dataTransfer: transfer });
    assert.equal(await zone.evaluate((z) => z.classList.contains('dragging')), false);
    await waitForText(fileRow(page, 'dropped.csv').locator('.status'), 'COMPLETED');
    await openPreview('dropped.csv');
    await pageStatus('Rows 1–2 of 2, page 1 of 1');
    assert.deepEqual(await previewRows(), [['1', 'Lyon', '522000'], ['2', 'Nantes', '320000']]);
  });

  test('a PDF is refused with the server\'s message, and is not listed', async () => {
    const pdf = Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
    // What the server says about this file, asked directly.
    const direct = await apiUpload(KEY, 'report.pdf', pdf);
    assert.equal(direct.status, 415);
    assert.equal(direct.body.error.code, 'unsupported_format');

    await page.getByLabel('Choose files').setInputFiles({ name: 'report.pdf', mimeType: 'application/pdf', buffer: pdf });
    const card = page.locator('.upload').filter({ hasText: 'report.pdf' });
    await waitForText(card.locator('.upload-status'), 'Refused');
    const text = await card.locator('.upload-status').innerText();
    assert.ok(text.includes(direct.body.error.message), text);
    assert.ok(text.includes('unsupported_format') && text.includes('415'), text);
    assert.equal(await fileRow(page, 'report.pdf').count(), 0);
    const names = (await listAllFiles(KEY)).map((f) => f.file_name);
    assert.ok(!names.includes('report.pdf'));
    await screenshot(page, 'refused');
  });

  test('a file over the size limit is refused with the size in words', async () => {
    const limit = Number(process.env.MAX_UPLOAD_BYTES);
    assert.ok(limit > 0, 'MAX_UPLOAD_BYTES is set by browser.sh');
    const big = Buffer.alloc(limit + 1024, 'a,b\n');
    await page.getByLabel('Choose files').setInputFiles({ name: 'huge.csv', mimeType: 'text/csv', buffer: big });
    const card = page.locator('.upload').filter({ hasText: 'huge.csv' });
    await waitForText(card.locator('.upload-status'), /Refused|Failed/);
    const text = await card.locator('.upload-status').innerText();
    assert.match(text, /payload_too_large/);
    assert.match(text, new RegExp(`${limit}`));
    assert.equal(await fileRow(page, 'huge.csv').count(), 0);
  });

  test('a workbook without sheets says so in its preview, and asks for no rows', async () => {
    await page.getByLabel('Choose files').setInputFiles({
      name: 'no-sheets.xlsx',
      mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      buffer: xlsx([]),
    });
    const row = fileRow(page, 'no-sheets.xlsx');
    await waitForText(row.locator('.status'), 'COMPLETED');
    const id = await row.getAttribute('data-file-id');
    await openPreview('no-sheets.xlsx');
    await pageStatus('This file has no sheets');
    assert.equal(await page.locator('#preview-summary').innerText(), '0 rows in 0 sheets');
    assert.equal(await page.getByRole('tab').count(), 0);
    assert.equal(await page.locator('#preview-error').innerText(), '');
    assert.equal(await page.locator('#rows-body tr').count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Export CSV' }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Next' }).isDisabled(), true);
    assert.equal(await page.evaluate((f) => window.__fetches.filter((e) => e.url.startsWith(`/api/v1/files/${f}/rows`)).length, id), 0);
  });

  test('a workbook that cannot be parsed shows FAILED with its code and message', async () => {
    // A truncated xlsx: a zip without its directory. The upload takes it (it starts like an
    // xlsx); the parser cannot read it.
    const truncated = XLSX.subarray(0, Math.floor(XLSX.length * 0.6));
    await page.getByLabel('Choose files').setInputFiles({
      name: 'broken.xlsx',
      mimeType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      buffer: truncated,
    });
    const row = fileRow(page, 'broken.xlsx');
    await waitForText(row.locator('.status'), 'FAILED');
    const { body: file } = await api(KEY, `/api/v1/files/${await row.getAttribute('data-file-id')}`);
    assert.equal(file.task.status, 'FAILED');
    const detail = await row.locator('.status-detail').innerText();
    assert.equal(detail, `${file.task.error.code}: ${file.task.error.message}`);
    assert.equal(await row.getByRole('button', { name: 'Preview broken.xlsx' }).isDisabled(), true);
  });

  test('finished uploads can be dismissed, by mouse or keyboard, and focus moves to the next', async () => {
    const cards = page.locator('.upload');
    const count = await cards.count();
    // Newest first: the broken workbook (FAILED), the one without sheets (COMPLETED), then the
    // file over the limit (refused).
    const broken = cards.filter({ hasText: 'broken.xlsx' });
    await broken.getByRole('button', { name: 'Dismiss broken.xlsx' }).click();
    await broken.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Dismiss no-sheets.xlsx');
    await page.keyboard.press('Enter');
    await cards.filter({ hasText: 'no-sheets.xlsx' }).waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Dismiss huge.csv');
    assert.equal(await cards.count(), count - 2);
    // The files stay listed.
    assert.equal(await fileRow(page, 'broken.xlsx').count(), 1);
  });
});
