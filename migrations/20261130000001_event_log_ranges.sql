-- The event log (`events`, `webhook_deliveries`, `webhook_attempts`) becomes partitioned by UTC
-- day, in seven migrations (this one and the next six), so that retention drops a day whole
-- instead of deleting it 1,000 rows a statement, and no step holds a lock that stops reads or
-- writes for longer than a catalog change. The plan is the row store's (migrations
-- `20261129*`); what differs is the key:
--
-- - `events` by RANGE (created_at) and `webhook_attempts` by RANGE (at): their own clocks.
--   Event ids are random (v4), so unlike file ids they say nothing of time.
-- - `webhook_deliveries` by RANGE (event_created_at), a new column: its event's `created_at`,
--   so that a day's deliveries are dropped with the day's events (a replay can queue a new
--   delivery of an old event: by its own clock it would land in another day).
--
-- The tables as they are become the partitions `<table>_legacy` of everything before a bound:
-- the start of the day after tomorrow (UTC), so that what is written while the migrations run
-- still fits. Legacy deliveries take the event time `-infinity` (a default Postgres stores in
-- the catalog: adding the column rewrites nothing); they are dropped with the legacy events.
-- Nothing is copied: the legacy partitions age out like any day, `EVENTS_RETENTION` (and
-- `WEBHOOK_ATTEMPTS_RETENTION`) after the bound.
--
-- This migration records the bound and adds the CHECKs that will let the tables be attached
-- without a scan, NOT VALID (a catalog change). The next four build, CONCURRENTLY, the unique
-- indexes the partitioned tables need (a partitioned table's keys must include its partition
-- key); the sixth validates the CHECKs; the seventh swaps the tables.

-- As the row store's: fail after 5 s waiting for a lock rather than hold up what queues behind.
SET LOCAL lock_timeout = '5s';

-- The locks this step needs (each ALTER below takes ACCESS EXCLUSIVE), taken first and in the
-- order writers take them: a finished task writes its event, then the event's deliveries; a
-- delivery batch writes its attempts, then its deliveries. Taken one by one as the statements
-- come, a writer holding `events` and waiting for `webhook_deliveries` would deadlock with this
-- step (measured: `bench event-log`, which writes events throughout).
LOCK TABLE events, webhook_attempts, webhook_deliveries IN ACCESS EXCLUSIVE MODE;

-- The day partitions of the event log. `log` is `events` (events and their deliveries, kept
-- `EVENTS_RETENTION`) or `attempts` (the attempt log, kept `WEBHOOK_ATTEMPTS_RETENTION`); each
-- row is a partition `<table>_<name>` of each table of its log. `from_at` NULL: from the
-- earliest time.
CREATE TABLE event_log_partitions (
    log     text        NOT NULL CHECK (log IN ('events', 'attempts')),
    name    text        NOT NULL CHECK (name ~ '^(legacy|[0-9]{4}_[0-9]{2}_[0-9]{2})$'),
    from_at timestamptz,
    to_at   timestamptz NOT NULL,
    PRIMARY KEY (log, name),
    CONSTRAINT a_range CHECK (from_at IS NULL OR from_at < to_at)
);

ALTER TABLE webhook_deliveries ADD COLUMN event_created_at timestamptz NOT NULL
    DEFAULT '-infinity';

DO $$
DECLARE
    bound timestamptz :=
        (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '2 days') AT TIME ZONE 'UTC';
BEGIN
    INSERT INTO event_log_partitions (log, name, from_at, to_at)
    VALUES ('events', 'legacy', NULL, bound), ('attempts', 'legacy', NULL, bound);
    EXECUTE format('ALTER TABLE events ADD CONSTRAINT events_legacy_range '
                   'CHECK (created_at < %L) NOT VALID', bound);
    EXECUTE format('ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_legacy_range '
                   'CHECK (event_created_at < %L) NOT VALID', bound);
    EXECUTE format('ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_legacy_range '
                   'CHECK (at < %L) NOT VALID', bound);
END
$$;
