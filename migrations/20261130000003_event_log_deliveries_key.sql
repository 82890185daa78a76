-- no-transaction
-- Partitioning the event log, step 3 of 7: the key of the partitioned `webhook_deliveries`
-- (as step 2).
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_legacy_pkey
    ON webhook_deliveries (id, event_created_at);
