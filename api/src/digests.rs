//! Running SHA-256 digests of resumable uploads, kept in the memory of the api process that
//! counted their bytes. Without one, the last byte means reading the whole committed blob back
//! to hash it: a 2 GiB upload on loopback then ran at 117 MiB/s against 251 MiB/s for the same
//! file in one multipart request, which hashes as it streams. A digest is only a shortcut: it is
//! used when it covers exactly the upload's bytes (its offset is the upload's length), so an
//! upload whose requests went to several replicas, or that outlived an api restart, is read back
//! as before.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use sha2::Sha256;
use uuid::Uuid;

/// Digests held at once: about 150 bytes each. Past it, further uploads are read back at their
/// end (abandoned uploads' digests are only dropped when this fills up).
const MAX_DIGESTS: usize = 10_000;

/// The digests of the uploads whose bytes this process counted, each with how many bytes it
/// covers.
#[derive(Default)]
pub struct Digests(Mutex<HashMap<Uuid, (i64, Sha256)>>);

impl Digests {
    /// Takes the digest of upload `id`'s first `offset` bytes, if this process holds it.
    pub fn take(&self, id: Uuid, offset: i64) -> Option<Sha256> {
        let mut digests = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match digests.remove(&id) {
            Some((covered, digest)) if covered == offset => Some(digest),
            _ => None,
        }
    }

    /// Keeps the digest of upload `id`'s first `offset` bytes for its next request. When the
    /// table is full another upload's digest is dropped (that upload is read back at its end).
    pub fn keep(&self, id: Uuid, offset: i64, digest: Sha256) {
        let mut digests = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if digests.len() >= MAX_DIGESTS && !digests.contains_key(&id) {
            let Some(evicted) = digests.keys().next().copied() else {
                return;
            };
            digests.remove(&evicted);
        }
        digests.insert(id, (offset, digest));
    }

    /// Forgets upload `id` (it ended).
    pub fn forget(&self, id: Uuid) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest as _, Sha256};
    use uuid::Uuid;

    use super::Digests;

    #[test]
    fn a_digest_is_used_only_at_the_offset_it_covers() {
        let digests = Digests::default();
        let id = Uuid::new_v4();
        let mut digest = Sha256::new();
        digest.update(b"abc");
        digests.keep(id, 3, digest.clone());
        assert!(digests.take(id, 4).is_none(), "another offset");
        assert!(digests.take(id, 3).is_none(), "a miss drops it");
        digests.keep(id, 3, digest);
        let taken = digests.take(id, 3).expect("kept at 3");
        assert_eq!(taken.finalize(), Sha256::digest(b"abc"));
    }
}
