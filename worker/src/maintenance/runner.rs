//! The maintenance loop's runner: the worker's housekeeping, apart from the loops that deliver
//! work, so that a busy relay or a slow endpoint never delays a purge and a purge never delays a
//! send. It runs a list of named [`Job`]s (the list is [`super::jobs`]), each every its own
//! interval (the first run at start-up). A failed run is logged and tried again at the next
//! interval (an outage passes; a bad statement keeps warning). With `--drain`, each job runs once
//! and the loop ends, so a drain job still exits.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::PgPool;
use tokio::time::Instant;

use crate::config::RunConfig;
use crate::Shutdown;

/// The shortest interval between two runs of a job, whatever its setting says: a zero interval
/// would make the loop spin.
const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// What a job does, given the worker's pool and settings.
type Run = dyn Fn(PgPool, Arc<RunConfig>) -> BoxFuture<'static, anyhow::Result<()>> + Send + Sync;

/// One housekeeping job: its name (for logs), how often it runs, and what it does.
pub struct Job {
    name: &'static str,
    every: Duration,
    run: Box<Run>,
}

impl Job {
    pub fn new<F, Fut>(name: &'static str, every: Duration, run: F) -> Self
    where
        F: Fn(PgPool, Arc<RunConfig>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        Self {
            name,
            every: every.max(MIN_INTERVAL),
            run: Box::new(move |db, cfg| Box::pin(run(db, cfg))),
        }
    }
}

/// Runs `jobs` until `shutdown.stop` fires (a job in hand finishes unless `shutdown.abort`
/// fires first), or with `drain` until each has run once. A job's failure is logged, never
/// fatal.
pub async fn run(
    db: PgPool,
    cfg: Arc<RunConfig>,
    jobs: Vec<Job>,
    shutdown: Shutdown,
    drain: bool,
) -> anyhow::Result<()> {
    let names: Vec<&str> = jobs.iter().map(|j| j.name).collect();
    tracing::info!(jobs = ?names, drain, "maintenance started");
    let mut next = vec![Instant::now(); jobs.len()];
    while !shutdown.stop.is_cancelled() {
        for (job, due) in jobs.iter().zip(&mut next) {
            if shutdown.stop.is_cancelled() || Instant::now() < *due {
                continue;
            }
            *due = Instant::now() + job.every;
            tokio::select! {
                done = (job.run)(db.clone(), Arc::clone(&cfg)) => if let Err(e) = done {
                    tracing::warn!(job = job.name, error = format!("{e:#}"), "housekeeping failed");
                },
                () = shutdown.abort.cancelled() => break,
            }
        }
        if drain {
            break;
        }
        let Some(wake) = next.iter().min().copied() else {
            break;
        };
        tokio::select! {
            () = shutdown.stop.cancelled() => {}
            () = tokio::time::sleep_until(wake) => {}
        }
    }
    tracing::info!("maintenance stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A job that counts its runs and touches nothing.
    fn counting(runs: &Arc<AtomicUsize>, every: Duration) -> Job {
        let runs = Arc::clone(runs);
        Job::new("count", every, move |_, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
    }

    fn context() -> (PgPool, Arc<RunConfig>) {
        let url = "postgres://nobody@127.0.0.1:1/none";
        let db = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy(url)
            .expect("a lazy pool");
        let cfg = shared::config::from_args::<RunConfig>(&["--database-url", url]);
        (db, Arc::new(cfg))
    }

    #[tokio::test]
    async fn a_drain_runs_each_job_once_and_ends() {
        let (db, cfg) = context();
        let (a, b) = (Arc::default(), Arc::default());
        let jobs = vec![
            counting(&a, Duration::from_secs(3600)),
            counting(&b, Duration::ZERO),
        ];
        run(db, cfg, jobs, Shutdown::new(), true)
            .await
            .expect("the loop ends");
        assert_eq!((a.load(Ordering::SeqCst), b.load(Ordering::SeqCst)), (1, 1));
    }

    #[tokio::test]
    async fn a_loop_runs_its_jobs_at_start_and_ends_at_stop_without_waiting_for_the_next() {
        let (db, cfg) = context();
        let runs = Arc::new(AtomicUsize::new(0));
        let ran = Arc::new(tokio::sync::Notify::new());
        let job = {
            let (runs, ran) = (Arc::clone(&runs), Arc::clone(&ran));
            Job::new("notify", Duration::from_secs(3600), move |_, _| {
                runs.fetch_add(1, Ordering::SeqCst);
                ran.notify_one();
                async { Ok(()) }
            })
        };
        let shutdown = Shutdown::new();
        let running = tokio::spawn(run(db, cfg, vec![job], shutdown.clone(), false));
        ran.notified().await;
        shutdown.stop.cancel();
        running.await.expect("joined").expect("the loop ends");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            1,
            "once at start, not again an hour later"
        );
    }

    #[test]
    fn a_zero_interval_is_raised_to_the_floor() {
        let job = counting(&Arc::default(), Duration::ZERO);
        assert_eq!(job.every, MIN_INTERVAL);
    }
}
