//! The parent's reader of a child's frames: large reads from the socket, each chunk's UTF-8
//! checked once, and rows handed to the sink borrowed from the chunk. It also keeps the
//! deadline when the sink, not the child, is the slow side.

use anyhow::anyhow;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::frame::{Frame, FrameDecoder};
use super::{Deadline, EventSink};
use crate::parse::{ParseFailure, ParseSummary};

/// Bytes read from the child's socket at a time; a larger line grows the buffer.
const READ_CHUNK: usize = 1 << 20;

/// How many frames [`read_frames`] handles between looks at the clock.
const FRAMES_PER_CLOCK_CHECK: usize = 256;

/// Reads one parse's frames into `sink`: its summary or failure, or `None` if the child's
/// stdout ended first (it died; a partial last line counts as death too). The caller's timer
/// fires only when this future waits for the child; a sink slower than the child always finds
/// frames waiting and never lets it, so the deadline is also checked here as frames are read.
pub(super) async fn read_frames(
    stdout: &mut tokio::net::UnixStream,
    sink: &mut impl EventSink,
    deadline: &Deadline,
) -> anyhow::Result<Option<Result<ParseSummary, ParseFailure>>> {
    let mut decoder = FrameDecoder::default();
    let mut frames = 0usize;
    // Small files are the common case: start small, grow while reads fill the buffer.
    let mut buf = vec![0u8; 64 * 1024];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            // One line longer than the buffer (a very wide row): make room for it.
            buf.resize(buf.len() * 2, 0);
        }
        let n = stdout.read(&mut buf[filled..]).await?;
        if n == 0 {
            return Ok(None);
        }
        if filled + n == buf.len() && buf.len() < READ_CHUNK {
            buf.resize(READ_CHUNK, 0);
        }
        let scan_from = filled;
        filled += n;
        let Some(last_newline) = memchr::memrchr(b'\n', &buf[scan_from..filled]) else {
            continue;
        };
        let complete = scan_from + last_newline + 1;
        let text = simdutf8::basic::from_utf8(&buf[..complete])
            .map_err(|_| anyhow!("parse child wrote invalid UTF-8"))?;
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', text.as_bytes()) {
            // Newlines are ASCII, so these are char boundaries.
            let line = &text[start..end];
            start = end + 1;
            frames += 1;
            if frames.is_multiple_of(FRAMES_PER_CLOCK_CHECK) && Instant::now() >= deadline.at {
                return Ok(Some(Err(deadline.failure())));
            }
            match decoder.decode(line)? {
                Frame::Event(event) => sink.event(event)?,
                Frame::Done(summary) => return Ok(Some(Ok(summary))),
                Frame::Failed(failure) => return Ok(Some(Err(failure))),
            }
        }
        buf.copy_within(complete..filled, 0);
        filled -= complete;
        sink.pause().await?;
    }
}
