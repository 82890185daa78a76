-- Partitioning the event log, step 7 of 7: `events`, `webhook_deliveries` and
-- `webhook_attempts` become tables partitioned by UTC day with the same columns, constraints,
-- indexes and triggers, and each table as it was becomes its partition `<table>_legacy`. The
-- validated CHECKs prove the legacy rows fit, and the unique indexes of steps 2 to 5 become the
-- legacy partitions' keys, so ATTACH reads no row and builds no index: the whole step is
-- catalog changes. A database whose three tables are empty (a new one) keeps no legacy
-- partition at all.
--
-- What changes for the code:
-- - The keys include the partition key: events (id, created_at), deliveries
--   (id, event_created_at), attempts (id, at). Ids are still unique: v4 ids, one sequence.
-- - `events.position` loses its UNIQUE index (a partitioned table cannot have one without the
--   partition key). One sequence stamps it, under one lock (`events_sequence()`), so it stays
--   unique; the feed's index (tenant_id, position) stays.
-- - A delivery carries its event's `created_at` (its partition key; `-infinity` for an event
--   of the legacy partition: event_delivery_time). Its foreign key to the
--   event goes: a key into a partitioned table must name the partition key, and the legacy
--   deliveries have none to name. The cascade it gave is a trigger now (`events_cascade`), and
--   a day's deliveries are dropped with the day's events.
-- - Whatever writes an event or an attempt calls `event_log_ensure()` first, which adds today's
--   partitions if the worker's maintenance has not (it adds them two days ahead), once per day
--   and session. Postgres cannot add a partition while a statement that inserts into the table
--   runs, so it cannot be a trigger on the table itself.

SET LOCAL lock_timeout = '5s';

