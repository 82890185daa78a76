// The embeddable importer on an application's own page: a host page on another origin, under a
// strict Content Security Policy (no inline script or style, connections only to sheetrelay),
// loads /embed/importer.js with a plain <script src> and puts <sheetrelay-importer> in it with an
// import session's token. The end user picks a file inside the component; it is uploaded with
// the token (never the tenant's key), parsed against the session's template, the error report's
// bad row shown, and `sheetrelay-complete` dispatched with the file's summary. The page reports
// no CSP violation and no error. A second session, used up, makes the component dispatch
// `sheetrelay-error` with `session_exhausted`.

import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { EmbedHost, pick } from './embed_host.mjs';
import { badCells, fixByKeyboard, moveTo } from './grid.mjs';
import { api, browserForThisFile, createKey, screenshot } from './helpers.mjs';

const KEY = createKey('browser-embed', `embed-${randomUUID()}`);
const TEMPLATE = 'people';
const FIELDS = [
  { name: 'id', type: 'integer', constraints: { required: true } },
  { name: 'name', type: 'string' },
];
const FILE = 'id,name\n1,Ada\nnot-a-number,Grace\n3,Linus\n';

const open = browserForThisFile();
const host = new EmbedHost(KEY, TEMPLATE);

before(async () => {
  const put = await api(KEY, `/api/v1/templates/${TEMPLATE}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ schema: { fields: FIELDS } }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  await host.start();
});

after(() => host.stop());

const session = (more) => host.session(more);

/** Opens the host page and records the component's events in the page. */
async function openHost() {
  const page = await open();
  const violations = await host.open(page);
  return { page, violations };
}

test('an end user imports a file through the component on another origin under a strict CSP', async () => {
  await session();
  const { page, violations } = await openHost();
  const streams = [];
  page.on('request', (request) => {
    if (new URL(request.url()).pathname === '/api/v1/events/stream') streams.push(request.url());
  });
  await pick(page, 'contacts.csv', FILE);
  await page.waitForFunction(() => window.seen.length > 0, null, { timeout: 60_000 });
  const [event] = await page.evaluate(() => window.seen);
  assert.equal(event.type, 'sheetrelay-complete', JSON.stringify(event));
  assert.equal(event.detail.status, 'COMPLETED');
  // As the events' summary says it: rows_total counts the rows stored.
  assert.deepEqual(event.detail.summary, { rows_total: 2, rows_valid: 2, rows_rejected: 1 });
  // The bad row is shown, read through the token.
  const report = page.locator('sheetrelay-importer table');
  await report.waitFor();
  // Its bad cell is a field to fix it in place, in the row's line of the grid.
  const bad = page.locator('sheetrelay-importer td.bad input.cell-fix');
  assert.equal(await bad.inputValue(), 'not-a-number');
  await screenshot(page, 'embed-complete');

  // The file is the session's: its template, metadata and end user.
  const file = await api(KEY, `/api/v1/files/${event.detail.file_id}`);
  assert.equal(file.status, 200);
  assert.deepEqual(file.body.metadata, { crm_id: 'C-7' });
  assert.deepEqual(file.body.end_user, { id: 'u-42', name: 'Ada' });

  // The end user fixes the bad cell in place: one PATCH with the token, the result again.
  await bad.fill('2');
  await bad.press('Enter');
  await page.locator('sheetrelay-importer [part="fix-status"]').filter({ hasText: 'Saved as revision 1:' }).waitFor();
  await page.waitForFunction(() => window.seen.length > 1, null, { timeout: 30_000 });
  const fixed = (await page.evaluate(() => window.seen))[1];
  assert.deepEqual(fixed.detail.summary, { rows_total: 3, rows_valid: 3, rows_rejected: 0 });
  const rows = await api(KEY, `/api/v1/files/${event.detail.file_id}/rows`);
  assert.deepEqual(rows.body.rows.map((r) => r.values), [[1, 'Ada'], [2, 'Grace'], [3, 'Linus']]);
  assert.deepEqual(violations, [], 'no Content Security Policy violation');
  assert.equal(streams.length, 1, 'the task is followed on the session\'s event stream');
});

/**
 * people.csv with planted errors: records 1..45, each whose number is not 1 more than a multiple
 * of 3 with an id that is not a number (30 errors). Record r is row r + 1 of the file.
 */
function plantedPeople() {
  const lines = ['id,name'];
  for (let r = 1; r <= 45; r += 1) lines.push(`${r % 3 === 1 ? r : `n${r}`},Person ${r}`);
  return `${lines.join('\n')}\n`;
}

test('an end user fixes planted errors in the component\'s grid by keyboard', async () => {
  await session();
  const { page, violations } = await openHost();
  await pick(page, 'people.csv', plantedPeople());
  // So many ids are not numbers that the column is offered for review: it is the id all the same.
  const importer = page.locator('sheetrelay-importer');
  await importer.locator('select[data-field="id"]').selectOption('0', { timeout: 60_000 });
  await importer.locator('select[data-field="name"]').selectOption('1');
  await importer.locator('[part="confirm"]').click();
  const grid = importer.locator('table');
  const status = importer.locator('.grid-status');
  await status.filter({ hasText: 'Rows with errors 1–20 of 30' }).waitFor({ timeout: 60_000 });
  const [event] = await page.evaluate(() => window.seen);
  const fileId = event.detail.file_id;
  assert.deepEqual(await grid.locator('thead th').allInnerTexts(), ['Row', 'id', 'name', 'Problems']);
  assert.deepEqual(await grid.locator('tbody tr').first().locator('input').evaluateAll(
    (inputs) => inputs.map((i) => i.value)), ['n2', 'Person 2']);

  // Every row in file order, the valid ones read-only; the keyboard walks them.
  const only = importer.getByLabel('Show only rows with errors');
  await only.uncheck();
  await status.filter({ hasText: 'Rows 1–20' }).waitFor();
  const rows = grid.locator('tbody tr');
  assert.deepEqual(await rows.first().locator('td.valid').allInnerTexts(), ['1', 'Person 1']);
  assert.equal(await rows.nth(1).locator('th').innerText(), '3');
  await rows.first().locator('td').first().focus();
  await moveTo(page, grid, [3, 2]);
  assert.equal(await grid.locator('td:focus').innerText(), 'Person 4');
  await moveTo(page, grid, [2, 2]);
  assert.equal(await grid.locator('input:focus').inputValue(), 'Person 3');
  await screenshot(page, 'embed-grid');
  await only.check();
  await status.filter({ hasText: 'Rows with errors 1–20 of 30' }).waitFor();

  // A wrong fix: saved, and answered with what is still wrong.
  const note = importer.locator('[part="fix-status"]');
  const first = grid.locator('td.bad input').first();
  await first.fill('still wrong');
  await first.press('Enter');
  await note.filter({ hasText: 'Saved as revision 1:' }).waitFor();
  assert.match(await note.first().innerText(), /Still wrong on those rows: 1/);
  assert.equal(await grid.locator('td.bad input').first().inputValue(), 'still wrong');

  const right = (label) => /^Row (\d+), id/.exec(label)[1] - 1;
  for (let revision = 2; revision <= 3; revision += 1) {
    const bad = await badCells(grid);
    await grid.locator('tbody input').first().focus();
    await fixByKeyboard(page, grid, bad, (label) => String(right(label)));
    await page.keyboard.press('Enter');
    await note.filter({ hasText: `Saved as revision ${revision}:` }).waitFor();
  }
  assert.equal(await grid.count(), 0, 'nothing is left to fix');
  const last = (await page.evaluate(() => window.seen)).at(-1);
  assert.deepEqual(last.detail.summary, { rows_total: 45, rows_valid: 45, rows_rejected: 0 });
  const exported = await api(KEY, `/api/v1/files/${fileId}/rows/export?format=csv`);
  const reference = ['id,name', ...Array.from({ length: 45 }, (_, k) => `${k + 1},Person ${k + 1}`)];
  assert.deepEqual(exported.body.trimEnd().split('\n').map((l) => l.replace(/\r$/, '')), reference);
  assert.deepEqual(violations, [], 'no Content Security Policy violation');
  await screenshot(page, 'embed-fixed');
});

test('a used-up session makes the component say so with sheetrelay-error', async () => {
  await session({ max_uploads: 1 });
  const { page } = await openHost();
  await pick(page, 'first.csv', FILE);
  await page.waitForFunction(() => window.seen.length > 0, null, { timeout: 60_000 });
  await page.locator('sheetrelay-importer button', { hasText: 'Import another file' }).click();
  await pick(page, 'second.csv', FILE);
  await page.waitForFunction(() => window.seen.length > 1, null, { timeout: 60_000 });
  const seen = await page.evaluate(() => window.seen);
  assert.equal(seen[1].type, 'sheetrelay-error', JSON.stringify(seen));
  assert.equal(seen[1].detail.code, 'session_exhausted');
  await page.locator('sheetrelay-importer [part=error]').waitFor();
  // The refusal is the component's to show, not an error of the page: the 403 in the console
  // ("Failed to load resource") is a browser's note on any refused request.
  page.problems = page.problems.filter((p) => !/status of 403/.test(p));
});

test('the component asks for the mapping review, labelled and by keyboard, and completes', async () => {
  const ledger = `ledger-${randomUUID().slice(0, 8)}`;
  const put = await api(KEY, `/api/v1/templates/${ledger}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      schema: {
        fields: [
          { name: 'invoice', type: 'string', constraints: { required: true } },
          { name: 'amount', type: 'number', constraints: { required: true } },
        ],
      },
    }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  await session({ template: ledger });
  const { page, violations } = await openHost();
  await pick(page, 'ledger.csv', 'Ledger export\n\nRef,Sum\nA-1,5\nA-2,7\n');
  // Each field is a labelled choice of the file's columns, with their sample values.
  const invoice = page.locator('sheetrelay-importer').getByLabel('invoice');
  await invoice.waitFor({ timeout: 60_000 });
  assert.match(await invoice.innerText(), /Ref \(A-1, A-2\)/);
  // What the review's layout sets aside is said above the fields.
  const aside = page.locator('sheetrelay-importer [part=set-aside]');
  assert.equal(await aside.innerText(), 'Not imported: rows 1–2 (above the table).');
  await invoice.selectOption('0');
  await page.locator('sheetrelay-importer').getByLabel('amount').selectOption('1');
  const confirm = page.locator('sheetrelay-importer button', { hasText: 'Use these columns' });
  await confirm.focus();
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => window.seen.length > 0, null, { timeout: 60_000 });
  const [event] = await page.evaluate(() => window.seen);
  assert.equal(event.type, 'sheetrelay-complete', JSON.stringify(event));
  assert.equal(event.detail.status, 'COMPLETED');
  assert.equal(event.detail.summary.rows_valid, 2);
  assert.deepEqual(violations, []);
});

