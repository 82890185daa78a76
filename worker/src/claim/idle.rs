//! What a claim loop does when there is nothing to claim. A long-running loop waits for a NOTIFY
//! on its channel (new rows committed) or until the next row comes due, whichever is first: a
//! retry's time, or the expiry of a claim that some loop holds (if that loop died, its rows are
//! claimable then), so a dead worker's batch is rescued when its claim runs out rather than at
//! the next poll. A drain job waits for claims held by others, at most one lease
//! ([`DrainWait`]).

use std::time::{Duration, Instant};

use shared::db::Due;
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::retry::sleep_or_stop;

/// The shortest idle wait: something due "now" that the claim did not get (rows locked by
/// another loop's claim in progress) is not polled in a tight loop.
const MIN_WAIT: Duration = Duration::from_millis(100);
/// A claim is claimable once `locked_until < now()`: wake a little after it.
const MARGIN: Duration = Duration::from_millis(20);
/// How often a drain job looks again at claims held by another worker: a live one usually
/// records its outcomes long before its claims would expire.
const HELD_RECHECK: Duration = Duration::from_millis(200);

/// How long until something in the table comes due (at least [`MIN_WAIT`]; `Duration::MAX`
/// when nothing is waiting).
fn until_due(due: &Due) -> Duration {
    due.next_in_secs
        .and_then(|s| Duration::try_from_secs_f64(s.max(0.0)).ok())
        .map_or(Duration::MAX, |d| d.saturating_add(MARGIN))
        .max(MIN_WAIT)
}

/// A long-running loop's wait: until the next row is due, at most `poll`.
pub(super) fn wake_after(due: &Due, poll: Duration) -> Duration {
    until_due(due).min(poll)
}

/// What a drain job does next when it claimed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DrainStep {
    /// Nothing is claimable or held: the job's loop is done.
    Done,
    /// Claims held by another worker may still expire: claim again after this.
    Wait(Duration),
}

/// A drain job's patience with claims held by other workers. A dead worker's claims expire
/// within one lease, after which this job claims and sends them; claims still held after a whole
/// lease of waiting were renewed, so their worker is alive and will send them itself. FAILED
/// rows waiting for their retry are not waited for: they count in the scalers' backlog once due
/// (`shared::db::outbox::SCALER_BACKLOG_QUERY`, `shared::db::deliveries::SCALER_BACKLOG_QUERY`),
/// which starts another job then.
#[derive(Debug)]
pub(super) struct DrainWait {
    /// What the rows are (`outbox`) and who holds claims on them (`relay`), for the logs.
    rows: &'static str,
    holder: &'static str,
    lease: Duration,
    held_since: Option<Instant>,
}

impl DrainWait {
    pub(super) fn new(rows: &'static str, holder: &'static str, lease: Duration) -> Self {
        Self {
            rows,
            holder,
            lease,
            held_since: None,
        }
    }

    /// The job claimed something: whatever it was waiting for has moved.
    pub(super) fn reset(&mut self) {
        self.held_since = None;
    }

    /// `working_here`: this process is working on what holds rows back ([`super::Work::working_here`]);
    /// the patience starts when it stops.
    pub(super) fn step(&mut self, due: &Due, working_here: bool) -> DrainStep {
        self.step_at(due, working_here, Instant::now())
    }

    fn step_at(&mut self, due: &Due, working_here: bool, now: Instant) -> DrainStep {
        let (rows, holder) = (self.rows, self.holder);
        if due.held > 0 && working_here {
            self.held_since = None;
            return DrainStep::Wait(until_due(due).min(HELD_RECHECK));
        }
        // Nothing held but rows claimable now: a tenant's share opened between the empty claim
        // and this count (one of its tasks finished). Claim again rather than leave them.
        if due.held == 0 && due.next_in_secs.is_some_and(|s| s <= 0.0) {
            return DrainStep::Wait(MIN_WAIT);
        }
        if due.held == 0 {
            match due.next_in_secs {
                Some(s) => tracing::info!(next_retry_in_secs = s,
                    "{rows} drained: nothing claimable or held (retries due later are left to the next job)"),
                None => tracing::info!("{rows} drained: nothing claimable or held"),
            }
            return DrainStep::Done;
        }
        let since = *self.held_since.get_or_insert_with(|| {
            tracing::info!(
                held = due.held,
                "waiting for {rows} claims held by another {holder} (a dead {holder}'s expire within one lease)"
            );
            now
        });
        let waited = now.saturating_duration_since(since);
        if waited >= self.lease {
            tracing::info!(held = due.held,
                "{rows} drained: the claims still held were renewed for a whole lease, so their {holder} is alive");
            return DrainStep::Done;
        }
        DrainStep::Wait(
            until_due(due)
                .min(HELD_RECHECK)
                .min(self.lease - waited + MARGIN),
        )
    }
}

