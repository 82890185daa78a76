//! Scenario 5: parsing. Parse-only runs happen in a fresh child process of this binary
//! (`bench __parse inproc|isolated <file> <format>`), so the peak RSS measured is the parser's
//! alone: `inproc` calls [`worker::parse::parse_file`] on one thread; `isolated` calls
//! [`worker::parse::isolate::parse_isolated`], which runs the real `worker parse-child` (the
//! consumer's path, framing and all). Parse + store uploads the file and lets a `worker run`
//! child take it through the whole consumer path (download, isolated parse, COPY into Postgres),
//! the upload naming an import template if asked (the `templates` scenario).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};
use shared::db::source_files::TemplateRef;
use worker::parse::isolate::{parse_isolated, Isolation};
use worker::parse::{parse_file, FileFormat, ParseEvent, ParseLimits};

use crate::env::{self, Stack};
use crate::gen;
use crate::procs::{self, PeakSampler, MB};
use crate::report::Run;

#[derive(Debug, Serialize, Deserialize)]
pub struct ParseOutcome {
    pub rows: u64,
    pub secs: f64,
    /// Peak RSS of the process that ran `parse_file` (inproc) or of the consumer side (isolated).
    pub self_peak: u64,
    /// Peak RSS of the parse child (isolated only).
    pub child_peak: u64,
    pub error: Option<String>,
}

/// The hidden `__parse` subcommand: runs one parse and prints a [`ParseOutcome`] as JSON.
pub fn child_main(args: &[String]) -> anyhow::Result<()> {
    let [mode, path, format] = args else {
        bail!("usage: bench __parse inproc|isolated <file> <format>");
    };
    let format = format.parse::<FileFormat>().context("format")?;
    let path = Path::new(path);
    let limits = ParseLimits::default();
    let mut rows = 0u64;
    let t0 = Instant::now();
    let (result, child_peak) = match mode.as_str() {
        "inproc" => {
            let r = parse_file(path, format, &limits, &mut |ev| {
                if let ParseEvent::Row { .. } = ev {
                    rows += 1;
                }
                Ok(())
            });
            (r.map(|_| ()).map_err(|e| format!("{e:?}")), 0)
        }
        "isolated" => {
            let sampler = PeakSampler::start(std::process::id());
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let iso = Isolation::new(env::worker_exe(), limits);
            let r = rt.block_on(parse_isolated(&iso, path, format, |ev| {
                if let ParseEvent::Row { .. } = ev {
                    rows += 1;
                }
                Ok(())
            }));
            let peaks = sampler.finish();
            let r = match r {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(f)) => Err(format!("{f:?}")),
                Err(e) => Err(format!("{e:#}")),
            };
            (r, peaks.max_child(std::process::id()))
        }
        other => bail!("unknown mode {other}"),
    };
    let secs = t0.elapsed().as_secs_f64();
    let (_, self_peak) = procs::rss(std::process::id()).unwrap_or_default();
    let out = ParseOutcome {
        rows,
        secs,
        self_peak,
        child_peak,
        error: result.err(),
    };
    #[allow(clippy::print_stdout)]
    {
        println!("{}", serde_json::to_string(&out)?);
    }
    Ok(())
}

/// Runs `bench __parse <mode> <file> <format>` and reads its outcome.
async fn parse_in_child(mode: &str, file: &Path, format: &str) -> anyhow::Result<ParseOutcome> {
    let exe = std::env::current_exe()?;
    let out = tokio::process::Command::new(exe)
        .arg("__parse")
        .arg(mode)
        .arg(file)
        .arg(format)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Not `output()`: tokio's pipes stderr too, which would hide the child's panics.
        .spawn()?
        .wait_with_output()
        .await?;
    if !out.status.success() {
        bail!("parse child failed: {}", out.status);
    }
    let outcome: ParseOutcome = serde_json::from_slice(&out.stdout).context("parse outcome")?;
    if let Some(e) = &outcome.error {
        bail!("{mode} parse of {} failed: {e}", file.display());
    }
    Ok(outcome)
}

/// Sizes of one parse run.
pub struct Sizes {
    pub csv_rows: u64,
    pub xlsx_rows: u64,
    pub ods_rows: u64,
    pub xls_rows: u64,
    pub xlsb_rows: u64,
    /// Rows of the ~1 GB CSV (0: skipped).
    pub big_csv_rows: u64,
    pub store: bool,
}

/// Parse-only figures of one file.
async fn parse_only(
    run: &mut Run,
    label: &str,
    file: &Path,
    format: &str,
    expect: u64,
) -> anyhow::Result<()> {
    for mode in ["inproc", "isolated"] {
        let o = parse_in_child(mode, file, format).await?;
        if o.rows != expect {
            bail!("{label} {mode}: {} rows parsed, {expect} expected", o.rows);
        }
        run.put(
            format!("{label}.{mode}_rows_per_s"),
            "rows/s",
            o.rows as f64 / o.secs,
        );
        if mode == "inproc" {
            run.put(
                format!("{label}.inproc_peak_rss_mb"),
                "MB",
                o.self_peak as f64 / MB,
            );
        } else {
            run.put(
                format!("{label}.isolated_child_peak_rss_mb"),
                "MB",
                o.child_peak as f64 / MB,
            );
            run.put(
                format!("{label}.isolated_parent_peak_rss_mb"),
                "MB",
                o.self_peak as f64 / MB,
            );
        }
    }
    Ok(())
}

