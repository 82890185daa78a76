//! What every handler shares: the pool, the blob store and the upload limit.

use shared::storage::BlobStore;
use sqlx::PgPool;

#[derive(Clone)]
pub struct AppState {
    pub db: PgPool,
    pub blobs: BlobStore,
    pub max_upload_bytes: u64,
}
