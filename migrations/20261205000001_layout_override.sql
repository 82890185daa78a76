-- A person's correction of where a file's tables lie (PUT /api/v1/tasks/{id}/layout, an
-- extension of the contract's "Sheet layout"): per sheet, the header row (or none) and the
-- table's last row. Stored on the task, beside the confirmed mapping, so every attempt of the
-- task (a redelivered message, a rescue after a crash) parses with the same override; kept
-- after the task completes, so the result can say its layout was a person's.
ALTER TABLE tasks
    ADD COLUMN layout_override jsonb
        CHECK (layout_override IS NULL OR jsonb_typeof(layout_override) = 'object');
