//! Every metric the binaries export, in one list: the names the code records under, their type,
//! labels and meaning. The metric table of `docs/operations.md` is this list (a test keeps them
//! equal), and `tests/it/observability.rs` checks that the shipped dashboard and alert rules
//! query only names from it that the binaries actually export.

crate::code_enum! {
    /// What kind of series a metric is; its text is the exposition format's `# TYPE` word.
    pub enum Kind {
        Counter => "counter",
        Gauge => "gauge",
        /// Rendered as a Prometheus histogram (`_bucket`, `_sum`, `_count`), never a summary.
        Histogram => "histogram",
    }
}

/// One metric of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    /// Every label the metric carries; each has a bounded set of values.
    pub labels: &'static [&'static str],
    /// Which binary (and which of the worker's loops) exports it.
    pub exported_by: &'static str,
    pub help: &'static str,
}

macro_rules! catalogue {
    ($($(#[doc = $doc:literal])* $const:ident = $name:literal, $kind:ident, [$($label:literal),*], $by:literal, $help:literal;)*) => {
        $($(#[doc = $doc])* pub const $const: &str = $name;)*

        /// The whole catalogue, in the order of `docs/operations.md`.
        pub const ALL: &[Metric] = &[$(Metric {
            name: $name,
            kind: Kind::$kind,
            labels: &[$($label),*],
            exported_by: $by,
            help: $help,
        },)*];
    };
}

catalogue! {
    HTTP_REQUESTS = "sheetrelay_http_requests_total", Counter, ["method", "route", "status"], "api",
        "HTTP requests answered, by method (invented methods are `other`), route template and status";
    HTTP_REQUEST_DURATION = "sheetrelay_http_request_duration_seconds", Histogram, ["method", "route", "status"], "api",
        "Time to answer an HTTP request (an upload: until its rows are committed)";
    UPLOADS = "sheetrelay_uploads_total", Counter, ["format"], "api",
        "Files accepted, by detected format";
    UPLOAD_BYTES = "sheetrelay_upload_bytes_total", Counter, [], "api",
        "Bytes of accepted files";
    STORAGE_REQUESTS = "sheetrelay_storage_requests_total", Counter, ["service", "operation"], "api, worker",
        "Azure Storage requests sent (each retry counts: each is billed), by service (`blob`, `queue`) and REST operation (`put_blob`, `put_message`, `get_messages`, `delete_message`, …)";
    OUTBOX_MESSAGES = "sheetrelay_outbox_messages", Gauge, ["status"], "worker (relay)",
        "Outbox messages not yet sent (`PENDING`, `PROCESSING`, `FAILED`) and `DEAD`, counted every 15 s";
    OUTBOX_OLDEST_AGE = "sheetrelay_outbox_oldest_message_age_seconds", Gauge, ["status"], "worker (relay)",
        "Age of the oldest outbox message in each of those statuses (0 when there is none)";
    TASKS_OLDEST_QUEUED = "sheetrelay_tasks_oldest_queued_age_seconds", Gauge, [], "worker (relay)",
        "Seconds since the oldest task on the queue (sent by the relay, not started by a consumer) was sent (0 when none waits)";
    ROW_STORE_BYTES = "sheetrelay_row_store_bytes", Gauge, [], "worker (relay)",
        "Bytes on disk of the row store (parsed row chunks, error records, rejected rows: every partition, with TOAST and indexes), read every 15 s";
    ROW_STORE_ROWS = "sheetrelay_row_store_rows", Gauge, [], "worker (relay)",
        "Parsed rows stored, read every 15 s";
    ROW_STORE_BYTES_PER_ROW = "sheetrelay_row_store_bytes_per_row", Gauge, [], "worker (relay)",
        "`sheetrelay_row_store_bytes` over `sheetrelay_row_store_rows` (0 with no rows)";
    TENANT_ROW_STORE_BYTES = "sheetrelay_tenant_row_store_bytes", Gauge, ["tenant_id"], "worker (relay)",
        "Row store bytes recorded for each of the 20 tenants that store the most (as stored, compressed, with an estimate of tuple headers and index entries), and for all the others together as `other`; a tenant that leaves the 20 reads 0";
    TENANT_ROW_STORE_ROWS = "sheetrelay_tenant_row_store_rows", Gauge, ["tenant_id"], "worker (relay)",
        "Parsed rows stored by the same tenants (bytes per row: the two gauges' ratio)";
    OUTBOX_SENDS = "sheetrelay_outbox_sends_total", Counter, ["outcome"], "worker (relay)",
        "Send attempts by outcome: `sent`, `failed` (will be retried), `dead` (attempts spent)";
    OUTBOX_SEND_DURATION = "sheetrelay_outbox_send_duration_seconds", Histogram, ["outcome"], "worker (relay)",
        "Time of one queue send (`ok` or `error`), the storage client's retries included";
    OUTBOX_LAG = "sheetrelay_outbox_commit_to_sent_seconds", Histogram, [], "worker (relay)",
        "From an upload's commit (outbox `created_at`) to its message recorded as sent";
    QUEUE_MESSAGES = "sheetrelay_queue_messages", Gauge, ["queue"], "worker (consumer)",
        "Approximate messages in the task queue (`tasks`, in flight included) and in `<queue>-poison` (`poison`), read every 15 s";
    QUEUE_WAIT = "sheetrelay_queue_wait_seconds", Histogram, [], "worker (consumer)",
        "From a message's insertion into the queue to its receipt, for every delivery (whole seconds: the service's clock)";
    DEQUEUE_COUNT = "sheetrelay_queue_dequeue_count", Histogram, [], "worker (consumer)",
        "How many times each received message has been delivered, this delivery included";
    CONSUMER_MESSAGES = "sheetrelay_consumer_messages_total", Counter, ["outcome"], "worker (consumer)",
        "Messages processed, by outcome: `completed`, `failed`, `duplicate` (task already final: dropped), `busy`, `poisoned`, `retry`, `lost`, `released`, `error`";
    TASKS_FINISHED = "sheetrelay_tasks_finished_total", Counter, ["result"], "worker (consumer)",
        "Tasks that reached a final status: `completed`, or the task error code they failed with";
    POISON_MESSAGES = "sheetrelay_poison_messages_total", Counter, ["code"], "worker (consumer)",
        "Messages moved to `<queue>-poison`, by code (`retries_exhausted`, `invalid_message`)";
    PARSE_DURATION = "sheetrelay_parse_duration_seconds", Histogram, ["format"], "worker (consumer)",
        "Parse of one file in its child process, rows streamed into `COPY` included, for parses that ended with rows or an error code";
    PARSED_ROWS = "sheetrelay_parsed_rows_total", Counter, ["format"], "worker (consumer)",
        "Rows parsed and streamed into `COPY` by successful parses";
    LEASE_RENEWALS = "sheetrelay_task_lease_renewals_total", Counter, [], "worker (consumer)",
        "Task leases extended during long parses";
    TASK_RESCUES = "sheetrelay_task_rescues_total", Counter, [], "worker (consumer)",
        "Tasks taken over from a consumer whose lease expired (it died or stalled)";
    LOOP_RESTARTS = "sheetrelay_worker_loop_restarts_total", Counter, ["loop"], "worker",
        "Loops (`relay`, `consumer`, `webhooks`, `destinations`, `sources`, `maintenance`) that failed and were started again while the others went on";
    WEBHOOK_ATTEMPTS = "sheetrelay_webhook_attempts_total", Counter, ["outcome"], "worker (webhooks)",
        "Webhook requests, by outcome: `delivered` (2xx), `failed` (another status), `timeout`, `unreachable` (no answer, or an address not allowed), `gone` (410)";
    WEBHOOK_DELIVERIES = "sheetrelay_webhook_deliveries_total", Counter, ["outcome"], "worker (webhooks)",
        "Webhook deliveries settled, by outcome: `delivered`, `retry` (failed, will be retried), `dead` (the retry schedule used up), `deferred` (not tried: its endpoint was down)";
    WEBHOOK_LAG = "sheetrelay_webhook_commit_to_attempt_seconds", Histogram, [], "worker (webhooks)",
        "From an event's commit to its first delivery attempt, for each endpoint";
    WEBHOOK_REQUEST_DURATION = "sheetrelay_webhook_request_duration_seconds", Histogram, ["outcome"], "worker (webhooks)",
        "Time of one webhook request, by the same outcomes";
    WEBHOOK_ENDPOINTS_DISABLED = "sheetrelay_webhook_endpoints_disabled", Gauge, ["reason"], "worker (webhooks)",
        "Webhook endpoints the worker disabled, by reason: `gone` (answered 410), `failing` (every request failed for WEBHOOK_DISABLE_AFTER), counted every 15 s";
    WEBHOOK_OLDEST_UNDELIVERED = "sheetrelay_webhook_oldest_undelivered_age_seconds", Gauge, [], "worker (webhooks)",
        "Age of the oldest event still waiting for delivery to an enabled endpoint (0 when none waits), read every 15 s";
    DESTINATION_DELIVERIES = "sheetrelay_destination_deliveries_total", Counter, ["kind", "outcome"], "worker (destinations)",
        "Destination delivery attempts, by kind (`azure_blob`, `webhook_rows`) and outcome: `delivered`, `failed` (retried on WEBHOOK_RETRY_SCHEDULE, or dead after it)";
    DESTINATION_BYTES = "sheetrelay_destination_bytes_total", Counter, ["kind"], "worker (destinations)",
        "Bytes written by finished destination deliveries (blobs and manifest, or request bodies)";
    DESTINATION_LAG = "sheetrelay_destination_completion_to_delivery_seconds", Histogram, ["kind"], "worker (destinations)",
        "From the change that queued a delivery (a task COMPLETED, a corrections revision, a redelivery) to its delivery";
    DESTINATIONS_DISABLED = "sheetrelay_destinations_disabled", Gauge, [], "worker (destinations)",
        "Destinations the worker disabled because every delivery failed for DESTINATION_DISABLE_AFTER, counted every 15 s";
    DESTINATION_OLDEST_WAITING = "sheetrelay_destination_oldest_waiting_age_seconds", Gauge, [], "worker (destinations)",
        "Age of the oldest delivery still waiting for an enabled destination (0 when none waits), read every 15 s";
    SOURCE_BLOBS = "sheetrelay_source_blobs_total", Counter, ["outcome"], "worker (sources)",
        "Blob sources' imports, by outcome: `imported`, `skipped` (never: empty, too large, not a spreadsheet, gone), `failed` (retried), `deferred` (a copy still running, or its source found down), `lost` (its claim expired meanwhile: another worker imports it)";
    SOURCE_EVENTS = "sheetrelay_source_events_total", Counter, ["outcome"], "worker (sources)",
        "Event Grid events read from SOURCE_EVENTS_QUEUE: `recorded` (a blob some source watches), `ignored` (another blob or event type, or not an event)";
    SOURCE_LAG = "sheetrelay_source_found_to_imported_seconds", Histogram, [], "worker (sources)",
        "From a blob version's first finding (a listing or an event) to its file and task being recorded";
}

/// The catalogue entry of `name`.
pub fn find(name: &str) -> Option<&'static Metric> {
    ALL.iter().find(|m| m.name == name)
}
