//! Webhook signing secrets. A secret is 32 random bytes, shown to its owner once as
//! `whsec_<base64>` (the Standard Webhooks form, which the official verifiers take as is). It
//! must stay usable for signing, so it cannot be hashed like an API key; it is stored sealed
//! instead: AES-256-GCM under `WEBHOOK_SECRET_KEY`, a key that lives in the deployment's secret
//! store and never in the database, with the endpoint's id as associated data. A copy of the
//! database (a backup, a replica, an injection elsewhere) then reveals no secret and cannot move
//! one endpoint's secret to another; the api writes secrets and never reads one back, the
//! worker opens them to sign.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use base64::Engine as _;
use uuid::Uuid;

const PREFIX: &str = "whsec_";
const SECRET_BYTES: usize = 32;
/// The first byte of a sealed secret: the format (and, one day, which key sealed it).
const SEALED_V1: u8 = 1;

/// A signing secret's key bytes. Never in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(Vec<u8>);

impl std::fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningSecret(***)")
    }
}

impl SigningSecret {
    /// A new random secret.
    pub fn generate() -> Self {
        let mut bytes = vec![0u8; SECRET_BYTES];
        // The system's CSPRNG; failing it is not something to go on from.
        #[allow(clippy::expect_used)]
        aws_lc_rs::rand::fill(&mut bytes).expect("the system random number generator works");
        Self(bytes)
    }

    /// `whsec_<base64>`, as its owner is shown it once.
    pub fn to_whsec(&self) -> String {
        format!(
            "{PREFIX}{}",
            base64::engine::general_purpose::STANDARD.encode(&self.0)
        )
    }

    /// Reads `whsec_<base64>` (what a receiver configures; tests sign with it).
    pub fn from_whsec(s: &str) -> Option<Self> {
        let b64 = s.strip_prefix(PREFIX)?;
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .ok()
            .filter(|b| !b.is_empty())
            .map(Self)
    }

    /// The HMAC key.
    pub fn key(&self) -> &[u8] {
        &self.0
    }
}

/// `WEBHOOK_SECRET_KEY`: seals and opens signing secrets. Never in `Debug`.
#[derive(Clone)]
pub struct SealingKey(std::sync::Arc<LessSafeKey>);

impl std::fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealingKey(***)")
    }
}

/// A sealed secret that does not open: another key sealed it, or it was altered or moved.
#[derive(Debug, thiserror::Error)]
#[error("the webhook secret cannot be opened with WEBHOOK_SECRET_KEY (another key sealed it, or it was altered)")]
pub struct Unsealable;

impl SealingKey {
    /// Parses the setting: base64 of exactly 32 bytes.
    pub fn parse(s: &str) -> Result<Self, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|_| "WEBHOOK_SECRET_KEY is not base64".to_owned())?;
        Self::from_bytes(&bytes)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| {
            format!(
                "WEBHOOK_SECRET_KEY must be 32 bytes (it is {}): `openssl rand -base64 32` makes one",
                bytes.len()
            )
        })?;
        Ok(Self(std::sync::Arc::new(LessSafeKey::new(key))))
    }

    /// Seals `secret` for endpoint `endpoint_id`: version, nonce, ciphertext and tag.
    pub fn seal(&self, endpoint_id: Uuid, secret: &SigningSecret) -> Vec<u8> {
        self.seal_bytes(endpoint_id, &secret.0)
    }

    /// Seals any secret bytes for `owner_id` the same way: a destination's storage credential
    /// (a SAS or a connection string) is kept like a signing secret.
    pub fn seal_bytes(&self, endpoint_id: Uuid, secret: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        #[allow(clippy::expect_used)]
        aws_lc_rs::rand::fill(&mut nonce).expect("the system random number generator works");
        let mut sealed = secret.to_vec();
        #[allow(clippy::expect_used)]
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(endpoint_id.as_bytes()),
                &mut sealed,
            )
            .expect("AES-GCM seals any input under 64 GiB");
        let mut out = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        out.push(SEALED_V1);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what [`SealingKey::seal`] sealed for the same endpoint.
    pub fn open(&self, endpoint_id: Uuid, sealed: &[u8]) -> Result<SigningSecret, Unsealable> {
        self.open_bytes(endpoint_id, sealed).map(SigningSecret)
    }

    /// Opens what [`SealingKey::seal_bytes`] sealed for the same owner.
    pub fn open_bytes(&self, endpoint_id: Uuid, sealed: &[u8]) -> Result<Vec<u8>, Unsealable> {
        let (&version, rest) = sealed.split_first().ok_or(Unsealable)?;
        if version != SEALED_V1 || rest.len() < NONCE_LEN {
            return Err(Unsealable);
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| Unsealable)?;
        let mut buf = ciphertext.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(endpoint_id.as_bytes()), &mut buf)
            .map_err(|_| Unsealable)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SealingKey {
        SealingKey::from_bytes(&[7u8; 32]).expect("a 32-byte key")
    }

    #[test]
    fn a_secret_reads_back_from_its_whsec_form() {
        let secret = SigningSecret::generate();
        let shown = secret.to_whsec();
        assert!(shown.starts_with("whsec_"));
        assert_eq!(SigningSecret::from_whsec(&shown), Some(secret.clone()));
        assert_eq!(secret.key().len(), 32);
        assert_ne!(SigningSecret::generate(), secret);
        assert_eq!(format!("{secret:?}"), "SigningSecret(***)");
        assert_eq!(SigningSecret::from_whsec("whsec_"), None);
        assert_eq!(SigningSecret::from_whsec("secret"), None);
    }

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_for_its_endpoint() {
        let secret = SigningSecret::generate();
        let endpoint = Uuid::new_v4();
        let sealed = key().seal(endpoint, &secret);
        assert!(!sealed
            .windows(secret.key().len())
            .any(|w| w == secret.key()));
        assert_eq!(key().open(endpoint, &sealed).ok(), Some(secret.clone()));
        // Another endpoint's row, another key, or one altered byte: nothing.
        assert!(key().open(Uuid::new_v4(), &sealed).is_err());
        let other = SealingKey::from_bytes(&[8u8; 32]).expect("key");
        assert!(other.open(endpoint, &sealed).is_err());
        let mut altered = sealed.clone();
        let last = altered.len() - 1;
        altered[last] ^= 1;
        assert!(key().open(endpoint, &altered).is_err());
        assert!(key().open(endpoint, &[]).is_err());
        // Two seals of one secret differ (a fresh nonce each).
        assert_ne!(key().seal(endpoint, &secret), sealed);
    }

    #[test]
    fn the_setting_is_base64_of_32_bytes() {
        assert!(
            SealingKey::parse(&base64::engine::general_purpose::STANDARD.encode([1u8; 32])).is_ok()
        );
        assert!(
            SealingKey::parse(&base64::engine::general_purpose::STANDARD.encode([1u8; 16]))
                .is_err()
        );
        assert!(SealingKey::parse("not base64!").is_err());
        assert_eq!(format!("{:?}", key()), "SealingKey(***)");
    }
}
