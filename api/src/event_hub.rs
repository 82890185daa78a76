//! The api's one listener for committed events, shared by every open stream. A stream does not
//! LISTEN or poll on its own: one task per process holds the `LISTEN events` connection, gives
//! the newly committed events their feed positions ([`db::events::sequence`], once per burst of
//! notifications, whatever the number of streams) and tells the streams which tenants have news
//! over a bounded broadcast channel. A stream that falls behind on that channel loses nothing: it
//! reads the database from its own cursor on every wake-up, so a missed wake-up only means it
//! reads everything on the next one. The database work is therefore one statement per burst
//! plus one read per woken stream of the tenant, and the number of open streams is capped, per
//! process (`EVENTS_MAX_STREAMS`) and, well below that, per tenant
//! (`EVENTS_MAX_STREAMS_PER_TENANT`), so one tenant cannot take every place. While the listener is down (Postgres restarting), the task sequences
//! and wakes every stream each `EVENTS_POLL_INTERVAL`, and once more when it is back, so no event
//! waits for a notification that was sent while nobody listened.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shared::db;
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::{broadcast, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::config::EventsConfig;

/// The channel the `events` insert trigger notifies, with the tenant id as payload.
const CHANNEL: &str = "events";
/// How many wake-ups a slow stream may have waiting before it lags (and then reads anyway).
const WAKE_BACKLOG: usize = 1024;

/// Which streams should read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// This tenant has newly sequenced events.
    Tenant(Arc<str>),
    /// Any tenant may have: the listener was (re)connecting.
    All,
}

impl Wake {
    pub fn concerns(&self, tenant_id: &str) -> bool {
        match self {
            Wake::Tenant(t) => &**t == tenant_id,
            Wake::All => true,
        }
    }
}

/// Why a stream was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The tenant holds `EVENTS_MAX_STREAMS_PER_TENANT` streams.
    Tenant,
    /// The process holds `EVENTS_MAX_STREAMS` streams.
    Process,
}

/// An open stream's places, given back when it is dropped.
pub struct StreamPlace {
    _process: OwnedSemaphorePermit,
    _tenant: TenantPlace,
}

/// One of a tenant's stream places: dropped, the count goes down, and a tenant with none open
/// leaves the map (which so holds only tenants with open streams).
struct TenantPlace {
    open: Arc<Mutex<HashMap<String, u32>>>,
    tenant_id: String,
}

impl Drop for TenantPlace {
    fn drop(&mut self) {
        let mut open = lock(&self.open);
        if let Some(count) = open.get_mut(&self.tenant_id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.tenant_id);
            }
        }
    }
}

/// The per-tenant counts; a poisoned lock (a panic while holding it) still counts right.
fn lock(open: &Mutex<HashMap<String, u32>>) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

/// See the module docs. Cheap to clone; the listener task starts with the first stream.
#[derive(Clone)]
pub struct EventHub {
    inner: Arc<Inner>,
}

struct Inner {
    db: PgPool,
    cfg: EventsConfig,
    wakes: broadcast::Sender<Wake>,
    streams: Arc<Semaphore>,
    /// Open streams by tenant (only tenants with one open), for `EVENTS_MAX_STREAMS_PER_TENANT`.
    per_tenant: Arc<Mutex<HashMap<String, u32>>>,
    started: std::sync::Once,
    closed: CancellationToken,
}

impl EventHub {
    pub fn new(db: PgPool, cfg: EventsConfig) -> Self {
        let (wakes, _) = broadcast::channel(WAKE_BACKLOG);
        let streams = Arc::new(Semaphore::new(cfg.max_streams as usize));
        Self {
            inner: Arc::new(Inner {
                db,
                cfg,
                wakes,
                streams,
                per_tenant: Arc::default(),
                started: std::sync::Once::new(),
                closed: CancellationToken::new(),
            }),
        }
    }

    pub fn config(&self) -> &EventsConfig {
        &self.inner.cfg
    }

