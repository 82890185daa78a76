-- no-transaction
-- Partitioning the event log, step 4 of 7: one delivery of an event per endpoint, with the
-- partition key (the replay's ON CONFLICT names these columns), as step 2.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_legacy_once
    ON webhook_deliveries (endpoint_id, event_id, event_created_at);