-- The start (UTC) of the day after the one that contains `at`.
CREATE FUNCTION event_log_next_day(at timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (date_trunc('day', at AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
$$;

-- Adds the partitions of the UTC day that contains `at` to the tables of both logs, unless a
-- partition already covers it. Returns whether it added any. Safe to call from several
-- sessions at once (they take turns on an advisory lock) and cheap when there is nothing to do.
CREATE FUNCTION event_log_add_day(at timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    hi timestamptz := event_log_next_day(at);
    lo timestamptz := hi - interval '1 day';
    suffix text := to_char(lo AT TIME ZONE 'UTC', 'YYYY_MM_DD');
    l text;
    t text;
    added boolean := false;
BEGIN
    IF (SELECT count(*) FROM event_log_partitions
        WHERE (from_at IS NULL OR from_at < hi) AND to_at > lo) = 2 THEN
        RETURN false;
    END IF;
    -- Attaching a partition of a table with a foreign key to the endpoints locks them (SHARE
    -- ROW EXCLUSIVE): taken first, so that a caller that already changed an endpoint in its
    -- transaction and one waiting for the advisory lock cannot deadlock.
    PERFORM set_config('lock_timeout', '10s', true);
    LOCK TABLE webhook_endpoints IN SHARE ROW EXCLUSIVE MODE;
    PERFORM pg_advisory_xact_lock(hashtext('event_log_partitions'));
    FOREACH l IN ARRAY ARRAY['events', 'attempts'] LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM event_log_partitions p
                              WHERE p.log = l AND (p.from_at IS NULL OR p.from_at < hi)
                                AND p.to_at > lo);
        FOREACH t IN ARRAY CASE l WHEN 'events' THEN ARRAY['events', 'webhook_deliveries']
                                  ELSE ARRAY['webhook_attempts'] END LOOP
            -- A new empty table attached (SHARE UPDATE EXCLUSIVE on the parent: reads and
            -- writes go on) rather than CREATE TABLE ... PARTITION OF (ACCESS EXCLUSIVE).
            EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                           t || '_' || suffix, t);
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                           t, t || '_' || suffix, lo, hi);
        END LOOP;
        INSERT INTO event_log_partitions (log, name, from_at, to_at) VALUES (l, suffix, lo, hi);
        added := true;
    END LOOP;
    RETURN added;
END
$$;

-- Makes sure the partitions that an event or attempt written now will go to exist: today's,
-- and tomorrow's within a minute of midnight. Once a session has seen them it only compares
-- the clock with a setting of the session until the day ends.
CREATE FUNCTION event_log_ensure() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    now_at timestamptz := clock_timestamp();
    ready_until text := current_setting('sheetrelay.event_log_ready_until', true);
BEGIN
    IF ready_until IS NOT NULL AND ready_until <> ''
       AND extract(epoch FROM now_at + interval '1 minute') < ready_until::float8 THEN
        RETURN;
    END IF;
    PERFORM event_log_add_day(now_at);
    PERFORM event_log_add_day(now_at + interval '1 minute');
    -- Session-wide (false): kept after this transaction commits, undone if it rolls back.
    PERFORM set_config('sheetrelay.event_log_ready_until',
                       extract(epoch FROM event_log_next_day(now_at + interval '1 minute'))::text,
                       false);
END
$$;

-- The locks this step needs, taken first and in the order writers take them (an event, then
-- its deliveries; attempts, then their deliveries, then the endpoint's health), so that a
-- writer in flight finishes first and none can deadlock with the step. (Re-enabling an
-- endpoint updates it, then its deliveries: if one does so just as this step waits for its
-- locks, Postgres ends one of the two, and the migration is run again.) The foreign keys of
-- the new tables need the endpoints' SHARE ROW EXCLUSIVE lock, which lets them be read. All
-- are held for the catalog changes below, milliseconds.
LOCK TABLE events, webhook_attempts, webhook_deliveries IN ACCESS EXCLUSIVE MODE;
LOCK TABLE webhook_endpoints IN SHARE ROW EXCLUSIVE MODE;

-- The view binds to the table, not its name: made again below, on the partitioned table.
DROP VIEW webhook_deliveries_claimable;

DO $$
DECLARE
    bound timestamptz;
    t text;
    ix record;
    tg record;
BEGIN
    FOREACH t IN ARRAY ARRAY['events_legacy_pkey', 'webhook_deliveries_legacy_pkey',
                             'webhook_deliveries_legacy_once', 'webhook_attempts_legacy_pkey'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass(t) AND indisvalid) THEN
            RAISE EXCEPTION 'index % is missing or invalid (a concurrent build failed): '
                            'DROP INDEX % and run the migrations again', t, t;
        END IF;
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM events) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries)
       AND NOT EXISTS (SELECT 1 FROM webhook_attempts) THEN
        DELETE FROM event_log_partitions WHERE name = 'legacy';
    END IF;
    SELECT to_at INTO bound FROM event_log_partitions WHERE name = 'legacy' AND log = 'events';

    -- What only the old tables had: the keys without the partition key, the deliveries'
    -- foreign key to their event, the indexes only retention's batched deletes read, and
    -- the triggers (a partition's own row triggers would fire besides the parent's).
    ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
    ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_event_id_key;
    ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey;
    ALTER TABLE events DROP CONSTRAINT events_pkey;
    ALTER TABLE events DROP CONSTRAINT events_position_key;
    ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey;
    DROP INDEX events_created;
    DROP INDEX webhook_attempts_at;
    DROP TRIGGER events_fan_out ON events;
    DROP TRIGGER events_notify ON events;
    DROP TRIGGER webhook_deliveries_notify ON webhook_deliveries;
    -- The unique indexes of steps 2 to 5 become the keys (a catalog change).
    ALTER TABLE events ADD CONSTRAINT events_legacy_pkey PRIMARY KEY USING INDEX events_legacy_pkey;
    ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_legacy_pkey
        PRIMARY KEY USING INDEX webhook_deliveries_legacy_pkey;
    ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_legacy_once
        UNIQUE USING INDEX webhook_deliveries_legacy_once;
    ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_legacy_pkey
        PRIMARY KEY USING INDEX webhook_attempts_legacy_pkey;

    FOREACH t IN ARRAY ARRAY['events', 'webhook_deliveries', 'webhook_attempts'] LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_legacy');
        FOR ix IN SELECT indexname FROM pg_indexes
                  WHERE schemaname = current_schema() AND tablename = t || '_legacy'
                    AND indexname NOT LIKE '%\_legacy\_%' LOOP
            EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.indexname, ix.indexname || '_legacy');
        END LOOP;
        -- Columns, defaults, NOT NULLs and CHECKs (under their own names, which ATTACH
        -- matches); not the legacy range, nor the attempts' identity (below).
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS) '
                       'PARTITION BY RANGE (%I)', t, t || '_legacy',
                       CASE t WHEN 'events' THEN 'created_at'
                              WHEN 'webhook_deliveries' THEN 'event_created_at'
                              ELSE 'at' END);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, t || '_legacy_range');
    END LOOP;
    -- Foreign keys keep their names on the legacy tables; ATTACH matches them with the new.
    ALTER TABLE webhook_deliveries_legacy RENAME CONSTRAINT webhook_deliveries_endpoint_id_fkey
        TO webhook_deliveries_endpoint_id_fkey_legacy;
    ALTER TABLE webhook_attempts_legacy RENAME CONSTRAINT webhook_attempts_endpoint_id_fkey
        TO webhook_attempts_endpoint_id_fkey_legacy;

    ALTER TABLE events ADD PRIMARY KEY (id, created_at);
    CREATE INDEX events_tenant_position ON events (tenant_id, position) WHERE position IS NOT NULL;
    CREATE INDEX events_unsequenced ON events (created_at) WHERE position IS NULL;
    CREATE INDEX events_tenant_created ON events (tenant_id, created_at);
    CREATE INDEX events_source_file ON events (source_file_id);

    -- Whatever queues a delivery names its event's time: no default.
    ALTER TABLE webhook_deliveries ALTER COLUMN event_created_at DROP DEFAULT;
    ALTER TABLE webhook_deliveries ADD PRIMARY KEY (id, event_created_at);
    ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_once
        UNIQUE (endpoint_id, event_id, event_created_at);
    ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey
        FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints (id) ON DELETE CASCADE;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (available_at)
        WHERE status IN ('PENDING', 'FAILED');
    CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (locked_until)
        WHERE status = 'PROCESSING';
    CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
    CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, available_at)
        WHERE status IN ('PENDING', 'FAILED');

    -- Identity columns cannot be added to a partitioned table in Postgres 15: a sequence of
    -- its own, going on from the legacy ids.
    CREATE SEQUENCE webhook_attempts_id AS bigint OWNED BY webhook_attempts.id;
    PERFORM setval('webhook_attempts_id', coalesce((SELECT max(id) FROM webhook_attempts_legacy), 0) + 1,
                   false);
    ALTER TABLE webhook_attempts ALTER COLUMN id SET DEFAULT nextval('webhook_attempts_id');
    ALTER TABLE webhook_attempts ADD PRIMARY KEY (id, at);
    ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_endpoint_id_fkey
        FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints (id) ON DELETE CASCADE;
    CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);

    FOREACH t IN ARRAY ARRAY['events', 'webhook_deliveries', 'webhook_attempts'] LOOP
        IF bound IS NULL THEN
            EXECUTE format('DROP TABLE %I', t || '_legacy');
        ELSE
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                           t, t || '_legacy', bound);
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_legacy', t || '_legacy_range');
        END IF;
    END LOOP;
    -- Every index of a legacy table is now a partition of the parent's (ATTACH took over those
    -- that match): a leftover would mean a definition above drifted from the original.
    FOR ix IN SELECT i.indexrelid::regclass AS name FROM pg_index i
              JOIN pg_class c ON c.oid = i.indrelid
              WHERE c.relname IN ('events_legacy', 'webhook_deliveries_legacy',
                                  'webhook_attempts_legacy')
                AND NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = i.indexrelid) LOOP
        RAISE EXCEPTION 'legacy index % matches no index of its partitioned table', ix.name;
    END LOOP;
