//! Event Grid's `Microsoft.Storage.BlobCreated` events, as Blob sources read them: from a
//! storage queue (the worker, one event per message, Base64 or plain JSON) or posted to
//! `POST /api/v1/sources/{id}/events` (the api, an array). Both schemas Event Grid delivers
//! are read: its own (`eventType`, `data`) and CloudEvents 1.0 (`type`, `data`). An event is
//! only a hint: the worker reads the blob it names from the source's container with the
//! source's credential, at the event's ETag, so a forged event can at most import a blob that
//! really is in a watched container.

use base64::Engine as _;
use serde::Deserialize;
use url::Url;

/// The event type of a new blob.
pub const BLOB_CREATED: &str = "Microsoft.Storage.BlobCreated";
/// The event type of Event Grid's validation handshake (its own schema).
pub const SUBSCRIPTION_VALIDATION: &str = "Microsoft.EventGrid.SubscriptionValidationEvent";

/// One event of either schema, with what a source needs of it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEvent {
    #[serde(default)]
    event_type: Option<String>,
    /// CloudEvents' name of the type.
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    data: serde_json::Value,
}

/// What an event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobEvent {
    /// A blob was created: its URL, its ETag then (without quotes), its size.
    Created {
        url: String,
        etag: String,
        size: Option<i64>,
    },
    /// Event Grid asks to confirm a subscription with this code.
    Validation { code: String },
    /// Any other event (a deletion, a type the subscription should not send): ignored.
    Other,
}

impl From<RawEvent> for BlobEvent {
    fn from(e: RawEvent) -> Self {
        let kind = e.event_type.or(e.kind).unwrap_or_default();
        let text = |key: &str| e.data.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        match kind.as_str() {
            BLOB_CREATED => match (text("url"), text("eTag")) {
                (Some(url), Some(etag)) if !etag.trim_matches('"').is_empty() => {
                    BlobEvent::Created {
                        url,
                        // Event Grid writes it quoted, as the header is; listings do not.
                        etag: etag.trim_matches('"').to_owned(),
                        size: e
                            .data
                            .get("contentLength")
                            .and_then(serde_json::Value::as_i64),
                    }
                }
                _ => BlobEvent::Other,
            },
            SUBSCRIPTION_VALIDATION => text("validationCode")
                .map_or(BlobEvent::Other, |code| BlobEvent::Validation { code }),
            _ => BlobEvent::Other,
        }
    }
}

