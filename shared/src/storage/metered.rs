//! Counting every storage request, as a pipeline policy: each one costs money on Azure (and is
//! the emulator's bottleneck here), so `sheetrelay_storage_requests_total{service, operation}`
//! counts them by service and REST operation. The policy sits in the per-try policies, after the
//! retry policy, so a retried request counts once per try, as each try is billed.

use async_trait::async_trait;
use azure_core::http::{
    policies::{Policy, PolicyResult},
    ClientOptions, Context, Method, Request, Url,
};
use std::sync::Arc;

use crate::metrics::catalogue::STORAGE_REQUESTS;

crate::code_enum! {
    /// Which storage service a client talks to (the metric's `service` label).
    pub enum Service {
        Blob => "blob",
        Queue => "queue",
    }
}

/// Counts each request of one client (a container or a queue) by its operation.
#[derive(Debug, Clone)]
pub struct CountingPolicy {
    service: Service,
    /// The client's resource path (`/<account>/<container>` path-style, `/<container>` on Azure):
    /// what follows it tells container/queue operations from blob/message ones.
    base_path: Arc<str>,
}

impl CountingPolicy {
    pub fn new(service: Service, base_path: &str) -> Self {
        Self {
            service,
            base_path: base_path.trim_end_matches('/').into(),
        }
    }

    /// The REST operation of `request`, in snake_case (`put_blob`, `get_messages`, …), or
    /// `other`: a fixed set, so the label stays bounded.
    pub fn operation(&self, method: Method, path: &str, query: Option<&str>) -> &'static str {
        let rest = path
            .strip_prefix(&*self.base_path)
            .unwrap_or(path)
            .trim_start_matches('/');
        let param = |name: &str| {
            query.and_then(|q| {
                q.split('&').find_map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    (k == name).then_some(v)
                })
            })
        };
        match self.service {
            Service::Blob => {
                blob_operation(method, rest.is_empty(), param("comp"), param("restype"))
            }
            Service::Queue => {
                let mut segments = rest.split('/').filter(|s| !s.is_empty());
                let first = segments.next();
                let message = segments.next().is_some();
                match (first, message) {
                    (None, _) => queue_operation(method, param("comp")),
                    (Some("messages"), false) => match method {
                        Method::Post => "put_message",
                        Method::Get if param("peekonly") == Some("true") => "peek_messages",
                        Method::Get => "get_messages",
                        Method::Delete => "clear_messages",
                        _ => "other",
                    },
                    (Some("messages"), true) => match method {
                        Method::Delete => "delete_message",
                        Method::Put => "update_message",
                        _ => "other",
                    },
                    _ => "other",
                }
            }
        }
    }
}

/// `options` with a [`CountingPolicy`] for the client of `service` at `url` added to its per-try
/// policies.
pub(crate) fn metered(mut options: ClientOptions, service: Service, url: &Url) -> ClientOptions {
    options
        .per_try_policies
        .push(Arc::new(CountingPolicy::new(service, url.path())));
    options
}

fn blob_operation(
    method: Method,
    container_level: bool,
    comp: Option<&str>,
    restype: Option<&str>,
) -> &'static str {
    if container_level || restype == Some("container") {
        return match (method, comp) {
            (Method::Put, None) => "create_container",
            (Method::Delete, None) => "delete_container",
            (Method::Get, Some("list")) => "list_blobs",
            (Method::Get | Method::Head, None) => "get_container_properties",
            _ => "other",
        };
    }
    match (method, comp) {
        (Method::Put, None) => "put_blob",
        (Method::Put, Some("block")) => "put_block",
        (Method::Put, Some("blocklist")) => "put_block_list",
        (Method::Get, None) => "get_blob",
        (Method::Head, None) => "get_blob_properties",
        (Method::Delete, None) => "delete_blob",
        _ => "other",
    }
}

fn queue_operation(method: Method, comp: Option<&str>) -> &'static str {
    match (method, comp) {
        (Method::Put, None) => "create_queue",
        (Method::Delete, None) => "delete_queue",
        (Method::Get | Method::Head, Some("metadata")) => "get_queue_metadata",
        _ => "other",
    }
}

