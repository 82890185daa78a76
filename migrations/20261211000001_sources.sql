-- Blob sources (contract v1.3): a tenant's own Blob container (and prefix) whose new blobs are
-- imported like uploads, without an HTTP request. Blobs are found by listing the container
-- (incrementally, from a continuation marker) and from Event Grid `BlobCreated` events (a
-- storage queue the worker reads, or `POST /api/v1/sources/{id}/events`); every finding writes
-- the same row of `source_blobs`, keyed by (source, blob name, ETag), and only the first
-- writes it. The worker imports each such row once on the claim loop the relay shares: it
-- copies the blob into the uploads container and, in one transaction, writes the source file,
-- its task, its outbox message and the row's `IMPORTED`, conditionally on the row still being
-- its claim (see `worker::sources`).

-- The new foreign key locks `source_files`; take that lock first, as an upload's or a
-- consumer's transaction does, so a migration run while they write waits instead of deadlocking.
LOCK TABLE source_files IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE sources (
    id               uuid        PRIMARY KEY,
    tenant_id        text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    kind             text        NOT NULL CHECK (kind = 'azure_blob'),
    -- The container URL as `shared::storage::external` normalises it: no two spellings.
    container_url    text        NOT NULL CHECK (length(container_url) BETWEEN 1 AND 2048),
    prefix           text        NOT NULL DEFAULT '' CHECK (length(prefix) <= 512),
    credential_kind  text        NOT NULL CHECK (credential_kind IN ('sas', 'connection_string',
                                                                     'managed_identity')),
    -- The SAS or connection string, sealed under WEBHOOK_SECRET_KEY with the source's id.
    sealed_secret    bytea,
    -- What an HTTP upload can say: the template (its latest version when a blob is imported),
    -- what to do with invalid rows, the application's metadata.
    template_name    text        CHECK (length(template_name) BETWEEN 1 AND 200),
    on_invalid       text        CHECK (on_invalid IN ('reject_file', 'drop_invalid_rows',
                                                       'keep_invalid_rows')),
    metadata         jsonb       CHECK (metadata IS NULL OR jsonb_typeof(metadata) = 'object'),
    description      text        CHECK (length(description) <= 1024),
    -- Whether the blobs already there at the first listing are imported (or only later ones).
    import_existing  boolean     NOT NULL DEFAULT true,
    -- `delete`: a blob is deleted from the container once it is imported.
    after_import     text        NOT NULL DEFAULT 'keep' CHECK (after_import IN ('keep', 'delete')),
    enabled          boolean     NOT NULL DEFAULT true,
    -- The listing: the marker of the page to list next (NULL: the next pass starts at the
    -- beginning), when it is due, who holds it, and how many passes over the container ended.
    list_marker      text,
    list_due_at      timestamptz NOT NULL DEFAULT now(),
    list_locked_until timestamptz,
    passes           integer     NOT NULL DEFAULT 0 CHECK (passes >= 0),
    listed_at        timestamptz,
    -- Why the last listing or import failed (a code of the contract's vocabulary and a message);
    -- NULL once one succeeds.
    last_error_code  text,
    last_error       text,
    last_error_at    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((sealed_secret IS NULL) = (credential_kind = 'managed_identity'))
);
CREATE INDEX sources_tenant ON sources (tenant_id, id);
CREATE INDEX sources_container ON sources (container_url);
CREATE INDEX sources_list_due ON sources (list_due_at) WHERE enabled;

CREATE TYPE source_blob_status AS ENUM ('PENDING', 'IMPORTING', 'IMPORTED', 'SKIPPED', 'FAILED');

-- One row per blob version a source has seen. Bounded: a source's rows go with it, and a
-- finished row whose blob a whole listing pass no longer saw (deleted, or overwritten: a new
-- ETag is a new row) is pruned when the pass after it ends.
CREATE TABLE source_blobs (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    source_id      uuid        NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
    blob           text        NOT NULL CHECK (length(blob) BETWEEN 1 AND 1024),
    etag           text        NOT NULL CHECK (length(etag) BETWEEN 1 AND 256),
    size_bytes     bigint      CHECK (size_bytes >= 0),
    -- `listing` or `event`: what found it first.
    found_by       text        NOT NULL CHECK (found_by IN ('listing', 'event')),
    status         source_blob_status NOT NULL DEFAULT 'PENDING',
    attempts       integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    failures       integer     NOT NULL DEFAULT 0 CHECK (failures >= 0),
    available_at   timestamptz NOT NULL DEFAULT now(),
    locked_until   timestamptz,
    -- SKIPPED and FAILED: why (`empty_file`, `file_too_large`, `unsupported_format`,
    -- `blob_gone`, `existing`, `source_unreachable`, …); NULL otherwise.
    outcome        text        CHECK (length(outcome) <= 64),
    last_error     text,
    source_file_id uuid        REFERENCES source_files (id) ON DELETE SET NULL,
    -- The listing pass that last saw it (see `sources.passes`).
    seen_pass      integer     NOT NULL DEFAULT 0,
    found_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, blob, etag),
    CHECK ((status = 'IMPORTING') = (locked_until IS NOT NULL))
);
CREATE INDEX source_blobs_due ON source_blobs (available_at) WHERE status IN ('PENDING', 'FAILED');
CREATE INDEX source_blobs_claimed ON source_blobs (locked_until) WHERE status = 'IMPORTING';
CREATE INDEX source_blobs_source_file ON source_blobs (source_file_id)
    WHERE source_file_id IS NOT NULL;

-- Wakes the importer the moment new rows commit (one notification per statement).
CREATE FUNCTION source_blobs_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('source_blobs', '');
    RETURN NULL;
END;
$$;
CREATE TRIGGER source_blobs_wake AFTER INSERT ON source_blobs
    FOR EACH STATEMENT EXECUTE FUNCTION source_blobs_wake();

-- Where a file came from: `{"source_id", "blob", "etag"}`; NULL for an HTTP upload.
ALTER TABLE source_files ADD COLUMN origin jsonb;
