//! A container in the *tenant's* storage account: a container URL and the credential that opens
//! it (`{"sas"}`, `{"connection_string"}` or `{"managed_identity": true}`), as the contract's
//! destinations take them and its Blob sources will. One place validates both (so the api
//! refuses a bad one with a pointer at the field, and the worker builds exactly what the api
//! accepted) and turns them into a [`BlobStore`], the same client the service's own container
//! uses. The URL follows the webhook rules ([`crate::webhooks::address`]): `https` and a public
//! host, unless `WEBHOOK_ALLOW_PRIVATE_NETWORKS` (Azurite, tests). A credential's secret part is
//! never in `Debug` and is sealed before it is stored.

use std::fmt;
use std::sync::Arc;

use azure_core::http::Transport;

use serde::Deserialize;
use url::Url;

use super::config::{CredentialKind, StorageConfig};
use super::connection_string::ConnectionString;
use super::{BlobStore, StorageError};
use crate::webhooks::{address, client};

/// Longest SAS or connection string accepted.
const MAX_SECRET: usize = 4096;

/// How the tenant's container is opened, as a request carries it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ContainerCredential {
    /// A SAS token (with or without its leading `?`) with create and write permission.
    Sas(String),
    /// A storage connection string whose blob endpoint is the container URL's.
    ConnectionString(String),
    /// The deployment's managed identity (given `Storage Blob Data Contributor` on the
    /// container); must be `true`.
    ManagedIdentity(bool),
}

impl fmt::Debug for ContainerCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

impl ContainerCredential {
    /// `sas`, `connection_string` or `managed_identity`: what is stored beside the sealed part.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sas(_) => "sas",
            Self::ConnectionString(_) => "connection_string",
            Self::ManagedIdentity(_) => "managed_identity",
        }
    }

    /// The part to seal (`None` for the managed identity, which has none).
    pub fn secret(&self) -> Option<&str> {
        match self {
            Self::Sas(s) | Self::ConnectionString(s) => Some(s),
            Self::ManagedIdentity(_) => None,
        }
    }

    /// Rebuilds a stored credential from its kind and opened secret.
    pub fn from_stored(kind: &str, secret: Option<String>) -> Option<Self> {
        match (kind, secret) {
            ("sas", Some(s)) => Some(Self::Sas(s)),
            ("connection_string", Some(s)) => Some(Self::ConnectionString(s)),
            ("managed_identity", None) => Some(Self::ManagedIdentity(true)),
            _ => None,
        }
    }
}

/// A request's `credential` as given: one of the three shapes, or what is wrong with it. Read
/// from any JSON value, so that a credential of none of the shapes is refused with a pointer at
/// it (`422`, with the request's other problems) rather than as a body that cannot be read.
#[derive(Clone)]
pub struct GivenCredential(pub Result<ContainerCredential, String>);

impl<'de> Deserialize<'de> for GivenCredential {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(Self(ContainerCredential::deserialize(value).map_err(
            |_| {
                "a credential is {\"sas\": \"<token>\"}, {\"connection_string\": \"<…>\"} or \
             {\"managed_identity\": true}"
                    .to_owned()
            },
        )))
    }
}

impl fmt::Debug for GivenCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Ok(c) => c.fmt(f),
            Err(_) => f.write_str("invalid"),
        }
    }
}

/// What is wrong with a container URL or credential, and where (a JSON pointer's last part:
/// `container_url` or `credential`). Never quotes a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Invalid {
    pub field: &'static str,
    /// The URL is not one a request may go to (`unsafe_url`), rather than malformed.
    pub unsafe_url: bool,
    pub message: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Invalid {
    Invalid {
        field,
        unsafe_url: false,
        message: message.into(),
    }
}

/// A checked container: its service endpoint, its name, and the credential.
#[derive(Clone, PartialEq, Eq)]
pub struct ExternalContainer {
    /// The blob service endpoint: `https://<account>.blob.core.windows.net`, or path-style
    /// `http://127.0.0.1:10000/devstoreaccount1` (Azurite).
    pub endpoint: Url,
    pub container: String,
    pub credential: ContainerCredential,
}

impl fmt::Debug for ExternalContainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalContainer")
            .field("endpoint", &self.endpoint.as_str())
            .field("container", &self.container)
            .field("credential", &self.credential)
            .finish()
    }
}

