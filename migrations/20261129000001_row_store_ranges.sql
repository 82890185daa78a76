-- The row store becomes partitioned by month, in three migrations (this one, the next two), so
-- that no step holds a lock that stops reads or writes for longer than a catalog change: each
-- migration is one transaction, and the one step that reads the whole table (validating a
-- CHECK, next migration) takes only a lock that lets reads and writes go on.
--
-- What grows with every parsed row is `parsed_row_chunks`, `validation_errors` and
-- `rejected_rows`. Each is keyed by `source_file_id` first, and file ids are UUIDv7 (the api
-- has always made them with `Uuid::now_v7`): their first 48 bits are the upload's millisecond,
-- so a month of uploads is a range of ids. Partitioning by RANGE (source_file_id) then needs
-- no new column, every existing query and index keeps working, and a page of a file's rows
-- (`WHERE source_file_id = $1 ...`) reads one partition. Retention drops a month's partitions
-- in one statement once every file of that month is gone or being removed, instead of deleting
-- its rows a batch at a time (`worker/src/lifecycle/row_store.rs`).
--
-- The tables as they are become one partition, `<table>_legacy`, of ids before a bound: the
-- start of the next month (or the one after, within a day of it), so that uploads during the
-- deploy still fit it. This migration records the bound and adds the CHECK that will let the
-- table be attached without a scan, NOT VALID (a catalog change, no scan).

-- An ALTER TABLE waiting for its lock holds up every query queued behind it: behind a running
-- autovacuum, one second until Postgres cancels it (measured: bench row-store-migration), and
-- behind an anti-wraparound one, which is not cancelled, until it ends. Rather than that, the
-- migration fails after 5 s and is run again (it changes nothing until it commits).
SET LOCAL lock_timeout = '5s';

-- The first file id of a month that starts at `month_start` (UTC): its millisecond, then zeros.
CREATE FUNCTION row_store_bound(month_start timestamptz) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (lpad(to_hex((extract(epoch FROM month_start) * 1000)::bigint), 12, '0')
            || '00000000000000000000')::uuid
$$;

-- The start (UTC) of the month in which the UUIDv7 `id` was made.
CREATE FUNCTION row_store_month_of(id uuid) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT date_trunc('month',
               to_timestamp(('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint
                            / 1000.0) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
$$;

-- The partitions of the row store, one row per range of file ids; each range is a partition
-- of each of the three tables, named `<table>_<name>`. `from_id` NULL: from the lowest id.
CREATE TABLE row_store_partitions (
    name    text PRIMARY KEY CHECK (name ~ '^(legacy|[0-9]{4}_[0-9]{2})$'),
    from_id uuid,
    to_id   uuid NOT NULL,
    CONSTRAINT a_range CHECK (from_id IS NULL OR from_id < to_id)
);

DO $$
DECLARE
    upper_bound uuid := row_store_bound(
        (date_trunc('month', (now() + interval '1 day') AT TIME ZONE 'UTC') + interval '1 month')
        AT TIME ZONE 'UTC');
    t text;
BEGIN
    INSERT INTO row_store_partitions (name, from_id, to_id) VALUES ('legacy', NULL, upper_bound);
    FOREACH t IN ARRAY ARRAY['parsed_row_chunks', 'validation_errors', 'rejected_rows'] LOOP
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (source_file_id < %L) NOT VALID',
                       t, t || '_legacy_range', upper_bound);
    END LOOP;
END
$$;
