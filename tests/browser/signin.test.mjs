// Signing in and out: the key from the URL fragment (then out of the address bar), the `API key`
// field, a key kept for the browser session only, a rejected key, a key revoked while the page is
// open, sign-ins that overlap (the last one wins, and a late 401 of an older one changes nothing),
// a link's key kept to retry when the server cannot be reached, and the page's own headers and
// resources (a strict CSP that the page never trips).

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import {
  apiKeys, apiUpload, BASE_URL, browserForThisFile, createKey, fileRow, FILES_LIST, holdRequests,
  KEY_A, KEY_B, screenshot, signIn, waitForAnswers, waitForText,
} from './helpers.mjs';

const open = browserForThisFile();


const signInForm = (page) => page.getByRole('heading', { name: 'Sign in' });
const myFiles = (page) => page.getByRole('heading', { name: 'My files' });

test('the page is served with a strict Content-Security-Policy and revalidated caching', async () => {
  const page = await open();
  const response = await page.goto('/');
  assert.equal(response.status(), 200);
  const headers = response.headers();
  assert.match(headers['content-type'], /^text\/html/);
  assert.match(headers['content-security-policy'], /default-src 'none'/);
  assert.match(headers['content-security-policy'], /script-src 'self'(;|$)/);
  assert.doesNotMatch(headers['content-security-policy'], /unsafe/);
  assert.equal(headers['cache-control'], 'no-cache');
  assert.ok(headers.etag);
  await signInForm(page).waitFor();
  // Every script, stylesheet and icon came from this origin and loaded.
  const resources = await page.evaluate(() => performance.getEntriesByType('resource')
    .map((r) => ({ url: r.name, status: r.responseStatus })));
  assert.ok(resources.length >= 4, JSON.stringify(resources));
  for (const r of resources) {
    assert.ok(r.url.startsWith(`${BASE_URL}/assets/`), r.url);
    assert.equal(r.status, 200, r.url);
  }
  const missing = await fetch(`${BASE_URL}/assets/nope.js`);
  assert.equal(missing.status, 404);
  await screenshot(page, 'sign-in');
});

test('a key in the URL fragment signs in and is removed from the address bar', async () => {
  const page = await open();
  await page.goto(`/#key=${encodeURIComponent(KEY_A)}`);
  await myFiles(page).waitFor();
  assert.equal(page.url(), `${BASE_URL}/`);
  assert.equal(await page.evaluate(() => window.location.hash), '');
  // Nor in the history: the entry was replaced, so back is the blank page the tab started on
  // and forward the page without the key.
  await page.goBack();
  assert.equal(page.url(), 'about:blank');
  await page.goForward();
  await myFiles(page).waitFor();
  assert.equal(page.url(), `${BASE_URL}/`);
  // Kept for this tab's session only: not in localStorage, not in a cookie.
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sheetrelay.api-key')), KEY_A);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
  assert.equal(await page.evaluate(() => document.cookie), '');

  await page.reload();
  await myFiles(page).waitFor();

  // Another browser session (a new context) does not have it.
  const other = await open();
  await other.goto('/');
  await signInForm(other).waitFor();
  assert.equal(await other.getByRole('heading', { name: 'My files' }).isVisible(), false);
});

test('the API key field signs in, and signing out forgets the key', async () => {
  const page = await open();
  await page.goto('/');
  await page.getByLabel('API key').fill(KEY_A);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await myFiles(page).waitFor();
  assert.equal(await signInForm(page).isVisible(), false);

  await page.getByRole('button', { name: 'Sign out' }).click();
  await signInForm(page).waitFor();
  assert.equal(await page.getByLabel('API key').inputValue(), '');
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  assert.equal(await page.locator('#files-body tr').count(), 0);
  await page.reload();
  await signInForm(page).waitFor();
  assert.equal(await myFiles(page).isVisible(), false);
});

test('a wrong key is rejected in words and the page stays on sign-in', async () => {
  const page = await open();
  await page.goto('/');
  await page.getByLabel('API key').fill('sr_not-a-real-key');
  await page.keyboard.press('Enter');
  await waitForText(page.getByRole('alert'), /key rejected/i);
  assert.equal(await myFiles(page).isVisible(), false);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);

  // Also from the fragment.
  await page.goto('/#key=sr_also-wrong');
  await waitForText(page.getByRole('alert'), /key rejected/i);
  assert.equal(page.url(), `${BASE_URL}/`);
  await screenshot(page, 'key-rejected');
});