// See shared_key.rs: naming Context's lifetime breaks async_trait's signature match.
#[allow(elided_lifetimes_in_paths)]
#[async_trait]
impl Policy for CountingPolicy {
    async fn send(
        &self,
        ctx: &Context,
        request: &mut Request,
        next: &[Arc<dyn Policy>],
    ) -> PolicyResult {
        let url = request.url();
        let operation = self.operation(request.method(), url.path(), url.query());
        metrics::counter!(STORAGE_REQUESTS, "service" => self.service.as_str(), "operation" => operation)
            .increment(1);
        super::send_next(ctx, request, next, "CountingPolicy").await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_operations_are_told_apart() {
        let p = CountingPolicy::new(Service::Blob, "/devstoreaccount1/uploads/");
        let op = |m, path, q| p.operation(m, path, q);
        let c = "/devstoreaccount1/uploads";
        let b = "/devstoreaccount1/uploads/0190-abc/people.csv";
        assert_eq!(
            op(Method::Put, c, Some("restype=container")),
            "create_container"
        );
        assert_eq!(
            op(Method::Get, c, Some("restype=container")),
            "get_container_properties"
        );
        assert_eq!(
            op(
                Method::Get,
                c,
                Some("restype=container&comp=list&include=uncommittedblobs")
            ),
            "list_blobs"
        );
        assert_eq!(op(Method::Put, b, None), "put_blob");
        assert_eq!(
            op(Method::Put, b, Some("comp=block&blockid=AAAA")),
            "put_block"
        );
        assert_eq!(op(Method::Put, b, Some("comp=blocklist")), "put_block_list");
        assert_eq!(op(Method::Get, b, None), "get_blob");
        assert_eq!(op(Method::Head, b, None), "get_blob_properties");
        assert_eq!(op(Method::Delete, b, None), "delete_blob");
        assert_eq!(op(Method::Patch, b, None), "other");
        // On Azure the account is the host, not the first path segment; a SAS rides in the query.
        let azure = CountingPolicy::new(Service::Blob, "/uploads");
        assert_eq!(
            azure.operation(Method::Put, "/uploads/x/y.csv", Some("sv=1&sig=x")),
            "put_blob"
        );
    }

    #[test]
    fn queue_operations_are_told_apart() {
        let p = CountingPolicy::new(Service::Queue, "/devstoreaccount1/parse-tasks");
        let op = |m, path, q| p.operation(m, path, q);
        let q = "/devstoreaccount1/parse-tasks";
        let msgs = "/devstoreaccount1/parse-tasks/messages";
        let one = "/devstoreaccount1/parse-tasks/messages/6b1c";
        assert_eq!(op(Method::Put, q, None), "create_queue");
        assert_eq!(
            op(Method::Get, q, Some("comp=metadata")),
            "get_queue_metadata"
        );
        assert_eq!(op(Method::Post, msgs, None), "put_message");
        assert_eq!(
            op(
                Method::Get,
                msgs,
                Some("numofmessages=32&visibilitytimeout=60")
            ),
            "get_messages"
        );
        assert_eq!(
            op(Method::Get, msgs, Some("peekonly=true&numofmessages=1")),
            "peek_messages"
        );
        assert_eq!(
            op(Method::Delete, one, Some("popreceipt=AAA")),
            "delete_message"
        );
        assert_eq!(
            op(Method::Put, one, Some("popreceipt=AAA&visibilitytimeout=5")),
            "update_message"
        );
        assert_eq!(op(Method::Delete, msgs, None), "clear_messages");
        // A queue named "messages" is still a queue.
        let named = CountingPolicy::new(Service::Queue, "/acct/messages");
        assert_eq!(
            named.operation(Method::Put, "/acct/messages", None),
            "create_queue"
        );
        assert_eq!(
            named.operation(Method::Post, "/acct/messages/messages", None),
            "put_message"
        );
    }
}
