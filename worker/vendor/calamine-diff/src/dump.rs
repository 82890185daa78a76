//! The canonical text of what one reader gives for one workbook: a line per sheet (name, type,
//! visibility), per cell (absolute position and value) and per error, so that the fork's reading
//! and the release's can be compared line by line and a difference shown as the lines that differ.

use std::any::Any;
use std::fmt::Debug;
use std::panic::{self, AssertUnwindSafe};

/// One reader's view of one workbook, line by line.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Dump {
    pub lines: Vec<String>,
}

impl Dump {
    /// The view of a workbook whose reading failed as a whole: the error alone.
    pub fn failed(error: impl ToString) -> Self {
        Dump {
            lines: vec![format!("error: {}", error.to_string())],
        }
    }

    /// The error or panic a whole view failed with, if it did.
    pub fn failure(&self) -> Option<&str> {
        match self.lines.as_slice() {
            [only] if only.starts_with("error: ") || only.starts_with("panic: ") => Some(only),
            _ => None,
        }
    }

    pub fn sheet(&mut self, name: &str, typ: impl Debug, visible: impl Debug) {
        self.lines
            .push(format!("sheet {name:?} {typ:?} {visible:?}"));
    }

    /// A cell at its absolute (row, column); values are written with `Debug`, which the two
    /// crates derive alike and which writes floats so that they read back exactly.
    pub fn cell(&mut self, (row, col): (u32, u32), value: impl Debug) {
        self.lines.push(format!("  {row},{col} {value:?}"));
    }

    /// The bounds of a sheet's range (`None` for an empty one).
    pub fn bounds(&mut self, start: Option<(u32, u32)>, end: Option<(u32, u32)>) {
        self.lines.push(format!("  range {start:?}..{end:?}"));
    }

    /// An error that ends one sheet's reading but not the workbook's.
    pub fn error(&mut self, error: impl ToString) {
        self.lines.push(format!("  error: {}", error.to_string()));
    }

    /// Runs a view, turning a panic into the view's only line: a reader that panics on a
    /// workbook must panic on it in the same way on both sides, and must not end the run.
    pub fn catching(view: impl FnOnce() -> Dump) -> Dump {
        panic::catch_unwind(AssertUnwindSafe(view)).unwrap_or_else(|payload| Dump {
            lines: vec![format!("panic: {}", panic_message(payload.as_ref()))],
        })
    }
}

/// A panic's message. Its location is left out on purpose: the patched files' line numbers
/// differ from the release's.
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}
