//! The HTTP client every outgoing webhook request uses (event and row deliveries from the
//! worker, validation hooks from the worker and from the api's corrections), and the one the
//! Azure SDK is given for a tenant's own storage account ([`tenant_storage`]). It follows no
//! redirect (a 3xx is an answer, not a new destination), uses no proxy (a proxy would resolve
//! names for us), and resolves names with [`PublicOnly`], which refuses an answer holding any
//! non-public address: the check at connect time that DNS rebinding cannot get around. A URL
//! whose host is an address (which no resolver sees) is checked before each request
//! ([`super::check_url`]), as is its scheme.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::is_public;

/// A resolver that answers only with public addresses (unless private networks are allowed).
#[derive(Debug, Clone, Copy)]
pub struct PublicOnly {
    pub allow_private: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {addr}, which is not a public address")]
struct NotPublic {
    host: String,
    addr: std::net::IpAddr,
}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private {
                if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
                    return Err(Box::new(NotPublic {
                        host,
                        addr: bad.ip(),
                    })
                        as Box<dyn std::error::Error + Send + Sync>);
                }
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The client (see the module docs), giving up on a request after `timeout`.
pub fn build(
    timeout: Duration,
    per_endpoint: usize,
    allow_private: bool,
) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .dns_resolver(PublicOnly { allow_private })
        .pool_max_idle_per_host(per_endpoint)
        .user_agent(concat!("sheetrelay-webhooks/", env!("CARGO_PKG_VERSION")))
        .build()?)
}

/// The client for a container in a tenant's own storage account (a destination's, a Blob
/// source's), given to the Azure SDK as its transport: the host was checked public when the
/// container was opened, and [`PublicOnly`] checks every address it connects to again, so a
/// name that changes its answer afterwards (DNS rebinding) reaches nothing private. The
/// timeouts are the SDK's own client's (20 s to connect, 60 s between reads); no overall
/// timeout, as a block of a large blob may take longer.
pub fn tenant_storage(allow_private: bool) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(Duration::from_secs(20))
        .read_timeout(Duration::from_secs(60))
        .dns_resolver(PublicOnly { allow_private })
        .user_agent(concat!("sheetrelay/", env!("CARGO_PKG_VERSION")))
        .build()?)
}
