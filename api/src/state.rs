//! What every handler shares: the pool, the blob store, the authenticator and the limits.

use std::sync::Arc;

use shared::storage::BlobStore;
use sqlx::PgPool;

use crate::auth::Authenticator;
use crate::config::HttpConfig;

#[derive(Clone)]
pub struct AppState {
    pub db: PgPool,
    pub blobs: BlobStore,
    pub auth: Arc<Authenticator>,
    pub max_upload_bytes: u64,
    pub http: Arc<HttpConfig>,
}
