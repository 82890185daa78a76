// The embeddable importer on an application's own page: a host page on another origin, under a
// strict Content Security Policy (no inline script or style, connections only to sheetrelay),
// loads /embed/importer.js with a plain <script src> and puts <sheetrelay-importer> in it with an
// import session's token. The end user picks a file inside the component; it is uploaded with
// the token (never the tenant's key), parsed against the session's template, the error report's
// bad row shown, and `sheetrelay-complete` dispatched with the file's summary. The page reports
// no CSP violation and no error. A second session, used up, makes the component dispatch
// `sheetrelay-error` with `session_exhausted`.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { BASE_URL, api, browserForThisFile, createKey, screenshot } from './helpers.mjs';

const KEY = createKey('browser-embed', `embed-${randomUUID()}`);
const TEMPLATE = 'people';
const FIELDS = [
  { name: 'id', type: 'integer', constraints: { required: true } },
  { name: 'name', type: 'string' },
];
const FILE = 'id,name\n1,Ada\nnot-a-number,Grace\n3,Linus\n';

const open = browserForThisFile();
let host;
let hostOrigin;
let token = '';

/** The host page: the component with the current token, and nothing inline. */
function hostPage() {
  const api = BASE_URL.replace(/\/+$/, '');
  return `<!doctype html><html><head><meta charset="utf-8"><title>An application</title></head>
<body><h1>Import your contacts</h1>
<sheetrelay-importer token="${token}" api-base="${api}"></sheetrelay-importer>
<script src="${api}/embed/importer.js"></script></body></html>`;
}

before(async () => {
  const put = await api(KEY, `/api/v1/templates/${TEMPLATE}`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ schema: { fields: FIELDS } }),
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  host = http.createServer((request, response) => {
    const api = new URL(BASE_URL).origin;
    response.writeHead(200, {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy':
        `default-src 'none'; script-src ${api}; connect-src ${api}; style-src 'none'; img-src 'none'`,
    });
    response.end(hostPage());
  });
  await new Promise((resolve) => { host.listen(0, '127.0.0.1', resolve); });
  hostOrigin = `http://127.0.0.1:${host.address().port}`;
});

after(() => new Promise((resolve) => { host.close(resolve); }));

async function session(more = {}) {
  const created = await api(KEY, '/api/v1/sessions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      template: TEMPLATE,
      end_user: { id: 'u-42', name: 'Ada' },
      metadata: { crm_id: 'C-7' },
      allowed_origins: [hostOrigin],
      ...more,
    }),
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body;
}

/** Opens the host page and records the component's events in the page. */
async function openHost() {
  const page = await open();
  const violations = [];
  page.on('console', (message) => {
    if (/Content Security Policy/.test(message.text())) violations.push(message.text());
  });
  await page.goto(hostOrigin);
  await page.waitForFunction(() => customElements.get('sheetrelay-importer') !== undefined);
  await page.evaluate(() => {
    const element = document.querySelector('sheetrelay-importer');
    window.seen = [];
    for (const type of ['sheetrelay-complete', 'sheetrelay-error']) {
      element.addEventListener(type, (event) => window.seen.push({ type, detail: event.detail }));
    }
  });
  return { page, violations };
}

async function pick(page, name, text) {
  await page.locator('sheetrelay-importer input[type=file]').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from(text),
  });
}

test('an end user imports a file through the component on another origin under a strict CSP', async () => {
  token = (await session()).token;
  const { page, violations } = await openHost();
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
  assert.match(await report.innerText(), /not-a-number/);
  await screenshot(page, 'embed-complete');

  // The file is the session's: its template, metadata and end user.
  const file = await api(KEY, `/api/v1/files/${event.detail.file_id}`);
  assert.equal(file.status, 200);
  assert.deepEqual(file.body.metadata, { crm_id: 'C-7' });
  assert.deepEqual(file.body.end_user, { id: 'u-42', name: 'Ada' });
  assert.deepEqual(violations, [], 'no Content Security Policy violation');
});

test('a used-up session makes the component say so with sheetrelay-error', async () => {
  token = (await session({ max_uploads: 1 })).token;
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
  token = (await session({ template: ledger })).token;
  const { page, violations } = await openHost();
  await pick(page, 'ledger.csv', 'Ledger export\n\nRef,Sum\nA-1,5\nA-2,7\n');
  // Each field is a labelled choice of the file's columns, with their sample values.
  const invoice = page.locator('sheetrelay-importer').getByLabel('invoice');
  await invoice.waitFor({ timeout: 60_000 });
  assert.match(await invoice.innerText(), /Ref \(A-1, A-2\)/);
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

test('a large file goes through tus from the component and survives a cut connection', async () => {
  token = (await session()).token;
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
  const { createHash } = await import('node:crypto');
  assert.equal(file.body.sha256, createHash('sha256').update(csv).digest('hex'));
  assert.equal(file.body.size_bytes, Buffer.byteLength(csv));
  assert.deepEqual(violations, []);
  // The cut is the test's doing, not an error of the page.
  page.problems = page.problems.filter((p) => !/ERR_CONNECTION_RESET|Failed to fetch/.test(p));
});
