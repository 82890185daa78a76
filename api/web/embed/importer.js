// The embeddable importer (contract v1.3): <sheetrelay-importer token="srs_…" api-base="https://…">
// in an application's own page. A classic script with no imports, no framework and no request to
// any other host than api-base, so a host page can load it cross-origin with a plain <script src>
// under a strict Content Security Policy: no inline script, no eval, no inline style (the styles
// are a constructed stylesheet adopted by the shadow root, which CSP does not govern), and every
// text set with textContent.
//
// The end user chooses or drops a file; it is uploaded with the session's token (tus in chunks
// above TUS_THRESHOLD_BYTES, one multipart request below), its task followed until it is final, the
// mapping review answered when the task asks for one, and the result shown with the rows that have
// errors as a grid to fix in place. The element dispatches `sheetrelay-complete` ({file_id,
// task_id, status, summary}) and `sheetrelay-error` ({code, message}) on itself.
//
// The server serves it inside a closure, after the tus client's core (tus.js: TUS_* and tusSend
// are in scope here) and the error report's grid (grid.js: RowGrid and its notes), so nothing of
// it leaks into the host page's scope.

  /** The fallback poll of a task, when its event does not come first. */
  const POLL_MS = 2000;
  const REPORT_ROWS = 20;

  const CSS = `
    :host { display: block; font: 14px/1.45 system-ui, sans-serif; color: #1d2430; }
    .box { border: 2px dashed #9aa7b8; border-radius: 8px; padding: 20px; text-align: center; }
    .box.over { border-color: #2f6feb; background: #eef4ff; }
    button { font: inherit; padding: 6px 14px; border-radius: 6px; border: 1px solid #2f6feb;
             background: #2f6feb; color: #fff; cursor: pointer; }
    button.secondary { background: #fff; color: #2f6feb; }
    button:disabled { opacity: 0.5; cursor: default; }
    progress { width: 100%; }
    table { border-collapse: collapse; width: 100%; margin-top: 8px; }
    .grid-scroll { max-height: 60vh; overflow: auto; }
    input.cell-fix { width: 100%; min-width: 5em; box-sizing: border-box; font: inherit; }
    td.bad input.cell-fix { border: 1px solid #c62828; background: #fdecea; }
    input.cell-fix.edited { border-color: #2f6feb; background: #eef4ff; }
    td.valid { color: #5b6675; }
    td:focus, input.cell-fix:focus { outline: 2px solid #2f6feb; }
    td, th { border: 1px solid #d5dbe3; padding: 4px 6px; text-align: left; }
    .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
    .pager, .fix-bar { margin-top: 8px; }
    .error { color: #b42318; }
    .fields { display: grid; grid-template-columns: max-content 1fr; gap: 6px 12px; text-align: left; }
    select { font: inherit; }
    :focus-visible { outline: 3px solid #2f6feb; outline-offset: 2px; }
  `;

  /** An element with attributes and children (strings become text nodes). */
  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
    for (const child of children) node.append(child);
    return node;
  }

  /** The rows of the reviewed sheet that will not be imported, in words (its layout's set_aside). */
  function setAside(layout) {
    const ranges = ((layout && layout.set_aside) || []).map((s) => {
      const rows = s.from_row === s.to_row ? `row ${s.from_row}` : `rows ${s.from_row}–${s.to_row}`;
      return `${rows} (${{ above: 'above the table', notes: 'notes', table: 'another table' }[s.kind] || s.kind})`;
    });
    return el('p', { part: 'set-aside' }, ranges.length ? `Not imported: ${ranges.join('; ')}.` : '');
  }

  class ApiFailure extends Error {
    constructor(code, message, details = null) {
      super(message);
      this.code = code;
      this.details = details;
    }
  }

  /** The ApiFailure of an answer with HTTP `status` and (parsed, or null) body. */
  function failure(status, body) {
    const error = body && body.error ? body.error : {};
    return new ApiFailure(error.code || `http_${status}`, error.message || `sheetrelay answered HTTP ${status}`,
      error.details || null);
  }

  class SheetrelayImporter extends HTMLElement {
    constructor() {
      super();
      this.root = this.attachShadow({ mode: 'open' });
      const sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS);
      this.root.adoptedStyleSheets = [sheet];
    }

    connectedCallback() {
      this.choose();
    }

    get base() {
      return (this.getAttribute('api-base') || '').replace(/\/+$/, '');
    }

    /** A call to the API with the session's token: the parsed JSON body, or an ApiFailure. */
    async call(path, init = {}) {
      const headers = { Authorization: `Bearer ${this.getAttribute('token')}`, ...(init.headers || {}) };
      let response;
      try {
        response = await fetch(`${this.base}${path}`, { ...init, headers });
      } catch (error) {
        throw new ApiFailure('network_error', `sheetrelay could not be reached: ${error.message}`);
      }
      if (!response.ok) {
        throw failure(response.status, await response.json().catch(() => null));
      }
      return { response, body: response.status === 204 ? null : await response.json().catch(() => null) };
    }

    show(...children) {
      this.root.replaceChildren(...children);
    }

    fail(error) {
      const detail = { code: error.code || 'error', message: error.message };
      this.show(el('p', { class: 'error', part: 'error' }, detail.message),
        this.againButton());
      this.dispatchEvent(new CustomEvent('sheetrelay-error', { detail, bubbles: true, composed: true }));
    }

    againButton() {
      const again = el('button', { class: 'secondary', type: 'button' }, 'Import another file');
      again.addEventListener('click', () => this.choose());
      return again;
    }

    /** Step 1: choose or drop a file. */
    choose() {
      const input = el('input', {
        type: 'file', id: 'file', accept: '.csv,.tsv,.txt,.xlsx,.xlsm,.xlsb,.xls,.ods', part: 'input',
      });
      const box = el('div', { class: 'box', part: 'dropzone' },
        el('label', { for: 'file' }, 'Drop a CSV or Excel file here, or choose one: '), input);
      box.addEventListener('dragover', (event) => { event.preventDefault(); box.classList.add('over'); });
      box.addEventListener('dragleave', () => box.classList.remove('over'));
      box.addEventListener('drop', (event) => {
        event.preventDefault();
        box.classList.remove('over');
        if (event.dataTransfer.files[0]) this.start(event.dataTransfer.files[0]);
      });
      input.addEventListener('change', () => { if (input.files[0]) this.start(input.files[0]); });
      this.show(box);
    }

    /** Step 2: the upload, with its progress. */
    async start(file) {
      const bar = el('progress', {
        max: String(file.size || 1), value: '0', part: 'progress', 'aria-label': `Uploading ${file.name}`,
      });
      this.show(el('p', {}, `Uploading ${file.name}…`), bar);
      const stream = this.listen();
      try {
        const upload = file.size > TUS_THRESHOLD_BYTES
          ? await this.resumable(file, (sent) => { bar.value = sent; })
          : await this.multipart(file, (sent) => { bar.value = sent; });
        await this.follow(upload.source_file.id, upload.task.id, stream);
      } catch (error) {
        stream.close();
        this.fail(error);
      }
    }

    /** One multipart request through XMLHttpRequest (fetch reports no upload progress). */
    multipart(file, onSent) {
      return new Promise((resolve, reject) => {
        const form = new FormData();
        form.append('file', file, file.name);
        const xhr = new XMLHttpRequest();
        xhr.open('POST', `${this.base}/api/v1/files`);
        xhr.setRequestHeader('Authorization', `Bearer ${this.getAttribute('token')}`);
        xhr.upload.addEventListener('progress', (event) => onSent(event.loaded));
        xhr.addEventListener('load', () => {
          let body = null;
          try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
          if (xhr.status === 202 && body) resolve(body);
          else reject(failure(xhr.status, body));
        });
        xhr.addEventListener('error', () => reject(new ApiFailure('network_error', 'the upload was cut off')));
        xhr.send(form);
      });
    }

    /**
     * tus: find the upload a closed tab left for this file (tusResumeOrCreate) or create one, PATCH
     * in chunks (tusSend), then read the recorded upload.
     */
    async resumable(file, onSent) {
      const pathOf = (location) => (location.startsWith('http') ? new URL(location).pathname : location);
      const offsetOf = async (path) => {
        try {
          const { response } = await this.call(path, { method: 'HEAD', headers: TUS_HEADERS });
          return Number(response.headers.get('Upload-Offset'));
        } catch (error) {
          // Gone, expired, or another session's: start anew. A HEAD's answer has no body.
          if (['not_found', 'upload_expired', 'http_404', 'http_410'].includes(error.code)) return null;
          throw error;
        }
      };
      const create = async () => {
        const { response } = await this.call('/api/v1/uploads', {
          method: 'POST',
          headers: {
            ...TUS_HEADERS, 'Upload-Length': String(file.size), 'Upload-Metadata': tusMetadata([['filename', file.name]]),
          },
        });
        return pathOf(response.headers.get('Location'));
      };
      const { url: path, offset, forget } = await tusResumeOrCreate('embed', file, offsetOf, create);
      onSent(offset);
      const io = {
        patch: async (at, chunk) => {
          const { response: patched } = await this.call(path, {
            method: 'PATCH',
            headers: { ...TUS_HEADERS, 'Upload-Offset': String(at), 'Content-Type': 'application/offset+octet-stream' },
            body: chunk,
          });
          return Number(patched.headers.get('Upload-Offset'));
        },
        // A dropped connection: ask the server where the upload stands and go on from there.
        retryable: (error) => error.code === 'network_error',
        offset: () => offsetOf(path),
        gone: () => new ApiFailure('upload_expired', 'the upload expired before it was complete'),
      };
      try {
        await tusSend(file, offset, io, onSent);
      } catch (error) {
        if (error.code === 'upload_expired') forget();
        throw error;
      }
      const { body } = await this.call(path, { headers: TUS_HEADERS });
      forget();
      return body;
    }

    /** Step 3: the task until it is final, through the review when it asks for one. */
    async follow(fileId, taskId, stream) {
      this.show(el('p', { part: 'status' }, 'Reading your file…'));
      try {
        for (;;) {
          const seen = stream.count();
          const { body: task } = await this.call(`/api/v1/tasks/${taskId}`);
          if (task.status === 'NEEDS_REVIEW' && task.review) {
            await this.review(taskId, task.review);
            this.show(el('p', { part: 'status' }, 'Reading your file with your columns…'));
          } else if (task.status === 'COMPLETED' || task.status === 'FAILED') {
            await this.done(fileId, task);
            return;
          }
          // Woken by the session's next event (one that came during the check wakes at once);
          // the poll is the fallback when the stream cannot be had.
          await Promise.race([stream.next(seen), new Promise((resolve) => { setTimeout(resolve, POLL_MS); })]);
        }
      } finally {
        stream.close();
      }
    }

    /**
     * The session's event stream, read with fetch (an EventSource cannot send the token), opened
     * before the upload so that no event of its task comes before it. `count()` is how many
     * events came; `next(n)` resolves once more than `n` have. A stream that fails is left to the
     * poll.
     */
    listen() {
      const abort = new AbortController();
      let count = 0;
      let waiters = [];
      const arrived = (n) => {
        count += n;
        for (const waiter of waiters) waiter();
        waiters = [];
      };
      (async () => {
        const response = await fetch(`${this.base}/api/v1/events/stream`, {
          headers: { Authorization: `Bearer ${this.getAttribute('token')}`, Accept: 'text/event-stream' },
          signal: abort.signal,
        });
        if (!response.ok || !response.body) return;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += value;
          const events = buffer.split('\n\n');
          buffer = events.pop();
          const real = events.filter((e) => /^id:/m.test(e)).length;
          if (real > 0) arrived(real);
        }
      })().catch(() => { /* aborted, or no stream: the poll goes on */ });
      return {
        count: () => count,
        next: (seen) => (count > seen ? Promise.resolve() : new Promise((resolve) => { waiters.push(resolve); })),
        close: () => abort.abort(),
      };
    }

    /**
     * The mapping review: each field with a choice of the file's columns and their samples, and
     * each text an enum or boolean field cannot read with a choice of its values.
     */
    review(taskId, review) {
      return new Promise((resolve) => {
        const choices = new Map();
        const grid = el('div', { class: 'fields', part: 'review' });
        for (const [i, suggestion] of review.suggested_mapping.entries()) {
          const select = el('select', { 'data-field': suggestion.field, id: `field-${i}` });
          select.append(el('option', { value: '' }, '(not in this file)'));
          for (const column of review.columns) {
            const samples = (column.samples || []).slice(0, 3).join(', ');
            const option = el('option', { value: String(column.index) },
              samples ? `${column.name} (${samples})` : column.name);
            if (suggestion.column_index === column.index) option.selected = true;
            select.append(option);
          }
          choices.set(suggestion.field, select);
          grid.append(el('label', { for: `field-${i}` }, suggestion.field), select);
        }
        // The texts an enum or boolean field does not know, each with the values it allows.
        const meanings = [];
        for (const [i, entry] of (review.values || []).entries()) {
          grid.append(el('p', { part: 'values' }, `Values of ${entry.field} it does not know:`));
          for (const [j, text] of entry.unknown.entries()) {
            const select = el('select', { id: `value-${i}-${j}` });
            select.append(el('option', { value: '' }, '(leave it: an error)'));
            for (const value of entry.allowed) select.append(el('option', { value }, value));
            meanings.push({ field: entry.field, text, select });
            grid.append(el('label', { for: `value-${i}-${j}` }, `“${text}” means`), select);
          }
        }
        const problem = el('p', { class: 'error' });
        const confirm = el('button', { type: 'button', part: 'confirm' }, 'Use these columns');
        confirm.addEventListener('click', async () => {
          const mapping = {};
          for (const [field, select] of choices) mapping[field] = select.value === '' ? null : Number(select.value);
          const values = {};
          for (const { field, text, select } of meanings) {
            if (select.value !== '') (values[field] ||= {})[text] = select.value;
          }
          try {
            await this.call(`/api/v1/tasks/${taskId}/mapping`, {
              method: 'PUT',
              headers: { 'Content-Type': 'application/json' },
              body: JSON.stringify({ mapping, values }),
            });
            resolve();
          } catch (error) {
            problem.textContent = error.message;
          }
        });
        this.show(el('p', {}, 'Which column holds each field?'), setAside(review.layout), grid, problem,
          confirm);
      });
    }

    /** Step 4: the result, the grid of the rows that have errors, and the event. */
    async done(fileId, task) {
      const summary = task.result && task.result.validation
        ? { rows_total: task.result.rows_total, rows_valid: task.result.validation.rows_valid,
            rows_rejected: task.result.validation.rows_rejected }
        : (task.result ? { rows_total: task.result.rows_total, rows_valid: task.result.rows_total, rows_rejected: 0 } : null);
      const parts = [];
      if (task.status === 'COMPLETED') {
        parts.push(el('p', { part: 'result' }, `Imported ${summary ? summary.rows_valid : 0} rows.`));
      } else {
        const message = task.error ? task.error.message : 'the file could not be imported';
        parts.push(el('p', { class: 'error', part: 'result' }, `Not imported: ${message}`));
      }
      if (summary && summary.rows_rejected > 0) {
        const capped = task.result.validation.errors_truncated;
        parts.push(el('p', {}, capped
          ? `${summary.rows_rejected} rows have problems, more than can be listed: fix those listed here, and the others in your file.`
          : `${summary.rows_rejected} rows have problems: fix them here.`),
        await this.fixer(fileId, task));
      }
      parts.push(this.againButton());
      this.show(...parts);
      this.dispatchEvent(new CustomEvent('sheetrelay-complete', {
        detail: { file_id: fileId, task_id: task.id, status: task.status, summary },
        bubbles: true,
        composed: true,
      }));
    }

    /**
     * The error report as a grid of whole rows to fix in place (grid.js; contract v1.3,
     * "Corrections"), read from the server REPORT_ROWS rows at a time with the session's token;
     * after a save (one PATCH), the result again with what is still wrong.
     */
    async fixer(fileId, task) {
      const note = el('div', { role: 'status', part: 'fix-status' });
      const grid = new RowGrid({
        ...gridFileOptions(task.result.validation, task.status),
        fileId,
        pageRows: REPORT_ROWS,
        label: 'Rows to fix',
        get: async (path) => (await this.call(path)).body,
        patch: async (path, body) => (await this.call(path, {
          method: 'PATCH',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        })).body,
        saved: async (answer) => {
          const { body: fresh } = await this.call(`/api/v1/tasks/${task.id}`);
          await this.done(fileId, fresh);
          this.root.prepend(el('div', { role: 'status', part: 'fix-status' }, ...gridSavedNote(answer)));
        },
        failed: (error) => note.replaceChildren(...gridFailedNote(error)),
      });
      await grid.load(0);
      return el('div', {}, grid.element, note);
    }
  }

  if (!customElements.get('sheetrelay-importer')) {
    customElements.define('sheetrelay-importer', SheetrelayImporter);
  }
