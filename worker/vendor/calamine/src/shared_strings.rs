//! The shared-string table of xlsx and xlsb workbooks, stored compactly.
//!
//! Patched in by sheetrelay (see `PATCH.md` at the crate root). Stock calamine keeps the table
//! as `Vec<String>`: 24 bytes of header plus a separate heap allocation (16 bytes of allocator
//! overhead, rounded up) per string. A workbook with millions of unique strings, as Excel writes
//! any large table of ids or e-mail addresses, spent over twice the text's size on that
//! bookkeeping. Here all strings share one buffer and each costs one end offset.

use std::ops::Index;

/// All strings concatenated, with the end offset of each.
#[derive(Debug, Default, Clone)]
pub(crate) struct SharedStrings {
    text: String,
    ends: Vec<usize>,
}

impl SharedStrings {
    /// Reserves room for `additional` more strings (their offsets; the text grows as it comes).
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.ends.reserve(additional);
    }

    /// Appends a string; its index is the number of strings before it.
    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }

    /// The string at `index`, if the table has one.
    pub(crate) fn get(&self, index: usize) -> Option<&str> {
        let end = *self.ends.get(index)?;
        let start = match index {
            0 => 0,
            i => self.ends[i - 1],
        };
        Some(&self.text[start..end])
    }

    /// The number of strings.
    #[allow(dead_code)] // used by calamine's own unit tests (not run here: no dev-dependencies)
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

/// Panics like indexing the `Vec<String>` it replaces did, for the callers that relied on it.
impl Index<usize> for SharedStrings {
    type Output = str;

    fn index(&self, index: usize) -> &str {
        match self.get(index) {
            Some(s) => s,
            None => panic!(
                "index out of bounds: the shared-string table has {} strings but the index is {index}",
                self.ends.len()
            ),
        }
    }
}

