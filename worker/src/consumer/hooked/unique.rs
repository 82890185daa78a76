//! Key values written by hooks, checked against the whole file once the parse has sent its key
//! index: the rows held from the first such row on ([`super::copy`]) are read back, each
//! written value is a duplicate when another row holds it (the first other holder is named, as
//! a correction names it: the value the hook wrote is the one that collides), and the rows are
//! copied in their places. A row that was a duplicate of a row whose hook took the value away
//! is decided again (the first earlier holder left: it is the first now, or the duplicate of
//! the next). Then the key index follows the hooks: rows a hook dropped hold no
//! value any more, and written values replace the old ones, so corrections read the file as
//! the hooks left it.
//!
//! Memory: the rows with written key values (their keys) and the index entries of the values
//! written or left; never the whole index.

use std::collections::{HashMap, HashSet};

use anyhow::Context as _;
use shared::domain::OnInvalid;

use super::super::keys::{KeyEdits, KeySpill};
use super::super::progress::Progress;
use super::copy::{copy_rows, Copied};
use crate::hooks::Merge;
use crate::parse::isolate::EventSink as _;
use crate::parse::TemplateJob;

impl Copied {
    /// Checks and copies the held rows (if any), with `merge` counting what it finds.
    pub(super) async fn settle_held(
        &mut self,
        keys: &mut KeySpill,
        sheet: i32,
        merge: &mut Merge<'_>,
        (source_file_id, job, progress): (uuid::Uuid, &TemplateJob, &Progress),
    ) -> anyhow::Result<()> {
        let Some(mut held) = self.held.take() else {
            return Ok(());
        };
        // Every value a row left before any is checked: two rows trading values collide with
        // neither.
        let left: HashSet<(i32, u128)> = self
            .moves
            .iter()
            .flat_map(|(_, m)| m.before.iter().filter(|k| !m.after.contains(k)).copied())
            .collect();
        let wanted: HashSet<(i32, u128)> = self
            .moves
            .iter()
            .flat_map(|(_, m)| m.after.iter().filter(|k| !m.before.contains(k)).copied())
            .chain(left.iter().copied())
            .collect();
        let mut holders = keys.holders(sheet, &wanted)?;
        let was: HashMap<(i32, u128), Vec<u64>> = left
            .iter()
            .filter_map(|k| Some((*k, holders.get(k)?.clone())))
            .collect();
        for (row, m) in &self.moves {
            for k in m.before.iter().filter(|k| !m.after.contains(k)) {
                if let Some(rows) = holders.get_mut(k) {
                    rows.retain(|r| r != row);
                }
            }
        }
        let mut redecided = redecided(&was, &holders, &self.gone);
        let mut tx = self.tx.take().context("held rows without a transaction")?;
        let keep_all = job.on_invalid == OnInvalid::KeepInvalidRows;
        copy_rows(&mut tx, source_file_id, progress, async |sink| {
            while let Some(mut r) = held.next_row().await? {
                let was_valid = r.valid();
                let mut earlier = Vec::new();
                if let Some(m) = r.keys.clone() {
                    // The duplicate errors of the values it left go; its new ones are checked.
                    let moved: Vec<i32> = m
                        .before
                        .iter()
                        .filter(|k| !m.after.contains(k))
                        .map(|k| k.0)
                        .collect();
                    merge.take_back(&mut r, |f| f.key_set().is_some_and(|s| moved.contains(&s)));
                    earlier = first_holders(&holders, &self.gone, r.row, &m.after, &m.before);
                }
                for (slot, fingerprint, now) in redecided.remove(&r.row).unwrap_or_default() {
                    merge.take_back(&mut r, |f| f.key_set() == Some(slot));
                    earlier.extend(now.map(|first| (slot, fingerprint, first)));
                }
                if !earlier.is_empty() {
                    merge.collide(&mut r, &earlier);
                }
                merge.revalue(&mut r, was_valid);
                if let Some(m) = &r.keys {
                    if r.spoiled && !keep_all {
                        self.gone.insert(r.row);
                    } else {
                        for k in m.after.iter().filter(|k| !m.before.contains(k)) {
                            holders.entry(*k).or_default().push(r.row);
                        }
                    }
                }
                self.store(r, sink, job)?;
                sink.pause().await?;
            }
            Ok(())
        })
        .await?;
        self.tx = Some(tx);
        Ok(())
    }

    /// What the hooks changed in sheet `sheet`'s key index.
    pub(super) fn key_edits(&self, sheet: i32) -> KeyEdits {
        let mut edits = KeyEdits {
            sheet,
            gone: self.gone.clone(),
            ..KeyEdits::default()
        };
        for (row, m) in &self.moves {
            for &(slot, f) in m.before.iter().filter(|k| !m.after.contains(k)) {
                edits.removed.insert((slot, f, *row));
            }
            if self.gone.contains(row) {
                continue;
            }
            for &(slot, f) in m.after.iter().filter(|k| !m.before.contains(k)) {
                edits.added.entry(slot).or_default().push((f, *row));
            }
        }
        edits
    }
}

/// The rows still holding a value another row's hook took away whose duplicate error changes:
/// each key set and value, with the row it is a duplicate of now (`None`: none, it is the first
/// holder now). A row is a duplicate of the first earlier holder of its value, so only rows
/// whose first earlier holder left are decided again; the rows that wrote the value are the
/// ones that collide ([`first_holders`]), not these.
fn redecided(
    was: &HashMap<(i32, u128), Vec<u64>>,
    holders: &HashMap<(i32, u128), Vec<u64>>,
    gone: &HashSet<u64>,
) -> HashMap<u64, Vec<(i32, u128, Option<u64>)>> {
    let first_before = |rows: &[u64], row: u64| rows.iter().copied().filter(|&h| h < row).min();
    let mut found: HashMap<u64, Vec<(i32, u128, Option<u64>)>> = HashMap::new();
    for (&(slot, fingerprint), before) in was {
        let Some(now) = holders.get(&(slot, fingerprint)) else {
            continue;
        };
        let staying: Vec<u64> = now.iter().copied().filter(|h| !gone.contains(h)).collect();
        for &row in &staying {
            let then = first_before(before, row);
            let first = first_before(&staying, row);
            if then != first {
                found
                    .entry(row)
                    .or_default()
                    .push((slot, fingerprint, first));
            }
        }
    }
    found
}

/// The first row other than `row` still holding each value `row` newly holds.
fn first_holders(
    holders: &HashMap<(i32, u128), Vec<u64>>,
    gone: &HashSet<u64>,
    row: u64,
    after: &[(i32, u128)],
    before: &[(i32, u128)],
) -> Vec<(i32, u128, u64)> {
    after
        .iter()
        .filter(|k| !before.contains(k))
        .filter_map(|&(slot, f)| {
            let first = holders
                .get(&(slot, f))?
                .iter()
                .filter(|&&h| h != row && !gone.contains(&h))
                .min()?;
            Some((slot, f, *first))
        })
        .collect()
}
