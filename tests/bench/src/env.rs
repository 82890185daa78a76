//! The pieces every scenario needs: the release `api` and `worker` binaries (run as child
//! processes, so their CPU and memory are theirs alone), the pids of the shared Postgres and
//! Azurite (started by `harness::services` exactly as the tests start them), a fresh database and
//! fresh queue/container per run, and uploads written the way the api writes them.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use harness::worker::WorkerEnv;
use shared::db;
use tokio::process::{Child, Command};
use uuid::Uuid;

use crate::procs;

/// The directory of the bench binary: `target/release` under `cargo run --release`.
pub fn bin_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target/release"))
}

pub fn api_exe() -> PathBuf {
    bin_dir().join("api")
}

pub fn worker_exe() -> PathBuf {
    bin_dir().join("worker")
}

/// `target/bench/` (results, logs, generated data).
pub fn out_dir() -> PathBuf {
    let dir = bin_dir()
        .parent()
        .map(|t| t.join("bench"))
        .unwrap_or_else(|| PathBuf::from("target/bench"));
    let _ = std::fs::create_dir_all(dir.join("logs"));
    dir
}

/// Builds the `api` and `worker` binaries in the profile we run in (cargo run builds only us):
/// `release` for the figures of BENCHMARKS.md, any other (`trial`) for a quicker look.
pub fn build_binaries() -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let profile = match bin_dir().file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_owned(),
        Some(name) => name.to_owned(),
    };
    let mut cmd = std::process::Command::new(cargo);
    cmd.args([
        "build",
        "-p",
        "api",
        "-p",
        "worker",
        "--bins",
        "--profile",
        &profile,
    ]);
    let status = cmd.status().context("running cargo build")?;
    if !status.success() {
        eprintln!("warning: cargo build of api/worker failed; using the binaries already built");
    }
    for exe in [api_exe(), worker_exe()] {
        if !exe.is_file() {
            bail!("{} is missing", exe.display());
        }
    }
    Ok(())
}

/// The shared servers and their pids.
pub struct Stack {
    pub pg_pid: u32,
    pub azurite_pid: u32,
}

impl Stack {
    pub async fn start() -> anyhow::Result<Stack> {
        let s = harness::services::services().await;
        let queue_port: u16 = s
            .queue_endpoint
            .rsplit(':')
            .next()
            .and_then(|p| p.split('/').next())
            .and_then(|p| p.parse().ok())
            .context("queue port")?;
        let pg_pid = procs::pid_listening_on(s.pg_port).context("postgres pid (ss -ltnp)")?;
        let azurite_pid = procs::pid_listening_on(queue_port).context("azurite pid (ss -ltnp)")?;
        Ok(Stack {
            pg_pid,
            azurite_pid,
        })
    }
}

/// A fresh database (migrated), queue, poison queue and container.
pub async fn fresh_env() -> WorkerEnv {
    WorkerEnv::new().await
}

fn log_file(label: &str) -> anyhow::Result<(std::fs::File, PathBuf)> {
    let path = out_dir()
        .join("logs")
        .join(format!("{label}-{}.log", Uuid::new_v4().simple()));
    Ok((std::fs::File::create(&path)?, path))
}

/// Settings passed from the bench's own environment to the api and the worker (which otherwise
/// get production defaults): the `telemetry-overhead` scenario sets them on its measurement
/// children to turn tracing and progress on and off.
const FORWARDED: &[&str] = &[
    "OTEL_SDK_DISABLED",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "PROGRESS_INTERVAL",
    // `bench tus` with a file over the default 5 GiB.
    "RESUMABLE_MAX_UPLOAD_BYTES",
    // Another fair share than the default, for `e2e` and `fairness` alike.
    "RELAY_TENANT_IN_FLIGHT",
    // Another idle backoff of the consumer: how long an idle consumer may leave a new message.
    "IDLE_BACKOFF_MAX",
    // glibc's allocator settings, for `template-compile`'s memory with them.
    "MALLOC_ARENA_MAX",
    "GLIBC_TUNABLES",
];

