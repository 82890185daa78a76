//! The `COPY` end of a hooked parse: the windows every hook answered for, in file order, into
//! `COPY` as they come (the rows the policy stores, numbered again per sheet), beginning the
//! result's transaction with the first window. What it leaves out is noted for the report: the
//! rows not stored, and the rows the hooks spoiled (kept up to the report's cap, their cells
//! placed in the file's columns once the mapping is known).
//!
//! A row into whose unique or primary-key field a hook wrote a value cannot be judged until the
//! parse has sent the whole file's key index, at its end: from that row on, the windows are
//! held in a spool instead ([`super::unique`] checks and copies them then), so the rows keep
//! their places and nothing is stored that a collision would have left out.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use anyhow::Context as _;
use shared::db;
use shared::db::validation::RejectedRow;
use shared::domain::OnInvalid;
use sqlx::{Postgres, Transaction};
use tokio::sync::mpsc;

use super::super::progress::Progress;
use super::super::store::{CopySink, Report};
use super::super::Consumer;
use super::{file_cells, Dropped};
use crate::hooks::spool::{KeyMove, Spool, SpooledRow, Tail};
use crate::hooks::Stop;
use crate::parse::isolate::EventSink as _;
use crate::parse::{ParseEvent, TemplateJob, ValidationReport};

/// A row a hook spoiled, until the mapping places its cells.
pub struct Spoiled {
    sheet: u32,
    row: u64,
    values: String,
    /// Where it is (with `keep_invalid_rows`) or would be among the sheet's stored rows.
    stored: u64,
}

impl Spoiled {
    pub fn rejected(self, validation: Option<&ValidationReport>) -> RejectedRow {
        RejectedRow {
            sheet: i32::try_from(self.sheet).unwrap_or(i32::MAX),
            row_number: i64::try_from(self.row).unwrap_or(i64::MAX),
            cells: file_cells(&self.values, validation),
            stored_index: i64::try_from(self.stored).ok(),
        }
    }
}

/// A file whose hooks wrote key values on more rows than `HOOK_MAX_KEY_WRITES`: every such row's
/// keys are held until the file's end, so their number is bounded, and the task fails with
/// `too_many_key_writes`.
#[derive(Debug, thiserror::Error)]
#[error(
    "the validation hooks wrote unique or primary-key values on more than {0} rows of this \
     file (HOOK_MAX_KEY_WRITES); each is checked against the whole file, so their number is bounded"
)]
pub struct TooManyKeyWrites(pub u64);

/// What the `COPY` came to.
#[derive(Default)]
pub struct Copied {
    /// The rows' transaction; none when no window came.
    pub tx: Option<Transaction<'static, Postgres>>,
    pub dropped: Dropped,
    /// The spoiled rows, up to the report's cap, and how many there were.
    pub spoiled: Vec<Spoiled>,
    pub spoiled_total: u64,
    /// Rows a hook made invalid that are not stored: they leave the key index.
    pub gone: HashSet<u64>,
    /// The rows whose key values a hook wrote, with their keys before and after.
    pub moves: Vec<(u64, KeyMove)>,
    /// The rows held from the first such row on, to check and copy at the end.
    pub held: Option<Tail>,
    hold: Option<Spool>,
    pub(super) places: Places,
    /// `HOOK_MAX_KEY_WRITES`: `moves` holds no more.
    max_moves: u64,
}

/// Each sheet's count of the child's rows seen, and of the rows stored.
#[derive(Default)]
pub(super) struct Places(BTreeMap<u32, (u64, u64)>);