/// A listener on `channel`, or `None` (the loop polls meanwhile and tries again).
pub(super) async fn connect_listener(db: &PgPool, channel: &str) -> Option<PgListener> {
    let mut listener = match PgListener::connect_with(db).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(channel, error = %e, "cannot LISTEN for new rows; polling");
            return None;
        }
    };
    match listener.listen(channel).await {
        Ok(()) => Some(listener),
        Err(e) => {
            tracing::warn!(channel, error = %e, "cannot LISTEN for new rows; polling");
            None
        }
    }
}

/// Waits for a NOTIFY, `wait`, or shutdown. A broken listener is dropped (and reconnected by the
/// loop), never fatal: the timed wake covers what it misses.
pub(super) async fn wait_for_work(
    listener: &mut Option<PgListener>,
    stop: &CancellationToken,
    wait: Duration,
) {
    let Some(l) = listener.as_mut() else {
        sleep_or_stop(stop, wait).await;
        return;
    };
    tokio::select! {
        () = stop.cancelled() => {}
        () = tokio::time::sleep(wait) => {}
        got = l.try_recv() => match got {
            Ok(Some(_)) => {
                // Swallow the burst of notifications that came with it: one claim serves all.
                while l.next_buffered().is_some() {}
            }
            Ok(None) | Err(_) => {
                tracing::warn!("LISTEN connection lost; reconnecting");
                *listener = None;
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due(held: i64, next_in_secs: Option<f64>) -> Due {
        Due { held, next_in_secs }
    }

    #[test]
    fn an_idle_loop_wakes_when_the_next_row_comes_due_but_no_later_than_its_poll() {
        let poll = Duration::from_secs(5);
        assert_eq!(wake_after(&due(0, None), poll), poll);
        assert_eq!(
            wake_after(&due(3, Some(1.5)), poll),
            Duration::from_millis(1520)
        );
        assert_eq!(wake_after(&due(0, Some(0.0)), poll), MIN_WAIT);
        assert_eq!(wake_after(&due(0, Some(60.0)), poll), poll);
    }

    #[test]
    fn a_drain_job_stops_at_once_when_nothing_is_held_even_with_retries_due_later() {
        let mut wait = DrainWait::new("outbox", "relay", Duration::from_secs(5));
        assert_eq!(wait.step(&due(0, None), false), DrainStep::Done);
        assert_eq!(wait.step(&due(0, Some(30.0)), false), DrainStep::Done);
    }

    #[test]
    fn a_drain_job_claims_again_when_rows_became_claimable_after_an_empty_claim() {
        // Seen in `fairness`: the claim found the tenant at its share, one of its tasks
        // finished, and the count then saw nothing held and the tenant's rows due now.
        let mut wait = DrainWait::new("outbox", "relay", Duration::from_secs(5));
        assert_eq!(
            wait.step(&due(0, Some(0.0)), false),
            DrainStep::Wait(MIN_WAIT)
        );
    }

    #[test]
    fn a_drain_job_waits_for_held_claims_until_they_expire_but_not_past_one_lease() {
        let lease = Duration::from_secs(5);
        let t0 = Instant::now();
        let mut wait = DrainWait::new("outbox", "relay", lease);
        // Held claims expiring in 1 s: look again soon (their relay may finish first).
        assert_eq!(
            wait.step_at(&due(2, Some(1.0)), false, t0),
            DrainStep::Wait(HELD_RECHECK)
        );
        // Expiring in 0.1 s: claim them right after.
        assert_eq!(
            wait.step_at(&due(2, Some(0.1)), false, t0 + Duration::from_secs(1)),
            DrainStep::Wait(Duration::from_millis(120))
        );
        // Still held 4.9 s later (renewed): wait no longer than the rest of the lease.
        assert_eq!(
            wait.step_at(&due(2, Some(3.0)), false, t0 + Duration::from_millis(4900)),
            DrainStep::Wait(Duration::from_millis(120))
        );
        // Renewed for a whole lease: their relay is alive.
        assert_eq!(
            wait.step_at(&due(2, Some(3.0)), false, t0 + lease),
            DrainStep::Done
        );
        // Progress starts the patience over.
        wait.reset();
        assert!(matches!(
            wait.step_at(&due(1, Some(0.2)), false, t0 + lease),
            DrainStep::Wait(_)
        ));
    }
}
