//! Opening a container in a tenant's own storage account from what is stored of it (a
//! destination's or a Blob source's): its URL and its credential, sealed under
//! `WEBHOOK_SECRET_KEY` with its owner's id. The container's host is checked to be public again
//! at every opening (unless `WEBHOOK_ALLOW_PRIVATE_NETWORKS`), as a webhook's is. [`Containers`]
//! keeps what it opened for a minute, for work that opens one container for each of many blobs.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    Ok(container.store(allow_private)?)
}

/// How long an opened container is used again before it is opened (and its host checked)
/// anew.
const KEEP: Duration = Duration::from_secs(60);

/// Containers opened recently, by owner. Measured with `bench sources` (10,000 blobs of one
/// source, Azurite, the 2-core development host): a client opened for every blob, each with its
/// own connection pool and host lookup, imported 21 blobs/s; reused for a minute, 33.
#[derive(Default)]
pub struct Containers {
    open: Mutex<HashMap<Uuid, (u64, Instant, BlobStore)>>,
}

impl Containers {
    /// [`open`], or the client opened for the same owner, URL and credential within [`KEEP`].
    pub async fn open(
        &self,
        keys: &WebhookKeyConfig,
        stored: Stored<'_>,
    ) -> anyhow::Result<BlobStore> {
        let owner = stored.owner;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (stored.url, stored.credential_kind, stored.sealed).hash(&mut hasher);
        let print = hasher.finish();
        if let Ok(open) = self.open.lock() {
            if let Some((p, at, store)) = open.get(&owner) {
                if *p == print && at.elapsed() < KEEP {
                    return Ok(store.clone());
                }
            }
        }
        let store = open(keys, stored).await?;
        if let Ok(mut open) = self.open.lock() {
            open.retain(|_, (_, at, _)| at.elapsed() < KEEP);
            open.insert(owner, (print, Instant::now(), store.clone()));
        }
        Ok(store)
    }
}
