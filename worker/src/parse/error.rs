//! Why a file could not be parsed: a stable machine code (stored on the failed task and shown to
//! the user) and a human message saying what and where. These are outcomes of the *file*, never
//! of our infrastructure, so they travel as values rather than as `anyhow` errors.

use serde::{Deserialize, Serialize};

/// The machine codes a parse can fail with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseErrorCode {
    EmptyFile,
    UnsupportedFormat,
    EncryptedFile,
    CorruptFile,
    TooManyRows,
    TooManyColumns,
    CellTooLarge,
    DecompressionLimit,
    ParserCrashed,
    ParseTimeout,
    MemoryLimit,
}

impl ParseErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ParseErrorCode::EmptyFile => "empty_file",
            ParseErrorCode::UnsupportedFormat => "unsupported_format",
            ParseErrorCode::EncryptedFile => "encrypted_file",
            ParseErrorCode::CorruptFile => "corrupt_file",
            ParseErrorCode::TooManyRows => "too_many_rows",
            ParseErrorCode::TooManyColumns => "too_many_columns",
            ParseErrorCode::CellTooLarge => "cell_too_large",
            ParseErrorCode::DecompressionLimit => "decompression_limit",
            ParseErrorCode::ParserCrashed => "parser_crashed",
            ParseErrorCode::ParseTimeout => "parse_timeout",
            ParseErrorCode::MemoryLimit => "memory_limit",
        }
    }
}

impl std::fmt::Display for ParseErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A file that could not be parsed: the task fails with `code` and `message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ParseFailure {
    pub code: ParseErrorCode,
    pub message: String,
}

impl ParseFailure {
    pub fn new(code: ParseErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ParseErrorCode::CorruptFile, message)
    }

    /// A workbook that needs a password to be read.
    pub(crate) fn password_protected() -> Self {
        Self::new(
            ParseErrorCode::EncryptedFile,
            "the workbook is password protected",
        )
    }

    /// The event sink refused a row (in the child: the parent closed its end). Not the file's
    /// fault, but the parse cannot go on; the isolated parent never reports this one.
    pub(crate) fn sink(err: std::io::Error) -> Self {
        Self::new(
            ParseErrorCode::ParserCrashed,
            format!("the row consumer failed: {err}"),
        )
    }
}
