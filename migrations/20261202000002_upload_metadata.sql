-- Upload metadata (contract v1.3): the application's own JSON object about a file (its record
-- id, a batch name), given with the upload and carried in the file's view and in every event
-- about it, so a webhook receiver knows which of its records a file belongs to. `end_user` is
-- set by import sessions: the end user an application's session token acted for.
--
-- The api checks the contract's bound (a JSON object, at most 4 KiB as it serialises it); the
-- checks here only keep anything else out (jsonb's text has a space after each `:` and `,`, so
-- its length is not the api's measure).

-- In the order an upload takes them (the file, then its task's events): see the usage shards.
ALTER TABLE source_files
    ADD COLUMN metadata jsonb
        CHECK (metadata IS NULL OR (jsonb_typeof(metadata) = 'object'
                                    AND octet_length(metadata::text) <= 16384)),
    ADD COLUMN end_user jsonb
        CHECK (end_user IS NULL OR (jsonb_typeof(end_user) = 'object'
                                    AND octet_length(end_user::text) <= 4096));

-- A resumable upload's metadata, given when it is created, kept until it is recorded.
ALTER TABLE resumable_uploads
    ADD COLUMN metadata jsonb
        CHECK (metadata IS NULL OR (jsonb_typeof(metadata) = 'object'
                                    AND octet_length(metadata::text) <= 16384));

-- A task's event carries its file's metadata and end user beside the task's own data.
CREATE OR REPLACE FUNCTION tasks_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM event_log_ensure();
    INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, trace_id)
    SELECT gen_random_uuid(), f.tenant_id,
           CASE NEW.status::text WHEN 'COMPLETED' THEN 'task.completed'
                                 WHEN 'FAILED' THEN 'task.failed'
                                 ELSE 'task.needs_review' END,
           NEW.source_file_id, NEW.id,
           task_event_data(NEW)
               || jsonb_build_object('metadata', f.metadata, 'end_user', f.end_user),
           NEW.trace_id
    FROM source_files f WHERE f.id = NEW.source_file_id;
    RETURN NULL;
END;
$$;
