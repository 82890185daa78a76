//! An event for an endpoint that is an Azure Event Grid topic: a CloudEvents 1.0 event in the
//! structured JSON mode (`application/cloudevents+json`), which a topic whose input schema is
//! CloudEvents takes as it is, authenticated with the topic's access key (`aeg-sas-key`). The
//! event is the one a Standard Webhooks endpoint gets, in the CloudEvents envelope: `id` the
//! event's id (the same on every retry and replay), `type` its type (`file.delivered`, …), `time`
//! when it was written, `data` its data; `source` names the endpoint, so `source` and `id`
//! identify one event as the specification asks. The Standard Webhooks headers are sent too: a
//! receiver that is not Event Grid can verify the body with the endpoint's secret.

use chrono::{DateTime, Utc};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use serde::Serialize;
use shared::db::deliveries::Delivery;
use shared::domain::EventType;
use uuid::Uuid;

#[derive(Serialize)]
struct CloudEvent<'a> {
    specversion: &'static str,
    id: Uuid,
    source: String,
    #[serde(rename = "type")]
    event_type: EventType,
    time: DateTime<Utc>,
    datacontenttype: &'static str,
    data: &'a serde_json::Value,
}

/// The body of `d` as a CloudEvent.
pub fn body(d: &Delivery) -> Vec<u8> {
    let event = CloudEvent {
        specversion: "1.0",
        id: d.event_id,
        source: format!("/sheetrelay/webhooks/{}", d.endpoint_id),
        event_type: d.event_type,
        time: d.event_created_at,
        datacontenttype: "application/json",
        data: &d.event_data,
    };
    match serde_json::to_vec(&event) {
        Ok(b) => b,
        Err(e) => unreachable!("a CloudEvent serialises: {e}"),
    }
}

/// Adds the content type and the topic's key to the request's headers; a key that is not a
/// header value (the api refuses one) is left out, and the topic answers 401.
pub fn headers(headers: &mut HeaderMap, topic_key: &[u8]) {
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/cloudevents+json; charset=utf-8"),
    );
    if let Ok(mut key) = HeaderValue::from_bytes(topic_key) {
        key.set_sensitive(true);
        headers.insert(HeaderName::from_static("aeg-sas-key"), key);
    }
}
