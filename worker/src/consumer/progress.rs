//! How far a running parse has got, for `GET /api/v1/tasks/{id}`: rows stored so far, and input
//! bytes the parse child has read. The bytes come from the child's `/proc/<pid>/io` (`rchar`,
//! less what it had read before this file, as a pooled child parses several), so the parser
//! itself pays nothing; rows are counted by the sink that feeds `COPY`, a chunk at a time. A
//! reporter writes both to the task about once a second while they change: one small UPDATE
//! per second per running task, beside a parse that moves hundreds of thousands of rows in it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use shared::db;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// Shared between the parse (which counts) and the reporter (which writes).
#[derive(Debug, Default)]
pub struct Progress {
    rows: AtomicU64,
    /// The file's size: bytes read are never reported past it.
    size: AtomicU64,
    /// The parse child's pid and its `rchar` when it was handed this file.
    child: Mutex<Option<(u32, u64)>>,
}

impl Progress {
    pub fn set_size(&self, size: u64) {
        self.size.store(size, Ordering::Relaxed);
    }

    pub fn add_rows(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    /// The child that parses the file; its reads from now on are this file's.
    pub fn child_started(&self, pid: Option<u32>) {
        let child = pid.and_then(|pid| Some((pid, read_chars(pid)?)));
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = child;
    }

    /// (rows stored, input bytes read).
    pub fn snapshot(&self) -> (u64, u64) {
        let rows = self.rows.load(Ordering::Relaxed);
        let child = *self.child.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = child
            .and_then(|(pid, base)| Some(read_chars(pid)?.saturating_sub(base)))
            .unwrap_or(0)
            .min(self.size.load(Ordering::Relaxed));
        (rows, bytes)
    }
}

/// Bytes the process has read (`rchar` in `/proc/<pid>/io`); `None` off Linux or once it is gone.
fn read_chars(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io.lines()
        .find_map(|line| line.strip_prefix("rchar:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Writes `progress` to the task every `every` while it changes, until `done`.
pub async fn report(
    every: Duration,
    db: PgPool,
    task_id: Uuid,
    attempt: i32,
    progress: std::sync::Arc<Progress>,
    done: CancellationToken,
) {
    let mut last = (0, 0);
    loop {
        tokio::select! {
            () = done.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
        let now = progress.snapshot();
        if now == last {
            continue;
        }
        last = now;
        let (rows, bytes) = (
            i64::try_from(now.0).unwrap_or(i64::MAX),
            i64::try_from(now.1).unwrap_or(i64::MAX),
        );
        if let Err(e) = db::tasks::report_progress(&db, task_id, attempt, rows, bytes).await {
            tracing::debug!(%task_id, error = %e, "could not record progress");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_this_files_reads_and_never_past_its_size() {
        let progress = Progress::default();
        progress.set_size(10);
        progress.add_rows(3);
        progress.add_rows(4);
        // Our own process stands in for the child: it has read something, and keeps reading.
        progress.child_started(Some(std::process::id()));
        let _ = std::fs::read("/proc/self/status");
        let (rows, bytes) = progress.snapshot();
        assert_eq!(rows, 7);
        assert!(bytes > 0 && bytes <= 10, "{bytes}");
        progress.child_started(None);
        assert_eq!(progress.snapshot(), (7, 0));
    }
}
