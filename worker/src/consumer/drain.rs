//! When a draining consumer is done. Its receive came back empty, the relay of its process (if
//! any) is finished and nothing is in flight here; then the queue's length decides. Nothing
//! queued and nothing left in the outbox for a relay to send: done. Otherwise the messages left
//! are invisible (held by live consumers, or waiting for a retry), or there are none yet while a
//! relay holds more in the outbox: a tenant at its fair share gets its next one as soon as one
//! of its tasks finishes, often this very consumer's last. A job that left then would leave them
//! to the scaler's next poll (30 s in deploy/); `tests/it/fairness.rs` has a job with a share of
//! one task leave after its first without this. So they are waited for, a visibility timeout at
//! most: a dead consumer's message is visible again by then, and what stays hidden longer is
//! renewed by a live consumer or delayed for a retry, and a job idling until then would be
//! billed for it. [`QueueDrain`] is that decision, as the claim loop's `DrainWait` is its own.

use std::time::{Duration, Instant};

/// How much longer than `VISIBILITY_TIMEOUT` a draining consumer waits for invisible messages:
/// visibility is set in whole seconds, and the approximate count lags a little.
const HIDDEN_MARGIN: Duration = Duration::from_secs(2);

/// What a draining consumer does after an empty receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DrainStep {
    /// The queue is drained: the loop ends.
    Done,
    /// Something may still come: receive again after the idle wait.
    Wait,
}

/// A draining consumer's patience with a queue that holds only invisible messages (or nothing,
/// while the outbox still holds some).
#[derive(Debug)]
pub(super) struct QueueDrain {
    /// One visibility timeout and [`HIDDEN_MARGIN`].
    patience: Duration,
    /// Since when the queue has held only invisible messages, or nothing while the outbox held
    /// some.
    hidden_since: Option<Instant>,
}

impl QueueDrain {
    pub(super) fn new(visibility_timeout: Duration) -> Self {
        Self {
            patience: visibility_timeout + HIDDEN_MARGIN,
            hidden_since: None,
        }
    }

    /// Messages arrived: whatever the job was waiting for has moved.
    pub(super) fn reset(&mut self) {
        self.hidden_since = None;
    }

    /// `queued` is the queue's approximate length (invisible messages included);
    /// `relay_has_more`, read only when it is 0, whether the outbox holds messages a relay has
    /// still to send.
    pub(super) fn step(&mut self, queued: u64, relay_has_more: bool) -> DrainStep {
        self.step_at(queued, relay_has_more, Instant::now())
    }

    fn step_at(&mut self, queued: u64, relay_has_more: bool, now: Instant) -> DrainStep {
        if queued == 0 && !relay_has_more {
            tracing::info!("queue drained: nothing in flight and nothing queued");
            return DrainStep::Done;
        }
        let since = *self.hidden_since.get_or_insert(now);
        if now.saturating_duration_since(since) <= self.patience {
            return DrainStep::Wait;
        }
        if queued > 0 {
            tracing::info!(invisible = queued,
                "queue drained: the messages left stayed invisible for a whole visibility timeout (held by live consumers, or waiting for a retry); leaving them to the next execution");
        } else {
            tracing::info!(
                "queue drained: nothing arrived for a whole visibility timeout while the outbox held messages (no relay is sending them); leaving them to the next execution");
        }
        DrainStep::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VISIBILITY: Duration = Duration::from_secs(6);

    #[test]
    fn an_empty_queue_with_nothing_left_in_the_outbox_is_drained_at_once() {
        let mut drain = QueueDrain::new(VISIBILITY);
        assert_eq!(drain.step(0, false), DrainStep::Done);
    }

    #[test]
    fn what_is_left_is_waited_for_one_visibility_timeout_and_the_margin() {
        let patience = VISIBILITY + HIDDEN_MARGIN;
        // Invisible messages; or none while the outbox holds some.
        for (queued, relay_has_more) in [(3, false), (0, true)] {
            let t0 = Instant::now();
            let mut drain = QueueDrain::new(VISIBILITY);
            let at = |d| (queued, relay_has_more, t0 + d);
            let mut step = |(q, more, now)| drain.step_at(q, more, now);
            assert_eq!(step(at(Duration::ZERO)), DrainStep::Wait);
            assert_eq!(step(at(patience)), DrainStep::Wait);
            let past = patience + Duration::from_millis(1);
            assert_eq!(step(at(past)), DrainStep::Done, "{queued} {relay_has_more}");
        }
    }

    #[test]
    fn messages_arriving_start_the_patience_over() {
        let t0 = Instant::now();
        let mut drain = QueueDrain::new(VISIBILITY);
        assert_eq!(drain.step_at(1, false, t0), DrainStep::Wait);
        drain.reset();
        let later = t0 + Duration::from_secs(60);
        assert_eq!(drain.step_at(1, false, later), DrainStep::Wait);
        assert_eq!(drain.step_at(0, false, later), DrainStep::Done);
    }
}
