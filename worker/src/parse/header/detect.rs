//! Which of a sheet's first rows is its header, after DuckDB's sniffer and the importers that
//! scan the first rows for the most complete one. A header is as wide as the table below it,
//! its cells read as names (text, distinct, short) where the rows below hold values, and, with a
//! template, its cells are the template's field names. Rows narrower than half the table (a
//! title, a date line, a note) are never the header. The first row wide enough is the header
//! unless a later one is clearly better ([`MARGIN`]): a clean file's header is its first row,
//! and must stay so. When the row chosen reads as the values below it (`1,2,3` over numbers),
//! the first non-blank row is the header, as it always was, except in a text file whose first
//! row is that row of values: such a file has no header, and the table starts with data.
//! Workbooks keep their first row as the header even then: their typed cells make a row of
//! numbers as likely to be the author's column titles (years, codes) as data.

use super::look::{normalise, Look};

/// How much better a later row must score than the first wide row to be taken instead.
const MARGIN: f64 = 0.35;

/// How many rows below a candidate are compared with it.
const BELOW: usize = 10;

/// How many candidate rows are scored.
const MAX_CANDIDATES: usize = 25;

/// A name longer than this reads as a sentence (a note), not a column's name.
const MAX_NAME_CHARS: usize = 40;

/// One buffered row as detection reads it.
pub(super) struct Shape {
    /// The row's 1-based number: group rows lie right above the header, with no gap.
    number: u64,
    looks: Vec<Look>,
    /// Non-empty cells.
    filled: usize,
    /// Normalised texts, for template matching.
    words: Vec<String>,
    texts_short_and_distinct: f64,
}

impl Shape {
    pub fn of(texts: &[String], number: u64) -> Shape {
        let looks: Vec<Look> = texts.iter().map(|t| Look::of(t)).collect();
        let filled = looks.iter().filter(|l| **l != Look::Empty).count();
        let words: Vec<String> = texts.iter().map(|t| normalise(t)).collect();
        let mut names: Vec<&str> = texts
            .iter()
            .zip(&looks)
            .filter(|(t, l)| **l == Look::Text && t.trim().chars().count() <= MAX_NAME_CHARS)
            .map(|(t, _)| t.trim())
            .collect();
        let short = names.len();
        names.sort_unstable();
        names.dedup();
        // Repeated names are common under group rows (`sales`, `units` under each quarter),
        // so repeats only halve a row's share of names.
        let texts_short_and_distinct = if filled == 0 {
            0.0
        } else {
            let distinct = names.len() as f64 / short.max(1) as f64;
            (short as f64 / filled as f64) * (0.5 + 0.5 * distinct)
        };
        Shape {
            number,
            looks,
            filled,
            words,
            texts_short_and_distinct,
        }
    }

    fn is_blank(&self) -> bool {
        self.filled == 0
    }

    /// The cells up to the last non-empty one.
    fn span(&self) -> usize {
        self.looks
            .iter()
            .rposition(|l| *l != Look::Empty)
            .map_or(0, |i| i + 1)
    }
}

/// What detection decided, as indices into the rows it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Choice {
    /// The header row; `None` when the table has none.
    pub header: Option<usize>,
    /// Group rows right above the header (a two- or three-row header), top first.
    pub groups: Vec<usize>,
    /// The first row of data (rows between the header and it are blank).
    pub data_from: usize,
}

/// Decides the header among `rows`. `labels` are the template's field labels, normalised
/// (empty without a template); `headerless` allows a table without a header. `None` when
/// every row is blank.
pub(super) fn choose(rows: &[Shape], labels: &[Vec<String>], headerless: bool) -> Option<Choice> {
    let first = rows.iter().position(|r| !r.is_blank())?;
    let width = table_width(rows);
    let min_filled = if width >= 2 {
        width.div_ceil(2).max(2)
    } else {
        1
    };
    let mut best: Option<(usize, f64)> = None;
    for i in (first..rows.len())
        .filter(|&i| rows[i].filled >= min_filled)
        .take(MAX_CANDIDATES)
    {
        let score = score(rows, i, width, labels);
        best = match best {
            Some((_, b)) if score <= b + MARGIN => best,
            _ => Some((i, score)),
        };
    }
    let mut header = best.map_or(first, |(i, _)| i);
    if looks_like_values(rows, header, labels) {
        if headerless && header == first {
            return Some(Choice {
                header: None,
                groups: Vec::new(),
                data_from: first,
            });
        }
        header = first;
    }
    let mut groups = Vec::new();
    let mut lower = header;
    while groups.len() < 2
        && lower > first
        && rows[lower - 1].number + 1 == rows[lower].number
        && is_group_row(&rows[lower - 1], &rows[header])
    {
        lower -= 1;
        groups.insert(0, lower);
    }
    Some(Choice {
        header: Some(header),
        groups,
        data_from: header + 1,
    })
}

