//! Storage settings, read from the environment through clap and flattened into each binary's
//! configuration. Either a connection string (Azurite, account key, SAS) or, in production, an
//! account name plus an Entra ID credential; the container and queue names live here too.

use std::fmt;
use url::Url;

/// Which Entra ID credential to use when no connection string is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CredentialKind {
    /// The VM / App Service / Container Apps managed identity (user-assigned with AZURE_CLIENT_ID).
    ManagedIdentity,
    /// AKS workload identity (federated token file from the pod environment).
    WorkloadIdentity,
    /// `az login` / `azd auth login` on a developer machine.
    DeveloperTools,
}

/// Azure Storage settings shared by the api and the worker.
#[derive(Clone, clap::Args)]
pub struct StorageConfig {
    /// Azure Storage connection string (`UseDevelopmentStorage=true` for Azurite, account key or
    /// SAS); when set, the account/endpoint/credential settings are ignored
    #[arg(
        long = "azure-storage-connection-string",
        env = "AZURE_STORAGE_CONNECTION_STRING",
        hide_env_values = true
    )]
    pub connection_string: Option<String>,

    /// Storage account name, used with an Entra ID credential when there is no connection string
    #[arg(long = "azure-storage-account", env = "AZURE_STORAGE_ACCOUNT")]
    pub account: Option<String>,

    /// Blob service endpoint override (default https://<account>.blob.core.windows.net)
    #[arg(
        long = "azure-storage-blob-endpoint",
        env = "AZURE_STORAGE_BLOB_ENDPOINT"
    )]
    pub blob_endpoint: Option<Url>,

    /// Queue service endpoint override (default https://<account>.queue.core.windows.net)
    #[arg(
        long = "azure-storage-queue-endpoint",
        env = "AZURE_STORAGE_QUEUE_ENDPOINT"
    )]
    pub queue_endpoint: Option<Url>,

    /// Entra ID credential used without a connection string
    #[arg(
        long = "azure-storage-credential",
        env = "AZURE_STORAGE_CREDENTIAL",
        value_enum,
        default_value_t = CredentialKind::ManagedIdentity
    )]
    pub credential: CredentialKind,

    /// Client ID of a user-assigned managed identity (or of the workload identity)
    #[arg(long = "azure-client-id", env = "AZURE_CLIENT_ID")]
    pub client_id: Option<String>,

    /// Blob container that holds uploaded files
    #[arg(
        long = "blob-container",
        env = "BLOB_CONTAINER",
        default_value = "uploads"
    )]
    pub blob_container: String,

    /// Storage queue that carries parse tasks (its poison queue is `<name>-poison`)
    #[arg(long = "queue-name", env = "QUEUE_NAME", default_value = "parse-tasks")]
    pub queue_name: String,
}

impl StorageConfig {
    /// A configuration authenticated by a connection string, as tests and local runs use.
    pub fn from_connection_string(
        connection_string: impl Into<String>,
        blob_container: impl Into<String>,
        queue_name: impl Into<String>,
    ) -> Self {
        Self {
            connection_string: Some(connection_string.into()),
            account: None,
            blob_endpoint: None,
            queue_endpoint: None,
            credential: CredentialKind::ManagedIdentity,
            client_id: None,
            blob_container: blob_container.into(),
            queue_name: queue_name.into(),
        }
    }
}

// Hand-written so the connection string (account key or SAS) never reaches a log line.
impl fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageConfig")
            .field(
                "connection_string",
                &self.connection_string.as_ref().map(|_| "<redacted>"),
            )
            .field("account", &self.account)
            .field(
                "blob_endpoint",
                &self.blob_endpoint.as_ref().map(Url::as_str),
            )
            .field(
                "queue_endpoint",
                &self.queue_endpoint.as_ref().map(Url::as_str),
            )
            .field("credential", &self.credential)
            .field("client_id", &self.client_id)
            .field("blob_container", &self.blob_container)
            .field("queue_name", &self.queue_name)
            .finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        storage: StorageConfig,
    }

    #[test]
    fn defaults_are_managed_identity_uploads_and_parse_tasks() {
        let cli = Cli::try_parse_from(["x", "--azure-storage-account", "acct"]).unwrap();
        assert_eq!(cli.storage.credential, CredentialKind::ManagedIdentity);
        assert_eq!(cli.storage.blob_container, "uploads");
        assert_eq!(cli.storage.queue_name, "parse-tasks");
        assert_eq!(cli.storage.account.as_deref(), Some("acct"));
    }

    #[test]
    fn credential_kinds_are_kebab_case() {
        let cli =
            Cli::try_parse_from(["x", "--azure-storage-credential", "workload-identity"]).unwrap();
        assert_eq!(cli.storage.credential, CredentialKind::WorkloadIdentity);
        assert!(Cli::try_parse_from(["x", "--azure-storage-credential", "nope"]).is_err());
    }

    #[test]
    fn debug_redacts_the_connection_string() {
        let cfg =
            StorageConfig::from_connection_string("AccountName=a;AccountKey=c2VjcmV0", "c", "q");
        let printed = format!("{cfg:?}");
        assert!(!printed.contains("c2VjcmV0"));
        assert!(printed.contains("<redacted>"));
    }
}
