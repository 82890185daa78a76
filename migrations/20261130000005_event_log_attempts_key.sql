-- no-transaction
-- Partitioning the event log, step 5 of 7: the key of the partitioned `webhook_attempts` (as
-- step 2).
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS webhook_attempts_legacy_pkey
    ON webhook_attempts (id, at);
