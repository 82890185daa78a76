//! The blob container holding uploaded files. Uploads are streamed as staged blocks with a small,
//! fixed number in flight (through a [`BlockWriter`]), and downloads use a bounded number of ranged requests, so memory stays
//! flat whatever the file size.

use super::{
    auth::{child_url, ResolvedAuth},
    block_writer,
    metered::{metered, Service},
    BlockWriter, StorageConfig, StorageError,
};
use azure_core::http::Transport;
use azure_storage_blob::{
    models::{
        BlobClientDeleteOptions, BlobClientDownloadOptions,
        BlobClientGetPropertiesResultHeaders as _, BlobContainerClientListBlobsOptions,
        BlockBlobClientUploadOptions, CopyStatus, ListBlobsIncludeItem,
    },
    BlobContainerClient, BlobContainerClientOptions,
};
use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt, TryStreamExt};
use std::{num::NonZero, sync::Arc};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Size of one staged block. 4 MiB is what the SDK itself uses and keeps the block count of a
/// 1 GiB file (256) far below the 50,000-block limit.
const BLOCK_SIZE: usize = 4 * 1024 * 1024;
/// Ranged GETs in flight for a download; the SDK buffers at most twice this many partitions.
const DOWNLOAD_PARALLEL: NonZero<usize> = NonZero::<usize>::MIN.saturating_add(1);
const DOWNLOAD_PARTITION: NonZero<usize> = NonZero::<usize>::MIN.saturating_add(BLOCK_SIZE - 1);

/// Why an upload failed: the caller's body stream (e.g. its own size limit) or the storage service.
#[derive(Debug, thiserror::Error)]
pub enum UploadError<E> {
    /// The body stream yielded an error; nothing was committed.
    #[error("the upload body failed")]
    Body(#[source] E),
    /// Staging or committing a block failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// A page of the blob listing ([`BlobStore::list_page`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlobPage {
    pub blobs: Vec<ListedBlob>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<String>,
}

/// A committed blob: its name, when it was created, its ETag and size (`None` when the service
/// did not say), and whether a copy into it is still running (its bytes are not all there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedBlob {
    pub name: String,
    pub created_at: Option<chrono::DateTime<chrono::Utc>>,
    pub etag: Option<String>,
    pub size: Option<u64>,
    pub copying: bool,
}

/// What [`BlobStore::properties`] tells of a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFacts {
    pub etag: String,
    pub size: u64,
    /// A copy into the blob is still running.
    pub copying: bool,
}

/// One blob container. Cheap to clone: the SDK client and its connection pool are shared.
#[derive(Clone)]
pub struct BlobStore {
    container: Arc<BlobContainerClient>,
    name: Arc<str>,
}

impl std::fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStore")
            .field("container", &self.name)
            .finish()
    }
}

impl BlobStore {
    /// Builds the container client; no network call is made until first use.
    pub fn new(cfg: &StorageConfig) -> Result<Self, StorageError> {
        Self::with_transport(cfg, None)
    }

    /// [`BlobStore::new`] sending its requests through `transport` (the SDK's own client when
    /// `None`).
    pub fn with_transport(
        cfg: &StorageConfig,
        transport: Option<Transport>,
    ) -> Result<Self, StorageError> {
        let auth = ResolvedAuth::from_config(cfg)?;
        let url = child_url(&auth.blob_endpoint, &cfg.blob_container)?;
        let mut client_options = auth.client_options();
        client_options.transport = transport;
        let options = BlobContainerClientOptions {
            client_options: metered(client_options, Service::Blob, &url),
            ..Default::default()
        };
        let container = BlobContainerClient::new(url, auth.credential.clone(), Some(options))?;
        Ok(Self {
            container: Arc::new(container),
            name: cfg.blob_container.as_str().into(),
        })
    }

    /// The container name.
    pub fn container_name(&self) -> &str {
        &self.name
    }

    /// Creates the container if needed; an existing container is success, so every process may
    /// call this at start-up.
    pub async fn ensure_container(&self) -> Result<(), StorageError> {
        match self.container.create(None).await {
            Ok(_) => Ok(()),
            Err(e) => match StorageError::from(e) {
                e if e.code() == Some("ContainerAlreadyExists") => Ok(()),
                e => Err(e),
            },
        }
    }

