//! `webhook_rows` delivery: the file's rows, sheet by sheet, `POST`ed in chunks of the
//! destination's `chunk_size` (chunk k of n per sheet, 1-based), each signed per Standard
//! Webhooks with the destination's secret and `webhook-id` `<file_id>.<destination_id>.<sheet>.
//! <chunk>`, the same on every retry. Chunk k+1 is sent only after a 2xx for chunk k, and each
//! acknowledged chunk is recorded at once (`chunks_acked`, counted over all sheets in order),
//! so a retry, or another worker after this one died, resumes at the first chunk not
//! acknowledged. A chunk's rows are read as a page of the latest revision, so a resumed
//! delivery needs no pass over the chunks before it.

use anyhow::Context as _;
use serde::Serialize;
use shared::db::destination_deliveries::{self, Claimed};
use shared::db::overlay::{self, Overlay};
use shared::webhooks::SigningSecret;
use uuid::Uuid;

use super::{sheets, Context, Delivered};
use crate::webhooks::client::{self, Outcome};

/// The delivery row is no longer this attempt's (a new revision or a redelivery queued it
/// again, or its destination or file was deleted): the attempt stops, and its outcome is not the
/// destination's failure.
#[derive(Debug, thiserror::Error)]
#[error("superseded: the delivery was queued again (or removed) while it ran")]
pub struct Superseded;

/// The attempt failed after the receiver acknowledged some of its chunks: the delivery moved,
/// so its retry schedule starts over (a receiver restarted fifty times during one long delivery
/// must not use up a schedule meant for one that stays down).
#[derive(Debug, thiserror::Error)]
#[error("after acknowledged chunks")]
pub struct Progressed;

/// One request's body: the contract's shape.
#[derive(Debug, Serialize)]
struct Chunk<'a> {
    file_id: Uuid,
    task_id: Uuid,
    sheet: i32,
    chunk: i64,
    chunks: i64,
    rows_total: i64,
    metadata: Option<&'a serde_json::Value>,
    end_user: Option<&'a serde_json::Value>,
    rows: Vec<RowOut>,
}

#[derive(Debug, Serialize)]
struct RowOut {
    row: i64,
    values: serde_json::Map<String, serde_json::Value>,
}

/// Sends every chunk not yet acknowledged, in order; the bytes sent.
pub async fn deliver(cx: &Context<'_>, d: &Claimed) -> anyhow::Result<Delivered> {
    let secret = sheets::signing_secret(cx, d)?;
    let (facts, sheets) = sheets::load(cx, d).await?;
    let size = i64::from(d.chunk_size.unwrap_or(1000).max(1));
    let per_sheet: Vec<i64> = sheets
        .iter()
        .map(|s| (s.row_count + size - 1) / size)
        .collect();
    let total = i32::try_from(per_sheet.iter().sum::<i64>()).context("too many chunks")?;
    let mut acked = d.chunks_acked.min(total);
    if !destination_deliveries::progress(cx.db, d.id, d.revision, total, acked).await? {
        return Err(Superseded.into());
    }
    let mut bytes = 0u64;
    let mut index = 0i32;
    for (sheet, &chunks) in sheets.iter().zip(&per_sheet) {
        if index + i32::try_from(chunks)? <= acked {
            index += i32::try_from(chunks)?;
            continue; // every chunk of this sheet was acknowledged
        }
        let columns = sheet.columns();
        let overlay =
            Overlay::load(cx.db, d.source_file_id, sheet.sheet_index, sheet.row_count).await?;
        for k in 1..=chunks {
            index += 1;
            if index <= acked {
                continue;
            }
            let page = (Some((k - 1) * size - 1).filter(|a| *a >= 0), size);
            let rows = overlay::latest_page(
                cx.db,
                d.source_file_id,
                sheet.sheet_index,
                overlay.as_ref(),
                page,
            )
            .await?;
            let body = serde_json::to_vec(&Chunk {
                file_id: d.source_file_id,
                task_id: d.task_id,
                sheet: sheet.sheet_index,
                chunk: k,
                chunks,
                rows_total: sheet.row_count,
                metadata: facts.metadata.as_ref(),
                end_user: facts.end_user.as_ref(),
                rows: rows
                    .into_iter()
                    .map(|r| RowOut {
                        row: r.row_index,
                        values: columns
                            .names
                            .iter()
                            .cloned()
                            .zip(encode::typed(r.values, &columns.types, columns.names.len()))
                            .collect(),
                    })
                    .collect(),
            })?;
            let id = format!(
                "{}.{}.{}.{k}",
                d.source_file_id, d.destination_id, sheet.sheet_index
            );
            bytes += body.len() as u64;
            if let Err(e) = send(cx, d, &secret, &id, body).await {
                return Err(if acked > d.chunks_acked {
                    e.context(Progressed)
                } else {
                    e
                });
            }
            acked = index;
            if !destination_deliveries::progress(cx.db, d.id, d.revision, total, acked).await? {
                return Err(Superseded.into());
            }
        }
    }
    Ok(Delivered {
        manifest: None,
        bytes,
    })
}

/// POSTs one chunk; an error unless it was answered with a 2xx.
async fn send(
    cx: &Context<'_>,
    d: &Claimed,
    secret: &SigningSecret,
    id: &str,
    body: Vec<u8>,
) -> anyhow::Result<()> {
    let headers = client::signed_headers(std::slice::from_ref(secret), id, &body);
    let allow_private = cx.hooks.keys.allow_private_networks;
    let answer = client::post(cx.http, &d.url, headers, body, allow_private).await;
    if answer.outcome == Outcome::Delivered {
        Ok(())
    } else {
        anyhow::bail!(
            "chunk {id}: {}",
            answer
                .error
                .unwrap_or_else(|| answer.outcome.as_str().to_owned())
        )
    }
}
