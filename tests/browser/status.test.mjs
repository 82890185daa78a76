// A task's live status, with the real worker held mid-task (holdParsedSheets) so its states can
// be seen in turn: PENDING, RUNNING with the rows counted so far, then COMPLETED once released;
// task polls that pause while the page is hidden; and a Refresh answered after an upload was
// accepted, which must keep the upload listed and its status updating.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, test } from 'node:test';

import {
  browserForThisFile, createKey, fileRow, FILES_LIST, holdParsedSheets, holdRequests, recorded,
  recordTexts, screenshot, signIn, waitForAnswers, waitForText,
} from './helpers.mjs';

// A tenant of its own: the list holds only what these tests upload.
const KEY = createKey('browser-status', `status-${randomUUID()}`);
const ROWS = 3000;

let hold = null;
const open = browserForThisFile();

// A test that failed while holding the worker must not leave it held for the next test.
afterEach(async () => {
  if (hold) await release();
});


/** A CSV of ROWS rows, under a name of its own. */
function csv() {
  const lines = ['n,label'];
  for (let i = 1; i <= ROWS; i += 1) lines.push(`${i},row ${i}`);
  return {
    name: `held-${randomUUID().slice(0, 8)}.csv`,
    mimeType: 'text/csv',
    buffer: Buffer.from(`${lines.join('\n')}\n`),
  };
}

async function release() {
  await hold.release();
  hold = null;
}

test('an upload is seen PENDING, then RUNNING with its rows counted, then COMPLETED', async () => {
  const page = await open();
  await signIn(page, KEY);
  await recordTexts(page, 'status', '#files-body .status');
  hold = await holdParsedSheets();
  const file = csv();
  await page.getByLabel('Choose files').setInputFiles(file);
  const row = fileRow(page, file.name);
  const card = page.locator('.upload').filter({ hasText: file.name });

  // Every row is parsed and counted while the worker waits to store the sheet.
  const count = await page.evaluate((n) => new Intl.NumberFormat().format(n), ROWS);
  await waitForText(row.locator('.status-detail'), `${count} rows, `);
  assert.equal(await row.locator('.status').innerText(), 'RUNNING');
  assert.match(await row.locator('.status-detail').innerText(), new RegExp(`^${count} rows, .+ of .+ read$`));
  assert.equal(await row.getByRole('progressbar', { name: `Parsing ${file.name}` }).isVisible(), true);
  assert.equal(await card.locator('.upload-status .status').innerText(), 'RUNNING');
  // An upload whose task is still running cannot be dismissed yet.
  assert.equal(await card.getByRole('button', { name: `Dismiss ${file.name}` }).isVisible(), false);
  await screenshot(page, 'running');

  await release();
  await waitForText(row.locator('.status'), 'COMPLETED');
  assert.equal(await row.locator('.status-detail').innerText(), `${count} rows`);
  const states = (await recorded(page, 'status')).filter((s) => s.file === file.name).map((s) => s.text);
  assert.deepEqual(states, ['PENDING', 'RUNNING', 'COMPLETED']);

  // Finished: its card can go, and focus moves on to the file chooser.
  await waitForText(card.locator('.upload-status .status'), 'COMPLETED');
  await card.getByRole('button', { name: `Dismiss ${file.name}` }).click();
  await card.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement.id), 'file-input');
  assert.equal(await row.count(), 1, 'the file stays in My files');
});

/** Makes the page hidden or shown as a switch of tab would, and says how many task polls it has sent. */
function setHidden(hidden) {
  Object.defineProperty(document, 'hidden', { value: hidden, configurable: true });
  Object.defineProperty(document, 'visibilityState', { value: hidden ? 'hidden' : 'visible', configurable: true });
  document.dispatchEvent(new Event('visibilitychange'));
  return window.__fetches.filter((f) => f.url.includes('/api/v1/tasks/')).length;
}

test('task polls pause while the page is hidden and ask at once when it is shown again', async () => {
  const page = await open({ traceFetches: true });
  // The page's timers run on a clock the test moves: half a minute hidden takes no time.
  await page.clock.install();
  await signIn(page, KEY);
  hold = await holdParsedSheets();
  const file = csv();
  await page.getByLabel('Choose files').setInputFiles(file);
  const row = fileRow(page, file.name);
  await waitForText(row.locator('.status'), 'RUNNING');

  // Stop the clock, and let every answer on its way be dealt with: the poll now waits on a timer.
  await page.clock.pauseAt(await page.evaluate(() => Date.now() + 1000));
  await page.waitForFunction(() => window.__fetches.every((f) => f.settled));

  const polls = await page.evaluate(setHidden, true);
  await page.clock.runFor(30_000);
  assert.equal(await page.evaluate(() => window.__fetches.filter((f) => f.url.includes('/api/v1/tasks/')).length),
    polls, 'the page polled while hidden');
  // Shown again: the poll asks there and then, without waiting for a timer.
  assert.equal(await page.evaluate(setHidden, false), polls + 1);

  await page.clock.resume();
  await release();
  await waitForText(row.locator('.status'), 'COMPLETED');
});

test('a Refresh answered after an upload was accepted keeps the upload listed and updating', async () => {
  const page = await open({ traceFetches: true });
  await signIn(page, KEY);
  hold = await holdParsedSheets();
  // The server answers the Refresh at once, before the upload; the page gets that answer after.
  const refresh = await holdRequests(page, FILES_LIST, () => true, { answerFirst: true });
  await page.getByRole('button', { name: 'Refresh' }).click();
  await refresh.caught();

  const file = csv();
  await page.getByLabel('Choose files').setInputFiles(file);
  const row = fileRow(page, file.name);
  await waitForText(row.locator('.status'), 'RUNNING');
  refresh.release();
  // Two lists answered: the sign-in's and the Refresh's.
  await waitForAnswers(page, '/api/v1/files?', { count: 2 });
  assert.equal(await row.count(), 1, 'the Refresh took the new file off the list');

  // Its poll is alive: the row and the upload card see the task complete.
  await release();
  await waitForText(row.locator('.status'), 'COMPLETED');
  const card = page.locator('.upload').filter({ hasText: file.name });
  await waitForText(card.locator('.upload-status .status'), 'COMPLETED');
});
