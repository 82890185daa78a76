//! Sets keyed by 128-bit value fingerprints (xxh3), which are already hashes: their low 64 bits
//! place them in a table (the enum set's hasher passes them through), so inserting and growing
//! never hash again.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hash, Hasher};

use super::value::Value;

/// A hasher for keys that are hashes: `write_u64` keeps the value as the hash.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not reached by the keys below (they write one u64); folds anything else anyway.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
}

type PassThroughBuild = BuildHasherDefault<PassThrough>;

/// A fingerprint stored as four `u32`s: 4-byte aligned, so a map entry with a `u32` beside it
/// is 20 bytes instead of the 32 a `u128` key would take with its alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint([u32; 4]);

impl From<u128> for Fingerprint {
    fn from(v: u128) -> Self {
        Fingerprint([
            v as u32,
            (v >> 32) as u32,
            (v >> 64) as u32,
            (v >> 96) as u32,
        ])
    }
}

impl From<Fingerprint> for u128 {
    fn from(f: Fingerprint) -> Self {
        let [a, b, c, d] = f.0.map(u128::from);
        a | (b << 32) | (c << 64) | (d << 96)
    }
}

impl Hash for Fingerprint {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(u64::from(self.0[0]) | (u64::from(self.0[1]) << 32));
    }
}

/// The fingerprints of an `enum` constraint's values.
pub(crate) type FingerprintSet = HashSet<Fingerprint, PassThroughBuild>;

/// Where each value of a unique field (or each primary key) first appeared: fingerprint → row.
/// Rows past `u32::MAX` are stored as `u32::MAX` ("an earlier row").
///
/// This holds one entry per distinct value of a file, so on a long file it is the parse
/// child's memory. Hence open addressing over inline 20-byte entries, in [`SHARDS`] tables
/// chosen by the fingerprint's top bits, each grown by half when three quarters full: memory
/// stays within 27 to 40 bytes a value, and a growth holds one shard twice rather than the
/// whole table. The single `HashMap` this replaces took 24 to 48 bytes a value, and 72 for a
/// moment as it doubled (515 MB for the 10M distinct keys of the bench's big CSV; the child
/// validating its 1M-row CSV peaked at 77 MB, 46 MB with this).
///
/// Integers (the usual key: an id, an invoice number) that arrive in increasing order, as a
/// database's export writes them, skip the tables: each is larger than every integer before
/// it, so it is new without a lookup, and it is appended to a sorted run (12 bytes a value)
/// that a later, smaller integer is looked up in by binary search. The tables cost a random
/// memory access per new value: `FirstRows::insert` was 18 % of the templated 1M-row CSV's
/// parse child (`perf record`, about 0.2 CPU-s) before the run.
#[derive(Default)]
pub(crate) struct FirstRows {
    /// Integers in strictly increasing order, and the row of each.
    run: Vec<i64>,
    run_rows: Vec<u32>,
    /// The largest integer in the shards: an integer joins the run only past it too.
    shards_max: Option<i64>,
    /// Empty until the first value, then [`SHARDS`] of them.
    shards: Vec<Shard>,
    /// The row of the fingerprint 0, which the shards use to mark an empty slot.
    zero: Option<u32>,
    /// The values the caller expects ([`FirstRows::reserve`]), made room for in the shards
    /// when the first value goes there.
    expected: usize,
}

/// How many tables a [`FirstRows`] is split into (a power of two).
const SHARDS: usize = 64;

/// An open-addressing table with linear probing: a slot is a fingerprint's four `u32`s and
/// its row, all zero when empty.
#[derive(Default)]
struct Shard {
    slots: Vec<[u32; 5]>,
    len: usize,
}

impl FirstRows {
    /// Records `row` for `fingerprint`; the row it was first seen in if it was already there.
    #[inline]
    pub fn insert(&mut self, fingerprint: u128, row: u64) -> Option<u64> {
        let row = u32::try_from(row).unwrap_or(u32::MAX);
        if fingerprint == 0 {
            let first = self.zero;
            self.zero.get_or_insert(row);
            return first.map(u64::from);
        }
        if self.shards.is_empty() {
            self.shards.resize_with(SHARDS, Shard::default);
            let expected = std::mem::take(&mut self.expected);
            self.reserve(expected);
        }
        let Fingerprint(f) = Fingerprint::from(fingerprint);
        self.shard(fingerprint)
            .insert([f[0], f[1], f[2], f[3], row])
            .map(u64::from)
    }

    /// Records `row` for `value`, by its fingerprint or, an integer, through the increasing
    /// run; the row it was first seen in if it was already there. Null and NaN, which equal
    /// nothing, are not recorded.
    #[inline]
    pub fn insert_value(&mut self, value: &Value<'_>, row: u64) -> Option<u64> {
        match value {
            Value::Integer(i) => self.insert_integer(*i, row),
            _ => value.fingerprint().and_then(|f| self.insert(f, row)),
        }
    }

