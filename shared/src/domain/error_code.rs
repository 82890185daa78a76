//! Why a task failed, as one vocabulary: the codes the worker stores in `tasks.error_code`, the
//! api shows as a task's `error.code` and the table of `docs/parsing.md` documents (a test keeps
//! the table and this enum equal). A file that cannot be parsed is a task outcome with one of
//! these codes, never a process error.

crate::code_enum! {
    /// The code a failed task carries.
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum TaskErrorCode {
        /// No bytes, or nothing but blank lines.
        EmptyFile => "empty_file",
        /// Not CSV/TSV or a workbook that can be read (a PDF named `.xlsx`, BIFF2–4).
        UnsupportedFormat => "unsupported_format",
        /// A password-protected workbook.
        EncryptedFile => "encrypted_file",
        /// A bad zip, a truncated file, broken XML or records.
        CorruptFile => "corrupt_file",
        /// More data rows than allowed, all sheets together.
        TooManyRows => "too_many_rows",
        /// More columns in one sheet than allowed.
        TooManyColumns => "too_many_columns",
        /// A cell's text longer than allowed.
        CellTooLarge => "cell_too_large",
        /// A zip bomb, or an ods repeating cells too many times.
        DecompressionLimit => "decompression_limit",
        /// The parse child needed more memory than allowed.
        MemoryLimit => "memory_limit",
        /// The parse took longer than allowed.
        ParseTimeout => "parse_timeout",
        /// The parser panicked or died on this file.
        ParserCrashed => "parser_crashed",
        /// The uploaded blob or its `source_files` row is gone.
        SourceMissing => "source_missing",
        /// The task's message was delivered more often than allowed without success.
        RetriesExhausted => "retries_exhausted",
        /// The queue message was not a valid parse-task envelope for its task.
        InvalidMessage => "invalid_message",
        /// A templated upload with `on_invalid = reject_file` had errors: its report is kept.
        ValidationFailed => "validation_failed",
        /// The task waited in `NEEDS_REVIEW` longer than `REVIEW_TIMEOUT` without a mapping.
        ReviewExpired => "review_expired",
        /// A template's validation hook gave no usable answer for `HOOK_RETRY_FOR`, or its
        /// webhook endpoint is gone.
        HookUnavailable => "hook_unavailable",
        /// A template's validation hooks wrote unique or primary-key values on more of the
        /// file's rows than `HOOK_MAX_KEY_WRITES`.
        TooManyKeyWrites => "too_many_key_writes",
    }
}

// `tasks.error_code` and `task_attempt_errors.code` are `text`: a code that does not decode
// is an error.
crate::text_column!(TaskErrorCode);

crate::code_enum! {
    /// How an attempt of a task ended in error (`task_attempt_errors.kind`).
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum AttemptKind {
        /// It released the task for a retry.
        Transient => "transient",
        /// It failed the task.
        Final => "final",
    }
}

crate::text_column!(AttemptKind);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_serde_name_and_reads_back() {
        for &code in TaskErrorCode::ALL {
            let json = serde_json::to_string(&code).expect("serialise");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(code.as_str().parse::<TaskErrorCode>(), Ok(code));
        }
        assert!("no_such_code".parse::<TaskErrorCode>().is_err());
    }

    /// The codes in the first column of `docs/parsing.md`'s table of task error codes, in order.
    fn documented_codes() -> Vec<String> {
        crate::docs::PARSING
            .table("| code | |")
            .into_iter()
            .flat_map(|cells| {
                cells[0]
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn the_parsing_doc_table_lists_every_code_in_order() {
        let enum_codes: Vec<&str> = TaskErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(documented_codes(), enum_codes);
    }
}