impl ExternalContainer {
    /// Checks `container_url` (`<endpoint>/<container>`, no query: a SAS goes in the credential)
    /// and `credential`. Resolving the host to public addresses is the caller's next step
    /// ([`address::resolve_public`]), done again at every connection by the worker.
    pub fn parse(
        container_url: &str,
        credential: ContainerCredential,
        allow_private: bool,
    ) -> Result<Self, Invalid> {
        let url = address::check_url(container_url, allow_private).map_err(|e| Invalid {
            field: "container_url",
            unsafe_url: true,
            message: e.to_string(),
        })?;
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid(
                "container_url",
                "a container URL has no query: put a SAS in `credential.sas`",
            ));
        }
        let path = url.path().trim_end_matches('/');
        let (base, container) = path.rsplit_once('/').unwrap_or(("", path));
        if !valid_container_name(container) {
            return Err(invalid(
                "container_url",
                "the URL must end with a container name: 3-63 lowercase letters, digits and \
                 single hyphens",
            ));
        }
        let mut endpoint = url.clone();
        endpoint.set_path(base);
        check_credential(&credential, &endpoint)?;
        Ok(Self {
            endpoint,
            container: container.to_owned(),
            credential,
        })
    }

    /// The container URL as given back to its owner.
    pub fn url(&self) -> String {
        format!(
            "{}/{}",
            self.endpoint.as_str().trim_end_matches('/'),
            self.container
        )
    }

    /// A client for the container; no request is made until it is used. Its requests connect
    /// only to public addresses, whatever the host's name resolves to by then (unless
    /// `allow_private`): [`crate::webhooks::client::tenant_storage`]. A managed identity needs
    /// an `https` endpoint (the SDK's token credentials refuse plain http); its token requests
    /// go to the platform's identity endpoint through the SDK's own client.
    pub fn store(&self, allow_private: bool) -> Result<BlobStore, StorageError> {
        let endpoint = self.endpoint.as_str().trim_end_matches('/');
        let mut cfg = match &self.credential {
            ContainerCredential::Sas(sas) => StorageConfig::from_connection_string(
                format!(
                    "BlobEndpoint={endpoint};QueueEndpoint={endpoint};SharedAccessSignature={}",
                    sas.trim_start_matches('?')
                ),
                self.container.clone(),
                "",
            ),
            ContainerCredential::ConnectionString(cs) => {
                StorageConfig::from_connection_string(cs.clone(), self.container.clone(), "")
            }
            ContainerCredential::ManagedIdentity(_) => {
                let mut cfg = StorageConfig::from_connection_string("", self.container.clone(), "");
                cfg.connection_string = None;
                cfg.blob_endpoint = Some(self.endpoint.clone());
                cfg.queue_endpoint = Some(self.endpoint.clone());
                cfg.credential = CredentialKind::ManagedIdentity;
                cfg
            }
        };
        cfg.queue_name = String::new();
        let client = client::tenant_storage(allow_private)
            .map_err(|e| StorageError::Config(format!("building the HTTP client: {e}")))?;
        BlobStore::with_transport(&cfg, Some(Transport::new(Arc::new(client))))
    }
}

fn check_credential(credential: &ContainerCredential, endpoint: &Url) -> Result<(), Invalid> {
    match credential {
        ContainerCredential::ManagedIdentity(true) => Ok(()),
        ContainerCredential::ManagedIdentity(false) => Err(invalid(
            "credential",
            "`managed_identity` must be true (or give a `sas` or a `connection_string`)",
        )),
        ContainerCredential::Sas(s) | ContainerCredential::ConnectionString(s)
            if s.trim().is_empty() || s.len() > MAX_SECRET =>
        {
            Err(invalid(
                "credential",
                format!("a credential is 1 to {MAX_SECRET} bytes"),
            ))
        }
        ContainerCredential::Sas(sas) => {
            let sas = sas.trim_start_matches('?');
            if sas.split('&').any(|p| p.starts_with("sig=")) {
                Ok(())
            } else {
                Err(invalid("credential", "a SAS token has a `sig` parameter"))
            }
        }
        ContainerCredential::ConnectionString(cs) => {
            let parsed =
                ConnectionString::parse(cs).map_err(|e| invalid("credential", e.to_string()))?;
            if same_endpoint(&parsed.blob_endpoint, endpoint) {
                Ok(())
            } else {
                Err(invalid(
                    "credential",
                    "the connection string's blob endpoint is not the container URL's",
                ))
            }
        }
    }
}

fn same_endpoint(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
        && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
}

