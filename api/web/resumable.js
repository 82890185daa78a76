// A small tus 1.0 client for the page's large files (/api/v1/uploads), on tus.js's core (served
// ahead of this module: its constants and functions are in scope here): the upload is found
// again or created (tusResumeOrCreate: after a reload of the page, picking the same file again
// resumes the same upload instead of starting from zero), sent in chunks with the page's key
// (tusSend; a dropped connection is retried from the offset the server reports on HEAD), and
// its recorded {source_file, task} read back.

import { ApiError, request } from './api.js';

export const THRESHOLD_BYTES = TUS_THRESHOLD_BYTES;

const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/** The server's offset of the upload at `url`, or null when it no longer exists (or expired). */
async function serverOffset(url) {
  try {
    const response = await request(url, { method: 'HEAD', headers: TUS_HEADERS });
    return Number(response.headers.get('Upload-Offset'));
  } catch (error) {
    if (error.status === 404 || error.status === 410) return null;
    throw error;
  }
}

async function create(file, template, onInvalid) {
  const metadata = [['filename', file.name]];
  if (template) metadata.push(['template', template]);
  if (template && onInvalid) metadata.push(['on_invalid', onInvalid]);
  const response = await request('/api/v1/uploads', {
    method: 'POST',
    headers: { ...TUS_HEADERS, 'Upload-Length': String(file.size), 'Upload-Metadata': tusMetadata(metadata) },
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
      if (error.code !== 'upload_incomplete' || attempt >= TUS_RETRIES) throw error;
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
  const { url, offset, forget } = await tusResumeOrCreate(
    'page', file, serverOffset, () => create(file, template, onInvalid));
  const resumedFrom = offset;
  onProgress(offset, file.size, resumedFrom);
  const io = {
    patch: (at, chunk, onSent) => patch(url, key, at, chunk, onSent),
    retryable: (error) => error.status === 0 || error.status === 409 || error.status >= 500,
    offset: () => serverOffset(url),
    gone: () => new ApiError(410, 'upload_expired', 'the upload expired before it was complete'),
  };
  try {
    await tusSend(file, offset, io, (sent) => onProgress(sent, file.size, resumedFrom));
  } catch (error) {
    if (error.status === 404 || error.status === 410) forget();
    throw error;
  }
  onProgress(file.size, file.size, resumedFrom);
  try {
    return await result(url);
  } finally {
    forget();
  }
}