fn base_command(exe: &Path, env: &WorkerEnv, label: &str) -> anyhow::Result<Command> {
    let (log, _) = log_file(label)?;
    let mut cmd = Command::new(exe);
    cmd.env_clear();
    for name in FORWARDED {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(
            "RUST_LOG",
            std::env::var("BENCH_RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .env("DATABASE_URL", &env.database_url)
        .env(
            "AZURE_STORAGE_CONNECTION_STRING",
            env.storage.connection_string.as_deref().unwrap_or_default(),
        )
        .env("QUEUE_NAME", &env.storage.queue_name)
        .env("BLOB_CONTAINER", &env.storage.blob_container)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true);
    Ok(cmd)
}

/// A `worker run` child with production defaults (plus `extra` env vars).
pub fn spawn_worker(
    env: &WorkerEnv,
    role: &str,
    drain: bool,
    extra: &[(&str, &str)],
) -> anyhow::Result<Child> {
    Ok(spawn_worker_scraped(env, role, drain, extra)?.0)
}

/// Like [`spawn_worker`], and the URL of the child's `/metrics`: each worker gets a free port as
/// its `METRICS_ADDR`, so several can run side by side.
pub fn spawn_worker_scraped(
    env: &WorkerEnv,
    role: &str,
    drain: bool,
    extra: &[(&str, &str)],
) -> anyhow::Result<(Child, String)> {
    let metrics_port = free_port()?;
    let mut cmd = base_command(&worker_exe(), env, &format!("worker-{role}"))?;
    cmd.args(["run", "--role", role])
        .env("METRICS_ADDR", format!("127.0.0.1:{metrics_port}"));
    if drain {
        cmd.arg("--drain");
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let child = cmd.spawn().context("spawning worker")?;
    Ok((child, format!("http://127.0.0.1:{metrics_port}/metrics")))
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// `sheetrelay_storage_requests_total` by `service.operation`, summed over the processes whose
/// `/metrics` are at `urls`.
pub async fn storage_requests(urls: &[String]) -> anyhow::Result<BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    for url in urls {
        let text = reqwest::get(url)
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("scraping {url}"))?
            .text()
            .await?;
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("sheetrelay_storage_requests_total{") else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let label = |name: &str| {
                labels.split(',').find_map(|kv| {
                    kv.strip_prefix(name)
                        .and_then(|v| v.strip_prefix("=\""))
                        .map(|v| v.trim_end_matches('"'))
                })
            };
            let key = format!(
                "{}.{}",
                label("service").unwrap_or("?"),
                label("operation").unwrap_or("?")
            );
            *out.entry(key).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
        }
    }
    Ok(out)
}

/// The storage requests made between two [`storage_requests`] scrapes, per task: the total and
/// each operation that was used.
pub fn storage_per_task(
    run: &mut crate::report::Run,
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    tasks: f64,
) {
    let delta =
        |k: &String| after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0);
    let total: f64 = after.keys().map(delta).sum();
    run.put("storage_requests_per_task", "req", total / tasks.max(1.0));
    for key in after.keys() {
        let d = delta(key);
        if d > 0.0 {
            run.put(format!("storage_per_task.{key}"), "req", d / tasks.max(1.0));
        }
    }
}

/// Stops a long-running child with SIGTERM and waits (so its CPU time is reaped).
pub async fn terminate(child: &mut Child) {
    if let Some(pid) = child.id() {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status();
    }
    if tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}

/// The api as a child process, and a client that authenticates with a key made for it.
pub struct ApiProcess {
    pub child: Child,
    pub pid: u32,
    pub base_url: String,
    /// Its `/metrics`.
    pub metrics_url: String,
    pub client: reqwest::Client,
}

