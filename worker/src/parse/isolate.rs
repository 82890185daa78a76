//! Running a parse in a child process, so that whatever a hostile file does to the parser — an
//! abort on a failed huge allocation, a panic, runaway memory, a hang — costs only that task.
//! The child is the worker executable itself re-invoked as `<exe> parse-child --format F
//! --limits-json J <path>`: it caps its own address space (RLIMIT_AS) before reading anything,
//! runs [`parse_file`], and writes one line per event to stdout:
//!
//! ```text
//! S\t{"index":0,"name":"Sheet1","hidden":false}
//! R\t<JSON array of values>      (JSON text never holds a raw newline)
//! E\t<SheetSummary JSON>
//! D\t<ParseSummary JSON>      or      F\t<ParseFailure JSON>      (always the last line)
//! ```
//!
//! A row's sheet is that of the last `S` line and its index counts from 0 after it, so a row
//! frame is its JSON text and nothing else. The parent reads the pipe in large chunks, validates
//! each chunk's UTF-8 once and hands the caller rows borrowed from the chunk: rows cross the
//! process boundary without a per-row allocation, copy or number parse. It kills the child at
//! the deadline and turns a death without a final line into `memory_limit` or `parser_crashed`.

use std::borrow::Cow;
use std::io::{self, BufWriter, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::time::{timeout_at, Instant};

use super::{
    parse_file, FileFormat, ParseErrorCode, ParseEvent, ParseFailure, ParseLimits, ParseSummary,
    SheetSummary,
};

/// The hidden subcommand that makes the worker executable a parse child.
pub const CHILD_SUBCOMMAND: &str = "parse-child";

/// How to start parse children.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The worker executable (`std::env::current_exe()` in production; tests pass
    /// `env!("CARGO_BIN_EXE_worker")`).
    pub exe: PathBuf,
    pub limits: ParseLimits,
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
/// before reading more from the child: the child then blocks on the full pipe, so memory stays
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

/// Bytes read from the child's pipe at a time; a larger line grows the buffer.
const READ_CHUNK: usize = 1 << 20;

/// The capacity asked for the child's stdout pipe (1 MiB, Linux's default
/// `/proc/sys/fs/pipe-max-size` for unprivileged processes).
const PIPE_SIZE: usize = 1 << 20;

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
    let deadline = Instant::now() + iso.limits.timeout;
    let limits_json = serde_json::to_string(&iso.limits).context("serialising parse limits")?;
    let mut child = Command::new(&iso.exe)
        .arg(CHILD_SUBCOMMAND)
        .arg("--format")
        .arg(format.as_str())
        .arg("--limits-json")
        .arg(limits_json)
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning the parse child {}", iso.exe.display()))?;
    let mut stdout = child.stdout.take().context("parse child has no stdout")?;
    // A pipe holds 64 KiB by default: the child would block (and both sides switch) every
    // 400-odd rows. A larger pipe lets it run ahead; failing to grow it only costs speed.
    let _ = rustix::pipe::fcntl_setpipe_size(&stdout, PIPE_SIZE);
    let stderr = child.stderr.take().context("parse child has no stderr")?;
    // Keep the start of stderr (the reason of an abort), drain the rest so the child never
    // blocks on a full pipe.
    let stderr_task = tokio::spawn(async move {
        let mut kept = Vec::new();
        let mut reader = stderr;
        let _ = (&mut reader).take(64 * 1024).read_to_end(&mut kept).await;
        let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
        String::from_utf8_lossy(&kept).into_owned()
    });

    let reading = async {
        let mut decoder = FrameDecoder::default();
        let mut buf = vec![0u8; READ_CHUNK];
        let mut filled = 0;
        loop {
            if filled == buf.len() {
                // One line longer than the buffer (a very wide row): make room for it.
                buf.resize(buf.len() * 2, 0);
            }
            let n = stdout.read(&mut buf[filled..]).await?;
            if n == 0 {
                // The child ended without its final line (a partial line is a death too).
                return Ok::<_, anyhow::Error>(None);
            }
            let scan_from = filled;
            filled += n;
            let Some(last_newline) = memchr::memrchr(b'\n', &buf[scan_from..filled]) else {
                continue;
            };
            let complete = scan_from + last_newline + 1;
            let text = simdutf8::basic::from_utf8(&buf[..complete])
                .map_err(|_| anyhow!("parse child wrote invalid UTF-8"))?;
            for line in text.split_terminator('\n') {
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
    };
    let outcome = match timeout_at(deadline, reading).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => {
            let _ = child.kill().await;
            return Err(e);
        }
        Err(_) => {
            let _ = child.kill().await;
            return Ok(Err(ParseFailure::new(
                ParseErrorCode::ParseTimeout,
                format!("parsing took longer than {:?}", iso.limits.timeout),
            )));
        }
    };
    let status = match timeout_at(deadline, child.wait()).await {
        Ok(status) => status.context("waiting for the parse child")?,
        Err(_) => {
            let _ = child.kill().await;
            return Ok(Err(ParseFailure::new(
                ParseErrorCode::ParseTimeout,
                format!("parsing took longer than {:?}", iso.limits.timeout),
            )));
        }
    };
    if let Some(result) = outcome {
        return Ok(result);
    }
    let stderr_text = stderr_task.await.unwrap_or_default();
    Ok(Err(classify_death(status, &stderr_text)))
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
    fn decode<'a>(&mut self, line: &'a str) -> anyhow::Result<Frame<'a>> {
        let (tag, rest) = line
            .split_once('\t')
            .ok_or_else(|| anyhow!("parse child wrote an unframed line"))?;
        Ok(match tag {
            "R" => {
                let index = self.next_row;
                self.next_row += 1;
                Frame::Event(ParseEvent::Row {
                    sheet: self.sheet,
                    index,
                    values: Cow::Borrowed(rest),
                })
            }
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

struct ChildArgs {
    format: FileFormat,
    limits: ParseLimits,
    path: PathBuf,
}

fn child_args(args: &[String]) -> Result<ChildArgs, String> {
    let mut format = None;
    let mut limits = None;
    let mut path = None;
    let mut it = args.iter().skip_while(|a| *a != CHILD_SUBCOMMAND).skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--format" => {
                let v = it.next().ok_or("--format needs a value")?;
                format = Some(FileFormat::parse(v).ok_or_else(|| format!("unknown format {v}"))?);
            }
            "--limits-json" => {
                let v = it.next().ok_or("--limits-json needs a value")?;
                limits = Some(serde_json::from_str(v).map_err(|e| format!("bad limits: {e}"))?);
            }
            other => path = Some(PathBuf::from(other)),
        }
    }
    Ok(ChildArgs {
        format: format.ok_or("missing --format")?,
        limits: limits.unwrap_or_default(),
        path: path.ok_or("missing file path")?,
    })
}

