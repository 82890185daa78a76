// Shared by the browser tests: the stack tests/stack/browser.sh started (found through the
// environment), headless Chromium through playwright-core, calls to the API with a key, a small
// xlsx writer and a CSV reader to check exports against their sources, and ways to hold things
// still: the page's requests (holdRequests), the worker mid-task (holdParsedSheets).

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { after } from 'node:test';

import { chromium } from 'playwright-core';

function required(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run the browser tests with tests/stack/browser.sh`);
  }
  return value;
}

export const BASE_URL = required('SHEETRELAY_URL');
export const KEY_A = required('SHEETRELAY_KEY_A');
export const KEY_B = required('SHEETRELAY_KEY_B');
const API_BIN = required('SHEETRELAY_API_BIN');
const DATABASE_URL = required('DATABASE_URL');
const PSQL = process.env.PG_BIN ? path.join(process.env.PG_BIN, 'psql') : 'psql';
export const ARTIFACTS = process.env.BROWSER_ARTIFACTS || path.join(os.tmpdir(), 'sheetrelay-browser');
mkdirSync(ARTIFACTS, { recursive: true });

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function launch() {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}

/**
 * The browser of one test file: launched by the first open(options) (newPage's options), so a
 * file's own before hooks may already open pages, and closed after the file's tests once every
 * page opened has been checked to have reported no problems.
 */
export function browserForThisFile() {
  let browser = null;
  const pages = [];
  after(async () => {
    for (const page of pages) assert.deepEqual(page.problems, [], 'the page reported errors');
    if (browser) await (await browser).close();
  });
  return async function open(options) {
    browser ??= launch();
    const page = await newPage(await browser, options);
    pages.push(page);
    return page;
  };
}

/**
 * A page in a fresh context (its own sessionStorage), collecting uncaught errors, console errors
 * and Content-Security-Policy violations in page.problems: each test asserts there are none.
 * (Console errors about failed requests are the browser reporting a 4xx/5xx the page handled,
 * such as the 401 of a rejected key or the 415 of a refused file, or a connection a test
 * refused on purpose, and are left out.)
 * traceFetches: the page records its fetches in window.__fetches (see waitForAnswers).
 */
export async function newPage(browser, { viewport = { width: 1280, height: 900 }, traceFetches = false } = {}) {
  const context = await browser.newContext({ viewport, acceptDownloads: true, baseURL: BASE_URL });
  const page = await context.newPage();
  if (traceFetches) await page.addInitScript(traceFetchesInPage);
  page.problems = [];
  page.on('pageerror', (error) => page.problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    if (/Failed to load resource: (the server responded with a status of|net::ERR_CONNECTION_REFUSED)/.test(message.text())) return;
    page.problems.push(`console: ${message.text()}`);
  });
  return page;
}

/** Signs in through the URL fragment and waits for the list of files. */
export async function signIn(page, key) {
  await page.goto(`/#key=${encodeURIComponent(key)}`);
  await page.getByRole('heading', { name: 'My files' }).waitFor();
}

export async function screenshot(page, name) {
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** The row of the files table for a file name. */
export function fileRow(page, name) {
  return page.locator('#files-body tr').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
}

// --- holding things still ------------------------------------------------------------------

/**
 * Runs in the page before its scripts: wraps fetch to record each call in window.__fetches as
 * {url, key, status, settled}. `settled` turns true in a task queued once the answer's body has
 * been read (or the fetch failed): a task runs only after every promise continuation queued
 * before it, so by then the page's code has finished with the answer. That is how a test knows
 * the page has dealt with an answer that should change nothing on screen. (A MessageChannel
 * task, because page.clock can hold setTimeout.)
 */
function traceFetchesInPage() {
  const log = [];
  window.__fetches = log;
  const fetch0 = window.fetch.bind(window);
  const afterwards = (entry) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      entry.settled = true;
    };
    channel.port2.postMessage(null);
  };
  window.fetch = async (input, init = {}) => {
    const entry = { url: String(input), key: new Headers(init.headers).get('Authorization'), status: 0, settled: false };
    log.push(entry);
    let response;
    try {
      response = await fetch0(input, init);
    } catch (error) {
      afterwards(entry);
      throw error;
    }
    entry.status = response.status;
    // The event stream (events.js) is read as it comes and never whole: dealt with once open.
    if ((response.headers.get('content-type') || '').startsWith('text/event-stream')) {
      afterwards(entry);
      return response;
    }
    for (const read of ['json', 'text', 'blob']) {
      const original = response[read].bind(response);
      response[read] = () => original().finally(() => afterwards(entry));
    }
    return response;
  };
}

