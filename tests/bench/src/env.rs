//! The pieces every scenario needs: the release `api` and `worker` binaries (run as child
//! processes, so their CPU and memory are theirs alone), the pids of the shared Postgres and
//! Azurite (started by `harness::services` exactly as the tests start them), a fresh database and
//! fresh queue/container per run, and uploads written the way the api writes them.

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

/// Builds the `api` and `worker` binaries in the profile we run in (cargo run builds only us).
pub fn build_binaries() -> anyhow::Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let release = bin_dir().ends_with("release");
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "-p", "api", "-p", "worker", "--bins"]);
    if release {
        cmd.arg("--release");
    }
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

fn base_command(exe: &Path, env: &WorkerEnv, label: &str) -> anyhow::Result<Command> {
    let (log, _) = log_file(label)?;
    let mut cmd = Command::new(exe);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
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
    let mut cmd = base_command(&worker_exe(), env, &format!("worker-{role}"))?;
    cmd.args(["run", "--role", role]);
    if drain {
        cmd.arg("--drain");
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().context("spawning worker")
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
    pub client: reqwest::Client,
}

pub async fn spawn_api(env: &WorkerEnv, max_upload_bytes: u64) -> anyhow::Result<ApiProcess> {
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port();
    let metrics_port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port();
    let mut keys = base_command(&api_exe(), env, "api-keys")?;
    let created = keys
        .args(["keys", "create", "--name", "bench"])
        .stdout(Stdio::piped())
        .output()
        .await
        .context("running api keys create")?;
    anyhow::ensure!(created.status.success(), "api keys create failed");
    let key = String::from_utf8(created.stdout)?.trim().to_owned();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        format!("Bearer {key}").parse()?,
    );
    let mut cmd = base_command(&api_exe(), env, "api")?;
    cmd.env("LISTEN_ADDR", format!("127.0.0.1:{port}"))
        .env("METRICS_ADDR", format!("127.0.0.1:{metrics_port}"))
        .env("MAX_UPLOAD_BYTES", max_upload_bytes.to_string());
    let child = cmd.spawn().context("spawning api")?;
    let pid = child.id().context("api pid")?;
    let base_url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
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
        client: reqwest::Client::builder()
            .default_headers(headers)
            .build()?,
    })
}

/// Writes a source file, its task and its outbox message in one statement, as the api does
/// (no blob: for relay measurements). Returns the outbox message id.
pub async fn insert_upload(
    tx: &mut sqlx::PgConnection,
    blob_name: Option<&str>,
    format: &str,
    size: i64,
) -> anyhow::Result<(Uuid, Uuid)> {
    let (task_id, file_id, outbox_id) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let default_name = format!("{file_id}/bench.{format}");
    let blob_name = blob_name.unwrap_or(&default_name);
    let sha = "0".repeat(64);
    let upload = db::uploads::NewUpload {
        file: db::source_files::NewSourceFile {
            tenant_id: "default",
            uploaded_by: "test",
            id: file_id,
            file_name: &format!("bench.{format}"),
            content_type: "application/octet-stream",
            format,
            size_bytes: size,
            sha256: &sha,
            blob_name,
            idempotency_key: None,
        },
        task_id,
        message_id: outbox_id,
        inline: None,
        traceparent: None,
    };
    db::uploads::insert(&mut *tx, &upload).await?;
    Ok((outbox_id, task_id))
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
