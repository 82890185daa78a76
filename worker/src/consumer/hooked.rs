//! The parse of a file whose template has validation hooks ([`crate::hooks`]): the child's rows
//! go to a spool instead of `COPY`, the hooks are asked about them, and only then are they
//! copied, in a transaction begun after the hooks answered (none is held open while a hook is
//! retried). What the hooks changed reaches the rest of the result here: the rows they made
//! invalid are left out under `drop_invalid_rows` and `reject_file` (the sheet's row count and
//! the stored positions of the report's rejected rows follow) and join the rejected rows with
//! their cells in the file's columns.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::ControlFlow::{self, Break, Continue};

use anyhow::Context as _;
use shared::db;
use shared::db::validation::RejectedRow;
use shared::domain::{OnInvalid, TaskErrorCode};
use tracing::Instrument as _;

use super::finish::Ending;
use super::progress::Progress;
use super::store::{CopySink, Report};
use super::work::{rejects_file, Fetched, Parsed, Template};
use super::Consumer;
use crate::hooks::spool::{Spool, SpooledRow};
use crate::hooks::{self, Unavailable};
use crate::parse::isolate::{self, EventSink};
use crate::parse::{LayoutOverride, ParseEvent, ParseSummary, ValidationReport};

/// The parse child's events: rows (each after its origin) into the spool, the rest into the
/// report.
struct SpoolSink<'r> {
    spool: Spool,
    origin: Option<(u64, bool)>,
    report: &'r mut Report,
}

impl EventSink for SpoolSink<'_> {
    fn event(&mut self, event: ParseEvent<'_>) -> anyhow::Result<()> {
        match event {
            ParseEvent::Origin { row, valid } => self.origin = Some((row, valid)),
            ParseEvent::Row { sheet, values, .. } => {
                let (row, valid) = self
                    .origin
                    .take()
                    .context("the parse child sent a hooked row without its origin")?;
                self.spool
                    .push(&SpooledRow {
                        sheet,
                        row,
                        valid,
                        spoiled: false,
                        values: values.into_owned(),
                    })
                    .context("spooling a row")?;
            }
            other => self.report.note(other)?,
        }
        Ok(())
    }
}

impl Consumer {
    /// Parses a hooked template's file into a spool, asks its hooks, then copies the rows into a
    /// new transaction (see the module docs).
    pub(super) async fn parse_hooked(
        &self,
        task_id: uuid::Uuid,
        fetched: &Fetched,
        template: &Template,
        layout: Option<&LayoutOverride>,
        progress: &Progress,
    ) -> anyhow::Result<ControlFlow<Ending, Parsed>> {
        let (Some(stored), Some(job)) = (template.stored.as_ref(), template.job.as_ref()) else {
            anyhow::bail!("a hooked parse without a template");
        };
        let mut report = Report::default();
        let mut sink = SpoolSink {
            spool: Spool::new().context("starting the row spool")?,
            origin: None,
            report: &mut report,
        };
        let started = std::time::Instant::now();
        let parsed = isolate::parse_isolated_into(
            &self.isolation,
            &fetched.download,
            fetched.format,
            Some(job),
            layout,
            &mut sink,
        )
        .instrument(tracing::info_span!(
            "parse",
            format = fetched.format.as_str()
        ))
        .await?;
        let spool = sink.spool;
        let rows = parsed.as_ref().ok().map(|s| s.rows_total);
        super::metrics::parsed(fetched.format, started.elapsed(), rows);
        let mut summary = match parsed {
            Err(failure) => return Ok(Break(Ending::Unparsable(failure.code, failure.message))),
            Ok(_) if report.review.is_some() => {
                return Ok(Continue(Parsed::NeedsReview(report.review.take())))
            }
            Ok(summary) => summary,
        };
        let Some(hooks) = self.hooks.as_ref() else {
            let message = "this worker cannot call validation hooks".to_owned();
            return Ok(Break(Ending::Unparsable(
                TaskErrorCode::HookUnavailable,
                message,
            )));
        };
        let run = hooks::Run {
            hooks,
            db: &self.db,
            task_id,
            source_file_id: fetched.source_file_id,
            tenant_id: &fetched.tenant_id,
            template: stored,
            values: &job.values,
            metadata: fetched.metadata.as_ref(),
            end_user: fetched.end_user.as_ref(),
            max_errors: job.max_errors,
        };
        let spool = match summary.validation.as_mut() {
            Some(validation) => {
                match hooks::check(&run, spool, validation, &mut report.errors)
                    .instrument(tracing::info_span!("hooks"))
                    .await?
                {
                    Ok(spool) => spool,
                    Err(Unavailable(message)) => {
                        let code = TaskErrorCode::HookUnavailable;
                        return Ok(Break(Ending::Unparsable(code, message)));
                    }
                }
            }
            // Nothing was validated (no sheet had the table): no row was stored either.
            None => spool,
        };
        let mut tx = self.begin_result(fetched.source_file_id).await?;
        let mut copy = db::rows::copy_in(&mut tx).await.context("starting COPY")?;
        let mut sink = CopySink::new(fetched.source_file_id, &mut copy, progress, &mut report);
        let dropped = copy_spool(
            spool,
            &mut sink,
            job.on_invalid,
            summary.validation.as_ref(),
        )
        .await;
        let (dropped, spoiled) = match dropped {
            Ok(kept) => kept,
            Err(e) => {
                let _ = copy.abort("the hooked rows could not be copied").await;
                return Err(e);
            }
        };
        copy.finish().await.context("finishing COPY")?;
        settle_report(&mut summary, &mut report, &dropped, spoiled, job.max_errors);
        Ok(Continue(if rejects_file(Some(job), &summary) {
            Parsed::Rejected(tx, summary, report)
        } else {
            Parsed::Rows(tx, summary, report)
        }))
    }
}

