//! How many messages this process's consumer has in hand (received and not yet finished).
//!
//! The relay of the same process reads it while draining. Its patience with work held
//! elsewhere is one lease, but a tenant at its fair share is held by tasks that are being
//! parsed, and a parse may take longer than a lease: a draining relay that gave up then would
//! leave the rest of the tenant's backlog in the outbox until the next job, with nothing in the
//! queue to start one. CI on f4f0dd6 saw it with a 2 s lease and a loaded machine. While the
//! consumer beside it has something in hand the job is not done anyway, so the relay waits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Shared between a consumer loop and the relay of its process. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct InHand(Arc<AtomicUsize>);

impl InHand {
    /// Messages received and not yet finished.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    /// One more message in hand, until the returned guard drops.
    pub(super) fn take(&self) -> Taken {
        self.0.fetch_add(1, Ordering::AcqRel);
        Taken(self.clone())
    }
}

/// One message in hand; dropping it (finished, failed, or its task aborted) counts it out.
pub(super) struct Taken(InHand);

impl Drop for Taken {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_counts_while_its_guard_lives() {
        let in_hand = InHand::default();
        let seen_by_relay = in_hand.clone();
        let a = in_hand.take();
        let b = in_hand.take();
        assert_eq!(seen_by_relay.count(), 2);
        drop(a);
        assert_eq!(seen_by_relay.count(), 1);
        drop(b);
        assert_eq!(seen_by_relay.count(), 0);
    }
}
