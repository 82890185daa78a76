//! Parsing of Azure Storage connection strings. The 1.x SDK has no connection-string type, so this
//! turns the usual forms (`UseDevelopmentStorage=true`, account name + key with or without explicit
//! endpoints, and SAS with endpoints) into blob/queue endpoints plus the way to authenticate them.

use base64::Engine as _;
use std::fmt;
use url::Url;

/// Azurite's well-known account, documented and identical on every machine: not a secret.
pub const DEV_ACCOUNT_NAME: &str = "devstoreaccount1";
/// Azurite's well-known account key.
pub const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const DEV_BLOB_PORT: u16 = 10000;
const DEV_QUEUE_PORT: u16 = 10001;

/// Why a connection string was rejected. Messages name the offending key, never a value, because
/// values are secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionStringError {
    #[error("the storage connection string is empty")]
    Empty,
    #[error("connection string segment {0} (1-based) has no `=`")]
    MalformedSegment(usize),
    #[error("connection string has no AccountName and no explicit endpoint for {0}")]
    MissingAccountName(&'static str),
    #[error("connection string has AccountKey but no AccountName")]
    KeyWithoutAccountName,
    #[error("connection string has neither AccountKey nor SharedAccessSignature")]
    MissingCredential,
    #[error("connection string has both AccountKey and SharedAccessSignature; keep one")]
    AmbiguousCredential,
    #[error("AccountKey is not valid base64")]
    InvalidAccountKey,
    #[error("`{0}` is not a valid absolute http(s) URL")]
    InvalidEndpoint(&'static str),
    #[error("DefaultEndpointsProtocol must be http or https")]
    InvalidProtocol,
    #[error("UseDevelopmentStorage must be `true` when present")]
    InvalidDevelopmentStorage,
}

/// How requests to the parsed endpoints are authenticated.
#[derive(Clone, PartialEq, Eq)]
pub enum ConnectionAuth {
    /// Shared Key: HMAC-SHA256 with the decoded account key.
    SharedKey { account_name: String, key: Vec<u8> },
    /// A SAS token (without its leading `?`), appended to every request URL.
    Sas(String),
}

impl fmt::Debug for ConnectionAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SharedKey { account_name, .. } => f
                .debug_struct("SharedKey")
                .field("account_name", account_name)
                .field("key", &"<redacted>")
                .finish(),
            Self::Sas(_) => f.write_str("Sas(<redacted>)"),
        }
    }
}

/// A parsed connection string: endpoints without trailing slash, and the authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionString {
    pub blob_endpoint: Url,
    pub queue_endpoint: Url,
    pub auth: ConnectionAuth,
}

impl ConnectionString {
    /// Parses any of the usual connection string forms. Keys are matched case-insensitively,
    /// empty segments (a trailing `;`) are ignored, and values may contain `=` (base64 keys do).
    pub fn parse(s: &str) -> Result<Self, ConnectionStringError> {
        let mut fields = Fields::default();
        let mut any = false;
        for (index, segment) in s
            .split(';')
            .map(str::trim)
            .filter(|seg| !seg.is_empty())
            .enumerate()
        {
            any = true;
            // Report the position only: a segment without `=` may well be a pasted secret.
            let (key, value) = segment
                .split_once('=')
                .ok_or(ConnectionStringError::MalformedSegment(index + 1))?;
            fields.set(key.trim(), value.trim());
        }
        if !any {
            return Err(ConnectionStringError::Empty);
        }
        match fields.use_development_storage.as_deref() {
            Some(v) if v.eq_ignore_ascii_case("true") => {
                return development_storage(fields.development_storage_proxy_uri.as_deref())
            }
            Some(_) => return Err(ConnectionStringError::InvalidDevelopmentStorage),
            None => {}
        }
        fields.into_connection_string()
    }
}

#[derive(Default)]
struct Fields {
    use_development_storage: Option<String>,
    development_storage_proxy_uri: Option<String>,
    protocol: Option<String>,
    account_name: Option<String>,
    account_key: Option<String>,
    sas: Option<String>,
    endpoint_suffix: Option<String>,
    blob_endpoint: Option<String>,
    queue_endpoint: Option<String>,
}

impl Fields {
    fn set(&mut self, key: &str, value: &str) {
        let slot = match key.to_ascii_lowercase().as_str() {
            "usedevelopmentstorage" => &mut self.use_development_storage,
            "developmentstorageproxyuri" => &mut self.development_storage_proxy_uri,
            "defaultendpointsprotocol" => &mut self.protocol,
            "accountname" => &mut self.account_name,
            "accountkey" => &mut self.account_key,
            "sharedaccesssignature" => &mut self.sas,
            "endpointsuffix" => &mut self.endpoint_suffix,
            "blobendpoint" => &mut self.blob_endpoint,
            "queueendpoint" => &mut self.queue_endpoint,
            // TableEndpoint, FileEndpoint, secondary endpoints…: valid, but not ours to use.
            _ => return,
        };
        *slot = Some(value.to_owned());
    }

