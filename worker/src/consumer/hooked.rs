//! The parse of a file whose template has validation hooks ([`crate::hooks`]): the child's rows
//! go to a spool instead of `COPY`, the hooks' stages read it while it fills, and each window of
//! rows is copied as soon as every hook answered for it, so the parse, the hooks and the store
//! run at once. The result's transaction is begun when the first window is answered (none is
//! held open while a hook fails its first batch). The price of the overlap: a batch retried
//! later keeps the transaction and its `COPY` open meanwhile (up to `HOOK_RETRY_FOR` a batch),
//! as a long parse keeps its own open up to `PARSE_TIMEOUT`; the maintenance's DDL on the row
//! store waits for no lock longer than its `lock_timeout`. What the hooks changed reaches the rest of the
//! result here: the rows they made invalid are left out under `drop_invalid_rows` and
//! `reject_file` (the sheet's row count and the stored positions of the report's rejected rows
//! follow) and join the rejected rows with their cells in the file's columns.
//!
//! Which outcome wins is as if the phases ran one after the other: a file that cannot be
//! parsed, or whose mapping needs a person, ends so (the hooks are dropped at once); a hook that
//! is unavailable fails the task only once the parse ended well.

use std::collections::BTreeMap;
use std::ops::ControlFlow::{self, Break, Continue};

use anyhow::Context as _;
use shared::db::validation::RejectedRow;
use shared::domain::TaskErrorCode;
use tokio::sync::mpsc;
use tracing::Instrument as _;

use super::finish::Ending;
use super::progress::Progress;
use super::store::Report;
use super::work::{rejects_file, Fetched, Parsed, Template};
use super::Consumer;
use crate::hooks::spool::{Spool, SpooledRow};
use crate::hooks::{self, Stop, Unavailable};
use crate::parse::faults::Faults;
use crate::parse::isolate::{self, EventSink};
use crate::parse::{LayoutOverride, ParseEvent, ParseFailure, ParseSummary, ValidationReport};

mod copy;
mod unique;

use copy::{Copied, TooManyKeyWrites};

/// Answered windows waiting for the `COPY`.
const TO_COPY: usize = 4;

/// The parse child's events: rows (each after its origin) into the spool, published to the
/// hooks after every chunk of events, the rest into the report.
struct SpoolSink<'r> {
    spool: Option<Spool>,
    origin: Option<(u64, Faults)>,
    report: &'r mut Report,
}

impl SpoolSink<'_> {
    fn spool(&mut self) -> anyhow::Result<&mut Spool> {
        self.spool.as_mut().context("the row spool was closed")
    }
}

impl EventSink for SpoolSink<'_> {
    fn event(&mut self, event: ParseEvent<'_>) -> anyhow::Result<()> {
        match event {
            ParseEvent::Origin { row, faults } => self.origin = Some((row, faults)),
            ParseEvent::Row { sheet, values, .. } => {
                let (row, faults) = self
                    .origin
                    .take()
                    .context("the parse child sent a hooked row without its origin")?;
                self.spool()?
                    .push(&SpooledRow {
                        sheet,
                        row,
                        faults,
                        spoiled: false,
                        values: values.into_owned(),
                        keys: None,
                    })
                    .context("spooling a row")?;
            }
            other => self.report.note(other)?,
        }
        Ok(())
    }

    fn pause(&mut self) -> impl std::future::Future<Output = anyhow::Result<()>> + Send {
        let published = self
            .spool()
            .and_then(|s| s.publish().context("publishing spooled rows"));
        std::future::ready(published)
    }
}

/// How the parse ended, with the review the report got (the report is the sink's until then).
type ParseEnd = (
    Result<ParseSummary, ParseFailure>,
    Option<shared::domain::review::Review>,
);