    /// Names of every committed blob in the container, in name order (for operators and tests;
    /// pages through the listing).
    pub async fn list_names(&self) -> Result<Vec<String>, StorageError> {
        self.list(None).await
    }

    /// Like [`BlobStore::list_names`], with blobs that have only uncommitted (staged) blocks.
    pub async fn list_names_with_uncommitted(&self) -> Result<Vec<String>, StorageError> {
        self.list(Some(BlobContainerClientListBlobsOptions {
            include: Some(vec![ListBlobsIncludeItem::UncommittedBlobs]),
            ..Default::default()
        }))
        .await
    }

    async fn list(
        &self,
        options: Option<BlobContainerClientListBlobsOptions<'_>>,
    ) -> Result<Vec<String>, StorageError> {
        let mut pager = self.container.list_blobs(options)?;
        let mut names = Vec::new();
        while let Some(blob) = pager.try_next().await? {
            names.extend(blob.name);
        }
        Ok(names)
    }

    /// One page of the committed blobs, in name order, from `marker` (the `next` of the page
    /// before; `None` for the first), at most `max` names. Blobs that have only staged blocks
    /// (an upload in progress, a resumable upload not yet finished) are not in it.
    pub async fn list_page(
        &self,
        marker: Option<String>,
        max: u32,
    ) -> Result<BlobPage, StorageError> {
        self.list_page_under("", marker, max).await
    }

    /// [`BlobStore::list_page`] of the blobs whose name starts with `prefix`.
    pub async fn list_page_under(
        &self,
        prefix: &str,
        marker: Option<String>,
        max: u32,
    ) -> Result<BlobPage, StorageError> {
        let options = BlobContainerClientListBlobsOptions {
            marker,
            maxresults: Some(i32::try_from(max).unwrap_or(i32::MAX)),
            prefix: (!prefix.is_empty()).then(|| prefix.to_owned()),
            ..Default::default()
        };
        let mut pages = self.container.list_blobs(Some(options))?.into_pages();
        let Some(page) = pages.try_next().await? else {
            return Ok(BlobPage::default());
        };
        let page = page.into_model()?;
        let blobs = page
            .blob_items
            .into_iter()
            .filter_map(|item| {
                let name = item.name?;
                let p = item.properties;
                // Creation-Time, else Last-Modified (the same for a block blob written once).
                let created_at = p
                    .as_ref()
                    .and_then(|p| p.creation_time.or(p.last_modified))
                    .and_then(|t| {
                        chrono::DateTime::from_timestamp(t.unix_timestamp(), t.nanosecond())
                    });
                let copying = p
                    .as_ref()
                    .and_then(|p| p.copy_status.as_ref())
                    .is_some_and(|c| *c == CopyStatus::Pending);
                Some(ListedBlob {
                    name,
                    created_at,
                    etag: p.as_ref().and_then(|p| p.etag.clone()).map(String::from),
                    size: p.as_ref().and_then(|p| p.content_length),
                    copying,
                })
            })
            .collect();
        Ok(BlobPage {
            blobs,
            next: page.next_marker.filter(|m| !m.is_empty()),
        })
    }

    /// A cheap authenticated call (container properties) for readiness probes.
    pub async fn ping(&self) -> Result<(), StorageError> {
        self.container.get_properties(None).await?;
        Ok(())
    }

    /// A writer that stages blocks of the block blob `blob_name` and commits or discards them.
    pub fn block_writer(&self, blob_name: &str) -> BlockWriter {
        let client = self.container.blob_client(blob_name).block_blob_client();
        BlockWriter::new(self.clone(), blob_name, client)
    }

    /// Stages `block` as the block `block_id` of `blob_name` (not visible until committed): for
    /// an upload that arrives over several requests and keeps its block list itself. The ids of
    /// one blob must all have the same length.
    pub async fn stage_block(
        &self,
        blob_name: &str,
        block_id: &[u8],
        block: Bytes,
    ) -> Result<(), StorageError> {
        let client = self.container.blob_client(blob_name).block_blob_client();
        let len = block.len() as u64;
        client
            .stage_block(block_id, len, block.into(), None)
            .await?;
        Ok(())
    }