    fn into_connection_string(self) -> Result<ConnectionString, ConnectionStringError> {
        let protocol = self.protocol.as_deref().unwrap_or("https");
        if protocol != "https" && protocol != "http" {
            return Err(ConnectionStringError::InvalidProtocol);
        }
        let suffix = self
            .endpoint_suffix
            .as_deref()
            .unwrap_or("core.windows.net");
        let account = self.account_name.as_deref().filter(|a| !a.is_empty());
        let endpoint = |explicit: Option<&str>, service: &'static str, label: &'static str| {
            let raw = match (explicit, account) {
                (Some(e), _) => e.to_owned(),
                (None, Some(a)) => format!("{protocol}://{a}.{service}.{suffix}"),
                (None, None) => return Err(ConnectionStringError::MissingAccountName(label)),
            };
            parse_endpoint(&raw, label)
        };
        let blob_endpoint = endpoint(self.blob_endpoint.as_deref(), "blob", "BlobEndpoint")?;
        let queue_endpoint = endpoint(self.queue_endpoint.as_deref(), "queue", "QueueEndpoint")?;

        let auth = match (self.account_key, self.sas) {
            (Some(_), Some(_)) => return Err(ConnectionStringError::AmbiguousCredential),
            (Some(key), None) => {
                let account_name = account
                    .ok_or(ConnectionStringError::KeyWithoutAccountName)?
                    .to_owned();
                ConnectionAuth::SharedKey {
                    account_name,
                    key: decode_key(&key)?,
                }
            }
            (None, Some(sas)) => ConnectionAuth::Sas(sas.trim_start_matches('?').to_owned()),
            (None, None) => return Err(ConnectionStringError::MissingCredential),
        };
        Ok(ConnectionString {
            blob_endpoint,
            queue_endpoint,
            auth,
        })
    }
}

fn development_storage(proxy: Option<&str>) -> Result<ConnectionString, ConnectionStringError> {
    let base = proxy.unwrap_or("http://127.0.0.1");
    let with_port = |port: u16, label: &'static str| {
        let mut url = parse_endpoint(base, label)?;
        url.set_port(Some(port))
            .map_err(|()| ConnectionStringError::InvalidEndpoint(label))?;
        url.set_path(DEV_ACCOUNT_NAME);
        Ok::<_, ConnectionStringError>(url)
    };
    Ok(ConnectionString {
        blob_endpoint: with_port(DEV_BLOB_PORT, "DevelopmentStorageProxyUri")?,
        queue_endpoint: with_port(DEV_QUEUE_PORT, "DevelopmentStorageProxyUri")?,
        auth: ConnectionAuth::SharedKey {
            account_name: DEV_ACCOUNT_NAME.to_owned(),
            key: decode_key(DEV_ACCOUNT_KEY)?,
        },
    })
}

fn decode_key(key: &str) -> Result<Vec<u8>, ConnectionStringError> {
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(bytes) if !bytes.is_empty() => Ok(bytes),
        _ => Err(ConnectionStringError::InvalidAccountKey),
    }
}

