//! A block blob written in parts: blocks are staged as they come (Put Block), then committed in
//! order as the blob (Put Block List) or discarded. Nothing is visible under the blob's name
//! until the commit. [`BlobStore::upload`] streams a body through one; an upload that arrives in
//! several requests (resumable uploads) can drive the same halves itself.

use std::sync::Arc;

use azure_storage_blob::clients::BlockBlobClient;
use azure_storage_blob::models::{BlockBlobClientCommitBlockListOptions, BlockLookupList};
use bytes::Bytes;
use tokio::task::JoinSet;

use super::{BlobStore, StorageError};

/// Blocks staged concurrently: with the one its caller is filling, a writer's memory is about
/// `MAX_IN_FLIGHT + 1` blocks.
const MAX_IN_FLIGHT: usize = 3;

/// The staged, uncommitted blocks of one blob, and those still on their way.
pub struct BlockWriter {
    store: BlobStore,
    blob_name: String,
    client: Arc<BlockBlobClient>,
    /// A random prefix per writer keeps the block IDs of concurrent writes to the same name
    /// apart; all IDs have the same length, as the service requires.
    prefix: uuid::Uuid,
    block_ids: Vec<Vec<u8>>,
    in_flight: JoinSet<Result<(), StorageError>>,
}

impl BlockWriter {
    pub(super) fn new(store: BlobStore, blob_name: &str, client: BlockBlobClient) -> Self {
        Self {
            store,
            blob_name: blob_name.to_owned(),
            client: Arc::new(client),
            prefix: uuid::Uuid::new_v4(),
            block_ids: Vec::new(),
            in_flight: JoinSet::new(),
        }
    }

    /// How many blocks were handed to [`BlockWriter::stage`].
    pub fn staged(&self) -> usize {
        self.block_ids.len()
    }

    /// Stages `block` as the next block of the blob (at most 4000 MiB, the service's limit). It
    /// is sent in the background; with [`MAX_IN_FLIGHT`] on their way this first waits for one
    /// to land, so a fast producer cannot queue up memory.
    pub async fn stage(&mut self, block: Bytes) -> Result<(), StorageError> {
        while self.in_flight.len() >= MAX_IN_FLIGHT {
            self.join_one().await?;
        }
        let mut id = self.prefix.as_bytes().to_vec();
        id.extend_from_slice(
            &u32::try_from(self.block_ids.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        self.block_ids.push(id.clone());
        let client = Arc::clone(&self.client);
        self.in_flight.spawn(async move {
            let len = block.len() as u64;
            client.stage_block(&id, len, block.into(), None).await?;
            Ok(())
        });
        Ok(())
    }

    /// The first failure among the blocks that finished staging, without waiting for the
    /// others: a caller reading a large body stops early instead of reading it to the end.
    pub fn check(&mut self) -> Result<(), StorageError> {
        while let Some(done) = self.in_flight.try_join_next() {
            flatten(done)?;
        }
        Ok(())
    }

    /// Waits for every staged block, then commits them in order as the blob, with
    /// `content_type`. On an error the blocks stay staged: [`BlockWriter::discard`] them.
    pub async fn commit(&mut self, content_type: &str) -> Result<(), StorageError> {
        while !self.in_flight.is_empty() {
            self.join_one().await?;
        }
        commit_list(&self.client, self.block_ids.clone(), Some(content_type)).await
    }

    /// Drops the staged blocks at once rather than leaving them to the service's week-long
    /// garbage collection: committing an empty block list drops a blob's uncommitted blocks,
    /// and the empty blob that leaves is then deleted. Blocks still on their way land first: a
    /// request aborted mid-flight can still be staged by the service after the discard, and
    /// would outlive it (the edge tests saw one in a full CI run).
    pub async fn discard(mut self) -> Result<(), StorageError> {
        while self.in_flight.join_next().await.is_some() {}
        discard_staged(&self.store, &self.client, &self.blob_name).await
    }

    async fn join_one(&mut self) -> Result<(), StorageError> {
        match self.in_flight.join_next().await {
            Some(done) => flatten(done),
            None => Ok(()),
        }
    }
}

/// Commits `block_ids` (staged blocks, in order) as the blob, with `content_type` if given.
pub(super) async fn commit_list(
    client: &BlockBlobClient,
    block_ids: Vec<Vec<u8>>,
    content_type: Option<&str>,
) -> Result<(), StorageError> {
    let list = BlockLookupList {
        latest: Some(block_ids),
        ..Default::default()
    };
    let options = BlockBlobClientCommitBlockListOptions {
        blob_content_type: content_type.map(str::to_owned),
        ..Default::default()
    };
    client
        .commit_block_list(list.try_into()?, Some(options))
        .await?;
    Ok(())
}

/// Drops the uncommitted blocks of `blob_name` (committing an empty list drops them), then
/// deletes the empty blob that leaves. Only for a blob that has no committed content to keep.
pub(super) async fn discard_staged(
    store: &BlobStore,
    client: &BlockBlobClient,
    blob_name: &str,
) -> Result<(), StorageError> {
    commit_list(client, Vec::new(), None).await?;
    store.delete(blob_name).await
}

fn flatten(
    done: Result<Result<(), StorageError>, tokio::task::JoinError>,
) -> Result<(), StorageError> {
    match done {
        Ok(result) => result,
        Err(join) => Err(StorageError::Response(format!(
            "block upload task failed: {join}"
        ))),
    }
}
