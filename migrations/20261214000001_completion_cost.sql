-- Two costs every completed task paid in Postgres, cut (tests/bench/side_by_side/uploads.sh with
-- STATEMENTS=1, 500 small uploads; the same results either way).
--
-- 1. What a file's rows take (row_store_file_bytes, migration 20261129000004), measured once per
-- stored file by the consumer's `INSERT INTO file_row_usage`. As a SQL function it was planned
-- again at every call: its three queries over the partitioned row store, about 0.4 ms of
-- Postgres per task, the largest planning cost of a small upload's whole path
-- (tests/bench/side_by_side/uploads.sh with STATEMENTS=1: 211 ms of planning in 500 tasks).
-- As PL/pgSQL its plans are kept for the session; generic ones, so the partition is found at
-- execution (the planner's own choice was a new custom plan each time, as the generic plan
-- over every partition looks dearer). The same sums, the same result.
CREATE OR REPLACE FUNCTION row_store_file_bytes(id uuid, chunk_overhead bigint) RETURNS bigint
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN coalesce((SELECT sum(pg_column_size(c."rows")) + count(*) * chunk_overhead
                     FROM parsed_row_chunks c WHERE c.source_file_id = id), 0)
           + coalesce((SELECT sum(pg_column_size(e.*)) FROM validation_errors e
                       WHERE e.source_file_id = id), 0)
           + coalesce((SELECT sum(pg_column_size(r.*)) FROM rejected_rows r
                       WHERE r.source_file_id = id), 0);
END
$$;

-- 2. A task that becomes COMPLETED queues its file for its tenant's destinations. Most tenants
-- have none, and the queueing statement (an INSERT … SELECT … ON CONFLICT, planned afresh, after
-- the file's latest revision was looked up) cost about 0.25 ms a task for nothing: one probe of
-- the tenant's enabled destinations comes first now.
CREATE OR REPLACE FUNCTION tasks_destination_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM source_files f JOIN destinations d ON d.tenant_id = f.tenant_id
                   WHERE f.id = NEW.source_file_id AND d.enabled) THEN
        RETURN NULL;
    END IF;
    PERFORM destination_deliveries_queue(
        NEW.source_file_id, NEW.id,
        COALESCE((SELECT max(revision) FROM file_revisions
                  WHERE source_file_id = NEW.source_file_id), 0));
    RETURN NULL;
END;
$$;