test('a key revoked while the page is open sends the page back to sign-in', async () => {
  const name = `browser-revoke-${randomUUID()}`;
  const key = createKey(name);
  const page = await open();
  await signIn(page, key);

  const line = apiKeys('list').split('\n').find((l) => l.split('\t')[2] === name);
  assert.ok(line, `api keys list has no key named ${name}`);
  apiKeys('revoke', line.split('\t')[0]);

  await page.getByRole('button', { name: 'Refresh' }).click();
  await waitForText(page.getByRole('alert'), /key rejected/i);
  await signInForm(page).waitFor();
  assert.equal(await myFiles(page).isVisible(), false);
  assert.equal(await page.evaluate(() => sessionStorage.length), 0);
});

/** Follows a #key= link in a tab that already shows the page (only the fragment changes). */
async function followKeyLink(page, key) {
  await page.evaluate((k) => { window.location.hash = `key=${encodeURIComponent(k)}`; }, key);
}

/**
 * Follows a #key= link for `first`, holds that sign-in's files list, then signs in with KEY_A
 * through another link and waits for its list: returns the held request of the first.
 */
async function signInOverAHeldSignIn(page, first) {
  const held = await holdRequests(page, FILES_LIST,
    (request) => request.headers().authorization === `Bearer ${first}`);
  await page.goto(`/#key=${encodeURIComponent(first)}`);
  await held.caught();
  await followKeyLink(page, KEY_A);
  await myFiles(page).waitFor();
  return held;
}

test('a late 401 from a sign-in that another one replaced does not sign the page out', async () => {
  const page = await open({ traceFetches: true });
  const stale = 'sr_replaced-before-its-answer';
  const held = await signInOverAHeldSignIn(page, stale);

  held.release();
  await waitForAnswers(page, '/api/v1/files?', { key: stale });
  assert.equal(await myFiles(page).isVisible(), true);
  assert.equal(await signInForm(page).isVisible(), false);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sheetrelay.api-key')), KEY_A);
  // Still signed in for real: the next call goes out with the key and is answered.
  await page.getByRole('button', { name: 'Refresh' }).click();
  await waitForAnswers(page, '/api/v1/files?', { key: KEY_A, count: 2 });
  assert.equal(await myFiles(page).isVisible(), true);
});

test('of two overlapping sign-ins the last wins: its key is kept and its files are listed', async () => {
  const onlyB = `only-b-${randomUUID().slice(0, 8)}.csv`;
  assert.equal((await apiUpload(KEY_B, onlyB, Buffer.from('b\n1\n'))).status, 202);
  const page = await open({ traceFetches: true });
  const held = await signInOverAHeldSignIn(page, KEY_B);

  // B's list arrives last, and is dropped.
  held.release();
  await waitForAnswers(page, '/api/v1/files?', { key: KEY_B });
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sheetrelay.api-key')), KEY_A);
  assert.equal(await fileRow(page, onlyB).count(), 0);
  await page.reload();
  await myFiles(page).waitFor();
  assert.equal(await fileRow(page, onlyB).count(), 0);
});

test('a key from a link stays in the field when the server cannot be reached, to try again', async () => {
  const page = await open();
  // The server is down, as far as the page can tell.
  const down = (route) => route.abort('connectionrefused');
  await page.route(FILES_LIST, down);
  await page.goto(`/#key=${encodeURIComponent(KEY_A)}`);
  await waitForText(page.getByRole('alert'), /cannot sign in: the server could not be reached/i);
  // Out of the address bar, as always, but in the field.
  assert.equal(page.url(), `${BASE_URL}/`);
  assert.equal(await page.getByLabel('API key').inputValue(), KEY_A);
  assert.equal(await myFiles(page).isVisible(), false);

  await page.unroute(FILES_LIST, down);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await myFiles(page).waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem('sheetrelay.api-key')), KEY_A);
});
