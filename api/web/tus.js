// The tus 1.0 client's core, one copy for the page (served ahead of resumable.js, an ES module)
// and the embeddable importer (served inside its closure, a classic script): so it declares
// plain functions and constants, with no import and no export. Each caller brings its own
// transport (the page's XMLHttpRequest with its API key, the importer's fetch with the
// session's token); the chunking, the retries and the resume from the server's offset are here.

/**
 * Files larger than this go through tus. Below it one multipart request is quicker (one round
 * trip instead of three or more) and re-sending it after a failure costs little.
 */
const TUS_THRESHOLD_BYTES = 8 * 1024 * 1024;
/** Bytes per PATCH: what a dropped connection can cost at most, and the progress's granularity. */
const TUS_CHUNK_BYTES = 4 * 1024 * 1024;
/** Attempts at one chunk whose connection broke, with a doubling pause between them. */
const TUS_RETRIES = 5;
const TUS_HEADERS = { 'Tus-Resumable': '1.0.0' };

/** localStorage's `method` with `args`; null where storage is not allowed (a sandboxed frame). */
function tusStorage(method, ...args) {
  try {
    return localStorage[method](...args);
  } catch {
    return null;
  }
}

/**
 * Where to send `file`: the upload an earlier page or tab left for it under `scope` (its URL kept
 * in localStorage by name, size and modification time), when `offsetOf(url)` finds the server
 * still has it; else a new one, whose URL `create()` resolves with. Resolves with {url, offset,
 * forget}: forget() drops the kept URL once the upload is done or gone. So an upload cut by a
 * closed tab resumes when the same file is picked again, and is neither sent nor counted twice.
 */
async function tusResumeOrCreate(scope, file, offsetOf, create) {
  const key = `sheetrelay.tus:${scope}:${file.name}:${file.size}:${file.lastModified}`;
  const forget = () => tusStorage('removeItem', key);
  const kept = tusStorage('getItem', key);
  const offset = kept === null ? null : await offsetOf(kept);
  if (offset !== null) return { url: kept, offset, forget };
  const url = await create();
  tusStorage('setItem', key, url);
  return { url, offset: 0, forget };
}

/** An Upload-Metadata header from [key, value] pairs, each value base64 of its UTF-8. */
function tusMetadata(pairs) {
  return pairs.map(([key, value]) => {
    let binary = '';
    for (const b of new TextEncoder().encode(value)) binary += String.fromCharCode(b);
    return `${key} ${btoa(binary)}`;
  }).join(',');
}

/**
 * Sends `file` from `offset` in chunks of TUS_CHUNK_BYTES through `io`:
 * - `io.patch(offset, blob, onSent)` sends one chunk, calling onSent(bytes of it sent so far),
 *   and resolves with the server's new offset;
 * - `io.retryable(error)` says whether a failed PATCH may be tried again (a dropped connection);
 * - `io.offset()` resolves with the server's offset, or null when the upload is gone;
 * - `io.gone()` is the error thrown then.
 * A failed chunk is retried after a doubling pause from where the server says the upload stands
 * (what it counted of the broken chunk stays counted). onProgress(bytes the server has) as it goes.
 */
async function tusSend(file, offset, io, onProgress) {
  let failures = 0;
  let at = offset;
  while (at < file.size) {
    const from = at;
    const chunk = file.slice(from, Math.min(from + TUS_CHUNK_BYTES, file.size));
    try {
      at = await io.patch(from, chunk, (sent) => onProgress(from + sent));
      failures = 0;
    } catch (error) {
      if (!io.retryable(error) || failures >= TUS_RETRIES) throw error;
      failures += 1;
      await new Promise((resolve) => { setTimeout(resolve, 500 * 2 ** failures); });
      const now = await io.offset();
      if (now === null) throw io.gone();
      at = now;
    }
    onProgress(at);
  }
}
