// A small tus 1.0 client for the page's large files (/api/v1/uploads): it creates an upload,
// sends the file in chunks of CHUNK_BYTES with PATCH, and keeps the upload's URL in
// localStorage under the file's name, size and modification time. A dropped connection is
// retried from the offset the server reports (HEAD); after a reload of the page, picking the
// same file again resumes the same upload from there instead of from zero.

import { ApiError, request } from './api.js';

/**
 * Files larger than this go through tus. Below it one multipart request is quicker (one round
 * trip instead of three or more) and re-sending it after a failure costs little.
 */
export const THRESHOLD_BYTES = 8 * 1024 * 1024;
/** Bytes per PATCH: what a dropped connection can cost at most, and the progress's granularity. */
const CHUNK_BYTES = 4 * 1024 * 1024;
/** Attempts at one chunk whose connection broke, with a doubling pause between them. */
const RETRIES = 5;
const TUS = { 'Tus-Resumable': '1.0.0' };

/** The localStorage key of a file's upload URL: the same file picked again finds it. */
function storageKey(file) {
  return `sheetrelay.tus:${file.name}:${file.size}:${file.lastModified}`;
}

/** `key base64(value)` for Upload-Metadata, the value as UTF-8. */
function pair(key, value) {
  const bytes = new TextEncoder().encode(value);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return `${key} ${btoa(binary)}`;
}

const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/** The server's offset of the upload at `url`, or null when it no longer exists (or expired). */
async function serverOffset(url) {
  try {
    const response = await request(url, { method: 'HEAD', headers: TUS });
    return Number(response.headers.get('Upload-Offset'));
  } catch (error) {
    if (error.status === 404 || error.status === 410) return null;
    throw error;
  }
}

async function create(file, template, onInvalid) {
  const metadata = [pair('filename', file.name)];
  if (template) metadata.push(pair('template', template));
  if (template && onInvalid) metadata.push(pair('on_invalid', onInvalid));
  const response = await request('/api/v1/uploads', {
    method: 'POST',
    headers: { ...TUS, 'Upload-Length': String(file.size), 'Upload-Metadata': metadata.join(',') },
  });
  return response.headers.get('Location');
}

/**
 * One PATCH of `blob` at `offset` through XMLHttpRequest (fetch reports no upload progress):
 * onSent(bytesOfThisChunk) while it goes; resolves with the server's new offset.
 */
function patch(url, key, offset, blob, onSent) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PATCH', url);
    xhr.setRequestHeader('Authorization', `Bearer ${key}`);
    xhr.setRequestHeader('Tus-Resumable', '1.0.0');
    xhr.setRequestHeader('Upload-Offset', String(offset));
    xhr.setRequestHeader('Content-Type', 'application/offset+octet-stream');
    xhr.upload.addEventListener('progress', (event) => onSent(event.loaded));
    xhr.addEventListener('load', () => {
      if (xhr.status === 204) {
        resolve(Number(xhr.getResponseHeader('Upload-Offset')));
        return;
      }
      let code = `http_${xhr.status}`;
      let message = `the server answered HTTP ${xhr.status}`;
      try {
        ({ code, message } = JSON.parse(xhr.responseText).error);
      } catch {
        // not the contract's body: keep the stand-in
      }
      reject(new ApiError(xhr.status, code, message));
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'network_error', 'the connection broke')));
    xhr.send(blob);
  });
}

/** The recorded upload's {source_file, task}; waits while another request records it. */
async function result(url) {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await (await request(url)).json();
    } catch (error) {
      if (error.code !== 'upload_incomplete' || attempt >= RETRIES) throw error;
      await pause(500 * 2 ** attempt);
    }
  }
}

/**
 * Uploads `file` resumably; onProgress(sentBytes, totalBytes, resumedFrom) as it goes (bytes
 * the server already had count as sent). `key` is the session's API key (XMLHttpRequest needs
 * it). Resolves with {source_file, task} as a multipart upload's 202 does.
 */
export async function upload(file, key, onProgress, { template = null, onInvalid = null } = {}) {
  const stored = storageKey(file);
  let url = localStorage.getItem(stored);
  let offset = url === null ? null : await serverOffset(url);
  if (offset === null) {
    url = await create(file, template, onInvalid);
    localStorage.setItem(stored, url);
    offset = 0;
  }
  const resumedFrom = offset;
  onProgress(offset, file.size, resumedFrom);
  let failures = 0;
  while (offset < file.size) {
    const chunk = file.slice(offset, Math.min(offset + CHUNK_BYTES, file.size));
    const at = offset;
    try {
      offset = await patch(url, key, at, chunk, (sent) => onProgress(at + sent, file.size, resumedFrom));
      failures = 0;
    } catch (error) {
      const retry = error.status === 0 || error.status === 409 || error.status >= 500;
      if (!retry || failures >= RETRIES) {
        if (error.status === 404 || error.status === 410) localStorage.removeItem(stored);
        throw error;
      }
      failures += 1;
      await pause(500 * 2 ** failures);
      // Where the server is: what it counted of the broken chunk stays counted.
      const now = await serverOffset(url);
      if (now === null) {
        localStorage.removeItem(stored);
        throw new ApiError(410, 'upload_expired', 'the upload expired before it was complete');
      }
      offset = now;
    }
  }
  onProgress(file.size, file.size, resumedFrom);
  try {
    return await result(url);
  } finally {
    localStorage.removeItem(stored);
  }
}
