-- no-transaction
-- Partitioning the event log, step 2 of 7: the key the partitioned `events` will have, built
-- without blocking writes (CONCURRENTLY cannot run in a transaction, hence one statement per
-- migration). A build that failed half-way leaves an invalid index that IF NOT EXISTS would
-- keep: step 7 checks, and says to drop it and run the migrations again.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS events_legacy_pkey ON events (id, created_at);
