//! The Standard Webhooks signature: `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "{webhook-id}.{webhook-timestamp}.{body}">`, one `v1,…` per secret in use, space-separated
//! (two during a rotation, so a receiver holding either secret accepts the delivery).

use base64::Engine as _;
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

use super::SigningSecret;

/// One `v1,<base64>` signature of `body` sent as message `id` at `timestamp` (Unix seconds).
pub fn sign(secret: &SigningSecret, id: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    #[allow(clippy::expect_used)]
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.key()).expect("HMAC-SHA256 takes any key length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// The `webhook-signature` header: a signature per secret, space-separated.
pub fn header<'a>(
    secrets: impl IntoIterator<Item = &'a SigningSecret>,
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> String {
    secrets
        .into_iter()
        .map(|s| sign(s, id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_matches_the_specifications_example() {
        // The example of the Standard Webhooks specification and its reference libraries.
        let secret =
            SigningSecret::from_whsec("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("secret");
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_rotation_signs_with_every_secret() {
        let (a, b) = (SigningSecret::generate(), SigningSecret::generate());
        let both = header([&a, &b], "id", 1, b"{}");
        assert_eq!(
            both,
            format!("{} {}", sign(&a, "id", 1, b"{}"), sign(&b, "id", 1, b"{}"))
        );
    }
}
