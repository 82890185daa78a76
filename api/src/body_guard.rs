//! Guards on an upload's raw body, before the multipart parser sees it. The parser (multer,
//! through axum) buffers a part's header until its blank line with no bound, so a client could
//! send a 64 MiB "header" and have it held in memory; and it waits for the next chunk forever, so
//! a client that stops sending holds its connection and upload slot for good. This stream
//! adapter cuts both off: it tracks where each part header begins (after a boundary line) and
//! ends (at the first blank line), failing once one grows past its limit, and it fails a body
//! that sends nothing for the idle timeout. Which guard tripped is recorded, so the handler can
//! answer with the right code instead of the parser's generic error. No crate does this: multer
//! has size limits for part data only.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::{Stream, StreamExt};
use memchr::memmem::Finder;

/// What stopped a guarded body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tripped {
    /// A part header grew past the limit.
    PartHeaderTooLarge,
    /// Nothing arrived for the idle timeout.
    Idle,
}

/// Shared with the handler: which guard (if any) ended the body.
#[derive(Debug, Clone, Default)]
pub struct Trip(Arc<Mutex<Option<Tripped>>>);

impl Trip {
    pub fn get(&self) -> Option<Tripped> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, why: Tripped) -> std::io::Error {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        std::io::Error::other(match why {
            Tripped::PartHeaderTooLarge => "a multipart part header is too large",
            Tripped::Idle => "the request body stalled",
        })
    }
}

/// Where the scanner is in the multipart body.
enum State {
    /// In a part's data (or the preamble): looking for `CRLF--boundary`.
    Data,
    /// In a part header: looking for the blank line, `seen` bytes so far.
    Header { seen: usize },
}

/// Finds part headers in a multipart body and measures them.
pub struct HeaderScanner {
    delimiter: Finder<'static>,
    blank_line: Finder<'static>,
    state: State,
    /// The last bytes of the previous chunk, so a delimiter split across chunks is found.
    carry: Vec<u8>,
    max_header: usize,
}

impl HeaderScanner {
    pub fn new(boundary: &str, max_header: usize) -> Self {
        Self {
            delimiter: Finder::new(format!("\r\n--{boundary}").as_bytes()).into_owned(),
            blank_line: Finder::new(b"\r\n\r\n").into_owned(),
            state: State::Data,
            // The body's first delimiter has no CRLF before it: pretend there was one.
            carry: b"\r\n".to_vec(),
            max_header,
        }
    }

    /// Scans the next chunk; `false` once a part header is larger than the limit.
    pub fn feed(&mut self, chunk: &[u8]) -> bool {
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(chunk);
        let mut pos = 0;
        loop {
            match self.state {
                State::Data => match self.delimiter.find(&buf[pos..]) {
                    Some(i) => {
                        pos += i + self.delimiter.needle().len();
                        self.state = State::Header { seen: 0 };
                    }
                    None => {
                        let keep = self.delimiter.needle().len() - 1;
                        self.carry = buf[buf.len().saturating_sub(keep).max(pos)..].to_vec();
                        return true;
                    }
                },
                State::Header { seen } => match self.blank_line.find(&buf[pos..]) {
                    Some(i) => {
                        if seen + i > self.max_header {
                            return false;
                        }
                        pos += i + 4;
                        self.state = State::Data;
                    }
                    None => {
                        let keep = 3.min(buf.len() - pos);
                        let counted = buf.len() - pos - keep;
                        if seen + counted > self.max_header {
                            return false;
                        }
                        self.state = State::Header {
                            seen: seen + counted,
                        };
                        self.carry = buf[buf.len() - keep..].to_vec();
                        return true;
                    }
                },
            }
        }
    }
}

/// `body` with both guards: part headers at most `max_header` bytes, and at most `idle` between
/// two chunks.
pub fn guard(
    body: Body,
    boundary: &str,
    max_header: usize,
    idle: Duration,
    trip: Trip,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send {
    let scanner = HeaderScanner::new(boundary, max_header);
    let stream = body.into_data_stream();
    futures::stream::unfold(
        (stream, scanner, trip, false),
        move |(mut stream, mut scanner, trip, done)| async move {
            if done {
                return None;
            }
            let item = match tokio::time::timeout(idle, stream.next()).await {
                Err(_) => Err(trip.set(Tripped::Idle)),
                Ok(None) => return None,
                Ok(Some(Err(e))) => Err(std::io::Error::other(e)),
                Ok(Some(Ok(chunk))) if scanner.feed(&chunk) => Ok(chunk),
                Ok(Some(Ok(_))) => Err(trip.set(Tripped::PartHeaderTooLarge)),
            };
            let done = item.is_err();
            Some((item, (stream, scanner, trip, done)))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(header_len: usize) -> Vec<u8> {
        let mut b =
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.csv\"\r\n"
                .to_vec();
        b.extend(std::iter::repeat_n(b'h', header_len));
        b.extend_from_slice(b"\r\n\r\na,b\r\n1,2\r\n--XyZ--\r\n");
        b
    }

    /// Feeds `bytes` in chunks of every size from 1 to 9 and returns each run's verdict.
    fn verdicts(bytes: &[u8], max: usize) -> Vec<bool> {
        (1..10)
            .map(|size| {
                let mut s = HeaderScanner::new("XyZ", max);
                bytes.chunks(size).all(|c| s.feed(c))
            })
            .collect()
    }

    #[test]
    fn a_header_within_the_limit_passes_whatever_the_chunking() {
        // The header is 66 bytes of Content-Disposition plus 10: 78 with its CRLF.
        assert!(verdicts(&body(10), 100).iter().all(|&ok| ok));
    }

    #[test]
    fn a_header_past_the_limit_fails_whatever_the_chunking() {
        assert!(verdicts(&body(200), 100).iter().all(|&ok| !ok));
    }

    #[test]
    fn large_part_data_is_not_counted_as_header() {
        let mut b = body(10);
        let data_at = b.len() - b"1,2\r\n--XyZ--\r\n".len();
        b.splice(data_at..data_at, std::iter::repeat_n(b'd', 10_000));
        assert!(verdicts(&b, 100).iter().all(|&ok| ok));
    }

    #[test]
    fn every_part_header_is_measured() {
        let mut b = body(10);
        b.truncate(b.len() - b"--XyZ--\r\n".len());
        b.extend_from_slice(b"--XyZ\r\nX-Big: ");
        b.extend(std::iter::repeat_n(b'h', 500));
        b.extend_from_slice(b"\r\n\r\ndata\r\n--XyZ--\r\n");
        assert!(verdicts(&b, 100).iter().all(|&ok| !ok));
    }
}