END
$$;

-- The triggers, on the partitioned tables now (Postgres runs a row trigger of a partitioned
-- table on each of its partitions).
CREATE TRIGGER events_fan_out AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_fan_out();
CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_notify();
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_notify();

-- The `event_created_at` of a delivery of an event written at `at`: that time, or `-infinity`
-- for an event of the legacy partition, as the deliveries queued before the migration have
-- it. One value per event, so that a delivery queued again (a replay's ON CONFLICT) finds the
-- one it revives. Once the legacy partition is dropped, every event's own time.
CREATE FUNCTION event_delivery_time(at timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN at < (SELECT to_at FROM event_log_partitions
                           WHERE log = 'events' AND name = 'legacy')
                THEN '-infinity'::timestamptz ELSE at END
$$;

-- The fan-out names the event's time, the partition its deliveries go to.
CREATE OR REPLACE FUNCTION events_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_deliveries (event_id, event_created_at, endpoint_id)
    SELECT NEW.id, event_delivery_time(NEW.created_at), e.id FROM webhook_endpoints e
    WHERE e.tenant_id = NEW.tenant_id AND e.enabled AND NEW.type = ANY (e.events);
    RETURN NULL;
END;
$$;

-- The cascade the deliveries' foreign key gave: an event deleted (a file's, when it is
-- deleted; a tenant's, when it is purged) takes its deliveries with it, in the same statement.
-- Dropping a day's partitions fires nothing: its deliveries are dropped with it.
CREATE FUNCTION events_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM webhook_deliveries d USING gone g
    WHERE d.event_id = g.id AND d.event_created_at = event_delivery_time(g.created_at);
    RETURN NULL;
END;
$$;

CREATE TRIGGER events_cascade AFTER DELETE ON events
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION events_cascade();

-- A task's event: its partitions first.
CREATE OR REPLACE FUNCTION tasks_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM event_log_ensure();
    INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, trace_id)
    SELECT gen_random_uuid(), f.tenant_id,
           CASE NEW.status::text WHEN 'COMPLETED' THEN 'task.completed'
                                 WHEN 'FAILED' THEN 'task.failed'
                                 ELSE 'task.needs_review' END,
           NEW.source_file_id, NEW.id, task_event_data(NEW), NEW.trace_id
    FROM source_files f WHERE f.id = NEW.source_file_id;
    RETURN NULL;
END;
$$;

-- As it was (migration 20261126000001), on the partitioned table.
CREATE VIEW webhook_deliveries_claimable AS
    SELECT d.id, d.endpoint_id, d.available_at
    FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
    WHERE e.enabled AND d.status IN ('PENDING', 'FAILED') AND d.available_at <= now()
    UNION ALL
    SELECT d.id, d.endpoint_id, d.available_at
    FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
    WHERE e.enabled AND d.status = 'PROCESSING' AND d.locked_until < now();

-- Yesterday, today and the next two days (those the legacy partitions do not cover).
SELECT event_log_add_day(now() - interval '1 day');
SELECT event_log_add_day(now());
SELECT event_log_add_day(now() + interval '1 day');
SELECT event_log_add_day(now() + interval '2 days');
