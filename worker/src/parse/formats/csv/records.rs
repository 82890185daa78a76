//! Splits CSV text into records exactly as the `csv` crate does, faster. The `csv` crate is a
//! buffer around `csv_core`'s byte-at-a-time state machine, and that machine was the largest
//! single cost of a CSV parse (39 % of its instructions). Nearly every record of a real file is
//! well formed: its quoted fields (if any) are quoted from their first byte to their last, with
//! inner quotes doubled. Such a record is found from bit masks of its quotes, delimiters and
//! line ends, 32 bytes at a time, and split in place (or, when a field holds an escaped quote,
//! copied unescaped). Any other (a stray quote, text after a closing quote, a record crossing
//! the buffer's end) goes through `csv_core` itself, configured as the `csv` crate configures
//! it, so the RFC 4180 rules of the odd cases are `csv_core`'s.
//!
//! The paths agree at every record boundary: `csv_core` skips the `\r` and `\n` bytes at the
//! start of a record (blank lines, the `\n` of a CRLF), and the mask path skips them too
//! before it looks at a record, so `csv_core`'s state between two records never matters. The
//! first record always goes through `csv_core`, which strips a UTF-8 BOM there as the `csv`
//! crate does. A test compares the records with the `csv` crate's on generated input.

use std::io::{self, Read};
use std::ops::Range;

use csv_core::ReadRecordResult;

use super::masks::{for_each_bit, prefix_xor, unescape, unquote, Masks};
use crate::parse::formats::delimiter::Quoting;

/// Reads records from a byte stream.
pub(crate) struct Records<R> {
    input: R,
    buf: Vec<u8>,
    /// Unread input is `buf[pos..end]`.
    pos: usize,
    end: usize,
    eof: bool,
    core: csv_core::Reader,
    delimiter: u8,
    /// Whether records may be split from bit masks: only with RFC 4180 quoting (`"`, doubled),
    /// which is what the masks assume.
    masks: bool,
    /// How many input bytes of one record may be read without finding its end: an unbalanced
    /// quote would otherwise swallow the rest of the file into one field. (A guard on memory,
    /// not a length check: a longer record the buffer already holds whole is returned.)
    max_record: usize,
    /// Where the current record's fields are.
    source: Source,
    /// `csv_core`'s output: the fields, unescaped, back to back (a fixed-size buffer that
    /// grows when `csv_core` fills it).
    out: Vec<u8>,
    /// The fields of a record with escaped quotes (`""`) in quoted fields, unescaped.
    unescaped: Vec<u8>,
    /// `csv_core`'s field end offsets in `out`.
    ends: Vec<usize>,
    /// The current record's fields, as offsets into its bytes.
    fields: Vec<(usize, usize)>,
    /// Where the quotes of a record split in place are, and the escaped ones to drop.
    quotes: Vec<usize>,
    doubled: Vec<usize>,
    first: bool,
    /// Line ends seen since the last record, and the empty lines before the current one.
    line_ends: LineEnds,
    blank_lines: u64,
}

enum Source {
    /// A record of `buf` (quoted line breaks and all), split in place.
    Line(Range<usize>),
    /// `unescaped`.
    Unescaped,
    /// `out`.
    Core,
}

/// Counts the line ends between two records, to tell how many empty lines lay between them.
#[derive(Debug, Default, Clone, Copy)]
struct LineEnds {
    /// Lines ended so far.
    lines: u64,
    /// The previous record's own line end is among them (its reader stopped at it).
    pending: bool,
    /// The last byte seen (or the previous record's last) was a `\r`: a `\n` now completes it.
    after_cr: bool,
}

impl LineEnds {
    fn see(&mut self, byte: u8) {
        if !(byte == b'\n' && self.after_cr) {
            self.lines += 1;
        }
        self.after_cr = byte == b'\r';
    }

    fn blank_lines(&self) -> u64 {
        self.lines.saturating_sub(u64::from(self.pending))
    }
}