pub async fn run(stack: &Stack, sizes: &Sizes) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let utf8 = gen::csv(sizes.csv_rows, false)?;
    let sjis = gen::csv(sizes.csv_rows, true)?;
    let xlsx = gen::xlsx(sizes.xlsx_rows)?;
    let ods = gen::ods(sizes.ods_rows)?;
    let xls = gen::xls(sizes.xls_rows)?;
    let xlsb = gen::xlsb(sizes.xlsb_rows)?;
    let size = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.len() as f64 / MB)
            .unwrap_or(0.0)
    };
    run.note(format!(
        "parse: csv {} rows ({:.0} MiB UTF-8, {:.0} MiB Shift_JIS), xlsx {} rows ({:.0} MiB), ods {} rows ({:.0} MiB), xls {} rows ({:.0} MiB, BIFF8's largest sheet), xlsb {} rows ({:.0} MiB, shared strings and date formats as Excel writes them)",
        sizes.csv_rows, size(&utf8), size(&sjis), sizes.xlsx_rows, size(&xlsx), sizes.ods_rows, size(&ods), sizes.xls_rows, size(&xls), sizes.xlsb_rows, size(&xlsb)
    ));
    parse_only(&mut run, "csv_utf8", &utf8, "csv", sizes.csv_rows).await?;
    parse_only(&mut run, "csv_sjis", &sjis, "csv", sizes.csv_rows).await?;
    parse_only(&mut run, "xlsx", &xlsx, "xlsx", sizes.xlsx_rows).await?;
    parse_only(&mut run, "ods", &ods, "ods", sizes.ods_rows).await?;
    parse_only(&mut run, "xls", &xls, "xls", sizes.xls_rows).await?;
    parse_only(&mut run, "xlsb", &xlsb, "xlsb", sizes.xlsb_rows).await?;
    if sizes.big_csv_rows > 0 {
        let big = gen::csv(sizes.big_csv_rows, false)?;
        let o = parse_in_child("isolated", &big, "csv").await?;
        run.put("csv_1gb.size_mib", "MiB", size(&big));
        run.put(
            "csv_1gb.isolated_rows_per_s",
            "rows/s",
            o.rows as f64 / o.secs,
        );
        run.put(
            "csv_1gb.isolated_child_peak_rss_mb",
            "MB",
            o.child_peak as f64 / MB,
        );
    }
    if sizes.store {
        store(
            stack,
            &mut run,
            "csv_utf8",
            &utf8,
            "csv",
            sizes.csv_rows,
            None,
        )
        .await?;
        store(
            stack,
            &mut run,
            "xlsx",
            &xlsx,
            "xlsx",
            sizes.xlsx_rows,
            None,
        )
        .await?;
    }
    Ok(run)
}

/// Parse + store of the `rows`-row UTF-8 CSV alone (the `telemetry-overhead` scenario's parse).
pub async fn store_csv(stack: &Stack, rows: u64) -> anyhow::Result<Run> {
    let mut run = Run::default();
    let csv = gen::csv(rows, false)?;
    store(stack, &mut run, "csv_utf8", &csv, "csv", rows, None).await?;
    Ok(run)
}

/// The template an upload names in [`store`], and what its task must report.
pub struct Templated<'a> {
    /// The Frictionless Table Schema, stored as the template's only version.
    pub schema: &'a serde_json::Value,
    /// The rows it finds valid, which are the rows stored (the upload drops invalid ones).
    pub rows_valid: u64,
    /// The errors it finds in all.
    pub errors_total: u64,
}

/// What [`store`] measured, besides what it put in the run.
pub struct Stored {
    pub rows_per_s: f64,
    pub worker_peak: u64,
    pub child_peak: u64,
}

