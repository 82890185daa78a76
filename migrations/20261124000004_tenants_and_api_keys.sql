-- Callers and tenants. Every source file belongs to a tenant; every read is scoped to the
-- caller's tenant. A tenant id is text: `default`, a name, or a GUID (Entra ID tenant ids are).
-- Files uploaded before tenants existed move to the `default` tenant.

ALTER TABLE source_files
    ADD COLUMN tenant_id text NOT NULL DEFAULT 'default'
        CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    -- Who uploaded it within the tenant: an API key id (`key:<uuid>`) or an Entra object id.
    ADD COLUMN uploaded_by text;
ALTER TABLE source_files ALTER COLUMN tenant_id DROP DEFAULT;

-- Idempotency keys are the tenant's own: one tenant's key never collides with another's.
ALTER TABLE source_files DROP CONSTRAINT source_files_idempotency_key_key;
ALTER TABLE source_files
    ADD CONSTRAINT source_files_tenant_idempotency_key UNIQUE (tenant_id, idempotency_key);

-- What the file list reads: a tenant's files, newest first (ids are UUIDv7, time-ordered).
CREATE INDEX source_files_tenant_newest ON source_files (tenant_id, id DESC);

-- API keys: only a SHA-256 of the secret is stored. Keys carry 256 random bits, so a fast hash
-- is the right one (a slow password hash protects low-entropy secrets; it would only add
-- latency to every request here).
CREATE TABLE api_keys (
    id          uuid        PRIMARY KEY,
    tenant_id   text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    name        text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    -- The key's first characters, shown by `api keys list` so people can tell keys apart.
    prefix      text        NOT NULL,
    secret_hash bytea       NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    CONSTRAINT revoked_after_created CHECK (revoked_at IS NULL OR revoked_at >= created_at)
);

-- Deleting a file deletes the outbox rows that announce it; they name it only in their payload.
CREATE INDEX outbox_messages_source_file ON outbox_messages ((payload ->> 'source_file_id'));
