//! Sets keyed by 128-bit value fingerprints (xxh3), which are already hashes: the table's
//! hasher passes their low 64 bits through, so inserting and growing never hash again.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};

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

impl Hash for Fingerprint {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(u64::from(self.0[0]) | (u64::from(self.0[1]) << 32));
    }
}

/// The fingerprints of an `enum` constraint's values.
pub(crate) type FingerprintSet = HashSet<Fingerprint, PassThroughBuild>;

/// Where a value of a unique field (or a primary key) first appeared: fingerprint → row.
/// Rows past `u32::MAX` are stored as `u32::MAX` ("an earlier row").
#[derive(Default)]
pub(crate) struct FirstRows(HashMap<Fingerprint, u32, PassThroughBuild>);

impl FirstRows {
    /// Records `row` for `fingerprint`; the row it was first seen in if it was already there.
    #[inline]
    pub fn insert(&mut self, fingerprint: u128, row: u64) -> Option<u64> {
        let row = u32::try_from(row).unwrap_or(u32::MAX);
        match self.0.entry(fingerprint.into()) {
            std::collections::hash_map::Entry::Occupied(first) => Some(u64::from(*first.get())),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(row);
                None
            }
        }
    }

    pub fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
    }
}
