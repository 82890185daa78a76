//! Hand-written fakes at the I/O seams a test must make fail or lag on demand: a queue sender
//! that fails its first sends ([`FlakySender`]) and a parse child that starts late
//! ([`slow_parser`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shared::storage::QueueClient;
use tempfile::TempPath;
use worker::relay::QueueSender;

use crate::binaries::worker_exe;

/// A queue sender that fails its first `fail_first` sends (or all of them), then forwards to a
/// real queue. Records every body it was asked to send.
pub struct FlakySender {
    inner: QueueClient,
    fail_first: usize,
    calls: AtomicUsize,
    pub attempted: Mutex<Vec<String>>,
}

impl FlakySender {
    pub fn new(inner: QueueClient, fail_first: usize) -> Arc<Self> {
        Arc::new(Self {
            inner,
            fail_first,
            calls: AtomicUsize::new(0),
            attempted: Mutex::new(Vec::new()),
        })
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[worker::relay::async_trait]
impl QueueSender for FlakySender {
    async fn send(&self, body: &str) -> anyhow::Result<()> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut a) = self.attempted.lock() {
            a.push(body.to_owned());
        }
        if n < self.fail_first {
            anyhow::bail!("injected send failure #{}", n + 1);
        }
        self.inner.send(body).await.map_err(anyhow::Error::new)
    }
}

/// A parser executable that waits `delay` before running the real parse child: a long parse on
/// demand. The script lives in the temp directory until the returned path is dropped.
pub fn slow_parser(delay: Duration) -> TempPath {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let mut script = tempfile::Builder::new()
        .prefix("slow-parser-")
        .suffix(".sh")
        .permissions(std::fs::Permissions::from_mode(0o755))
        .tempfile()
        .expect("create slow parser script");
    write!(
        script,
        "#!/bin/sh\nsleep {}\nexec '{}' \"$@\"\n",
        delay.as_secs_f64(),
        worker_exe().display()
    )
    .expect("write slow parser script");
    // Closed before anyone executes it: a file open for writing cannot be run (ETXTBSY).
    script.into_temp_path()
}
