//! Azure Storage (Blob and Queue) clients, connection strings and Shared Key signing, on top of the
//! official 1.x SDK. Callers use [`BlobStore`] and [`QueueClient`], built from [`StorageConfig`];
//! everything fails with [`StorageError`]. Every request is counted by service and operation
//! ([`metered`]).

mod auth;
pub mod blob;
pub mod block_writer;
pub mod config;
pub mod connection_string;
pub mod error;
pub mod external;
pub mod metered;
pub mod queue;
pub mod shared_key;

pub use blob::{BlobFacts, BlobPage, BlobStore, ListedBlob, UploadError};
pub use block_writer::BlockWriter;
pub use config::{CredentialKind, StorageConfig};
pub use connection_string::{ConnectionAuth, ConnectionString, ConnectionStringError};
pub use error::StorageError;
pub use queue::{QueueClient, ReceivedMessage};
pub use shared_key::SharedKeyPolicy;

use std::sync::Arc;

use azure_core::http::policies::{Policy, PolicyResult};
use azure_core::http::{Context, Request};

/// Passes `request` on to the rest of the pipeline: what our policies ([`SharedKeyPolicy`],
/// [`metered`]'s counter) do once they have added to it. `policy` names the caller, for the
/// error if it was wrongly placed last.
async fn send_next(
    ctx: &Context<'_>,
    request: &mut Request,
    next: &[Arc<dyn Policy>],
    policy: &str,
) -> PolicyResult {
    match next.split_first() {
        Some((first, rest)) => first.send(ctx, request, rest).await,
        None => Err(azure_core::Error::with_message(
            azure_core::error::ErrorKind::Other,
            format!("{policy} must not be the last policy of a pipeline"),
        )),
    }
}
