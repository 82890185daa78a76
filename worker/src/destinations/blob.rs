//! `azure_blob` delivery: each sheet of the file, as the latest revision has it, written to
//! `<prefix><template or "untemplated">/<file_id>/<sheet index>.<ext>` in the tenant's
//! container, then `manifest.json` beside them last, so a reader that sees the manifest sees
//! complete files. A sheet is encoded chunk by chunk ([`encode::SheetEncoder`], the api's
//! exporter) and staged in [`BLOCK`]-sized blocks as it goes, hashed on the way: memory holds a
//! block or two whatever the sheet's size, and nothing is visible under the blob's name before
//! its block list is committed. The encoding is deterministic (same columns, same row group
//! sizes), so writing again (a retry, a redelivery) commits the same bytes under the same names.
//! The container's host is checked to be public before each delivery (unless
//! `WEBHOOK_ALLOW_PRIVATE_NETWORKS`), as a webhook's is.

use anyhow::Context as _;
use bytes::Bytes;
use futures::StreamExt as _;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use shared::db::destination_deliveries::{Claimed, FileFacts};
use shared::db::overlay::{self, Overlay};
use shared::db::rows::Sheet;
use shared::storage::{BlobStore, BlockWriter};
use uuid::Uuid;

use super::{sheets, Context, Delivered};
use crate::tenant_container;

/// Size of one staged block (what the service's own uploads use).
const BLOCK: usize = 4 * 1024 * 1024;

/// `manifest.json`: the contract's shape.
#[derive(Debug, Serialize)]
struct Manifest<'a> {
    file_id: Uuid,
    task_id: Uuid,
    tenant: &'a str,
    template: Option<&'a str>,
    template_version: Option<i32>,
    revision: i32,
    metadata: Option<&'a serde_json::Value>,
    end_user: Option<&'a serde_json::Value>,
    sheets: Vec<SheetEntry>,
}

/// One sheet's blob in the manifest.
#[derive(Debug, Serialize)]
struct SheetEntry {
    index: i32,
    name: String,
    rows: i64,
    /// The blob's name in the container.
    path: String,
    bytes: u64,
    sha256: String,
}

/// Writes every sheet, then the manifest; returns the manifest and the bytes written.
pub async fn deliver(cx: &Context<'_>, d: &Claimed) -> anyhow::Result<Delivered> {
    let store = open(cx, d).await?;
    let (facts, sheets) = sheets::load(cx, d).await?;
    let format = d
        .format
        .as_deref()
        .and_then(encode::Format::parse)
        .context("the destination has no format")?;
    let folder = format!(
        "{}{}/{}",
        d.prefix,
        facts.template_name.as_deref().unwrap_or("untemplated"),
        d.source_file_id
    );
    let mut entries = Vec::with_capacity(sheets.len());
    for sheet in &sheets {
        let path = format!("{folder}/{}.{}", sheet.sheet_index, format.as_str());
        let (bytes, sha256) = write_sheet(cx, &store, d.source_file_id, sheet, format, &path)
            .await
            .with_context(|| format!("writing {path}"))?;
        entries.push(SheetEntry {
            index: sheet.sheet_index,
            name: sheet.name.clone(),
            rows: sheet.row_count,
            path,
            bytes,
            sha256,
        });
    }
    let written: u64 = entries.iter().map(|e| e.bytes).sum();
    let manifest = manifest(d, &facts, entries);
    let body = serde_json::to_vec_pretty(&manifest)?;
    let path = format!("{folder}/manifest.json");
    let len = body.len() as u64;
    store
        .upload(
            &path,
            "application/json",
            futures::stream::iter([Ok::<_, std::convert::Infallible>(Bytes::from(body))]),
        )
        .await
        .with_context(|| format!("writing {path}"))?;
    Ok(Delivered {
        manifest: Some(serde_json::to_value(&manifest)?),
        bytes: written + len,
    })
}

