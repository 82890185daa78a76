//! A queue that is down on demand, for tests of how the relay rides out an outage:
//! [`OutageSender`] fails every send the way an unreachable Azure Storage does (a
//! [`StorageError::Transport`], after which the relay backs off without spending an attempt)
//! until [`OutageSender::end`], then forwards to the real queue.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use shared::storage::{QueueClient, StorageError};
use worker::relay::QueueSender;

pub struct OutageSender {
    inner: QueueClient,
    down: AtomicBool,
    refused: AtomicUsize,
}

impl OutageSender {
    /// A sender to `inner` whose outage has begun.
    pub fn new(inner: QueueClient) -> Arc<Self> {
        Arc::new(Self {
            inner,
            down: AtomicBool::new(true),
            refused: AtomicUsize::new(0),
        })
    }

    /// The queue is reachable again.
    pub fn end(&self) {
        self.down.store(false, Ordering::SeqCst);
    }

    /// How many sends failed during the outage.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

#[worker::relay::async_trait]
impl QueueSender for OutageSender {
    async fn send(&self, body: &str) -> anyhow::Result<()> {
        if self.down.load(Ordering::SeqCst) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            let unreachable = StorageError::Transport(
                "error sending request: connection refused (injected outage)".into(),
            );
            return Err(anyhow::Error::new(unreachable).context("queue send failed"));
        }
        self.inner.send(body).await.map_err(anyhow::Error::new)
    }
}
