//! The claim loop: how the worker delivers rows of a queue table to their destinations, whatever
//! the table and the destination ([`Work`]): the outbox to the task queue (the relay) and
//! webhook deliveries to their endpoints. One short statement claims a batch (`FOR UPDATE SKIP
//! LOCKED` plus a short lease, renewed by a heartbeat while the batch is sent, so any number of
//! workers may run and a dead worker's rows are claimable again within one lease). The batch is
//! split by destination; each destination's part is sent with bounded concurrency, outside any
//! transaction, and recorded conditionally on its rows still being ours. A destination found
//! down by one send is not tried again in that batch, and only that destination: its other rows
//! are deferred, the rest of the batch goes on. The loop keeps claiming while earlier parts are
//! in flight (up to `max_held` rows at once), telling the work how many rows of each destination
//! it holds, so that the work bounds each destination's share (the relay: one batch at a time;
//! webhooks: `WEBHOOK_ENDPOINT_CONCURRENCY` requests): one slow destination holds only its own. The loop wakes on a `NOTIFY` channel
//! of the work's choosing the moment new rows commit, claims again at once while claims come
//! back full, and otherwise sleeps until the next row comes due ([`idle`]). A drain job stops
//! once nothing is claimable or held. Retention is not a claim loop's business: the
//! maintenance loop ([`crate::maintenance`]) purges.

mod heartbeat;
mod idle;

use std::collections::{HashMap, HashSet};
use std::ops::AddAssign;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt as _;
use shared::db::Due;
use shared::failure::{self, Failure};
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::bounds::Budget;
use crate::retry::{sleep_or_stop, Backoff};
use crate::Shutdown;

/// How often a loop logs its throughput.
const THROUGHPUT_EVERY: Duration = Duration::from_secs(60);

/// One kind of work a claim loop delivers: a table of rows claimed with a lease, each sent to a
/// destination. Implemented by the relay ([`crate::relay`]) and webhook delivery
/// ([`crate::webhooks`]).
#[async_trait::async_trait]
pub trait Work: Send + Sync {
    /// A claimed row, with what sending it needs.
    type Item: Send + Sync;
    /// What one send came to.
    type Sent: Send;

    /// For logs: `relay`, `webhooks`.
    fn name(&self) -> &'static str;
    /// What the rows are and who claims them, for the logs of a drain: `outbox` and `relay`.
    fn rows(&self) -> (&'static str, &'static str);
    /// The pool the rows live in (and the channel is listened on).
    fn db(&self) -> &PgPool;
    /// The `NOTIFY` channel that says rows were committed.
    fn channel(&self) -> &'static str;
    fn id(item: &Self::Item) -> Uuid;
    /// Where the row goes: outages and concurrency are scoped by it.
    fn destination(item: &Self::Item) -> Uuid;
    /// The send found its destination down: the rest of its batch is not tried.
    fn is_down(sent: &Self::Sent) -> bool;
    /// The span of one send, in the trace the row carries.
    fn span(&self, item: &Self::Item) -> tracing::Span;

    /// Claims up to `limit` due rows for `lease`. `held` says how many rows of each destination
    /// this loop has in flight, for the work to respect its per-destination bound.
    async fn claim(
        &self,
        limit: i64,
        lease: Duration,
        held: &HashMap<Uuid, usize>,
    ) -> sqlx::Result<Vec<Self::Item>>;
    /// Extends the claims of the rows still ours.
    async fn extend(&self, ids: &[Uuid], lease: Duration) -> sqlx::Result<u64>;
    async fn send(&self, item: &Self::Item) -> Self::Sent;
    /// Records one destination's batch: each row with what its send came to, or `None` when it
    /// was not tried because the destination was down. Only rows still ours change.
    async fn record(
        &self,
        batch: Vec<(Self::Item, Option<Self::Sent>)>,
        abort: &CancellationToken,
    ) -> anyhow::Result<Report>;
    /// Hands claimed, unsent rows back (a hard shutdown), due at once.
    async fn release(&self, ids: &[Uuid]) -> sqlx::Result<u64>;
    async fn due(&self) -> sqlx::Result<Due>;
    /// Whether this process is itself working on what holds rows back (the relay: tasks being
    /// parsed by the consumer beside it). A drain waits while it is, past its one-lease
    /// patience with claims held elsewhere.
    fn working_here(&self) -> bool {
        false
    }
}

