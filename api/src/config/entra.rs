//! Entra ID's settings, apart from the validator that uses them (`crate::auth::entra`), so that
//! the configuration and the authentication modules each depend on this one and not on each
//! other.

use std::time::Duration;

/// Entra ID settings; Entra tokens are accepted only when a tenant and an audience are set.
#[derive(Debug, Clone, clap::Args)]
pub struct EntraConfig {
    /// Entra tenant id (GUID) whose tokens are accepted, or `organizations` / `common` for a
    /// multi-tenant app. Unset: only API keys are accepted
    #[arg(long = "entra-tenant-id", env = "ENTRA_TENANT_ID")]
    pub tenant_id: Option<String>,
    /// Accepted `aud` values, comma-separated (the app id URI and/or the client id)
    #[arg(long = "entra-audience", env = "ENTRA_AUDIENCE", value_delimiter = ',')]
    pub audience: Vec<String>,
    /// App role (in `roles`) or delegated scope (in `scp`) a token must carry
    #[arg(
        long = "entra-required-role",
        env = "ENTRA_REQUIRED_ROLE",
        default_value = "Files.ReadWrite"
    )]
    pub required_role: String,
    /// For a multi-tenant app: the tenant ids allowed in, comma-separated (empty: any tenant)
    #[arg(
        long = "entra-allowed-tenants",
        env = "ENTRA_ALLOWED_TENANTS",
        value_delimiter = ','
    )]
    pub allowed_tenants: Vec<String>,
    /// The authority that issues tokens and serves their keys
    #[arg(
        long = "entra-authority",
        env = "ENTRA_AUTHORITY",
        default_value = "https://login.microsoftonline.com"
    )]
    pub authority: String,
    /// Clock skew allowed on `exp` and `nbf`
    #[arg(long = "entra-clock-skew", env = "ENTRA_CLOCK_SKEW", value_parser = shared::config::parse_duration, default_value = "60s")]
    pub clock_skew: Duration,
    /// Least time between two signing-key fetches (for unknown key ids, or after a failed one)
    #[arg(long = "entra-jwks-min-refresh", env = "ENTRA_JWKS_MIN_REFRESH", value_parser = shared::config::parse_duration, default_value = "60s")]
    pub jwks_min_refresh: Duration,
}

impl EntraConfig {
    /// Entra off (only API keys), the other settings at their defaults: the section's own
    /// defaults, which set no tenant and no audience, and never the environment's values.
    pub fn disabled() -> Self {
        shared::config::from_args(&[])
    }

    pub fn enabled(&self) -> bool {
        self.tenant_id.is_some() && !self.audience.is_empty()
    }

    /// Whether tokens of several tenants are accepted (`organizations` or `common`).
    pub(crate) fn multi_tenant(&self) -> bool {
        matches!(self.tenant_id.as_deref(), Some("common" | "organizations"))
    }
}
