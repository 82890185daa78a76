//! Driving the worker in tests: a [`WorkerEnv`] is a fresh database (migrated) plus fresh queue,
//! poison queue and container names on the run's Azurite. Uploads are created the way the api
//! creates them (blob first, then source file + task + outbox row in one transaction), so these
//! tests do not depend on the HTTP api. The relay and consumer are driven step by step
//! ([`WorkerEnv::relay_until_idle`], [`WorkerEnv::consume_until_idle`]) or run as the real
//! `worker` binary ([`worker_exe`], built from the code under test before its first use, and
//! [`WorkerEnv::command`]).

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use shared::db::{self, outbox::OutboxMessage, tasks::Task};
use shared::domain::Envelope;
use shared::storage::{BlobStore, QueueClient, StorageConfig};
use sqlx::PgPool;
use tempfile::TempPath;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;
use worker::config::{ConsumerConfig, ParseConfig, RelayConfig, WebhooksConfig};
use worker::consumer::{Consumer, Outcome};
use worker::parse::isolate::Isolation;
use worker::relay::{self, BatchReport, QueueSender};

pub use crate::binaries::worker_exe;
pub use crate::fakes::{slow_parser, FlakySender};
use crate::services::{fresh_database, services, unique_name};

/// A small CSV with a header and two data rows.
pub const SAMPLE_CSV: &str = "id,name\n1,alice\n2,bob\n";

/// A test's own database, queues and container.
pub struct WorkerEnv {
    pub database_url: String,
    pub db: PgPool,
    pub storage: StorageConfig,
    pub queue: QueueClient,
    pub poison: QueueClient,
    pub blobs: BlobStore,
}

/// One upload as the api would have created it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upload {
    pub task_id: Uuid,
    pub source_file_id: Uuid,
    pub outbox_id: Uuid,
}

impl WorkerEnv {
    /// A fresh database on the shared cluster.
    pub async fn new() -> Self {
        Self::with_database(&fresh_database().await).await
    }

    /// Uses the (empty) database at `url`, e.g. one on a [`crate::services::DedicatedPostgres`].
    pub async fn with_database(url: &str) -> Self {
        let services = services().await;
        let db = shared::db::DatabaseConfig::new(url).pool().expect("pool");
        shared::db::MIGRATOR
            .run(&db)
            .await
            .expect("migrations apply");
        let storage = StorageConfig::from_connection_string(
            services.storage_connection_string.clone(),
            unique_name("uploads"),
            unique_name("tasks"),
        );
        let queue = QueueClient::new(&storage, &storage.queue_name).expect("queue client");
        let poison = QueueClient::new(&storage, &format!("{}-poison", storage.queue_name))
            .expect("poison queue client");
        let blobs = BlobStore::new(&storage).expect("blob client");
        queue.ensure_exists().await.expect("create queue");
        poison.ensure_exists().await.expect("create poison queue");
        blobs.ensure_container().await.expect("create container");
        Self {
            database_url: url.to_owned(),
            db,
            storage,
            queue,
            poison,
            blobs,
        }
    }

    /// This env's storage settings with one connection-string setting (`BlobEndpoint`,
    /// `AccountKey`…) replaced by `value`: a storage that is unreachable or refuses us, for real.
    pub fn storage_with(&self, setting: &str, value: &str) -> StorageConfig {
        let connection = self
            .storage
            .connection_string
            .as_deref()
            .expect("a connection string");
        let replaced: Vec<String> = connection
            .split(';')
            .map(|part| match part.split_once('=') {
                Some((name, _)) if name == setting => format!("{name}={value}"),
                _ => part.to_owned(),
            })
            .collect();
        assert_ne!(replaced.join(";"), connection, "{setting} is set");
        StorageConfig::from_connection_string(
            replaced.join(";"),
            self.storage.blob_container.clone(),
            self.storage.queue_name.clone(),
        )
    }

    /// Relay settings for tests: short backoffs so retries come due quickly.
    pub fn relay_config() -> RelayConfig {
        RelayConfig {
            backoff_base: Duration::from_millis(200),
            backoff_cap: Duration::from_secs(2),
            poll_interval: Duration::from_secs(1),
            ..RelayConfig::default()
        }
    }

