-- The mapping review: a templated task whose columns cannot be matched to the template's fields
-- with confidence waits in NEEDS_REVIEW (not final, holding no worker and no lease) until a
-- person confirms a mapping, which sends it back to PENDING through the outbox; a confirmed
-- mapping is remembered for the tenant, template and header set.
--
-- The new enum value cannot be used by this migration's own transaction, so the constraints
-- below compare the status as text.
ALTER TYPE task_status ADD VALUE 'NEEDS_REVIEW';

ALTER TABLE tasks
    -- The review document (`reason`, `header_row`, `columns` with samples, `suggested_mapping`),
    -- kept after the review is answered for the record; shown while NEEDS_REVIEW.
    ADD COLUMN review jsonb CHECK (review IS NULL OR jsonb_typeof(review) = 'object'),
    -- When the task last entered NEEDS_REVIEW: the review timeout counts from here. Set exactly
    -- while it waits.
    ADD COLUMN review_requested_at timestamptz,
    -- The mapping a person confirmed (`{"<field>": <column index>|null}`): the next attempt
    -- validates with it instead of matching the columns again.
    ADD COLUMN confirmed_mapping jsonb
        CHECK (confirmed_mapping IS NULL OR jsonb_typeof(confirmed_mapping) = 'object'),
    ADD CONSTRAINT review_requested_exactly_when_in_review
        CHECK ((status::text = 'NEEDS_REVIEW') = (review_requested_at IS NOT NULL)),
    ADD CONSTRAINT in_review_with_a_review
        CHECK (review_requested_at IS NULL OR review IS NOT NULL);

-- The review timeout's sweep reads the waiting tasks, oldest first.
CREATE INDEX tasks_in_review ON tasks (review_requested_at) WHERE review_requested_at IS NOT NULL;

-- Mappings people confirmed, per tenant, template name and exact set of header texts (the
-- sha256 of the sorted texts): the next file with that header set is mapped the same way
-- without a review. Columns are named by their header text, so a file with the columns in
-- another order maps alike. One row per key (a new confirmation replaces it), so the table is
-- bounded by what the tenants' templates meet; a template's delete removes its rows.
CREATE TABLE remembered_mappings (
    tenant_id     text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    template_name text        NOT NULL CHECK (template_name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    header_key    text        NOT NULL CHECK (header_key ~ '^[0-9a-f]{64}$'),
    -- `{"<field>": "<header text>"|null}`.
    mapping       jsonb       NOT NULL CHECK (jsonb_typeof(mapping) = 'object'),
    confirmed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, template_name, header_key)
);
