//! A local scaler that behaves like KEDA's `ScaledJob` (what Azure Container Apps jobs run), so
//! the worker's job semantics can be proven here: every polling interval it reads the queue's
//! approximate message count (which includes invisible, in-flight messages, as KEDA's default
//! `queueLengthStrategy: all` does) and the outbox backlog with
//! [`shared::db::outbox::SCALER_BACKLOG_QUERY`] (what a KEDA `postgresql` trigger would run for
//! relaying jobs), starts `worker run --drain …` processes by KEDA's default rule ([`rule`]), and reaps
//! the ones that ended, counting executions and how they ended. Used by `tests/it/scaler.rs`, the
//! bench's `jobs` scenario, and by hand through `tests/stack/scaler.sh`.

pub mod rule;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use shared::db;
use shared::storage::QueueClient;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use rule::Trigger;

/// How often [`Scaler::run`] looks for jobs that ended between two polls.
pub const REAP_EVERY: Duration = Duration::from_millis(50);

/// The scale rule's settings, named as in a `ScaledJob` / Container Apps job.
#[derive(Debug, Clone)]
pub struct ScalerConfig {
    /// `pollingInterval`.
    pub polling_interval: Duration,
    /// The `azure-queue` trigger's `queueLength`: messages per job.
    pub queue_length: u64,
    /// The `postgresql` trigger's `targetQueryValue` (outbox rows per job); `None`: no such
    /// trigger (an always-on relay fills the queue).
    pub backlog_target: Option<u64>,
    /// `maxReplicaCount` / `maxExecutions`: jobs running at once.
    pub max_executions: usize,
}

/// How the executions so far ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Job processes started.
    pub executions: usize,
    /// Exited 0.
    pub succeeded: usize,
    /// Exited non-zero, by exit code.
    pub failed: BTreeMap<i32, usize>,
    /// Ended by a signal (killed).
    pub killed: usize,
    /// Most jobs running at once.
    pub max_running: usize,
    /// The run time of the executions that ended, summed (what a platform bills).
    pub job_seconds: f64,
    pub polls: usize,
}

/// What one poll saw and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub queue_length: u64,
    pub backlog: u64,
    /// Running after the poll.
    pub running: usize,
    pub started: usize,
}

/// Builds the command of execution number `n` (1-based); the scaler sends its output to a log.
pub type JobCommand = Box<dyn Fn(usize) -> tokio::process::Command + Send + Sync>;

struct Job {
    execution: usize,
    started: Instant,
    child: tokio::process::Child,
}

struct State {
    running: Vec<Job>,
    report: Report,
}

/// The scaler. Cheap to share (`Arc`): the loop runs in a task while a test kills replicas.
pub struct Scaler {
    cfg: ScalerConfig,
    queue: QueueClient,
    db: PgPool,
    job: JobCommand,
    log_dir: PathBuf,
    state: Mutex<State>,
}