/// What a claim came to, summed over its destinations.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub claimed: usize,
    /// Sent (delivered) and recorded.
    pub sent: usize,
    /// Failed sends scheduled for a retry.
    pub failed: usize,
    /// Failed sends that used up their attempts.
    pub dead: usize,
    /// Not sent because the destination was down: backed off, no attempt spent.
    pub deferred: usize,
    /// Claimed but handed back unsent because of a hard shutdown.
    pub released: usize,
}

impl AddAssign for Report {
    fn add_assign(&mut self, r: Report) {
        self.claimed += r.claimed;
        self.sent += r.sent;
        self.failed += r.failed;
        self.dead += r.dead;
        self.deferred += r.deferred;
        self.released += r.released;
    }
}

/// The settings of one claim loop.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    /// Most rows one claim takes.
    pub batch_size: i64,
    /// Most claimed rows held at once, over all destinations.
    pub max_held: usize,
    /// Sends in flight at once within one destination's batch.
    pub concurrency: usize,
    /// How long a claim lasts; renewed every third of it while its rows are sent.
    pub lease: Duration,
    /// Fallback poll interval when no NOTIFY arrives.
    pub poll_interval: Duration,
}

/// Claims one batch of at most `limit` rows, sends it and records the outcomes. `abort` is the
/// hard-shutdown token: when it fires mid-batch, the sends still in flight are abandoned and
/// their rows released (due at once) instead of waiting for the lease to expire.
pub async fn run_once<W: Work>(
    work: &W,
    cfg: &LoopConfig,
    limit: i64,
    abort: &CancellationToken,
) -> anyhow::Result<Report> {
    let batch = work
        .claim(limit, cfg.lease, &HashMap::new())
        .await
        .with_context(|| format!("{}: claiming a batch", work.name()))?;
    let mut report = Report::default();
    let parts: Vec<_> = by_destination::<W>(batch)
        .into_iter()
        .map(|(_, items)| work_part(work, cfg, items, abort))
        .collect();
    for part in futures::future::join_all(parts).await {
        report += part?;
    }
    Ok(report)
}

/// Groups a claim by destination, each group in claim order.
fn by_destination<W: Work>(batch: Vec<W::Item>) -> Vec<(Uuid, Vec<W::Item>)> {
    let mut order = Vec::new();
    let mut groups: HashMap<Uuid, Vec<W::Item>> = HashMap::new();
    for item in batch {
        let dest = W::destination(&item);
        groups
            .entry(dest)
            .or_insert_with(|| {
                order.push(dest);
                Vec::new()
            })
            .push(item);
    }
    order
        .into_iter()
        .filter_map(|d| groups.remove(&d).map(|items| (d, items)))
        .collect()
}

/// Sends one destination's part of a claim and records it, renewing its claims until then.
async fn work_part<W: Work>(
    work: &W,
    cfg: &LoopConfig,
    items: Vec<W::Item>,
    abort: &CancellationToken,
) -> anyhow::Result<Report> {
    let ids: Vec<Uuid> = items.iter().map(W::id).collect();
    tokio::select! {
        report = send_and_record(work, cfg, items, &ids, abort) => report,
        never = heartbeat::keep_claimed(work.name(), || work.extend(&ids, cfg.lease), cfg.lease) => {
            match never {}
        }
    }
}

