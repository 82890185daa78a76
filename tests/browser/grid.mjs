// Working the error report's grid (api/web/grid.js) as a person does, with the keyboard: the
// same in the page and in the embedded component (Playwright's locators reach into its shadow
// root). `scope` is a locator of the grid's table.

import assert from 'node:assert/strict';

/** The focused cell's [row, column] in the grid. */
export async function focusedCell(scope) {
  const td = scope.locator('td[data-r]:focus-within');
  assert.equal(await td.count(), 1, 'one cell of the grid has the focus');
  return [Number(await td.getAttribute('data-r')), Number(await td.getAttribute('data-c'))];
}

/** Moves the focus to cell [r, c] with the arrow keys (up or down first), checking each step. */
export async function moveTo(page, scope, [r, c]) {
  let [at, col] = await focusedCell(scope);
  while (at !== r) {
    await page.keyboard.press(at < r ? 'ArrowDown' : 'ArrowUp');
    const [next] = await focusedCell(scope);
    assert.equal(next, at + (at < r ? 1 : -1), 'the arrow moved one row');
    at = next;
  }
  while (col !== c) {
    await page.keyboard.press(col < c ? 'ArrowRight' : 'ArrowLeft');
    const [, next] = await focusedCell(scope);
    assert.equal(next, col + (col < c ? 1 : -1), 'the arrow moved one cell');
    col = next;
  }
}

/** The grid's bad cells in reading order: {at: [row, column], label: the input's name}. */
export function badCells(scope) {
  return scope.locator('td.bad[data-r] input').evaluateAll((inputs) => inputs.map((input) => ({
    at: [Number(input.parentElement.dataset.r), Number(input.parentElement.dataset.c)],
    label: input.getAttribute('aria-label'),
  })));
}

/**
 * Fixes `cells` in turn by keyboard from the focused cell: moves to each, selects its text and
 * types `value(label)` over it.
 */
export async function fixByKeyboard(page, scope, cells, value) {
  for (const { at, label } of cells) {
    await moveTo(page, scope, at);
    await page.keyboard.press('Control+A');
    await page.keyboard.type(value(label));
  }
}