impl Scaler {
    /// A scaler of the jobs `job` builds, for `queue` and the outbox in `db`. Each execution's
    /// stdout and stderr go to `<log_dir>/job-<n>.log`.
    pub fn new(
        cfg: ScalerConfig,
        queue: QueueClient,
        db: PgPool,
        job: JobCommand,
        log_dir: PathBuf,
    ) -> anyhow::Result<Arc<Self>> {
        std::fs::create_dir_all(&log_dir)
            .with_context(|| format!("creating {}", log_dir.display()))?;
        Ok(Arc::new(Self {
            cfg,
            queue,
            db,
            job,
            log_dir,
            state: Mutex::new(State {
                running: Vec::new(),
                report: Report::default(),
            }),
        }))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One polling interval's work: reap, measure, start.
    pub async fn poll(&self) -> anyhow::Result<Tick> {
        self.reap();
        let queue_length = self
            .queue
            .approximate_length()
            .await
            .context("reading the queue length")?;
        let backlog = match self.cfg.backlog_target {
            Some(_) => db::outbox::claimable_count(&self.db)
                .await
                .context("reading the outbox backlog")?,
            None => 0,
        };
        let backlog = u64::try_from(backlog).unwrap_or(0);
        let mut triggers = vec![Trigger {
            length: queue_length,
            target: self.cfg.queue_length,
        }];
        if let Some(target) = self.cfg.backlog_target {
            triggers.push(Trigger {
                length: backlog,
                target,
            });
        }
        let mut state = self.state();
        let start = rule::jobs_to_start(&triggers, state.running.len(), self.cfg.max_executions);
        for _ in 0..start {
            let execution = state.report.executions + 1;
            let child = self.spawn(execution)?;
            state.running.push(Job {
                execution,
                started: Instant::now(),
                child,
            });
            state.report.executions = execution;
        }
        state.report.polls += 1;
        state.report.max_running = state.report.max_running.max(state.running.len());
        Ok(Tick {
            queue_length,
            backlog,
            running: state.running.len(),
            started: start,
        })
    }

    fn spawn(&self, execution: usize) -> anyhow::Result<tokio::process::Child> {
        let path = self.log_dir.join(format!("job-{execution}.log"));
        let log =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut cmd = (self.job)(execution);
        cmd.stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        cmd.spawn()
            .with_context(|| format!("starting job execution {execution}"))
    }

    /// Records the jobs that ended since the last look.
    fn reap(&self) {
        let mut state = self.state();
        let State { running, report } = &mut *state;
        running.retain_mut(|job| match job.child.try_wait() {
            Ok(None) => true,
            Ok(Some(status)) => {
                report.job_seconds += job.started.elapsed().as_secs_f64();
                match status.code() {
                    Some(0) => report.succeeded += 1,
                    Some(code) => *report.failed.entry(code).or_default() += 1,
                    None => report.killed += 1,
                }
                false
            }
            Err(e) => {
                eprintln!("scaler: cannot wait for job {}: {e}", job.execution);
                true
            }
        });
    }

    /// Polls every polling interval until `stop`. A failed poll (Postgres or the queue briefly
    /// away) is reported and retried at the next interval, as KEDA does. Between polls, ended
    /// jobs are reaped every [`REAP_EVERY`], so their run time is measured to within that.
    pub async fn run(&self, stop: &CancellationToken) {
        loop {
            if let Err(e) = self.poll().await {
                eprintln!("scaler: poll failed: {e:#}");
            }
            let next = Instant::now() + self.cfg.polling_interval;
            while let Some(left) = next.checked_duration_since(Instant::now()) {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(left.min(REAP_EVERY)) => self.reap(),
                }
                if left <= REAP_EVERY {
                    break;
                }
            }
        }
    }

    /// Jobs running now (as of the last reap).
    pub fn running(&self) -> usize {
        self.reap();
        self.state().running.len()
    }

    /// Process ids of the running jobs.
    pub fn running_pids(&self) -> Vec<u32> {
        self.reap();
        self.state()
            .running
            .iter()
            .filter_map(|j| j.child.id())
            .collect()
    }

    /// `kill -9` of the running job with process id `pid`; false when it is not running (a
    /// job that has just exited by itself, not reaped yet, is not running).
    pub fn kill(&self, pid: u32) -> bool {
        let mut state = self.state();
        let Some(job) = state.running.iter_mut().find(|j| j.child.id() == Some(pid)) else {
            return false;
        };
        if !matches!(job.child.try_wait(), Ok(None)) {
            return false;
        }
        // tokio's start_kill is SIGKILL: no shutdown, no release, like a node eviction.
        job.child.start_kill().is_ok()
    }

    /// The executions so far.
    pub fn report(&self) -> Report {
        self.reap();
        self.state().report.clone()
    }

    /// Waits for the running jobs to end by themselves (drain jobs do), at most `within`; then
    /// kills what is left. Returns the final report.
    pub async fn finish(&self, within: Duration) -> Report {
        let deadline = Instant::now() + within;
        while self.running() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for job in &mut self.state().running {
            let _ = job.child.start_kill();
        }
        while self.running() > 0 && Instant::now() < deadline + Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.report()
    }

    /// The log of execution `n`.
    pub fn log(&self, execution: usize) -> String {
        std::fs::read_to_string(self.log_dir.join(format!("job-{execution}.log")))
            .unwrap_or_default()
    }

    /// Every execution's log, for a failed assertion.
    pub fn logs(&self) -> String {
        let n = self.state().report.executions;
        (1..=n)
            .map(|i| format!("--- job {i} ---\n{}", self.log(i)))
            .collect()
    }
}
