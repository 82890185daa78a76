//! `template-compile`: the api's liveness while templates compile. Four clients `PUT` templates
//! of 1,000 string fields with patterns in a loop, as fast as the api answers, for the phase's
//! length: one of 1,000 distinct repeated Unicode classes (`\w{4}0`, `\w{4}1`, …: past the
//! template's pattern budget, refused as `422 invalid_template`), one of the same pattern on
//! every field (one compiled program, accepted), and one of 1,000 distinct code patterns
//! (`C0-[0-9]{8}`, …, accepted). Meanwhile `/healthz` is asked every 20 ms, and compared with
//! the same probes on the idle api (the two phases alternating from run to run). The api's
//! resident memory is read idle, at its peak, and 2 s after the last `PUT`.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{json, Value};

use crate::env::{self, ApiProcess};
use crate::procs::{self, MB};
use crate::report::{quantile, Run};

/// `/healthz` probes `every` apart for `length`: their latencies in ms.
async fn probes(api: &ApiProcess, length: Duration) -> anyhow::Result<Vec<f64>> {
    let every = Duration::from_millis(20);
    let client = reqwest::Client::new();
    let start = Instant::now();
    let mut ms = Vec::new();
    let mut i = 0u32;
    while start.elapsed() < length {
        tokio::time::sleep_until((start + every * i).into()).await;
        i += 1;
        let t = Instant::now();
        let resp = client
            .get(format!("{}/healthz", api.base_url))
            .send()
            .await
            .context("GET /healthz")?;
        anyhow::ensure!(resp.status().is_success(), "/healthz: {}", resp.status());
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(ms)
}

/// A template of 1,000 string fields, field `i` with `pattern(i)`.
fn template(pattern: impl Fn(usize) -> String) -> Value {
    let fields: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("f{i}"), "constraints": {"pattern": pattern(i)}}))
        .collect();
    json!({"schema": {"fields": fields}})
}

/// `PUT`s `body` as `name` until `length` is over: each answer's status and time in ms.
async fn putting(
    api: &ApiProcess,
    name: &str,
    body: &Value,
    length: Duration,
) -> anyhow::Result<Vec<(u16, f64)>> {
    let start = Instant::now();
    let mut answers = Vec::new();
    while start.elapsed() < length {
        let t = Instant::now();
        let resp = api
            .client
            .put(format!("{}/api/v1/templates/{name}", api.base_url))
            .json(body)
            .send()
            .await
            .context("PUT a template")?;
        answers.push((resp.status().as_u16(), t.elapsed().as_secs_f64() * 1e3));
    }
    Ok(answers)
}

pub async fn run(secs: u64, index: usize) -> anyhow::Result<Run> {
    let length = Duration::from_secs(secs);
    let env = env::fresh_env().await;
    let mut api = env::spawn_api(&env, 100 * 1024 * 1024).await?;
    let result = async {
        let mut run = Run::default();
        let idle_rss = procs::rss(api.pid).context("api rss")?.0;
        let mut phases = [false, true];
        if index % 2 == 1 {
            phases.reverse();
        }
        for loaded in phases {
            if !loaded {
                let ms = probes(&api, length).await?;
                run.put("idle.healthz_p50_ms", "ms", quantile(&ms, 0.5));
                run.put("idle.healthz_p99_ms", "ms", quantile(&ms, 0.99));
                continue;
            }
            let over_budget = template(|i| format!(r"\w{{4}}{i}"));
            let shared = template(|_| r"\w{4}".to_owned());
            let codes = template(|i| format!("C{i}-[0-9]{{8}}"));
            let (healthz, a, b, c, d) = tokio::join!(
                probes(&api, length),
                putting(&api, "over-budget", &over_budget, length),
                putting(&api, "over-budget-2", &over_budget, length),
                putting(&api, "shared", &shared, length),
                putting(&api, "codes", &codes, length),
            );
            let ms = healthz?;
            run.put("compiling.healthz_p50_ms", "ms", quantile(&ms, 0.5));
            run.put("compiling.healthz_p99_ms", "ms", quantile(&ms, 0.99));
            let (a, b) = (a?, b?);
            let refused: Vec<f64> = a.iter().chain(&b).filter(|(s, _)| *s == 422).map(|(_, t)| *t).collect();
            anyhow::ensure!(
                refused.len() == a.len() + b.len(),
                "every over-budget template is refused"
            );
            run.put("over_budget.refusal_p50_ms", "ms", quantile(&refused, 0.5));
            for (label, answers) in [("shared", c?), ("codes", d?)] {
                anyhow::ensure!(
                    answers.iter().all(|(s, _)| *s == 200 || *s == 201),
                    "{label}: every PUT accepted"
                );
                let times: Vec<f64> = answers.iter().map(|(_, t)| *t).collect();
                run.put(format!("{label}.put_p50_ms"), "ms", quantile(&times, 0.5));
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (after, peak) = procs::rss(api.pid).context("api rss")?;
        run.put("api_rss_idle_mib", "MiB", idle_rss as f64 / MB);
        run.put("api_rss_peak_mib", "MiB", peak as f64 / MB);
        run.put("api_rss_after_mib", "MiB", after as f64 / MB);
        run.note(format!(
            "template-compile: four clients PUT 1,000-field templates in a loop for {secs} s (two of 1,000 distinct `\\w{{4}}<i>` patterns, past the pattern budget: 422; one of `\\w{{4}}` on every field; one of 1,000 distinct `C<i>-[0-9]{{8}}`) while GET /healthz runs every 20 ms, against the same probes on the idle api (alternating); api RSS idle before, peak (VmHWM), and 2 s after the last PUT"
        ));
        Ok(run)
    }
    .await;
    env::terminate(&mut api.child).await;
    result
}
