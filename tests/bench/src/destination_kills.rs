//! Part of the destinations scenario: the file delivered again as row webhooks to a receiver
//! that is a process of its own (this binary, `bench __receive`), killed with `SIGKILL` `kills`
//! times spread over the delivery and started again 300 ms later on the same port. The worker
//! retries on a short `WEBHOOK_RETRY_SCHEDULE`. The receiver appends one line per request it
//! answers to a log before answering `200` (a kill between the two is a request the worker
//! sends again), so what it saw outlives it. Checked: every chunk 1..n arrived, in order (each
//! request is the chunk before it again or the next one: the resume point is exact), every
//! repeat of a chunk carries the same `webhook-id` and body, and the chunks' rows add up to the
//! file's.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use axum::body::Bytes;
use axum::http::HeaderMap;
use harness::worker::WorkerEnv;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use shared::db;
use shared::db::destination_deliveries::Redelivery;
use uuid::Uuid;

use crate::report::Run;

/// The worker's retry schedule for this part: a receiver that comes back is tried again soon.
pub const RETRY_SCHEDULE: &str = "100ms,200ms,400ms,800ms,1s,1s,1s,1s,1s,1s,1s,1s";

/// One request the receiver answered.
#[derive(Debug, Serialize, Deserialize)]
struct Seen {
    chunk: u64,
    id: String,
    sha256: String,
    rows: u64,
}

/// The receiver process: `bench __receive <port> <log>`. Serves until it is killed.
pub fn serve(args: &[String]) -> anyhow::Result<()> {
    let port: u16 = args.first().context("__receive PORT LOG")?.parse()?;
    let log = args.get(1).context("__receive PORT LOG")?;
    let log = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)?,
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
            let log = log.clone();
            async move {
                let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let seen = Seen {
                    chunk: json["chunk"].as_u64().unwrap_or(0),
                    id: headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned(),
                    sha256: format!("{:x}", Sha256::digest(&body)),
                    rows: json["rows"].as_array().map_or(0, Vec::len) as u64,
                };
                let line = serde_json::to_string(&seen).unwrap_or_default();
                if let Ok(mut log) = log.lock() {
                    let _ = writeln!(log, "{line}");
                }
                axum::http::StatusCode::OK
            }
        });
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        axum::serve(listener, app).await?;
        anyhow::Ok(())
    })
}

/// The receiver process, from the bench's side.
pub struct KilledReceiver {
    port: u16,
    log: PathBuf,
    child: std::process::Child,
}

impl KilledReceiver {
    pub async fn start(dir: &Path) -> anyhow::Result<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let log = dir.join(format!("receiver-{port}.log"));
        let _ = std::fs::remove_file(&log);
        let child = spawn(port, &log).await?;
        Ok(Self { port, log, child })
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/rows", self.port)
    }

    /// `SIGKILL`, then a new process on the same port 300 ms later.
    async fn kill_and_restart(&mut self) -> anyhow::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.child = spawn(self.port, &self.log).await?;
        Ok(())
    }

    fn seen(&self) -> anyhow::Result<Vec<Seen>> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines()
            .map(|l| serde_json::from_str(l).context("a receiver log line"))
            .collect()
    }
}

impl Drop for KilledReceiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `bench __receive` and waits until it accepts connections.
async fn spawn(port: u16, log: &Path) -> anyhow::Result<std::process::Child> {
    let child = std::process::Command::new(std::env::current_exe()?)
        .arg("__receive")
        .arg(port.to_string())
        .arg(log)
        .stdin(Stdio::null())
        .spawn()
        .context("starting the receiver process")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        ensure!(Instant::now() < deadline, "the receiver did not listen");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(child)
}

pub async fn measure(
    env: &WorkerEnv,
    (tenant, file, rows): (&str, Uuid, u64),
    dest: Uuid,
    receiver: &mut KilledReceiver,
    kills: usize,
) -> anyhow::Result<Run> {
    let chunks = rows.div_ceil(u64::from(crate::destinations::CHUNK.unsigned_abs())) as usize;
    let t0 = Instant::now();
    let queued = db::destination_deliveries::redeliver(&env.db, tenant, dest, file).await?;
    ensure!(queued == Redelivery::Queued, "{queued:?}");
    let step = chunks / (kills + 1);
    for k in 0..kills {
        let at = (k + 1) * step;
        let deadline = Instant::now() + Duration::from_secs(600);
        while receiver.seen()?.len() < at {
            ensure!(
                Instant::now() < deadline,
                "the delivery stalled before kill {k}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        receiver.kill_and_restart().await?;
    }
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let (status, error): (String, Option<String>) = sqlx::query_as(
            "SELECT status::text, last_error FROM destination_deliveries
             WHERE destination_id = $1 AND source_file_id = $2",
        )
        .bind(dest)
        .bind(file)
        .fetch_one(&env.db)
        .await?;
        match status.as_str() {
            "DELIVERED" => break,
            "DEAD" => anyhow::bail!("the delivery died: {error:?}"),
            _ => ensure!(Instant::now() < deadline, "not delivered in 15 minutes"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let (repeats, delivered_rows) = check(&receiver.seen()?, chunks)?;
    let mut run = Run::default();
    run.put("kills", "", kills as f64);
    run.put("killed_rows_lost", "rows", (rows - delivered_rows) as f64);
    run.put("killed_chunks_repeated", "chunks", repeats as f64);
    run.put("killed_rows_per_s", "rows/s", rows as f64 / seconds);
    Ok(run)
}

/// Checks the requests of one delivery: every chunk, in order, repeats alike. The repeats, and
/// the rows of the distinct chunks.
fn check(got: &[Seen], chunks: usize) -> anyhow::Result<(usize, u64)> {
    let mut seen: HashMap<u64, (&str, &str)> = HashMap::new();
    let (mut last, mut repeats, mut rows) = (0u64, 0usize, 0u64);
    for r in got {
        let chunk = r.chunk;
        ensure!(
            chunk == last || chunk == last + 1,
            "chunk {chunk} after chunk {last}: the resume point is not exact"
        );
        match seen.get(&chunk) {
            Some((first_id, first_body)) => {
                ensure!(
                    *first_id == r.id,
                    "chunk {chunk} again with another webhook-id"
                );
                ensure!(
                    *first_body == r.sha256,
                    "chunk {chunk} again with another body"
                );
                repeats += 1;
            }
            None => {
                rows += r.rows;
                seen.insert(chunk, (&r.id, &r.sha256));
            }
        }
        last = chunk;
    }
    ensure!(
        seen.len() == chunks && last as usize == chunks,
        "{} distinct chunks of {chunks}, the last {last}",
        seen.len()
    );
    Ok((repeats, rows))
}
