//! The frame protocol between a parse child and its parent, both ways of it: one line per event,
//! a tag and a tab, then JSON (or, for a row, its JSON array text as the parser wrote it):
//!
//! ```text
//! S\t{"index":0,"name":"Sheet1","hidden":false}
//! R\t<JSON array of values>      (JSON text never holds a raw newline)
//! E\t<SheetSummary JSON>
//! X\t<ErrorRecord JSON>         (a templated file's error record)
//! J\t<RejectedFrame JSON>       (a templated file's rejected row: sheet, row, original cells)
//! K\t<KeysFrame JSON>           (a templated file's key index, one bucket: entries in base64)
//! V\t<Review JSON>              (a templated file whose mapping needs a review; no rows sent)
//! O\t<row> <0|1>                (a hooked template: the next row's number in the file, valid)
//! D\t<ParseSummary JSON>      or      F\t<ParseFailure JSON>      (always the last line)
//! ```
//!
//! A row's sheet is that of the last `S` line and its index counts from 0 after it, so a row
//! frame is its JSON text and nothing else: rows cross the process boundary without a per-row
//! allocation, copy or number parse.

use std::borrow::Cow;
use std::io::{self, Write};

use anyhow::{anyhow, bail, Context};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::parse::{ParseEvent, ParseFailure, ParseSummary, SheetSummary};

#[derive(Serialize, Deserialize)]
struct RejectedFrame<'a> {
    sheet: u32,
    row: u64,
    #[serde(borrow)]
    cells: &'a serde_json::value::RawValue,
    #[serde(default)]
    stored: u64,
}

#[derive(Serialize, Deserialize)]
struct KeysFrame {
    sheet: u32,
    slot: i32,
    bucket: u32,
    buckets: u32,
    entries: String,
}

#[derive(Serialize, Deserialize)]
struct SheetStartFrame {
    index: u32,
    name: String,
    hidden: bool,
}

/// One decoded line.
pub(super) enum Frame<'a> {
    Event(ParseEvent<'a>),
    Done(ParseSummary),
    Failed(ParseFailure),
}

/// Turns lines back into events, numbering the rows of the current sheet.
#[derive(Default)]
pub(super) struct FrameDecoder {
    sheet: u32,
    next_row: u64,
}

impl FrameDecoder {
    fn row<'a>(&mut self, values: &'a str) -> Frame<'a> {
        let index = self.next_row;
        self.next_row += 1;
        Frame::Event(ParseEvent::Row {
            sheet: self.sheet,
            index,
            values: Cow::Borrowed(values),
        })
    }

    /// Decodes one line (without its newline).
    pub(super) fn decode<'a>(&mut self, line: &'a str) -> anyhow::Result<Frame<'a>> {
        // Rows are nearly every frame: recognise them first, with a two-byte compare.
        if let Some(values) = line.strip_prefix("R\t") {
            return Ok(self.row(values));
        }
        let (tag, rest) = line
            .split_once('\t')
            .ok_or_else(|| anyhow!("parse child wrote an unframed line"))?;
        Ok(match tag {
            "S" => {
                let s: SheetStartFrame = serde_json::from_str(rest).context("sheet start frame")?;
                self.sheet = s.index;
                self.next_row = 0;
                Frame::Event(ParseEvent::SheetStart {
                    index: s.index,
                    name: s.name,
                    hidden: s.hidden,
                })
            }
            "E" => Frame::Event(ParseEvent::SheetEnd(
                serde_json::from_str::<SheetSummary>(rest).context("sheet end frame")?,
            )),
            "X" => Frame::Event(ParseEvent::Invalid(
                serde_json::from_str(rest).context("error record frame")?,
            )),
            "J" => {
                let r: RejectedFrame<'_> =
                    serde_json::from_str(rest).context("rejected row frame")?;
                Frame::Event(ParseEvent::Rejected {
                    sheet: r.sheet,
                    row: r.row,
                    cells: Cow::Borrowed(r.cells.get()),
                    stored: r.stored,
                })
            }
            "K" => {
                let k: KeysFrame = serde_json::from_str(rest).context("key index frame")?;
                Frame::Event(ParseEvent::Keys {
                    sheet: k.sheet,
                    slot: k.slot,
                    bucket: k.bucket,
                    buckets: k.buckets,
                    entries: BASE64.decode(k.entries).context("key index entries")?,
                })
            }
            "O" => {
                let (row, faults) = rest
                    .split_once(' ')
                    .ok_or_else(|| anyhow!("parse child wrote a garbled origin frame"))?;
                Frame::Event(ParseEvent::Origin {
                    row: row.parse().context("origin frame's row")?,
                    faults: faults.parse().context("origin frame's errors")?,
                })
            }
            "V" => Frame::Event(ParseEvent::NeedsReview(
                serde_json::from_str(rest).context("review frame")?,
            )),
            "D" => Frame::Done(serde_json::from_str(rest).context("summary frame")?),
            "F" => Frame::Failed(serde_json::from_str(rest).context("failure frame")?),
            other => bail!("parse child wrote an unknown frame tag {other:?}"),
        })
    }
}

