-- Learned column names (contract v1.3, "Mapping review"): each (header text → field) pair of a
-- confirmed mapping is taught to the tenant's template, so a later file whose header holds a
-- learned text maps that column with `"match": "learned"` even when its other columns differ.
-- One row per tenant, template name and header text (the latest confirmation about a text
-- wins); at most `learned_columns_max()` rows per template, the least recently confirmed pruned
-- first by the statement that teaches (db::learned_columns::learn). A template's delete and the
-- tenant purge remove its rows.
CREATE FUNCTION learned_columns_max() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 500;

CREATE TABLE learned_columns (
    tenant_id     text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    template_name text        NOT NULL CHECK (template_name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    header_text   text        NOT NULL CHECK (length(header_text) BETWEEN 1 AND 1024),
    field         text        NOT NULL CHECK (length(field) BETWEEN 1 AND 1024),
    learned_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, template_name, header_text)
);

-- Pruning and reading take a template's pairs newest first.
CREATE INDEX learned_columns_recent
    ON learned_columns (tenant_id, template_name, learned_at DESC);
