//! Reading one found blob out of the tenant's container into the service's uploads container:
//! what is known of it first (gone, overwritten, still being copied, empty or too large: no
//! byte is read; a listing's word for it, else its properties), then its bytes at the found
//! ETag (`If-Match`), streamed block by block into the
//! uploads container and hashed on the way, so memory holds a block or two whatever its size.
//!
//! Why a copy, not a read from the tenant's container at parse time: the file must stay what
//! it was when imported (a parse retried after the blob was overwritten or deleted, a
//! correction's revision, an export, all read the same bytes), the consumer keeps one code path
//! and one credential, and a source whose credential later expires does not fail its files.
//! A copy through the worker rather than Azure's server-side copy: the same code serves every
//! credential (a SAS, a connection string, a managed identity) and Azurite.

use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use sha2::{Digest as _, Sha256};
use shared::db::source_blobs::NotImported;
use shared::domain::{FileFormat, ParseTaskPayload};
use shared::storage::{BlobStore, StorageError, UploadError};

/// A blob copied into the uploads container.
#[derive(Debug)]
pub struct Copied {
    pub format: FileFormat,
    pub size: u64,
    pub sha256: String,
    /// The bytes of a small file, carried in its task message.
    pub small: Option<Bytes>,
}

/// Why a copy stopped.
#[derive(Debug)]
pub enum Stopped {
    /// The blob will not be imported, or not now.
    Not(NotImported),
    /// The tenant's container did not answer as it should: the source is down.
    Source(StorageError),
    /// The service's own uploads container failed.
    Uploads(StorageError),
}

/// The file name of a blob: its last path segment.
pub fn file_name(blob: &str) -> &str {
    blob.rsplit('/').next().unwrap_or(blob)
}

fn skipped(outcome: &str, message: impl Into<String>) -> Stopped {
    Stopped::Not(NotImported::Skipped {
        outcome: outcome.to_owned(),
        message: message.into(),
    })
}

/// The blob has another ETag now, or is gone: this version will never be read.
fn gone() -> Stopped {
    skipped(
        "blob_gone",
        "the blob was deleted or overwritten before it was read (a new version is found as a \
         blob of its own)",
    )
}

/// The blob to copy: its name, the version found, and what the finding said of it.
pub struct Found<'a> {
    pub name: &'a str,
    pub etag: &'a str,
    /// Its size, as a listing said (a listing leaves out blobs being copied into); `None` for
    /// a blob an event announced, whose properties are read first.
    pub listed_size: Option<u64>,
}

/// Copies the blob `found` of `source`, as it is at its ETag, to `target` in `uploads`.
pub async fn copy(
    source: &BlobStore,
    found: &Found<'_>,
    uploads: &BlobStore,
    target: &str,
    max_bytes: u64,
) -> Result<Copied, Stopped> {
    let (name, etag) = (found.name, found.etag);
    // A listing saw this version committed and whole; reading it at its ETag below fails if it
    // changed since. An event's blob may still be being copied into: its properties say.
    let size = match found.listed_size {
        Some(size) => size,
        None => {
            let facts = match source.properties(name).await {
                Ok(Some(facts)) => facts,
                Ok(None) => return Err(gone()),
                Err(e) => return Err(Stopped::Source(e)),
            };
            if unquoted(&facts.etag) != unquoted(etag) {
                return Err(gone());
            }
            if facts.copying {
                // Announced before the copy into it ended: tried again shortly.
                return Err(Stopped::Not(NotImported::Deferred {
                    retry_in: std::time::Duration::from_secs(10),
                }));
            }
            facts.size
        }
    };
    if size == 0 {
        return Err(skipped("empty_file", "the blob is empty"));
    }
    if size > max_bytes {
        return Err(skipped(
            "file_too_large",
            format!(
                "the blob has {size} bytes; at most {max_bytes} are imported (MAX_UPLOAD_BYTES)"
            ),
        ));
    }
    let mut body = match source.read_at(name, &quoted(etag)).await {
        Ok(body) => body,
        Err(e) if matches!(e.status(), Some(404 | 412)) => return Err(gone()),
        Err(e) => return Err(Stopped::Source(e)),
    };
    let first = match body.next().await {
        Some(Ok(chunk)) => chunk,
        Some(Err(e)) if matches!(e.status(), Some(404 | 412)) => return Err(gone()),
        Some(Err(e)) => return Err(Stopped::Source(e)),
        None => Bytes::new(),
    };
    let Some(format) = FileFormat::detect(&first, file_name(name)) else {
        return Err(skipped(
            "unsupported_format",
            "the blob is neither CSV/TSV nor a workbook (xlsx, xlsm, xlsb, xls, ods)",
        ));
    };
    let mut hasher = Sha256::new();
    let mut small = Some(BytesMut::new());
    let mut size: u64 = 0;
    let metered = futures::stream::iter([Ok(first)]).chain(body).map(|chunk| {
        let chunk = chunk?;
        size += chunk.len() as u64;
        if size > max_bytes {
            return Err(StorageError::Io(std::io::Error::other(
                "the blob grew past the limit",
            )));
        }
        hasher.update(&chunk);
        small = small
            .take()
            .filter(|s| s.len() + chunk.len() <= ParseTaskPayload::INLINE_MAX)
            .map(|mut s| {
                s.extend_from_slice(&chunk);
                s
            });
        Ok(chunk)
    });
    match uploads
        .upload(target, format.content_type(), Box::pin(metered))
        .await
    {
        Ok(_) => {}
        Err(UploadError::Body(e)) if matches!(e.status(), Some(404 | 412)) => return Err(gone()),
        Err(UploadError::Body(e)) => return Err(Stopped::Source(e)),
        Err(UploadError::Storage(e)) => return Err(Stopped::Uploads(e)),
    }
    Ok(Copied {
        format,
        size,
        sha256: format!("{:x}", hasher.finalize()),
        small: small.map(BytesMut::freeze),
    })
}

/// An ETag without its quotes: listings, headers and Event Grid write it either way.
pub fn unquoted(etag: &str) -> &str {
    etag.trim_matches('"')
}

fn quoted(etag: &str) -> String {
    format!("\"{}\"", unquoted(etag))
}