pub async fn spawn_api(env: &WorkerEnv, max_upload_bytes: u64) -> anyhow::Result<ApiProcess> {
    let port = free_port()?;
    let metrics_port = free_port()?;
    let client = tenant_client(env, None).await?;
    let mut cmd = base_command(&api_exe(), env, "api")?;
    cmd.env("LISTEN_ADDR", format!("127.0.0.1:{port}"))
        .env("METRICS_ADDR", format!("127.0.0.1:{metrics_port}"))
        .env("MAX_UPLOAD_BYTES", max_upload_bytes.to_string())
        // The benches measure the pipeline at full speed from one tenant, not its rate limit.
        .env("UPLOAD_RATE", "1000000/s");
    let child = cmd.spawn().context("spawning api")?;
    let pid = child.id().context("api pid")?;
    let base_url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(format!("{base_url}/readyz")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        if Instant::now() > deadline {
            bail!("the api did not become ready");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(ApiProcess {
        child,
        pid,
        base_url,
        metrics_url: format!("http://127.0.0.1:{metrics_port}/metrics"),
        client,
    })
}

/// A client with a new API key of `tenant` (the default tenant when `None`), made with `api keys
/// create`.
pub async fn tenant_client(
    env: &WorkerEnv,
    tenant: Option<&str>,
) -> anyhow::Result<reqwest::Client> {
    let mut args = vec!["keys", "create", "--name", "bench"];
    if let Some(tenant) = tenant {
        args.extend(["--tenant", tenant]);
    }
    let key = api_cli(env, &args).await?;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {key}").parse()?,
    );
    Ok(reqwest::Client::builder()
        .default_headers(headers)
        .build()?)
}

/// Runs `api <args>` against `env`'s database, and returns what it printed, trimmed.
pub async fn api_cli(env: &WorkerEnv, args: &[&str]) -> anyhow::Result<String> {
    let mut cmd = base_command(&api_exe(), env, "api-cli")?;
    let out = cmd
        .args(args)
        .stdout(Stdio::piped())
        .output()
        .await
        .with_context(|| format!("running api {}", args.join(" ")))?;
    anyhow::ensure!(out.status.success(), "api {} failed", args.join(" "));
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

/// Writes a source file, its task and its outbox message in one statement, as the api does
/// (no blob: for relay measurements), naming `template` if given (a version stored by
/// [`insert_template`]). Returns the outbox message id and the task id.
pub async fn insert_upload(
    tx: &mut sqlx::PgConnection,
    blob_name: Option<&str>,
    format: &str,
    size: i64,
    template: Option<db::source_files::TemplateRef<'_>>,
) -> anyhow::Result<(Uuid, Uuid)> {
    let (task_id, file_id, outbox_id) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let default_name = format!("{file_id}/bench.{format}");
    let blob_name = blob_name.unwrap_or(&default_name);
    let sha = "0".repeat(64);
    let upload = db::uploads::NewUpload {
        file: db::source_files::NewSourceFile {
            tenant_id: TENANT,
            uploaded_by: "test",
            id: file_id,
            file_name: &format!("bench.{format}"),
            content_type: "application/octet-stream",
            format: format.parse()?,
            size_bytes: size,
            sha256: &sha,
            blob_name,
            idempotency_key: None,
            template,
            metadata: None,
            session: None,
            origin: None,
        },
        task_id,
        message_id: outbox_id,
        inline: None,
        traceparent: None,
    };
    let recorded = db::uploads::insert(&mut *tx, &upload, i64::MAX).await?;
    anyhow::ensure!(
        matches!(recorded, db::uploads::Recorded::Stored(..)),
        "no quota"
    );
    Ok((outbox_id, task_id))
}

/// Uploads the file at `path` as a new blob `<uuid>/bench.<format>` of `env`'s container: its
/// name and size.
pub async fn upload_file(
    env: &WorkerEnv,
    path: &Path,
    format: &str,
) -> anyhow::Result<(String, u64)> {
    use futures::StreamExt as _;
    let blob_name = format!("{}/bench.{format}", Uuid::now_v7());
    let f = tokio::fs::File::open(path).await?;
    let size = f.metadata().await?.len();
    let stream = tokio_util::io::ReaderStream::with_capacity(f, 1 << 20);
    env.blobs
        .upload(&blob_name, "application/octet-stream", stream.boxed())
        .await
        .map_err(|e| anyhow::anyhow!("blob upload: {e}"))?;
    Ok((blob_name, size))
}

/// The tenant [`insert_upload`] writes as.
pub const TENANT: &str = "default";

/// Stores `schema` as a new version of the template `name` of [`TENANT`], as `PUT
/// /api/v1/templates/{name}` does; returns the version.
pub async fn insert_template(
    conn: &mut sqlx::PgConnection,
    name: &str,
    schema: &serde_json::Value,
    on_invalid: &str,
    hooks: &[shared::domain::hook::Hook],
) -> anyhow::Result<i32> {
    let new = db::templates::NewTemplate {
        tenant_id: TENANT,
        name,
        schema,
        on_invalid,
        sheet: None,
        hooks,
        quota_bytes: i64::MAX,
    };
    match db::templates::put(conn, &new).await? {
        db::templates::Stored::Created(t) | db::templates::Stored::NewVersion(t) => Ok(t.version),
        db::templates::Stored::LimitReached => bail!("the tenant holds too many templates"),
        db::templates::Stored::QuotaExceeded { .. } => bail!("the template does not fit"),
    }
}

/// A task as a scenario waits for it: its status, the seconds since it started (to the moment it
/// was seen final: `finished_at` is the start of the storing transaction, so it would flatter a
/// parse), and its attempts.
pub struct Settled {
    pub status: String,
    pub secs: f64,
    pub attempts: i32,
}

/// Polls `task_id` every 20 ms until it is `COMPLETED` or `FAILED`, or `timeout` has passed
/// (then it is returned as it stands).
pub async fn await_task(
    db: &sqlx::PgPool,
    task_id: Uuid,
    timeout: Duration,
) -> anyhow::Result<Settled> {
    let deadline = Instant::now() + timeout;
    loop {
        let row: Option<(String, f64, i32)> = sqlx::query_as(
            "SELECT status::text,
                    coalesce(extract(epoch FROM clock_timestamp() - started_at)::float8, 0),
                    attempts
             FROM tasks WHERE id = $1",
        )
        .bind(task_id)
        .fetch_optional(db)
        .await?;
        let (status, secs, attempts) = row.context("task row")?;
        // A review waits for a person: settled too, so a scenario fails at once instead of
        // at its timeout.
        let resting = matches!(status.as_str(), "COMPLETED" | "FAILED" | "NEEDS_REVIEW");
        if resting || Instant::now() > deadline {
            return Ok(Settled {
                status,
                secs,
                attempts,
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn count(db: &sqlx::PgPool, sql: &str) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar::<_, i64>(sql).fetch_one(db).await?)
}

/// Per-role CPU seconds turned into seconds per 1,000 tasks.
pub fn cpu_per_1k(run: &mut crate::report::Run, cpu: &[(&'static str, f64)], tasks: f64) {
    for (label, secs) in cpu {
        run.put(
            format!("cpu_s_per_1k.{label}"),
            "s",
            secs / (tasks / 1000.0).max(1e-9),
        );
    }
}