/// Reads a body of events: an array (Event Grid's delivery to a webhook) or one event (a
/// storage queue message). A queue message is Base64 unless it already is JSON.
pub fn parse(body: &[u8]) -> Result<Vec<BlobEvent>, serde_json::Error> {
    let decoded;
    let json = match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[' | b'{') | None => body,
        Some(_) => {
            let text: Vec<u8> = body
                .iter()
                .copied()
                .filter(|b| !b.is_ascii_whitespace())
                .collect();
            decoded = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap_or_default();
            &decoded[..]
        }
    };
    let value: serde_json::Value = serde_json::from_slice(json)?;
    let events: Vec<RawEvent> = match value {
        serde_json::Value::Array(_) => serde_json::from_value(value)?,
        other => vec![serde_json::from_value(other)?],
    };
    Ok(events.into_iter().map(BlobEvent::from).collect())
}

/// The blob name of `url` in the container `container_url` (as `shared::storage::external`
/// writes it), decoded; `None` when the URL is not in that container.
pub fn blob_in(url: &str, container_url: &str) -> Option<String> {
    let url = Url::parse(url).ok()?;
    let container = Url::parse(container_url).ok()?;
    if url.scheme() != container.scheme()
        || url.host_str() != container.host_str()
        || url.port_or_known_default() != container.port_or_known_default()
    {
        return None;
    }
    let base = format!("{}/", container.path().trim_end_matches('/'));
    let rest = url.path().strip_prefix(&base)?;
    let name = percent_encoding::percent_decode_str(rest)
        .decode_utf8()
        .ok()?
        .into_owned();
    (!name.is_empty()).then_some(name)
}

/// The container URL of a blob URL, for a source's `container_url` to be compared with: the
/// first path segment of a host-style URL (`https://<account>.blob.core.windows.net/<c>/…`),
/// the second of a path-style one (an IP address or `localhost`: Azurite's
/// `http://127.0.0.1:10000/<account>/<c>/…`).
pub fn container_of(url: &str) -> Option<String> {
    let mut url = Url::parse(url).ok()?;
    let path_style = match url.host()? {
        url::Host::Domain(d) => d == "localhost",
        url::Host::Ipv4(_) | url::Host::Ipv6(_) => true,
    };
    let keep = if path_style { 2 } else { 1 };
    let segments: Vec<String> = url.path_segments()?.take(keep).map(str::to_owned).collect();
    if segments.len() < keep {
        return None;
    }
    url.set_query(None);
    url.set_fragment(None);
    url.set_path(&segments.join("/"));
    Some(url.as_str().trim_end_matches('/').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = r#"[{
        "topic": "/subscriptions/x/resourceGroups/r/providers/Microsoft.Storage/storageAccounts/acct",
        "subject": "/blobServices/default/containers/drop/blobs/in/a b.csv",
        "eventType": "Microsoft.Storage.BlobCreated",
        "id": "1", "eventTime": "2026-11-28T10:00:00Z", "dataVersion": "", "metadataVersion": "1",
        "data": {"api": "PutBlockList", "eTag": "0x8DCAFE", "contentLength": 42,
                 "blobType": "BlockBlob",
                 "url": "https://acct.blob.core.windows.net/drop/in/a%20b.csv"}
    }]"#;

    #[test]
    fn both_schemas_and_base64_are_read() {
        let want = BlobEvent::Created {
            url: "https://acct.blob.core.windows.net/drop/in/a%20b.csv".into(),
            etag: "0x8DCAFE".into(),
            size: Some(42),
        };
        assert_eq!(parse(GRID.as_bytes()).expect("grid"), vec![want.clone()]);
        let one = serde_json::from_str::<Vec<serde_json::Value>>(GRID).expect("json")[0].clone();
        let b64 = base64::engine::general_purpose::STANDARD.encode(one.to_string());
        assert_eq!(parse(b64.as_bytes()).expect("base64"), vec![want.clone()]);
        let cloud = serde_json::json!({"specversion": "1.0", "type": BLOB_CREATED,
            "source": "x", "id": "1", "data": one["data"]});
        assert_eq!(
            parse(cloud.to_string().as_bytes()).expect("cloud"),
            vec![want]
        );
        let handshake = serde_json::json!([{"eventType": SUBSCRIPTION_VALIDATION,
            "data": {"validationCode": "abc"}}]);
        assert_eq!(
            parse(handshake.to_string().as_bytes()).expect("handshake"),
            vec![BlobEvent::Validation { code: "abc".into() }]
        );
        assert!(parse(b"not json").is_err());
    }

    #[test]
    fn a_blob_url_gives_its_container_and_decoded_name() {
        let url = "https://acct.blob.core.windows.net/drop/in/a%20b.csv";
        assert_eq!(
            container_of(url).as_deref(),
            Some("https://acct.blob.core.windows.net/drop")
        );
        assert_eq!(
            blob_in(url, "https://acct.blob.core.windows.net/drop").as_deref(),
            Some("in/a b.csv")
        );
        assert_eq!(
            blob_in(url, "https://acct.blob.core.windows.net/other"),
            None
        );
        assert_eq!(
            blob_in(url, "https://evil.blob.core.windows.net/drop"),
            None
        );
        let azurite = "http://127.0.0.1:10000/devstoreaccount1/drop/x%2Fy.csv";
        assert_eq!(
            container_of(azurite).as_deref(),
            Some("http://127.0.0.1:10000/devstoreaccount1/drop")
        );
        assert_eq!(
            blob_in(azurite, "http://127.0.0.1:10000/devstoreaccount1/drop").as_deref(),
            Some("x/y.csv")
        );
    }
}
