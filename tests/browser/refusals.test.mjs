// Early refusals reach the browser: uploads refused before the server reads their body (a wrong
// key; a tenant over its upload rate) are sent by Chromium's own fetch, 16 at a time, and every
// one comes back as a status with its JSON code, none as a network error (`TypeError: Failed to
// fetch`, what a reset looks like to a page). The api's lingering close (api/src/lingering.rs)
// is what makes it so; tests/it/refusals.rs holds Python's httpx to the same.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import { browserForThisFile, createKey } from './helpers.mjs';

const open = browserForThisFile();
const COUNT = 200;
const SIZE = 512 * 1024;

/** Sends COUNT uploads of SIZE bytes with `key` from the page, 16 at a time: what it read. */
async function sendFromPage(page, key) {
  return page.evaluate(async ({ key, count, size }) => {
    const line = '1,alice,2024-01-01\n';
    const csv = 'id,name,day\n' + line.repeat(Math.ceil(size / line.length));
    const answers = {};
    const lost = [];
    let retryAfter = 0;
    let next = 0;
    async function worker() {
      while (next < count) {
        const i = next++;
        const form = new FormData();
        form.append('file', new Blob([csv], { type: 'text/csv' }), `refused-${i}.csv`);
        try {
          const response = await fetch('/api/v1/files', {
            method: 'POST', body: form, headers: { Authorization: `Bearer ${key}` },
          });
          const body = await response.json();
          const label = `${response.status} ${response.status >= 400 ? body.error.code : 'None'}`;
          answers[label] = (answers[label] || 0) + 1;
          if (response.headers.get('retry-after')) retryAfter += 1;
        } catch (e) {
          lost.push(String(e));
        }
      }
    }
    await Promise.all(Array.from({ length: 16 }, worker));
    return { answers, lost, retryAfter };
  }, { key, count: COUNT, size: SIZE });
}

test('uploads refused before their body is read are answered, not reset, in the browser', async () => {
  const page = await open();
  // A page of the api's origin: the fetches are same-origin, as the web page's own are.
  await page.goto('/');

  const wrongKey = await sendFromPage(page, `sr_${randomUUID()}`);
  assert.deepEqual(wrongKey.lost, []);
  assert.deepEqual(wrongKey.answers, { '401 unauthorized': COUNT });

  const tenant = `refusals-${randomUUID()}`;
  execFileSync(process.env.SHEETRELAY_API_BIN,
    ['tenants', 'set', tenant, '--new', '--upload-rate', '1/min'], { encoding: 'utf8' });
  const limited = await sendFromPage(page, createKey('browser-refusals', tenant));
  assert.deepEqual(limited.lost, []);
  const refused = limited.answers['429 rate_limited'] || 0;
  const accepted = limited.answers['202 None'] || 0;
  assert.ok(accepted <= 1, JSON.stringify(limited));
  assert.equal(refused + accepted, COUNT, JSON.stringify(limited));
  assert.equal(limited.retryAfter, refused, 'every 429 says when to retry');
});
