//! The machine codes of the api's error bodies (`{"error": {"code", …}}`): every code the api
//! answers with is a variant here, so a handler cannot invent one, and a test keeps this list
//! equal to the table of docs/api.md.

shared::code_enum! {
    /// The `error.code` of an error body.
    pub enum ApiErrorCode {
        /// The upload's body is not valid `multipart/form-data`.
        MalformedMultipart => "malformed_multipart",
        /// An upload without a part named `file`.
        MissingFilePart => "missing_file_part",
        /// An upload with more than one part named `file`.
        MultipleFileParts => "multiple_file_parts",
        /// `template`, `on_invalid` or `metadata` after `file`.
        MisplacedPart => "misplaced_part",
        /// A multipart part header over `HTTP_MAX_PART_HEADER_BYTES`.
        PartHeaderTooLarge => "part_header_too_large",
        /// An `Idempotency-Key` that is not 1–200 visible ASCII characters.
        InvalidIdempotencyKey => "invalid_idempotency_key",
        /// A bad path id, query parameter or form field.
        InvalidParameter => "invalid_parameter",
        /// A JSON body that is not the request's.
        InvalidBody => "invalid_body",
        /// An `Upload-Checksum` with another algorithm than `sha256`.
        UnsupportedChecksumAlgorithm => "unsupported_checksum_algorithm",
        /// No valid credential.
        Unauthorized => "unauthorized",
        /// The upload would take the tenant past its storage quota.
        QuotaExceeded => "quota_exceeded",
        /// An import session's token used for something a session may not do.
        Forbidden => "forbidden",
        /// An import session that has made all the uploads it may.
        SessionExhausted => "session_exhausted",
        /// No such resource for the caller, or no such route.
        NotFound => "not_found",
        /// The route exists, not with this method.
        MethodNotAllowed => "method_not_allowed",
        /// An upload body that sent nothing for `HTTP_BODY_IDLE_TIMEOUT`.
        BodyTimeout => "body_timeout",
        /// A bug or an unexpected answer from a dependency (the log has the detail).
        InternalError => "internal_error",
        /// An `Idempotency-Key` already used for another file.
        IdempotencyKeyReused => "idempotency_key_reused",
        /// A `PATCH` whose `Upload-Offset` is not the upload's offset.
        OffsetMismatch => "offset_mismatch",
        /// A resumable upload's result asked for before its last byte was recorded.
        UploadIncomplete => "upload_incomplete",
        /// The file's task is not COMPLETED (or not final, for error reports).
        NotParsed => "not_parsed",
        /// The tenant has as many templates as allowed.
        TemplateLimitReached => "template_limit_reached",
        /// The tenant has `WEBHOOK_MAX_ENDPOINTS` webhook endpoints.
        TooManyWebhooks => "too_many_webhooks",
        /// The tenant has `DESTINATION_MAX_PER_TENANT` destinations.
        TooManyDestinations => "too_many_destinations",
        /// The tenant has `SOURCE_MAX_PER_TENANT` Blob sources.
        TooManySources => "too_many_sources",
        /// A Blob source for a container and prefix that another source watches (one prefix
        /// starts with the other).
        SourceTaken => "source_taken",
        /// A mapping sent for a task that is not waiting in `NEEDS_REVIEW`.
        NotInReview => "not_in_review",
        /// A layout override for a task that is being parsed, or that failed for a reason
        /// where its table lies cannot cure.
        NotReparsable => "not_reparsable",
        /// The feed's `after` or the stream's `Last-Event-ID` names no event kept for the caller.
        UnknownCursor => "unknown_cursor",
        /// A resumable upload past its `Upload-Expires`.
        UploadExpired => "upload_expired",
        /// A tus request without `Tus-Resumable: 1.0.0`.
        TusVersionUnsupported => "tus_version_unsupported",
        /// A file over `MAX_UPLOAD_BYTES`, or a template over its limit.
        PayloadTooLarge => "payload_too_large",
        /// A `PATCH` body going past the upload's `Upload-Length`.
        UploadLengthExceeded => "upload_length_exceeded",
        /// A resumable upload sent in more pieces than Blob Storage can commit.
        TooManyChunks => "too_many_chunks",
        /// A request target over the edge's limit.
        UriTooLong => "uri_too_long",
        /// A file that is neither CSV/TSV nor a workbook.
        UnsupportedFormat => "unsupported_format",
        /// A `PATCH` body that is not `application/offset+octet-stream`.
        WrongContentType => "wrong_content_type",
        /// A template document the engine cannot run (with `details`).
        InvalidTemplate => "invalid_template",
        /// An upload naming a template the tenant does not have.
        UnknownTemplate => "unknown_template",
        /// Upload metadata that is not a JSON object of at most 4 KiB.
        InvalidMetadata => "invalid_metadata",
        /// A webhook URL that is not `https` or reaches a non-public address.
        UnsafeUrl => "unsafe_url",
        /// A review's mapping naming an unknown field or column, one column twice, or leaving a
        /// required field unmapped (with `details`).
        InvalidMapping => "invalid_mapping",
        /// A layout override naming a sheet the file does not have, a row outside its sheet,
        /// or a table ending at or above its header (with `details`).
        InvalidLayout => "invalid_layout",
        /// Corrections naming an unknown field, a row that is not in the file's error report,
        /// or a file without a template (with `details`).
        InvalidCorrection => "invalid_correction",
        /// A destination with a bad container URL, credential, format, chunk size or template
        /// filter (with `details`).
        InvalidDestination => "invalid_destination",
        /// A Blob source with a bad container URL, prefix, credential or setting (with
        /// `details`).
        InvalidSource => "invalid_source",
        /// The tenant started more uploads than its rate allows.
        RateLimited => "rate_limited",
        /// The tenant holds as many live import sessions as allowed.
        TooManySessions => "too_many_sessions",
        /// Too many request headers, or too many bytes of them.
        HeadersTooLarge => "headers_too_large",
        /// A `PATCH` body whose SHA-256 is not its `Upload-Checksum`.
        ChecksumMismatch => "checksum_mismatch",
        /// Postgres does not answer.
        DatabaseUnavailable => "database_unavailable",
        /// Blob Storage does not answer.
        StorageUnavailable => "storage_unavailable",
        /// Entra ID's signing keys cannot be fetched.
        AuthUnavailable => "auth_unavailable",
        /// The upload's rows could not be written; nothing was kept.
        UploadNotRecorded => "upload_not_recorded",
        /// The request ran past `HTTP_REQUEST_TIMEOUT`.
        RequestTimeout => "request_timeout",
        /// `EVENTS_MAX_STREAMS` event streams are open.
        TooManyStreams => "too_many_streams",
        /// Webhooks need `WEBHOOK_SECRET_KEY`, which is not set.
        WebhooksUnavailable => "webhooks_unavailable",
        /// A template's validation hook gave no usable answer about a correction's rows in
        /// its timeout: nothing of the revision was kept.
        HookUnavailable => "hook_unavailable",
    }
}