/// The table's width: the widest span at least two rows share (one ragged row does not make
/// the table wider), else the widest.
fn table_width(rows: &[Shape]) -> usize {
    let mut spans: Vec<usize> = rows
        .iter()
        .filter(|r| !r.is_blank())
        .map(Shape::span)
        .collect();
    spans.sort_unstable_by(|a, b| b.cmp(a));
    spans
        .windows(2)
        .find(|w| w[0] == w[1])
        .map_or(spans.first().copied().unwrap_or(0), |w| w[0])
}

/// The non-blank rows below `i` that it is compared with.
fn below(rows: &[Shape], i: usize) -> impl Iterator<Item = &Shape> {
    rows[i + 1..].iter().filter(|r| !r.is_blank()).take(BELOW)
}

/// How much row `i` reads as the header of a table `width` wide.
fn score(rows: &[Shape], i: usize, width: usize, labels: &[Vec<String>]) -> f64 {
    let row = &rows[i];
    let fill = (row.filled as f64 / width.max(1) as f64).min(1.0);
    // Columns where the row holds a name and the rows below hold values.
    let mut differ = 0.0;
    for (c, look) in row.looks.iter().enumerate() {
        if *look != Look::Text {
            continue;
        }
        let (mut values, mut seen) = (0, 0);
        for r in below(rows, i) {
            match r.looks.get(c) {
                Some(l) if l.is_value() => {
                    values += 1;
                    seen += 1;
                }
                Some(Look::Text) => seen += 1,
                _ => {}
            }
        }
        if seen > 0 {
            differ += values as f64 / seen as f64;
        }
    }
    let differ = differ / width.max(1) as f64;
    fill + row.texts_short_and_distinct + differ + 3.0 * template_match(row, labels)
}

/// The share of the template's fields that one of the row's cells names.
fn template_match(row: &Shape, labels: &[Vec<String>]) -> f64 {
    if labels.is_empty() {
        return 0.0;
    }
    let named = labels
        .iter()
        .filter(|field| {
            field
                .iter()
                .any(|l| !l.is_empty() && row.words.iter().any(|w| w == l))
        })
        .count();
    named as f64 / labels.len() as f64
}

/// Whether row `i` is data rather than names: none of its cells is a name over values, and
/// some of its values sit over values of the same look. A year (`2024`) beside names is a
/// name too: reports head columns with years.
fn looks_like_values(rows: &[Shape], i: usize, labels: &[Vec<String>]) -> bool {
    let row = &rows[i];
    if template_match(row, labels) > 0.0 {
        return false;
    }
    let has_text = row.looks.contains(&Look::Text);
    let (mut agree, mut differ) = (0, 0);
    for (c, look) in row.looks.iter().enumerate() {
        let Some(dominant) = dominant_look(below(rows, i).filter_map(|r| r.looks.get(c).copied()))
        else {
            continue;
        };
        match look {
            Look::Text if dominant.is_value() => differ += 1,
            Look::Number if has_text && is_year(&row.words[c]) => {}
            l if l.is_value() && *l == dominant => agree += 1,
            _ => {}
        }
    }
    differ == 0 && agree > 0
}

fn is_year(word: &str) -> bool {
    word.len() == 4
        && word
            .parse::<u16>()
            .is_ok_and(|y| (1900..=2100).contains(&y))
}

