// The page follows its uploads on the event stream: a task's end is drawn when its event arrives,
// even while every task poll is held unanswered.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import {
  browserForThisFile, createKey, fileRow, holdParsedSheets, holdRequests, signIn, waitForText,
} from './helpers.mjs';

// A tenant of its own: its stream carries only what this test uploads.
const KEY = createKey('browser-events', `events-${randomUUID()}`);
const open = browserForThisFile();

test('a task that ends is shown from the event stream while its polls get no answer', async () => {
  const page = await open();
  const streamOpen = page.waitForResponse(
    (r) => new URL(r.url()).pathname === '/api/v1/events/stream' && r.status() === 200,
  );
  await signIn(page, KEY);
  await streamOpen;
  const hold = await holdParsedSheets();
  const name = `streamed-${randomUUID().slice(0, 8)}.csv`;
  const lines = ['n'];
  for (let i = 1; i <= 2000; i += 1) lines.push(String(i));
  await page.getByLabel('Choose files').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from(`${lines.join('\n')}\n`),
  });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'RUNNING');

  // From now on a task poll is never answered: only the stream can tell the page.
  const polls = await holdRequests(page, '**/api/v1/tasks/**');
  try {
    await hold.release();
    await waitForText(row.locator('.status'), 'COMPLETED');
    const count = await page.evaluate((n) => new Intl.NumberFormat().format(n), 2000);
    assert.equal(await row.locator('.status-detail').innerText(), `${count} rows`);
  } finally {
    polls.release();
    await hold.release();
  }
});