// In the page, for answersTo: settled fetches to `pattern` (a RegExp's source) with the bearer
// key `auth` (null: any).
function settledAnswers({ pattern, auth }) {
  const url = new RegExp(pattern);
  return window.__fetches.filter((f) => f.settled && url.test(f.url) && (auth === null || f.key === auth)).length;
}

function answerQuery(path, key) {
  return {
    pattern: typeof path === 'string' ? path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : path.source,
    auth: key === undefined ? null : `Bearer ${key}`,
  };
}

/**
 * How many of the page's traced fetches (newPage's traceFetches) to `path` (a part of the URL,
 * or a RegExp), carrying `key` if given, have settled: been answered and dealt with.
 */
export function answersTo(page, path, { key } = {}) {
  return page.evaluate(settledAnswers, answerQuery(path, key));
}

/** Waits until `count` fetches have settled, as answersTo counts them. */
export async function waitForAnswers(page, path, { key, count = 1 } = {}) {
  await page.waitForFunction(({ pattern, auth, least }) => {
    const url = new RegExp(pattern);
    return window.__fetches.filter((f) => f.settled && url.test(f.url)
      && (auth === null || f.key === auth)).length >= least;
  }, { ...answerQuery(path, key), least: count });
}

/**
 * Holds the page's requests to `url` (a page.route matcher) for which `match(request)` is true,
 * until release(). Each then goes on to the server, or with answerFirst is answered by the
 * server when caught and that answer is held instead, so it predates what the page does
 * meanwhile. caught(n) resolves once n requests are held.
 */
export async function holdRequests(page, url, match = () => true, { answerFirst = false } = {}) {
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  const held = [];
  const waiters = [];
  await page.route(url, async (route) => {
    if (!match(route.request())) {
      await route.fallback();
      return;
    }
    const response = answerFirst ? await route.fetch() : null;
    held.push(route.request());
    for (const wake of waiters.splice(0)) wake();
    await gate;
    if (response) await route.fulfill({ response });
    else await route.continue();
  });
  return {
    async caught(n = 1) {
      while (held.length < n) await new Promise((resolve) => { waiters.push(resolve); });
      return held;
    },
    release,
  };
}

/** A page.route matcher for the files list, GET /api/v1/files?… (not a file, nor its rows). */
export const FILES_LIST = (url) => url.pathname === '/api/v1/files' && url.search !== '';

function psql(args, options) {
  return spawn(PSQL, ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', DATABASE_URL, ...args], options);
}

/** Polls until no task of any tenant is PENDING or RUNNING (each poll after the last answer). */
async function workerIdle(timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const busy = execFileSync(PSQL, ['-X', '-tA', '-d', DATABASE_URL, '-c',
      "SELECT count(*) FROM tasks WHERE status IN ('PENDING', 'RUNNING')"], { encoding: 'utf8' }).trim();
    if (busy === '0') return;
    if (Date.now() > deadline) throw new Error(`${busy} tasks are still PENDING or RUNNING`);
    await new Promise((resolve) => { setTimeout(resolve, 100); });
  }
}

/**
 * Holds the worker in the middle of every task it starts, deterministically: a transaction
 * holds parsed_sheets in SHARE mode (through psql on the test database) until release().
 *
 * The worker streams a file's rows into parsed_row_chunks with COPY while it parses, counting
 * them for its progress reporter, which UPDATEs the task every PROGRESS_INTERVAL; both go on
 * under this lock. Only after the last row does it INSERT the file's parsed_sheets rows, in the
 * same transaction as it completes the task, and that INSERT (ROW EXCLUSIVE) waits for the
 * lock. So while it is held a task is RUNNING with every row counted, and cannot complete.
 * The api only reads parsed_sheets, which SHARE allows. Taken once the worker is idle, so no
 * earlier test's task is caught and takes a consumer.
 */
export async function holdParsedSheets() {
  await workerIdle();
  const session = psql([], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  session.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => { session.on('exit', resolve); });
  await new Promise((resolve, reject) => {
    let out = '';
    session.stdout.on('data', (d) => {
      out += d;
      if (out.includes('locked')) resolve();
    });
    exited.then((code) => reject(new Error(`psql exited (${code}) before the lock was taken: ${stderr}`)));
    session.stdin.write('BEGIN;\nLOCK TABLE parsed_sheets IN SHARE MODE;\n\\echo locked\n');
  });
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      session.stdin.end('COMMIT;\n');
      const code = await exited;
      if (code !== 0) throw new Error(`psql exited (${code}) releasing the lock: ${stderr}`);
    },
  };
}

