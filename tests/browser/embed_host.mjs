// A host page of another origin for the embeddable importer, shared by its tests and its
// benchmark: a tiny back end on 127.0.0.1 that serves one page, under a strict Content Security
// Policy (scripts and connections to sheetrelay only, no inline script or style), holding
// <sheetrelay-importer> with the token of the moment, and mints import sessions for it.

import assert from 'node:assert/strict';
import http from 'node:http';

import { BASE_URL, api } from './helpers.mjs';

export class EmbedHost {
  constructor(key, template) {
    this.key = key;
    this.template = template;
    this.token = '';
  }

  async start() {
    const sheetrelay = new URL(BASE_URL).origin;
    this.server = http.createServer((request, response) => {
      response.writeHead(200, {
        'Content-Type': 'text/html; charset=utf-8',
        'Content-Security-Policy': `default-src 'none'; script-src ${sheetrelay}; `
          + `connect-src ${sheetrelay}; style-src 'none'; img-src 'none'`,
      });
      response.end(`<!doctype html><html><head><meta charset="utf-8"><title>An application</title></head>
<body><h1>Import your contacts</h1>
<sheetrelay-importer token="${this.token}" api-base="${sheetrelay}"></sheetrelay-importer>
<script src="${sheetrelay}/embed/importer.js"></script></body></html>`);
    });
    await new Promise((resolve) => { this.server.listen(0, '127.0.0.1', resolve); });
    this.origin = `http://127.0.0.1:${this.server.address().port}`;
  }

  stop() {
    return new Promise((resolve) => { this.server.close(resolve); });
  }

  /** Mints a session for the page (the back end's call) and makes its token the page's. */
  async session(more = {}) {
    const created = await api(this.key, '/api/v1/sessions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        template: this.template,
        end_user: { id: 'u-42', name: 'Ada' },
        metadata: { crm_id: 'C-7' },
        allowed_origins: [this.origin],
        ...more,
      }),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    this.token = created.body.token;
    return created.body;
  }

  /** Opens the page in `page` and records the component's events in `window.seen`. */
  async open(page) {
    const violations = [];
    page.on('console', (message) => {
      if (/Content Security Policy/.test(message.text())) violations.push(message.text());
    });
    await page.goto(this.origin);
    await page.waitForFunction(() => customElements.get('sheetrelay-importer') !== undefined);
    await page.evaluate(() => {
      const element = document.querySelector('sheetrelay-importer');
      window.seen = [];
      for (const type of ['sheetrelay-complete', 'sheetrelay-error']) {
        element.addEventListener(type, (event) => window.seen.push({ type, detail: event.detail }));
      }
    });
    return violations;
  }
}

/** Picks a file in the component's file input. */
export async function pick(page, name, text) {
  await page.locator('sheetrelay-importer input[type=file]').setInputFiles({
    name, mimeType: 'text/csv', buffer: Buffer.from(text),
  });
}
