//! Rows' JSON array text (`["a",null,"b"]`), written back to back into one buffer and handed
//! on in batches. Appending to a `Vec` byte by byte checks its capacity at every byte and
//! copies each cell with a `memcpy` call, and that was a fifth of a CSV parse's instructions.
//! Here each write is a store at a known offset, and a short cell is copied as one fixed
//! 32-byte block (a few vector moves) when its source runs on that far: the bytes copied past
//! the cell are overwritten by what follows it or lie past the last row. A batch of rows is
//! checked to be UTF-8 in one call, which costs a fraction of checking each row on its own.

use std::borrow::Cow;

use crate::parse::writers::json;

/// The most a cell copy writes past the cell, and the room kept for it past every row.
const BLOCK: usize = 32;

/// Rows are handed on once this many bytes of them are waiting.
const BATCH_BYTES: usize = 64 * 1024;

/// The rows of a file not yet handed on, reused for every batch.
#[derive(Default)]
pub(super) struct Rows {
    buf: Vec<u8>,
    len: usize,
    /// Where each waiting row ends in `buf`.
    ends: Vec<usize>,
}

impl Rows {
    /// Starts a row of `cells` cells whose text, escapes aside, is at most `text_len` bytes.
    pub fn start(&mut self, text_len: usize, cells: usize) {
        self.reserve(text_len, cells);
        self.buf[self.len] = b'[';
        self.len += 1;
    }

    /// Room for `text_len` bytes of cells and `cells` cells: per cell at most `"",` or
    /// `null,`, the brackets, and the last block copy's overrun.
    fn reserve(&mut self, text_len: usize, cells: usize) {
        let need = self.len + text_len + 5 * cells + 2 + BLOCK;
        if self.buf.len() < need {
            self.buf.resize(need, 0);
        }
    }

    pub fn null(&mut self) {
        self.buf[self.len..self.len + 5].copy_from_slice(b"null,");
        self.len += 5;
    }

    /// A cell that needs no escaping: `src[start..end]`. `src` may run on past the cell.
    #[inline]
    pub fn string(&mut self, src: &[u8], start: usize, end: usize) {
        let n = end - start;
        if n <= BLOCK {
            let block = src.get(start..).and_then(<[u8]>::first_chunk::<BLOCK>);
            let out = self
                .buf
                .get_mut(self.len..)
                .and_then(<[u8]>::first_chunk_mut::<{ BLOCK + 3 }>);
            // Fixed-size arrays: no bounds checks below (`n + 2 < BLOCK + 3`).
            if let (Some(block), Some(out)) = (block, out) {
                out[0] = b'"';
                out[1..=BLOCK].copy_from_slice(block);
                out[n + 1] = b'"';
                out[n + 2] = b',';
                self.len += n + 3;
                return;
            }
        }
        let at = self.len + 1;
        self.buf[self.len] = b'"';
        self.buf[at..at + n].copy_from_slice(&src[start..end]);
        self.buf[at + n..at + n + 2].copy_from_slice(b"\",");
        self.len = at + n + 2;
    }

    /// A cell that needs escaping, then room again for the rest of the row, given as
    /// [`Rows::start`] was given it.
    pub fn escaped_string(&mut self, cell: &[u8], text_len: usize, cells: usize) {
        self.buf.truncate(self.len);
        self.buf.push(b'"');
        json::push_escaped_bytes(&mut self.buf, cell);
        self.buf.extend_from_slice(b"\",");
        self.len = self.buf.len();
        self.reserve(text_len, cells);
    }

    /// How many finished rows wait to be handed on.
    pub fn waiting(&self) -> usize {
        self.ends.len()
    }

    /// Ends the row: the last cell's comma becomes the closing bracket. Returns whether the
    /// batch is full.
    pub fn finish(&mut self) -> bool {
        if self.buf[self.len - 1] == b',' {
            self.buf[self.len - 1] = b']';
        } else {
            self.buf[self.len] = b']';
            self.len += 1;
        }
        self.ends.push(self.len);
        self.len >= BATCH_BYTES
    }

    /// Hands each waiting row to `emit`, in order, and empties the batch. Rows are text: the
    /// batch is checked to be UTF-8 in one go; if it is not, each row is, and its invalid
    /// sequences are replaced by U+FFFD. JSON's own characters are ASCII and end any
    /// sequence, so that is what replacing inside each cell would give.
    pub fn flush<E>(
        &mut self,
        mut emit: impl FnMut(Cow<'_, str>) -> Result<(), E>,
    ) -> Result<(), E> {
        let rows = self.ends.iter().scan(0, |start, &end| {
            let row = *start..end;
            *start = end;
            Some(row)
        });
        match simdutf8::basic::from_utf8(&self.buf[..self.len]) {
            Ok(text) => {
                for row in rows {
                    emit(Cow::Borrowed(&text[row]))?;
                }
            }
            Err(_) => {
                for row in rows {
                    emit(String::from_utf8_lossy(&self.buf[row]))?;
                }
            }
        }
        self.len = 0;
        self.ends.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(batch: &mut Rows) -> Vec<String> {
        let mut out = Vec::new();
        let flushed = batch.flush(|row| {
            out.push(row.into_owned());
            Ok::<(), ()>(())
        });
        assert_eq!(flushed, Ok(()));
        out
    }

    #[test]
    fn rows_are_json_arrays_whatever_the_cell_lengths_and_sources() {
        let mut batch = Rows::default();
        let mut expected = Vec::new();
        for n in 0..80 {
            let cell = "é".repeat(n / 2) + &"x".repeat(n % 2);
            // The cell alone (no slack to copy a block from) and inside a longer source.
            let padded = format!("{cell}{}", "y".repeat(40));
            batch.start(cell.len() * 3, 5);
            batch.string(cell.as_bytes(), 0, cell.len());
            batch.null();
            batch.string(padded.as_bytes(), 0, cell.len());
            batch.escaped_string(format!("{cell}\"\n").as_bytes(), cell.len(), 2);
            batch.string(padded.as_bytes(), 0, cell.len());
            assert!(!batch.finish());
            expected.push(serde_json::json!([
                cell,
                null,
                cell,
                format!("{cell}\"\n"),
                cell
            ]));
        }
        batch.start(0, 0);
        batch.finish();
        expected.push(serde_json::json!([]));
        let parsed: Vec<serde_json::Value> = rows(&mut batch)
            .iter()
            .filter_map(|r| serde_json::from_str(r).ok())
            .collect();
        assert_eq!(parsed, expected);
        assert!(rows(&mut batch).is_empty());
    }

    #[test]
    fn a_batch_with_invalid_utf8_replaces_it_in_its_row_only() {
        let mut batch = Rows::default();
        for cell in [&b"ok"[..], b"bad \xff", b"fine"] {
            batch.start(cell.len(), 1);
            batch.string(cell, 0, cell.len());
            batch.finish();
        }
        assert_eq!(
            rows(&mut batch),
            [r#"["ok"]"#, "[\"bad \u{fffd}\"]", r#"["fine"]"#]
        );
    }

    #[test]
    fn a_batch_is_full_past_its_size() {
        let mut batch = Rows::default();
        let cell = [b'x'; 1000];
        let full = (0..100)
            .position(|_| {
                batch.start(cell.len(), 1);
                batch.string(&cell, 0, cell.len());
                batch.finish()
            })
            .map(|i| i + 1);
        assert_eq!(full, Some(BATCH_BYTES.div_ceil(1005)));
    }
}
