//! The rows of a hooked template's file between the parse and the hooks: an unnamed temporary
//! file (gone when dropped), a line a row, so a file of any size waits on disk, not in memory.
//! It is read while it is written: the writer publishes how far its lines are flushed, and a
//! [`Tail`] reads up to there (positional reads, so the two never share a file offset) and
//! waits for more until the writer closes it. That is what lets the hooks be asked about the
//! first batches while the parse child is still sending the last rows.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt as _;

use anyhow::{anyhow, Context as _};
use tokio::sync::watch;

use crate::parse::faults::Faults;

/// One stored row of the validated sheet, as the hooks see it.
#[derive(Debug, Clone, PartialEq)]
pub struct SpooledRow {
    pub sheet: u32,
    /// Its 1-based row number in the file.
    pub row: u64,
    /// Its errors so far: the template's, then as every hook asked changed them (none: valid).
    pub faults: Faults,
    /// Rejected as the hooks left it: a hook (or the check of a value a hook wrote) made it
    /// invalid, or wrote into a row the template had rejected. Its cells join the report's
    /// rejected rows (instead of the parse's entry).
    pub spoiled: bool,
    /// The template's JSON array of the row's values.
    pub values: String,
    /// A hook wrote a value into a unique or primary-key field: the row's key values before
    /// and after, to check against the whole file ([`super::unique`]).
    pub keys: Option<Box<KeyMove>>,
}

/// A row's key values (key set, fingerprint) as the file had them and as the hooks left them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KeyMove {
    pub before: Vec<(i32, u128)>,
    pub after: Vec<(i32, u128)>,
}

impl SpooledRow {
    /// Valid so far: by the template, then by every hook asked.
    pub fn valid(&self) -> bool {
        self.faults.is_empty()
    }

    /// [`Faults::may_be_stored`] of the row's errors so far.
    pub fn may_be_stored(&self, keep_all: bool) -> bool {
        self.faults.may_be_stored(keep_all)
    }

    /// Notes key values written by a hook: `before` the first time, `after` each time.
    pub fn move_keys(&mut self, before: Vec<(i32, u128)>, after: Vec<(i32, u128)>) {
        let moved = self.keys.get_or_insert_with(|| {
            Box::new(KeyMove {
                before,
                after: Vec::new(),
            })
        });
        moved.after = after;
        if moved.before == moved.after {
            self.keys = None;
        }
    }
}

/// A row's keys in its line: `slot:fingerprint` pairs, comma-separated, the two lists split
/// by `/`; `-` for none.
struct Keys<'a>(Option<&'a KeyMove>);

impl std::fmt::Display for Keys<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(k) = self.0 else {
            return f.write_str("-");
        };
        for (i, list) in [&k.before, &k.after].into_iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            for (n, (slot, fingerprint)) in list.iter().enumerate() {
                let comma = if n > 0 { "," } else { "" };
                write!(f, "{comma}{slot}:{fingerprint:x}")?;
            }
        }
        Ok(())
    }
}

fn read_keys(text: &str) -> anyhow::Result<Option<Box<KeyMove>>> {
    if text == "-" {
        return Ok(None);
    }
    let list = |l: &str| -> anyhow::Result<Vec<(i32, u128)>> {
        l.split(',')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (s, f) = p.split_once(':').context("a spooled key")?;
                Ok((s.parse()?, u128::from_str_radix(f, 16)?))
            })
            .collect()
    };
    let (before, after) = text.split_once('/').context("spooled keys")?;
    Ok(Some(Box::new(KeyMove {
        before: list(before)?,
        after: list(after)?,
    })))
}

/// How much of the spool can be read: bytes of whole lines, and whether no more will come.
#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    bytes: u64,
    closed: bool,
}

/// Rows written in order; read by a [`Tail`] as they are published.
pub struct Spool {
    file: BufWriter<File>,
    written: u64,
    published: watch::Sender<Mark>,
    rows: u64,
    /// The line being written (reused).
    line: String,
}

/// Rows a tail reads from the file at a time.
const READ_CHUNK: usize = 256 * 1024;

impl Spool {
    /// An empty spool and the tail that reads it.
    pub fn new() -> io::Result<(Self, Tail)> {
        let file = tempfile::tempfile()?;
        let read = file.try_clone()?;
        let (published, mark) = watch::channel(Mark::default());
        let spool = Self {
            file: BufWriter::with_capacity(64 * 1024, file),
            written: 0,
            published,
            rows: 0,
            line: String::new(),
        };
        let tail = Tail {
            file: read,
            mark,
            read: 0,
            buf: Vec::new(),
            start: 0,
        };
        Ok((spool, tail))
    }

    /// How many rows it holds.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    pub fn push(&mut self, r: &SpooledRow) -> io::Result<()> {
        // A row's JSON text never holds a raw newline or tab outside its strings' escapes.
        use std::fmt::Write as _;
        self.line.clear();
        let _ = writeln!(
            self.line,
            "{}\t{}\t{}\t{}\t{}\t{}",
            r.sheet,
            r.row,
            r.faults,
            u8::from(r.spoiled),
            Keys(r.keys.as_deref()),
            r.values
        );
        self.file.write_all(self.line.as_bytes())?;
        self.written += self.line.len() as u64;
        self.rows += 1;
        Ok(())
    }

    /// Makes the rows pushed so far readable by the tail.
    pub fn publish(&mut self) -> io::Result<()> {
        if self.published.borrow().bytes == self.written {
            return Ok(());
        }
        self.file.flush()?;
        let bytes = self.written;
        self.published.send_modify(|m| m.bytes = bytes);
        Ok(())
    }

    /// Publishes the last rows: the tail ends after them.
    pub fn close(mut self) -> io::Result<()> {
        self.publish()?;
        self.published.send_modify(|m| m.closed = true);
        Ok(())
    }
}