fn manifest<'a>(d: &Claimed, facts: &'a FileFacts, sheets: Vec<SheetEntry>) -> Manifest<'a> {
    Manifest {
        file_id: d.source_file_id,
        task_id: d.task_id,
        tenant: &facts.tenant_id,
        template: facts.template_name.as_deref(),
        template_version: facts.template_version,
        revision: d.revision,
        metadata: facts.metadata.as_ref(),
        end_user: facts.end_user.as_ref(),
        sheets,
    }
}

/// The destination's container, its host checked to be public (again, now).
async fn open(cx: &Context<'_>, d: &Claimed) -> anyhow::Result<BlobStore> {
    let stored = tenant_container::Stored {
        owner: d.destination_id,
        url: &d.url,
        credential_kind: d.credential_kind.as_deref(),
        sealed: d.sealed_secret.as_deref(),
    };
    tenant_container::open(&cx.hooks.keys, stored).await
}

/// Encodes one sheet into its blob, block by block; its length and SHA-256 (hex).
async fn write_sheet(
    cx: &Context<'_>,
    store: &BlobStore,
    file_id: Uuid,
    sheet: &Sheet,
    format: encode::Format,
    path: &str,
) -> anyhow::Result<(u64, String)> {
    let columns = sheet.columns();
    let mut encoder = encode::SheetEncoder::new(format, columns.names, columns.types);
    let overlay = Overlay::load(cx.db, file_id, sheet.sheet_index, sheet.row_count).await?;
    let mut out = Blocks::new(store.block_writer(path));
    out.buf = encoder.header();
    let written = async {
        let mut chunks =
            overlay::latest_chunks(cx.db, file_id, sheet.sheet_index, overlay.as_ref());
        while let Some(chunk) = chunks.next().await {
            encoder.chunk(&chunk?, &mut out.buf)?;
            out.stage_full().await?;
        }
        encoder.finish(&mut out.buf)?;
        out.commit(format.content_type()).await
    }
    .await;
    if written.is_err() {
        out.discard().await;
    }
    written
}

/// A blob being written: the bytes not staged yet, the digest and length of all so far.
struct Blocks {
    writer: Option<BlockWriter>,
    buf: Vec<u8>,
    sha: Sha256,
    len: u64,
}

impl Blocks {
    fn new(writer: BlockWriter) -> Self {
        Self {
            writer: Some(writer),
            buf: Vec::with_capacity(BLOCK),
            sha: Sha256::new(),
            len: 0,
        }
    }

    /// Stages every whole block in the buffer.
    async fn stage_full(&mut self) -> anyhow::Result<()> {
        while self.buf.len() >= BLOCK {
            let rest = self.buf.split_off(BLOCK);
            let block = std::mem::replace(&mut self.buf, rest);
            self.stage(block).await?;
        }
        Ok(())
    }

    async fn stage(&mut self, block: Vec<u8>) -> anyhow::Result<()> {
        self.sha.update(&block);
        self.len += block.len() as u64;
        let writer = self
            .writer
            .as_mut()
            .context("the blob is already written")?;
        writer.stage(Bytes::from(block)).await?;
        writer.check()?;
        Ok(())
    }

    /// Stages the rest and commits the blob: its length and SHA-256.
    async fn commit(&mut self, content_type: &str) -> anyhow::Result<(u64, String)> {
        self.stage_full().await?;
        if !self.buf.is_empty() {
            let last = std::mem::take(&mut self.buf);
            self.stage(last).await?;
        }
        let writer = self
            .writer
            .as_mut()
            .context("the blob is already written")?;
        writer.commit(content_type).await?;
        self.writer = None;
        let digest = std::mem::take(&mut self.sha).finalize();
        Ok((self.len, hex(&digest)))
    }

    /// Drops the staged blocks of a blob that failed (best effort: the service collects them
    /// within a week anyway).
    async fn discard(&mut self) {
        if let Some(writer) = self.writer.take() {
            if writer.staged() > 0 {
                if let Err(e) = writer.discard().await {
                    tracing::debug!(error = %e, "could not discard staged blocks");
                }
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
