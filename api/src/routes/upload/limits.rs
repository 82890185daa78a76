//! The tenant limits every way of uploading goes through: the upload rate before a byte is
//! read, the storage quota before the file is streamed (a cheap check) and again, exactly,
//! where it is recorded (the tenant's usage row locked in the recording transaction, so two
//! uploads cannot both take the last of the quota). Nothing is stored for a refused upload.

use shared::db::limits::{self, UploadRate};

use crate::error::{ApiError, ApiErrorCode};
use crate::state::AppState;

/// A tenant's limits: its own (`api tenants set`) or the settings' defaults.
struct TenantLimits {
    upload_rate: UploadRate,
    storage_quota_bytes: u64,
}

async fn of(state: &AppState, tenant: &str) -> Result<TenantLimits, ApiError> {
    let own = limits::overrides(&state.db, tenant).await?;
    Ok(TenantLimits {
        upload_rate: own.upload_rate.unwrap_or(state.limits.upload_rate),
        storage_quota_bytes: own
            .storage_quota_bytes
            .map_or(state.limits.storage_quota_bytes, |q| q.unsigned_abs()),
    })
}

/// Lets an upload of `tenant` start: one from its rate, and room left in its quota for
/// `declared` bytes (0 when the size is not known yet). Returns the quota, which
/// [`super::record::record`] checks again exactly once the size is known.
pub(crate) async fn admit(state: &AppState, tenant: &str, declared: u64) -> Result<u64, ApiError> {
    let own = of(state, tenant).await?;
    if let Some(wait) = limits::take_upload(&state.db, tenant, own.upload_rate).await? {
        return Err(ApiError::RateLimited(wait));
    }
    let used = limits::usage(&state.db, tenant).await?;
    check_quota(own.storage_quota_bytes, used, declared)?;
    Ok(own.storage_quota_bytes)
}

/// The storage quota of `tenant`, for recording an upload that was admitted earlier (a
/// resumable upload completes long after its creation took one from the rate).
pub(crate) async fn quota(state: &AppState, tenant: &str) -> Result<u64, ApiError> {
    Ok(of(state, tenant).await?.storage_quota_bytes)
}

/// `403 quota_exceeded` unless `size` more bytes fit beside `used` (a file of 0 bytes needs
/// room too: a tenant at its quota stores nothing more).
pub(crate) fn check_quota(quota: u64, used: i64, size: u64) -> Result<(), ApiError> {
    let after = used.unsigned_abs().saturating_add(size);
    if after > quota || (size == 0 && used.unsigned_abs() >= quota) {
        return Err(ApiError::Refused {
            status: axum::http::StatusCode::FORBIDDEN,
            code: ApiErrorCode::QuotaExceeded,
            message: format!(
                "the tenant stores {used} bytes of its quota of {quota}; this upload does not fit"
            ),
        });
    }
    Ok(())
}
