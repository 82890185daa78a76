//! What both kinds of delivery read first: the destination's opened secret, and the file's
//! facts and parsed sheets. A file deleted since its delivery was queued has no rows left; its
//! delivery row went with it, so finding none here is a race that ends the attempt.

use anyhow::Context as _;
use shared::db::destination_deliveries::{self, Claimed, FileFacts};
use shared::db::rows::{self, Sheet};
use shared::webhooks::{SealingKey, SigningSecret};

use super::Context;

/// A `webhook_rows` destination's signing secret, opened.
pub fn signing_secret(cx: &Context<'_>, d: &Claimed) -> anyhow::Result<SigningSecret> {
    let sealed = d
        .sealed_secret
        .as_ref()
        .context("the destination has no signing secret")?;
    Ok(key(cx)?.open(d.destination_id, sealed)?)
}

fn key<'a>(cx: &Context<'a>) -> anyhow::Result<&'a SealingKey> {
    cx.hooks
        .keys
        .secret_key
        .as_ref()
        .context("WEBHOOK_SECRET_KEY is not set on the worker")
}

/// The file's facts and its sheets, in index order.
pub async fn load(cx: &Context<'_>, d: &Claimed) -> anyhow::Result<(FileFacts, Vec<Sheet>)> {
    let facts = destination_deliveries::file_facts(cx.db, d.source_file_id)
        .await?
        .context("the file was deleted")?;
    let sheets = rows::sheets(cx.db, d.source_file_id).await?;
    Ok((facts, sheets))
}