    /// Webhook delivery settings for tests: the tests' sealing key, private networks allowed
    /// (receivers listen on loopback), a short timeout and retry schedule.
    pub fn webhooks_config() -> WebhooksConfig {
        WebhooksConfig {
            keys: test_webhook_keys(),
            retry_schedule: worker::webhooks::RetrySchedule::parse("200ms,400ms,800ms")
                .expect("a schedule"),
            timeout: Duration::from_secs(2),
            lease: Duration::from_secs(5),
            poll_interval: Duration::from_secs(1),
            ..WebhooksConfig::default()
        }
    }

    /// Consumer settings for tests: short visibility and retry backoff.
    pub fn consumer_config() -> ConsumerConfig {
        ConsumerConfig {
            visibility_timeout: Duration::from_secs(5),
            task_lease: Duration::from_secs(5),
            idle_backoff_min: Duration::from_millis(20),
            idle_backoff_max: Duration::from_millis(500),
            retry_backoff_base: Duration::from_secs(1),
            retry_backoff_cap: Duration::from_secs(2),
            ..ConsumerConfig::default()
        }
    }

    /// A consumer on this env's queues, its parse children being the built `worker` binary.
    pub fn consumer(&self, cfg: ConsumerConfig) -> Consumer {
        self.consumer_with_parser(cfg, worker_exe())
    }

    /// A consumer whose parse children are started from `exe` (e.g. a slow wrapper script).
    pub fn consumer_with_parser(&self, cfg: ConsumerConfig, exe: PathBuf) -> Consumer {
        let isolation = Isolation::new(exe, ParseConfig::default().limits);
        let keys = test_webhook_keys();
        let hooks = worker::hooks::Hooks::new(
            keys.secret_key,
            keys.allow_private_networks,
            cfg.hook_retry_for,
        )
        .expect("a hook client");
        Consumer::new(
            self.db.clone(),
            self.queue.clone(),
            self.poison.clone(),
            self.blobs.clone(),
            isolation,
            cfg,
        )
        .with_hooks(hooks)
    }

    /// Uploads `content` as a blob and commits its source file, task and outbox message.
    pub async fn create_upload(&self, file_name: &str, content: &[u8]) -> Upload {
        self.create_upload_for("default", file_name, content).await
    }

    /// [`create_upload`](Self::create_upload) as `tenant`'s.
    pub async fn create_upload_for(&self, tenant: &str, file_name: &str, content: &[u8]) -> Upload {
        let upload = self.upload_blob(file_name, content).await;
        let mut tx = self.db.begin().await.expect("begin");
        insert_upload(&mut tx, tenant, &upload, file_name, content.len()).await;
        tx.commit().await.expect("commit");
        upload.0
    }

    /// Like [`create_upload`](Self::create_upload) but the transaction rolls back.
    pub async fn create_rolled_back_upload(&self, content: &[u8]) -> Upload {
        let upload = self.upload_blob("rolled-back.csv", content).await;
        let mut tx = self.db.begin().await.expect("begin");
        insert_upload(
            &mut tx,
            "default",
            &upload,
            "rolled-back.csv",
            content.len(),
        )
        .await;
        tx.rollback().await.expect("rollback");
        upload.0
    }

    /// `n` uploads of `content`, `concurrency` at a time (blobs are what takes the time).
    pub async fn create_uploads(
        &self,
        n: usize,
        content: &[u8],
        concurrency: usize,
    ) -> Vec<Upload> {
        use futures::StreamExt as _;
        futures::stream::iter(0..n)
            .map(|i| async move { self.create_upload(&format!("file-{i}.csv"), content).await })
            .buffer_unordered(concurrency)
            .collect()
            .await
    }

