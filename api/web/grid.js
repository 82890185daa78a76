// The error report as an editable grid of whole rows (contract v1.3, "Corrections"), one copy for
// the page (served ahead of report.js, an ES module) and the embeddable importer (served inside
// its closure, a classic script): so, like tus.js, it declares a class and functions with no
// import and no export, and builds its DOM with createElement and textContent only (no inline
// style or script: it runs under a strict Content Security Policy). Each caller brings its
// transport (the page's fetch with its API key, the importer's with the session's token).
//
// One row per row of the file, one column per template field. The rows with errors come from
// GET …/errors/rows, every cell of theirs a field to edit, the bad ones flagged with their
// messages; with "Show only rows with errors" off, the sheet's stored rows (GET …/rows) come
// between them in file order, read-only. Either way a page is read from the server's cursors
// (never the whole sheet) and the cursors of the pages seen are kept, so Previous asks again.
// Arrow keys move between cells, Enter or Save sends every edit (kept across pages) as one PATCH,
// one revision; the caller then shows the answer and has the grid read its page again.

/** Corrections one PATCH may carry (the API's limit). */
const GRID_MAX_CORRECTIONS = 10000;

/** An element with a class, attributes and children (strings become text nodes). */
function gridEl(tag, className, attrs = {}, ...children) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** A stored row's typed value as text (a cell of a valid row, shown read-only). */
function gridText(value) {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/**
 * The grid's options that a file's task says: its validated sheet, the template's fields (those
 * with a column in the file can be corrected), where its invalid rows are, whether it has stored
 * rows, and how many rows have errors (null when the report is capped).
 */
function gridFileOptions(validation, status) {
  return {
    sheet: validation.sheet,
    fields: validation.mapping.map((m) => ({ name: m.field, mapped: m.column_index !== null })),
    keep: validation.on_invalid === 'keep_invalid_rows',
    stored: status === 'COMPLETED',
    total: validation.errors_truncated ? null : validation.rows_rejected,
  };
}

/** What a revision left wrong, as a note: its number, then the errors still on its rows. */
function gridSavedNote(answer) {
  const still = answer.errors || [];
  const head = gridEl('p', '', {}, `Saved as revision ${answer.revision}: ${answer.applied} `
    + `correction${answer.applied === 1 ? '' : 's'}. `
    + (still.length ? `Still wrong on those rows: ${still.length}.` : 'Those rows are valid now.'));
  const list = gridEl('ul', '', {}, ...still.slice(0, 10).map((e) => gridEl('li', '', {},
    `Row ${e.row}${e.field ? `, ${e.field}` : ''}: ${e.message}`)));
  return [head, list];
}

/** Why a save failed, as a note: the message, then each problem the API listed. */
function gridFailedNote(error) {
  return [gridEl('p', 'error', {}, `The corrections were not saved: ${error.message}`),
    gridEl('ul', '', {}, ...(error.details || []).map((d) => gridEl('li', '', {}, d.message)))];
}

class RowGrid {
  /**
   * `o`: gridFileOptions' {sheet, fields, keep, stored, total}, and {fileId, pageRows, label,
   * get(path) → body, patch(path, body) → answer, saved(answer), failed(error)}.
   */
  constructor(o) {
    this.o = o;
    this.edits = new Map(); // "row:field" → {sheet, row, field, value}, not saved yet
    this.starts = [{ rows: null, errors: null }]; // each page's cursors
    this.page = 0;
    this.ticket = 0; // only the newest load may draw
    this.saving = false;
    this.only = gridEl('input', 'grid-only', { type: 'checkbox', part: 'only-errors' });
    this.only.checked = true;
    this.only.addEventListener('change', () => { this.starts = [this.starts[0]]; this.load(0); });
    const switchLabel = gridEl('label', 'grid-switch', {}, this.only, ' Show only rows with errors');
    switchLabel.hidden = !o.stored;
    const head = gridEl('tr', '', {}, gridEl('th', '', { scope: 'col' }, 'Row'),
      ...o.fields.map((f) => gridEl('th', '', { scope: 'col' }, f.name)),
      gridEl('th', '', { scope: 'col' }, 'Problems'));
    this.body = gridEl('tbody', '');
    this.caption = gridEl('caption', 'visually-hidden');
    const table = gridEl('table', 'grid-table', { part: 'report' }, this.caption,
      gridEl('thead', '', {}, head), this.body);
    this.body.addEventListener('keydown', (event) => this.onKey(event));
    this.status = gridEl('span', 'grid-status', { 'aria-live': 'polite' });
    this.prev = gridEl('button', 'secondary', { type: 'button', 'aria-label': 'Previous rows' }, 'Previous');
    this.next = gridEl('button', 'secondary', { type: 'button', 'aria-label': 'Next rows' }, 'Next');
    this.prev.addEventListener('click', () => this.load(this.page - 1));
    this.next.addEventListener('click', () => this.load(this.page + 1));
    this.save = gridEl('button', 'grid-save', { type: 'button', part: 'save' }, 'Save corrections');
    this.save.addEventListener('click', () => this.send());
    this.pending = gridEl('span', 'grid-edits hint');
    this.problem = gridEl('p', 'error', { role: 'alert' });
    this.element = gridEl('div', 'row-grid', { 'aria-busy': 'false' }, switchLabel,
      gridEl('div', 'table-scroll grid-scroll', { tabindex: '0', 'aria-label': o.label }, table),
      gridEl('nav', 'pager', { 'aria-label': 'Pages of rows' }, this.prev, ' ', this.status, ' ', this.next),
      gridEl('div', 'fix-bar', {}, this.save, ' ', this.pending), this.problem);
    this.setEdits();
  }

  /**
   * The grid read again from the server at its page (the first, when the page is gone), with
   * the file's options as they are now (gridFileOptions: a rejected file may have completed).
   */
  refresh(options) {
    Object.assign(this.o, options);
    this.only.parentElement.hidden = !this.o.stored;
    if (!this.o.stored) this.only.checked = true;
    return this.load(this.page);
  }

  /** Loads page p (at most one past the last page seen). */
  async load(p) {
    if (p < 0 || p >= this.starts.length) return;
    const ticket = ++this.ticket;
    this.element.setAttribute('aria-busy', 'true');
    this.problem.textContent = '';
    try {
      const { rows, cursor, more } = await this.read(this.starts[p]);
      if (ticket !== this.ticket) return;
      if (rows.length === 0 && p > 0) {
        // Every row of this page was fixed: the first page again.
        this.starts.length = 1;
        await this.load(0);
        return;
      }
      this.page = p;
      this.starts.length = p + 1;
      if (more) this.starts.push(cursor);
      this.draw(rows);
    } catch (error) {
      if (ticket !== this.ticket) return;
      this.problem.textContent = `The rows could not be loaded: ${error.message}`;
    } finally {
      if (ticket === this.ticket) this.element.setAttribute('aria-busy', 'false');
    }
  }

  /**
   * A page of at most pageRows grid rows from the cursors `at`: the rows with errors and (when
   * the switch is off) the stored rows, merged in file order by where each row with errors
   * sits among the stored ones (its `index`). Each list is read pageRows at a time, so one that
   * runs out before the page is full has no more on the server.
   */
  async read(at) {
    const n = this.o.pageRows;
    const id = this.o.fileId;
    const cursor = (name, value) => (value === null ? '' : `&${name}=${encodeURIComponent(value)}`);
    const both = this.o.stored && !this.only.checked;
    const [bad, stored] = await Promise.all([
      this.o.get(`/api/v1/files/${id}/errors/rows?sheet=${this.o.sheet}&limit=${n}${cursor('after', at.errors)}`),
      both ? this.o.get(`/api/v1/files/${id}/rows?sheet=${this.o.sheet}&limit=${n}${cursor('after', at.rows)}`)
        : { rows: [], next_after: null },
    ]);
    const out = [];
    const next = { ...at };
    let [i, j] = [0, 0];
    const place = (r) => (r.index === null || r.index === undefined ? Infinity : r.index);
    while (out.length < n && (i < bad.rows.length || j < stored.rows.length)) {
      const e = bad.rows[i];
      const s = stored.rows[j];
      if (e && (!s || place(e) <= s.index)) {
        out.push({ bad: e });
        next.errors = e.row;
        i += 1;
        // Kept in its place: the stored row it is.
        if (s && this.o.keep && place(e) === s.index) { next.rows = s.index; j += 1; }
      } else {
        out.push({ stored: s });
        next.rows = s.index;
        j += 1;
      }
    }
    const more = i < bad.rows.length || j < stored.rows.length
      || (bad.next_after !== null && bad.next_after !== undefined)
      || (stored.next_after !== null && stored.next_after !== undefined);
    return { rows: out, cursor: next, more };
  }

  draw(rows) {
    this.body.replaceChildren(...rows.map((r, at) => (r.bad ? this.badRow(r.bad, at) : this.validRow(r.stored, at))));
    const first = this.page * this.o.pageRows + 1;
    const last = this.page * this.o.pageRows + rows.length;
    const only = this.only.checked;
    const of = only && this.o.total !== null ? ` of ${this.o.total}` : '';
    const status = rows.length === 0 ? 'No rows with errors are stored'
      : `${only ? 'Rows with errors' : 'Rows'} ${first}–${last}${of}`;
    this.status.textContent = status;
    this.caption.textContent = `${this.o.label}: ${status}`;
    // In the importer the grid is in a shadow root, whose own activeElement says where focus is.
    const focused = this.element.contains(this.element.getRootNode().activeElement);
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page + 1 >= this.starts.length;
    // A button that has just become unavailable would drop the reader's focus on the page.
    if (focused && this.next.disabled && !this.prev.disabled) this.prev.focus();
  }

  /** A row with errors: every mapped field an input, the bad ones flagged with their messages. */
  badRow(r, at) {
    const byField = new Map();
    for (const e of r.errors) {
      if (e.field) byField.set(e.field, [...(byField.get(e.field) || []), e.message]);
    }
    const cells = this.o.fields.map((f, c) => {
      const messages = byField.get(f.name) || [];
      const td = gridEl('td', messages.length ? 'bad' : '', { 'data-r': String(at), 'data-c': String(c + 1) });
      if (messages.length) td.title = messages.join('; ');
      if (!f.mapped) {
        td.tabIndex = -1;
        td.textContent = messages.length ? 'no column' : '';
        return td;
      }
      const key = `${r.row}:${f.name}`;
      const original = r.cells[f.name] ?? '';
      const input = gridEl('input', 'cell-fix', {
        type: 'text', 'aria-label': `Row ${r.row}, ${f.name}${messages.length ? `: ${messages.join('; ')}` : ''}`,
      });
      if (messages.length) input.setAttribute('aria-invalid', 'true');
      const edit = this.edits.get(key);
      input.value = edit ? edit.value : original;
      input.classList.toggle('edited', Boolean(edit));
      input.addEventListener('input', () => {
        if (input.value === original) this.edits.delete(key);
        else this.edits.set(key, { sheet: r.sheet, row: r.row, field: f.name, value: input.value });
        input.classList.toggle('edited', input.value !== original);
        this.setEdits();
      });
      td.append(input);
      return td;
    });
    const problems = r.errors.map((e) => e.message).join('; ');
    return gridEl('tr', 'has-errors', {}, gridEl('th', 'number', { scope: 'row' }, String(r.row)), ...cells,
      gridEl('td', 'grid-problems', {}, problems));
  }

  /** A stored row without errors, read-only (its cells reachable by the arrow keys). */
  validRow(s, at) {
    const cells = this.o.fields.map((f, c) => {
      const td = gridEl('td', 'valid', { 'data-r': String(at), 'data-c': String(c + 1) }, gridText(s.values[c]));
      td.tabIndex = -1;
      return td;
    });
    return gridEl('tr', '', {}, gridEl('th', 'number', { scope: 'row', title: 'A valid row' }, ''), ...cells,
      gridEl('td', 'grid-problems', {}, ''));
  }

  /** Arrow keys move between cells (left and right once the caret is at the text's end); Enter saves. */
  onKey(event) {
    const td = event.target.closest('td[data-r]');
    if (!td) return;
    const input = event.target.tagName === 'INPUT' ? event.target : null;
    if (event.key === 'Enter' && input) {
      event.preventDefault();
      this.send();
      return;
    }
    const whole = input && input.selectionStart === 0 && input.selectionEnd === input.value.length;
    const move = {
      ArrowUp: [-1, 0],
      ArrowDown: [1, 0],
      ArrowLeft: !input || whole || input.selectionEnd === 0 ? [0, -1] : null,
      ArrowRight: !input || whole || input.selectionStart === input.value.length ? [0, 1] : null,
    }[event.key];
    if (!move) return;
    const row = this.body.rows[Number(td.dataset.r) + move[0]];
    const cell = row && row.querySelector(`td[data-c="${Number(td.dataset.c) + move[1]}"]`);
    if (!cell) return;
    event.preventDefault();
    const target = cell.querySelector('input') || cell;
    target.focus();
    if (target.select) target.select();
  }

  setEdits() {
    const n = this.edits.size;
    this.save.disabled = n === 0 || this.saving;
    this.pending.textContent = n ? `${n} cell${n === 1 ? '' : 's'} changed, not saved` : '';
  }

  /** Sends the edits as one revision (a PATCH per GRID_MAX_CORRECTIONS), then tells the caller. */
  async send() {
    if (this.edits.size === 0 || this.saving) return;
    this.saving = true;
    this.setEdits();
    const all = [...this.edits.values()]
      .map(({ sheet, row, field, value }) => ({ sheet, row, field, value: value === '' ? null : value }));
    try {
      for (let k = 0; k < all.length; k += GRID_MAX_CORRECTIONS) {
        const corrections = all.slice(k, k + GRID_MAX_CORRECTIONS);
        const answer = await this.o.patch(`/api/v1/files/${this.o.fileId}/corrections`, { corrections });
        for (const c of corrections) this.edits.delete(`${c.row}:${c.field}`);
        // The caller shows the answer and has the grid read again (busy until then).
        this.element.setAttribute('aria-busy', 'true');
        await this.o.saved(answer);
      }
    } catch (error) {
      this.element.setAttribute('aria-busy', 'false');
      this.o.failed(error);
    } finally {
      this.saving = false;
      this.setEdits();
    }
  }
}
