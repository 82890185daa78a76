//! Turns a [`StorageConfig`] into what the SDK clients need: blob and queue endpoints, plus either
//! an Entra ID token credential or a Shared Key signing policy (a SAS rides in the endpoint URL).

use super::{
    config::{CredentialKind, StorageConfig},
    connection_string::{parse_endpoint, ConnectionAuth, ConnectionString},
    shared_key::SharedKeyPolicy,
    StorageError,
};
use azure_core::{
    credentials::TokenCredential,
    http::{policies::Policy, ClientOptions, ExponentialRetryOptions, RetryOptions},
    time::Duration,
};
use azure_identity::{
    DeveloperToolsCredential, ManagedIdentityCredential, ManagedIdentityCredentialOptions,
    UserAssignedId, WorkloadIdentityCredential, WorkloadIdentityCredentialOptions,
};
use std::sync::Arc;
use url::Url;

/// Endpoints and authentication resolved once per client.
pub(crate) struct ResolvedAuth {
    pub blob_endpoint: Url,
    pub queue_endpoint: Url,
    pub credential: Option<Arc<dyn TokenCredential>>,
    per_try_policies: Vec<Arc<dyn Policy>>,
}

impl ResolvedAuth {
    pub fn from_config(cfg: &StorageConfig) -> Result<Self, StorageError> {
        match cfg.connection_string.as_deref() {
            Some(cs) => Self::from_connection_string(ConnectionString::parse(cs)?),
            None => Self::from_entra(cfg),
        }
    }

    /// Client options carrying the Shared Key signer, if any, as a per-try policy, and a retry
    /// budget sized for a service: the SDK default (8 retries, 60 s) kept a call against an
    /// unreachable endpoint hanging for 81 s, far too long for a readiness probe or a request
    /// handler. Callers above us (the outbox relay, queue redelivery) retry anyway.
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            per_try_policies: self.per_try_policies.clone(),
            retry: RetryOptions::exponential(ExponentialRetryOptions {
                initial_delay: Duration::milliseconds(200),
                max_retries: 4,
                max_total_elapsed: Duration::seconds(15),
                max_delay: Duration::seconds(5),
            }),
            ..Default::default()
        }
    }

    fn from_connection_string(cs: ConnectionString) -> Result<Self, StorageError> {
        let ConnectionString {
            mut blob_endpoint,
            mut queue_endpoint,
            auth,
        } = cs;
        let per_try_policies: Vec<Arc<dyn Policy>> = match auth {
            ConnectionAuth::SharedKey { account_name, key } => {
                vec![Arc::new(SharedKeyPolicy::new(&account_name, &key))]
            }
            ConnectionAuth::Sas(sas) => {
                // The SDK keeps an endpoint's query when it appends paths and its own
                // parameters, so the SAS travels with every request and no credential is needed.
                blob_endpoint.set_query(Some(&sas));
                queue_endpoint.set_query(Some(&sas));
                Vec::new()
            }
        };
        Ok(Self {
            blob_endpoint,
            queue_endpoint,
            credential: None,
            per_try_policies,
        })
    }

    fn from_entra(cfg: &StorageConfig) -> Result<Self, StorageError> {
        let endpoint = |explicit: Option<&Url>, service: &str, label: &'static str| {
            let raw = match (explicit, cfg.account.as_deref()) {
                (Some(url), _) => url.to_string(),
                (None, Some(account)) => format!("https://{account}.{service}.core.windows.net"),
                (None, None) => {
                    return Err(StorageError::Config(
                        "set AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT".into(),
                    ))
                }
            };
            Ok(parse_endpoint(&raw, label)?)
        };
        let blob_endpoint = endpoint(
            cfg.blob_endpoint.as_ref(),
            "blob",
            "AZURE_STORAGE_BLOB_ENDPOINT",
        )?;
        let queue_endpoint = endpoint(
            cfg.queue_endpoint.as_ref(),
            "queue",
            "AZURE_STORAGE_QUEUE_ENDPOINT",
        )?;
        let credential = build_credential(cfg.credential, cfg.client_id.clone())
            .map_err(|e| StorageError::Config(format!("{:?} credential: {e}", cfg.credential)))?;
        Ok(Self {
            blob_endpoint,
            queue_endpoint,
            credential: Some(credential),
            per_try_policies: Vec::new(),
        })
    }
}

fn build_credential(
    kind: CredentialKind,
    client_id: Option<String>,
) -> azure_core::Result<Arc<dyn TokenCredential>> {
    Ok(match kind {
        CredentialKind::ManagedIdentity => {
            let options = ManagedIdentityCredentialOptions {
                user_assigned_id: client_id.map(UserAssignedId::ClientId),
                ..Default::default()
            };
            ManagedIdentityCredential::new(Some(options))?
        }
        CredentialKind::WorkloadIdentity => {
            let options = WorkloadIdentityCredentialOptions {
                client_id,
                ..Default::default()
            };
            WorkloadIdentityCredential::new(Some(options))?
        }
        CredentialKind::DeveloperTools => DeveloperToolsCredential::new(None)?,
    })
}

/// Appends one path segment (a container or queue name) to an endpoint, keeping any SAS query.
pub(crate) fn child_url(endpoint: &Url, segment: &str) -> Result<Url, StorageError> {
    let mut url = endpoint.clone();
    url.path_segments_mut()
        .map_err(|()| StorageError::Config(format!("{endpoint} cannot be a base URL")))?
        .pop_if_empty()
        .push(segment);
    Ok(url)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn sas_is_carried_in_the_endpoint_query() {
        let cfg = StorageConfig::from_connection_string(
            "BlobEndpoint=https://a.blob.core.windows.net/;QueueEndpoint=https://a.queue.core.windows.net;SharedAccessSignature=sv=1&sig=x%2B",
            "c",
            "q",
        );
        let auth = ResolvedAuth::from_config(&cfg).unwrap();
        assert!(auth.credential.is_none());
        assert!(auth.client_options().per_try_policies.is_empty());
        assert_eq!(
            child_url(&auth.queue_endpoint, "q").unwrap().as_str(),
            "https://a.queue.core.windows.net/q?sv=1&sig=x%2B"
        );
    }

    #[test]
    fn shared_key_installs_one_per_try_policy() {
        let cfg = StorageConfig::from_connection_string("UseDevelopmentStorage=true", "c", "q");
        let auth = ResolvedAuth::from_config(&cfg).unwrap();
        assert_eq!(auth.client_options().per_try_policies.len(), 1);
        assert_eq!(
            child_url(&auth.blob_endpoint, "c").unwrap().as_str(),
            "http://127.0.0.1:10000/devstoreaccount1/c"
        );
    }

    #[test]
    fn entra_needs_an_account_or_endpoints() {
        let mut cfg = StorageConfig::from_connection_string("", "c", "q");
        cfg.connection_string = None;
        assert!(matches!(
            ResolvedAuth::from_config(&cfg),
            Err(StorageError::Config(_))
        ));
        cfg.account = Some("acct".into());
        let auth = ResolvedAuth::from_config(&cfg).unwrap();
        assert!(auth.credential.is_some());
        assert_eq!(
            child_url(&auth.blob_endpoint, "c").unwrap().as_str(),
            "https://acct.blob.core.windows.net/c"
        );
    }
}
