// The page's follower of the event stream (GET /api/v1/events/stream): tells the page the moment
// one of the caller's tasks ends, instead of it polling for that. EventSource cannot send the
// Authorization header, so the stream is read with fetch and parsed here (the `id:`, `event:` and
// `data:` lines of Server-Sent Events). A dropped stream is opened again after a backoff with
// Last-Event-ID, so no event is missed while it was down; one that cannot be held (an old
// browser, a proxy that buffers, the server's stream limit) leaves the page to its polls, which
// live() tells apart: while the stream is live the page polls only slowly, for progress.

import { request } from './api.js';

const RETRY_MIN_MS = 1000;
const RETRY_MAX_MS = 30000;

let current = null; // {stop: AbortController, live, lastId} of the followed stream

/** True while the stream is open and delivering: the page may then poll slowly. */
export function live() {
  return Boolean(current && current.live);
}

/** Stops following (sign-out, another sign-in). */
export function stop() {
  if (current) current.stop.abort();
  current = null;
}

/**
 * Follows the caller's events: onEvent(event) gets each one's JSON ({id, type, timestamp, data}).
 * Runs until stop(); reconnects on its own.
 */
export function start(onEvent) {
  stop();
  if (typeof ReadableStream === 'undefined' || typeof TextDecoderStream === 'undefined') return;
  const mine = { stop: new AbortController(), live: false, lastId: null };
  current = mine;
  (async () => {
    let wait = RETRY_MIN_MS;
    while (current === mine) {
      try {
        await follow(mine, onEvent);
        wait = RETRY_MIN_MS; // it was open, then ended: the server went away; back at once-ish
      } catch (error) {
        if (mine.stop.signal.aborted || error.status === 401) return;
        // 410: the event we had is no longer kept: start again from now (the polls catch up).
        if (error.status === 410) mine.lastId = null;
        wait = Math.min(wait * 2, RETRY_MAX_MS);
      }
      mine.live = false;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
}

async function follow(mine, onEvent) {
  const headers = mine.lastId ? { 'Last-Event-ID': mine.lastId } : {};
  const response = await request('/api/v1/events/stream', { headers, signal: mine.stop.signal });
  mine.live = true;
  const lines = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let frame = { id: null, data: [] };
  for (;;) {
    const { value, done } = await lines.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, '');
      buffer = buffer.slice(end + 1);
      if (line === '') {
        // The end of a frame: an event when it had data (a comment frame has none).
        if (frame.data.length > 0) {
          if (frame.id) mine.lastId = frame.id;
          try {
            onEvent(JSON.parse(frame.data.join('\n')));
          } catch {
            // not an event this page understands
          }
        }
        frame = { id: null, data: [] };
      } else if (line.startsWith('id:')) {
        frame.id = line.slice(3).trim();
      } else if (line.startsWith('data:')) {
        frame.data.push(line.slice(5).replace(/^ /, ''));
      }
    }
  }
}
