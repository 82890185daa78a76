//! What every handler shares: the pool, the blob store, the authenticator, the limits, the
//! event streams' listener, the webhook settings and the resumable uploads' running digests.

use std::sync::Arc;

use shared::storage::BlobStore;
use sqlx::PgPool;

use crate::auth::Authenticator;
use crate::compiler::Compiler;
use crate::config::{HttpConfig, LimitsConfig, ResumableConfig, WebhooksConfig};
use crate::digests::Digests;
use crate::event_hub::EventHub;

#[derive(Clone)]
pub struct AppState {
    pub db: PgPool,
    pub blobs: BlobStore,
    pub auth: Arc<Authenticator>,
    pub max_upload_bytes: u64,
    pub http: Arc<HttpConfig>,
    pub events: EventHub,
    pub webhooks: Arc<WebhooksConfig>,
    pub limits: Arc<LimitsConfig>,
    pub resumable: Arc<ResumableConfig>,
    pub digests: Arc<Digests>,
    pub compiler: Compiler,
}