    /// Records `row` for the integer `value`; the row it was first seen in if it was already
    /// there. An integer past every one before it joins the run; any other is looked up in the
    /// run, then recorded by its fingerprint.
    #[inline]
    pub fn insert_integer(&mut self, value: i64, row: u64) -> Option<u64> {
        let past = |max: Option<&i64>| max.is_none_or(|&max| value > max);
        if past(self.run.last()) && past(self.shards_max.as_ref()) {
            self.run.push(value);
            self.run_rows.push(u32::try_from(row).unwrap_or(u32::MAX));
            return None;
        }
        if let Ok(at) = self.run.binary_search(&value) {
            return Some(u64::from(self.run_rows[at]));
        }
        self.shards_max = Some(self.shards_max.map_or(value, |max| max.max(value)));
        let fingerprint = Value::Integer(value).fingerprint()?;
        self.insert(fingerprint, row)
    }

    /// Makes room for `additional` more values, so the tables do not grow by steps: at once if
    /// the tables are in use, else when the first value goes there (values in increasing
    /// order may never need them).
    pub fn reserve(&mut self, additional: usize) {
        if self.shards.is_empty() {
            self.expected += additional;
            return;
        }
        for shard in &mut self.shards {
            shard.reserve(additional / SHARDS + 1);
        }
    }

    /// Records `row` for `fingerprint` as a row outside the rows being validated (a correction
    /// re-checking one row against the rest of its file): integers are then looked up too,
    /// never taken as new for being past the run.
    pub fn seed(&mut self, fingerprint: u128, row: u64) {
        self.shards_max = Some(i64::MAX);
        self.insert(fingerprint, row);
    }

    /// How many values are recorded.
    pub fn len(&self) -> usize {
        self.run.len()
            + self.shards.iter().map(|s| s.len).sum::<usize>()
            + usize::from(self.zero.is_some())
    }

    /// Every value recorded, as its fingerprint and the row it was first seen in (rows past
    /// `u32::MAX` as `u32::MAX`), in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = (u128, u64)> + '_ {
        let run = self
            .run
            .iter()
            .zip(&self.run_rows)
            .filter_map(|(&i, &row)| Value::Integer(i).fingerprint().map(|f| (f, u64::from(row))));
        let shards = self.shards.iter().flat_map(|s| {
            s.slots.iter().filter(|e| e[..4] != [0; 4]).map(|e| {
                (
                    Fingerprint([e[0], e[1], e[2], e[3]]).into(),
                    u64::from(e[4]),
                )
            })
        });
        let zero = self.zero.map(|row| (0u128, u64::from(row)));
        run.chain(shards).chain(zero)
    }

    /// The shard of a fingerprint, by its top bits (its low 64 bits place it in the shard).
    fn shard(&mut self, fingerprint: u128) -> &mut Shard {
        let index = (fingerprint >> (128 - SHARDS.trailing_zeros())) as usize;
        &mut self.shards[index]
    }
}

impl Shard {
    /// Inserts `entry` (a nonzero fingerprint and its row) unless its fingerprint is there;
    /// returns the row stored with it if it is.
    #[inline]
    fn insert(&mut self, entry: [u32; 5]) -> Option<u32> {
        if self.len * 4 >= self.slots.len() * 3 {
            self.grow_to(self.slots.len() * 3 / 2);
        }
        let i = self.find(&entry);
        let slot = &mut self.slots[i];
        if slot[..4] == entry[..4] {
            return Some(slot[4]);
        }
        *slot = entry;
        self.len += 1;
        None
    }

    /// The slot holding `entry`'s fingerprint, or the empty slot where it goes.
    #[inline]
    fn find(&self, entry: &[u32; 5]) -> usize {
        let n = self.slots.len();
        let hash = u64::from(entry[0]) | (u64::from(entry[1]) << 32);
        // The hash scaled to the table's size (Lemire's multiply-shift): any size works.
        let mut i = ((u128::from(hash) * n as u128) >> 64) as usize;
        loop {
            let slot = &self.slots[i];
            if slot[..4] == entry[..4] || slot[..4] == [0; 4] {
                return i;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
    }

    fn reserve(&mut self, additional: usize) {
        let need = (self.len + additional) * 4 / 3 + 1;
        if need > self.slots.len() {
            self.grow_to(need);
        }
    }

    /// Moves the entries to a table of `slots` slots (at least 16).
    fn grow_to(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![[0; 5]; slots.max(16)]);
        for entry in old.into_iter().filter(|e| e[..4] != [0; 4]) {
            let i = self.find(&entry);
            self.slots[i] = entry;
        }
    }
}
