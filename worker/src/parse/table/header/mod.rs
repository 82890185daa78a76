//! The header phase every reader goes through. A reader hands over its first rows (at most
//! [`MAX_ROWS`] and [`MAX_BYTES`] of text, leading blank rows not counted) as texts beside its
//! own form of the row; once it has enough, [`HeaderPhase::decide`] finds the header among them
//! ([`detect`]) and gives back the rows after it, which the reader then reads as data exactly as
//! the rows that follow from its stream. So the header is decided once for every format, only
//! the first rows are ever buffered, and the rest of the file streams as before. Row numbers are
//! the ones a person sees, given by the reader with each row.

mod detect;
mod look;
mod shape;

use shared::domain::layout_override::ForcedHeader;
use template::Template;

pub(crate) use look::{is_total_label, normalise, Look};

/// The most rows the phase buffers before it decides.
pub(crate) const MAX_ROWS: usize = 50;

/// The most bytes of cell text it buffers before it decides (a few huge rows are enough).
pub(crate) const MAX_BYTES: usize = 1 << 20;

/// What a cell costs the phase besides its text, as counted against [`MAX_BYTES`].
const CELL_OVERHEAD: usize = 16;

/// One buffered row: its 1-based number in the file and the reader's own form of it.
pub(crate) struct Buffered<T> {
    pub number: u64,
    pub row: T,
}

/// The header as decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    /// The column names as in the file (blank where a column has none; a group row's text
    /// prefixes the names under it).
    pub names: Vec<String>,
    /// The 1-based row of the header (the lowest of a header's rows); 0 when there is none.
    pub row: u64,
    /// Rows the header spans: 1, 2 or 3 with group rows, 0 for a table without a header.
    pub rows: u32,
    /// The table's first row: its header's top row, or its first data row without a header.
    pub first_row: u64,
}

/// What the phase decided: the header, and the buffered rows after it, to be read as data.
pub(crate) struct Decision<T> {
    pub header: Header,
    pub data: Vec<Buffered<T>>,
    /// The texts of the data rows buffered, by column (blank cells left out, at most
    /// [`MAX_SAMPLES`] a column): what a template's mapping weighs the columns' values by.
    pub samples: Vec<Vec<String>>,
}

/// The most sample values kept per column.
pub(crate) const MAX_SAMPLES: usize = 20;

/// Whether a table may have no header row (see [`detect`] for why workbooks may not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Headerless {
    Allowed,
    Never,
}

/// The first rows of a sheet, waiting for the header to be decided.
pub(crate) struct HeaderPhase<T> {
    rows: Vec<Buffered<T>>,
    texts: Vec<Vec<String>>,
    bytes: usize,
    headerless: Headerless,
    /// A person's choice of header, which replaces detection.
    forced: ForcedHeader,
}

impl<T> HeaderPhase<T> {
    pub fn new(headerless: Headerless) -> Self {
        Self {
            rows: Vec::new(),
            texts: Vec::new(),
            bytes: 0,
            headerless,
            forced: ForcedHeader::Detect,
        }
    }

    /// Takes `forced` as the header instead of detecting it. Rows above a forced header row
    /// are not buffered: they are set aside whatever they hold, so a header far down the
    /// sheet costs no memory.
    pub fn forced(mut self, forced: ForcedHeader) -> Self {
        self.forced = forced;
        self
    }

    /// Buffers row `number`, whose cells read as `texts` (empty for a blank row). Returns
    /// whether the phase now holds enough to decide.
    pub fn push(&mut self, number: u64, texts: Vec<String>, row: T) -> bool {
        if matches!(self.forced, ForcedHeader::Row(header) if number < header) {
            return false;
        }
        let blank = texts.iter().all(|t| t.trim().is_empty());
        if blank && self.rows.is_empty() {
            // Blank rows above everything are nothing: the header may lie far below them.
            return false;
        }
        // Each cell costs its text and its bookkeeping (a `String`, a look, a normalised
        // word), so a very wide row fills the phase as long text does.
        self.bytes += texts.iter().map(|t| t.len() + CELL_OVERHEAD).sum::<usize>();
        self.texts.push(if blank { Vec::new() } else { texts });
        self.rows.push(Buffered { number, row });
        self.rows.len() >= MAX_ROWS || self.bytes >= MAX_BYTES
    }

