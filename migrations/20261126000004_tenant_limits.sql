-- Limits per tenant: an upload rate and a storage quota. Defaults come from the api's settings
-- (UPLOAD_RATE, STORAGE_QUOTA_BYTES); a row here overrides them for one tenant
-- (`api tenants set`).
CREATE TABLE tenant_limits (
    tenant_id           text        PRIMARY KEY
        CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    -- Uploads allowed per period, and a burst of as many: a token bucket.
    upload_rate         integer     CHECK (upload_rate > 0),
    upload_rate_secs    integer     CHECK (upload_rate_secs IN (1, 60)),
    storage_quota_bytes bigint      CHECK (storage_quota_bytes >= 0),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rate_has_a_period CHECK ((upload_rate IS NULL) = (upload_rate_secs IS NULL))
);

-- Bytes each tenant stores, kept by a trigger on source_files so a quota check reads one row
-- (and locks it, so two uploads cannot both squeeze under the quota).
CREATE TABLE tenant_usage (
    tenant_id    text   PRIMARY KEY,
    stored_bytes bigint NOT NULL DEFAULT 0 CHECK (stored_bytes >= 0)
);
INSERT INTO tenant_usage (tenant_id, stored_bytes)
    SELECT tenant_id, sum(size_bytes) FROM source_files GROUP BY tenant_id;

CREATE FUNCTION tenant_usage_follows_files() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO tenant_usage (tenant_id, stored_bytes) VALUES (NEW.tenant_id, NEW.size_bytes)
        ON CONFLICT (tenant_id)
            DO UPDATE SET stored_bytes = tenant_usage.stored_bytes + EXCLUDED.stored_bytes;
    ELSE
        UPDATE tenant_usage SET stored_bytes = greatest(stored_bytes - OLD.size_bytes, 0)
        WHERE tenant_id = OLD.tenant_id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER source_files_usage AFTER INSERT OR DELETE ON source_files
    FOR EACH ROW EXECUTE FUNCTION tenant_usage_follows_files();

-- Each tenant's upload bucket: tokens left as of `refilled_at`.
CREATE TABLE upload_buckets (
    tenant_id   text             PRIMARY KEY,
    tokens      double precision NOT NULL,
    refilled_at timestamptz      NOT NULL
);