/// One record. Field `i` is `bytes[record.range(i)]`.
pub(crate) struct Record<'a> {
    /// The record's text the fields were cut from, or the fields unescaped back to back.
    pub bytes: &'a [u8],
    /// `bytes` and whatever follows them in memory (stale bytes, for copying short fields
    /// in fixed-size blocks).
    pub padded: &'a [u8],
    fields: &'a [(usize, usize)],
    /// Whether `bytes` is a record's text whose quote characters all enclose fields (none is
    /// part of one), rather than field content only.
    pub quotes_enclose: bool,
    /// Empty lines between the previous record and this one, which no record stands for: a
    /// person counting rows counts them.
    pub blank_lines_before: u64,
}

impl Record<'_> {
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    #[inline]
    pub fn range(&self, i: usize) -> Range<usize> {
        let (start, end) = self.fields[i];
        start..end
    }

    /// Where each field is: `(start, end)` offsets into `bytes`.
    pub fn spans(&self) -> &[(usize, usize)] {
        self.fields
    }

    /// Whether every field is empty (a line of bare delimiters).
    pub fn is_blank(&self) -> bool {
        self.fields.iter().all(|&(start, end)| start == end)
    }
}

/// A record copied out of the reader, held by the header phase until the header is decided.
pub(crate) struct OwnedRecord {
    bytes: Vec<u8>,
    fields: Vec<(usize, usize)>,
    quotes_enclose: bool,
}

impl OwnedRecord {
    pub fn of(record: &Record<'_>) -> Self {
        Self {
            bytes: record.bytes.to_vec(),
            fields: record.fields.to_vec(),
            quotes_enclose: record.quotes_enclose,
        }
    }

    /// The record again, as the reader gave it (its row number travels beside it).
    pub fn record(&self) -> Record<'_> {
        Record {
            bytes: &self.bytes,
            padded: &self.bytes,
            fields: &self.fields,
            quotes_enclose: self.quotes_enclose,
            blank_lines_before: 0,
        }
    }
}

impl<R: Read> Records<R> {
    pub fn new(input: R, delimiter: u8, max_record: usize) -> Self {
        Self {
            input,
            buf: vec![0; 256 * 1024],
            pos: 0,
            end: 0,
            eof: false,
            core: csv_core::ReaderBuilder::new().delimiter(delimiter).build(),
            delimiter,
            masks: true,
            max_record,
            source: Source::Core,
            out: vec![0; 4096],
            unescaped: Vec::with_capacity(4096),
            ends: vec![0; 64],
            fields: Vec::with_capacity(64),
            quotes: Vec::with_capacity(64),
            doubled: Vec::new(),
            first: true,
            line_ends: LineEnds::default(),
            blank_lines: 0,
        }
    }

    /// Reads fields quoted as `quoting` says (`'` quotes, backslash escapes) rather than as RFC
    /// 4180 does: every record then goes through `csv_core`, configured for it.
    pub fn with_quoting(mut self, quoting: Quoting) -> Self {
        if quoting != Quoting::RFC4180 {
            self.core = csv_core::ReaderBuilder::new()
                .delimiter(self.delimiter)
                .quote(quoting.quote)
                .escape(quoting.escape)
                .double_quote(quoting.escape.is_none())
                .build();
            self.masks = false;
        }
        self
    }

