-- The tables below are altered or given a foreign key and a trigger; an upload's and a
-- consumer's transactions write `source_files`, then `tasks`, then the report. Lock them in that
-- order first, so a migration run while they write waits for them instead of deadlocking (seen:
-- the report's constraints locked, then `tasks` waited for by the migration while a consumer
-- holding `tasks` waited for the report).
LOCK TABLE source_files IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE;

-- A template's validation hooks (contract v1.3): the application's endpoints that check each
-- batch of an upload's rows, as the api accepted them ([`shared::domain::hook`]). At most ten a
-- version, so a template's row stays small. A default of '[]' with NOT NULL is a catalogue
-- change only (Postgres 11+ keeps the default in the catalogue), no rewrite of `templates`.

ALTER TABLE templates ADD COLUMN hooks jsonb NOT NULL DEFAULT '[]'::jsonb
    CHECK (jsonb_typeof(hooks) = 'array' AND jsonb_array_length(hooks) <= 10);

-- A hook's endpoint may take no events (`"events": []`): it is only asked about rows. The
-- fan-out trigger already gives such an endpoint no deliveries.
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_events_check;
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_events_check
    CHECK (events <@ ARRAY['task.completed', 'task.failed', 'task.needs_review',
                           'file.deleted', 'file.corrected']);

-- A hook's error joins the report as `hook-error`, with the application's own code (at most 64
-- characters, none at all allowed) as its constraint.
ALTER TABLE validation_errors
    DROP CONSTRAINT validation_errors_code_check,
    DROP CONSTRAINT validation_errors_constraint_name_check,
    DROP CONSTRAINT constraint_errors_name_one,
    ADD CONSTRAINT validation_errors_code_check CHECK (code IN ('type-error', 'constraint-error',
        'unique-error', 'primary-key', 'missing-cell', 'extra-cell', 'blank-row',
        'missing-label', 'duplicate-label', 'hook-error')),
    ADD CONSTRAINT validation_errors_constraint_name_check CHECK (CASE code
        WHEN 'constraint-error' THEN constraint_name IS NOT NULL
            AND constraint_name IN ('required', 'minLength', 'maxLength', 'minimum', 'maximum',
                                    'pattern', 'enum')
        WHEN 'hook-error' THEN constraint_name IS NULL OR length(constraint_name) BETWEEN 1 AND 64
        ELSE constraint_name IS NULL END);

-- Each batch's accepted hook answer, kept while its task runs: a worker killed mid-file resumes
-- without asking the hook again about batches it already answered. An answer is used only for a
-- request with the same body (`body_sha256`), so a task sent back through a new mapping or
-- layout asks again. Gone with the task (cascade) and as soon as the task is final (trigger), so
-- the table holds answers of running tasks only.
CREATE TABLE hook_answers (
    task_id     uuid        NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    batch       integer     NOT NULL CHECK (batch >= 0),
    body_sha256 bytea       NOT NULL CHECK (length(body_sha256) = 32),
    answer      jsonb       NOT NULL,
    answered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (task_id, batch)
);

CREATE FUNCTION hook_answers_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM hook_answers WHERE task_id = NEW.id;
    RETURN NULL;
END;
$$;

CREATE TRIGGER hook_answers_forget
    AFTER UPDATE OF status ON tasks
    FOR EACH ROW WHEN (NEW.status IN ('COMPLETED', 'FAILED') AND OLD.status <> NEW.status)
    EXECUTE FUNCTION hook_answers_forget();
