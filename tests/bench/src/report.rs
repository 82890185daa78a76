//! Results: each scenario run yields named metrics; runs of one scenario are folded into a median
//! with min–max, checked against the targets ([`TARGETS`]), printed as a table and written as JSON.

use std::time::Duration;

use serde::Serialize;

/// Which way a target points.
#[derive(Debug, Clone, Copy, Serialize)]
pub enum Cmp {
    AtLeast,
    AtMost,
}

/// The target of each scenario's headline metrics (the table in `BENCHMARKS.md`), by scenario and
/// metric key.
const TARGETS: &[(&str, &str, Cmp, f64)] = &[
    ("relay-throughput", "ratio_to_ceiling", Cmp::AtLeast, 0.80),
    ("relay-latency", "p50_ms", Cmp::AtMost, 20.0),
    ("relay-latency", "p99_ms", Cmp::AtMost, 200.0),
    // Every message sent arrives (a relay held back by the fair share would leave some behind).
    ("relay-latency", "missing", Cmp::AtMost, 0.0),
    ("upload", "uploads_per_s", Cmp::AtLeast, 300.0),
    ("upload", "p99_ms", Cmp::AtMost, 150.0),
    ("upload-1gib", "api_rss_growth_mb", Cmp::AtMost, 50.0),
    // A resumable upload: flat api memory, and within 15 % of one multipart request.
    ("tus", "api_rss_growth_mb", Cmp::AtMost, 50.0),
    ("tus", "tus_vs_multipart", Cmp::AtLeast, 0.85),
    ("e2e", "tasks_per_s", Cmp::AtLeast, 100.0),
    // Tracing and progress cost no more than a few percent of throughput.
    ("telemetry-overhead", "e2e.cost_pct", Cmp::AtMost, 5.0),
    ("telemetry-overhead", "parse.cost_pct", Cmp::AtMost, 5.0),
    ("e2e", "steady_p50_ms", Cmp::AtMost, 500.0),
    ("e2e", "not_completed", Cmp::AtMost, 0.0),
    // Put Blob, Put Message, Delete Message, and a share of a batched Get Messages.
    ("e2e", "storage_requests_per_task", Cmp::AtMost, 4.0),
    (
        "parse",
        "csv_utf8.inproc_rows_per_s",
        Cmp::AtLeast,
        2_000_000.0,
    ),
    (
        "parse",
        "csv_utf8.isolated_rows_per_s",
        Cmp::AtLeast,
        2_000_000.0,
    ),
    (
        "parse",
        "csv_sjis.inproc_rows_per_s",
        Cmp::AtLeast,
        1_500_000.0,
    ),
    (
        "parse",
        "csv_sjis.isolated_rows_per_s",
        Cmp::AtLeast,
        1_500_000.0,
    ),
    (
        "parse",
        "csv_utf8.isolated_child_peak_rss_mb",
        Cmp::AtMost,
        150.0,
    ),
    (
        "parse",
        "csv_1gb.isolated_child_peak_rss_mb",
        Cmp::AtMost,
        150.0,
    ),
    (
        "parse",
        "csv_utf8.store_rows_per_s",
        Cmp::AtLeast,
        250_000.0,
    ),
    (
        "parse",
        "csv_utf8.store_worker_peak_rss_mb",
        Cmp::AtMost,
        150.0,
    ),
    ("parse", "xlsx.inproc_rows_per_s", Cmp::AtLeast, 200_000.0),
    ("parse", "xlsx.isolated_rows_per_s", Cmp::AtLeast, 200_000.0),
    (
        "parse",
        "xlsx.isolated_child_peak_rss_mb",
        Cmp::AtMost,
        100.0,
    ),
    ("parse", "xlsx.store_rows_per_s", Cmp::AtLeast, 100_000.0),
    ("parse", "ods.isolated_rows_per_s", Cmp::AtLeast, 100_000.0),
    ("parse", "xls.isolated_rows_per_s", Cmp::AtLeast, 250_000.0),
    ("export", "csv_rows_per_s", Cmp::AtLeast, 1_000_000.0),
    ("export", "ndjson_rows_per_s", Cmp::AtLeast, 1_000_000.0),
    ("export", "parquet_rows_per_s", Cmp::AtLeast, 1_000_000.0),
    // Flat: the 1M-row CSV export is 125 MiB, so an api that held it would grow by that much.
    ("export", "api_rss_growth_mb", Cmp::AtMost, 20.0),
    ("scale-out", "duplicates", Cmp::AtMost, 0.0),
    // Checking every row against a template costs at most 15 % of a parse + store's throughput.
    ("templates", "csv.template_ratio_pct", Cmp::AtLeast, 85.0),
    ("templates", "xlsx.template_ratio_pct", Cmp::AtLeast, 85.0),
    // Transforms on every field cost at most 15 % of a templated parse + store.
    ("templates", "csv.transforms_ratio_pct", Cmp::AtLeast, 85.0),
    // A unique key's fingerprints stay within the parse child's PARSE_MEMORY_LIMIT (1 GiB), and
    // the worker, which only streams rows to Postgres, within the bound it has everywhere else.
    (
        "templates",
        "csv_unique_big.store_child_peak_rss_mb",
        Cmp::AtMost,
        1024.0,
    ),
    (
        "templates",
        "csv_unique_big.store_worker_peak_rss_mb",
        Cmp::AtMost,
        150.0,
    ),
    // After kill -9 of a worker mid-work, every task it held is terminal within 10 s.
    ("jobs", "rescue_p99_s", Cmp::AtMost, 10.0),
    ("jobs", "rescue_not_completed_once", Cmp::AtMost, 0.0),
    // Commit → first webhook request at 100 tasks/s.
    ("events", "p50_ms", Cmp::AtMost, 100.0),
    ("events", "p99_ms", Cmp::AtMost, 1000.0),
    ("events", "lost", Cmp::AtMost, 0.0),
    ("events", "outage.lost", Cmp::AtMost, 0.0),
    // One endpoint that never answers beside a healthy one.
    (
        "events",
        "slow_endpoint.healthy_p99_rise_pct",
        Cmp::AtMost,
        20.0,
    ),
    // Delivery needs no Azure Storage.
    ("events", "worker_storage_requests", Cmp::AtMost, 0.0),
    // A tenant's small upload beside a neighbour's backlog, and the neighbour alone at full speed.
    ("fairness", "backlog.fair.b_p99_ms", Cmp::AtMost, 2_000.0),
    ("fairness", "streaming.fair.b_p99_ms", Cmp::AtMost, 2_000.0),
    ("fairness", "deployed.fair.b_p99_ms", Cmp::AtMost, 2_000.0),
    (
        "fairness",
        "deployed.a_throughput_fair_over_fifo_pct",
        Cmp::AtLeast,
        90.0,
    ),
    (
        "fairness",
        "backlog.a_throughput_fair_over_fifo_pct",
        Cmp::AtLeast,
        90.0,
    ),
    // Retention and a purge of 10M rows: no transaction (and so no lock) held over a second,
    // nothing left behind.
    ("purge", "retention_longest_statement", Cmp::AtMost, 1000.0),
    ("purge", "purge_longest_statement", Cmp::AtMost, 1000.0),
    ("purge", "rows_left_behind", Cmp::AtMost, 0.0),
    ("purge", "blobs_left_behind", Cmp::AtMost, 0.0),
    // Dropping a day of events holds no writer up for a second, and leaves nothing of the day.
    (
        "event-log",
        "dropped.write.during_max_ms",
        Cmp::AtMost,
        1000.0,
    ),
    (
        "event-log",
        "migration.write.during_max_ms",
        Cmp::AtMost,
        1000.0,
    ),
    ("event-log", "left_behind", Cmp::AtMost, 0.0),
    // A tenant 10 uploads a second over its rate: every excess upload refused, with its answer.
    (
        "limits",
        "flood.a_accepted_over_allowance",
        Cmp::AtMost,
        0.0,
    ),
    (
        "limits",
        "flood.a_429_without_retry_after",
        Cmp::AtMost,
        0.0,
    ),
    ("limits", "flood.a_other_answers", Cmp::AtMost, 0.0),
    // A correction re-checks its row against the whole file without reading it again.
    ("corrections", "one_correction.p99_ms", Cmp::AtMost, 200.0),
];