/// The look most non-empty cells of a column have, if at least 60 % of them have it.
fn dominant_look(looks: impl Iterator<Item = Look>) -> Option<Look> {
    let mut counts = [0usize; 5];
    let mut total = 0;
    for l in looks.filter(|l| *l != Look::Empty) {
        counts[l as usize] += 1;
        total += 1;
    }
    let (k, n) = counts.iter().enumerate().max_by_key(|(_, n)| **n)?;
    (total > 0 && n * 10 >= total * 6).then(|| {
        [
            Look::Empty,
            Look::Text,
            Look::Number,
            Look::Date,
            Look::Bool,
        ][k]
    })
}

/// Whether `row`, right above `header`, groups its columns (`Q1` over `Sales`, `Units`):
/// two names or more, fewer than the header's, and at least one spanning the empty cells
/// after it. A lone cell is a title, wherever it stands.
fn is_group_row(row: &Shape, header: &Shape) -> bool {
    if row.is_blank()
        || row.filled >= header.filled
        || row.span() > header.looks.len()
        || row.looks.iter().any(|l| l.is_value())
    {
        return false;
    }
    if row.filled < 2 {
        return false;
    }
    let named = |c: usize| header.looks.get(c).is_some_and(|l| *l != Look::Empty);
    (0..row.looks.len()).any(|c| {
        row.looks[c] == Look::Text
            && row.looks.get(c + 1).is_none_or(|l| *l == Look::Empty)
            && named(c + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(csv: &str) -> Vec<Shape> {
        csv.lines()
            .enumerate()
            .map(|(i, line)| {
                let texts: Vec<String> = if line.is_empty() {
                    Vec::new()
                } else {
                    line.split(',').map(String::from).collect()
                };
                Shape::of(&texts, i as u64 + 1)
            })
            .collect()
    }

    fn header_of(csv: &str) -> Option<usize> {
        choose(&shapes(csv), &[], true).and_then(|c| c.header)
    }

    #[test]
    fn the_first_row_of_a_clean_file_is_its_header() {
        assert_eq!(header_of("id,name,amount\n1,a,2.5\n2,b,3\n"), Some(0));
        assert_eq!(header_of("name,city\nAnn,Paris\nBob,Rome\n"), Some(0));
        assert_eq!(header_of("a\n1\n2\n"), Some(0));
        assert_eq!(header_of("a,b\n"), Some(0));
    }

    #[test]
    fn title_and_date_lines_above_the_header_are_skipped() {
        let csv = "Monthly sales export\nGenerated 2026-11-01\n\nregion,product,units,price\n\
                   North,Widget,5,1.50\nSouth,Gadget,7,2.25\nEast,Widget,1,1.50\n";
        assert_eq!(header_of(csv), Some(3));
    }

    #[test]
    fn a_file_of_values_has_no_header() {
        let values = shapes("1,2.5,2024-01-01\n2,3.5,2024-01-02\n");
        let c = choose(&values, &[], true);
        assert_eq!(
            c,
            Some(Choice {
                header: None,
                groups: Vec::new(),
                data_from: 0
            })
        );
        let workbook = choose(&values, &[], false);
        assert_eq!(workbook.and_then(|c| c.header), Some(0));
    }

    #[test]
    fn a_narrow_first_row_over_values_stays_the_header() {
        assert_eq!(
            header_of(
                "a
1,1,1
1,1,1
"
            ),
            Some(0)
        );
    }

    #[test]
    fn years_heading_columns_are_names() {
        assert_eq!(
            header_of("region,2024,2025\nNorth,5,6\nSouth,7,8\n"),
            Some(0)
        );
    }

    #[test]
    fn a_group_row_above_the_names_is_part_of_the_header() {
        let c = choose(
            &shapes("region,Q1,,Q2,\n,sales,units,sales,units\nNorth,1,2,3,4\nSouth,5,6,7,8\n"),
            &[],
            true,
        );
        assert_eq!(c.map(|c| (c.header, c.groups)), Some((Some(1), vec![0])));
    }

    #[test]
    fn a_template_prefers_the_row_naming_its_fields() {
        let csv = "Customer,ACME\nInvoice No.,Amount\nA-1,5\nA-2,7\n";
        let labels = vec![vec![normalise("invoice_no")], vec![normalise("amount")]];
        let c = choose(&shapes(csv), &labels, true);
        assert_eq!(c.and_then(|c| c.header), Some(1));
    }
}
