//! A templated file's key index: for each `unique` field and for the primary key, every value's
//! 128-bit fingerprint (the template engine's) with each row that holds it, kept from the parse
//! so that a correction re-checks uniqueness against the whole file without reading it again.
//! Only a sheet with errors (or of a template with hooks, whose errors come later) keeps one:
//! corrections edit rows of the error report, so a clean sheet's index would never be read.
//!
//! A key set's entries are split into buckets by fingerprint, about [`PER_BUCKET`] entries each,
//! and a bucket is stored as one value: its entries sorted, 24 bytes each (the fingerprint, then
//! the row, both big-endian). A lookup reads the one bucket of a value; a correction rewrites the
//! buckets it changes. The worker writes them and the api reads them, through these functions.

/// Entries a bucket holds on average.
pub const PER_BUCKET: usize = 256;

/// Bytes of one stored entry.
pub const ENTRY_BYTES: usize = 24;

/// How many buckets a key set of `entries` entries is split into (at least one).
pub fn buckets_for(entries: usize) -> u32 {
    u32::try_from(entries.div_ceil(PER_BUCKET).max(1)).unwrap_or(u32::MAX)
}

/// The bucket of `fingerprint` among `buckets`.
pub fn bucket_of(fingerprint: u128, buckets: u32) -> u32 {
    // The high half: the engine's tables place values by the low one.
    let high = (fingerprint >> 64) as u64;
    u32::try_from(high % u64::from(buckets.max(1))).unwrap_or(0)
}

/// A bucket's stored bytes for `entries` (sorted here).
pub fn encode(entries: &mut [(u128, u64)]) -> Vec<u8> {
    entries.sort_unstable();
    let mut out = Vec::with_capacity(entries.len() * ENTRY_BYTES);
    for (fingerprint, row) in entries.iter() {
        out.extend_from_slice(&fingerprint.to_be_bytes());
        out.extend_from_slice(&row.to_be_bytes());
    }
    out
}

/// A bucket's entries from its stored bytes (a trailing partial entry is ignored).
pub fn decode(bytes: &[u8]) -> Vec<(u128, u64)> {
    bytes
        .chunks_exact(ENTRY_BYTES)
        .map(|e| {
            let mut f = [0u8; 16];
            let mut r = [0u8; 8];
            f.copy_from_slice(&e[..16]);
            r.copy_from_slice(&e[16..]);
            (u128::from_be_bytes(f), u64::from_be_bytes(r))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_set_split_into_buckets_reads_back_from_the_bucket_of_each_value() {
        let entries: Vec<(u128, u64)> = (0..1000u64)
            .map(|r| {
                (
                    u128::from(r).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
                    r,
                )
            })
            .collect();
        let buckets = buckets_for(entries.len());
        assert_eq!(buckets, 4);
        let mut split: Vec<Vec<(u128, u64)>> = vec![Vec::new(); 4];
        for &(f, r) in &entries {
            split[bucket_of(f, buckets) as usize].push((f, r));
        }
        let stored: Vec<Vec<u8>> = split.iter_mut().map(|b| encode(b)).collect();
        for &(fingerprint, row) in &entries {
            let bytes = &stored[bucket_of(fingerprint, buckets) as usize];
            assert!(decode(bytes).contains(&(fingerprint, row)));
        }
    }
}