    /// The next record, or `None` at the end of the input. Fails on a read error, or with
    /// [`io::ErrorKind::FileTooLarge`] for a record longer than the limit.
    pub fn next_record(&mut self) -> io::Result<Option<Record<'_>>> {
        if !self.advance()? {
            return Ok(None);
        }
        let (bytes, padded, quotes_enclose) = match &self.source {
            Source::Line(line) => (&self.buf[line.clone()], &self.buf[line.start..], true),
            Source::Unescaped => (&self.unescaped[..], &self.unescaped[..], false),
            Source::Core => {
                let len = self.fields.last().map_or(0, |f| f.1);
                (&self.out[..len], &self.out[..], false)
            }
        };
        Ok(Some(Record {
            bytes,
            padded,
            fields: &self.fields,
            quotes_enclose,
            blank_lines_before: self.blank_lines,
        }))
    }

    fn advance(&mut self) -> io::Result<bool> {
        // Line ends skipped before this record: CRLF, CR and LF each end one line, and the
        // first of them ends the previous record when its reader left it (see `LineEnds`).
        let mut ends = std::mem::take(&mut self.line_ends);
        loop {
            // Blank lines and the `\n` of a CRLF, as `csv_core` skips them (it sees the input
            // from its first byte, for its BOM check).
            while !self.first && self.pos < self.end && matches!(self.buf[self.pos], b'\n' | b'\r')
            {
                ends.see(self.buf[self.pos]);
                self.pos += 1;
            }
            // `csv_core` strips a BOM only when it sees all three of its bytes at once, and
            // takes what remains of its input after one as the end of the input when nothing
            // does: its first input gets a byte more than that.
            let need = if self.first { 4 } else { 1 };
            if self.end - self.pos < need && !self.eof {
                self.refill()?;
                continue;
            }
            if self.pos == self.end {
                return Ok(false);
            }
            self.blank_lines = ends.blank_lines();
            let read = if self.first {
                self.first = false;
                self.read_with_core()?
            } else if self.masks && self.split_record() {
                true
            } else {
                self.read_with_core()?
            };
            // The mask path stops at the record's line end; `csv_core` takes it (a CRLF's
            // `\r` only: its `\n` is then no line of its own).
            self.line_ends = match self.source {
                Source::Core => LineEnds {
                    after_cr: self.pos > 0 && self.buf.get(self.pos - 1) == Some(&b'\r'),
                    ..LineEnds::default()
                },
                Source::Line(_) | Source::Unescaped => LineEnds {
                    pending: true,
                    ..LineEnds::default()
                },
            };
            return Ok(read);
        }
    }

    /// Splits the record at `pos` when the buffer holds all of it and it is well formed:
    /// fields separated by delimiters, each either free of quotes or quoted from its first
    /// byte to its last with any quote inside doubled (`""`). Line breaks inside quotes are
    /// content. The record is left in place when no field holds an escaped quote, and copied
    /// unescaped into `unescaped` otherwise. Anything else (a stray quote, text after a closing
    /// quote, a record running past the buffer's end) returns false, having consumed nothing,
    /// and `csv_core` reads the record.
    ///
    /// The input is read 32 bytes at a time as bit masks of its quotes, delimiters and line
    /// ends; a running XOR of the quote bits marks the bytes inside quotes, whose delimiters
    /// and line ends are content.
    fn split_record(&mut self) -> bool {
        let buf = &self.buf[self.pos..self.end];
        self.fields.clear();
        self.quotes.clear();
        let mut start = 0;
        // All ones when the previous block ended inside quotes.
        let mut inside = 0u32;
        let mut offset = 0;
        let len = loop {
            if offset >= buf.len() {
                if self.eof && inside == 0 {
                    break buf.len();
                }
                return false;
            }
            let Masks {
                mut quotes,
                mut delimiters,
                mut line_ends,
            } = Masks::of(&buf[offset..], self.delimiter);
            if quotes != 0 || inside != 0 {
                let quoted = prefix_xor(quotes) ^ inside;
                inside = 0u32.wrapping_sub(quoted >> 31);
                delimiters &= !quoted;
                line_ends &= !quoted;
            }
            let stop = line_ends.trailing_zeros();
            if stop < 32 {
                let before = (1u32 << stop) - 1;
                delimiters &= before;
                quotes &= before;
            }
            for_each_bit(quotes, |i| self.quotes.push(offset + i));
            for_each_bit(delimiters, |i| {
                self.fields.push((start, offset + i));
                start = offset + i + 1;
            });
            if stop < 32 {
                break offset + stop as usize;
            }
            offset += 32;
        };
        self.fields.push((start, len));
        let line = self.pos..self.pos + len;
        if !self.quotes.is_empty() {
            match unquote(&mut self.fields, &self.quotes, &mut self.doubled) {
                Some(false) => {}
                Some(true) => {
                    unescape(
                        &self.buf[line.clone()],
                        &mut self.fields,
                        &self.doubled,
                        &mut self.unescaped,
                    );
                    self.pos = line.end;
                    self.source = Source::Unescaped;
                    return true;
                }
                None => return false,
            }
        }
        self.pos = line.end;
        self.source = Source::Line(line);
        true
    }

    /// Reads one record with `csv_core`, starting at `pos` (not a record terminator). The
    /// input it has consumed is not needed again (its fields are in `out`), so refills may
    /// drop it.
    fn read_with_core(&mut self) -> io::Result<bool> {
        let (mut taken, mut nout, mut nend) = (0, 0, 0);
        loop {
            // An empty input tells `csv_core` the input has ended, so it only gets one at EOF.
            if self.pos == self.end && !self.eof {
                self.check_record_len(taken)?;
                self.refill()?;
                continue;
            }
            let (result, nin, n_out, n_end) = self.core.read_record(
                &self.buf[self.pos..self.end],
                &mut self.out[nout..],
                &mut self.ends[nend..],
            );
            self.pos += nin;
            taken += nin;
            nout += n_out;
            nend += n_end;
            match result {
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => {
                    let len = self.out.len();
                    self.out.resize(len * 2, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let len = self.ends.len();
                    self.ends.resize(len * 2, 0);
                }
                ReadRecordResult::Record => {
                    self.fields.clear();
                    let mut start = 0;
                    for &end in &self.ends[..nend] {
                        self.fields.push((start, end));
                        start = end;
                    }
                    self.source = Source::Core;
                    return Ok(true);
                }
                ReadRecordResult::End => return Ok(false),
            }
        }
    }

    fn check_record_len(&self, len: usize) -> io::Result<()> {
        if len > self.max_record {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                "record too large",
            ));
        }
        Ok(())
    }

    /// Reads more input after the unread bytes, moving them to the front of the buffer first
    /// (and growing it when they fill it: a record longer than the buffer). At the end of the
    /// input it sets `eof` instead.
    fn refill(&mut self) -> io::Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let len = self.buf.len();
            self.buf.resize(len * 2, 0);
        }
        let n = loop {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        self.end += n;
        self.eof = n == 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Hands out its bytes a few at a time, so records cross reads everywhere.
    struct Trickle<'a> {
        bytes: &'a [u8],
        rng: StdRng,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self
                .rng
                .random_range(1..=7)
                .min(buf.len())
                .min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn ours(input: impl Read, delimiter: u8) -> Vec<Vec<Vec<u8>>> {
        let mut records = Records::new(input, delimiter, usize::MAX);
        let mut all = Vec::new();
        while let Ok(Some(r)) = records.next_record() {
            all.push((0..r.len()).map(|i| r.bytes[r.range(i)].to_vec()).collect());
        }
        all
    }

    fn theirs(input: &[u8], delimiter: u8) -> Vec<Vec<Vec<u8>>> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(delimiter)
            .from_reader(input);
        reader
            .byte_records()
            .map_while(Result::ok)
            .map(|r| r.iter().map(<[u8]>::to_vec).collect())
            .collect()
    }

    #[test]
    fn records_are_the_csv_crates_on_generated_input() {
        const PIECES: [&[u8]; 13] = [
            b"a",
            // Longer than a block: quotes and delimiters fall on both sides of block edges.
            b"0123456789abcdefghijklmnopqrstuvwxyz",
            b"bc",
            b",",
            b";",
            b"\"",
            b"\"\"",
            b"\r",
            b"\n",
            b"\r\n",
            b" ",
            "é".as_bytes(),
            b"\t",
        ];
        let mut rng = StdRng::seed_from_u64(7);
        for case in 0..1500 {
            let mut input = Vec::new();
            if case % 50 == 0 {
                input.extend_from_slice(b"\xef\xbb\xbf");
            }
            if case % 50 == 1 {
                input.extend_from_slice(b"\n\xef\xbb\xbf");
            }
            for _ in 0..rng.random_range(0..60) {
                input.extend_from_slice(PIECES[rng.random_range(0..PIECES.len())]);
            }
            for delimiter in [b',', b';', b'\t'] {
                let expected = theirs(&input, delimiter);
                assert_eq!(ours(&input[..], delimiter), expected, "{input:?}");
                let trickle = Trickle {
                    bytes: &input,
                    rng: StdRng::seed_from_u64(case),
                };
                assert_eq!(
                    ours(trickle, delimiter),
                    expected,
                    "{input:?} read in pieces"
                );
            }
        }
    }

    #[test]
    fn records_longer_than_the_buffer_are_read_whole_on_both_paths() {
        let long = "x".repeat(700_000);
        let input = format!("h1,h2\n{long},1\n\"{long}\",2\nlast,3");
        assert_eq!(ours(input.as_bytes(), b','), theirs(input.as_bytes(), b','));
        assert_eq!(ours(input.as_bytes(), b',')[2][0].len(), 700_000);
    }

    #[test]
    fn a_record_past_the_limit_fails_on_both_paths() {
        let unquoted = "h\nshort\nxxxxxxxxxxxxxxxxxxxxxxxx\n";
        let quoted = "h\nshort\n\"xxxx\nxxxxxxxxxxxxxxxxxxx";
        for input in [unquoted, quoted] {
            let trickle = Trickle {
                bytes: input.as_bytes(),
                rng: StdRng::seed_from_u64(1),
            };
            let mut records = Records::new(trickle, b',', 16);
            let mut results = Vec::new();
            loop {
                match records.next_record() {
                    Ok(Some(r)) => results.push(r.len()),
                    Ok(None) => break,
                    Err(e) => {
                        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
                        break;
                    }
                }
            }
            assert_eq!(results, [1, 1], "{input:?}");
        }
    }

    #[test]
    fn well_formed_records_are_split_without_csv_core_across_blocks() {
        let long = "x,y\r\n".repeat(10);
        let input = format!("h\n\"{long}\",1\n\"{long}\"\"\",2\n\"a\"b\",3\n");
        let mut records = Records::new(input.as_bytes(), b',', 1024);
        let mut seen = Vec::new();
        while let Ok(Some(r)) = records.next_record() {
            let first_len = r.range(0).len();
            let width = r.len();
            let path = match records.source {
                Source::Line(_) => "in place",
                Source::Unescaped => "unescaped",
                Source::Core => "csv_core",
            };
            seen.push((first_len, width, path));
        }
        // The header is csv_core's (the first record always is), then one record in place,
        // one unescaped, and a malformed one (text after a closing quote) left to csv_core.
        assert_eq!(
            seen,
            [
                (1, 1, "csv_core"),
                (50, 2, "in place"),
                (51, 2, "unescaped"),
                (3, 2, "csv_core")
            ]
        );
    }

    #[test]
    fn empty_lines_before_a_record_are_counted_whichever_path_read_it() {
        // The first record of each goes through `csv_core`, the others mostly through the
        // mask path; a stray quote sends one through `csv_core` in the middle.
        for (input, want) in [
            (&b"a\n1\n\n\n2\n"[..], vec![0, 0, 2]),
            (b"a\r\n1\r\n\r\n2\r\n", vec![0, 0, 1]),
            (b"a\"x\r\n\r\n1\r\n", vec![0, 1]),
            (b"a\n\"x\"y\n\n2\n", vec![0, 0, 1]),
            (b"a\r1\r\r2", vec![0, 0, 1]),
            (b"\n\na\n1", vec![0, 0]),
        ] {
            let mut records = Records::new(input, b',', 1024);
            let mut got = Vec::new();
            while let Ok(Some(r)) = records.next_record() {
                got.push(r.blank_lines_before);
            }
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn blank_records_are_those_of_empty_fields_only() {
        let mut records = Records::new(&b"a,b\n,,\n\"\",\nx,\n"[..], b',', 1024);
        let mut blank = Vec::new();
        while let Ok(Some(r)) = records.next_record() {
            blank.push(r.is_blank());
        }
        assert_eq!(blank, [false, true, true, false]);
    }
}
