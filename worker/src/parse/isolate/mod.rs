//! Running a parse in a child process, so that whatever a hostile file does to the parser — an
//! abort on a failed huge allocation, a panic, runaway memory, a hang — costs only that task.
//! The child is the worker executable itself, re-invoked as `worker parse-child` ([`child`]); it
//! parses the files the parent names on its stdin and writes one line per event to a Unix
//! socket ([`frame`]). The parent ([`reader`]) reads that socket in large chunks and hands the
//! caller rows borrowed from them, kills the child at the deadline and turns a death without a
//! final line into `memory_limit` or `parser_crashed` ([`death`]).
//!
//! Starting a process ([`spawn`]) costs a few milliseconds of CPU, which for a small file is most
//! of the task, so a child that parsed a small file successfully, and stayed small, waits, idle,
//! for the next one ([`pool`]).

mod child;
mod death;
mod frame;
mod pool;
mod reader;
mod spawn;

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use tokio::time::{timeout_at, Instant};

pub use child::{child_main, ChildArgs, CHILD_SUBCOMMAND};
pub use pool::Isolation;

use super::{
    FileFormat, LayoutOverride, ParseEvent, ParseFailure, ParseSummary, TaskErrorCode, TemplateJob,
};

/// The send and receive buffers asked for the child's stdout socket, and the size of the
/// child's writes to it (Linux caps the buffers at `net.core.wmem_max`/`rmem_max`).
const SOCKET_BUFFER: usize = 1 << 20;

/// Where the parent delivers a child's events ([`parse_isolated`] takes a plain callback). A
/// sink that writes somewhere slower than the parser (the consumer's COPY) implements
/// [`EventSink::pause`], which the parent awaits after each chunk of events and
/// before reading more from the child: the child then blocks on the full socket, so memory stays
/// bounded however far the parser is ahead.
pub trait EventSink {
    fn event(&mut self, event: ParseEvent<'_>) -> anyhow::Result<()>;

    /// Called once the child that will parse the file is known (`None`: no pid to watch).
    fn child_started(&mut self, _pid: Option<u32>) {}

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

/// Parses `path` in a child process, passing events to `on_event` as they arrive.
/// The outer error is ours (cannot spawn, the callback failed, a garbled frame); the inner
/// error is the file's, with its code.
pub async fn parse_isolated(
    iso: &Isolation,
    path: &Path,
    format: FileFormat,
    on_event: impl FnMut(ParseEvent<'_>) -> anyhow::Result<()>,
) -> Result<Result<ParseSummary, ParseFailure>, anyhow::Error> {
    parse_isolated_into(iso, path, format, None, None, &mut Callback(on_event)).await
}

/// [`parse_isolated`] into a sink that may hold the child back, validating against `template`
/// when there is one, with the tables where `layout` says when a person said.
pub async fn parse_isolated_into(
    iso: &Isolation,
    path: &Path,
    format: FileFormat,
    template: Option<&TemplateJob>,
    layout: Option<&LayoutOverride>,
    sink: &mut impl EventSink,
) -> Result<Result<ParseSummary, ParseFailure>, anyhow::Error> {
    let deadline = Deadline {
        at: Instant::now() + iso.limits.timeout,
        limit: iso.limits.timeout,
    };
    let reusable = std::fs::metadata(path).is_ok_and(|m| m.len() <= pool::REUSE_MAX_FILE);
    let mut request = serde_json::to_string(&child::ParseRequest {
        format,
        path: path.to_owned(),
        template: template.cloned(),
        layout: layout.cloned(),
    })
    .with_context(|| format!("cannot pass {} to a parse child", path.display()))?;
    request.push('\n');
    let mut child = iso.child()?;
    sink.child_started(child.pid());
    child.request(&request).await?;

    let read = reader::read_frames(&mut child.stdout, sink, &deadline);
    let outcome = match timeout_at(deadline.at, read).await {
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
        None => match child.end(deadline.at).await? {
            Some((status, stderr)) => Ok(Err(death::classify_death(status, &stderr))),
            None => Ok(Err(deadline.failure())),
        },
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
            TaskErrorCode::ParseTimeout,
            format!("parsing took longer than {:?}", self.limit),
        )
    }
}
