//! One Azure Storage queue (the task queue, or its `-poison` companion): send, receive with a
//! visibility timeout, delete, extend visibility, peek and length. Message text is sent as given;
//! callers choose the encoding (base64 for Azure Functions compatibility).

use super::{
    auth::{child_url, ResolvedAuth},
    metered::{metered, Service},
    StorageConfig, StorageError,
};
use azure_storage_queue::{
    models::{
        QueueClientGetPropertiesResultHeaders, QueueClientPeekMessagesOptions,
        QueueClientReceiveMessagesOptions, QueueClientSendMessageOptions,
        QueueClientUpdateMessageOptions, QueueMessage,
    },
    QueueClient as SdkQueueClient, QueueClientOptions,
};
use chrono::{DateTime, Utc};
use std::{sync::Arc, time::Duration};

/// The service's receive/peek batch limit; 33 is a 400.
pub const MAX_BATCH: u8 = 32;

/// A message handed out by [`QueueClient::receive`]; invisible to others until its visibility
/// timeout expires or it is deleted with its pop receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMessage {
    pub id: String,
    pub pop_receipt: String,
    /// 1 on first delivery; grows each time the visibility timeout expires unprocessed.
    pub dequeue_count: u64,
    pub body: String,
    pub inserted_at: Option<DateTime<Utc>>,
}

impl ReceivedMessage {
    /// How long the message waited between its insertion and now (its receipt), by the
    /// service's clock for the insertion, to the second; `None` when the service did not say.
    pub fn queue_wait(&self) -> Option<Duration> {
        let waited = Utc::now() - self.inserted_at?;
        Some(waited.to_std().unwrap_or(Duration::ZERO))
    }
}

/// A client for one queue. Cheap to clone.
#[derive(Clone)]
pub struct QueueClient {
    inner: Arc<SdkQueueClient>,
    name: Arc<str>,
}

impl std::fmt::Debug for QueueClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueClient")
            .field("queue", &self.name)
            .finish()
    }
}

impl QueueClient {
    /// Builds a client for `queue_name` (usually `cfg.queue_name` or `<it>-poison`); no network
    /// call is made until first use.
    pub fn new(cfg: &StorageConfig, queue_name: &str) -> Result<Self, StorageError> {
        let auth = ResolvedAuth::from_config(cfg)?;
        let url = child_url(&auth.queue_endpoint, queue_name)?;
        let options = QueueClientOptions {
            client_options: metered(auth.client_options(), Service::Queue, &url),
            ..Default::default()
        };
        let inner = SdkQueueClient::new(url, auth.credential.clone(), Some(options))?;
        Ok(Self {
            inner: Arc::new(inner),
            name: queue_name.into(),
        })
    }

    /// The queue name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Creates the queue if needed; an existing queue is success.
    pub async fn ensure_exists(&self) -> Result<(), StorageError> {
        match self.inner.create(None).await {
            Ok(_) => Ok(()),
            Err(e) => match StorageError::from(e) {
                e if e.code() == Some("QueueAlreadyExists") => Ok(()),
                e => Err(e),
            },
        }
    }

    /// Sends one message (at most 64 KiB once XML-escaped).
    pub async fn send(&self, text: &str) -> Result<(), StorageError> {
        self.send_with(text, None).await
    }

    /// Sends one message that stays invisible for `hidden` before it can be received (rounded up to whole seconds): a new message, so its dequeue count starts
    /// again from zero.
    pub async fn send_hidden(&self, text: &str, hidden: Duration) -> Result<(), StorageError> {
        let options = QueueClientSendMessageOptions {
            visibility_timeout: Some(seconds(hidden)),
            ..Default::default()
        };
        self.send_with(text, Some(options)).await
    }

    async fn send_with(
        &self,
        text: &str,
        options: Option<QueueClientSendMessageOptions<'_>>,
    ) -> Result<(), StorageError> {
        let message = QueueMessage {
            message_text: Some(text.to_owned()),
        };
        self.inner
            .send_message(message.try_into()?, options)
            .await?;
        Ok(())
    }

