//! The tenant limits every way of uploading goes through: the upload rate before a byte is
//! read, the storage quota before the file is streamed (a cheap check) and again, exactly,
//! where it is recorded (a usage shard whose grant has room locked by the recording statement,
//! all of them near the quota: `db::uploads`), so two uploads cannot both take the last of the
//! quota. Nothing is stored for a refused upload.

use shared::db::limits;

use crate::error::{ApiError, ApiErrorCode};
use crate::state::AppState;

/// Lets an upload of `tenant` start: one from its rate, and room left in its quota for
/// `declared` bytes (0 when the size is not known yet). Returns the quota, which
/// [`super::record::record`] checks again exactly once the size is known.
pub(crate) async fn admit(state: &AppState, tenant: &str, declared: u64) -> Result<u64, ApiError> {
    let found = limits::admit(
        &state.db,
        tenant,
        state.limits.upload_rate,
        i64::try_from(state.limits.storage_quota_bytes).unwrap_or(i64::MAX),
    )
    .await?;
    if let Some(wait) = found.wait {
        return Err(ApiError::RateLimited(wait));
    }
    let quota = found.quota_bytes.unsigned_abs();
    check_quota(quota, found.used_bytes, declared)?;
    Ok(quota)
}

/// The storage quota of `tenant`, for recording an upload that was admitted earlier (a
/// resumable upload completes long after its creation took one from the rate).
pub(crate) async fn quota(state: &AppState, tenant: &str) -> Result<u64, ApiError> {
    let own = limits::overrides(&state.db, tenant).await?;
    Ok(own
        .storage_quota_bytes
        .map_or(state.limits.storage_quota_bytes, |q| q.unsigned_abs()))
}

/// `403 quota_exceeded` unless `size` more bytes fit beside `used` (a file of 0 bytes needs
/// room too: a tenant at its quota stores nothing more). `db::uploads::insert` applies the same
/// rule where the upload is recorded.
pub(crate) fn check_quota(quota: u64, used: i64, size: u64) -> Result<(), ApiError> {
    let after = used.unsigned_abs().saturating_add(size);
    if after > quota || (size == 0 && used.unsigned_abs() >= quota) {
        return Err(quota_exceeded(quota, used));
    }
    Ok(())
}

/// The refusal of an upload that does not fit beside the `used` bytes of a tenant's `quota`.
pub(crate) fn quota_exceeded(quota: u64, used: i64) -> ApiError {
    ApiError::Refused {
        status: axum::http::StatusCode::FORBIDDEN,
        code: ApiErrorCode::QuotaExceeded,
        message: format!(
            "the tenant stores {used} bytes of its quota of {quota}; this upload does not fit"
        ),
    }
}
