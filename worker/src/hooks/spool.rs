//! The rows of a hooked template's file between the parse and the hooks: an unnamed temporary
//! file (gone when dropped), a line a row, so a file of any size waits on disk, not in memory,
//! while the hooks are asked about it a batch at a time. Each hook's pass reads one spool and
//! writes the next.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Seek, Write};

use anyhow::{anyhow, Context as _};

/// One stored row of the validated sheet, as the hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpooledRow {
    pub sheet: u32,
    /// Its 1-based row number in the file.
    pub row: u64,
    /// Valid so far: by the template, then by every hook asked.
    pub valid: bool,
    /// A hook (or the check of a value a hook wrote) made it invalid: its cells join the
    /// report's rejected rows.
    pub spoiled: bool,
    /// The template's JSON array of the row's values.
    pub values: String,
}

/// Rows written, then read back in the same order.
pub struct Spool {
    file: BufWriter<File>,
    rows: u64,
}

impl Spool {
    pub fn new() -> io::Result<Self> {
        Ok(Self {
            file: BufWriter::new(tempfile::tempfile()?),
            rows: 0,
        })
    }

    /// How many rows it holds.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn push(&mut self, r: &SpooledRow) -> io::Result<()> {
        // A row's JSON text never holds a raw newline or tab outside its strings' escapes.
        writeln!(
            self.file,
            "{}\t{}\t{}\t{}\t{}",
            r.sheet,
            r.row,
            u8::from(r.valid),
            u8::from(r.spoiled),
            r.values
        )?;
        self.rows += 1;
        Ok(())
    }

    /// The rows from the first.
    pub fn read(self) -> io::Result<SpoolReader> {
        let mut file = self
            .file
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?;
        file.rewind()?;
        Ok(SpoolReader {
            lines: BufReader::new(file),
            line: String::new(),
        })
    }
}

pub struct SpoolReader {
    lines: BufReader<File>,
    line: String,
}

impl SpoolReader {
    /// The next row; `None` after the last.
    pub fn next_row(&mut self) -> anyhow::Result<Option<SpooledRow>> {
        self.line.clear();
        if self
            .lines
            .read_line(&mut self.line)
            .context("reading the row spool")?
            == 0
        {
            return Ok(None);
        }
        let line = self.line.trim_end_matches('\n');
        let mut parts = line.splitn(5, '\t');
        let mut next = || parts.next().ok_or_else(|| anyhow!("a garbled spooled row"));
        let sheet = next()?.parse().context("a spooled row's sheet")?;
        let row = next()?.parse().context("a spooled row's number")?;
        let valid = next()? == "1";
        let spoiled = next()? == "1";
        let values = next()?.to_owned();
        Ok(Some(SpooledRow {
            sheet,
            row,
            valid,
            spoiled,
            values,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_as_written() {
        let rows = [
            SpooledRow {
                sheet: 0,
                row: 2,
                valid: true,
                spoiled: false,
                values: r#"["a\tb",1,null]"#.into(),
            },
            SpooledRow {
                sheet: 0,
                row: 3,
                valid: false,
                spoiled: true,
                values: "[]".into(),
            },
        ];
        let mut spool = Spool::new().expect("spool");
        for r in &rows {
            spool.push(r).expect("push");
        }
        assert_eq!(spool.rows(), 2);
        let mut read = spool.read().expect("read");
        assert_eq!(read.next_row().expect("row").as_ref(), Some(&rows[0]));
        assert_eq!(read.next_row().expect("row").as_ref(), Some(&rows[1]));
        assert_eq!(read.next_row().expect("end"), None);
    }
}
