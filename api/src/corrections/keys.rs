//! The buckets of a file's key index that a revision reads and changes, in memory for the
//! revision's transaction: which rows hold a value, and the moves of corrected rows' values.

use std::collections::{BTreeSet, HashMap};

use shared::db;
use shared::domain::key_index;
use sqlx::PgConnection;
use uuid::Uuid;

/// Key-set buckets read for one revision.
pub struct KeyIndex {
    sheet: i32,
    /// Buckets of each key set the file has (a file parsed before the index has none).
    sets: HashMap<i32, i32>,
    buckets: HashMap<(i32, i32), Vec<(u128, u64)>>,
    dirty: BTreeSet<(i32, i32)>,
}

impl KeyIndex {
    /// Reads the buckets of the values `wanted` (key set, fingerprint) of the sheet.
    pub async fn load(
        conn: &mut PgConnection,
        source_file_id: Uuid,
        sheet: i32,
        wanted: impl Iterator<Item = (i32, u128)>,
    ) -> sqlx::Result<Self> {
        let sets: HashMap<i32, i32> = db::keys::sets(&mut *conn, source_file_id, sheet)
            .await?
            .into_iter()
            .collect();
        let mut index = Self {
            sheet,
            sets,
            buckets: HashMap::new(),
            dirty: BTreeSet::new(),
        };
        let places: BTreeSet<(i32, i32)> = wanted.filter_map(|(s, f)| index.place(s, f)).collect();
        let places: Vec<(i32, i32)> = places.into_iter().collect();
        for bucket in db::keys::fetch(&mut *conn, source_file_id, sheet, &places).await? {
            let entries = key_index::decode(&bucket.entries);
            index.buckets.insert((bucket.slot, bucket.bucket), entries);
        }
        Ok(index)
    }

    /// The bucket of a value, when the file has that key set.
    fn place(&self, slot: i32, fingerprint: u128) -> Option<(i32, i32)> {
        let buckets = u32::try_from(*self.sets.get(&slot)?).ok()?;
        let bucket = i32::try_from(key_index::bucket_of(fingerprint, buckets)).ok()?;
        Some((slot, bucket))
    }

    /// The rows holding a value, in order.
    pub fn holders(&self, slot: i32, fingerprint: u128) -> Vec<u64> {
        let Some(entries) = self
            .place(slot, fingerprint)
            .and_then(|p| self.buckets.get(&p))
        else {
            return Vec::new();
        };
        let mut rows: Vec<u64> = entries
            .iter()
            .filter(|(f, _)| *f == fingerprint)
            .map(|(_, r)| *r)
            .collect();
        rows.sort_unstable();
        rows
    }

    /// `row` no longer holds the value.
    pub fn remove(&mut self, slot: i32, fingerprint: u128, row: u64) {
        let Some(place) = self.place(slot, fingerprint) else {
            return;
        };
        if let Some(entries) = self.buckets.get_mut(&place) {
            entries.retain(|&(f, r)| (f, r) != (fingerprint, row));
            self.dirty.insert(place);
        }
    }

    /// `row` now holds the value.
    pub fn add(&mut self, slot: i32, fingerprint: u128, row: u64) {
        let Some(place) = self.place(slot, fingerprint) else {
            return;
        };
        if let Some(entries) = self.buckets.get_mut(&place) {
            entries.push((fingerprint, row));
            self.dirty.insert(place);
        }
    }

    /// The changed buckets, to store.
    pub fn changed(&self) -> Vec<db::keys::Bucket> {
        self.dirty
            .iter()
            .filter_map(|place| {
                let mut entries = self.buckets.get(place)?.clone();
                Some(db::keys::Bucket {
                    sheet: self.sheet,
                    slot: place.0,
                    bucket: place.1,
                    buckets: *self.sets.get(&place.0)?,
                    entries: key_index::encode(&mut entries),
                })
            })
            .collect()
    }
}
