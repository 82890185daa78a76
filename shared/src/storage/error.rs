//! The one error type of the storage layer. It keeps what a caller needs to decide (HTTP status,
//! Azure error code, whether a retry can help) and deliberately drops the XML error body that the
//! SDK's own `Display` prints, so log lines stay one line and never echo request details.

use super::connection_string::ConnectionStringError;

/// A failed Azure Storage call or an unusable storage configuration.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The service answered with a non-success status.
    #[error("Azure Storage answered HTTP {status}{}", fmt_code(code.as_deref()))]
    Service {
        /// The HTTP status code of the answer.
        status: u16,
        /// The `x-ms-error-code` (or XML `<Code>`), e.g. `QueueNotFound`.
        code: Option<String>,
    },
    /// The service could not be reached, or the connection broke mid-request (after the SDK's
    /// own retries). Holds the rendered error chain with any SAS signature redacted, because
    /// reqwest's errors print the full request URL.
    #[error("could not reach Azure Storage: {0}")]
    Transport(String),
    /// The answer did not have the shape we expected (missing header, unparsable XML…).
    #[error("unexpected answer from Azure Storage: {0}")]
    Response(String),
    /// Writing a downloaded blob to its destination failed.
    #[error("could not write the downloaded blob")]
    Io(#[source] std::io::Error),
    /// The connection string could not be parsed.
    #[error(transparent)]
    ConnectionString(#[from] ConnectionStringError),
    /// The configuration (or an Entra ID credential built from it) is unusable.
    #[error("invalid storage configuration: {0}")]
    Config(String),
    /// No Entra ID token could be had for the request (the identity endpoint failed or refused).
    #[error("could not get a token for Azure Storage: {0}")]
    Credential(String),
}

fn fmt_code(code: Option<&str>) -> String {
    code.map(|c| format!(" ({c})")).unwrap_or_default()
}

impl StorageError {
    /// Whether retrying later can plausibly succeed: connection failures, timeouts, throttling
    /// (429, `ServerBusy` 503) and other 5xx answers. Everything else is a caller or data problem.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Service { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            Self::Transport(_) => true,
            _ => false,
        }
    }

    /// Whether Azure Storage refused *us* rather than the request's content: no token could be
    /// had, the identity lacks a role (401/403), or the queue is gone (`QueueNotFound`). Like an
    /// outage, this is no fault of a message being sent, so it must not spend the message's
    /// attempts (a missing role assignment would otherwise turn every pending message `DEAD`).
    pub fn is_access_refused(&self) -> bool {
        match self {
            Self::Credential(_) => true,
            Self::Service { status, code } => {
                matches!(status, 401 | 403) || code.as_deref() == Some("QueueNotFound")
            }
            _ => false,
        }
    }

    /// The Azure error code (`BlobNotFound`, `PopReceiptMismatch`…), when the service sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Service { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status of a service answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Service { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for a 404, whatever the code (`BlobNotFound`, `QueueNotFound`, `MessageNotFound`…).
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }
}

impl From<azure_core::Error> for StorageError {
    fn from(err: azure_core::Error) -> Self {
        use azure_core::error::ErrorKind;
        match err.kind() {
            ErrorKind::HttpResponse {
                status, error_code, ..
            } => Self::Service {
                status: u16::from(*status),
                code: error_code.clone(),
            },
            ErrorKind::Connection | ErrorKind::Io => Self::Transport(redacted_chain(&err)),
            ErrorKind::Credential => Self::Credential(redacted_chain(&err)),
            _ => Self::Response(err.to_string()),
        }
    }
}

/// The error and its sources joined by `: `, with `sig=` query values replaced.
fn redacted_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    redact_sig(&text)
}

fn redact_sig(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("sig=") {
        out.push_str(&rest[..at + 4]);
        out.push_str("REDACTED");
        rest = &rest[at + 4..];
        let end = rest
            .find(|c: char| c == '&' || c == ')' || c.is_whitespace())
            .unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    fn service(status: u16, code: Option<&str>) -> StorageError {
        StorageError::Service {
            status,
            code: code.map(str::to_owned),
        }
    }

    #[test]
    fn throttling_timeouts_and_server_errors_are_transient() {
        assert!(service(503, Some("ServerBusy")).is_transient());
        assert!(service(500, None).is_transient());
        assert!(service(429, None).is_transient());
        assert!(service(408, None).is_transient());
        let connect = azure_core::Error::with_message(
            azure_core::error::ErrorKind::Connection,
            "connection refused",
        );
        assert!(StorageError::from(connect).is_transient());
    }

    #[test]
    fn transport_errors_never_carry_a_sas_signature() {
        assert_eq!(
            redact_sig("error sending request for url (http://h/c?sv=1&sig=abc%2B&se=2) x sig=zz"),
            "error sending request for url (http://h/c?sv=1&sig=REDACTED&se=2) x sig=REDACTED"
        );
    }

    #[test]
    fn client_errors_are_not_transient() {
        assert!(!service(404, Some("BlobNotFound")).is_transient());
        assert!(!service(400, Some("PopReceiptMismatch")).is_transient());
        assert!(!StorageError::Config("x".into()).is_transient());
    }

    #[test]
    fn refusals_of_the_caller_are_told_from_refusals_of_the_request() {
        assert!(service(403, Some("AuthorizationPermissionMismatch")).is_access_refused());
        assert!(service(401, None).is_access_refused());
        assert!(service(404, Some("QueueNotFound")).is_access_refused());
        let no_token = azure_core::Error::with_message(
            azure_core::error::ErrorKind::Credential,
            "ManagedIdentityCredential: no response from the identity endpoint",
        );
        assert!(StorageError::from(no_token).is_access_refused());
        assert!(!service(413, Some("RequestBodyTooLarge")).is_access_refused());
        assert!(!service(400, Some("InvalidXmlDocument")).is_access_refused());
        assert!(!service(404, Some("MessageNotFound")).is_access_refused());
    }

    #[test]
    fn display_has_status_and_code_only() {
        let err = service(409, Some("ContainerAlreadyExists"));
        assert_eq!(
            err.to_string(),
            "Azure Storage answered HTTP 409 (ContainerAlreadyExists)"
        );
        assert_eq!(err.code(), Some("ContainerAlreadyExists"));
        assert_eq!(
            service(500, None).to_string(),
            "Azure Storage answered HTTP 500"
        );
    }

    #[test]
    fn sdk_http_errors_keep_status_and_code() {
        let sdk = azure_core::Error::with_message(
            azure_core::error::ErrorKind::HttpResponse {
                status: azure_core::http::StatusCode::NotFound,
                error_code: Some("QueueNotFound".into()),
                raw_response: None,
            },
            "<?xml ...> long body",
        );
        let err = StorageError::from(sdk);
        assert!(err.is_not_found());
        assert_eq!(err.code(), Some("QueueNotFound"));
        assert!(!err.to_string().contains("xml"));
    }
}
