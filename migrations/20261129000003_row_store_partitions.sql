-- Partitioning the row store, step 3 of 3: each of the three tables becomes a table partitioned
-- by RANGE (source_file_id) with the same columns, constraints and indexes, and the table as it
-- was becomes its partition `<table>_legacy` (the ids before the bound of the first migration).
-- The validated CHECK proves the legacy rows fit, so ATTACH reads none of them, and its indexes
-- and foreign key are taken over as they are: the whole step is catalog changes. A database
-- whose three tables are empty (a new one) keeps no legacy partition at all.
--
-- Months are added ahead by the worker's maintenance (and by a consumer about to store the
-- rows of a month that has none yet) with row_store_add_month, which attaches a new empty table
-- (ATTACH takes a SHARE UPDATE EXCLUSIVE lock on the parent: reads and writes go on; CREATE
-- TABLE ... PARTITION OF would take an ACCESS EXCLUSIVE one).

-- The start of the month after `month_start`, counted in UTC whatever the session's TimeZone.
CREATE FUNCTION row_store_next_month(month_start timestamptz) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ((month_start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
$$;

-- Adds the partitions of the month that contains `at` (UTC) to the three tables, unless a
-- partition already covers it. Returns whether it added them. Safe to call from several
-- sessions at once (they take turns on an advisory lock) and cheap when there is nothing to do.
CREATE FUNCTION row_store_add_month(at timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    m  timestamptz := date_trunc('month', at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    lo uuid := row_store_bound(m);
    hi uuid := row_store_bound(row_store_next_month(m));
    suffix text := to_char(m AT TIME ZONE 'UTC', 'YYYY_MM');
    t text;
BEGIN
    IF EXISTS (SELECT 1 FROM row_store_partitions
               WHERE (from_id IS NULL OR from_id < hi) AND to_id > lo) THEN
        RETURN false;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('row_store_partitions'));
    IF EXISTS (SELECT 1 FROM row_store_partitions
               WHERE (from_id IS NULL OR from_id < hi) AND to_id > lo) THEN
        RETURN false;
    END IF;
    -- Never queue behind a long transaction while holding up everyone queued behind us.
    PERFORM set_config('lock_timeout', '10s', true);
    FOREACH t IN ARRAY ARRAY['parsed_row_chunks', 'validation_errors', 'rejected_rows'] LOOP
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                       'INCLUDING COMPRESSION INCLUDING STORAGE)', t || '_' || suffix, t);
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                       t, t || '_' || suffix, lo, hi);
    END LOOP;
    INSERT INTO row_store_partitions (name, from_id, to_id) VALUES (suffix, lo, hi);
    RETURN true;
END
$$;

-- As in the first step: fail after 5 s waiting for a lock rather than hold up what queues
-- behind it.
SET LOCAL lock_timeout = '5s';

-- The locks this step needs, taken first and in the order writers take them (a file, then its
-- rows): an upload or a parse in flight finishes first, and none can deadlock with the step by
-- holding the file table while it waits for a row table. They are held for the catalog
-- changes below, milliseconds.
LOCK TABLE source_files IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE parsed_row_chunks, validation_errors, rejected_rows IN ACCESS EXCLUSIVE MODE;

DO $$
DECLARE
    legacy_to uuid;
    t text;
    ix record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM parsed_row_chunks) AND NOT EXISTS (SELECT 1 FROM validation_errors)
       AND NOT EXISTS (SELECT 1 FROM rejected_rows) THEN
        DELETE FROM row_store_partitions WHERE name = 'legacy';
    END IF;
    SELECT to_id INTO legacy_to FROM row_store_partitions WHERE name = 'legacy';
    FOREACH t IN ARRAY ARRAY['parsed_row_chunks', 'validation_errors', 'rejected_rows'] LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_legacy');
        FOR ix IN SELECT indexname FROM pg_indexes
                  WHERE schemaname = current_schema() AND tablename = t || '_legacy' LOOP
            EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.indexname, ix.indexname || '_legacy');
        END LOOP;
        -- Columns, defaults, NOT NULLs, CHECKs (under their own names, which ATTACH matches)
        -- and the lz4 compression of the chunks' rows; not the legacy range.
        EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                       'INCLUDING COMPRESSION INCLUDING STORAGE) PARTITION BY RANGE (source_file_id)',
                       t, t || '_legacy');
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t, t || '_legacy_range');
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', t || '_legacy',
                       t || '_source_file_id_fkey', t || '_source_file_id_fkey_legacy');
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I FOREIGN KEY (source_file_id) '
                       'REFERENCES source_files (id) ON DELETE CASCADE',
                       t, t || '_source_file_id_fkey');
    END LOOP;

    ALTER TABLE parsed_row_chunks ADD PRIMARY KEY (source_file_id, sheet_index, first_row);
    ALTER TABLE validation_errors ADD PRIMARY KEY (source_file_id, seq);
    CREATE INDEX validation_errors_field ON validation_errors (source_file_id, field, seq);
    CREATE INDEX validation_errors_code ON validation_errors (source_file_id, code, seq);
    CREATE INDEX validation_errors_row ON validation_errors (source_file_id, sheet, row_number);
    ALTER TABLE rejected_rows ADD PRIMARY KEY (source_file_id, sheet, row_number);

    FOREACH t IN ARRAY ARRAY['parsed_row_chunks', 'validation_errors', 'rejected_rows'] LOOP
        IF legacy_to IS NULL THEN
            EXECUTE format('DROP TABLE %I', t || '_legacy');
        ELSE
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                           t, t || '_legacy', legacy_to);
            EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_legacy', t || '_legacy_range');
        END IF;
    END LOOP;
END
$$;

-- This month and the next two (those the legacy partition does not cover).
SELECT row_store_add_month(now());
SELECT row_store_add_month(row_store_next_month(now()));
SELECT row_store_add_month(row_store_next_month(row_store_next_month(now())));
