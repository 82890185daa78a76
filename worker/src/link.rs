//! What the relay and the consumer of one process tell each other.
//!
//! - **How many messages the consumer has in hand** (received and not yet finished). The relay
//!   reads it while draining. Its patience with work held elsewhere is one lease, but a tenant at
//!   its fair share is held by tasks that are being parsed, and a parse may take longer than a
//!   lease: a draining relay that gave up then would leave the rest of the tenant's backlog in
//!   the outbox until the next job, with nothing in the queue to start one. CI on f4f0dd6 saw it
//!   with a 2 s lease and a loaded machine. While the consumer beside it has something in hand
//!   the job is not done anyway, so the relay waits.
//! - **That the relay has just sent messages.** A consumer that finds the queue empty polls it
//!   less and less often (`IDLE_BACKOFF_MIN` doubling up to `IDLE_BACKOFF_MAX`, 1 s), so a
//!   message sent just after a poll waited for the rest of the backoff: in `bench fairness`, a
//!   neighbour's uploads streaming in keep the queue short and often empty, and another tenant's
//!   upload waited up to a second in it. The consumer beside the relay is told, and polls at
//!   once; a consumer of another process still backs off, bounded by `IDLE_BACKOFF_MAX`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Shared between a consumer loop and the relay of its process. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Link(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    in_hand: AtomicUsize,
    sent: Notify,
}

impl Link {
    /// Messages received and not yet finished.
    pub fn in_hand(&self) -> usize {
        self.0.in_hand.load(Ordering::Acquire)
    }

    /// One more message in hand, until the returned guard drops.
    pub(crate) fn take(&self) -> Taken {
        self.0.in_hand.fetch_add(1, Ordering::AcqRel);
        Taken(self.clone())
    }

    /// The relay has sent messages to the queue.
    pub fn sent(&self) {
        // One stored permit when the consumer is not waiting: its next wait returns at once,
        // so a send between its empty receive and its wait is not missed.
        self.0.sent.notify_one();
    }

    /// Until the relay of this process has sent messages (at once if it has since the last
    /// wait ended).
    pub(crate) async fn wait_sent(&self) {
        self.0.sent.notified().await;
    }
}

/// One message in hand; dropping it (finished, failed, or its task aborted) counts it out.
pub(crate) struct Taken(Link);

impl Drop for Taken {
    fn drop(&mut self) {
        self.0 .0.in_hand.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    #[test]
    fn a_message_counts_while_its_guard_lives() {
        let link = Link::default();
        let seen_by_relay = link.clone();
        let a = link.take();
        let b = link.take();
        assert_eq!(seen_by_relay.in_hand(), 2);
        drop(a);
        assert_eq!(seen_by_relay.in_hand(), 1);
        drop(b);
        assert_eq!(seen_by_relay.in_hand(), 0);
    }

    #[test]
    fn a_send_before_the_wait_ends_the_next_wait_and_only_that_one() {
        let link = Link::default();
        link.sent();
        assert!(
            link.wait_sent().now_or_never().is_some(),
            "the send made before the wait was missed"
        );
        assert!(
            link.wait_sent().now_or_never().is_none(),
            "a wait with no send since ended"
        );
    }
}