    /// A place for one more stream of `tenant_id`: refused when the tenant holds
    /// `EVENTS_MAX_STREAMS_PER_TENANT` of them, or the process `EVENTS_MAX_STREAMS`.
    pub fn admit(&self, tenant_id: &str) -> Result<StreamPlace, Full> {
        let tenant = {
            let mut open = lock(&self.inner.per_tenant);
            let count = open.entry(tenant_id.to_owned()).or_default();
            if *count >= self.inner.cfg.max_streams_per_tenant {
                return Err(Full::Tenant);
            }
            *count += 1;
            TenantPlace {
                open: Arc::clone(&self.inner.per_tenant),
                tenant_id: tenant_id.to_owned(),
            }
        };
        let process = Arc::clone(&self.inner.streams)
            .try_acquire_owned()
            .map_err(|_| Full::Process)?;
        Ok(StreamPlace {
            _process: process,
            _tenant: tenant,
        })
    }

    /// Wake-ups from now on; starts the listener task on first use. Subscribe before reading
    /// the database, so that an event committed in between wakes the stream.
    pub fn subscribe(&self) -> broadcast::Receiver<Wake> {
        let receiver = self.inner.wakes.subscribe();
        self.inner.started.call_once(|| {
            tokio::spawn(listen(Arc::clone(&self.inner)));
        });
        receiver
    }

    /// Fires when the server shuts down: open streams end, so that connections can close.
    pub fn closed(&self) -> &CancellationToken {
        &self.inner.closed
    }
}

/// The listener task: see the module docs. Ends when the hub is closed.
async fn listen(hub: Arc<Inner>) {
    let mut backoff = Duration::from_millis(100);
    while !hub.closed.is_cancelled() {
        let mut listener = match connect(&hub.db).await {
            Ok(l) => {
                backoff = Duration::from_millis(100);
                l
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot LISTEN for events; streams are polled meanwhile");
                poll_once(&hub).await;
                tokio::select! {
                    () = hub.closed.cancelled() => return,
                    () = tokio::time::sleep(backoff.min(hub.cfg.poll_interval)) => {}
                }
                backoff = (backoff * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        // Events committed while we were not listening.
        poll_once(&hub).await;
        loop {
            tokio::select! {
                () = hub.closed.cancelled() => return,
                got = listener.try_recv() => match got {
                    Ok(Some(first)) => {
                        let mut tenants = vec![first.payload().to_owned()];
                        while let Some(more) = listener.next_buffered() {
                            tenants.push(more.payload().to_owned());
                        }
                        tenants.sort_unstable();
                        tenants.dedup();
                        wake(&hub, tenants.into_iter().map(|t| Wake::Tenant(t.into()))).await;
                    }
                    Ok(None) | Err(_) => {
                        tracing::warn!("the events LISTEN connection was lost; reconnecting");
                        break;
                    }
                },
            }
        }
    }
}

async fn connect(db: &PgPool) -> sqlx::Result<PgListener> {
    let mut listener = PgListener::connect_with(db).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Sequences what committed and wakes every stream: after (re)connecting, and each
/// `EVENTS_POLL_INTERVAL` while the listener cannot connect.
async fn poll_once(hub: &Inner) {
    wake(hub, [Wake::All]).await;
}

/// Gives the committed events their positions, then sends the wake-ups.
async fn wake(hub: &Inner, wakes: impl IntoIterator<Item = Wake>) {
    if hub.wakes.receiver_count() == 0 {
        return; // no stream to tell; a feed reader sequences for itself
    }
    if let Err(e) = db::events::sequence(&hub.db).await {
        tracing::warn!(error = %e, "could not sequence events; streams will read on the next wake-up");
        return;
    }
    for w in wakes {
        // An error only means no stream is listening right now.
        let _ = hub.wakes.send(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_concerns_its_tenant_or_everyone() {
        let acme = Wake::Tenant("acme".into());
        assert!(acme.concerns("acme"));
        assert!(!acme.concerns("globex"));
        assert!(Wake::All.concerns("globex"));
    }
}
