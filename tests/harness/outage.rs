//! Storage that is down on demand, for tests of how the worker rides out an outage.
//! [`OutageSender`] fails every send of the relay the way an unreachable Azure Storage does (a
//! [`StorageError::Transport`], after which the relay backs off without spending an attempt)
//! until [`OutageSender::end`], then forwards to the real queue. [`OutagePort`] does it for a
//! whole process, at the network: a port in front of Azurite that, while down, closes every
//! connection as soon as it is made (in-flight ones included), so each request fails the way
//! it does when the service is unreachable, and otherwise forwards.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use shared::storage::{QueueClient, StorageError};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
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

/// A loopback port in front of `target` (an Azurite endpoint), down until [`OutagePort::up`].
pub struct OutagePort {
    pub addr: SocketAddr,
    up: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl OutagePort {
    /// A port in front of `target` whose outage has begun.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (up, _) = watch::channel(false);
        let state = up.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let mut up = state.subscribe();
                if !*up.borrow_and_update() {
                    continue; // dropped: closed at once
                }
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(target).await else {
                        return;
                    };
                    let mut client = client;
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = up.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Self { addr, up, accept }
    }

    /// Storage answers again.
    pub fn up(&self) {
        self.up.send_replace(true);
    }

    /// Storage is unreachable again, for connections already open too.
    pub fn down(&self) {
        self.up.send_replace(false);
    }
}

impl Drop for OutagePort {
    fn drop(&mut self) {
        self.accept.abort();
    }
}
