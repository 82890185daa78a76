// Resumable uploads through the page: a file over the tus threshold goes to /api/v1/uploads in
// chunks, showing bytes sent and speed; when the page is reloaded mid-way (a PATCH cut off), the
// same file picked again resumes from the offset the server reports (HEAD), not from zero, and
// is parsed.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { before, describe, test } from 'node:test';

import {
  browserForThisFile, createKey, fileRow, listAllFiles, recorded, recordTexts, signIn, waitForText,
} from './helpers.mjs';

// A tenant of its own: the list holds only what this test uploads.
const KEY = createKey('browser-resumable', `resumable-${randomUUID()}`);
/** The page's chunk size (resumable.js): the offset the server keeps after one chunk. */
const CHUNK = 4 * 1024 * 1024;
const ROWS = 200_000;

/** A CSV over the 8 MiB threshold: about 10 MiB. */
function largeCsv() {
  const lines = ['id,name,amount,note'];
  for (let i = 0; i < ROWS; i += 1) lines.push(`${i},name ${i},${i % 997}.25,${'x'.repeat(20)}`);
  return `${lines.join('\n')}\n`;
}

const open = browserForThisFile();
let page;
let file;

before(async () => {
  page = await open();
  await signIn(page, KEY);
  // A file on disk keeps its modification time between the two picks, as a person's file does.
  file = path.join(await mkdtemp(path.join(os.tmpdir(), 'sheetrelay-tus-')), 'large.csv');
  await writeFile(file, largeCsv());
});

describe('a large file through the page', () => {
  test('resumes after a reload from the offset the server kept, and is parsed', async () => {
    const requests = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname.startsWith('/api/v1/uploads')) {
        requests.push({ method: request.method(), offset: request.headers()['upload-offset'] ?? null });
      }
    });
    // The second PATCH is cut off: one chunk is on the server when the page reloads.
    let patches = 0;
    let cut;
    const wasCut = new Promise((resolve) => { cut = resolve; });
    await page.route('**/api/v1/uploads/*', async (route) => {
      if (route.request().method() === 'PATCH' && (patches += 1) === 2) {
        await route.abort('connectionrefused');
        cut();
        return;
      }
      await route.fallback();
    });
    await page.getByLabel('Choose files').setInputFiles(file);
    await wasCut;
    await page.unroute('**/api/v1/uploads/*');
    const saved = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('sheetrelay.tus:')));
    assert.equal(saved.length, 1, 'the upload URL is kept for a resume');
    assert.deepEqual(requests.slice(0, 2).map((r) => r.method), ['POST', 'PATCH']);

    await page.reload();
    await page.getByRole('heading', { name: 'My files' }).waitFor();
    requests.length = 0;
    await recordTexts(page, 'upload', '.upload-status');
    await page.getByLabel('Choose files').setInputFiles(file);
    await waitForText(fileRow(page, 'large.csv').locator('.status'), 'COMPLETED', { timeout: 120_000 });

    // After the reload: no new upload, a HEAD for the offset, then PATCHes from the server's
    // offset on.
    assert.equal(requests[0].method, 'HEAD', JSON.stringify(requests));
    assert.ok(!requests.some((r) => r.method === 'POST'), JSON.stringify(requests));
    const offsets = requests.filter((r) => r.method === 'PATCH').map((r) => Number(r.offset));
    assert.equal(offsets[0], CHUNK, JSON.stringify(requests));
    const states = (await recorded(page, 'upload')).map((s) => s.text);
    assert.ok(states.some((s) => /^uploading: \d+% · .+ of .+ · resumed at 4\.0 MB/.test(s)), JSON.stringify(states));
    assert.ok(states.some((s) => /\/s · resumed/.test(s)), `a speed was shown: ${JSON.stringify(states)}`);
    const left = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('sheetrelay.tus:')));
    assert.deepEqual(left, [], 'a finished upload forgets its URL');

    const files = await listAllFiles(KEY);
    assert.equal(files.length, 1);
    assert.equal(files[0].file_name, 'large.csv');
    assert.equal(files[0].task.status, 'COMPLETED');
  });
});
