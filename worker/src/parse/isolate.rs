//! Running a parse in a child process, so that whatever a hostile file does to the parser — an
//! abort on a failed huge allocation, a panic, runaway memory, a hang — costs only that task.
//! The child is the worker executable itself re-invoked as `<exe> parse-child --limits-json J`:
//! it caps its own address space (RLIMIT_AS) before reading anything, then parses the files it
//! is asked for on stdin, one at a time (`<format>\t<path>` per line), writing one line per
//! event to stdout:
//!
//! ```text
//! S\t{"index":0,"name":"Sheet1","hidden":false}
//! R\t<JSON array of values>      (JSON text never holds a raw newline)
//! E\t<SheetSummary JSON>
//! D\t<ParseSummary JSON>      or      F\t<ParseFailure JSON>      (always the last line)
//! ```
//!
//! A row's sheet is that of the last `S` line and its index counts from 0 after it, so a row
//! frame is its JSON text and nothing else. The child's stdout is a Unix socket, written by a
//! thread of its own ([`BackgroundWriter`]). The parent reads it in large chunks, validates each
//! chunk's UTF-8 once and hands the caller rows borrowed from the chunk: rows cross the process
//! boundary without a per-row allocation, copy or number parse. It kills the child at
//! the deadline and turns a death without a final line into `memory_limit` or `parser_crashed`.
//!
//! Starting a process costs a few milliseconds of CPU, which for a small file is most of the
//! task. So a child that parsed a small file successfully, and stayed small, waits, idle, for the
//! next one; a child that failed, timed out, parsed a large file or grew (its heap may not shrink
//! back) is killed, and one child never parses more than [`MAX_PARSES_PER_CHILD`] files.

