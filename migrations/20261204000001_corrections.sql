-- Corrections (contract v1.3): a templated file's bad cells fixed in place, as revisions beside
-- the original. The upload, its rows and its first error report (`parsed_row_chunks`,
-- `validation_errors`, `rejected_rows`) never change; a revision writes only here, in one
-- transaction with its `file.corrected` event, under a lock of the file's task row.

-- The new tables' foreign keys lock `source_files`; take that lock first, as an upload's or a
-- consumer's transaction does (the file, then its rows and events), so a migration run while
-- they write waits for them instead of deadlocking with them.
LOCK TABLE source_files IN SHARE ROW EXCLUSIVE MODE;

-- Where a rejected row sits among the sheet's stored rows: the number stored before it (with
-- `keep_invalid_rows`, its own index). A row a correction makes valid joins them there. Rows of
-- files parsed before this have none, and are placed by their row number alone.
ALTER TABLE rejected_rows ADD COLUMN stored_index bigint CHECK (stored_index >= 0);

-- The key index: for each `unique` field (`slot` = its index) and the primary key (`slot` = -1)
-- of a templated file, every value's fingerprint with each row holding it, in buckets by
-- fingerprint (`shared::domain::key_index`). Written by the consumer with the rows; a revision
-- rewrites the buckets whose values it changed, so the index always says the latest revision.
CREATE TABLE file_keys (
    source_file_id uuid    NOT NULL REFERENCES source_files (id) ON DELETE CASCADE,
    sheet          integer NOT NULL CHECK (sheet >= 0),
    slot           integer NOT NULL CHECK (slot >= -1),
    bucket         integer NOT NULL CHECK (bucket >= 0),
    buckets        integer NOT NULL CHECK (buckets >= 1 AND bucket < buckets),
    entries        bytea   NOT NULL CHECK (octet_length(entries) % 24 = 0),
    PRIMARY KEY (source_file_id, sheet, slot, bucket)
);

-- One row per revision: what it applied and the validation result it left.
CREATE TABLE file_revisions (
    source_file_id uuid        NOT NULL REFERENCES source_files (id) ON DELETE CASCADE,
    revision       integer     NOT NULL CHECK (revision >= 1),
    applied        integer     NOT NULL CHECK (applied BETWEEN 1 AND 10000),
    -- The task's `result.validation` after this revision (with `"revision"`).
    validation     jsonb       NOT NULL CHECK (jsonb_typeof(validation) = 'object'),
    -- Rows that joined the stored rows (or left them again) over all revisions so far.
    rows_joined    bigint      NOT NULL DEFAULT 0,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_file_id, revision)
);

-- The corrections as sent, each with the revision that applied it: what a person changed.
CREATE TABLE file_corrections (
    source_file_id uuid    NOT NULL,
    revision       integer NOT NULL,
    seq            integer NOT NULL CHECK (seq >= 0),
    sheet          integer NOT NULL,
    row_number     bigint  NOT NULL,
    field          text    NOT NULL,
    value          text,
    PRIMARY KEY (source_file_id, revision, seq),
    FOREIGN KEY (source_file_id, revision)
        REFERENCES file_revisions (source_file_id, revision) ON DELETE CASCADE
);

-- The latest state of every row a revision re-checked: its cells (the original ones with the
-- corrections applied), its typed values, its error records now, and where it sits.
CREATE TABLE corrected_rows (
    source_file_id uuid    NOT NULL REFERENCES source_files (id) ON DELETE CASCADE,
    sheet          integer NOT NULL CHECK (sheet >= 0),
    row_number     bigint  NOT NULL CHECK (row_number >= 1),
    revision       integer NOT NULL CHECK (revision >= 1),
    cells          jsonb   NOT NULL CHECK (jsonb_typeof(cells) = 'array'),
    "values"       jsonb   NOT NULL CHECK (jsonb_typeof("values") = 'array'),
    valid          boolean NOT NULL,
    -- Where it sits among the original stored rows, and whether it is one of them
    -- (`keep_invalid_rows`: its values replace that row's).
    stored_index   bigint  NOT NULL CHECK (stored_index >= 0),
    replaces       boolean NOT NULL,
    errors         jsonb   NOT NULL CHECK (jsonb_typeof(errors) = 'array'),
    PRIMARY KEY (source_file_id, sheet, row_number)
);

-- `file.corrected`: written by the revision's own transaction.
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check
    CHECK (type IN ('task.completed', 'task.failed', 'task.needs_review', 'file.deleted',
                    'file.corrected'));
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check;
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_events_check
    CHECK (cardinality(events) >= 1
           AND events <@ ARRAY['task.completed', 'task.failed', 'task.needs_review',
                               'file.deleted', 'file.corrected']);