/// Each sheet's rows that were left out, by their place among the child's stored rows.
type Dropped = BTreeMap<u32, Vec<u64>>;

/// Copies the rows the policy stores, numbered again per sheet: the rows left out, and the
/// rows the hooks spoiled (as rejected rows, at the place they have or would have).
async fn copy_spool(
    spool: Spool,
    sink: &mut CopySink<'_, '_>,
    on_invalid: OnInvalid,
    validation: Option<&ValidationReport>,
) -> anyhow::Result<(Dropped, Vec<RejectedRow>)> {
    let mut rows = spool.read().context("reading the row spool")?;
    let mut dropped = Dropped::new();
    let mut spoiled = Vec::new();
    let mut places: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    while let Some(r) = rows.next_row()? {
        let (child, stored) = places.entry(r.sheet).or_default();
        if r.spoiled {
            spoiled.push(RejectedRow {
                sheet: i32::try_from(r.sheet).unwrap_or(i32::MAX),
                row_number: i64::try_from(r.row).unwrap_or(i64::MAX),
                cells: file_cells(&r.values, validation),
                stored_index: i64::try_from(*stored).ok(),
            });
        }
        if on_invalid == OnInvalid::KeepInvalidRows || r.valid {
            sink.event(ParseEvent::Row {
                sheet: r.sheet,
                index: *stored,
                values: Cow::Borrowed(&r.values),
            })?;
            *stored += 1;
            sink.pause().await?;
        } else {
            dropped.entry(r.sheet).or_default().push(*child);
        }
        *child += 1;
    }
    sink.finish().await?;
    Ok((dropped, spoiled))
}

/// The result after the hooks: rows left out leave the sheets' counts, the child's rejected
/// rows' places shift past them, the spoiled rows join the rejected ones (within the cap), and
/// the report is in file order again.
fn settle_report(
    summary: &mut ParseSummary,
    report: &mut Report,
    dropped: &Dropped,
    spoiled: Vec<RejectedRow>,
    max_errors: u32,
) {
    for (sheet, rows) in dropped {
        let n = rows.len() as u64;
        if let Some(s) = summary.sheets.iter_mut().find(|s| s.index == *sheet) {
            s.rows = s.rows.saturating_sub(n);
        }
        summary.rows_total = summary.rows_total.saturating_sub(n);
    }
    for r in &mut report.rejected {
        let Some(rows) = u32::try_from(r.sheet).ok().and_then(|s| dropped.get(&s)) else {
            continue;
        };
        if let Some(place) = r.stored_index.and_then(|p| u64::try_from(p).ok()) {
            let before = rows.partition_point(|&d| d < place) as u64;
            r.stored_index = i64::try_from(place - before).ok();
        }
    }
    let room = (max_errors as usize).saturating_sub(report.rejected.len());
    if spoiled.len() > room {
        if let Some(v) = summary.validation.as_mut() {
            v.errors_truncated = true;
        }
    }
    report.rejected.extend(spoiled.into_iter().take(room));
    report.rejected.sort_by_key(|r| (r.sheet, r.row_number));
    report.errors.sort_by_key(|e| (e.sheet, e.row));
}

/// A row's values placed in the file's own columns (as the mapping found them), for the
/// rejected-rows export and for corrections.
fn file_cells(values: &str, validation: Option<&ValidationReport>) -> serde_json::Value {
    let values: Vec<serde_json::Value> = serde_json::from_str(values).unwrap_or_default();
    let Some(v) = validation else {
        return serde_json::Value::Array(values);
    };
    let mut cells = vec![serde_json::Value::Null; v.source_columns.len()];
    for (entry, value) in v.mapping.iter().zip(values) {
        if let Some(cell) = entry.column_index.and_then(|c| cells.get_mut(c)) {
            *cell = value;
        }
    }
    serde_json::Value::Array(cells)
}