fn target(scenario: &str, key: &str) -> Option<(Cmp, f64)> {
    TARGETS
        .iter()
        .find(|(s, k, _, _)| *s == scenario && *k == key)
        .map(|(_, _, c, b)| (*c, *b))
}

/// One run of one scenario.
#[derive(Debug, Default, Serialize, serde::Deserialize)]
pub struct Run {
    pub metrics: Vec<(String, String, f64)>,
    pub notes: Vec<String>,
}

impl Run {
    pub fn put(&mut self, key: impl Into<String>, unit: &str, value: f64) {
        self.metrics.push((key.into(), unit.to_owned(), value));
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub fn extend(&mut self, prefix: &str, other: Run) {
        for (k, u, v) in other.metrics {
            self.put(format!("{prefix}{k}"), &u, v);
        }
        self.notes.extend(other.notes);
    }
}

#[derive(Debug, Serialize)]
pub struct Aggregate {
    pub key: String,
    pub unit: String,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: Vec<f64>,
    pub target: Option<String>,
    pub met: Option<bool>,
}

#[derive(Debug, Serialize)]
pub struct ScenarioResult {
    pub scenario: String,
    pub runs: usize,
    pub seconds: f64,
    pub metrics: Vec<Aggregate>,
    pub notes: Vec<String>,
    pub error: Option<String>,
}

/// Folds several runs of `scenario` (metric keys in first-seen order).
pub fn aggregate(scenario: &str, runs: &[Run], took: Duration) -> ScenarioResult {
    let mut keys: Vec<(String, String)> = Vec::new();
    for run in runs {
        for (k, u, _) in &run.metrics {
            if !keys.iter().any(|(kk, _)| kk == k) {
                keys.push((k.clone(), u.clone()));
            }
        }
    }
    let metrics = keys
        .into_iter()
        .map(|(key, unit)| {
            let values: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.metrics.iter().find(|(k, _, _)| *k == key).map(|m| m.2))
                .collect();
            let med = median(&values);
            let t = target(scenario, &key);
            Aggregate {
                unit,
                median: med,
                min: values.iter().copied().fold(f64::INFINITY, f64::min),
                max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                target: t.map(|(c, b)| match c {
                    Cmp::AtLeast => format!(">= {}", fmt_num(b)),
                    Cmp::AtMost => format!("<= {}", fmt_num(b)),
                }),
                met: t.map(|(c, b)| match c {
                    Cmp::AtLeast => med >= b,
                    Cmp::AtMost => med <= b,
                }),
                runs: values,
                key,
            }
        })
        .collect();
    let mut notes: Vec<String> = Vec::new();
    for n in runs.iter().flat_map(|r| &r.notes) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    ScenarioResult {
        scenario: scenario.to_owned(),
        runs: runs.len(),
        seconds: took.as_secs_f64(),
        metrics,
        notes,
        error: None,
    }
}

pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q`-quantile (0..=1) of `values` by nearest rank.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

pub fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 100_000.0 {
        let s = format!("{:.0}", x);
        // thousands separators
        let (sign, digits) = s.split_at(usize::from(s.starts_with('-')));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The table as Markdown (also what is printed).
pub fn table(results: &[ScenarioResult]) -> String {
    let mut out = String::from(
        "| scenario | metric | median | min–max | unit | target | met |\n|---|---|---:|---:|---|---|---|\n",
    );
    for r in results {
        if let Some(e) = &r.error {
            out.push_str(&format!(
                "| {} | ERROR | | | | | {} |\n",
                r.scenario,
                e.replace('|', "/").replace('\n', " ")
            ));
        }
        for m in &r.metrics {
            let range = if m.runs.len() > 1 {
                format!("{}–{}", fmt_num(m.min), fmt_num(m.max))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                r.scenario,
                m.key,
                fmt_num(m.median),
                range,
                m.unit,
                m.target.as_deref().unwrap_or(""),
                match m.met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "",
                }
            ));
        }
    }
    out
}