    /// Commits the staged blocks `block_ids`, in order, as the blob `blob_name` with
    /// `content_type`; staged blocks not in the list are dropped.
    pub async fn commit_blocks(
        &self,
        blob_name: &str,
        block_ids: Vec<Vec<u8>>,
        content_type: &str,
    ) -> Result<(), StorageError> {
        let client = self.container.blob_client(blob_name).block_blob_client();
        block_writer::commit_list(&client, block_ids, Some(content_type)).await
    }

    /// Drops the staged blocks of a blob that was never committed (an abandoned upload) at
    /// once, rather than after the service's week-long garbage collection.
    pub async fn discard_staged(&self, blob_name: &str) -> Result<(), StorageError> {
        let client = self.container.blob_client(blob_name).block_blob_client();
        block_writer::discard_staged(self, &client, blob_name).await
    }

    /// Streams `body` into the block blob `blob_name` and returns its length. Blocks are staged
    /// through a [`BlockWriter`], a few in flight; the block list (with `content_type`) is
    /// committed only after the whole body was read, so a body error leaves no blob behind. A
    /// body that fits in one block (most uploads) is sent in a single Put Blob instead: one
    /// request rather than two, and the storage service's cost per upload is what bounds
    /// throughput. An empty body gives an empty blob.
    ///
    /// An upload that fails after staging blocks discards them at once (best effort), rather
    /// than leaving up to the whole body in uncommitted blocks for the service's garbage
    /// collection.
    pub async fn upload<S, E>(
        &self,
        blob_name: &str,
        content_type: &str,
        body: S,
    ) -> Result<u64, UploadError<E>>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    {
        let mut writer = self.block_writer(blob_name);
        let result = self
            .write_body(&mut writer, blob_name, content_type, body)
            .await;
        if result.is_err() && writer.staged() > 0 {
            if let Err(e) = writer.discard().await {
                tracing::warn!(blob_name, error = %e, "could not discard the staged blocks of a failed upload");
            }
        }
        result
    }