async fn send_and_record<W: Work>(
    work: &W,
    cfg: &LoopConfig,
    items: Vec<W::Item>,
    ids: &[Uuid],
    abort: &CancellationToken,
) -> anyhow::Result<Report> {
    let claimed = items.len();
    // Once one send finds the destination down, the rest of its batch is not tried: it would
    // fail the same way, each after its own timeout.
    let down = AtomicBool::new(false);
    let mut sends = futures::stream::iter(items.into_iter().map(|item| {
        let span = work.span(&item);
        let down = &down;
        async move {
            if down.load(Ordering::Relaxed) {
                return (item, None);
            }
            let sent = work.send(&item).await;
            if W::is_down(&sent) {
                down.store(true, Ordering::Relaxed);
            }
            (item, Some(sent))
        }
        .instrument(span)
    }))
    .buffer_unordered(cfg.concurrency.max(1));
    let mut settled = Vec::with_capacity(claimed);
    loop {
        tokio::select! {
            biased;
            next = sends.next() => match next {
                Some(done) => settled.push(done),
                None => break,
            },
            () = abort.cancelled() => break,
        }
    }
    drop(sends);
    let recorded: HashSet<Uuid> = settled.iter().map(|(item, _)| W::id(item)).collect();
    let mut report = work.record(settled, abort).await?;
    report.claimed = claimed;
    // Only a hard shutdown leaves claimed rows without an outcome.
    let unsent: Vec<Uuid> = ids
        .iter()
        .copied()
        .filter(|id| !recorded.contains(id))
        .collect();
    if abort.is_cancelled() && !unsent.is_empty() {
        report.released = work
            .release(&unsent)
            .await
            .with_context(|| format!("{}: releasing unsent rows", work.name()))?
            as usize;
        tracing::info!(
            work = work.name(),
            released = report.released,
            "released unsent rows at shutdown"
        );
    }
    Ok(report)
}

/// Records an outcome, retrying for a short while when Postgres is briefly away: a send that
/// happened but was not recorded would be sent again after the lease (a harmless duplicate, but
/// avoidable).
pub async fn with_db_retry<T, F, Fut>(abort: &CancellationToken, mut f: F) -> sqlx::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sqlx::Result<T>>,
{
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match f().await {
            Err(e)
                if failure::db(&e) == Failure::Outage
                    && Instant::now() < deadline
                    && !abort.is_cancelled() =>
            {
                tracing::warn!(error = %e, "database unavailable while recording; retrying");
                tokio::time::sleep(backoff.next_delay()).await;
            }
            other => return other,
        }
    }
}

/// The loop: runs until `shutdown.stop` fires (finishing the batches in hand), or, with `drain`,
/// until nothing is claimable and no other worker holds a claim that could still expire
/// ([`idle::DrainWait`]). It claims no more rows than `budget` allows (`--max-messages`); once
/// they are spent it waits for the supervisor's stop. Transient database failures are waited
/// out; anything else ends the loop with an error (the supervisor then stops the process).
pub async fn run<W: Work>(
    work: &W,
    cfg: &LoopConfig,
    shutdown: &Shutdown,
    drain: bool,
    budget: &Budget,
) -> anyhow::Result<()> {
    let mut claims = Claims::new(work, cfg, &shutdown.abort);
    while !shutdown.stop.is_cancelled() {
        // Listen before claiming, so a commit between the claim and the wait is not missed.
        if claims.listener.is_none() && !drain && !claims.db_down {
            claims.listener = idle::connect_listener(work.db(), work.channel()).await;
        }
        let full = match claims.claim(budget).await? {
            Claimed::Spent => {
                tracing::info!(
                    work = work.name(),
                    "message budget spent: claiming nothing more"
                );
                shutdown.stop.cancelled().await;
                break;
            }
            Claimed::Full => true,
            Claimed::Short => false,
        };
        if full && claims.in_flight() < cfg.max_held {
            continue; // more is waiting and there is room: claim again at once
        }
        let wake = match claims.next_wake(drain, &shutdown.stop).await? {
            Wake::After(wake) => wake,
            Wake::Again => continue,
            Wake::Drained => return Ok(()),
        };
        claims.wait(wake, &shutdown.stop).await?;
        claims.log_throughput();
    }
    claims.finish().await;
    Ok(())
}

