//! Opening a container in a tenant's own storage account from what is stored of it (a
//! destination's or a Blob source's): its URL and its credential, sealed under
//! `WEBHOOK_SECRET_KEY` with its owner's id. The container's host is checked to be public again
//! at every opening (unless `WEBHOOK_ALLOW_PRIVATE_NETWORKS`), as a webhook's is.

use anyhow::Context as _;
use shared::storage::external::{ContainerCredential, ExternalContainer};
use shared::storage::BlobStore;
use shared::webhooks::{address, WebhookKeyConfig};
use uuid::Uuid;

/// A container as stored.
pub struct Stored<'a> {
    /// The destination or source whose id sealed the credential.
    pub owner: Uuid,
    pub url: &'a str,
    pub credential_kind: Option<&'a str>,
    pub sealed: Option<&'a [u8]>,
}

/// The container's client, its credential opened and its host checked.
pub async fn open(keys: &WebhookKeyConfig, stored: Stored<'_>) -> anyhow::Result<BlobStore> {
    let secret = match stored.sealed {
        None => None,
        Some(sealed) => {
            let key = keys
                .secret_key
                .as_ref()
                .context("WEBHOOK_SECRET_KEY is not set: a stored credential cannot be opened")?;
            let bytes = key.open_bytes(stored.owner, sealed)?;
            Some(String::from_utf8(bytes).context("the stored credential is not text")?)
        }
    };
    let credential = stored
        .credential_kind
        .and_then(|kind| ContainerCredential::from_stored(kind, secret))
        .context("the stored credential is incomplete")?;
    let allow_private = keys.allow_private_networks;
    let container = ExternalContainer::parse(stored.url, credential, allow_private)?;
    address::resolve_public(&container.endpoint, allow_private).await?;
    Ok(container.store()?)
}
