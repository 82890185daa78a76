-- Lifecycle: per-tenant retention, tenant purges, and the removal of one file in short steps.
--
-- Removing a big file in one statement holds its locks, and writes its WAL, for as long as
-- deleting every one of its row chunks takes. The worker's retention and purge jobs instead mark
-- the file (`deleting_at`), delete its blob, delete its chunks, error records and events in
-- bounded batches, one short transaction each, and delete the file row last. A crash anywhere
-- leaves a marked file, which the next run takes up again where it stopped; the api already
-- hides it.

ALTER TABLE tenant_limits
    -- Files older than this are deleted by the worker's retention job (NULL: the RETENTION
    -- setting applies).
    ADD COLUMN retention_secs bigint CHECK (retention_secs > 0);

ALTER TABLE source_files
    -- When a retention or purge job started removing the file: from then on it is hidden from
    -- the api and its task is never started again, until the file row itself is deleted.
    ADD COLUMN deleting_at timestamptz;

-- What the retention job reads: each tenant's oldest files still in place.
CREATE INDEX source_files_tenant_oldest ON source_files (tenant_id, created_at)
    WHERE deleting_at IS NULL;
-- What the removal steps read: the files being removed.
CREATE INDEX source_files_deleting ON source_files (tenant_id, deleting_at)
    WHERE deleting_at IS NOT NULL;
-- The orphan sweep asks which of a page of blob names have a file (blob_name is UNIQUE, so
-- its index serves); a purge deletes a tenant's webhook attempts by endpoint (indexed too).

-- `api tenants purge`: one row per tenant whose purge was asked for. The worker's purge job
-- works through the open ones and sets `finished_at` once the tenant owns nothing; the row stays
-- as the record that the tenant was purged (and is reopened by another purge).
CREATE TABLE tenant_purges (
    tenant_id      text        PRIMARY KEY
        CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    requested_at   timestamptz NOT NULL DEFAULT now(),
    finished_at    timestamptz,
    CONSTRAINT finished_after_requested CHECK (finished_at IS NULL OR finished_at >= requested_at)
);
CREATE INDEX tenant_purges_open ON tenant_purges (requested_at) WHERE finished_at IS NULL;
