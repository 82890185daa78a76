// The list of the caller's files (newest first, paged with "Load more"), deleting a file after a
// confirmation (once, however often it is asked), tenants: a page signed in with tenant B's key
// sees none of tenant A's files, and the page on a phone-sized screen.
// The paging test uses a tenant of its own, so files other tests upload do not change its counts.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import {
  api, apiUpload, browserForThisFile, createKey, fileRow, holdRequests, KEY_A, KEY_B, listAllFiles,
  screenshot, signIn, waitForTask, waitForText,
} from './helpers.mjs';

const open = browserForThisFile();


const listedNames = (page) => page.locator('#files-body th.file-name').allInnerTexts();

test('my files are listed newest first, 25 at a time, with Load more for the rest', async () => {
  const key = createKey('browser-list', `list-${randomUUID()}`);
  const names = Array.from({ length: 27 }, (_, i) => `list-${String(i).padStart(2, '0')}.csv`);
  for (const name of names) {
    const { status } = await apiUpload(key, name, Buffer.from(`n\n${name}\n`));
    assert.equal(status, 202);
  }
  const newestFirst = [...names].reverse();

  const page = await open();
  await signIn(page, key);
  await waitForText(page.locator('#files-body th.file-name'), 'list-26.csv');
  assert.deepEqual(await listedNames(page), newestFirst.slice(0, 25));
  const more = page.getByRole('button', { name: 'Load more' });
  assert.equal(await more.isVisible(), true);

  await more.click();
  await waitForText(page.locator('#files-body th.file-name'), 'list-00.csv');
  assert.deepEqual(await listedNames(page), newestFirst);
  await more.waitFor({ state: 'hidden' });
  assert.deepEqual((await listAllFiles(key)).map((f) => f.file_name), newestFirst);

  // Their tasks finish while the page is open, and the rows show it.
  await waitForText(fileRow(page, 'list-00.csv').locator('.status'), 'COMPLETED');
});

/** A page signed in as tenant A with a CSV of `content` uploaded through it and COMPLETED. */
async function parsedThroughThePage(prefix, content) {
  const page = await open();
  await signIn(page, KEY_A);
  const name = `${prefix}-${randomUUID().slice(0, 8)}.csv`;
  await page.getByLabel('Choose files').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(content) });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'COMPLETED');
  return { page, name, row, id: await row.getAttribute('data-file-id') };
}

test('a file is deleted after confirming, and is gone from the page and the API', async () => {
  const { page, name, row, id } = await parsedThroughThePage('delete-me', 'a,b\n1,2\n');
  const dialog = page.getByRole('dialog', { name: 'Delete file?' });

  // Cancel first: nothing happens.
  await row.getByRole('button', { name: `Delete ${name}` }).click();
  await dialog.waitFor();
  await waitForText(dialog, name);
  await screenshot(page, 'delete-dialog');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });
  assert.equal(await row.count(), 1);
  assert.equal((await api(KEY_A, `/api/v1/files/${id}`)).status, 200);
  // Focus went back to the Delete button.
  assert.equal(await page.evaluate(() => document.activeElement.getAttribute('aria-label')), `Delete ${name}`);

  // Escape cancels too (keyboard).
  await page.keyboard.press('Enter');
  await dialog.waitFor();
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  assert.equal(await row.count(), 1);

  await row.getByRole('button', { name: `Delete ${name}` }).click();
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await row.waitFor({ state: 'detached' });
  await waitForText(page.locator('#announcer'), `Deleted ${name}`);

  assert.equal((await api(KEY_A, `/api/v1/files/${id}`)).status, 404);
  assert.equal((await api(KEY_A, `/api/v1/files/${id}/rows`)).status, 404);
  assert.ok(!(await listAllFiles(KEY_A)).some((f) => f.id === id));
  await page.reload();
  // The list is drawn before the page shows it.
  await page.getByRole('heading', { name: 'My files' }).waitFor();
  assert.ok(!(await listedNames(page)).includes(name));
});

test('a file whose deletion is on its way cannot be deleted again', async () => {
  const { page, name, row, id } = await parsedThroughThePage('delete-once', 'a\n1\n');
  const deletes = await holdRequests(page, `**/api/v1/files/${id}`, (r) => r.method() === 'DELETE');
  const dialog = page.getByRole('dialog', { name: 'Delete file?' });
  const remove = row.getByRole('button', { name: `Delete ${name}` });

  await remove.click();
  await dialog.getByRole('button', { name: 'Delete' }).click();
  await deletes.caught();
  // While the DELETE is on its way the button says it is unavailable, and asks nothing.
  assert.equal(await remove.getAttribute('aria-disabled'), 'true');
  // force: Playwright would wait for the button to be available, which is what is tested here.
  await remove.click({ force: true });
  assert.equal(await dialog.isVisible(), false);

  deletes.release();
  await row.waitFor({ state: 'detached' });
  await waitForText(page.locator('#announcer'), `Deleted ${name}`);
  assert.equal((await deletes.caught()).length, 1);
  assert.equal((await api(KEY_A, `/api/v1/files/${id}`)).status, 404);
});