/// Writes one event as a line. Rows carry neither sheet nor index: the parser emits them in
/// order from 0 after their sheet's start, which the decoder relies on (and a test checks).
pub(super) fn encode_event(out: &mut impl Write, event: ParseEvent<'_>) -> io::Result<()> {
    match event {
        ParseEvent::Row { values, .. } => {
            out.write_all(b"R\t")?;
            out.write_all(values.as_bytes())?;
        }
        ParseEvent::SheetStart {
            index,
            name,
            hidden,
        } => {
            out.write_all(b"S\t")?;
            serde_json::to_writer(
                &mut *out,
                &SheetStartFrame {
                    index,
                    name,
                    hidden,
                },
            )?;
        }
        ParseEvent::SheetEnd(summary) => {
            out.write_all(b"E\t")?;
            serde_json::to_writer(&mut *out, &summary)?;
        }
        ParseEvent::Invalid(error) => {
            out.write_all(b"X\t")?;
            serde_json::to_writer(&mut *out, &error)?;
        }
        ParseEvent::Rejected {
            sheet,
            row,
            cells,
            stored,
        } => {
            out.write_all(b"J\t")?;
            let cells = serde_json::value::RawValue::from_string(cells.into_owned())?;
            serde_json::to_writer(
                &mut *out,
                &RejectedFrame {
                    sheet,
                    row,
                    cells: &cells,
                    stored,
                },
            )?;
        }
        ParseEvent::Keys {
            sheet,
            slot,
            bucket,
            buckets,
            entries,
        } => {
            out.write_all(b"K\t")?;
            serde_json::to_writer(
                &mut *out,
                &KeysFrame {
                    sheet,
                    slot,
                    bucket,
                    buckets,
                    entries: BASE64.encode(entries),
                },
            )?;
        }
        ParseEvent::NeedsReview(review) => {
            out.write_all(b"V\t")?;
            serde_json::to_writer(&mut *out, &review)?;
        }
        ParseEvent::Origin { row, faults } => {
            write!(out, "O\t{row} {faults}")?;
        }
    }
    out.write_all(b"\n")
}

/// Writes a parse's last line: its summary or its failure.
pub(super) fn encode_outcome(
    out: &mut impl Write,
    outcome: &Result<ParseSummary, ParseFailure>,
) -> io::Result<()> {
    match outcome {
        Ok(summary) => {
            out.write_all(b"D\t")?;
            serde_json::to_writer(&mut *out, summary)?;
        }
        Err(failure) => {
            out.write_all(b"F\t")?;
            serde_json::to_writer(&mut *out, failure)?;
        }
    }
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::TaskErrorCode;

    #[test]
    fn frames_round_trip_with_rows_numbered_per_sheet() {
        let mut buf = Vec::new();
        let start = |index| ParseEvent::SheetStart {
            index,
            name: format!("S\t{index}"),
            hidden: true,
        };
        let row = |sheet, index, values: &'static str| ParseEvent::Row {
            sheet,
            index,
            values: Cow::Borrowed(values),
        };
        let events = vec![
            start(0),
            row(0, 0, r#"["a\tb",null,1]"#),
            row(0, 1, "[2]"),
            start(3),
            row(3, 0, "[3]"),
            ParseEvent::Invalid(crate::parse::ErrorRecord {
                sheet: 3,
                row: 7,
                column: Some("amount\t€".into()),
                field: Some("amount".into()),
                value: Some("twelve\n".into()),
                code: "type-error".into(),
                constraint: None,
                message: "amount: \"twelve\" is not a number".into(),
                transformed: Some("twelve".into()),
            }),
            ParseEvent::Rejected {
                sheet: 3,
                row: 7,
                cells: Cow::Borrowed(r#"["twelve",null,1.5]"#),
                stored: 5,
            },
            ParseEvent::Keys {
                sheet: 3,
                slot: -1,
                bucket: 0,
                buckets: 1,
                entries: vec![1, 2, 3],
            },
            row(3, 1, "[4]"),
            ParseEvent::NeedsReview(shared::domain::review::Review {
                reason: "required_field_unmapped".into(),
                sheet: "Sheet\t1".into(),
                sheet_index: Some(0),
                layout: None,
                header_row: 3,
                columns: vec![shared::domain::review::ReviewColumn {
                    index: 0,
                    name: "Invoice\tNo.".into(),
                    samples: vec!["A-1\n".into()],
                }],
                suggested_mapping: vec![shared::domain::review::SuggestedField {
                    field: "invoice".into(),
                    column_index: None,
                    how: None,
                    confidence: 0.0,
                }],
                values: vec![shared::domain::review::ReviewValues {
                    allowed: vec!["true".into(), "false".into()],
                    field: "paid".into(),
                    unknown: vec!["ja\t".into()],
                }],
            }),
        ];
        for e in events.clone() {
            assert!(encode_event(&mut buf, e).is_ok());
        }
        let text = String::from_utf8(buf).expect("frames are UTF-8");
        let mut decoder = FrameDecoder::default();
        let decoded: Vec<ParseEvent<'_>> = text
            .split_terminator('\n')
            .filter_map(|l| match decoder.decode(l) {
                Ok(Frame::Event(e)) => Some(e),
                _ => None,
            })
            .collect();
        assert_eq!(decoded, events);
    }

    #[test]
    fn outcomes_round_trip() {
        let failure = ParseFailure::new(TaskErrorCode::CorruptFile, "bad\tzip\n");
        for outcome in [Ok(ParseSummary::default()), Err(failure)] {
            let mut buf = Vec::new();
            assert!(encode_outcome(&mut buf, &outcome).is_ok());
            let text = String::from_utf8(buf).expect("frames are UTF-8");
            let line = text.strip_suffix('\n').expect("one line");
            let decoded = match FrameDecoder::default().decode(line) {
                Ok(Frame::Done(summary)) => Ok(summary),
                Ok(Frame::Failed(failure)) => Err(failure),
                _ => panic!("not an outcome: {line}"),
            };
            assert_eq!(decoded, outcome);
        }
    }
}