    /// Receives up to `max` messages (clamped to 1..=32), hiding them for `visibility`
    /// (whole seconds, at least 1).
    pub async fn receive(
        &self,
        max: u8,
        visibility: Duration,
    ) -> Result<Vec<ReceivedMessage>, StorageError> {
        let options = QueueClientReceiveMessagesOptions {
            number_of_messages: Some(i32::from(max.clamp(1, MAX_BATCH))),
            visibility_timeout: Some(seconds(visibility)),
            ..Default::default()
        };
        let items = self
            .inner
            .receive_messages(Some(options))
            .await?
            .into_model()?
            .items
            .unwrap_or_default();
        items
            .into_iter()
            .map(|m| {
                let missing =
                    |field: &str| StorageError::Response(format!("message without {field}"));
                Ok(ReceivedMessage {
                    id: m.message_id.ok_or_else(|| missing("MessageId"))?,
                    pop_receipt: m.pop_receipt.ok_or_else(|| missing("PopReceipt"))?,
                    dequeue_count: m
                        .dequeue_count
                        .and_then(|n| u64::try_from(n).ok())
                        .unwrap_or(1),
                    body: m.message_text.unwrap_or_default(),
                    inserted_at: m
                        .insertion_time
                        .and_then(|t| DateTime::from_timestamp(t.unix_timestamp(), t.nanosecond())),
                })
            })
            .collect()
    }

    /// Deletes a received message. A stale pop receipt is a 400 `PopReceiptMismatch`; a message
    /// already gone is a 404 `MessageNotFound` — both are returned so the caller can decide.
    pub async fn delete(&self, id: &str, pop_receipt: &str) -> Result<(), StorageError> {
        self.inner.delete_message(id, pop_receipt, None).await?;
        Ok(())
    }

    /// Hides a received message for `visibility` more (a lease extension) and returns the new pop
    /// receipt, which replaces the old one for later deletes and updates.
    pub async fn update_visibility(
        &self,
        id: &str,
        pop_receipt: &str,
        visibility: Duration,
    ) -> Result<String, StorageError> {
        let response = self
            .inner
            .update_message(
                id,
                pop_receipt,
                seconds(visibility),
                Some(QueueClientUpdateMessageOptions::default()),
            )
            .await?;
        // The SDK exposes the new receipt only as a raw header.
        response
            .headers()
            .get_optional_str(&"x-ms-popreceipt".into())
            .map(str::to_owned)
            .ok_or_else(|| StorageError::Response("update without x-ms-popreceipt".into()))
    }

    /// The approximate number of messages (includes invisible ones).
    pub async fn approximate_length(&self) -> Result<u64, StorageError> {
        let response = self.inner.get_properties(None).await?;
        let count = response.approximate_messages_count()?.unwrap_or(0);
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Returns the bodies of up to `max` visible messages without hiding them.
    pub async fn peek(&self, max: u8) -> Result<Vec<String>, StorageError> {
        let options = QueueClientPeekMessagesOptions {
            number_of_messages: Some(i32::from(max.clamp(1, MAX_BATCH))),
            ..Default::default()
        };
        let items = self
            .inner
            .peek_messages(Some(options))
            .await?
            .into_model()?
            .items
            .unwrap_or_default();
        Ok(items
            .into_iter()
            .map(|m| m.message_text.unwrap_or_default())
            .collect())
    }
}

/// Visibility timeouts are whole seconds; round up so a sub-second wish never becomes 0.
fn seconds(d: Duration) -> i32 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    i32::try_from(secs).unwrap_or(i32::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failed unwrap is a failed test
mod tests {
    use super::*;

    #[test]
    fn visibility_rounds_up_to_whole_seconds() {
        assert_eq!(seconds(Duration::from_millis(1500)), 2);
        assert_eq!(seconds(Duration::from_secs(30)), 30);
        assert_eq!(seconds(Duration::ZERO), 0);
    }

    #[test]
    fn queue_url_keeps_the_path_style_account() {
        let cfg = StorageConfig::from_connection_string("UseDevelopmentStorage=true", "c", "tasks");
        let q = QueueClient::new(&cfg, "tasks-poison").unwrap();
        assert_eq!(
            q.inner.url().as_str(),
            "http://127.0.0.1:10001/devstoreaccount1/tasks-poison"
        );
        assert_eq!(q.name(), "tasks-poison");
    }
}