    /// Decides the header, with a template's fields (their normalised labels, see
    /// [`template_labels`]) preferring the row that names them. `None` when every row was
    /// blank.
    pub fn decide(self, labels: &[Vec<String>]) -> Option<Decision<T>> {
        if self.forced != ForcedHeader::Detect {
            return self.decide_forced();
        }
        let shapes: Vec<shape::Shape> = (self.texts.iter().zip(&self.rows))
            .map(|(texts, row)| shape::Shape::of(texts, row.number))
            .collect();
        let headerless = self.headerless == Headerless::Allowed;
        let choice = detect::choose(&shapes, labels, headerless)?;
        let top = choice.groups.first().copied().or(choice.header);
        let header = match choice.header {
            Some(h) => Header {
                names: merged_names(&self.texts, &choice.groups, h),
                row: self.rows[h].number,
                rows: choice.groups.len() as u32 + 1,
                first_row: self.rows[top.unwrap_or(h)].number,
            },
            None => Header {
                names: vec![String::new(); self.texts[choice.data_from].len()],
                row: 0,
                rows: 0,
                first_row: self.rows[choice.data_from].number,
            },
        };
        let samples = samples(&self.texts[choice.data_from..]);
        let data = self.rows.into_iter().skip(choice.data_from).collect();
        Some(Decision {
            header,
            data,
            samples,
        })
    }
}

impl<T> HeaderPhase<T> {
    /// The header a person chose: the forced row (blank names when it is blank: it was not
    /// buffered, the first row buffered is below it), or none, the table starting at the
    /// first non-blank row. `None` when no row was buffered (every row blank, or the forced
    /// header past the sheet's end).
    fn decide_forced(self) -> Option<Decision<T>> {
        let first = self.rows.first()?.number;
        let (header, data_from) = match self.forced {
            ForcedHeader::Row(row) if first == row => (
                Header {
                    names: self.texts[0].clone(),
                    row,
                    rows: 1,
                    first_row: row,
                },
                1,
            ),
            ForcedHeader::Row(row) => (
                Header {
                    names: Vec::new(),
                    row,
                    rows: 1,
                    first_row: row,
                },
                0,
            ),
            ForcedHeader::None | ForcedHeader::Detect => {
                let width = self.texts.iter().map(Vec::len).max().unwrap_or(0);
                (
                    Header {
                        names: vec![String::new(); width],
                        row: 0,
                        rows: 0,
                        first_row: first,
                    },
                    0,
                )
            }
        };
        let samples = samples(&self.texts[data_from..]);
        let data = self.rows.into_iter().skip(data_from).collect();
        Some(Decision {
            header,
            data,
            samples,
        })
    }
}

/// The non-blank texts of `rows`, by column, at most [`MAX_SAMPLES`] a column.
fn samples(rows: &[Vec<String>]) -> Vec<Vec<String>> {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut columns = vec![Vec::new(); width];
    for row in rows {
        for (column, text) in columns.iter_mut().zip(row) {
            if column.len() < MAX_SAMPLES && !text.trim().is_empty() {
                column.push(text.clone());
            }
        }
    }
    columns
}

/// The header's names, each prefixed by the group cell spanning its column (`Q1 sales`): a
/// group's text stands in its first column and covers the columns up to the next group's.
fn merged_names(texts: &[Vec<String>], groups: &[usize], header: usize) -> Vec<String> {
    let mut names = texts[header].clone();
    for &g in groups.iter().rev() {
        let mut current: Option<&str> = None;
        for (c, name) in names.iter_mut().enumerate() {
            if let Some(group) = texts[g].get(c).map(|t| t.trim()).filter(|t| !t.is_empty()) {
                current = Some(group);
            }
            let Some(group) = current else { continue };
            let lower = name.trim();
            *name = if lower.is_empty() {
                group.to_owned()
            } else {
                format!("{group} {lower}")
            };
        }
    }
    names
}

/// A template's fields as header detection compares them: each field's name, title and
/// alternate names, normalised.
pub(crate) fn template_labels(template: &Template) -> Vec<Vec<String>> {
    template
        .fields
        .iter()
        .map(|f| {
            std::iter::once(&f.name)
                .chain(&f.title)
                .chain(&f.alternate_names)
                .map(|l| normalise(l))
                .collect()
        })
        .collect()
}

