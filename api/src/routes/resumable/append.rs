//! A `PATCH` body, staged as blocks straight into Blob Storage. The body is cut into blocks of
//! [`BLOCK_SIZE`] (the last one of a request shorter), staged [`IN_FLIGHT`] at a time while the
//! next one is read, as a multipart upload's are, so a request holds at most `IN_FLIGHT + 1`
//! blocks in memory whatever the file's size. (Staged one at a time, a 2 GiB upload on loopback
//! ran at 59 % of the multipart upload's speed: the body waited for every Put Block.) A block
//! counts (moves the upload's offset, in Postgres) only once it and every block before it are
//! fully staged, in order, and only if the upload still stands where the request started
//! (compare-and-set, see `db::resumable_uploads::advance`): of two requests sent from one offset
//! the first block recorded wins, the other request is a `409`.
//!
//! Without `Upload-Checksum` each block counts as soon as it is staged, so a request cut off
//! part-way keeps what arrived (the bytes received before the cut are staged as a last, shorter
//! block when the server sees the cut). With `Upload-Checksum` nothing counts until the whole
//! body matched it; on a mismatch (or a cut) none of it does.

use std::collections::VecDeque;

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use sha2::{Digest as _, Sha256};
use shared::db::resumable_uploads::{self, ResumableUpload, Staged, MAX_BLOCKS};
use shared::domain::format::SNIFF_LEN;
use shared::storage::StorageError;
use uuid::Uuid;

use super::protocol;
use crate::error::{ApiError, ApiErrorCode};
use crate::state::AppState;

/// Bytes per staged block: the size the SDK uses for its own uploads. A 5 GiB upload sent in
/// large requests is 1,280 blocks, far below the service's 50,000.
pub const BLOCK_SIZE: usize = 4 * 1024 * 1024;

/// Blocks of one request being staged at once (the multipart upload's `BlockWriter` stages as
/// many).
const IN_FLIGHT: usize = 3;

/// One block on its way to Blob Storage, as its own task (so the request's future stays `Sync`
/// across the awaits that borrow it): its id, its bytes, and how staging went.
type Staging = tokio::task::JoinHandle<(Uuid, Bytes, Result<(), StorageError>)>;

/// One `PATCH` in progress.
pub(super) struct Append<'a> {
    state: &'a AppState,
    upload: &'a ResumableUpload,
    /// Where the upload stood when the request came, and how far this request has counted.
    from: i64,
    counted: i64,
    /// With `Upload-Checksum`: the expected digest, the running one, and the blocks staged but
    /// not counted yet (with their part of the file's head).
    checksum: Option<([u8; 32], Sha256)>,
    pending: Vec<String>,
    pending_head: Vec<u8>,
    pending_len: i64,
    /// Blocks being staged, in file order.
    in_flight: VecDeque<Staging>,
    /// The SHA-256 of the upload's bytes up to `counted`, when this process has it
    /// ([`super::digests`]); with `Upload-Checksum`, `tentative` takes the pending blocks until
    /// they count.
    running: Option<Sha256>,
    tentative: Option<Sha256>,
}

impl<'a> Append<'a> {
    pub(super) fn new(
        state: &'a AppState,
        upload: &'a ResumableUpload,
        checksum: Option<[u8; 32]>,
    ) -> Self {
        Self {
            state,
            upload,
            from: upload.upload_offset,
            counted: upload.upload_offset,
            checksum: checksum.map(|c| (c, Sha256::new())),
            pending: Vec::new(),
            pending_head: Vec::new(),
            pending_len: 0,
            in_flight: VecDeque::new(),
            running: if upload.upload_offset == 0 {
                Some(Sha256::new())
            } else {
                state.digests.take(upload.id, upload.upload_offset)
            },
            tentative: None,
        }
    }

    /// Reads `body` to its end and returns the upload's new offset. An error (a body past the
    /// upload's length, a checksum mismatch, another request that moved the offset, a cut or
    /// stalled body) leaves the offset at the last block that counted.
    pub(super) async fn run(mut self, body: Body) -> Result<i64, ApiError> {
        let room = self.upload.upload_length - self.from;
        let idle = self.state.http.body_idle_timeout;
        let mut stream = body.into_data_stream();
        let mut block = BytesMut::new();
        let mut received: i64 = 0;
        let cut = loop {
            let chunk = match tokio::time::timeout(idle, stream.next()).await {
                Ok(Some(Ok(chunk))) => chunk,
                Ok(None) => break None,
                Ok(Some(Err(e))) => {
                    break Some(ApiError::bad_request(
                        ApiErrorCode::InvalidBody,
                        format!("the body was cut off: {e}"),
                    ))
                }
                Err(_) => {
                    break Some(ApiError::Refused {
                        status: axum::http::StatusCode::REQUEST_TIMEOUT,
                        code: ApiErrorCode::BodyTimeout,
                        message: "the request body stopped arriving".into(),
                    })
                }
            };
            received += chunk.len() as i64;
            if received > room {
                // Nothing past the declared length is kept, nor the block it fell in.
                self.land_all().await?;
                return Err(protocol::length_exceeded(self.upload.upload_length));
            }
            if let Some((_, hasher)) = &mut self.checksum {
                hasher.update(&chunk);
            }
            let mut rest = &chunk[..];
            while !rest.is_empty() {
                if block.capacity() == 0 {
                    let left = usize::try_from(room - (received - rest.len() as i64))
                        .unwrap_or(BLOCK_SIZE);
                    block.reserve(left.clamp(1, BLOCK_SIZE));
                }
                let take = rest.len().min(BLOCK_SIZE - block.len());
                block.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if block.len() == BLOCK_SIZE {
                    self.stage(std::mem::take(&mut block).freeze()).await?;
                }
            }
        };
        if let Some(cut) = cut {
            // What arrived before the cut counts, unless a checksum covers the whole body.
            if self.checksum.is_none() && !block.is_empty() {
                self.stage(block.freeze()).await?;
            }
            self.land_all().await?;
            return Err(cut);
        }
        if !block.is_empty() {
            self.stage(block.freeze()).await?;
        }
        self.land_all().await?;
        if let Some((expected, hasher)) = self.checksum.take() {
            if hasher.finalize().as_slice() != expected {
                return Err(protocol::checksum_mismatch());
            }
            if !self.pending.is_empty() {
                let (ids, head) = (
                    std::mem::take(&mut self.pending),
                    std::mem::take(&mut self.pending_head),
                );
                let staged = Staged {
                    from: self.from,
                    len: self.pending_len,
                    block_ids: &ids,
                    head: &head,
                };
                self.count(&staged).await?;
                self.running = self.tentative.take();
            }
        }
        Ok(self.counted)
    }