    /// Cuts `body` into [`BLOCK_SIZE`] blocks for `writer` and commits them, or sends a body
    /// smaller than one block whole.
    async fn write_body<S, E>(
        &self,
        writer: &mut BlockWriter,
        blob_name: &str,
        content_type: &str,
        mut body: S,
    ) -> Result<u64, UploadError<E>>
    where
        S: Stream<Item = Result<Bytes, E>> + Send + Unpin,
    {
        let mut buffer = BytesMut::with_capacity(BLOCK_SIZE);
        let mut total: u64 = 0;
        loop {
            let chunk = match body.next().await {
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) => return Err(UploadError::Body(e)),
                None => break,
            };
            total += chunk.len() as u64;
            let mut rest = &chunk[..];
            while !rest.is_empty() {
                let take = rest.len().min(BLOCK_SIZE - buffer.len());
                buffer.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if buffer.len() == BLOCK_SIZE {
                    let full = std::mem::replace(&mut buffer, BytesMut::with_capacity(BLOCK_SIZE));
                    writer.stage(full.freeze()).await?;
                }
            }
            // Surface a failed block early instead of reading the rest of a large body.
            writer.check()?;
        }
        // Below one block nothing was staged yet.
        if total < BLOCK_SIZE as u64 {
            let options = BlockBlobClientUploadOptions {
                blob_content_type: Some(content_type.to_owned()),
                ..Default::default()
            };
            self.container
                .blob_client(blob_name)
                .block_blob_client()
                .upload(buffer.freeze().into(), Some(options))
                .await
                .map_err(StorageError::from)?;
            return Ok(total);
        }
        if !buffer.is_empty() {
            writer.stage(buffer.freeze()).await?;
        }
        writer.commit(content_type).await?;
        Ok(total)
    }

    /// Streams the blob into `dst` and returns the number of bytes written. At most
    /// [`DOWNLOAD_PARALLEL`] ranged requests run at once (the SDK default of 8 buffers far more).
    pub async fn download_to<W>(&self, blob_name: &str, dst: &mut W) -> Result<u64, StorageError>
    where
        W: AsyncWrite + Unpin,
    {
        let client = self.container.blob_client(blob_name);
        let options = BlobClientDownloadOptions {
            parallel: Some(DOWNLOAD_PARALLEL),
            partition_size: Some(DOWNLOAD_PARTITION),
            ..Default::default()
        };
        let mut body = client.download(Some(options)).await?.body;
        let mut written: u64 = 0;
        while let Some(chunk) = body.next().await {
            let chunk = chunk?;
            dst.write_all(&chunk).await.map_err(StorageError::Io)?;
            written += chunk.len() as u64;
        }
        dst.flush().await.map_err(StorageError::Io)?;
        Ok(written)
    }

    /// The blob's ETag, size and copy state; `None` when there is no such blob.
    pub async fn properties(&self, blob_name: &str) -> Result<Option<BlobFacts>, StorageError> {
        let response = match self
            .container
            .blob_client(blob_name)
            .get_properties(None)
            .await
        {
            Ok(r) => r,
            Err(e) => match StorageError::from(e) {
                e if e.is_not_found() => return Ok(None),
                e => return Err(e),
            },
        };
        Ok(Some(BlobFacts {
            etag: response.etag()?.map(String::from).unwrap_or_default(),
            size: response.content_length()?.unwrap_or_default(),
            copying: response.copy_status()? == Some(CopyStatus::Pending),
        }))
    }

    /// The bytes of the blob as it is at `etag`, as a stream; a `412` (or a `404`) when it was
    /// overwritten (or deleted) since, before or while it is read.
    pub async fn read_at(
        &self,
        blob_name: &str,
        etag: &str,
    ) -> Result<impl Stream<Item = Result<Bytes, StorageError>> + Send + Unpin, StorageError> {
        let options = BlobClientDownloadOptions {
            parallel: Some(DOWNLOAD_PARALLEL),
            partition_size: Some(DOWNLOAD_PARTITION),
            if_match: Some(etag.to_owned().into()),
            ..Default::default()
        };
        let body = self
            .container
            .blob_client(blob_name)
            .download(Some(options))
            .await?
            .body;
        Ok(body.map_err(StorageError::from))
    }

    /// Deletes the blob if it still is as it was at `etag`; a blob that is gone, or was
    /// overwritten since (a newer version someone still wants), is left as it is.
    pub async fn delete_at(&self, blob_name: &str, etag: &str) -> Result<(), StorageError> {
        let options = BlobClientDeleteOptions {
            if_match: Some(format!("\"{}\"", etag.trim_matches('"')).into()),
            ..Default::default()
        };
        match self
            .container
            .blob_client(blob_name)
            .delete(Some(options))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => match StorageError::from(e) {
                e if matches!(e.status(), Some(404 | 412)) => Ok(()),
                e => Err(e),
            },
        }
    }

    /// Deletes the blob; a blob that does not exist counts as deleted.
    pub async fn delete(&self, blob_name: &str) -> Result<(), StorageError> {
        match self.container.blob_client(blob_name).delete(None).await {
            Ok(_) => Ok(()),
            Err(e) => match StorageError::from(e) {
                e if e.is_not_found() => Ok(()),
                e => Err(e),
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn container_url_is_built_from_the_endpoint() {
        let cfg = StorageConfig::from_connection_string("UseDevelopmentStorage=true", "up", "q");
        let store = BlobStore::new(&cfg).unwrap();
        assert_eq!(
            store.container.url().as_str(),
            "http://127.0.0.1:10000/devstoreaccount1/up"
        );
        assert_eq!(store.container_name(), "up");
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_is_a_transient_error() {
        let cfg = StorageConfig::from_connection_string(
            "BlobEndpoint=http://127.0.0.1:9/a;QueueEndpoint=http://127.0.0.1:9/a;SharedAccessSignature=sv=1&sig=secret",
            "c",
            "q",
        );
        let started = std::time::Instant::now();
        let err = BlobStore::new(&cfg).unwrap().ping().await.unwrap_err();
        eprintln!("{err} after {:?}", started.elapsed());
        assert!(err.is_transient(), "{err:?}");
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[tokio::test]
    async fn a_body_error_is_returned_as_body_and_nothing_is_sent() {
        // Port 9 (discard) is never an Azure endpoint: any request would fail as Transport.
        let cfg = StorageConfig::from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:9/a;QueueEndpoint=http://127.0.0.1:9/a",
            "c",
            "q",
        );
        let store = BlobStore::new(&cfg).unwrap();
        let body = futures::stream::iter(vec![Ok(Bytes::from_static(b"abc")), Err("too large")]);
        match store.upload("x", "text/csv", body).await {
            Err(UploadError::Body(e)) => assert_eq!(e, "too large"),
            other => panic!("expected a body error, got {other:?}"),
        }
    }
}