use std::borrow::Cow;
use std::io::{self, BufRead, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use rustix::net::sockopt;
use serde::{Deserialize, Serialize};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::task::JoinHandle;
use tokio::time::{timeout_at, Instant};

use super::background_writer::BackgroundWriter;
use super::{
    parse_file, FileFormat, ParseErrorCode, ParseEvent, ParseFailure, ParseLimits, ParseSummary,
    SheetSummary,
};

/// The hidden subcommand that makes the worker executable a parse child.
pub const CHILD_SUBCOMMAND: &str = "parse-child";

/// Files up to this size are parsed by a child that is then kept for the next one.
const REUSE_MAX_FILE: u64 = 1 << 20;
/// A child whose peak RSS went past this is not kept.
const REUSE_MAX_PEAK_RSS: u64 = 64 << 20;
/// Idle children kept at most (the consumer's concurrency rarely needs more).
const MAX_IDLE: usize = 8;
/// Parses after which a child is retired anyway.
pub const MAX_PARSES_PER_CHILD: u32 = 1000;

/// How to start parse children, and the idle ones kept for reuse.
#[derive(Clone)]
pub struct Isolation {
    /// The worker executable (`std::env::current_exe()` in production; tests pass
    /// `env!("CARGO_BIN_EXE_worker")`).
    pub exe: PathBuf,
    pub limits: ParseLimits,
    idle: Arc<Mutex<Vec<ParseChild>>>,
}

impl std::fmt::Debug for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Isolation")
            .field("exe", &self.exe)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Isolation {
    pub fn new(exe: PathBuf, limits: ParseLimits) -> Self {
        Self {
            exe,
            limits,
            idle: Arc::default(),
        }
    }

    /// An idle child that is still alive, or a new one.
    fn child(&self) -> anyhow::Result<ParseChild> {
        loop {
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop();
            let Some(mut child) = idle else {
                return ParseChild::spawn(self);
            };
            // One that died while idle (killed from outside) is reaped by dropping it.
            if matches!(child.process.try_wait(), Ok(None)) {
                return Ok(child);
            }
        }
    }

    fn keep(&self, child: ParseChild) {
        if child.parses >= MAX_PARSES_PER_CHILD {
            return;
        }
        // A small file can still inflate (an xlsx is compressed): a child whose heap grew may
        // not give the memory back, and would start the next parse closer to its limit.
        let peak = child
            .process
            .id()
            .and_then(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
            .and_then(|status| peak_rss_bytes(&status));
        if peak.is_none_or(|bytes| bytes > REUSE_MAX_PEAK_RSS) {
            return;
        }
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < MAX_IDLE {
            idle.push(child);
        }
    }

    /// How many children wait for work (for tests).
    pub fn idle_children(&self) -> usize {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

/// `VmHWM` (peak resident set) from the text of `/proc/<pid>/status`, in bytes.
fn peak_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A running parse child. Dropping it kills the process.
struct ParseChild {
    process: Child,
    stdin: ChildStdin,
    /// The child's stdout: our end of a Unix socket pair.
    stdout: tokio::net::UnixStream,
    /// The last bytes the child wrote to stderr (why it aborted), once it has exited.
    stderr_tail: JoinHandle<String>,
    parses: u32,
}

impl ParseChild {
    fn spawn(iso: &Isolation) -> anyhow::Result<Self> {
        let limits_json = serde_json::to_string(&iso.limits).context("serialising parse limits")?;
        // Rows come back through a Unix socket, not a pipe: on this kernel, with 1 MiB buffers,
        // it moved 160 MB for a quarter of the CPU a 1 MiB pipe took (BENCHMARKS.md). Failing
        // to grow the buffers only costs speed (capped at a stock kernel's 208 KiB, the socket
        // still beat the pipe by about as much).
        let (rows, child_end) = UnixStream::pair().context("creating the parse child's socket")?;
        let _ = sockopt::set_socket_send_buffer_size(&child_end, SOCKET_BUFFER);
        let _ = sockopt::set_socket_recv_buffer_size(&rows, SOCKET_BUFFER);
        // The command, which holds the child's end, is dropped at the end of this statement:
        // then only the child has it, and its death is the end of our stream.
        let mut process = Command::new(&iso.exe)
            .arg(CHILD_SUBCOMMAND)
            .arg("--limits-json")
            .arg(limits_json)
            .stdin(Stdio::piped())
            .stdout(OwnedFd::from(child_end))
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning the parse child {}", iso.exe.display()))?;
        let stdin = process.stdin.take().context("parse child has no stdin")?;
        rows.set_nonblocking(true)
            .context("setting up the parse child's socket")?;
        let stdout = tokio::net::UnixStream::from_std(rows)
            .context("setting up the parse child's socket")?;
        let mut stderr = process.stderr.take().context("parse child has no stderr")?;
        // Drain stderr so the child never blocks on it, keeping the tail: an abort's reason
        // is the last thing a child writes.
        let stderr_tail = tokio::spawn(async move {
            const KEEP: usize = 16 * 1024;
            let mut tail = Vec::new();
            let mut chunk = vec![0u8; 8192];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * KEEP {
                    tail.drain(..tail.len() - KEEP);
                }
            }
            String::from_utf8_lossy(&tail).into_owned()
        });
        Ok(Self {
            process,
            stdin,
            stdout,
            stderr_tail,
            parses: 0,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct SheetStartFrame {
    index: u32,
    name: String,
    hidden: bool,
}

/// Where the parent delivers a child's events ([`parse_isolated`] takes a plain callback). A
/// sink that writes somewhere slower than the parser (the consumer's COPY) implements
/// [`EventSink::pause`], which the parent awaits after each chunk of events and
/// before reading more from the child: the child then blocks on the full socket, so memory stays
/// bounded however far the parser is ahead.
pub trait EventSink {
    fn event(&mut self, event: ParseEvent<'_>) -> anyhow::Result<()>;

    /// Called after every chunk of events; may wait for room downstream.
    fn pause(&mut self) -> impl std::future::Future<Output = anyhow::Result<()>> + Send {
        std::future::ready(Ok(()))
    }
}

/// A callback as a sink that never waits.
struct Callback<F>(F);

impl<F: FnMut(ParseEvent<'_>) -> anyhow::Result<()>> EventSink for Callback<F> {
    fn event(&mut self, event: ParseEvent<'_>) -> anyhow::Result<()> {
        (self.0)(event)
    }
}

/// Bytes read from the child's socket at a time; a larger line grows the buffer.
const READ_CHUNK: usize = 1 << 20;

/// The send and receive buffers asked for the child's stdout socket, and the size of the
/// child's writes to it (Linux caps the buffers at `net.core.wmem_max`/`rmem_max`).
const SOCKET_BUFFER: usize = 1 << 20;

/// Parses `path` in a child process, passing events to `on_event` as they arrive.
/// The outer error is ours (cannot spawn, the callback failed, a garbled frame); the inner
/// error is the file's, with its code.
pub async fn parse_isolated(
    iso: &Isolation,
    path: &Path,
    format: FileFormat,
    on_event: impl FnMut(ParseEvent<'_>) -> anyhow::Result<()>,
) -> Result<Result<ParseSummary, ParseFailure>, anyhow::Error> {
    parse_isolated_into(iso, path, format, &mut Callback(on_event)).await
}

/// [`parse_isolated`] into a sink that may hold the child back.
pub async fn parse_isolated_into(
    iso: &Isolation,
    path: &Path,
    format: FileFormat,
    sink: &mut impl EventSink,
) -> Result<Result<ParseSummary, ParseFailure>, anyhow::Error> {
    let deadline = Deadline {
        at: Instant::now() + iso.limits.timeout,
        limit: iso.limits.timeout,
    };
    let reusable = std::fs::metadata(path).is_ok_and(|m| m.len() <= REUSE_MAX_FILE);
    let path_text = path
        .to_str()
        .filter(|p| !p.contains(['\t', '\n']))
        .with_context(|| format!("cannot pass {} to a parse child", path.display()))?;
    let mut child = iso.child()?;
    child.parses += 1;
    let request = format!("{}\t{path_text}\n", format.as_str());
    child
        .stdin
        .write_all(request.as_bytes())
        .await
        .context("sending a file to the parse child")?;

    let outcome =
        match timeout_at(deadline.at, read_frames(&mut child.stdout, sink, &deadline)).await {
            Ok(Ok(outcome)) => outcome,
            // Ours (the sink failed, a garbled frame): the child is dropped, i.e. killed.
            Ok(Err(e)) => return Err(e),
            Err(_) => return Ok(Err(deadline.failure())),
        };
    match outcome {
        Some(Ok(summary)) => {
            if reusable {
                iso.keep(child);
            }
            Ok(Ok(summary))
        }
        Some(Err(failure)) => Ok(Err(failure)),
        None => {
            // Closing stdin ends a child that is still alive; then it is waited for.
            let ParseChild {
                mut process,
                stdin,
                stderr_tail,
                ..
            } = child;
            drop(stdin);
            let status = match timeout_at(deadline.at, process.wait()).await {
                Ok(status) => status.context("waiting for the parse child")?,
                Err(_) => return Ok(Err(deadline.failure())),
            };
            let stderr_text = stderr_tail.await.unwrap_or_default();
            Ok(Err(classify_death(status, &stderr_text)))
        }
    }
}

/// When a parse must have ended.
struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    fn failure(&self) -> ParseFailure {
        ParseFailure::new(
            ParseErrorCode::ParseTimeout,
            format!("parsing took longer than {:?}", self.limit),
        )
    }
}

/// How many frames [`read_frames`] handles between looks at the clock.
const FRAMES_PER_CLOCK_CHECK: usize = 256;

/// Reads one parse's frames into `sink`: its summary or failure, or `None` if the child's
/// stdout ended first (it died; a partial last line counts as death too). The caller's timer
/// fires only when this future waits for the child; a sink slower than the child always finds
/// frames waiting and never lets it, so the deadline is also checked here as frames are read.
async fn read_frames(
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

/// Why a child ended without its final line.
fn classify_death(status: std::process::ExitStatus, stderr: &str) -> ParseFailure {
    let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return ParseFailure::new(
            ParseErrorCode::MemoryLimit,
            "parsing needed more memory than allowed; the file is too large or malformed",
        );
    }
    match status.signal() {
        // SIGKILL we did not send: the kernel's OOM killer.
        Some(9) => ParseFailure::new(
            ParseErrorCode::MemoryLimit,
            "the parser was killed, most likely for using too much memory",
        ),
        Some(sig) => ParseFailure::new(
            ParseErrorCode::ParserCrashed,
            format!("the parser crashed (signal {sig}) on this file: {tail}"),
        ),
        None => ParseFailure::new(
            ParseErrorCode::ParserCrashed,
            format!(
                "the parser stopped (exit code {}) without a result: {tail}",
                status.code().unwrap_or(-1)
            ),
        ),
    }
}

enum Frame<'a> {
    Event(ParseEvent<'a>),
    Done(ParseSummary),
    Failed(ParseFailure),
}

/// Turns lines back into events, numbering the rows of the current sheet.
#[derive(Default)]
struct FrameDecoder {
    sheet: u32,
    next_row: u64,
}

impl FrameDecoder {
    fn row<'a>(&mut self, values: &'a str) -> Frame<'a> {
        let index = self.next_row;
        self.next_row += 1;
        Frame::Event(ParseEvent::Row {
            sheet: self.sheet,
            index,
            values: Cow::Borrowed(values),
        })
    }

    fn decode<'a>(&mut self, line: &'a str) -> anyhow::Result<Frame<'a>> {
        // Rows are nearly every frame: recognise them first, with a two-byte compare.
        if let Some(values) = line.strip_prefix("R\t") {
            return Ok(self.row(values));
        }
        let (tag, rest) = line
            .split_once('\t')
            .ok_or_else(|| anyhow!("parse child wrote an unframed line"))?;
        Ok(match tag {
            "S" => {
                let s: SheetStartFrame = serde_json::from_str(rest).context("sheet start frame")?;
                self.sheet = s.index;
                self.next_row = 0;
                Frame::Event(ParseEvent::SheetStart {
                    index: s.index,
                    name: s.name,
                    hidden: s.hidden,
                })
            }
            "E" => Frame::Event(ParseEvent::SheetEnd(
                serde_json::from_str::<SheetSummary>(rest).context("sheet end frame")?,
            )),
            "D" => Frame::Done(serde_json::from_str(rest).context("summary frame")?),
            "F" => Frame::Failed(serde_json::from_str(rest).context("failure frame")?),
            other => bail!("parse child wrote an unknown frame tag {other:?}"),
        })
    }
}

/// Writes one event as a line. Rows carry neither sheet nor index: the parser emits them in
/// order from 0 after their sheet's start, which the decoder relies on (and a test checks).
fn encode_event(out: &mut impl Write, event: ParseEvent<'_>) -> io::Result<()> {
    match event {
        ParseEvent::Row { values, .. } => {
            out.write_all(b"R\t")?;
            out.write_all(values.as_bytes())?;
            out.write_all(b"\n")
        }
        ParseEvent::SheetStart {
            index,
            name,
            hidden,
        } => {
            out.write_all(b"S\t")?;
            serde_json::to_writer(
                &mut *out,
                &SheetStartFrame {
                    index,
                    name,
                    hidden,
                },
            )?;
            out.write_all(b"\n")
        }
        ParseEvent::SheetEnd(summary) => {
            out.write_all(b"E\t")?;
            serde_json::to_writer(&mut *out, &summary)?;
            out.write_all(b"\n")
        }
    }
}

/// The limits a child runs under, from its arguments.
fn child_limits(args: &[String]) -> Result<ParseLimits, String> {
    let mut limits = None;
    let mut it = args.iter().skip_while(|a| *a != CHILD_SUBCOMMAND).skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--limits-json" => {
                let v = it.next().ok_or("--limits-json needs a value")?;
                limits = Some(serde_json::from_str(v).map_err(|e| format!("bad limits: {e}"))?);
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    Ok(limits.unwrap_or_default())
}

/// One request line: `<format>\t<path>`.
fn parse_request(line: &str) -> Result<(FileFormat, PathBuf), String> {
    let (format, path) = line
        .split_once('\t')
        .ok_or_else(|| format!("bad request {line:?}"))?;
    let format = FileFormat::parse(format).ok_or_else(|| format!("unknown format {format}"))?;
    Ok((format, PathBuf::from(path)))
}

/// Parses one file, turning a panic into a `parser_crashed` failure.
fn parse_caught(
    path: &Path,
    format: FileFormat,
    limits: &ParseLimits,
    out: &mut impl Write,
) -> Result<ParseSummary, ParseFailure> {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse_file(path, format, limits, &mut |event| encode_event(out, event))
    }));
    result.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        Err(ParseFailure::new(
            ParseErrorCode::ParserCrashed,
            format!("the parser failed on this file: {what}"),
        ))
    })
}

