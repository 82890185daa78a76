// The embeddable importer's figures (BENCHMARKS.md, "The embeddable importer"):
//   BROWSER_BENCH=tests/browser/bench/embed.mjs tests/stack/browser.sh
// on the browser tests' stack (debug api and worker, loopback), in headless Chromium on a host
// page of another origin: the script's size gzipped; from a file picked to the first progress
// the component shows (a 1 KiB CSV, and a 100 MiB one, which goes through tus); and a 100 MiB
// CSV from picked to uploaded and to `sheetrelay-complete`. RUNS (3) runs each; medians.

import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

import { chromium } from 'playwright-core';

import { EmbedHost } from '../embed_host.mjs';
import { BASE_URL, api, createKey } from '../helpers.mjs';

const RUNS = Number(process.env.RUNS || 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function csvOf(bytes) {
  const parts = ['id,name,amount\n'];
  let size = parts[0].length;
  for (let i = 1; size < bytes; i += 1) {
    const line = `${i},person number ${i},${i % 1000}.5\n`;
    parts.push(line);
    size += line.length;
  }
  return parts.join('');
}

/** One file through the component: ms to first progress, to uploaded, to complete. */
async function once(browser, host, file) {
  await host.session();
  const page = await browser.newPage();
  await host.open(page);
  await page.evaluate(() => {
    const root = document.querySelector('sheetrelay-importer').shadowRoot;
    window.marks = {};
    new MutationObserver(() => {
      const bar = root.querySelector('progress');
      if (!bar) return;
      if (bar.value > 0 && !window.marks.progress) window.marks.progress = performance.now();
      if (bar.value >= bar.max && !window.marks.uploaded) window.marks.uploaded = performance.now();
    }).observe(root, { subtree: true, childList: true, attributes: true });
    window.marks.picked = performance.now();
  });
  // From a file on disk: Playwright passes no buffer over 50 MB.
  await page.locator('sheetrelay-importer input[type=file]').setInputFiles(file);
  await page.waitForFunction(() => window.seen.length > 0, null, { timeout: 600_000 });
  const result = await page.evaluate(() => ({ ...window.marks, done: performance.now(), seen: window.seen }));
  await page.close();
  if (result.seen[0].type !== 'sheetrelay-complete') throw new Error(JSON.stringify(result.seen));
  return {
    progress: result.progress - result.picked,
    uploaded: (result.uploaded ?? result.done) - result.picked,
    complete: result.done - result.picked,
  };
}

const key = createKey('bench-embed', `bench-embed-${randomUUID()}`);
const put = await api(key, '/api/v1/templates/people', {
  method: 'PUT',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ schema: { fields: [{ name: 'id', type: 'integer' }, { name: 'name', type: 'string' }, { name: 'amount', type: 'number' }] } }),
});
if (put.status !== 201) throw new Error(`template: ${put.status}`);
const host = new EmbedHost(key, 'people');
await host.start();
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
try {
  const script = Buffer.from(await (await fetch(new URL('/embed/importer.js', BASE_URL))).arrayBuffer());
  console.log(`importer.js: ${script.length} bytes, ${gzipSync(script, { level: 9 }).length} gzipped`);
  for (const [label, bytes] of [['1 KiB', 1024], ['100 MiB', 100 * 1024 * 1024]]) {
    const file = path.join(os.tmpdir(), `sheetrelay-embed-${label.replace(' ', '')}.csv`);
    writeFileSync(file, csvOf(bytes));
    const runs = [];
    for (let i = 0; i < RUNS; i += 1) runs.push(await once(browser, host, file));
    const f = (k) => `${median(runs.map((r) => r[k])).toFixed(0)} ms (${runs.map((r) => r[k].toFixed(0)).join(', ')})`;
    console.log(`${label}: picked → first progress ${f('progress')}; → uploaded ${f('uploaded')}; → sheetrelay-complete ${f('complete')}`);
    if (bytes > 1024) {
      const mibs = (100 / (median(runs.map((r) => r.uploaded)) / 1000)).toFixed(1);
      console.log(`${label}: upload ${mibs} MiB/s through the component (tus, 4 MiB PATCHes)`);
    }
  }
} finally {
  await browser.close();
  await host.stop();
}