/// The entry point of a parse child. The worker's `main` calls this, before starting any
/// runtime, when its first argument is [`CHILD_SUBCOMMAND`]:
/// `if std::env::args().nth(1).as_deref() == Some("parse-child") { return worker::parse::isolate::child_main(); }`
pub fn child_main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let args = match child_args(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("parse-child: {e}");
            return ExitCode::from(2);
        }
    };
    // Cap our own address space before touching the file: a failed allocation then aborts
    // this process only, and the parent reports `memory_limit`.
    let cap = args.limits.memory_limit_bytes;
    if let Err(e) = rlimit::setrlimit(rlimit::Resource::AS, cap, cap) {
        eprintln!("parse-child: cannot set the memory limit: {e}");
        return ExitCode::from(3);
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(256 * 1024, stdout.lock());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse_file(&args.path, args.format, &args.limits, &mut |event| {
            encode_event(&mut out, event)
        })
    }));
    let result = match result {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            Err(ParseFailure::new(
                ParseErrorCode::ParserCrashed,
                format!("the parser failed on this file: {what}"),
            ))
        }
    };
    let written = match &result {
        Ok(summary) => out
            .write_all(b"D\t")
            .and_then(|_| Ok(serde_json::to_writer(&mut out, summary)?)),
        Err(failure) => out
            .write_all(b"F\t")
            .and_then(|_| Ok(serde_json::to_writer(&mut out, failure)?)),
    };
    match written
        .and_then(|_| out.write_all(b"\n"))
        .and_then(|_| out.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        // The parent went away; nobody is left to tell.
        Err(_) => ExitCode::from(4),
    }
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
    fn child_arguments_are_read_after_the_subcommand() {
        let args: Vec<String> = ["exe", "parse-child", "--format", "tsv", "--limits-json", "{\"max_rows\":5,\"max_columns\":2,\"max_cell_bytes\":9,\"max_inflate_ratio\":1,\"max_inflated_bytes\":1,\"memory_limit_bytes\":1,\"timeout\":{\"secs\":1,\"nanos\":0}}", "/tmp/x"]
            .map(String::from)
            .to_vec();
        let parsed = child_args(&args);
        assert!(parsed.is_ok());
        if let Ok(a) = parsed {
            assert_eq!(a.format, FileFormat::Tsv);
            assert_eq!(a.limits.max_rows, 5);
            assert_eq!(a.path, PathBuf::from("/tmp/x"));
        }
    }
}
