//! Import session tokens: `srs_` followed by 43 base64url characters (256 random bits), stored
//! as a SHA-256 like API keys ([`super::api_key::hash`]) and shown once, in the answer that
//! creates the session. The prefix tells them from API keys (and to secret scanners).

/// What every session token starts with.
pub const PREFIX: &str = "srs_";

/// True when `token` has the shape of a session token.
pub fn looks_like_token(token: &str) -> bool {
    token.starts_with(PREFIX)
}

/// A new token.
pub fn new_token() -> String {
    super::random_token(PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_told_from_api_keys() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert!(looks_like_token(&a) && a.len() == PREFIX.len() + 43);
        assert!(!super::super::api_key::looks_like_key(&a));
        assert!(!looks_like_token("srk_abc"));
    }
}
