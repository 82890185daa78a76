//! `TestApp`: the real api, served in-process on a free loopback port, against a fresh database
//! and fresh container/queue names on the run's shared Postgres and Azurite.

use std::time::Duration;

use api::config::EntraConfig;
use api::config::HttpConfig;
use shared::config::{DatabaseConfig, StorageConfig, TelemetryConfig};
use shared::storage::BlobStore;
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::services::{fresh_database, services, unique_name};

/// The default upload limit of test apps: small, so 413 tests need little data.
pub const TEST_MAX_UPLOAD_BYTES: u64 = 1024 * 1024;

pub struct TestApp {
    pub base_url: String,
    /// Authenticated as [`TestApp::key`] (tenant `default`).
    pub client: reqwest::Client,
    /// An API key of the `default` tenant.
    pub key: String,
    pub db: PgPool,
    pub config: api::Config,
    pub blobs: BlobStore,
    shutdown: CancellationToken,
}

/// How many rows of each upload table exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadRows {
    pub source_files: i64,
    pub tasks: i64,
    pub outbox_messages: i64,
}

impl UploadRows {
    pub const NONE: UploadRows = UploadRows {
        source_files: 0,
        tasks: 0,
        outbox_messages: 0,
    };

    pub fn each(n: i64) -> UploadRows {
        UploadRows {
            source_files: n,
            tasks: n,
            outbox_messages: n,
        }
    }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(|_| {}).await
    }

    /// Spawns with a config adjusted by `tweak` (e.g. another upload limit or database URL).
    pub async fn spawn_with(tweak: impl FnOnce(&mut api::Config)) -> TestApp {
        let mut config = test_config(&fresh_database().await).await;
        tweak(&mut config);
        Self::spawn_on(config).await
    }

    /// Spawns an api on `config` as it is: with another app's config, a second instance on
    /// the same database and container (a restarted api, or a second replica).
    pub async fn spawn_on(config: api::Config) -> TestApp {
        api::migrate(&config).await.expect("migrations apply");
        let state = api::state(&config).await.expect("api state builds");
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a free port");
        let base_url = format!("http://{}", listener.local_addr().expect("local addr"));
        let shutdown = CancellationToken::new();
        let blobs = state.blobs.clone();
        tokio::spawn(api::serve(
            listener,
            state,
            shutdown.clone(),
            Duration::from_secs(5),
        ));
        let db = config.database.pool().expect("pool");
        let key = api::auth::api_key::create(&db, api::auth::DEFAULT_TENANT, "test")
            .await
            .expect("create a test key")
            .secret;
        TestApp {
            base_url,
            client: authenticated_client(&key),
            key,
            db,
            config,
            blobs,
            shutdown,
        }
    }

    /// A client authenticated with a new key of `tenant`.
    pub async fn client_for(&self, tenant: &str) -> reqwest::Client {
        let key = api::auth::api_key::create(&self.db, tenant, "test")
            .await
            .expect("create a test key")
            .secret;
        authenticated_client(&key)
    }

    /// Uploads `bytes` as `name` and runs a worker until its task is COMPLETED; returns the
    /// source file's id.
    pub async fn upload_parsed(&self, name: &str, bytes: Vec<u8>) -> String {
        let resp = self.upload(name, bytes, None).await;
        assert_eq!(resp.status(), reqwest::StatusCode::ACCEPTED);
        let upload: serde_json::Value = resp.json().await.expect("upload body");
        self.run_worker_until_completed(upload["task"]["id"].as_str().expect("task id"))
            .await;
        upload["source_file"]["id"].as_str().expect("id").to_owned()
    }

    /// Runs the `api` binary with `args` (its administration commands) against this app's
    /// database.
    pub fn api_command(&self, args: &[&str]) -> std::process::Output {
        std::process::Command::new(api_exe())
            .args(args)
            .env("DATABASE_URL", &self.config.database.url)
            .env(
                "AZURE_STORAGE_CONNECTION_STRING",
                "UseDevelopmentStorage=true",
            )
            .output()
            .expect("api runs")
    }

    /// Runs a real worker (relay and consumer) beside the api until task `task_id` is
    /// COMPLETED, stops it cleanly, and returns the task as `GET /api/v1/tasks/{id}` shows it.
    pub async fn run_worker_until_completed(&self, task_id: &str) -> serde_json::Value {
        let task = self.run_worker_until_final(task_id).await;
        assert_eq!(task["status"], "COMPLETED", "{task}");
        task
    }

    /// Runs a real worker (relay and consumer) beside the api until task `task_id` is final
    /// (COMPLETED or FAILED), stops it cleanly, and returns the task as the api shows it.
    pub async fn run_worker_until_final(&self, task_id: &str) -> serde_json::Value {
        self.run_worker_with_until_final(task_id, |_| {}).await
    }

    /// [`Self::run_worker_until_final`] with the worker's settings adjusted by `tweak`.
    pub async fn run_worker_with_until_final(
        &self,
        task_id: &str,
        tweak: impl FnOnce(&mut worker::config::RunConfig),
    ) -> serde_json::Value {
        let mut tasks = self.run_worker_until_all_final(&[task_id], tweak).await;
        tasks.remove(0)
    }

    /// Runs one real worker until every task of `task_ids` is final, stops it cleanly, and
    /// returns the tasks as the api shows them, in the same order.
    pub async fn run_worker_until_all_final(
        &self,
        task_ids: &[&str],
        tweak: impl FnOnce(&mut worker::config::RunConfig),
    ) -> Vec<serde_json::Value> {
        self.run_worker_until_all_in(task_ids, &["COMPLETED", "FAILED"], tweak)
            .await
    }

    /// Runs a real worker until task `task_id` waits in NEEDS_REVIEW (or is final), stops it
    /// cleanly, and returns the task as the api shows it.
    pub async fn run_worker_until_review(&self, task_id: &str) -> serde_json::Value {
        let statuses = ["NEEDS_REVIEW", "COMPLETED", "FAILED"];
        let mut tasks = self
            .run_worker_until_all_in(&[task_id], &statuses, |_| {})
            .await;
        tasks.remove(0)
    }

    /// Runs one real worker until every task of `task_ids` has one of `statuses`, stops it
    /// cleanly, and returns the tasks as the api shows them, in the same order.
    async fn run_worker_until_all_in(
        &self,
        task_ids: &[&str],
        statuses: &[&str],
        tweak: impl FnOnce(&mut worker::config::RunConfig),
    ) -> Vec<serde_json::Value> {
        let mut cfg =
            crate::worker::run_config(&self.config.database.url, self.config.storage.clone());
        tweak(&mut cfg);
        let worker = crate::worker::RunningWorker::start(cfg);
        let mut tasks = Vec::new();
        for task_id in task_ids {
            let path = format!("/api/v1/tasks/{task_id}");
            let task = crate::worker::eventually_some(Duration::from_secs(60), "final", || async {
                let (_, task) = self.get_json(&path).await;
                task["status"]
                    .as_str()
                    .is_some_and(|s| statuses.contains(&s))
                    .then_some(task)
            })
            .await;
            tasks.push(task);
        }
        worker.stop().await;
        tasks
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// `POST /api/v1/files` with one `file` part.
    pub async fn upload(
        &self,
        file_name: &str,
        bytes: Vec<u8>,
        key: Option<&str>,
    ) -> reqwest::Response {
        let part = reqwest::multipart::Part::bytes(bytes).file_name(file_name.to_owned());
        let form = reqwest::multipart::Form::new().part("file", part);
        let mut req = self.client.post(self.url("/api/v1/files")).multipart(form);
        if let Some(key) = key {
            req = req.header("Idempotency-Key", key);
        }
        req.send().await.expect("upload request completes")
    }

    /// `POST /api/v1/files` with text parts (`template`, `on_invalid`) before the `file` part.
    pub async fn upload_with(
        &self,
        file_name: &str,
        bytes: Vec<u8>,
        fields: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut form = reqwest::multipart::Form::new();
        for (name, value) in fields {
            form = form.text(name.to_string(), value.to_string());
        }
        let part = reqwest::multipart::Part::bytes(bytes).file_name(file_name.to_owned());
        let form = form.part("file", part);
        self.client
            .post(self.url("/api/v1/files"))
            .multipart(form)
            .send()
            .await
            .expect("upload request completes")
    }

    /// `PUT path` with a JSON body → status and JSON body.
    pub async fn put_json(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        self.send_json(reqwest::Method::PUT, path, body).await
    }

    /// `PATCH path` with a JSON body → status and JSON body.
    pub async fn patch_json(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        self.send_json(reqwest::Method::PATCH, path, body).await
    }

    /// `method path` with a JSON body → status and JSON body (null when it has none).
    async fn send_json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &serde_json::Value,
    ) -> (reqwest::StatusCode, serde_json::Value) {
        let resp = self
            .client
            .request(method.clone(), self.url(path))
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path} completes: {e}"));
        let status = resp.status();
        (status, resp.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// `GET path` → status and body text.
    pub async fn get_text(&self, path: &str) -> (reqwest::StatusCode, String) {
        let resp = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("GET completes");
        let status = resp.status();
        (status, resp.text().await.expect("body"))
    }

    /// `GET path` → status and JSON body.
    pub async fn get_json(&self, path: &str) -> (reqwest::StatusCode, serde_json::Value) {
        let resp = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("GET completes");
        let status = resp.status();
        (status, resp.json().await.unwrap_or(serde_json::Value::Null))
    }

    pub async fn upload_rows(&self) -> UploadRows {
        let count = |table: &'static str| {
            let db = self.db.clone();
            async move {
                sqlx::query_scalar::<_, i64>(&format!("SELECT count(*) FROM {table}"))
                    .fetch_one(&db)
                    .await
                    .expect("count rows")
            }
        };
        UploadRows {
            source_files: count("source_files").await,
            tasks: count("tasks").await,
            outbox_messages: count("outbox_messages").await,
        }
    }

    /// Every blob in this app's container.
    pub async fn blob_names(&self) -> Vec<String> {
        self.blobs.list_names().await.expect("list blobs")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A client that sends `Authorization: Bearer <key>` with every request.
pub fn authenticated_client(key: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {key}").parse().expect("header value"),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .expect("client builds")
}

/// An api config for `database_url` with fresh container and queue names.
pub async fn test_config(database_url: &str) -> api::Config {
    let services = services().await;
    api::Config {
        database: DatabaseConfig::new(database_url),
        storage: StorageConfig::from_connection_string(
            services.storage_connection_string.clone(),
            unique_name("uploads"),
            unique_name("parse-tasks"),
        ),
        telemetry: TelemetryConfig::logs_only(),
        entra: EntraConfig::disabled(),
        http: HttpConfig::default(),
        events: api::config::EventsConfig::default(),
        webhooks: test_webhooks_config(),
        limits: api::config::LimitsConfig::default(),
        resumable: api::config::ResumableConfig::default(),
        listen_addr: "127.0.0.1:0".parse().expect("socket address"),
        metrics_addr: Some("127.0.0.1:0".parse().expect("socket address")),
        max_upload_bytes: TEST_MAX_UPLOAD_BYTES,
        shutdown_grace: Duration::from_secs(5),
    }
}

pub use crate::binaries::api_exe;

/// The api's webhook settings in tests: a fixed sealing key (the worker of
/// [`crate::worker::run_config`] has the same), and private networks allowed, so that receivers
/// on loopback can be registered.
pub fn test_webhooks_config() -> api::config::WebhooksConfig {
    api::config::WebhooksConfig {
        keys: crate::worker::test_webhook_keys(),
        ..api::config::WebhooksConfig::default()
    }
}

/// The status and `error.code` of an error answer (which must be the contract's JSON body).
pub async fn code_of(resp: reqwest::Response) -> (reqwest::StatusCode, String) {
    let status = resp.status();
    let body: serde_json::Value = resp.json().await.expect("a JSON error");
    (
        status,
        body["error"]["code"].as_str().unwrap_or("").to_owned(),
    )
}