test('the component maps texts a boolean field does not know to its values', async () => {
  const paid = `paid-${randomUUID().slice(0, 8)}`;
  const put = await api(KEY, `/api/v1/templates/${paid}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      schema: {
        fields: [
          { name: 'invoice', type: 'string', constraints: { required: true } },
          { name: 'paid', type: 'boolean' },
        ],
      },
    }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  await session({ template: paid });
  const { page, violations } = await openHost();
  await pick(page, 'paid.csv', 'invoice,paid\nA-1,Y\nA-2,N\nA-3,ja\n');
  const component = page.locator('sheetrelay-importer');
  const yes = component.getByLabel('“Y” means');
  await yes.waitFor({ timeout: 60_000 });
  await yes.selectOption('true');
  await component.getByLabel('“N” means').selectOption('false');
  await component.getByLabel('“ja” means').selectOption('true');
  await component.locator('button', { hasText: 'Use these columns' }).click();
  await page.waitForFunction(() => window.seen.length > 0, null, { timeout: 60_000 });
  const [event] = await page.evaluate(() => window.seen);
  assert.equal(event.type, 'sheetrelay-complete', JSON.stringify(event));
  const rows = await api(KEY, `/api/v1/files/${event.detail.file_id}/rows?sheet=0`);
  assert.deepEqual(rows.body.rows.map((r) => r.values), [['A-1', true], ['A-2', false], ['A-3', true]]);
  assert.deepEqual(violations, []);
});

test('a large file goes through tus from the component and survives a cut connection', async () => {
  await session();
  const { page, violations } = await openHost();
  // 9 MiB: over the component's 8 MiB threshold, so three PATCHes of at most 4 MiB.
  let csv = 'id,name\n';
  for (let i = 1; csv.length < 9 * 1024 * 1024; i += 1) csv += `${i},person number ${i}\n`;
  const rows = csv.trimEnd().split('\n').length - 1;
  const seen = [];
  let cut = false;
  await page.route('**/api/v1/uploads/**', async (route) => {
    const method = route.request().method();
    seen.push(method);
    // The second PATCH is cut as a dropped connection would be: the component asks where the
    // upload stands (HEAD) and goes on from there.
    if (method === 'PATCH' && seen.filter((m) => m === 'PATCH').length === 2 && !cut) {
      cut = true;
      await route.abort('connectionreset');
      return;
    }
    await route.continue();
  });
  await pick(page, 'large.csv', csv);
  await page.waitForFunction(() => window.seen.length > 0, null, { timeout: 120_000 });
  const [event] = await page.evaluate(() => window.seen);
  assert.equal(event.type, 'sheetrelay-complete', JSON.stringify(event));
  assert.equal(event.detail.summary.rows_total, rows);
  assert.ok(cut, 'a PATCH was cut');
  const afterCut = seen.slice(seen.indexOf('PATCH') + 2);
  assert.equal(afterCut[0], 'HEAD', `after the cut: ${seen.join(' ')}`);
  // Stored once, byte for byte.
  const file = await api(KEY, `/api/v1/files/${event.detail.file_id}`);
  assert.equal(file.body.sha256, createHash('sha256').update(csv).digest('hex'));
  assert.equal(file.body.size_bytes, Buffer.byteLength(csv));
  assert.deepEqual(violations, []);
  // The cut is the test's doing, not an error of the page.
  page.problems = page.problems.filter((p) => !/ERR_CONNECTION_RESET|Failed to fetch/.test(p));
});

test('a tab closed mid-upload: the same file picked again resumes, sent and counted once', async () => {
  // One upload allowed: a second one would be refused with session_exhausted.
  await session({ max_uploads: 1 });
  const { page } = await openHost();
  let csv = 'id,name\n';
  for (let i = 1; csv.length < 9 * 1024 * 1024; i += 1) csv += `${i},person number ${i}\n`;
  // A file on disk, as a person picks it: the same name, size and modification time again.
  const path = join(await mkdtemp(join(tmpdir(), 'embed-resume-')), 'contacts.csv');
  await writeFile(path, csv);
  const firstChunk = page.waitForResponse(
    (r) => r.request().method() === 'PATCH' && r.status() === 204, { timeout: 120_000 });
  await page.locator('sheetrelay-importer input[type=file]').setInputFiles(path);
  await firstChunk;
  const context = page.context();
  await page.close();

  const again = await context.newPage();
  const violations = await host.open(again);
  const requests = [];
  again.on('request', (r) => {
    if (r.url().includes('/api/v1/uploads')) requests.push([r.method(), r.headers()['upload-offset']]);
  });
  await again.locator('sheetrelay-importer input[type=file]').setInputFiles(path);
  await again.waitForFunction(() => window.seen.length > 0, null, { timeout: 120_000 });
  const [event] = await again.evaluate(() => window.seen);
  assert.equal(event.type, 'sheetrelay-complete', JSON.stringify(event));
  const methods = requests.map(([m]) => m);
  assert.equal(methods[0], 'HEAD', methods.join(' '));
  assert.ok(!methods.includes('POST'), `no new upload: ${methods.join(' ')}`);
  const [, from] = requests.find(([m]) => m === 'PATCH');
  assert.ok(Number(from) >= 4 * 1024 * 1024, `resumed from ${from}`);
  const file = await api(KEY, `/api/v1/files/${event.detail.file_id}`);
  assert.equal(file.body.sha256, createHash('sha256').update(csv).digest('hex'));
  assert.equal(event.detail.summary.rows_total, csv.trimEnd().split('\n').length - 1);
  assert.deepEqual(violations, []);
});