/// Whether a row after blank rows may end the table (a second table's header, or notes): its
/// cells are all names (`cells` its non-empty ones), and one of them stands in a column whose
/// values so far are all typed (`typed(c)`), or it is a single cell under a table of several
/// columns (`width`): a note, a source line, a title. Rows of values, and rows of text under
/// text columns, stay data; and even a row that may end the table ends it only once the rows
/// after it say so (`layout::Tracker::resolve`).
pub(crate) fn ends_table<'t>(
    cells: impl Iterator<Item = (usize, &'t str)>,
    width: usize,
    typed: impl Fn(usize) -> bool,
) -> bool {
    let (mut over_typed, mut filled) = (false, 0);
    for (c, text) in cells {
        match Look::of(text) {
            Look::Empty => {}
            Look::Text => {
                over_typed |= typed(c);
                filled += 1;
            }
            _ => return false,
        }
    }
    over_typed || (filled == 1 && width >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(csv: &str) -> HeaderPhase<usize> {
        let mut p = HeaderPhase::new(Headerless::Allowed);
        for (i, line) in csv.lines().enumerate() {
            p.push(i as u64 + 1, line.split(',').map(String::from).collect(), i);
        }
        p
    }

    #[test]
    fn the_rows_below_the_header_are_its_columns_samples() {
        let d = phase("Sales report\n\nid,amount\n1,2\n\n3,\n").decide(&[]);
        let d = d.expect("a header");
        let texts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(d.samples, [texts(&["1", "3"]), texts(&["2"])]);
    }

    #[test]
    fn a_title_is_above_the_table_and_rows_after_the_header_are_data() {
        let d = phase("Sales report\n\nid,amount\n1,2\n\n3,4\n").decide(&[]);
        let d = d.expect("a header");
        assert_eq!(
            d.header,
            Header {
                names: vec!["id".into(), "amount".into()],
                row: 3,
                rows: 1,
                first_row: 3,
            }
        );
        let numbers: Vec<u64> = d.data.iter().map(|b| b.number).collect();
        assert_eq!(numbers, [4, 5, 6]);
    }

    #[test]
    fn group_rows_prefix_the_names_they_span() {
        let d = phase("region,Q1,,Q2,\n,sales,units,sales,units\nNorth,1,2,3,4\nS,5,6,7,8\n")
            .decide(&[]);
        assert_eq!(
            d.map(|d| d.header.names),
            Some(
                ["region", "Q1 sales", "Q1 units", "Q2 sales", "Q2 units"]
                    .map(String::from)
                    .to_vec()
            )
        );
    }

    #[test]
    fn a_table_without_a_header_is_all_data() {
        let d = phase("1,2,3\n4,5,6\n").decide(&[]).expect("rows");
        assert_eq!(
            (d.header.row, d.header.names.len(), d.data.len()),
            (0, 3, 2)
        );
    }

    #[test]
    fn blank_rows_alone_decide_nothing() {
        assert!(phase("\n,,\n").decide(&[]).is_none());
    }

    #[test]
    fn the_buffer_is_bounded() {
        let mut p = HeaderPhase::new(Headerless::Allowed);
        let full = (0..MAX_ROWS * 2).position(|i| p.push(i as u64, vec!["x".into()], ()));
        assert_eq!(full, Some(MAX_ROWS - 1));
        let mut p = HeaderPhase::new(Headerless::Allowed);
        assert!(p.push(1, vec!["x".repeat(MAX_BYTES)], ()));
    }

    fn forced(csv: &str, forced: ForcedHeader) -> Option<Decision<usize>> {
        let mut p = HeaderPhase::new(Headerless::Never).forced(forced);
        for (i, line) in csv.lines().enumerate() {
            let texts = if line.is_empty() {
                Vec::new()
            } else {
                line.split(',').map(String::from).collect()
            };
            p.push(i as u64 + 1, texts, i);
        }
        p.decide(&[])
    }

    #[test]
    fn a_forced_header_row_is_the_header_and_the_rows_above_are_not_kept() {
        // Detection would take row 1; the person says row 3.
        let d = forced("a,b\n1,2\nyear,value\n2020,5\n", ForcedHeader::Row(3));
        let d = d.expect("a header");
        assert_eq!((d.header.row, d.header.first_row), (3, 3));
        assert_eq!(d.header.names, ["year", "value"]);
        let numbers: Vec<u64> = d.data.iter().map(|b| b.number).collect();
        assert_eq!(numbers, [4]);
    }

    #[test]
    fn a_blank_forced_header_row_names_no_column() {
        let d = forced("title\n\n1,2\n", ForcedHeader::Row(2)).expect("a header");
        assert_eq!((d.header.row, d.header.names.len()), (2, 0));
        assert_eq!(d.data.len(), 1);
    }

    #[test]
    fn no_header_makes_every_row_data_even_in_a_workbook() {
        let d = forced("\nid,name\n1,x\n", ForcedHeader::None).expect("rows");
        assert_eq!((d.header.row, d.header.rows, d.header.first_row), (0, 0, 2));
        assert_eq!(d.data.len(), 2);
        assert!(forced("a\n", ForcedHeader::Row(5)).is_none());
    }
}
