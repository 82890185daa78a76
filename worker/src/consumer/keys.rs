//! A templated file's key index ([`shared::domain::key_index`]) as the parse child sends it, a
//! bucket a frame at the end of the validated sheet, while the rows' `COPY` still holds the
//! transaction's connection. The buckets wait in an unnamed temporary file (gone when dropped)
//! rather than in memory: a file of 10M keys has 240 MB of them, and the worker stays within
//! its bound whatever the file. Once the `COPY` is done they are inserted a batch at a time,
//! with what a template's hooks changed ([`KeyEdits`]) applied on the way.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};

use anyhow::Context as _;
use shared::db;
use shared::domain::key_index;
use sqlx::PgConnection;
use uuid::Uuid;

/// Buckets inserted per statement.
const BATCH: usize = 500;

/// The buckets received so far.
#[derive(Debug, Default)]
pub(super) struct KeySpill {
    file: Option<BufWriter<std::fs::File>>,
    edits: Option<KeyEdits>,
}

/// What the hooks changed in the validated sheet's index: rows a hook dropped hold none of
/// their values any more (the rows corrections read are the stored ones and the report's), and
/// rows a hook wrote key values into hold the new ones instead of the old.
#[derive(Debug, Default)]
pub(super) struct KeyEdits {
    pub sheet: i32,
    pub gone: HashSet<u64>,
    /// (key set, fingerprint, row) no longer held.
    pub removed: HashSet<(i32, u128, u64)>,
    /// Each key set's (fingerprint, row) newly held.
    pub added: HashMap<i32, Vec<(u128, u64)>>,
}

impl KeyEdits {
    fn is_empty(&self) -> bool {
        self.gone.is_empty() && self.removed.is_empty() && self.added.is_empty()
    }

    /// The bucket as edited.
    fn apply(&self, bucket: &mut db::keys::Bucket) {
        if bucket.sheet != self.sheet {
            return;
        }
        let added = self.added.get(&bucket.slot).into_iter().flatten();
        let buckets = u32::try_from(bucket.buckets).unwrap_or(1);
        let mut added = added
            .filter(|(f, _)| {
                i64::from(key_index::bucket_of(*f, buckets)) == i64::from(bucket.bucket)
            })
            .peekable();
        let touched = !self.gone.is_empty() || !self.removed.is_empty() || added.peek().is_some();
        if !touched {
            return;
        }
        let mut entries = key_index::decode(&bucket.entries);
        entries.retain(|&(f, row)| {
            !self.gone.contains(&row) && !self.removed.contains(&(bucket.slot, f, row))
        });
        entries.extend(added);
        bucket.entries = key_index::encode(&mut entries);
    }
}

impl KeySpill {
    /// Keeps one bucket.
    pub fn push(&mut self, bucket: &db::keys::Bucket) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(BufWriter::new(tempfile::tempfile()?)),
        };
        let len = u32::try_from(bucket.entries.len()).map_err(io::Error::other)?;
        for n in [bucket.sheet, bucket.slot, bucket.bucket, bucket.buckets] {
            file.write_all(&n.to_le_bytes())?;
        }
        file.write_all(&len.to_le_bytes())?;
        file.write_all(&bucket.entries)
    }

    /// Applies `edits` when the buckets are stored.
    pub fn edit(&mut self, edits: KeyEdits) {
        self.edits = (!edits.is_empty()).then_some(edits);
    }

    /// The rows of sheet `sheet` holding each value of `wanted` (key set, fingerprint), as the
    /// parse sent them: one read of the buckets kept.
    pub fn holders(
        &mut self,
        sheet: i32,
        wanted: &HashSet<(i32, u128)>,
    ) -> anyhow::Result<HashMap<(i32, u128), Vec<u64>>> {
        let mut found: HashMap<(i32, u128), Vec<u64>> = HashMap::new();
        let Some(file) = self.file.as_mut() else {
            return Ok(found);
        };
        file.flush().context("flushing the key index")?;
        let mut read = file.get_ref().try_clone().context("the key index")?;
        read.rewind().context("rewinding the key index")?;
        let mut reader = BufReader::new(read);
        loop {
            let batch = read_batch(&mut reader).context("reading the key index")?;
            if batch.is_empty() {
                break;
            }
            for bucket in batch.iter().filter(|b| b.sheet == sheet) {
                for (f, row) in key_index::decode(&bucket.entries) {
                    if wanted.contains(&(bucket.slot, f)) {
                        found.entry((bucket.slot, f)).or_default().push(row);
                    }
                }
            }
        }
        Ok(found)
    }

    /// Inserts every bucket kept, in the transaction of the rows.
    pub async fn store(self, conn: &mut PgConnection, source_file_id: Uuid) -> anyhow::Result<()> {
        let Some(file) = self.file else {
            return Ok(());
        };
        let mut file = file.into_inner().map_err(|e| e.into_error())?;
        file.rewind().context("rewinding the key index")?;
        let mut reader = BufReader::new(file);
        loop {
            let mut batch = read_batch(&mut reader).context("reading the key index back")?;
            if batch.is_empty() {
                return Ok(());
            }
            if let Some(edits) = &self.edits {
                batch.iter_mut().for_each(|b| edits.apply(b));
            }
            db::keys::insert(&mut *conn, source_file_id, &batch)
                .await
                .context("storing the key index")?;
        }
    }
}