// --- the API, from node ---------------------------------------------------------------------

export async function api(key, pathAndQuery, init = {}) {
  const response = await fetch(new URL(pathAndQuery, BASE_URL), {
    ...init,
    headers: { Authorization: `Bearer ${key}`, ...(init.headers || {}) },
  });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  return { status: response.status, body, headers: response.headers };
}

export async function apiUpload(key, name, bytes) {
  const form = new FormData();
  form.append('file', new Blob([bytes]), name);
  return api(key, '/api/v1/files', { method: 'POST', body: form });
}

/** Polls the task until it is COMPLETED or FAILED (each poll waits for the previous answer). */
export async function waitForTask(key, taskId, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, body } = await api(key, `/api/v1/tasks/${taskId}`);
    if (status !== 200) throw new Error(`GET task ${taskId}: HTTP ${status} ${JSON.stringify(body)}`);
    if (body.status === 'COMPLETED' || body.status === 'FAILED') return body;
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${body.status}`);
    await new Promise((resolve) => { setTimeout(resolve, 100); });
  }
}

/** All of a key's files, through every page of the list. */
export async function listAllFiles(key) {
  const files = [];
  let after = null;
  do {
    const query = after === null ? 'limit=1000' : `limit=1000&after=${encodeURIComponent(after)}`;
    const { status, body } = await api(key, `/api/v1/files?${query}`);
    if (status !== 200) throw new Error(`GET files: HTTP ${status}`);
    files.push(...body.files);
    after = body.next_after;
  } while (after !== null && after !== undefined);
  return files;
}

/** `api keys create` (prints the key) and `api keys revoke`, on the test database. */
export function createKey(name, tenant) {
  const args = ['keys', 'create', '--name', name];
  if (tenant) args.push('--tenant', tenant);
  const out = execFileSync(API_BIN, args, { encoding: 'utf8' });
  // The key is the only line on stdout (logs go to stderr).
  if (!/^\S+\n$/.test(out)) throw new Error(`api keys create printed ${JSON.stringify(out)}`);
  return out.trim();
}

export function apiKeys(...args) {
  return execFileSync(API_BIN, ['keys', ...args], { encoding: 'utf8' });
}

// --- files ----------------------------------------------------------------------------------

/** RFC 4180 records of a CSV text (quoted fields, doubled quotes, CRLF or LF). */
export function parseCsv(text) {
  const records = [];
  let record = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i += 1;
      } else if (c === '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i += 1;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (field !== '' || record.length > 0) {
    record.push(field);
    records.push(record);
  }
  return records;
}

function xmlEscape(s) {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function columnName(i) {
  let name = '';
  for (let n = i + 1; n > 0; n = Math.floor((n - 1) / 26)) {
    name = String.fromCharCode(65 + ((n - 1) % 26)) + name;
  }
  return name;
}

/** A zip archive of the entries (stored, no compression): enough for an xlsx. */
function zip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const [name, content] of entries) {
    const data = Buffer.from(content, 'utf8');
    const fileName = Buffer.from(name, 'utf8');
    const crc = zlib.crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(0, 10); // time, date
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(fileName.length, 26);
    locals.push(local, fileName, data);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(fileName.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, fileName);
    offset += local.length + fileName.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/**
 * An xlsx workbook as Excel writes one (shared strings, a styles part): sheets is
 * [{name, hidden, rows: [[cell, ...], ...]}] with cells that are strings, numbers, booleans,
 * null (no cell) or {date: 'YYYY-MM-DD'} (a serial number with a date format).
 */
export function xlsx(sheets) {
  const main = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
  const rel = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
  const strings = [];
  const stringIndex = new Map();
  const shared = (s) => {
    if (!stringIndex.has(s)) {
      stringIndex.set(s, strings.length);
      strings.push(s);
    }
    return stringIndex.get(s);
  };
  const cell = (value, ref) => {
    if (value === null || value === undefined) return '';
    if (typeof value === 'string') return `<c r="${ref}" t="s"><v>${shared(value)}</v></c>`;
    if (typeof value === 'boolean') return `<c r="${ref}" t="b"><v>${value ? 1 : 0}</v></c>`;
    if (typeof value === 'number') return `<c r="${ref}"><v>${value}</v></c>`;
    const [y, m, d] = value.date.split('-').map(Number);
    const serial = (Date.UTC(y, m - 1, d) - Date.UTC(1899, 11, 30)) / 86_400_000;
    return `<c r="${ref}" s="1"><v>${serial}</v></c>`;
  };
  const worksheets = sheets.map((sheet) => {
    const rows = sheet.rows.map((values, r) => {
      const cells = values.map((v, c) => cell(v, `${columnName(c)}${r + 1}`)).join('');
      return `<row r="${r + 1}">${cells}</row>`;
    });
    return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
      + `<worksheet xmlns="${main}" xmlns:r="${rel}"><sheetData>${rows.join('')}</sheetData></worksheet>`;
  });
  const n = sheets.length;
  const entries = [
    ['[Content_Types].xml', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
      + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
      + '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
      + '<Default Extension="xml" ContentType="application/xml"/>'
      + '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
      + sheets.map((_, i) => `<Override PartName="/xl/worksheets/sheet${i + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`).join('')
      + '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
      + '<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
      + '</Types>'],
    ['_rels/.rels', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
      + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
      + '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>'
      + '</Relationships>'],
    ['xl/workbook.xml', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
      + `<workbook xmlns="${main}" xmlns:r="${rel}"><sheets>`
      + sheets.map((s, i) => `<sheet name="${xmlEscape(s.name)}" sheetId="${i + 1}"${s.hidden ? ' state="hidden"' : ''} r:id="rId${i + 1}"/>`).join('')
      + '</sheets></workbook>'],
    ['xl/_rels/workbook.xml.rels', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
      + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
      + sheets.map((_, i) => `<Relationship Id="rId${i + 1}" Type="${rel}/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`).join('')
      + `<Relationship Id="rId${n + 1}" Type="${rel}/styles" Target="styles.xml"/>`
      + `<Relationship Id="rId${n + 2}" Type="${rel}/sharedStrings" Target="sharedStrings.xml"/>`
      + '</Relationships>'],
    ...worksheets.map((xml, i) => [`xl/worksheets/sheet${i + 1}.xml`, xml]),
    ['xl/styles.xml', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
      + `<styleSheet xmlns="${main}">`
      + '<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
      + '<fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
      + '<borders count="1"><border/></borders>'
      + '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
      + '<cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
      + '<xf numFmtId="14" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>'
      + '</styleSheet>'],
  ];
  // Shared strings last: the worksheets above filled the table.
  entries.push(['xl/sharedStrings.xml', `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n`
    + `<sst xmlns="${main}" count="${strings.length}" uniqueCount="${strings.length}">`
    + strings.map((s) => `<si><t xml:space="preserve">${xmlEscape(s)}</t></si>`).join('')
    + '</sst>']);
  return zip(entries);
}