#[cfg(test)]
mod tests {
    use super::ApiErrorCode;

    #[test]
    fn the_text_is_the_serde_name() {
        for &code in ApiErrorCode::ALL {
            let json = serde_json::to_string(&code).expect("serialise");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    /// The codes of docs/api.md's error table: the quoted names of its second column, leaving
    /// out what its parentheses quote (parameter names, settings).
    fn documented_codes() -> Vec<String> {
        let doc = shared::docs::Doc {
            path: "docs/api.md",
            text: include_str!("../../../docs/api.md"),
        };
        let mut codes = Vec::new();
        for row in doc.table("| status | codes |") {
            let (mut depth, mut quoted, mut code) = (0, false, String::new());
            for c in row[1].chars() {
                match c {
                    '(' if !quoted => depth += 1,
                    ')' if !quoted => depth -= 1,
                    '`' if quoted => {
                        if depth == 0 {
                            codes.push(std::mem::take(&mut code));
                        }
                        code.clear();
                        quoted = false;
                    }
                    '`' => quoted = true,
                    c if quoted => code.push(c),
                    _ => {}
                }
            }
        }
        codes
    }

    #[test]
    fn the_docs_table_lists_every_code_in_order() {
        // A code answered with two statuses (`invalid_parameter`) is in two rows.
        let mut documented = documented_codes();
        let mut seen = std::collections::HashSet::new();
        documented.retain(|code| seen.insert(code.clone()));
        let declared: Vec<&str> = ApiErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(documented, declared);
    }
}
