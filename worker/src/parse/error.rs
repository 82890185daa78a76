//! Why a file could not be parsed: a stable machine code (a [`TaskErrorCode`], stored on the
//! failed task and shown to the user) and a human message saying what and where. These are
//! outcomes of the *file*, never of our infrastructure, so they travel as values rather than as
//! `anyhow` errors.

use serde::{Deserialize, Serialize};
use shared::domain::TaskErrorCode;

/// A file that could not be parsed: the task fails with `code` and `message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ParseFailure {
    pub code: TaskErrorCode,
    pub message: String,
}

impl ParseFailure {
    pub fn new(code: TaskErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(TaskErrorCode::CorruptFile, message)
    }

    /// A workbook that needs a password to be read.
    pub(crate) fn password_protected() -> Self {
        Self::new(
            TaskErrorCode::EncryptedFile,
            "the workbook is password protected",
        )
    }

    /// The event sink refused a row (in the child: the parent closed its end). Not the file's
    /// fault, but the parse cannot go on; the isolated parent never reports this one.
    pub(crate) fn sink(err: std::io::Error) -> Self {
        Self::new(
            TaskErrorCode::ParserCrashed,
            format!("the row consumer failed: {err}"),
        )
    }
}