/// The reading end of a [`Spool`]. A spool dropped without [`Spool::close`] (its writer
/// failed) ends the tail with an error, never as if the rows were all there.
pub struct Tail {
    file: File,
    mark: watch::Receiver<Mark>,
    /// Bytes of the file read into `buf` so far.
    read: u64,
    buf: Vec<u8>,
    /// Where the next line starts in `buf`.
    start: usize,
}

impl Tail {
    /// The next row, waiting for it to be published; `None` after the last. Cancel-safe: a
    /// call dropped while it waits loses nothing.
    pub async fn next_row(&mut self) -> anyhow::Result<Option<SpooledRow>> {
        loop {
            if let Some(row) = self.buffered()? {
                return Ok(Some(row));
            }
            let mark = *self.mark.borrow_and_update();
            if self.read < mark.bytes {
                self.fill(mark.bytes).context("reading the row spool")?;
                continue;
            }
            if mark.closed {
                return Ok(None);
            }
            if self.mark.changed().await.is_err() {
                anyhow::bail!("the row spool's writer stopped before its last row");
            }
        }
    }

    /// A whole line already read, parsed.
    fn buffered(&mut self) -> anyhow::Result<Option<SpooledRow>> {
        let rest = &self.buf[self.start..];
        let Some(end) = memchr::memchr(b'\n', rest) else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&rest[..end]).context("a spooled row's text")?;
        let row = parse(line)?;
        self.start += end + 1;
        Ok(Some(row))
    }

    /// Reads more of the file, up to `published` bytes.
    fn fill(&mut self, published: u64) -> io::Result<()> {
        self.buf.drain(..self.start);
        self.start = 0;
        let want = usize::try_from(published - self.read)
            .unwrap_or(READ_CHUNK)
            .min(READ_CHUNK);
        let at = self.buf.len();
        self.buf.resize(at + want, 0);
        self.file.read_exact_at(&mut self.buf[at..], self.read)?;
        self.read += want as u64;
        Ok(())
    }
}

/// A spooled row from its line.
fn parse(line: &str) -> anyhow::Result<SpooledRow> {
    let mut parts = line.splitn(6, '\t');
    let mut next = || parts.next().ok_or_else(|| anyhow!("a garbled spooled row"));
    let sheet = next()?.parse().context("a spooled row's sheet")?;
    let row = next()?.parse().context("a spooled row's number")?;
    let faults = next()?.parse()?;
    let spoiled = next()? == "1";
    let keys = read_keys(next()?)?;
    let values = next()?.to_owned();
    Ok(SpooledRow {
        sheet,
        row,
        faults,
        spoiled,
        values,
        keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::faults::Fault;

    fn row(row: u64, values: &str) -> SpooledRow {
        SpooledRow {
            sheet: 0,
            row,
            faults: if row.is_multiple_of(2) {
                Faults::default()
            } else {
                Faults(vec![Fault {
                    field: Some(1),
                    code: template::validate::ErrorCode::TypeError,
                }])
            },
            spoiled: row.is_multiple_of(3),
            values: values.into(),
            keys: (row == 3).then(|| {
                Box::new(KeyMove {
                    before: vec![(0, 1 << 100), (-1, 7)],
                    after: vec![(0, 0xabc)],
                })
            }),
        }
    }

    #[tokio::test]
    async fn rows_read_back_as_written_while_the_spool_is_written() {
        let (mut spool, mut tail) = Spool::new().expect("spool");
        let first = row(2, r#"["a\tb",1,null]"#);
        spool.push(&first).expect("push");
        spool.publish().expect("publish");
        assert_eq!(tail.next_row().await.expect("row"), Some(first));
        // Not published yet: the tail waits (and a wait given up loses nothing).
        let later = row(3, "[]");
        spool.push(&later).expect("push");
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(50), tail.next_row()).await;
        assert!(waited.is_err(), "read an unpublished row");
        let many: Vec<SpooledRow> = (4..20_000).map(|n| row(n, r#"["x",2]"#)).collect();
        for r in &many {
            spool.push(r).expect("push");
        }
        assert_eq!(spool.rows(), 20_000 - 2);
        spool.close().expect("close");
        assert_eq!(tail.next_row().await.expect("row"), Some(later));
        for r in many {
            assert_eq!(tail.next_row().await.expect("row"), Some(r));
        }
        assert_eq!(tail.next_row().await.expect("end"), None);
    }

    #[tokio::test]
    async fn a_spool_dropped_unclosed_ends_its_tail_with_an_error() {
        let (mut spool, mut tail) = Spool::new().expect("spool");
        spool.push(&row(2, "[]")).expect("push");
        drop(spool);
        assert!(tail.next_row().await.is_err());
    }
}