/// Up to [`BATCH`] buckets; none at the end.
fn read_batch(reader: &mut impl Read) -> io::Result<Vec<db::keys::Bucket>> {
    let mut batch = Vec::new();
    while batch.len() < BATCH {
        let mut head = [0u8; 20];
        match reader.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        let int = |i: usize| i32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let len = u32::from_le_bytes([head[16], head[17], head[18], head[19]]) as usize;
        let mut entries = vec![0u8; len];
        reader.read_exact(&mut entries)?;
        batch.push(db::keys::Bucket {
            sheet: int(0),
            slot: int(4),
            bucket: int(8),
            buckets: int(12),
            entries,
        });
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_drop_gone_rows_and_move_written_values_to_their_buckets() {
        let f = |n: u128| n.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        let buckets = 4u32;
        let mut stored: Vec<db::keys::Bucket> = (0..buckets)
            .map(|b| {
                let mut entries: Vec<(u128, u64)> = (1..=40u64)
                    .map(|row| (f(u128::from(row)), row))
                    .filter(|(fp, _)| key_index::bucket_of(*fp, buckets) == b)
                    .collect();
                db::keys::Bucket {
                    sheet: 0,
                    slot: 0,
                    bucket: i32::try_from(b).unwrap_or(0),
                    buckets: i32::try_from(buckets).unwrap_or(0),
                    entries: key_index::encode(&mut entries),
                }
            })
            .collect();
        // Row 7 was dropped by a hook; row 9's value became 100's (a value no row had).
        let edits = KeyEdits {
            sheet: 0,
            gone: HashSet::from([7]),
            removed: HashSet::from([(0, f(9), 9)]),
            added: HashMap::from([(0, vec![(f(100), 9)])]),
        };
        for b in &mut stored {
            edits.apply(b);
        }
        let all: Vec<(u128, u64)> = stored
            .iter()
            .flat_map(|b| {
                let entries = key_index::decode(&b.entries);
                let bucket = u32::try_from(b.bucket).unwrap_or(0);
                assert!(entries
                    .iter()
                    .all(|(fp, _)| key_index::bucket_of(*fp, buckets) == bucket));
                entries
            })
            .collect();
        assert_eq!(all.len(), 39);
        assert!(!all.iter().any(|&(_, row)| row == 7));
        assert!(!all.contains(&(f(9), 9)));
        assert!(all.contains(&(f(100), 9)));
        // Another sheet's buckets are left alone.
        let mut other = stored[0].clone();
        other.sheet = 1;
        let before = other.entries.clone();
        KeyEdits {
            sheet: 0,
            gone: HashSet::from([1, 2, 3]),
            ..KeyEdits::default()
        }
        .apply(&mut other);
        assert_eq!(other.entries, before);
    }

    #[test]
    fn buckets_read_back_as_they_were_kept_in_batches() {
        let mut spill = KeySpill::default();
        let buckets: Vec<db::keys::Bucket> = (0..1201)
            .map(|i| db::keys::Bucket {
                sheet: 1,
                slot: i % 3 - 1,
                bucket: i,
                buckets: 1201,
                entries: vec![
                    u8::try_from(i % 251).unwrap_or(0);
                    usize::try_from(i % 5).unwrap_or(0) * 24
                ],
            })
            .collect();
        for b in &buckets {
            spill.push(b).expect("push");
        }
        let mut file = spill.file.expect("a file").into_inner().expect("flush");
        file.rewind().expect("rewind");
        let mut reader = BufReader::new(file);
        let mut back = Vec::new();
        loop {
            let batch = read_batch(&mut reader).expect("read");
            if batch.is_empty() {
                break;
            }
            assert!(batch.len() <= BATCH);
            back.extend(batch);
        }
        assert_eq!(back, buckets);
    }
}