/// The entry point of a parse child. The worker's `main` calls this, before starting any
/// runtime, when its first argument is [`CHILD_SUBCOMMAND`]:
/// `if std::env::args().nth(1).as_deref() == Some("parse-child") { return worker::parse::isolate::child_main(); }`
/// It serves requests until stdin ends.
pub fn child_main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let limits = match child_limits(&args) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("parse-child: {e}");
            return ExitCode::from(2);
        }
    };
    // Cap our own address space before touching any file: a failed allocation then aborts
    // this process only, and the parent reports `memory_limit`.
    let cap = limits.memory_limit_bytes;
    if let Err(e) = rlimit::setrlimit(rlimit::Resource::AS, cap, cap) {
        eprintln!("parse-child: cannot set the memory limit: {e}");
        return ExitCode::from(3);
    }
    // Our own handle on stdout: writes of whole buffers, without `Stdout`'s line buffering.
    let stdout = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map(std::fs::File::from);
    let Ok(mut out) = stdout.and_then(|fd| BackgroundWriter::new(fd, SOCKET_BUFFER)) else {
        eprintln!("parse-child: cannot set up the output");
        return ExitCode::from(3);
    };
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else {
            return ExitCode::from(2);
        };
        let (format, path) = match parse_request(&line) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("parse-child: {e}");
                return ExitCode::from(2);
            }
        };
        let result = parse_caught(&path, format, &limits, &mut out);
        let written = match &result {
            Ok(summary) => out
                .write_all(b"D\t")
                .and_then(|_| Ok(serde_json::to_writer(&mut out, summary)?)),
            Err(failure) => out
                .write_all(b"F\t")
                .and_then(|_| Ok(serde_json::to_writer(&mut out, failure)?)),
        };
        if written
            .and_then(|_| out.write_all(b"\n"))
            .and_then(|_| out.flush())
            .is_err()
        {
            // The parent went away; nobody is left to tell.
            return ExitCode::from(4);
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_with_rows_numbered_per_sheet() {
        let mut buf = Vec::new();
        let start = |index| ParseEvent::SheetStart {
            index,
            name: format!("S\t{index}"),
            hidden: true,
        };
        let row = |sheet, index, values: &'static str| ParseEvent::Row {
            sheet,
            index,
            values: Cow::Borrowed(values),
        };
        let events = vec![
            start(0),
            row(0, 0, r#"["a\tb",null,1]"#),
            row(0, 1, "[2]"),
            start(3),
            row(3, 0, "[3]"),
        ];
        for e in events.clone() {
            assert!(encode_event(&mut buf, e).is_ok());
        }
        let text = String::from_utf8(buf).expect("frames are UTF-8");
        let mut decoder = FrameDecoder::default();
        let decoded: Vec<ParseEvent<'_>> = text
            .split_terminator('\n')
            .filter_map(|l| match decoder.decode(l) {
                Ok(Frame::Event(e)) => Some(e),
                _ => None,
            })
            .collect();
        assert_eq!(decoded, events);
    }

    #[test]
    fn the_peak_rss_is_read_from_proc_status() {
        let status = "Name:\tworker\nVmPeak:\t  20000 kB\nVmHWM:\t    5120 kB\nVmRSS:\t 4000 kB\n";
        assert_eq!(peak_rss_bytes(status), Some(5 << 20));
        assert_eq!(peak_rss_bytes("Name:\tworker\n"), None);
        let own = std::fs::read_to_string("/proc/self/status").ok();
        assert!(own
            .as_deref()
            .and_then(peak_rss_bytes)
            .is_some_and(|b| b > 0));
    }

    #[test]
    fn child_arguments_and_requests_are_read() {
        let args: Vec<String> = ["exe", "parse-child", "--limits-json", "{\"max_rows\":5,\"max_columns\":2,\"max_cell_bytes\":9,\"max_inflate_ratio\":1,\"max_inflated_bytes\":1,\"memory_limit_bytes\":1,\"timeout\":{\"secs\":1,\"nanos\":0}}"]
            .map(String::from)
            .to_vec();
        assert_eq!(child_limits(&args).map(|l| l.max_rows), Ok(5));
        assert!(child_limits(&["exe".into(), "parse-child".into(), "/tmp/x".into()]).is_err());
        assert_eq!(
            parse_request("tsv\t/tmp/a b.tsv"),
            Ok((FileFormat::Tsv, PathBuf::from("/tmp/a b.tsv")))
        );
        assert!(parse_request("/tmp/x").is_err());
    }
}