// --- waiting --------------------------------------------------------------------------------

/**
 * Waits until an element of `locator` contains `expected` (a string or a RegExp); on timeout the
 * error says what the elements held instead.
 */
export async function waitForText(locator, expected, { timeout = 30_000 } = {}) {
  try {
    await locator.filter({ hasText: expected }).first().waitFor({ timeout });
  } catch {
    const actual = await locator.allInnerTexts().catch(() => []);
    throw new Error(`waited ${timeout} ms for ${expected} in ${locator}; it holds ${JSON.stringify(actual)}`);
  }
}

/**
 * Starts recording, in the page, every text an element matching `selector` shows (as it changes,
 * through a MutationObserver), so a test can check the states a status went through. Read them
 * with recorded(page, name).
 */
export async function recordTexts(page, name, selector) {
  await page.evaluate(([key, sel]) => {
    window.__recorded = window.__recorded || {};
    const seen = [];
    window.__recorded[key] = seen;
    const note = () => {
      for (const element of document.querySelectorAll(sel)) {
        const text = element.textContent.trim();
        // Which file: the name shown in the element's upload card or table row.
        const file = element.closest('li, tr')?.querySelector('.file-name')?.textContent || '';
        const last = seen.findLast((s) => s.file === file);
        if (!last || last.text !== text) seen.push({ file, text });
      }
    };
    note();
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  }, [name, selector]);
}

export function recorded(page, name) {
  return page.evaluate((key) => window.__recorded[key], name);
}
