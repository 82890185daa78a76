// The page's client for the HTTP contract (v1.2). Every call carries the caller's key as a bearer
// token; a 401 runs the handler given to setUnauthorizedHandler (the page goes back to sign-in)
// when the call was made with the current key, and rejects with an ApiError whose status is 401.

// The key of the current session, in an object of its own: each call keeps the object it was
// made with, and setKey replaces it, so an answer to a call made before the key changed (even to
// the same key again) is known to belong to a session that is over.
let session = { key: null };
let unauthorizedHandler = () => {};

/** Task statuses that do not change any more. */
export const TERMINAL = new Set(['COMPLETED', 'FAILED']);

/**
 * Whether a task has something to preview: its rows once COMPLETED, or the error report of a
 * file its template rejected whole (FAILED with validation_failed).
 */
export function previewable(task) {
  return task.status === 'COMPLETED'
    || (task.status === 'FAILED' && task.error?.code === 'validation_failed');
}

/** An error answer of the API: HTTP status, the contract's machine code and its message. */
export class ApiError extends Error {
  constructor(status, code, message, details = null) {
    super(message);
    this.status = status;
    this.code = code;
    // invalid_template, invalid_mapping: every problem, [{pointer, message}].
    this.details = details;
  }
}

export function setKey(key) {
  session = { key };
}

/** The current session's key, for a request this module does not make (resumable.js's PATCH). */
export function currentKey() {
  return session.key;
}

export function setUnauthorizedHandler(handler) {
  unauthorizedHandler = handler;
}

// The contract's error body {"error": {"code", "message"}}, or a stand-in for a body that is not
// one (a proxy's HTML page, an empty answer).
function errorFrom(status, statusText, text) {
  try {
    const body = JSON.parse(text);
    if (body && body.error && typeof body.error.message === 'string') {
      return new ApiError(status, body.error.code || `http_${status}`, body.error.message,
        body.error.details || null);
    }
  } catch {
    // not JSON: fall through
  }
  return new ApiError(status, `http_${status}`, `the server answered HTTP ${status} ${statusText}`.trim());
}

// A late 401 from a session that is over (a rejected key, a sign-out, another sign-in since)
// must not sign the current session out: only the current session's 401s reach the handler.
function rejected(error, made) {
  if (error.status === 401 && made === session) unauthorizedHandler(error);
  return error;
}

/**
 * fetch with the key (and `headers`, `signal`); resolves with the Response when it is 2xx,
 * rejects with an ApiError.
 */
export async function request(path, { method = 'GET', headers = {}, body, signal } = {}) {
  const made = session;
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: { ...headers, Authorization: `Bearer ${made.key}` },
      body,
      cache: 'no-store',
      signal,
    });
  } catch {
    throw new ApiError(0, 'network_error', 'the server could not be reached');
  }
  if (!response.ok) {
    throw rejected(errorFrom(response.status, response.statusText, await response.text()), made);
  }
  return response;
}

export async function getJson(path) {
  return (await request(path)).json();
}

/** Sends `body` as JSON with `method`; resolves with the JSON answer. */
export async function sendJson(path, method, body) {
  const headers = { 'Content-Type': 'application/json' };
  return (await request(path, { method, headers, body: JSON.stringify(body) })).json();
}

/**
 * Uploads one file as the multipart part `file`, checked against `template` (a template's name,
 * or null for none) with `onInvalid` overriding its policy when given. XMLHttpRequest rather than
 * fetch, because only it reports upload progress: onProgress(sentBytes, totalBytes). Resolves
 * with the 202 body {source_file, task}.
 */
export function upload(file, onProgress, { template = null, onInvalid = null } = {}) {
  const made = session;
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/v1/files');
    xhr.setRequestHeader('Authorization', `Bearer ${made.key}`);
    xhr.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    xhr.addEventListener('load', () => {
      if (xhr.status === 202 || xhr.status === 200) {
        try {
          resolve(JSON.parse(xhr.responseText));
        } catch {
          reject(new ApiError(xhr.status, 'bad_response', 'the server accepted the file but its answer was unreadable'));
        }
      } else {
        reject(rejected(errorFrom(xhr.status, xhr.statusText, xhr.responseText), made));
      }
    });
    xhr.addEventListener('error', () => {
      reject(new ApiError(0, 'network_error',
        'the connection broke before the server answered (a file far over the size limit is cut off this way)'));
    });
    const form = new FormData();
    // The server resolves the template before it stores a byte of the file, so its parts come
    // first: after `file` they are refused (misplaced_part).
    if (template) {
      form.append('template', template);
      if (onInvalid) form.append('on_invalid', onInvalid);
    }
    form.append('file', file, file.name);
    xhr.send(form);
  });
}

// filename="…" or filename*=UTF-8''… from a Content-Disposition header, if any.
function dispositionName(header) {
  if (!header) return null;
  const extended = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(header);
  if (extended) {
    try {
      return decodeURIComponent(extended[1].trim());
    } catch {
      // malformed: try the plain form
    }
  }
  const plain = /filename\s*=\s*"([^"]*)"|filename\s*=\s*([^;]+)/i.exec(header);
  if (!plain) return null;
  return (plain[1] ?? plain[2]).trim() || null;
}

/**
 * Downloads path into a Blob and hands it to the browser as a file named by the server's
 * Content-Disposition (else fallbackName), calling onProgress(receivedBytes) as the body streams
 * in. Resolves with the name and the number of bytes saved.
 *
 * A plain link cannot carry the Authorization header, hence fetch, Blob and an object URL; and
 * so the whole export is held in memory until it is saved. Streaming it straight to disk would
 * need the header added to a browser download, which only a service worker can do (or a save
 * picker that not every browser has): more machinery than this page wants.
 */
export async function download(path, fallbackName, onProgress = () => {}) {
  const response = await request(path);
  const name = dispositionName(response.headers.get('Content-Disposition')) || fallbackName;
  const chunks = [];
  let received = 0;
  const reader = response.body.getReader();
  for (;;) {
    let step;
    try {
      step = await reader.read();
    } catch {
      throw new ApiError(0, 'network_error', 'the connection broke during the download');
    }
    if (step.done) break;
    chunks.push(step.value);
    received += step.value.length;
    onProgress(received);
  }
  const blob = new Blob(chunks, { type: response.headers.get('Content-Type') || '' });
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has started from the URL by now; free it once the browser has read it.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return { name, bytes: blob.size };
}
