//! A large CSV body generated as it is sent: one chunk of whole CSV lines, repeated, so a GiB
//! costs the bench a quarter of a MiB. The `upload-1gib` and `tus` scenarios send it.

use bytes::Bytes;
use futures::StreamExt as _;
use sha2::{Digest as _, Sha256};

/// The repeated chunk's size.
pub const CHUNK: usize = 256 * 1024;

/// The generated file: one chunk of CSV lines, repeated.
pub struct Generated {
    chunk: Bytes,
    pub total: u64,
}

impl Generated {
    /// `total` bytes, rounded down to whole chunks (at least one).
    pub fn new(total: u64) -> Self {
        let line = b"1234567,customer-00001234,Alice Smith,42,1234.56,2024-05-06,2024-05-06T07:08:09,true,,note 12,01234,Tokyo 12\n";
        let mut chunk = Vec::with_capacity(CHUNK);
        while chunk.len() + line.len() <= CHUNK {
            chunk.extend_from_slice(line);
        }
        chunk.resize(CHUNK, b'\n');
        Self {
            chunk: Bytes::from(chunk),
            total: (total / CHUNK as u64).max(1) * CHUNK as u64,
        }
    }

    /// The file's data lines (the chunk's padding is blank lines, which are not rows).
    pub fn lines(&self) -> u64 {
        let per_chunk = self
            .chunk
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        per_chunk as u64 * (self.total / CHUNK as u64)
    }

    pub fn sha256(&self) -> String {
        let mut hasher = Sha256::new();
        for _ in 0..self.total / CHUNK as u64 {
            hasher.update(&self.chunk);
        }
        format!("{:x}", hasher.finalize())
    }

    /// The bytes from `from` to `to`, as a stream; with `fail`, the stream errors at `to`
    /// instead of ending (the client drops the connection mid-body).
    pub fn range(
        &self,
        from: u64,
        to: u64,
        fail: bool,
    ) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
        let chunk = self.chunk.clone();
        let pieces = futures::stream::unfold(from, move |at| {
            let chunk = chunk.clone();
            async move {
                if at >= to {
                    return None;
                }
                let start = (at % CHUNK as u64) as usize;
                let len = (CHUNK - start).min(usize::try_from(to - at).unwrap_or(CHUNK));
                Some((Ok(chunk.slice(start..start + len)), at + len as u64))
            }
        });
        let cut = futures::stream::iter(fail.then(|| {
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "cut",
            ))
        }));
        pieces.chain(cut)
    }
}
