-- Destinations (contract v1.3): a tenant's own storage container or row webhook, to which every
-- matching file's rows are pushed once its task is COMPLETED (and again for each corrections
-- revision). A delivery row is written by a trigger on the statement that completes the task
-- or records the revision, so it is in the same transaction as the change: none is lost, none
-- is written for a change that rolled back. The worker delivers the rows on the claim loop the
-- relay and webhooks share (`worker::destinations`).

-- The new tables' foreign keys lock `source_files`; take that lock first, as an upload's or a
-- consumer's transaction does, so a migration run while they write waits instead of deadlocking.
LOCK TABLE source_files IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE destinations (
    id               uuid        PRIMARY KEY,
    tenant_id        text        NOT NULL CHECK (tenant_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    kind             text        NOT NULL CHECK (kind IN ('azure_blob', 'webhook_rows')),
    -- `azure_blob`: the container URL; `webhook_rows`: the URL rows are POSTed to.
    url              text        NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    prefix           text        NOT NULL DEFAULT '' CHECK (length(prefix) <= 512),
    format           text        CHECK (format IN ('parquet', 'csv', 'ndjson')),
    chunk_size       integer     CHECK (chunk_size BETWEEN 1 AND 10000),
    credential_kind  text        CHECK (credential_kind IN ('sas', 'connection_string',
                                                            'managed_identity')),
    -- The SAS or connection string (`azure_blob`) or the signing secret (`webhook_rows`),
    -- sealed under WEBHOOK_SECRET_KEY with the destination's id: never readable from here.
    sealed_secret    bytea,
    -- The template names whose files it takes; NULL: every file.
    templates        text[]      CHECK (cardinality(templates) BETWEEN 1 AND 100),
    description      text        CHECK (length(description) <= 1024),
    enabled          boolean     NOT NULL DEFAULT true,
    disabled_reason  text        CHECK (disabled_reason IN ('failing')),
    disabled_at      timestamptz,
    -- Since when every delivery attempt has failed; NULL while deliveries succeed.
    failing_since    timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT destination_is_whole CHECK (
        CASE kind
            WHEN 'azure_blob' THEN format IS NOT NULL AND credential_kind IS NOT NULL
                AND chunk_size IS NULL
                AND (sealed_secret IS NULL) = (credential_kind = 'managed_identity')
            ELSE chunk_size IS NOT NULL AND sealed_secret IS NOT NULL AND format IS NULL
                AND credential_kind IS NULL AND prefix = ''
        END)
);
CREATE INDEX destinations_tenant ON destinations (tenant_id, id);

CREATE TYPE destination_delivery_status AS ENUM
    ('PENDING', 'DELIVERING', 'DELIVERED', 'FAILED', 'DEAD');

-- One row per destination and file: the latest revision to deliver and how far it got. A new
-- revision (or a redelivery) sets it back to PENDING. Bounded: a file's rows go with the file
-- (retention, delete, tenant purge), a destination's with the destination, and delivered or
-- dead rows past DESTINATION_DELIVERIES_RETENTION are pruned by the worker's maintenance.
CREATE TABLE destination_deliveries (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    destination_id uuid        NOT NULL REFERENCES destinations (id) ON DELETE CASCADE,
    source_file_id uuid        NOT NULL REFERENCES source_files (id) ON DELETE CASCADE,
    task_id        uuid        NOT NULL,
    revision       integer     NOT NULL DEFAULT 0 CHECK (revision >= 0),
    status         destination_delivery_status NOT NULL DEFAULT 'PENDING',
    -- `webhook_rows`: the chunks of all sheets, known once the first attempt counted them, and
    -- how many the receiver acknowledged (in order: a retry resumes after them).
    chunks         integer     CHECK (chunks >= 0),
    chunks_acked   integer     NOT NULL DEFAULT 0 CHECK (chunks_acked >= 0),
    attempts       integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- Failed attempts since it was (re)queued: the step of the retry schedule.
    failures       integer     NOT NULL DEFAULT 0 CHECK (failures >= 0),
    available_at   timestamptz NOT NULL DEFAULT now(),
    locked_until   timestamptz,
    last_error     text,
    -- When the change to deliver was written: where the delivery lag is measured from.
    queued_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    delivered_at   timestamptz,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (destination_id, source_file_id),
    CHECK ((status = 'DELIVERING') = (locked_until IS NOT NULL))
);
-- What a claim reads: due rows, and expired claims.
CREATE INDEX destination_deliveries_due ON destination_deliveries (available_at)
    WHERE status IN ('PENDING', 'FAILED');
CREATE INDEX destination_deliveries_claimed ON destination_deliveries (locked_until)
    WHERE status = 'DELIVERING';
-- A file's deliveries go with it.
CREATE INDEX destination_deliveries_source_file ON destination_deliveries (source_file_id);
-- The pruning of finished rows.
CREATE INDEX destination_deliveries_finished ON destination_deliveries (updated_at)
    WHERE status IN ('DELIVERED', 'DEAD');

-- Queues the file's delivery to each enabled destination of its tenant that takes its template
-- (a destination without a filter takes every file), for revision `rev`; a row already there
-- starts again from its first chunk. Wakes the worker.
CREATE FUNCTION destination_deliveries_queue(file uuid, task uuid, rev integer)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO destination_deliveries (destination_id, source_file_id, task_id, revision)
    SELECT d.id, f.id, task, rev
    FROM source_files f JOIN destinations d ON d.tenant_id = f.tenant_id
    WHERE f.id = file AND d.enabled
      AND (d.templates IS NULL OR f.template_name = ANY (d.templates))
    ON CONFLICT (destination_id, source_file_id) DO UPDATE
        SET task_id = EXCLUDED.task_id, revision = EXCLUDED.revision, status = 'PENDING',
            chunks = NULL, chunks_acked = 0, failures = 0, available_at = now(),
            locked_until = NULL, last_error = NULL, queued_at = clock_timestamp(),
            updated_at = now();
    IF FOUND THEN
        PERFORM pg_notify('destination_deliveries', '');
    END IF;
END;
$$;

-- A task that becomes COMPLETED: its latest revision (0 without corrections; a rejected file
-- completed by a correction has one).
CREATE FUNCTION tasks_destination_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM destination_deliveries_queue(
        NEW.source_file_id, NEW.id,
        COALESCE((SELECT max(revision) FROM file_revisions
                  WHERE source_file_id = NEW.source_file_id), 0));
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_destination_deliveries
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW
    WHEN (NEW.status IS DISTINCT FROM OLD.status AND NEW.status = 'COMPLETED')
    EXECUTE FUNCTION tasks_destination_deliveries();

-- A corrections revision of a file already COMPLETED (a rejected file's revision that completes
-- it is queued by the task's trigger above, in the same transaction).
CREATE FUNCTION revisions_destination_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM destination_deliveries_queue(NEW.source_file_id, t.id, NEW.revision)
    FROM tasks t WHERE t.source_file_id = NEW.source_file_id AND t.status = 'COMPLETED';
    RETURN NULL;
END;
$$;

CREATE TRIGGER revisions_destination_deliveries
    AFTER INSERT ON file_revisions
    FOR EACH ROW EXECUTE FUNCTION revisions_destination_deliveries();

-- `file.delivered`: written by the worker with the delivery it reports.
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check
    CHECK (type IN ('task.completed', 'task.failed', 'task.needs_review', 'file.deleted',
                    'file.corrected', 'file.delivered'));
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check;
-- (No event at all stays allowed: a hook's endpoint is only asked about rows.)
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_events_check
    CHECK (events <@ ARRAY['task.completed', 'task.failed', 'task.needs_review',
                           'file.deleted', 'file.corrected', 'file.delivered']);
