-- A tenant's uploads no longer queue on one row. Before, every upload locked the tenant's
-- single `tenant_usage` row (the quota check, then the trigger raising it) and took a token from
-- its `upload_buckets` row, each held until a commit that waits for the WAL flush: one tenant's
-- uploads were serialised on commit latency, a ceiling no number of api replicas raised.
--
-- Quota: the tenant's usage is split over `usage_shard_count()` rows, and the quota into as many
-- grants (escrow): shard i may take bytes while stored_bytes_i + size <= granted_bytes_i, and the
-- grants of a tenant never add up to more than its quota, so the shards together never pass it.
-- An upload locks one shard that has room, skipping those another upload holds
-- (db::uploads::insert). Only when no shard has room (near the quota, a file larger than a
-- shard's grant, a changed quota) does it take the exact path: every shard locked in order, the
-- sum checked, the free bytes granted again (usage_regrant, below). Templates take that path
-- every time (db::templates::store).
--
-- Row store sums: the rows each tenant's files take (file_row_usage's sums, kept by the
-- consumer's transactions) move to a table of their own, so storing a file's rows never waits
-- for an upload holding a usage shard, nor an upload for it.
--
-- Rate: the token buckets become UNLOGGED. A transaction that writes only unlogged tables does
-- not wait for the WAL flush at commit, so a bucket row is held for microseconds, not a disk
-- write. A crash of Postgres empties the table: every bucket starts full again (one burst).

CREATE FUNCTION usage_shard_count() RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 32;

-- The shard a file's uploads start looking from, and the one whose row counts its rows in the
-- row store: spread like the files' ids.
CREATE FUNCTION usage_shard(id uuid) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (get_byte(uuid_send(id), 15) % usage_shard_count())::smallint;

-- The file table before the usage table, in the order an upload takes them (its insert, then
-- the trigger): the other order deadlocks with an upload in flight.
-- The shard a file was counted in, so its deletion gives the bytes back to the same one.
ALTER TABLE source_files ADD COLUMN usage_shard smallint NOT NULL DEFAULT 0;

CREATE TABLE tenant_row_usage (
    tenant_id text     NOT NULL,
    shard     smallint NOT NULL CHECK (shard >= 0 AND shard < usage_shard_count()),
    row_count bigint   NOT NULL DEFAULT 0 CHECK (row_count >= 0),
    row_bytes bigint   NOT NULL DEFAULT 0 CHECK (row_bytes >= 0),
    PRIMARY KEY (tenant_id, shard)
);
INSERT INTO tenant_row_usage (tenant_id, shard, row_count, row_bytes)
SELECT tenant_id, usage_shard(source_file_id), sum(row_count), sum(row_bytes)
FROM file_row_usage GROUP BY 1, 2;

ALTER TABLE tenant_usage
    DROP COLUMN row_count,
    DROP COLUMN row_bytes,
    ADD COLUMN shard smallint NOT NULL DEFAULT 0,
    -- What this shard may store: its part of the quota, handed out by usage_regrant.
    ADD COLUMN granted_bytes bigint NOT NULL DEFAULT 0,
    -- The quota the grant was made from: a changed quota is granted again before it is used.
    ADD COLUMN granted_for bigint,
    DROP CONSTRAINT tenant_usage_pkey,
    ADD PRIMARY KEY (tenant_id, shard),
    ADD CONSTRAINT tenant_usage_shard_range CHECK (shard >= 0 AND shard < usage_shard_count());

CREATE OR REPLACE FUNCTION tenant_usage_follows_files() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO tenant_usage (tenant_id, shard, stored_bytes)
        VALUES (NEW.tenant_id, NEW.usage_shard, NEW.size_bytes)
        ON CONFLICT (tenant_id, shard)
            DO UPDATE SET stored_bytes = tenant_usage.stored_bytes + EXCLUDED.stored_bytes;
    ELSE
        UPDATE tenant_usage SET stored_bytes = greatest(stored_bytes - OLD.size_bytes, 0)
        WHERE tenant_id = OLD.tenant_id AND shard = OLD.usage_shard;
    END IF;
    RETURN NULL;
END $$;

-- Templates are counted in shard 0, which usage_regrant gives their bytes before they are stored.
CREATE OR REPLACE FUNCTION tenant_usage_follows_templates() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO tenant_usage (tenant_id, shard, stored_bytes)
        VALUES (NEW.tenant_id, 0, template_bytes(NEW.schema))
        ON CONFLICT (tenant_id, shard)
            DO UPDATE SET stored_bytes = tenant_usage.stored_bytes + EXCLUDED.stored_bytes;
    ELSE
        UPDATE tenant_usage
        SET stored_bytes = greatest(stored_bytes - template_bytes(OLD.schema), 0)
        WHERE tenant_id = OLD.tenant_id AND shard = 0;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION tenant_usage_follows_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    d_count bigint := coalesce(CASE WHEN TG_OP <> 'DELETE' THEN NEW.row_count END, 0)
                      - coalesce(CASE WHEN TG_OP <> 'INSERT' THEN OLD.row_count END, 0);
    d_bytes bigint := coalesce(CASE WHEN TG_OP <> 'DELETE' THEN NEW.row_bytes END, 0)
                      - coalesce(CASE WHEN TG_OP <> 'INSERT' THEN OLD.row_bytes END, 0);
    tenant text := CASE WHEN TG_OP = 'DELETE' THEN OLD.tenant_id ELSE NEW.tenant_id END;
    slot smallint := usage_shard(CASE WHEN TG_OP = 'DELETE' THEN OLD.source_file_id
                                      ELSE NEW.source_file_id END);
BEGIN
    IF TG_OP = 'DELETE' THEN
        -- Never a new row: a purged tenant's sums are gone for good.
        UPDATE tenant_row_usage SET row_count = greatest(row_count + d_count, 0),
                                    row_bytes = greatest(row_bytes + d_bytes, 0)
        WHERE tenant_id = tenant AND shard = slot;
    ELSE
        INSERT INTO tenant_row_usage (tenant_id, shard, row_count, row_bytes)
        VALUES (tenant, slot, greatest(d_count, 0), greatest(d_bytes, 0))
        ON CONFLICT (tenant_id, shard) DO UPDATE
            SET row_count = greatest(tenant_row_usage.row_count + d_count, 0),
                row_bytes = greatest(tenant_row_usage.row_bytes + d_bytes, 0);
    END IF;
    RETURN NULL;
END $$;

-- The exact path of the quota check: locks every usage row of `tenant` in shard order (creating
-- the missing ones), and when `size` more bytes fit beside the sum (the rule of
-- api::uploads::limits::check_quota: a tenant at its quota stores nothing more, not even
-- 0 bytes) grants the free bytes again: `size` and an even part of the rest to shard 0, an even
-- part to each other shard, so the grants add up to exactly `quota`. Returns the bytes stored
-- and whether `size` fits; the caller then writes in shard 0 within the same transaction.
CREATE FUNCTION usage_regrant(tenant text, quota bigint, size bigint,
                              OUT used bigint, OUT fits boolean)
LANGUAGE plpgsql AS $$
DECLARE
    n constant bigint := usage_shard_count();
    rest bigint;
BEGIN
    -- Only when some are missing: the insert would wait for every upload in flight.
    IF (SELECT count(*) FROM tenant_usage WHERE tenant_id = tenant) < n THEN
        INSERT INTO tenant_usage (tenant_id, shard)
        SELECT tenant, s FROM generate_series(0, n - 1) s
        ON CONFLICT (tenant_id, shard) DO NOTHING;
    END IF;
    SELECT coalesce(sum(stored_bytes), 0) INTO used
    FROM (SELECT stored_bytes FROM tenant_usage WHERE tenant_id = tenant
          ORDER BY shard FOR UPDATE) locked;
    fits := used + size <= quota AND (size > 0 OR used < quota);
    IF NOT fits THEN
        RETURN;
    END IF;
    rest := quota - used - size;
    UPDATE tenant_usage
    SET granted_bytes = stored_bytes + rest / n
                        + CASE WHEN shard = 0 THEN size + rest % n ELSE 0 END,
        granted_for = quota
    WHERE tenant_id = tenant;
END $$;

ALTER TABLE upload_buckets SET UNLOGGED;
