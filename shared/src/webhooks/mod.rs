//! What the api and the worker share about webhooks: the settings both read, the signing
//! secrets and how they are kept ([`secret`]), the Standard Webhooks signature ([`signature`]),
//! which addresses a webhook may be sent to ([`address`]), the client that sends them
//! ([`client`]), and one request to a validation hook ([`hook_call`]).

pub mod address;
pub mod client;
pub mod hook_call;
pub mod secret;
pub mod signature;

pub use address::{check_url, is_public, UnsafeUrl};
pub use secret::{SealingKey, SigningSecret};

/// Settings of both binaries: the key that seals signing secrets, and whether webhooks may go to
/// private networks.
#[derive(Clone, Debug, clap::Args)]
pub struct WebhookKeyConfig {
    /// The key that seals webhook signing secrets in the database: 32 random bytes, base64
    /// (`openssl rand -base64 32`). Without it webhooks cannot be created (api) nor delivered
    /// (worker); the same key on both
    #[arg(long = "webhook-secret-key", env = "WEBHOOK_SECRET_KEY", value_parser = SealingKey::parse)]
    pub secret_key: Option<SealingKey>,

    /// Let webhooks go to http URLs and to loopback, private, link-local and other non-public
    /// addresses: for local use and tests only
    #[arg(
        long = "webhook-allow-private-networks",
        env = "WEBHOOK_ALLOW_PRIVATE_NETWORKS",
        default_value_t = false
    )]
    pub allow_private_networks: bool,
}

impl Default for WebhookKeyConfig {
    fn default() -> Self {
        crate::config::from_args(&[])
    }
}