impl Consumer {
    /// Copies the windows of `windows` until the last hook's stage ends them.
    pub(super) async fn copy_windows(
        &self,
        source_file_id: uuid::Uuid,
        mut windows: mpsc::Receiver<Vec<SpooledRow>>,
        job: &TemplateJob,
        progress: &Progress,
    ) -> Result<Copied, Stop> {
        let mut copied = Copied {
            max_moves: self.cfg.hook_max_key_writes,
            ..Copied::default()
        };
        let Some(first) = windows.recv().await else {
            return Ok(copied);
        };
        let mut tx = self.begin_result(source_file_id).await?;
        let mut next = Some(first);
        copy_rows(&mut tx, source_file_id, progress, async |sink| {
            while let Some(window) = next.take() {
                for row in window {
                    copied.take(row, sink, job)?;
                }
                sink.pause().await?;
                next = windows.recv().await;
            }
            Ok(())
        })
        .await?;
        if let Some(hold) = copied.hold.take() {
            hold.close().context("closing the held rows' spool")?;
        }
        copied.tx = Some(tx);
        Ok(copied)
    }
}

/// One `COPY` of rows into the result's transaction: `send` feeds the sink; the `COPY` is
/// aborted if it fails.
pub(super) async fn copy_rows(
    tx: &mut Transaction<'static, Postgres>,
    source_file_id: uuid::Uuid,
    progress: &Progress,
    send: impl AsyncFnOnce(&mut CopySink<'_, '_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut copy = db::rows::copy_in(tx).await.context("starting COPY")?;
    // Only rows reach this sink: the report is the parse's.
    let mut unused = Report::default();
    let mut sink = CopySink::new(source_file_id, &mut copy, progress, &mut unused);
    let sent = match send(&mut sink).await {
        Ok(()) => sink.finish().await,
        Err(e) => Err(e),
    };
    if let Err(e) = sent {
        let _ = copy.abort("the hooked rows could not be copied").await;
        return Err(e);
    }
    copy.finish().await.context("finishing COPY")?;
    Ok(())
}

impl Copied {
    /// One answered row: held from the first row with written key values on, else stored.
    fn take(
        &mut self,
        r: SpooledRow,
        sink: &mut CopySink<'_, '_>,
        job: &TemplateJob,
    ) -> anyhow::Result<()> {
        if self.hold.is_none() && r.keys.is_none() {
            return self.store(r, sink, job);
        }
        if let Some(keys) = &r.keys {
            if self.moves.len() as u64 >= self.max_moves {
                return Err(TooManyKeyWrites(self.max_moves).into());
            }
            self.moves.push((r.row, (**keys).clone()));
        }
        if r.spoiled && job.on_invalid != OnInvalid::KeepInvalidRows {
            self.gone.insert(r.row);
        }
        let hold = match &mut self.hold {
            Some(hold) => hold,
            None => {
                let (hold, held) = Spool::new().context("starting the held rows' spool")?;
                self.held = Some(held);
                self.hold.insert(hold)
            }
        };
        hold.push(&r).context("holding a row")?;
        Ok(())
    }

    /// One row: stored if the policy stores it, else noted as dropped; noted as spoiled when a
    /// hook made it invalid.
    pub(super) fn store(
        &mut self,
        r: SpooledRow,
        sink: &mut CopySink<'_, '_>,
        job: &TemplateJob,
    ) -> anyhow::Result<()> {
        let (child, stored) = self.places.0.entry(r.sheet).or_default();
        if job.on_invalid == OnInvalid::KeepInvalidRows || r.valid() {
            sink.event(ParseEvent::Row {
                sheet: r.sheet,
                index: *stored,
                values: Cow::Borrowed(&r.values),
            })?;
            *stored += 1;
        } else {
            self.dropped.entry(r.sheet).or_default().push(*child);
        }
        *child += 1;
        if r.spoiled {
            if job.on_invalid != OnInvalid::KeepInvalidRows {
                self.gone.insert(r.row);
            }
            self.spoiled_total += 1;
            if self.spoiled.len() < job.max_errors as usize {
                // With `keep_invalid_rows` its own place (one back: it was just stored).
                let stored = match job.on_invalid {
                    OnInvalid::KeepInvalidRows => stored.saturating_sub(1),
                    _ => *stored,
                };
                self.spoiled.push(Spoiled {
                    sheet: r.sheet,
                    row: r.row,
                    values: r.values,
                    stored,
                });
            }
        }
        Ok(())
    }
}