    async fn upload_blob(&self, file_name: &str, content: &[u8]) -> (Upload, String) {
        let upload = Upload {
            task_id: Uuid::now_v7(),
            source_file_id: Uuid::now_v7(),
            outbox_id: Uuid::now_v7(),
        };
        let blob_name = format!("{}/{file_name}", upload.source_file_id);
        let body =
            futures::stream::iter([Ok::<_, std::io::Error>(Bytes::copy_from_slice(content))]);
        self.blobs
            .upload(&blob_name, "text/csv", body)
            .await
            .expect("upload blob");
        (upload, blob_name)
    }

    /// Claims and sends until a claim comes back empty; returns the summed reports.
    pub async fn relay_until_idle(
        &self,
        sender: &dyn QueueSender,
        cfg: &RelayConfig,
    ) -> BatchReport {
        let never = CancellationToken::new();
        let mut total = BatchReport::default();
        loop {
            let r = relay::run_once(&self.db, sender, cfg, &never)
                .await
                .expect("relay run_once");
            total.claimed += r.claimed;
            total.sent += r.sent;
            total.failed += r.failed;
            total.dead += r.dead;
            if r.claimed == 0 {
                return total;
            }
        }
    }

    /// Receives and processes until a receive comes back empty; returns every outcome.
    pub async fn consume_until_idle(&self, consumer: &Consumer) -> Vec<Outcome> {
        let never = CancellationToken::new();
        let mut all = Vec::new();
        loop {
            let outcomes = consumer.run_once(&never).await.expect("consumer run_once");
            if outcomes.is_empty() {
                return all;
            }
            all.extend(outcomes);
        }
    }

    pub async fn task(&self, id: Uuid) -> Task {
        db::tasks::find(&self.db, id)
            .await
            .expect("find task")
            .expect("task exists")
    }

    pub async fn outbox(&self, id: Uuid) -> OutboxMessage {
        db::outbox::find(&self.db, id)
            .await
            .expect("find outbox message")
            .expect("outbox message exists")
    }

    /// Rows stored for a source file.
    pub async fn row_count(&self, source_file_id: Uuid) -> i64 {
        sqlx::query_scalar("SELECT coalesce(sum(row_count), 0)::bigint FROM parsed_row_chunks WHERE source_file_id = $1")
            .bind(source_file_id)
            .fetch_one(&self.db)
            .await
            .expect("count rows")
    }

    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(&self.db)
            .await
            .expect("count")
    }

    /// Receives (and deletes) everything visible in `queue`; returns the bodies.
    pub async fn drain_queue(queue: &QueueClient) -> Vec<String> {
        let mut bodies = Vec::new();
        loop {
            let batch = queue
                .receive(32, Duration::from_secs(30))
                .await
                .expect("receive");
            if batch.is_empty() {
                return bodies;
            }
            for m in batch {
                queue.delete(&m.id, &m.pop_receipt).await.expect("delete");
                bodies.push(m.body);
            }
        }
    }

    /// The env of `app`: its database, queue and container.
    pub fn of(app: &crate::app::TestApp) -> Self {
        let storage = app.config.storage.clone();
        Self {
            database_url: app.config.database.url.clone(),
            db: app.db.clone(),
            queue: QueueClient::new(&storage, &storage.queue_name).expect("queue"),
            poison: QueueClient::new(&storage, &format!("{}-poison", storage.queue_name))
                .expect("poison queue"),
            blobs: BlobStore::new(&storage).expect("blobs"),
            storage,
        }
    }

    /// [`WorkerEnv::command`] with the keys of every test worker ([`test_webhook_keys`]): the
    /// sealing key (for webhook secrets and stored credentials) and private networks allowed.
    pub fn keyed_command(&self, args: &[&str]) -> tokio::process::Command {
        use base64::Engine as _;
        let mut cmd = self.command(args);
        cmd.env(
            "WEBHOOK_SECRET_KEY",
            base64::engine::general_purpose::STANDARD.encode(TEST_SEALING_KEY),
        )
        .env("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true");
        cmd
    }

    /// Environment for a `worker` child process on this env (fast test settings).
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(worker_exe());
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("DATABASE_URL", &self.database_url)
            .env(
                "AZURE_STORAGE_CONNECTION_STRING",
                self.storage
                    .connection_string
                    .as_deref()
                    .unwrap_or_default(),
            )
            .env("QUEUE_NAME", &self.storage.queue_name)
            .env("BLOB_CONTAINER", &self.storage.blob_container)
            .env(
                "SOURCE_EVENTS_QUEUE",
                format!("{}-src", self.storage.queue_name),
            )
            .env("RELAY_POLL_INTERVAL", "1s")
            .env("RELAY_BACKOFF_BASE", "200ms")
            .env("RELAY_BACKOFF_CAP", "2s")
            .env("VISIBILITY_TIMEOUT", "5s")
            .env("TASK_LEASE", "5s")
            .env("IDLE_BACKOFF_MAX", "500ms")
            .env("RETRY_BACKOFF_BASE", "1s")
            .env("RETRY_BACKOFF_CAP", "2s")
            .env("DATABASE_ACQUIRE_TIMEOUT", "1s")
            // Any free port (tests run many workers at once); set it again to scrape one.
            .env("METRICS_ADDR", "127.0.0.1:0")
            .kill_on_drop(true);
        cmd
    }

    /// The `api` binary (`args` as its command line) on this env's database, queue and
    /// container; the caller adds its `LISTEN_ADDR` and anything else it needs.
    pub fn api_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(crate::binaries::api_exe());
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATABASE_URL", &self.database_url)
            .env(
                "AZURE_STORAGE_CONNECTION_STRING",
                self.storage
                    .connection_string
                    .as_deref()
                    .unwrap_or_default(),
            )
            .env("QUEUE_NAME", &self.storage.queue_name)
            .env("BLOB_CONTAINER", &self.storage.blob_container)
            .kill_on_drop(true);
        cmd
    }

    /// Waits until every task in `ids` is COMPLETED.
    pub async fn wait_all_completed(&self, ids: &[Uuid], within: Duration) {
        let ids = ids.to_vec();
        let want = ids.len() as i64;
        eventually(within, "all tasks COMPLETED", || {
            let db = self.db.clone();
            let ids = ids.clone();
            async move {
                sqlx::query_scalar::<_, i64>(
                    "SELECT count(*) FROM tasks WHERE id = ANY($1) AND status = 'COMPLETED'",
                )
                .bind(&ids)
                .fetch_one(&db)
                .await
                .is_ok_and(|n| n == want)
            }
        })
        .await;
    }
}