/// One destination's part of a claim, in flight: where it goes, how many rows, what it came to.
type Part<'a> = BoxFuture<'a, (Uuid, usize, anyhow::Result<Report>)>;

/// What one turn's claim came to.
enum Claimed {
    /// As many rows as were asked for: more may be waiting.
    Full,
    /// Fewer (or none, or no claim was made: no room, or the database is away).
    Short,
    /// The budget is spent and nothing is in flight: the loop claims nothing more.
    Spent,
}

/// What the loop does after a turn that did not fill its claim.
enum Wake {
    /// Waits this long (or for a NOTIFY, or for a batch in hand to finish).
    After(Duration),
    /// Claims again at once (a drain's wait for held claims is over, or the database is away).
    Again,
    /// A drain found nothing claimable or held: the loop is done.
    Drained,
}

/// The state of one claim loop between its turns.
struct Claims<'a, W: Work> {
    work: &'a W,
    cfg: &'a LoopConfig,
    abort: &'a CancellationToken,
    listener: Option<PgListener>,
    /// Rows claimed and not yet recorded, by destination.
    held: HashMap<Uuid, usize>,
    parts: FuturesUnordered<Part<'a>>,
    db_backoff: Backoff,
    /// Postgres was found away: the next turn claims nothing and waits out the backoff.
    db_down: bool,
    drain_wait: idle::DrainWait,
    /// Since when, and how many rows sent since, for the throughput line.
    window: (Instant, usize),
}

