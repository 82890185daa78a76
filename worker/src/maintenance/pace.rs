//! How a housekeeping job deletes: one bounded statement at a time, each its own short
//! transaction, so that a job never holds locks or writes WAL for long, and a run that stops
//! half-way (a crash, a test's budget) leaves work the next run finishes.

use std::future::Future;
use std::time::{Duration, Instant};

/// How a lifecycle run goes: the rows one statement may delete, how many statements the run may
/// still make (unlimited in the worker; a test stops a run mid-way with it, as a crash would),
/// and what its statements took (the purge benchmark reports the longest).
#[derive(Debug, Clone)]
pub struct Pace {
    pub batch: i64,
    left: Option<u64>,
    pub statements: u64,
    pub longest: Duration,
}

impl Pace {
    pub fn new(batch: i64) -> Self {
        Self {
            batch,
            left: None,
            statements: 0,
            longest: Duration::ZERO,
        }
    }

    /// A pace that stops the run after `statements` statements.
    pub fn with_budget(batch: i64, statements: u64) -> Self {
        Self {
            left: Some(statements),
            ..Self::new(batch)
        }
    }

    /// Runs one statement (one transaction), timed; `None`, without running it, once the budget
    /// is spent.
    pub async fn step<T>(
        &mut self,
        statement: impl Future<Output = sqlx::Result<T>>,
    ) -> sqlx::Result<Option<T>> {
        if let Some(left) = &mut self.left {
            if *left == 0 {
                return Ok(None);
            }
            *left -= 1;
        }
        let started = Instant::now();
        let out = statement.await?;
        self.statements += 1;
        self.longest = self.longest.max(started.elapsed());
        Ok(Some(out))
    }
}

/// How far a run got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Everything it could do now is done.
    Done,
    /// The pace's budget ran out first.
    Stopped,
}

/// Runs `step` (one bounded statement) until it returns 0 or the pace's budget runs out.
pub async fn until_zero<F, Fut>(pace: &mut Pace, mut step: F) -> sqlx::Result<Progress>
where
    F: FnMut(i64) -> Fut,
    Fut: Future<Output = sqlx::Result<u64>>,
{
    loop {
        match pace.step(step(pace.batch)).await? {
            None => return Ok(Progress::Stopped),
            Some(0) => return Ok(Progress::Done),
            Some(_) => {}
        }
    }
}

/// Runs `step` (one `DELETE … LIMIT batch`) until a batch comes back short, and returns how many
/// rows it deleted in all: small batches keep each statement's locks and WAL short.
pub async fn in_batches<F, Fut>(batch: i64, mut step: F) -> sqlx::Result<u64>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = sqlx::Result<u64>>,
{
    let mut total = 0;
    loop {
        let n = step().await?;
        total += n;
        if n < u64::try_from(batch).unwrap_or(0) {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_pace_runs_statements_until_its_budget_is_spent_and_then_none() {
        let ran = AtomicUsize::new(0);
        let statement = || async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, sqlx::Error>(7)
        };
        let mut pace = Pace::with_budget(10, 2);
        assert_eq!(pace.step(statement()).await.expect("ok"), Some(7));
        assert_eq!(pace.step(statement()).await.expect("ok"), Some(7));
        assert_eq!(pace.step(statement()).await.expect("ok"), None);
        assert_eq!(ran.load(Ordering::SeqCst), 2, "the third was never run");
        assert_eq!(pace.statements, 2);

        let mut unlimited = Pace::new(10);
        for _ in 0..100 {
            assert!(unlimited.step(statement()).await.expect("ok").is_some());
        }
        assert_eq!(unlimited.statements, 100);
    }
}
