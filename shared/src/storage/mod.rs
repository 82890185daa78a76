//! Azure Storage (Blob and Queue) clients, connection strings and Shared Key signing, on top of the
//! official 1.x SDK. Callers use [`BlobStore`] and [`QueueClient`], built from [`StorageConfig`];
//! everything fails with [`StorageError`]. Every request is counted by service and operation
//! ([`metered`]).

mod auth;
pub mod blob;
pub mod config;
pub mod connection_string;
pub mod error;
pub mod metered;
pub mod queue;
pub mod shared_key;

pub use blob::{BlobStore, UploadError};
pub use config::{CredentialKind, StorageConfig};
pub use connection_string::{ConnectionAuth, ConnectionString, ConnectionStringError};
pub use error::StorageError;
pub use queue::{QueueClient, ReceivedMessage};
pub use shared_key::SharedKeyPolicy;