test('deleting the file in the preview closes the preview', async () => {
  const page = await open();
  await signIn(page, KEY_A);
  const name = `previewed-${randomUUID().slice(0, 8)}.csv`;
  await page.getByLabel('Choose files').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from('x\n1\n') });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'COMPLETED');
  await row.getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(page.locator('#preview-title'), name);
  await row.getByRole('button', { name: `Delete ${name}` }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
  await row.waitFor({ state: 'detached' });
  await page.locator('#preview').waitFor({ state: 'hidden' });
});

test('a page signed in with tenant B\'s key sees none of tenant A\'s files', async () => {
  const secret = `tenant-a-only-${randomUUID().slice(0, 8)}.csv`;
  const upload = await apiUpload(KEY_A, secret, Buffer.from('secret\n42\n'));
  assert.equal(upload.status, 202);
  await waitForTask(KEY_A, upload.body.task.id);
  const mine = `tenant-b-${randomUUID().slice(0, 8)}.csv`;
  assert.equal((await apiUpload(KEY_B, mine, Buffer.from('b\n1\n'))).status, 202);

  const aNames = (await listAllFiles(KEY_A)).map((f) => f.file_name);
  const bNames = (await listAllFiles(KEY_B)).map((f) => f.file_name);
  assert.ok(aNames.includes(secret) && !aNames.includes(mine));

  const page = await open();
  await signIn(page, KEY_B);
  await waitForText(page.locator('#files-body th.file-name'), mine);
  const listed = await listedNames(page);
  assert.deepEqual([...listed].sort(), [...bNames].sort());
  for (const name of aNames) assert.ok(!listed.includes(name), `tenant B sees ${name}`);
  assert.ok(!(await page.locator('body').innerText()).includes(secret));

  // Nor can it reach one by id.
  for (const path of [`/api/v1/files/${upload.body.source_file.id}`, `/api/v1/tasks/${upload.body.task.id}`,
    `/api/v1/files/${upload.body.source_file.id}/rows`]) {
    const status = await page.evaluate(async (p) => (await fetch(p, {
      headers: { Authorization: `Bearer ${sessionStorage.getItem('sheetrelay.api-key')}` },
    })).status, path);
    assert.equal(status, 404, path);
  }
});

test('on a phone-sized screen the page fits its width and still works', async () => {
  const page = await open({ viewport: { width: 390, height: 844 } });
  await signIn(page, KEY_A);
  const name = `phone-${randomUUID().slice(0, 8)}.csv`;
  const wide = `${Array.from({ length: 12 }, (_, i) => `column_with_a_long_name_${i}`).join(',')}\n${Array.from({ length: 12 }, (_, i) => i).join(',')}\n`;
  await page.getByLabel('Choose files').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(wide) });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'COMPLETED');
  await row.getByRole('button', { name: `Preview ${name}` }).click();
  await waitForText(page.locator('#page-status'), 'Rows 1–1 of 1');
  // The wide table scrolls inside its box; the page itself does not scroll sideways.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
  const table = await page.locator('#rows-scroll').evaluate((e) => e.scrollWidth > e.clientWidth);
  assert.equal(table, true);
  await screenshot(page, 'phone');

  // The files list stays a table, with its headers, and scrolls sideways in its own box.
  assert.equal(await page.locator('#files-table').evaluate((t) => getComputedStyle(t).display), 'table');
  assert.equal(await page.getByRole('columnheader', { name: 'Status' }).count(), 1);
  assert.equal(await row.getByRole('cell').count(), 5);
  assert.equal(await page.locator('#files-table').evaluate((t) => t.parentElement.scrollWidth > t.parentElement.clientWidth), true);
});

test('a long file name without spaces wraps inside the delete dialog', async () => {
  const page = await open({ viewport: { width: 390, height: 844 } });
  await signIn(page, KEY_A);
  const name = `${'a_very_long_file_name_without_any_spaces_'.repeat(4)}${randomUUID().slice(0, 8)}.csv`;
  await page.getByLabel('Choose files').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from('x\n1\n') });
  const row = fileRow(page, name);
  await waitForText(row.locator('.status'), 'COMPLETED');
  await row.getByRole('button', { name: `Delete ${name}` }).click();
  const dialog = page.getByRole('dialog', { name: 'Delete file?' });
  await waitForText(dialog, name);
  const text = await page.locator('#delete-text').evaluate((p) => ({ scroll: p.scrollWidth, client: p.clientWidth }));
  assert.ok(text.scroll <= text.client, `the text is ${text.scroll}px wide in ${text.client}px`);
  const box = await dialog.boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 390, JSON.stringify(box));
  await screenshot(page, 'delete-long-name');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });
});

test('keyboard focus is visible', async () => {
  const page = await open();
  await page.goto('/');
  await page.getByLabel('API key').waitFor();
  // The key field has focus on arrival; before it comes the skip link, after it Sign in.
  assert.equal(await page.evaluate(() => document.activeElement.id), 'api-key');
  await page.keyboard.press('Shift+Tab');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to content');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => {
    const e = document.activeElement;
    const style = getComputedStyle(e);
    return { text: e.textContent, outline: style.outlineStyle, width: parseFloat(style.outlineWidth) };
  });
  assert.equal(focused.text, 'Sign in');
  assert.notEqual(focused.outline, 'none');
  assert.ok(focused.width >= 2);
});