/// Azure's container names: 3-63 characters, lowercase letters, digits and hyphens, starting
/// and ending with a letter or digit, no two hyphens in a row.
fn valid_container_name(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sas() -> ContainerCredential {
        ContainerCredential::Sas("sv=2024&sp=cw&sig=abc".into())
    }

    /// A name passes the parse (it is judged by what it resolves to: the worker resolves it
    /// when it opens the container). This is the check that still holds afterwards: the
    /// store's own connections refuse a non-public answer, so a name that rebinds to a private
    /// address after the opening reaches nothing.
    #[tokio::test]
    async fn the_stores_connections_refuse_a_name_resolving_to_loopback() {
        let c = ExternalContainer::parse("https://localhost:9/lake", sas(), false).expect("a name");
        let err = c.store(false).unwrap().ping().await.unwrap_err();
        assert!(err.to_string().contains("not a public address"), "{err}");
        // With private networks allowed it connects (and finds nothing listening on port 9).
        let err = c.store(true).unwrap().ping().await.unwrap_err();
        assert!(!err.to_string().contains("not a public address"), "{err}");
    }

    #[test]
    fn a_host_style_url_splits_into_endpoint_and_container() {
        let c = ExternalContainer::parse("https://acct.blob.core.windows.net/lake", sas(), false)
            .expect("valid");
        assert_eq!(c.endpoint.as_str(), "https://acct.blob.core.windows.net/");
        assert_eq!(c.container, "lake");
        assert_eq!(c.url(), "https://acct.blob.core.windows.net/lake");
        assert!(!format!("{c:?}").contains("sig=abc"), "{c:?}");
        assert!(c.store(false).is_ok());
    }

    #[test]
    fn azurite_path_style_matches_the_development_connection_string() {
        let c = ExternalContainer::parse(
            "http://127.0.0.1:10000/devstoreaccount1/out-1",
            ContainerCredential::ConnectionString("UseDevelopmentStorage=true".into()),
            true,
        )
        .expect("valid");
        assert_eq!(c.container, "out-1");
        assert_eq!(c.url(), "http://127.0.0.1:10000/devstoreaccount1/out-1");
        let other = ExternalContainer::parse(
            "http://127.0.0.1:10000/otheraccount/out-1",
            ContainerCredential::ConnectionString("UseDevelopmentStorage=true".into()),
            true,
        );
        assert_eq!(other.map_err(|e| e.field), Err("credential"));
    }

    #[test]
    fn bad_urls_and_credentials_are_refused_with_their_field() {
        let refused = |url: &str, cred: ContainerCredential, private: bool| {
            ExternalContainer::parse(url, cred, private)
                .map(|_| ())
                .map_err(|e| (e.field, e.unsafe_url))
        };
        assert_eq!(
            refused("http://acct.blob.core.windows.net/lake", sas(), false),
            Err(("container_url", true))
        );
        assert_eq!(
            refused("https://10.0.0.1/acct/lake", sas(), false),
            Err(("container_url", true))
        );
        assert_eq!(
            refused("https://acct.blob.core.windows.net/La_ke", sas(), false),
            Err(("container_url", false))
        );
        assert_eq!(
            refused(
                "https://acct.blob.core.windows.net/lake?sig=x",
                sas(),
                false
            ),
            Err(("container_url", false))
        );
        assert_eq!(
            refused(
                "https://acct.blob.core.windows.net/lake",
                ContainerCredential::Sas("sv=1".into()),
                false
            ),
            Err(("credential", false))
        );
        assert_eq!(
            refused(
                "https://acct.blob.core.windows.net/lake",
                ContainerCredential::ManagedIdentity(false),
                false
            ),
            Err(("credential", false))
        );
        assert_eq!(
            refused(
                "https://acct.blob.core.windows.net/lake",
                ContainerCredential::ConnectionString("nonsense".into()),
                false
            ),
            Err(("credential", false))
        );
        assert!(refused(
            "https://acct.blob.core.windows.net/lake",
            ContainerCredential::ManagedIdentity(true),
            false
        )
        .is_ok());
    }

    #[test]
    fn a_credential_of_another_shape_is_kept_as_its_problem_and_never_quoted() {
        let given: GivenCredential =
            serde_json::from_str(r#"{"password": "hunter2"}"#).expect("any JSON reads");
        let problem = given.0.expect_err("not a credential");
        assert!(!problem.contains("hunter2"), "{problem}");
        let given: GivenCredential = serde_json::from_str(r#"{"sas": "sig=x"}"#).expect("reads");
        assert_eq!(given.0, Ok(ContainerCredential::Sas("sig=x".into())));
    }

    #[test]
    fn a_stored_credential_comes_back_as_it_was() {
        for c in [
            sas(),
            ContainerCredential::ConnectionString("UseDevelopmentStorage=true".into()),
            ContainerCredential::ManagedIdentity(true),
        ] {
            let back = ContainerCredential::from_stored(c.kind(), c.secret().map(str::to_owned));
            assert_eq!(back, Some(c));
        }
        assert_eq!(ContainerCredential::from_stored("sas", None), None);
    }
}