    /// Starts staging `block` under a fresh id (two requests racing from one offset never
    /// overwrite each other's blocks), once fewer than [`IN_FLIGHT`] are on their way; the
    /// blocks that landed meanwhile are counted.
    async fn stage(&mut self, block: Bytes) -> Result<(), ApiError> {
        while self.in_flight.len() >= IN_FLIGHT {
            self.land_one().await?;
        }
        let id = Uuid::new_v4();
        let (blobs, name) = (self.state.blobs.clone(), self.upload.blob_name.clone());
        self.in_flight.push_back(tokio::spawn(async move {
            let staged = blobs.stage_block(&name, id.as_bytes(), block.clone()).await;
            (id, block, staged)
        }));
        Ok(())
    }

    /// Waits for every block on its way, counting each in order.
    async fn land_all(&mut self) -> Result<(), ApiError> {
        while !self.in_flight.is_empty() {
            self.land_one().await?;
        }
        Ok(())
    }

    /// Waits for the next block in file order to be staged, then counts it, or keeps it pending
    /// until the checksum is known. A block that failed to stage ends the request: the blocks
    /// after it are dropped uncounted.
    async fn land_one(&mut self) -> Result<(), ApiError> {
        let Some(next) = self.in_flight.pop_front() else {
            return Ok(());
        };
        let (id, block, staged) = next
            .await
            .map_err(|e| ApiError::Internal(anyhow::Error::new(e).context("staging a block")))?;
        staged.map_err(ApiError::StorageUnavailable)?;
        let len = block.len() as i64;
        let at = self.counted + self.pending_len;
        let head = head_part(at, &block);
        if self.checksum.is_some() {
            self.pending.push(id.to_string());
            self.pending_head.extend_from_slice(head);
            self.pending_len += len;
            if self.pending.len() == 1 {
                self.tentative = self.running.clone();
            }
            if let Some(digest) = &mut self.tentative {
                digest.update(&block);
            }
            return Ok(());
        }
        let ids = [id.to_string()];
        let staged = Staged {
            from: self.counted,
            len,
            block_ids: &ids,
            head,
        };
        self.count(&staged).await?;
        if let Some(digest) = &mut self.running {
            digest.update(&block);
        }
        Ok(())
    }

    async fn count(&mut self, staged: &Staged<'_>) -> Result<(), ApiError> {
        match resumable_uploads::advance(&self.state.db, self.upload.id, staged).await? {
            Some(offset) => {
                self.counted = offset;
                Ok(())
            }
            None => Err(self.not_counted(staged).await),
        }
    }

    /// Why blocks staged from `staged.from` did not count: the upload moved on, is gone or
    /// expired, or would need more blocks than a blob can have.
    async fn not_counted(&self, staged: &Staged<'_>) -> ApiError {
        let now =
            resumable_uploads::find(&self.state.db, &self.upload.tenant_id, self.upload.id).await;
        match now {
            Err(e) => e.into(),
            Ok(None) => ApiError::NotFound("no such upload".into()),
            Ok(Some(u)) if u.upload_offset != staged.from || u.source_file_id.is_some() => {
                protocol::offset_mismatch(u.upload_offset, staged.from.unsigned_abs())
            }
            Ok(Some(u)) if u.block_ids.len() + staged.block_ids.len() > MAX_BLOCKS => {
                ApiError::Refused {
                    status: axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                    code: ApiErrorCode::TooManyChunks,
                    message: format!(
                        "the upload was sent in more than {MAX_BLOCKS} pieces; send larger PATCH requests"
                    ),
                }
            }
            Ok(Some(_)) => protocol::expired(),
        }
    }
}

impl Drop for Append<'_> {
    /// However the request ended (even dropped mid-body), the digest of what counted is kept for
    /// the upload's next request.
    fn drop(&mut self) {
        if let Some(digest) = self.running.take() {
            self.state
                .digests
                .keep(self.upload.id, self.counted, digest);
        }
    }
}

/// The bytes of `block`, starting at file offset `at`, that fall in the file's first
/// [`SNIFF_LEN`] bytes (what format detection reads).
fn head_part(at: i64, block: &[u8]) -> &[u8] {
    let room = usize::try_from((SNIFF_LEN as i64 - at).max(0)).unwrap_or(0);
    &block[..block.len().min(room)]
}

#[cfg(test)]
mod tests {
    use super::head_part;
    use shared::domain::format::SNIFF_LEN;

    #[test]
    fn only_bytes_below_the_sniff_length_are_head() {
        let block = vec![1u8; 100];
        assert_eq!(head_part(0, &block).len(), 100);
        assert_eq!(head_part(SNIFF_LEN as i64 - 10, &block).len(), 10);
        assert_eq!(head_part(SNIFF_LEN as i64, &block).len(), 0);
    }
}
