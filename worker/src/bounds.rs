//! A job replica's message budget (`--max-messages`): the loop that takes messages reserves them
//! before each receive or claim and gives back what it did not get, and the budget fires
//! [`Budget::spent`] once every message of it has been taken. The supervisor treats that (and
//! `--max-runtime`) like a signal: no new work, in-flight work finished, exit 0. A platform can
//! then cap what one replica does without killing it mid-task.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

/// How many more messages this process may take; unlimited unless `--max-messages` is set.
#[derive(Debug)]
pub struct Budget {
    /// `None`: no limit.
    remaining: Option<AtomicU64>,
    spent: CancellationToken,
}

impl Budget {
    /// A budget of `limit` messages, or none at all.
    pub fn new(limit: Option<u64>) -> Arc<Self> {
        Arc::new(Self {
            remaining: limit.map(AtomicU64::new),
            spent: CancellationToken::new(),
        })
    }

    /// No limit: what the loops run with unless told otherwise.
    pub fn unlimited() -> Arc<Self> {
        Self::new(None)
    }

    /// Reserves up to `want` messages; returns how many may be taken (0 once the budget is
    /// spent). Follow it with [`Budget::settle`].
    pub fn reserve(&self, want: usize) -> usize {
        let Some(remaining) = &self.remaining else {
            return want;
        };
        let want = want as u64;
        let mut got = 0;
        let _ = remaining.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
            got = left.min(want);
            Some(left - got)
        });
        got as usize
    }

    /// Gives back the part of a reservation of `reserved` that was not used (`used` messages were
    /// taken); fires [`Budget::spent`] when nothing is left.
    pub fn settle(&self, reserved: usize, used: usize) {
        let Some(remaining) = &self.remaining else {
            return;
        };
        let unused = reserved.saturating_sub(used) as u64;
        let left = remaining.fetch_add(unused, Ordering::SeqCst) + unused;
        if left == 0 {
            self.spent.cancel();
        }
    }

    /// Fires once every message of the budget has been taken (never without a limit).
    pub fn spent(&self) -> &CancellationToken {
        &self.spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unlimited_budget_grants_everything_and_is_never_spent() {
        let budget = Budget::unlimited();
        assert_eq!(budget.reserve(32), 32);
        budget.settle(32, 32);
        assert!(!budget.spent().is_cancelled());
    }

    #[test]
    fn a_budget_grants_what_is_left_takes_back_what_was_not_used_and_fires_when_spent() {
        let budget = Budget::new(Some(10));
        assert_eq!(budget.reserve(8), 8);
        budget.settle(8, 3); // a receive brought back only three messages
        assert!(!budget.spent().is_cancelled());
        assert_eq!(budget.reserve(32), 7);
        budget.settle(7, 7);
        assert!(budget.spent().is_cancelled());
        assert_eq!(budget.reserve(1), 0);
    }
}