impl<'a, W: Work> Claims<'a, W> {
    fn new(work: &'a W, cfg: &'a LoopConfig, abort: &'a CancellationToken) -> Self {
        let (rows, holder) = work.rows();
        Self {
            work,
            cfg,
            abort,
            listener: None,
            held: HashMap::new(),
            parts: FuturesUnordered::new(),
            db_backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(5)),
            db_down: false,
            drain_wait: idle::DrainWait::new(rows, holder, cfg.lease),
            window: (Instant::now(), 0),
        }
    }

    fn in_flight(&self) -> usize {
        self.held.values().sum()
    }

    /// Claims what there is room for (and budget), and starts sending it by destination.
    async fn claim(&mut self, budget: &Budget) -> anyhow::Result<Claimed> {
        let in_flight = self.in_flight();
        let room = self.cfg.max_held.saturating_sub(in_flight);
        if room == 0 || self.db_down {
            return Ok(Claimed::Short);
        }
        let limit = usize::try_from(self.cfg.batch_size)
            .unwrap_or(usize::MAX)
            .min(room);
        let want = budget.reserve(limit);
        if want == 0 {
            return Ok(if in_flight == 0 {
                Claimed::Spent
            } else {
                Claimed::Short
            });
        }
        let claimed = self
            .work
            .claim(want as i64, self.cfg.lease, &self.held)
            .await;
        budget.settle(want, claimed.as_ref().map_or(0, Vec::len));
        let Some(batch) = self.unless_outage(claimed, "claiming")? else {
            return Ok(Claimed::Short);
        };
        self.db_backoff.reset();
        let full = batch.len() >= want;
        if !batch.is_empty() {
            self.drain_wait.reset();
            tracing::debug!(
                work = self.work.name(),
                claimed = batch.len(),
                "claimed a batch"
            );
        }
        for (dest, items) in by_destination::<W>(batch) {
            *self.held.entry(dest).or_default() += items.len();
            let n = items.len();
            let (work, cfg, abort) = (self.work, self.cfg, self.abort);
            self.parts.push(Box::pin(async move {
                let report = work_part(work, cfg, items, abort).await;
                (dest, n, report)
            }));
        }
        Ok(if full { Claimed::Full } else { Claimed::Short })
    }

    /// How long to wait before the next turn: the database's backoff while it is away; with
    /// nothing in flight, until something comes due (a drain: until held claims may have
    /// expired, or done); else the poll interval.
    async fn next_wake(&mut self, drain: bool, stop: &CancellationToken) -> anyhow::Result<Wake> {
        if self.db_down {
            // While Postgres is away, wait out the backoff (the batches in hand keep going).
            self.db_down = false;
            return Ok(Wake::After(self.db_backoff.next_delay()));
        }
        if !self.parts.is_empty() {
            return Ok(Wake::After(self.cfg.poll_interval));
        }
        // Nothing in flight and nothing more to claim now: when does something come due?
        let due = self.work.due().await;
        let Some(due) = self.unless_outage(due, "reading when rows come due")? else {
            return Ok(Wake::Again);
        };
        if drain {
            return match self.drain_wait.step(&due, self.work.working_here()) {
                idle::DrainStep::Done => Ok(Wake::Drained),
                idle::DrainStep::Wait(d) => {
                    sleep_or_stop(stop, d).await;
                    Ok(Wake::Again)
                }
            };
        }
        Ok(Wake::After(idle::wake_after(&due, self.cfg.poll_interval)))
    }

    /// Waits `wake`, a NOTIFY, or the end of a batch in hand (recording what it came to).
    async fn wait(&mut self, wake: Duration, stop: &CancellationToken) -> anyhow::Result<()> {
        tokio::select! {
            Some((dest, n, report)) = self.parts.next(), if !self.parts.is_empty() => {
                settle(&mut self.held, dest, n);
                match report {
                    Ok(r) => self.window.1 += r.sent,
                    Err(e) if failure::of_db(&*e) == Some(Failure::Outage) => {
                        self.outage(format!("{e:#}"));
                    }
                    Err(e) => return Err(e),
                }
            }
            () = idle::wait_for_work(&mut self.listener, stop, wake) => {}
        }
        Ok(())
    }

    /// A statement's result: its rows; `None` when Postgres was away ([`Self::outage`]); an
    /// error for any other failure, which ends the loop.
    fn unless_outage<T>(
        &mut self,
        result: sqlx::Result<T>,
        doing: &str,
    ) -> anyhow::Result<Option<T>> {
        match result {
            Ok(rows) => Ok(Some(rows)),
            Err(e) if failure::db(&e) == Failure::Outage => {
                self.outage(tracing::field::display(&e));
                Ok(None)
            }
            Err(e) => {
                let name = self.work.name();
                Err(anyhow::Error::new(e).context(format!("{name}: {doing}")))
            }
        }
    }

    /// Postgres is away: the listener goes, and the next turn backs off instead of claiming.
    fn outage(&mut self, error: impl tracing::Value) {
        tracing::warn!(
            work = self.work.name(),
            error,
            "database unavailable; backing off"
        );
        self.listener = None;
        self.db_down = true;
    }

    /// Logs the rows sent per second, once a minute when there were any.
    fn log_throughput(&mut self) {
        let (since, sent) = self.window;
        if since.elapsed() < THROUGHPUT_EVERY {
            return;
        }
        if sent > 0 {
            tracing::info!(
                work = self.work.name(),
                sent,
                per_second = sent as f64 / since.elapsed().as_secs_f64(),
                "throughput"
            );
        }
        self.window = (Instant::now(), 0);
    }

    /// Stopping: the batches in hand finish (or, once `abort` fires, release what is unsent).
    async fn finish(mut self) {
        let name = self.work.name();
        while let Some((dest, n, report)) = self.parts.next().await {
            settle(&mut self.held, dest, n);
            if let Err(e) = report {
                tracing::warn!(
                    work = name,
                    error = format!("{e:#}"),
                    "a batch failed while stopping"
                );
            }
        }
        tracing::info!(work = name, "claim loop stopped");
    }
}

/// A destination's batch is done: its rows are no longer held.
fn settle(held: &mut HashMap<Uuid, usize>, dest: Uuid, n: usize) {
    if let Some(count) = held.get_mut(&dest) {
        *count = count.saturating_sub(n);
        if *count == 0 {
            held.remove(&dest);
        }
    }
}
