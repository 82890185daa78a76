-- Import templates: what an upload must contain, as a Frictionless Table Schema, per tenant and
-- versioned. An upload records the exact version it is checked against, so editing a template
-- never changes what an earlier upload reported; deleting one only hides it (its versions stay
-- while uploads name them).

CREATE TABLE templates (
    tenant_id  text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    name       text        NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
    version    integer     NOT NULL CHECK (version >= 1),
    schema     jsonb       NOT NULL,
    on_invalid text        NOT NULL
        CHECK (on_invalid IN ('reject_file', 'drop_invalid_rows', 'keep_invalid_rows')),
    -- A sheet name or glob that picks the workbook sheet to validate.
    sheet      text        CHECK (length(sheet) BETWEEN 1 AND 256),
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Set on every version by DELETE: hidden from the API, kept for the uploads that name it.
    deleted_at timestamptz,
    PRIMARY KEY (tenant_id, name, version)
);

ALTER TABLE source_files
    ADD COLUMN template_name    text,
    ADD COLUMN template_version integer,
    ADD COLUMN on_invalid       text
        CHECK (on_invalid IN ('reject_file', 'drop_invalid_rows', 'keep_invalid_rows')),
    ADD CONSTRAINT source_files_template
        FOREIGN KEY (tenant_id, template_name, template_version)
        REFERENCES templates (tenant_id, name, version),
    ADD CONSTRAINT template_is_whole
        CHECK ((template_name IS NULL) = (template_version IS NULL)
               AND (template_name IS NULL) = (on_invalid IS NULL));
-- What pruning old versions asks: is this version named by an upload?
CREATE INDEX source_files_template ON source_files (tenant_id, template_name, template_version)
    WHERE template_name IS NOT NULL;

-- A file rejected as a whole (`reject_file`) fails with its validation counts in `result`, so a
-- result no longer means COMPLETED: COMPLETED still needs one, and only final tasks have one.
ALTER TABLE tasks DROP CONSTRAINT completed_exactly_when_result;
ALTER TABLE tasks ADD CONSTRAINT completed_has_a_result
    CHECK (status <> 'COMPLETED' OR result IS NOT NULL);
ALTER TABLE tasks ADD CONSTRAINT only_final_has_a_result
    CHECK (result IS NULL OR status IN ('COMPLETED', 'FAILED'));

-- The error report of a templated upload, in file order: one record per problem, capped per
-- file by the worker's VALIDATION_MAX_ERRORS (the task's counts stay exact past the cap).
CREATE TABLE validation_errors (
    source_file_id  uuid    NOT NULL REFERENCES source_files (id) ON DELETE CASCADE,
    seq             integer NOT NULL CHECK (seq >= 0),
    sheet           integer NOT NULL CHECK (sheet >= 0),
    row_number      bigint  NOT NULL CHECK (row_number >= 1),
    column_name     text,
    field           text,
    value           text    CHECK (length(value) <= 256),
    code            text    NOT NULL CHECK (code IN ('type-error', 'constraint-error',
        'unique-error', 'primary-key', 'missing-cell', 'extra-cell', 'blank-row',
        'missing-label', 'duplicate-label')),
    constraint_name text    CHECK (constraint_name IN ('required', 'minLength', 'maxLength',
        'minimum', 'maximum', 'pattern', 'enum')),
    message         text    NOT NULL,
    PRIMARY KEY (source_file_id, seq),
    CONSTRAINT constraint_errors_name_one CHECK ((code = 'constraint-error') = (constraint_name IS NOT NULL))
);
CREATE INDEX validation_errors_field ON validation_errors (source_file_id, field, seq);
CREATE INDEX validation_errors_code ON validation_errors (source_file_id, code, seq);
-- The rejected-rows export joins each row to its records.
CREATE INDEX validation_errors_row ON validation_errors (source_file_id, sheet, row_number);

-- The original cells of the rows that had errors, in the file's own columns: what the rejected
-- rows export gives back to be fixed and uploaded again. Capped like the error records.
CREATE TABLE rejected_rows (
    source_file_id uuid   NOT NULL REFERENCES source_files (id) ON DELETE CASCADE,
    sheet          integer NOT NULL CHECK (sheet >= 0),
    row_number     bigint NOT NULL CHECK (row_number >= 1),
    cells          jsonb  NOT NULL CHECK (jsonb_typeof(cells) = 'array'),
    PRIMARY KEY (source_file_id, sheet, row_number)
);