impl Consumer {
    /// Parses a hooked template's file, asking its hooks and copying the rows they passed as
    /// the parse goes (see the module docs).
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
        let run = self.hooks.as_ref().map(|hooks| hooks::Run {
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
        });
        let compiled = match run.as_ref() {
            Some(run) => Some(hooks::compile(run).await?),
            None => None,
        };
        let mut report = Report::default();
        let (spool, tail) = Spool::new().context("starting the row spool")?;
        let mut sink = SpoolSink {
            spool: Some(spool),
            origin: None,
            report: &mut report,
        };
        let started = std::time::Instant::now();
        let parse = async {
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
            // The parse's own time, whatever the hooks still have to do.
            let rows = parsed.as_ref().ok().map(|s| s.rows_total);
            super::metrics::parsed(fetched.format, started.elapsed(), rows);
            if parsed.is_ok() {
                let spool = sink.spool.take().context("the row spool was closed")?;
                spool.close().context("closing the row spool")?;
            }
            anyhow::Ok((parsed, sink.report.review.take()))
        };
        let (to_copy, windows) = mpsc::channel(TO_COPY);
        let pipeline = async {
            let (Some(run), Some(compiled)) = (run.as_ref(), compiled.as_ref()) else {
                let why = "this worker cannot call validation hooks".to_owned();
                return Err(Stop::Unavailable(Unavailable(why)));
            };
            let copy = self.copy_windows(fetched.source_file_id, windows, job, progress);
            tokio::try_join!(
                hooks::check(run, compiled, tail, to_copy).instrument(tracing::info_span!("hooks")),
                copy
            )
        };
        let ((parsed, _), piped) = match overlap(parse, pipeline).await {
            Ok(Continue(both)) => both,
            Ok(Break((Err(failure), _))) => {
                return Ok(Break(Ending::Unparsable(failure.code, failure.message)))
            }
            Ok(Break((Ok(_), review))) => return Ok(Continue(Parsed::NeedsReview(review))),
            Err(e) => {
                let too_many = e.downcast::<TooManyKeyWrites>()?;
                let code = TaskErrorCode::TooManyKeyWrites;
                return Ok(Break(Ending::Unparsable(code, too_many.to_string())));
            }
        };
        let summary = parsed.map_err(|_| anyhow::anyhow!("a failed parse went on"))?;
        let (tallies, copied) = match piped {
            Ok(done) => done,
            Err(Stop::Unavailable(Unavailable(message))) => {
                return Ok(Break(Ending::Unparsable(
                    TaskErrorCode::HookUnavailable,
                    message,
                )));
            }
            Err(Stop::Fault(e)) => return Err(e),
        };
        let compiled = compiled.context("hooks ran without their template")?;
        let settled = self
            .settle_hooked(
                &compiled,
                job,
                progress,
                fetched,
                (summary, report, tallies, copied),
            )
            .await?;
        Ok(Continue(settled))
    }

    /// The result once the parse and the hooks are done: the held rows checked and copied, the
    /// hooks' counts and records added, the key index edited, the report settled.
    async fn settle_hooked(
        &self,
        compiled: &template::Template,
        job: &crate::parse::TemplateJob,
        progress: &Progress,
        fetched: &Fetched,
        (mut summary, mut report, tallies, mut copied): (
            ParseSummary,
            Report,
            Vec<hooks::Tally>,
            Copied,
        ),
    ) -> anyhow::Result<Parsed> {
        let mut tallies = tallies;
        if let Some(validation) = &summary.validation {
            let sheet = i32::try_from(validation.sheet).unwrap_or(i32::MAX);
            let mut merge = hooks::Merge::new(compiled, job.max_errors as usize);
            let file = (fetched.source_file_id, job, progress);
            copied
                .settle_held(&mut report.keys, sheet, &mut merge, file)
                .await?;
            tallies.push(merge.tally);
            report.keys.edit(copied.key_edits(sheet));
        }
        if let Some(validation) = summary.validation.as_mut() {
            for tally in tallies {
                let records = (&mut report.errors, &mut report.rejected);
                tally.settle(validation, records, job.max_errors as usize);
            }
        }
        let Copied {
            tx,
            dropped,
            spoiled,
            spoiled_total,
            ..
        } = copied;
        let tx = match tx {
            Some(tx) => tx,
            None => self.begin_result(fetched.source_file_id).await?,
        };
        let spoiled = spoiled
            .into_iter()
            .map(|r| r.rejected(summary.validation.as_ref()))
            .collect();
        settle_report(
            &mut summary,
            &mut report,
            &dropped,
            (spoiled, spoiled_total),
            job.max_errors,
        );
        Ok(if rejects_file(Some(job), &summary) {
            Parsed::Rejected(tx, summary, report)
        } else {
            Parsed::Rows(tx, summary, report)
        })
    }
}

/// Runs the parse and the pipeline at once. `Break` with the parse's end as soon as it failed
/// or stopped for a review (the pipeline dropped: its transaction rolls back); `Continue` with
/// both ends otherwise. A fault of either is `Err`.
async fn overlap<T>(
    parse: impl std::future::Future<Output = anyhow::Result<ParseEnd>>,
    pipeline: impl std::future::Future<Output = Result<T, Stop>>,
) -> anyhow::Result<ControlFlow<ParseEnd, (ParseEnd, Result<T, Stop>)>> {
    tokio::pin!(parse, pipeline);
    let mut parsed: Option<ParseEnd> = None;
    let mut piped: Option<Result<T, Stop>> = None;
    loop {
        if parsed.is_some() && piped.is_some() {
            if let (Some(p), Some(q)) = (parsed.take(), piped.take()) {
                return Ok(Continue((p, q)));
            }
        }
        tokio::select! {
            end = &mut parse, if parsed.is_none() => {
                let end = end?;
                if end.0.is_err() || end.1.is_some() {
                    return Ok(Break(end));
                }
                parsed = Some(end);
            }
            end = &mut pipeline, if piped.is_none() => match end {
                Err(Stop::Fault(e)) => return Err(e),
                other => piped = Some(other),
            },
        }
    }
}

/// Each sheet's rows that were left out, by their place among the child's stored rows.
type Dropped = BTreeMap<u32, Vec<u64>>;

/// The result after the hooks: rows left out leave the sheets' counts, the child's rejected
/// rows' places shift past them, the spoiled rows join the rejected ones (within the cap), and
/// the report is in file order again.
fn settle_report(
    summary: &mut ParseSummary,
    report: &mut Report,
    dropped: &Dropped,
    (spoiled, spoiled_total): (Vec<RejectedRow>, u64),
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
    if spoiled_total > room as u64 {
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
