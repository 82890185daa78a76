//! `limits`: one tenant over its upload rate beside another uploading at a steady pace. Tenant A
//! is given its own rate (`api tenants set … --upload-rate` [`A_RATE`]/s) and sends [`A_PACE`]
//! uploads a second, 10 over it, for the phase's length; tenant B sends [`B_PACE`] a second
//! throughout. Measured: each of A's answers (accepted or `429 rate_limited` with `Retry-After`,
//! nothing else), A's accepted uploads against what its bucket allows, A's stored files against
//! its accepted uploads, the container's blobs against all files, and B's upload latency beside
//! the same B load alone (the two phases alternating from run to run, each on a fresh database
//! and container).

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use tokio::task::JoinSet;

use crate::env::{self, ApiProcess};
use crate::report::{quantile, Run};
use crate::upload::{self, small_csv};

const TENANT_A: &str = "bench-a";
const TENANT_B: &str = "bench-b";
/// A's own rate, uploads a second; the bucket also holds this many (a burst of one second).
const A_RATE: u32 = 5;
/// A's pace: 10 a second over its rate.
const A_PACE: u32 = A_RATE + 10;
/// B's pace, well under the default rate.
const B_PACE: u32 = 10;

/// What A's flood came to.
#[derive(Default)]
struct Flood {
    sent: u32,
    accepted: u32,
    rate_limited: u32,
    /// `429`s without a whole-seconds `Retry-After`.
    without_retry_after: u32,
    /// Any other answer, or no answer.
    other: u32,
}

pub async fn run(secs: u64, index: usize) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let mut order = [false, true];
    if index % 2 == 1 {
        order.reverse();
    }
    let mut p99 = [0.0_f64; 2];
    for flood in order {
        let label = if flood { "flood" } else { "alone" };
        let (b_ms, a) = phase(secs, flood).await?;
        run.put(format!("{label}.b_p50_ms"), "ms", quantile(&b_ms, 0.5));
        run.put(format!("{label}.b_p99_ms"), "ms", quantile(&b_ms, 0.99));
        p99[usize::from(flood)] = quantile(&b_ms, 0.99);
        if let Some(a) = a {
            let allowed = A_RATE as f64 * secs as f64 + A_RATE as f64;
            run.put("flood.a_sent", "req", a.sent as f64);
            run.put("flood.a_accepted", "req", a.accepted as f64);
            run.put("flood.a_rate_limited", "req", a.rate_limited as f64);
            run.put(
                "flood.a_accepted_over_allowance",
                "req",
                (a.accepted as f64 - allowed).max(0.0),
            );
            run.put(
                "flood.a_429_without_retry_after",
                "req",
                a.without_retry_after as f64,
            );
            run.put("flood.a_other_answers", "req", a.other as f64);
        }
    }
    run.put("b_p99_rise_pct", "%", (p99[1] / p99[0] - 1.0) * 100.0);
    run.note(format!(
        "limits: tenant A (upload rate {A_RATE}/s set with `api tenants set`) sends {A_PACE} 20-row CSV uploads a second for {secs} s beside tenant B sending {B_PACE} a second (flood), against B alone at the same pace (alone), alternating, each phase on a fresh database and container, no worker; allowance = {A_RATE}/s × {secs} s + a burst of {A_RATE}; every phase checks that each tenant's stored files equal its accepted uploads and that the container holds one blob per file"
    ));
    Ok(run)
}

