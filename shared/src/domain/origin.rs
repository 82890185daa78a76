//! Where an imported file came from (contract v1.3, "Blob sources"): the source, the blob's
//! name and the ETag of the version imported. Stored with the file (`source_files.origin`) and
//! shown as the file view's `origin`.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Origin {
    pub source_id: Uuid,
    pub blob: String,
    pub etag: String,
}
