-- What each file's rows take in the row store, and each tenant's sums: the per-tenant gauges
-- of docs/operations.md and `api tenants show`.
--
-- A table of its own rather than columns of source_files: the consumer writes it in the
-- transaction that stores the rows, after their COPY, and a consumer holding a row table while
-- it waits for the file table could deadlock with a step that takes them in the other order
-- (the partitioning migration, uploads). Inserting here only reads the file row (its foreign
-- key check), like the COPY itself.
CREATE TABLE file_row_usage (
    source_file_id uuid   PRIMARY KEY REFERENCES source_files (id) ON DELETE CASCADE,
    tenant_id      text   NOT NULL,
    -- Parsed rows stored.
    row_count      bigint NOT NULL CHECK (row_count >= 0),
    -- Their chunks (as stored: compressed), error records and rejected rows, with an estimate
    -- of each tuple's header and index entry (row_store_file_bytes, below).
    row_bytes      bigint NOT NULL CHECK (row_bytes >= 0)
);

-- What file `id`'s rows take in the row store: its chunks as stored (pg_column_size of a
-- compressed value is its compressed size, read without decompressing it) plus
-- `chunk_overhead` bytes each for the tuple header and index entry, its error records and its
-- rejected rows. The consumer's record and the backfill of older files both measure with it.
CREATE FUNCTION row_store_file_bytes(id uuid, chunk_overhead bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT sum(pg_column_size(c."rows")) + count(*) * chunk_overhead
                     FROM parsed_row_chunks c WHERE c.source_file_id = id), 0)
           + coalesce((SELECT sum(pg_column_size(e.*)) FROM validation_errors e
                       WHERE e.source_file_id = id), 0)
           + coalesce((SELECT sum(pg_column_size(r.*)) FROM rejected_rows r
                       WHERE r.source_file_id = id), 0)
$$;

ALTER TABLE tenant_usage
    ADD COLUMN row_count bigint NOT NULL DEFAULT 0,
    ADD COLUMN row_bytes bigint NOT NULL DEFAULT 0;

CREATE FUNCTION tenant_usage_follows_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d_count bigint := coalesce(CASE WHEN TG_OP <> 'DELETE' THEN NEW.row_count END, 0)
                      - coalesce(CASE WHEN TG_OP <> 'INSERT' THEN OLD.row_count END, 0);
    d_bytes bigint := coalesce(CASE WHEN TG_OP <> 'DELETE' THEN NEW.row_bytes END, 0)
                      - coalesce(CASE WHEN TG_OP <> 'INSERT' THEN OLD.row_bytes END, 0);
    tenant text := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Never a new row: a purged tenant's usage row is gone for good.
        UPDATE tenant_usage SET row_count = greatest(row_count + d_count, 0),
                                row_bytes = greatest(row_bytes + d_bytes, 0)
        WHERE tenant_id = tenant;
    ELSE
        INSERT INTO tenant_usage (tenant_id, row_count, row_bytes)
        VALUES (tenant, greatest(d_count, 0), greatest(d_bytes, 0))
        ON CONFLICT (tenant_id) DO UPDATE
            SET row_count = greatest(tenant_usage.row_count + d_count, 0),
                row_bytes = greatest(tenant_usage.row_bytes + d_bytes, 0);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER file_row_usage_sums AFTER INSERT OR UPDATE OR DELETE ON file_row_usage
    FOR EACH ROW EXECUTE FUNCTION tenant_usage_follows_rows();

-- Files stored before this migration are measured by the worker's maintenance, a batch at a
-- time (shared::db::row_store::measure_unmeasured); nothing is read here.