/// One phase: B's upload latencies, and A's flood if there was one.
async fn phase(secs: u64, flood: bool) -> anyhow::Result<(Vec<f64>, Option<Flood>)> {
    let env = env::fresh_env().await;
    let mut api = env::spawn_api(&env, 100 * 1024 * 1024).await?;
    let result = async {
        let a_client = env::tenant_client(&env, Some(TENANT_A)).await?;
        let b_client = env::tenant_client(&env, Some(TENANT_B)).await?;
        let rate = format!("{A_RATE}/s");
        env::api_cli(&env, &["tenants", "set", TENANT_A, "--upload-rate", &rate]).await?;
        let length = Duration::from_secs(secs);
        let b = b_paced(&api, &b_client, length);
        let a = async {
            if flood {
                Ok(Some(a_flood(&api, &a_client, length).await?))
            } else {
                anyhow::Ok(None)
            }
        };
        let (b, a) = tokio::join!(b, a);
        let (b, a) = (b?, a?);
        let a_stored = stored(&env.db, TENANT_A).await?;
        let a_accepted = a.as_ref().map_or(0, |a| i64::from(a.accepted));
        if a_stored != a_accepted {
            bail!("tenant A has {a_stored} files stored for {a_accepted} accepted uploads");
        }
        let b_stored = stored(&env.db, TENANT_B).await?;
        if b_stored != b.len() as i64 {
            bail!(
                "tenant B has {b_stored} files stored for {} uploads",
                b.len()
            );
        }
        let blobs = env
            .blobs
            .list_names()
            .await
            .map_err(|e| anyhow::anyhow!("listing blobs: {e}"))?
            .len() as i64;
        if blobs != a_stored + b_stored {
            bail!("{blobs} blobs for {} files", a_stored + b_stored);
        }
        Ok((b, a))
    }
    .await;
    env::terminate(&mut api.child).await;
    result
}

async fn stored(db: &sqlx::PgPool, tenant: &str) -> anyhow::Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM source_files WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_one(db)
            .await?,
    )
}

/// Starts `send(i)` `per_s` times a second for `length`, each on time whatever the earlier ones
/// are doing, and returns what they came to.
async fn paced<F, Fut, T>(per_s: u32, length: Duration, mut send: F) -> anyhow::Result<Vec<T>>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let total = (length.as_secs_f64() * f64::from(per_s)) as usize;
    let every = Duration::from_secs(1) / per_s;
    let start = Instant::now();
    let mut set = JoinSet::new();
    for i in 0..total {
        tokio::time::sleep_until((start + every * i as u32).into()).await;
        set.spawn(send(i));
    }
    let mut done = Vec::with_capacity(total);
    while let Some(one) = set.join_next().await {
        done.push(one.context("an upload task")?);
    }
    Ok(done)
}

async fn b_paced(
    api: &ApiProcess,
    client: &reqwest::Client,
    length: Duration,
) -> anyhow::Result<Vec<f64>> {
    let body = small_csv();
    paced(B_PACE, length, |i| {
        let (client, base, body) = (client.clone(), api.base_url.clone(), body.clone());
        async move { upload::upload_once(&client, &base, &body, i).await }
    })
    .await?
    .into_iter()
    .collect()
}

async fn a_flood(
    api: &ApiProcess,
    client: &reqwest::Client,
    length: Duration,
) -> anyhow::Result<Flood> {
    let body = small_csv();
    let answers = paced(A_PACE, length, |i| {
        let (client, base, body) = (client.clone(), api.base_url.clone(), body.clone());
        async move { answer(&client, &base, body, i).await }
    })
    .await?;
    let mut flood = Flood::default();
    for answer in answers {
        flood.sent += 1;
        match answer {
            Answer::Accepted => flood.accepted += 1,
            Answer::RateLimited { retry_after } => {
                flood.rate_limited += 1;
                if !retry_after {
                    flood.without_retry_after += 1;
                }
            }
            Answer::Other => flood.other += 1,
        }
    }
    Ok(flood)
}

enum Answer {
    Accepted,
    RateLimited { retry_after: bool },
    Other,
}

async fn answer(client: &reqwest::Client, base: &str, body: Vec<u8>, i: usize) -> Answer {
    let part = match reqwest::multipart::Part::bytes(body)
        .file_name(format!("flood-{i}.csv"))
        .mime_str("text/csv")
    {
        Ok(part) => part,
        Err(_) => return Answer::Other,
    };
    let form = reqwest::multipart::Form::new().part("file", part);
    let Ok(resp) = client
        .post(format!("{base}/api/v1/files"))
        .multipart(form)
        .send()
        .await
    else {
        return Answer::Other;
    };
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.parse::<u64>().is_ok());
    let code = resp
        .json::<serde_json::Value>()
        .await
        .ok()
        .and_then(|b| b["error"]["code"].as_str().map(str::to_owned));
    match status.as_u16() {
        202 => Answer::Accepted,
        429 if code.as_deref() == Some("rate_limited") => Answer::RateLimited { retry_after },
        _ => Answer::Other,
    }
}
