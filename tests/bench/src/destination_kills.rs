//! Part of the destinations scenario: the file delivered again as row webhooks while the
//! receiver goes away `kills` times, spread over the delivery: every other time it stops
//! listening (connections refused) and comes back 300 ms later, the others it answers one
//! request `503`. The worker retries on a short `WEBHOOK_RETRY_SCHEDULE`. Checked: every chunk
//! 1..n arrived, in order (each request is the chunk before it again or the next one: the resume
//! point is exact), every repeat of a chunk carries the same `webhook-id` and body, and the
//! chunks' rows add up to the file's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use harness::receiver::{Answer, Receiver};
use harness::worker::WorkerEnv;
use shared::db;
use shared::db::destination_deliveries::Redelivery;
use uuid::Uuid;

use crate::report::Run;

/// The worker's retry schedule for this part: a receiver that comes back is tried again soon.
pub const RETRY_SCHEDULE: &str = "100ms,200ms,400ms,800ms,1s,1s,1s,1s,1s,1s,1s,1s";

pub async fn measure(
    env: &WorkerEnv,
    (tenant, file, rows): (&str, Uuid, u64),
    dest: Uuid,
    receiver: &Receiver,
    kills: usize,
) -> anyhow::Result<Run> {
    let chunks = rows.div_ceil(u64::from(crate::destinations::CHUNK.unsigned_abs())) as usize;
    let before = receiver.received().len();
    let t0 = Instant::now();
    let queued = db::destination_deliveries::redeliver(&env.db, tenant, dest, file).await?;
    ensure!(queued == Redelivery::Queued, "{queued:?}");
    let step = chunks / (kills + 1);
    for k in 0..kills {
        let at = before + (k + 1) * step;
        let deadline = Instant::now() + Duration::from_secs(600);
        while receiver.received().len() < at {
            ensure!(
                Instant::now() < deadline,
                "the delivery stalled before kill {k}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if k % 2 == 0 {
            receiver.stop();
            tokio::time::sleep(Duration::from_millis(300)).await;
            receiver.restart().await;
        } else {
            receiver.script(vec![Answer::Status(503)], Answer::Status(200));
        }
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
    let got = receiver.received();
    let got = &got[before..];
    let (repeats, delivered_rows) = check(got, chunks)?;
    let mut run = Run::default();
    run.put("kills", "", kills as f64);
    run.put("killed_rows_lost", "rows", (rows - delivered_rows) as f64);
    run.put("killed_chunks_repeated", "chunks", repeats as f64);
    run.put("killed_rows_per_s", "rows/s", rows as f64 / seconds);
    Ok(run)
}

/// Checks the requests of one delivery: every chunk, in order, repeats alike. The repeats, and
/// the rows of the distinct chunks.
fn check(got: &[harness::receiver::Received], chunks: usize) -> anyhow::Result<(usize, u64)> {
    let mut seen: HashMap<u64, (String, bytes::Bytes)> = HashMap::new();
    let (mut last, mut repeats, mut rows) = (0u64, 0usize, 0u64);
    for r in got {
        let body = r.json();
        let chunk = body["chunk"].as_u64().context("a chunk number")?;
        ensure!(
            chunk == last || chunk == last + 1,
            "chunk {chunk} after chunk {last}: the resume point is not exact"
        );
        let id = r.header("webhook-id").to_owned();
        match seen.get(&chunk) {
            Some((first_id, first_body)) => {
                ensure!(
                    *first_id == id,
                    "chunk {chunk} again with another webhook-id"
                );
                ensure!(
                    *first_body == r.body,
                    "chunk {chunk} again with another body"
                );
                repeats += 1;
            }
            None => {
                rows += body["rows"].as_array().map_or(0, Vec::len) as u64;
                seen.insert(chunk, (id, r.body.clone()));
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