/// Parses an endpoint and trims trailing slashes from its path: the SDK appends `/queue` itself,
/// and `…/devstoreaccount1//queue` is a 400 `InvalidResourceName`.
pub(crate) fn parse_endpoint(raw: &str, label: &'static str) -> Result<Url, ConnectionStringError> {
    let mut url = Url::parse(raw).map_err(|_| ConnectionStringError::InvalidEndpoint(label))?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(ConnectionStringError::InvalidEndpoint(label));
    }
    let trimmed = url.path().trim_end_matches('/').to_owned();
    url.set_path(&trimmed);
    Ok(url)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    const KEY: &str = "a2V5LWJ5dGVzLWZvci10ZXN0cw=="; // "key-bytes-for-tests"

    fn shared_key(cs: &ConnectionString) -> (&str, &[u8]) {
        match &cs.auth {
            ConnectionAuth::SharedKey { account_name, key } => (account_name, key),
            ConnectionAuth::Sas(_) => panic!("expected shared key"),
        }
    }

    #[test]
    fn development_storage_means_the_azurite_well_known_account() {
        let cs = ConnectionString::parse("UseDevelopmentStorage=true").unwrap();
        assert_eq!(
            cs.blob_endpoint.as_str(),
            "http://127.0.0.1:10000/devstoreaccount1"
        );
        assert_eq!(
            cs.queue_endpoint.as_str(),
            "http://127.0.0.1:10001/devstoreaccount1"
        );
        let (account, key) = shared_key(&cs);
        assert_eq!(account, "devstoreaccount1");
        assert_eq!(key.len(), 64);
    }

    #[test]
    fn development_storage_honours_the_proxy_uri() {
        let cs = ConnectionString::parse(
            "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://azurite/",
        )
        .unwrap();
        assert_eq!(
            cs.blob_endpoint.as_str(),
            "http://azurite:10000/devstoreaccount1"
        );
        assert_eq!(
            cs.queue_endpoint.as_str(),
            "http://azurite:10001/devstoreaccount1"
        );
    }

    #[test]
    fn account_key_form_derives_endpoints_from_suffix() {
        let cs = ConnectionString::parse(&format!(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={KEY};EndpointSuffix=core.chinacloudapi.cn;"
        ))
        .unwrap();
        assert_eq!(
            cs.blob_endpoint.as_str(),
            "https://acct.blob.core.chinacloudapi.cn/"
        );
        assert_eq!(
            cs.queue_endpoint.as_str(),
            "https://acct.queue.core.chinacloudapi.cn/"
        );
        assert_eq!(shared_key(&cs), ("acct", &b"key-bytes-for-tests"[..]));
    }

    #[test]
    fn account_key_form_defaults_to_https_and_public_cloud() {
        let cs = ConnectionString::parse(&format!("AccountName=acct;AccountKey={KEY}")).unwrap();
        assert_eq!(
            cs.blob_endpoint.as_str(),
            "https://acct.blob.core.windows.net/"
        );
    }

    #[test]
    fn explicit_endpoints_win_and_lose_their_trailing_slash() {
        let cs = ConnectionString::parse(&format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={DEV_ACCOUNT_KEY};\
             BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;\
             QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1//"
        ))
        .unwrap();
        assert_eq!(
            cs.blob_endpoint.as_str(),
            "http://127.0.0.1:10000/devstoreaccount1"
        );
        assert_eq!(
            cs.queue_endpoint.as_str(),
            "http://127.0.0.1:10001/devstoreaccount1"
        );
        assert_eq!(shared_key(&cs).0, "devstoreaccount1");
    }

    #[test]
    fn keys_are_case_insensitive() {
        let cs = ConnectionString::parse(&format!("accountname=acct;ACCOUNTKEY={KEY}")).unwrap();
        assert_eq!(shared_key(&cs).0, "acct");
    }

    #[test]
    fn sas_form_keeps_the_token_without_question_mark() {
        let cs = ConnectionString::parse(
            "BlobEndpoint=https://acct.blob.core.windows.net/;\
             QueueEndpoint=https://acct.queue.core.windows.net/;\
             SharedAccessSignature=?sv=2022-11-02&ss=bq&srt=sco&sp=rwdlacup&se=2030-01-01T00:00:00Z&sig=abc%2B%3D",
        )
        .unwrap();
        assert_eq!(
            cs.auth,
            ConnectionAuth::Sas(
                "sv=2022-11-02&ss=bq&srt=sco&sp=rwdlacup&se=2030-01-01T00:00:00Z&sig=abc%2B%3D"
                    .into()
            )
        );
        assert_eq!(
            cs.queue_endpoint.as_str(),
            "https://acct.queue.core.windows.net/"
        );
    }

    #[test]
    fn sas_without_endpoints_or_account_is_rejected() {
        assert_eq!(
            ConnectionString::parse("SharedAccessSignature=sv=1&sig=x"),
            Err(ConnectionStringError::MissingAccountName("BlobEndpoint"))
        );
    }

    #[test]
    fn errors_are_specific() {
        use ConnectionStringError as E;
        assert_eq!(ConnectionString::parse(" ; "), Err(E::Empty));
        assert_eq!(
            ConnectionString::parse("AccountName=acct"),
            Err(E::MissingCredential)
        );
        assert_eq!(
            ConnectionString::parse("AccountName=acct;AccountKey=not base64!"),
            Err(E::InvalidAccountKey)
        );
        assert_eq!(
            ConnectionString::parse(&format!(
                "BlobEndpoint=https://b;QueueEndpoint=https://q;AccountKey={KEY}"
            )),
            Err(E::KeyWithoutAccountName)
        );
        assert_eq!(
            ConnectionString::parse(&format!(
                "AccountName=a;AccountKey={KEY};SharedAccessSignature=sig=x"
            )),
            Err(E::AmbiguousCredential)
        );
        assert_eq!(
            ConnectionString::parse(&format!(
                "AccountName=a;AccountKey={KEY};BlobEndpoint=not a url"
            )),
            Err(E::InvalidEndpoint("BlobEndpoint"))
        );
        assert_eq!(
            ConnectionString::parse(&format!(
                "DefaultEndpointsProtocol=ftp;AccountName=a;AccountKey={KEY}"
            )),
            Err(E::InvalidProtocol)
        );
        assert_eq!(
            ConnectionString::parse("UseDevelopmentStorage=false"),
            Err(E::InvalidDevelopmentStorage)
        );
        assert_eq!(
            ConnectionString::parse("AccountName=a;c2VjcmV0"),
            Err(E::MalformedSegment(2))
        );
    }

    #[test]
    fn debug_never_prints_the_key_or_sas() {
        let cs = ConnectionString::parse(&format!("AccountName=acct;AccountKey={KEY}")).unwrap();
        let printed = format!("{cs:?}");
        assert!(!printed.contains(KEY) && !printed.contains("key-bytes"));
        assert!(printed.contains("<redacted>"));
        let sas = ConnectionString::parse(
            "BlobEndpoint=https://b;QueueEndpoint=https://q;SharedAccessSignature=sig=topsecret",
        )
        .unwrap();
        assert!(!format!("{sas:?}").contains("topsecret"));
    }
}
