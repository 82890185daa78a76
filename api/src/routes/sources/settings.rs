//! What a source's settings must be before they are stored: every problem found at once, each
//! with its JSON pointer (`422 invalid_source`), after the URL rules that webhooks follow
//! (`422 unsafe_url`). The container, prefix and credential are checked as a destination's are
//! ([`crate::routes::destinations::checks`]); the template is the tenant's (`422
//! unknown_template`), as an upload's.

use shared::domain::OnInvalid;
use shared::storage::external::GivenCredential;
use uuid::Uuid;

use crate::error::ApiError;
use crate::routes::destinations::checks::{self, Problems};
use crate::routes::webhooks::sealing_key;
use crate::state::AppState;

/// A checked container with its credential sealed for the source `id`.
pub(super) struct Sealed {
    pub container_url: String,
    pub credential_kind: &'static str,
    pub sealed: Option<Vec<u8>>,
}

/// Checks `container_url` and `credential` and seals the credential for the source `id`; `None`
/// when `p` holds why not.
pub(super) async fn container(
    state: &AppState,
    p: &mut Problems,
    id: Uuid,
    container_url: &str,
    credential: GivenCredential,
) -> Result<Option<Sealed>, ApiError> {
    let key = sealing_key(state)?;
    let Some(c) = checks::container(state, p, container_url, credential).await? else {
        return Ok(None);
    };
    Ok(Some(Sealed {
        container_url: c.url(),
        credential_kind: c.credential.kind(),
        sealed: c
            .credential
            .secret()
            .map(|s| key.seal_bytes(id, s.as_bytes())),
    }))
}

/// A prefix of blob names: any start of a name (`incoming/`, `2026-`), at most 512 bytes, no
/// leading `/` or control characters.
pub(super) fn prefix(p: &mut Problems, prefix: Option<&str>) -> String {
    let prefix = prefix.unwrap_or_default();
    if prefix.len() > 512 || prefix.starts_with('/') || prefix.chars().any(char::is_control) {
        p.add(
            "/prefix",
            "a prefix is the start of blob names: at most 512 bytes, without a leading `/` or \
             control characters",
        );
    }
    prefix.to_owned()
}

pub(super) fn on_invalid(p: &mut Problems, on_invalid: Option<&str>) -> Option<String> {
    let text = on_invalid?;
    if text.parse::<OnInvalid>().is_err() {
        p.add(
            "/on_invalid",
            "on_invalid is reject_file, drop_invalid_rows or keep_invalid_rows",
        );
    }
    Some(text.to_owned())
}

pub(super) fn after_import(p: &mut Problems, after: Option<&str>) -> Option<String> {
    let text = after?;
    if !matches!(text, "keep" | "delete") {
        p.add("/after_import", "after_import is `keep` or `delete`");
    }
    Some(text.to_owned())
}

pub(super) fn metadata(
    p: &mut Problems,
    metadata: Option<serde_json::Value>,
) -> Option<serde_json::Value> {
    match shared::domain::metadata::check(metadata?) {
        Ok(v) => Some(v),
        Err(message) => {
            p.add("/metadata", message);
            None
        }
    }
}

/// `422 unknown_template` unless the tenant has the template.
pub(super) async fn template(
    state: &AppState,
    tenant: &str,
    name: Option<&str>,
) -> Result<(), ApiError> {
    if let Some(name) = name {
        crate::routes::templates::named(state, tenant, name).await?;
    }
    Ok(())
}
