-- Resumable (tus) uploads in progress, and for a while after they complete. The bytes are staged
-- as blocks of the blob `blob_name` in Blob Storage; this row says which of them count
-- (`block_ids`, in order) and so where the upload stands (`upload_offset`), so the offset
-- survives an api restart and a cut connection. Once the last byte is in, the blob is committed
-- and the upload recorded like a multipart one (`source_file_id`). Rows past `expires_at` are
-- deleted by the worker's maintenance, with the staged blocks of unfinished ones.
CREATE TABLE resumable_uploads (
    id               uuid        PRIMARY KEY,
    tenant_id        text        NOT NULL,
    uploaded_by      text        NOT NULL,
    file_name        text        NOT NULL,
    upload_length    bigint      NOT NULL CHECK (upload_length >= 0),
    upload_offset    bigint      NOT NULL DEFAULT 0,
    -- The staged blocks that count, in file order (base64 block ids, all of one length).
    block_ids        text[]      NOT NULL DEFAULT '{}',
    -- The file's first bytes (up to the format sniffer's length), kept as they arrive.
    head             bytea       NOT NULL DEFAULT '',
    blob_name        text        NOT NULL,
    idempotency_key  text,
    template_name    text,
    template_version integer,
    on_invalid       text,
    -- Set once the upload is recorded; the row goes with its file.
    source_file_id   uuid        REFERENCES source_files (id) ON DELETE CASCADE,
    -- While one request records the completed upload, others leave it alone until then.
    finishing_until  timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    CONSTRAINT offset_within_length CHECK (upload_offset BETWEEN 0 AND upload_length),
    CONSTRAINT template_is_whole
        CHECK ((template_name IS NULL) = (template_version IS NULL)
               AND (template_name IS NULL) = (on_invalid IS NULL))
);
CREATE INDEX resumable_uploads_expires_at ON resumable_uploads (expires_at);
CREATE INDEX resumable_uploads_source_file ON resumable_uploads (source_file_id)
    WHERE source_file_id IS NOT NULL;
