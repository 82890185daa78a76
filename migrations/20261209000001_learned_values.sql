-- Learned values (contract v1.3, "Value mapping in review"): the texts a person mapped to an
-- `enum` or `boolean` field's allowed values while answering a review, per tenant and template,
-- applied by every later parse with that template after the field's own transforms (like a
-- `map` transform), so the next file with those texts goes through. One row per tenant,
-- template, field and text (the latest answer about a text wins); at most
-- `learned_values_max()` rows per template, the least recently confirmed pruned first by the
-- statement that teaches (db::learned_values::learn). A template's delete and the tenant purge
-- remove its rows.
CREATE FUNCTION learned_values_max() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN 10000;

CREATE TABLE learned_values (
    tenant_id     text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    template_name text        NOT NULL CHECK (template_name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    field         text        NOT NULL CHECK (length(field) BETWEEN 1 AND 1024),
    text          text        NOT NULL CHECK (length(text) BETWEEN 1 AND 200),
    value         text        NOT NULL CHECK (length(value) BETWEEN 1 AND 1024),
    learned_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, template_name, field, text)
);

-- Pruning and reading take a template's values newest first.
CREATE INDEX learned_values_recent
    ON learned_values (tenant_id, template_name, learned_at DESC);
