//! API keys: `srk_` followed by 43 base64url characters (256 random bits). The prefix makes a
//! leaked key recognisable to secret scanners and to people; only the SHA-256 of the whole key is
//! stored, and the key itself is shown once, when it is created.

use base64::Engine as _;
use rand::RngCore as _;
use sha2::{Digest, Sha256};
use shared::db::api_keys::{self, ApiKey, NewApiKey};
use sqlx::PgExecutor;
use uuid::Uuid;

/// What every key starts with.
pub const PREFIX: &str = "srk_";
/// Random bytes in a key.
const SECRET_BYTES: usize = 32;
/// Characters of a key kept in clear (prefix plus 8 of the secret) so `api keys list` can name
/// it without revealing it: 48 bits, far too few to guess the other 208.
const SHOWN_CHARS: usize = PREFIX.len() + 8;

/// A key just created: its row and the secret, which exists nowhere else.
pub struct CreatedKey {
    pub key: ApiKey,
    pub secret: String,
}

/// The SHA-256 under which a key is stored and looked up.
pub fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// True when `token` has the shape of an API key (so it is never sent to the JWT validator).
pub fn looks_like_key(token: &str) -> bool {
    token.starts_with(PREFIX)
}

/// Creates a key for `tenant_id` named `name`.
pub async fn create(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    name: &str,
) -> sqlx::Result<CreatedKey> {
    let mut random = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut random);
    let secret = format!(
        "{PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random)
    );
    let key = api_keys::insert(
        db,
        &NewApiKey {
            id: Uuid::now_v7(),
            tenant_id,
            name,
            prefix: &secret[..SHOWN_CHARS],
            secret_hash: &hash(&secret),
        },
    )
    .await?;
    Ok(CreatedKey { key, secret })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_recognised_by_their_prefix_and_hashed_whole() {
        assert!(looks_like_key("srk_abc"));
        assert!(!looks_like_key("eyJhbGciOiJSUzI1NiJ9.e30.sig"));
        assert_ne!(hash("srk_a"), hash("srk_b"));
        assert_eq!(hash("srk_a"), hash("srk_a"));
    }
}