/// Parse + store through the consumer: upload the blob, commit the upload (naming `template`'s
/// schema if given), run a worker until the task is final. Rows/s over the task's `finished_at −
/// started_at` (download + parse + validation + COPY), `rows` being the data rows of the file.
/// The task must be `COMPLETED` at its first attempt with the rows expected stored and, with a
/// template, the validation counts and error records expected.
pub async fn store(
    stack: &Stack,
    run: &mut Run,
    label: &str,
    file: &Path,
    format: &str,
    rows: u64,
    template: Option<&Templated<'_>>,
) -> anyhow::Result<Stored> {
    // The policy under which a templated task with bad rows still completes, storing the rest.
    const ON_INVALID: &str = "drop_invalid_rows";
    const TEMPLATE_NAME: &str = "bench";
    let env = env::fresh_env().await;
    let (blob_name, size) = env::upload_file(&env, file, format).await?;
    let mut tx = env.db.begin().await?;
    let version = match template {
        Some(t) => {
            Some(env::insert_template(&mut tx, TEMPLATE_NAME, t.schema, ON_INVALID, &[]).await?)
        }
        None => None,
    };
    let template_ref = version.map(|version| TemplateRef {
        name: TEMPLATE_NAME,
        version,
        on_invalid: ON_INVALID,
    });
    let (_, task_id) =
        env::insert_upload(&mut tx, Some(&blob_name), format, size as i64, template_ref).await?;
    tx.commit().await?;

    crate::pg_statements::reset(&env.db).await?;
    let cpu = procs::CpuMeter::start(vec![
        ("postgres", vec![stack.pg_pid]),
        ("azurite", vec![stack.azurite_pid]),
    ]);
    let reaped0 = procs::reaped_children_secs();
    let mut worker = env::spawn_worker(&env, "all", false, &[])?;
    let wpid = worker.id().context("worker pid")?;
    let sampler = PeakSampler::start(wpid);
    let env::Settled {
        status,
        secs,
        attempts,
    } = env::await_task(&env.db, task_id, Duration::from_secs(900)).await?;
    let peaks = sampler.finish();
    let mut cpu = cpu.finish();
    env::terminate(&mut worker).await;
    cpu.push(("worker", procs::reaped_children_secs() - reaped0));
    crate::pg_statements::write(&env.db, &format!("store-{label}"), rows as f64 / 1e6).await?;
    if status != "COMPLETED" {
        let err: Option<String> =
            sqlx::query_scalar("SELECT error_message FROM tasks WHERE id = $1")
                .bind(task_id)
                .fetch_optional(&env.db)
                .await?
                .flatten();
        bail!("{label} parse+store ended {status}: {err:?}");
    }
    let stored = env::count(
        &env.db,
        "SELECT coalesce(sum(row_count), 0)::bigint FROM parsed_row_chunks",
    )
    .await?;
    let expect = template.map_or(rows, |t| t.rows_valid);
    if stored as u64 != expect || attempts != 1 {
        bail!("{label}: {stored} rows stored ({expect} expected), attempts {attempts}");
    }
    if let Some(t) = template {
        check_validation(&env.db, run, label, task_id, rows, t).await?;
    }
    let measured = Stored {
        rows_per_s: rows as f64 / secs,
        worker_peak: peaks.of(wpid),
        child_peak: peaks.max_child(wpid),
    };
    run.put(
        format!("{label}.store_rows_per_s"),
        "rows/s",
        measured.rows_per_s,
    );
    run.put(
        format!("{label}.store_worker_peak_rss_mb"),
        "MB",
        measured.worker_peak as f64 / MB,
    );
    run.put(
        format!("{label}.store_child_peak_rss_mb"),
        "MB",
        measured.child_peak as f64 / MB,
    );
    for (role, s) in cpu {
        run.put(
            format!("{label}.store_cpu_s_per_1m_rows.{role}"),
            "s",
            s / (rows as f64 / 1e6),
        );
    }
    Ok(measured)
}

/// Checks a templated task's `result.validation` and its stored error records against what
/// `template` says the file holds: exact counts whatever the cap, and records up to the worker's
/// `VALIDATION_MAX_ERRORS` (its default: the bench's worker runs with production defaults).
async fn check_validation(
    db: &sqlx::PgPool,
    run: &mut Run,
    label: &str,
    task_id: uuid::Uuid,
    rows: u64,
    template: &Templated<'_>,
) -> anyhow::Result<()> {
    let cap = u64::from(worker::config::ConsumerConfig::default().validation_max_errors);
    let (validation, records): (Option<serde_json::Value>, i64) = sqlx::query_as(
        "SELECT t.result -> 'validation',
                (SELECT count(*) FROM validation_errors e WHERE e.source_file_id = t.source_file_id)
         FROM tasks t WHERE t.id = $1",
    )
    .bind(task_id)
    .fetch_one(db)
    .await?;
    let v = validation.with_context(|| format!("{label}: the task's result has no validation"))?;
    let number = |key: &str| v.get(key).and_then(serde_json::Value::as_u64);
    let rejected = rows
        .checked_sub(template.rows_valid)
        .with_context(|| format!("{label}: more valid rows than rows"))?;
    let found = (
        number("rows_valid"),
        number("rows_rejected"),
        number("errors_total"),
        v.get("errors_truncated")
            .and_then(serde_json::Value::as_bool),
        records as u64,
    );
    let expected = (
        Some(template.rows_valid),
        Some(rejected),
        Some(template.errors_total),
        Some(template.errors_total > cap),
        template.errors_total.min(cap),
    );
    if found != expected {
        bail!(
            "{label}: (rows_valid, rows_rejected, errors_total, errors_truncated, error records) \
             {found:?}, {expected:?} expected"
        );
    }
    run.put(format!("{label}.rows_rejected"), "rows", rejected as f64);
    run.put(
        format!("{label}.errors_total"),
        "err",
        template.errors_total as f64,
    );
    run.put(
        format!("{label}.error_records_stored"),
        "err",
        records as f64,
    );
    Ok(())
}
