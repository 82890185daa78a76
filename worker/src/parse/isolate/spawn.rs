//! Starting a parse child: the worker executable re-invoked as `worker parse-child`, its stdout a
//! Unix socket with large buffers (rows come back through it), its stderr drained in the
//! background so the child never blocks on it, keeping the tail that says why a child aborted.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{ExitStatus, Stdio};

use anyhow::Context;
use rustix::net::sockopt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::task::JoinHandle;
use tokio::time::{timeout_at, Instant};

use super::child::{CHILD_SUBCOMMAND, LIMITS_ARG};
use super::SOCKET_BUFFER;
use crate::parse::ParseLimits;

/// The bytes of stderr kept: an abort's reason is the last thing a child writes.
const STDERR_TAIL: usize = 16 * 1024;

/// A running parse child. Dropping it kills the process.
pub(super) struct ParseChild {
    process: Child,
    stdin: ChildStdin,
    /// The child's stdout: our end of a Unix socket pair.
    pub(super) stdout: tokio::net::UnixStream,
    /// The last bytes the child wrote to stderr (why it aborted), once it has exited.
    stderr_tail: JoinHandle<String>,
    /// Files this child was asked to parse.
    pub(super) parses: u32,
}

impl ParseChild {
    pub(super) fn spawn(exe: &Path, limits: &ParseLimits) -> anyhow::Result<Self> {
        let limits_json = serde_json::to_string(limits).context("serialising parse limits")?;
        // Rows come back through a Unix socket, not a pipe: on this kernel, with 1 MiB buffers,
        // it moved 160 MB for a quarter of the CPU a 1 MiB pipe took (docs/benchmarks-history.md,
        // runs 12 and 13). Failing to grow the buffers only costs speed (capped at a stock
        // kernel's 208 KiB, the socket still beat the pipe by about as much).
        let (rows, child_end) = UnixStream::pair().context("creating the parse child's socket")?;
        let _ = sockopt::set_socket_send_buffer_size(&child_end, SOCKET_BUFFER);
        let _ = sockopt::set_socket_recv_buffer_size(&rows, SOCKET_BUFFER);
        // The command, which holds the child's end, is dropped at the end of this statement:
        // then only the child has it, and its death is the end of our stream.
        let mut process = Command::new(exe)
            .arg(CHILD_SUBCOMMAND)
            .arg(format!("--{LIMITS_ARG}"))
            .arg(limits_json)
            .stdin(Stdio::piped())
            .stdout(OwnedFd::from(child_end))
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning the parse child {}", exe.display()))?;
        let stdin = process.stdin.take().context("parse child has no stdin")?;
        rows.set_nonblocking(true)
            .context("setting up the parse child's socket")?;
        let stdout = tokio::net::UnixStream::from_std(rows)
            .context("setting up the parse child's socket")?;
        let mut stderr = process.stderr.take().context("parse child has no stderr")?;
        let stderr_tail = tokio::spawn(async move {
            let mut tail = Vec::new();
            let mut chunk = vec![0u8; 8192];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
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

    /// Asks the child to parse one more file (a request line: `<format>\t<path>`).
    pub(super) async fn request(&mut self, line: &str) -> anyhow::Result<()> {
        self.parses += 1;
        self.stdin
            .write_all(line.as_bytes())
            .await
            .context("sending a file to the parse child")
    }

    pub(super) fn is_alive(&mut self) -> bool {
        matches!(self.process.try_wait(), Ok(None))
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.process.id()
    }

    /// Closes stdin, which ends a child that is still alive, and waits for it until `deadline`:
    /// how it ended and the tail of its stderr, or `None` if it outlived the deadline.
    pub(super) async fn end(
        self,
        deadline: Instant,
    ) -> anyhow::Result<Option<(ExitStatus, String)>> {
        let Self {
            mut process,
            stdin,
            stderr_tail,
            ..
        } = self;
        drop(stdin);
        let Ok(status) = timeout_at(deadline, process.wait()).await else {
            return Ok(None);
        };
        let status = status.context("waiting for the parse child")?;
        Ok(Some((status, stderr_tail.await.unwrap_or_default())))
    }
}