async fn insert_upload(
    tx: &mut sqlx::PgConnection,
    tenant_id: &str,
    (upload, blob_name): &(Upload, String),
    file_name: &str,
    size: usize,
) {
    let sha = "0".repeat(64);
    let upload = db::uploads::NewUpload {
        file: db::source_files::NewSourceFile {
            tenant_id,
            uploaded_by: "test",
            id: upload.source_file_id,
            file_name,
            content_type: "text/csv",
            format: shared::domain::FileFormat::Csv,
            size_bytes: size as i64,
            sha256: &sha,
            blob_name,
            idempotency_key: None,
            template: None,
            metadata: None,
            session: None,
            origin: None,
        },
        task_id: upload.task_id,
        message_id: upload.outbox_id,
        inline: None,
        traceparent: None,
    };
    let recorded = db::uploads::insert(&mut *tx, &upload, i64::MAX)
        .await
        .expect("insert an upload's rows");
    assert!(
        matches!(recorded, db::uploads::Recorded::Stored(..)),
        "no quota"
    );
}

/// Polls `condition` until it holds, failing the test after `within`.
pub async fn eventually<F, Fut>(within: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if condition().await {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Decodes queue bodies into envelopes' message ids.
pub fn message_ids(bodies: &[String]) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = bodies
        .iter()
        .map(|b| Envelope::decode(b).expect("valid envelope").message_id)
        .collect();
    ids.sort();
    ids
}

/// A `worker` child process whose stdout and stderr go to a log file (read it with
/// [`WorkerProcess::log`] when an assertion fails), removed with it.
pub struct WorkerProcess {
    pub child: tokio::process::Child,
    pub log_path: TempPath,
}

impl WorkerProcess {
    pub fn spawn(mut cmd: tokio::process::Command) -> Self {
        let (log, log_path) = tempfile::Builder::new()
            .prefix("worker-")
            .suffix(".log")
            .tempfile()
            .expect("create worker log")
            .into_parts();
        let err = log.try_clone().expect("clone log handle");
        cmd.stdout(log).stderr(err);
        let child = cmd.spawn().expect("spawn worker");
        Self { child, log_path }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Sends SIGTERM (what container platforms send before killing).
    pub fn terminate(&self) {
        let pid = self.child.id().expect("worker is running");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {pid}");
    }

    /// Waits for the exit, failing the test (with the log) after `within`.
    pub async fn wait(&mut self, within: Duration) -> std::process::ExitStatus {
        match tokio::time::timeout(within, self.child.wait()).await {
            Ok(status) => status.expect("wait for worker"),
            Err(_) => panic!(
                "the worker did not exit within {within:?}; log:\n{}",
                self.log()
            ),
        }
    }
}

/// Polls `probe` until it yields a value, failing the test after `within`.
pub async fn eventually_some<T, F, Fut>(within: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A `worker run` configuration for the in-process [`worker::run`]: fast test settings, parse
/// children from the built binary.
pub fn run_config(database_url: &str, storage: StorageConfig) -> worker::config::RunConfig {
    let events_queue = format!("{}-src", storage.queue_name);
    worker::config::RunConfig {
        role: worker::config::Role::All,
        drain: false,
        shutdown_grace: Duration::from_secs(10),
        bounds: worker::config::JobBounds::default(),
        // A free port: many workers run at once in the tests.
        metrics_addr: Some("127.0.0.1:0".parse().expect("socket address")),
        database: shared::db::DatabaseConfig::new(database_url),
        storage,
        telemetry: shared::telemetry::TelemetryConfig::logs_only(),
        relay: WorkerEnv::relay_config(),
        consumer: WorkerEnv::consumer_config(),
        parse: ParseConfig {
            parser_exe: Some(worker_exe()),
            ..ParseConfig::default()
        },
        webhooks: WorkerEnv::webhooks_config(),
        destinations: worker::config::DestinationsConfig {
            lease: Duration::from_secs(5),
            poll_interval: Duration::from_secs(1),
            ..worker::config::DestinationsConfig::default()
        },
        sources: worker::config::SourcesConfig {
            // Each test's own events queue: workers of other tests must not take its events.
            events_queue,
            lease: Duration::from_secs(5),
            poll_interval: Duration::from_millis(500),
            import_poll_interval: Duration::from_secs(1),
            retry_after: Duration::from_millis(500),
            ..worker::config::SourcesConfig::default()
        },
        lifecycle: worker::maintenance::LifecycleConfig::default(),
    }
}

/// The bytes of [`test_webhook_keys`]'s sealing key.
const TEST_SEALING_KEY: [u8; 32] = [42; 32];

/// The webhook sealing key of every test api and worker, with private networks allowed: test
/// receivers listen on loopback. (The SSRF tests turn the allowance off.)
pub fn test_webhook_keys() -> shared::webhooks::WebhookKeyConfig {
    shared::webhooks::WebhookKeyConfig {
        secret_key: Some(
            shared::webhooks::SealingKey::from_bytes(&TEST_SEALING_KEY).expect("a 32-byte key"),
        ),
        allow_private_networks: true,
    }
}

/// A worker ([`worker::run`], every loop) running in the background until
/// [`RunningWorker::stop`].
pub struct RunningWorker {
    signal: CancellationToken,
    handle: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl RunningWorker {
    pub fn start(cfg: worker::config::RunConfig) -> Self {
        let signal = CancellationToken::new();
        let handle = tokio::spawn(worker::run(cfg, signal.clone()));
        Self { signal, handle }
    }

    /// Whether it is still running: no loop ended it.
    pub fn is_running(&self) -> bool {
        !self.handle.is_finished()
    }

    /// Stops it as a signal would, and checks that it stopped cleanly.
    pub async fn stop(self) {
        self.signal.cancel();
        self.handle
            .await
            .expect("join")
            .expect("the worker stops cleanly");
    }
}
