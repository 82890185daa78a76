-- Import sessions (contract v1.3): an application's back end mints a short-lived token for one
-- of its end users, scoped to one template, its own uploads and the origins of the
-- application's pages; the end user's browser then talks to sheetrelay without the tenant's key.
-- Only a SHA-256 of the token is stored, as for API keys. Rows are pruned by the worker's
-- maintenance a day after they expire (shared::db::sessions::prune), so the table holds at most
-- a day and an hour of sessions.
CREATE TABLE import_sessions (
    id              uuid        PRIMARY KEY,
    tenant_id       text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    token_hash      bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    template_name   text        NOT NULL,
    end_user        jsonb       NOT NULL CHECK (jsonb_typeof(end_user) = 'object'
                                                AND octet_length(end_user::text) <= 4096),
    metadata        jsonb       CHECK (metadata IS NULL OR (jsonb_typeof(metadata) = 'object'
                                                AND octet_length(metadata::text) <= 16384)),
    allowed_origins text[]      NOT NULL CHECK (cardinality(allowed_origins) BETWEEN 1 AND 10),
    max_uploads     integer     NOT NULL CHECK (max_uploads BETWEEN 1 AND 100),
    uploads_used    integer     NOT NULL DEFAULT 0
        CHECK (uploads_used >= 0 AND uploads_used <= max_uploads),
    expires_at      timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX import_sessions_expiry ON import_sessions (expires_at);
CREATE INDEX import_sessions_tenant ON import_sessions (tenant_id);

-- The session a file was uploaded with: what its token may read. No foreign key: a pruned
-- session leaves its files as they are.
ALTER TABLE source_files ADD COLUMN session_id uuid;
CREATE INDEX source_files_session ON source_files (session_id) WHERE session_id IS NOT NULL;

-- A resumable upload made with a session's token: the file it becomes is the session's, however
-- late its last byte comes (the session may have expired by then; it was admitted before).
ALTER TABLE resumable_uploads
    ADD COLUMN session_id uuid,
    ADD COLUMN end_user jsonb CHECK (end_user IS NULL OR jsonb_typeof(end_user) = 'object');
