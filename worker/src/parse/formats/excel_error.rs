//! What a workbook reader's error says about the file: its task failure code (corrupt unless
//! the reader says more, encrypted for a password, a decompression limit for an ods that
//! repeats cells past its cap) and its words, with where it happened.

use std::fmt::Display;

use crate::parse::{ParseFailure, TaskErrorCode};

/// What a reader's error says about the file: its failure code (corrupt unless the reader
/// says more) and its words.
pub(super) trait ReadError: Display {
    fn code(&self) -> TaskErrorCode {
        TaskErrorCode::CorruptFile
    }

    fn describe(&self) -> String {
        self.to_string()
    }
}

/// The readers whose only error with a code of its own is a password.
macro_rules! password_means_encrypted {
    ($($error:ident),*) => {$(
        impl ReadError for calamine::$error {
            fn code(&self) -> TaskErrorCode {
                match self {
                    calamine::$error::Password => TaskErrorCode::EncryptedFile,
                    _ => TaskErrorCode::CorruptFile,
                }
            }
        }
    )*};
}

password_means_encrypted!(XlsxError, XlsbError, XlsError);

impl ReadError for calamine::OdsError {
    fn code(&self) -> TaskErrorCode {
        match self {
            calamine::OdsError::Password => TaskErrorCode::EncryptedFile,
            // Repeat attributes are compression: a few bytes can declare billions of cells.
            calamine::OdsError::CellLimitExceeded { .. } => TaskErrorCode::DecompressionLimit,
            _ => TaskErrorCode::CorruptFile,
        }
    }

    fn describe(&self) -> String {
        match self {
            calamine::OdsError::CellLimitExceeded { max, .. } => format!(
                "repeated rows and columns expand to more than {max} copies of non-empty cells"
            ),
            e => e.to_string(),
        }
    }
}

impl ReadError for std::convert::Infallible {}

/// The task outcome of a reader error, `context` saying where it happened.
pub(super) fn read_failure(e: &impl ReadError, context: impl Display) -> ParseFailure {
    match e.code() {
        TaskErrorCode::EncryptedFile => ParseFailure::password_protected(),
        code => ParseFailure::new(code, format!("{context}: {}", e.describe())),
    }
}

pub(super) fn open_error(e: &impl ReadError) -> ParseFailure {
    read_failure(e, "cannot open the workbook")
}

pub(super) fn sheet_error(name: &str, e: &impl ReadError) -> ParseFailure {
    read_failure(e, format_args!("sheet '{name}'"))
}
