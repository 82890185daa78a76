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

use super::look::Look;
use super::shape::Shape;

/// How much better a later row must score than the first wide row to be taken instead.
const MARGIN: f64 = 0.35;

/// How many rows below a candidate are compared with it.
const BELOW: usize = 10;

/// How many candidate rows are scored.
const MAX_CANDIDATES: usize = 25;

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
    // A template names its header wherever it stands: it is looked for in every row.
    let end = if labels.is_empty() {
        first_table_end(rows, min_filled)
    } else {
        rows.len()
    };
    let candidates: Vec<usize> = (first..end)
        .filter(|&i| is_candidate(rows, i, min_filled))
        .take(MAX_CANDIDATES)
        .collect();
    let mut best: Option<(usize, f64)> = None;
    for &i in &candidates {
        let score = score(rows, i, width, labels);
        best = match best {
            Some((_, b)) if score <= b + MARGIN => best,
            _ => Some((i, score)),
        };
    }
    let first_candidate = candidates.first().copied().unwrap_or(first);
    let mut header = best.map_or(first, |(i, _)| i);
    // Rows of the table's kind above the header would be set aside: when they outnumber the
    // rows under it, the header found is not worth them.
    if header != first_candidate && data_like_above(rows, header, min_filled) {
        header = first_candidate;
    }
    if looks_like_values(rows, header, labels) {
        // A text file whose table starts with values has no header (rows above it are
        // titles and metadata); a workbook keeps its first row, as it always did.
        header = if headerless { first_candidate } else { first };
        if headerless && looks_like_values(rows, header, labels) {
            return Some(Choice {
                header: None,
                groups: Vec::new(),
                data_from: header,
            });
        }
    }
    if is_lower_line(rows, header) {
        header += 1;
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

/// Whether row `i` may be the header: as full as half the table, or a sparse row of names
/// right above values (a header naming only some of its columns); never a metadata line.
fn is_candidate(rows: &[Shape], i: usize, min_filled: usize) -> bool {
    let row = &rows[i];
    if row.meta || row.is_blank() {
        return false;
    }
    if row.filled >= min_filled {
        return true;
    }
    let names = (0..row.looks.len()).filter(|&c| row.is_name(c)).count();
    names >= 2
        && !row.has_values()
        && rows
            .get(i + 1)
            .is_some_and(|next| next.number == row.number + 1 && next.has_values())
}

/// The end (exclusive) of the first block of rows (rows between blank rows) that holds a
/// table: two rows or more as full as half the table and holding values (`Company,ACME`
/// lines above the table are not one). The header is looked for up to there, so a second
/// table further down, however well its header scores, never displaces the first.
fn first_table_end(rows: &[Shape], min_filled: usize) -> usize {
    let mut full = 0;
    for (i, row) in rows.iter().enumerate() {
        let gap = i > 0 && (row.is_blank() || row.number > rows[i - 1].number + 1);
        if gap && full >= 2 {
            return i;
        }
        if gap {
            full = 0;
        }
        if !row.meta && row.filled >= min_filled && row.has_values() {
            full += 1;
        }
    }
    rows.len()
}

/// Whether more rows above `header` look like data (as full as half the table, with values)
/// than under it (notes under the table do not count).
fn data_like_above(rows: &[Shape], header: usize, min_filled: usize) -> bool {
    let like_data = |r: &&Shape| !r.meta && r.filled >= min_filled && r.has_values();
    let above = rows[..header].iter().filter(like_data).count();
    let below = rows[header + 1..].iter().filter(like_data).count();
    above > below
}

/// Whether the row under `header` is the lower line of a two-line header: names only, right
/// under it, with values under them, and grouped by the header's row ([`is_group_row`]: the
/// upper line spans it, or holds the label columns it leaves empty).
fn is_lower_line(rows: &[Shape], header: usize) -> bool {
    let (Some(upper), Some(lower)) = (rows.get(header), rows.get(header + 1)) else {
        return false;
    };
    let names = (0..lower.looks.len()).filter(|&c| lower.is_name(c)).count();
    lower.number == upper.number + 1
        && names >= 2
        && !lower.has_values()
        && rows[header + 2..]
            .iter()
            .find(|r| !r.is_blank())
            .is_some_and(Shape::has_values)
        && is_group_row(upper, lower)
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
/// some of its values sit over values of the same look. A year (`2024`, `1990.0`) over values
/// that are not years is a name: reports head columns with years.
fn looks_like_values(rows: &[Shape], i: usize, labels: &[Vec<String>]) -> bool {
    let row = &rows[i];
    if template_match(row, labels) > 0.0 {
        return false;
    }
    let (mut agree, mut differ) = (0, 0);
    for (c, look) in row.looks.iter().enumerate() {
        let Some(dominant) = dominant_look(below(rows, i).filter_map(|r| r.looks.get(c).copied()))
        else {
            continue;
        };
        let years_below = below(rows, i).any(|r| r.years.get(c) == Some(&true));
        match look {
            Look::Text if dominant.is_value() => differ += 1,
            Look::Number if row.years[c] && !years_below && dominant.is_value() => differ += 1,
            l if l.is_value() && *l == dominant => agree += 1,
            _ => {}
        }
    }
    differ == 0 && agree > 0
}

/// The look most non-empty cells of a column have, if at least 60 % of them have it.
fn dominant_look(looks: impl Iterator<Item = Look>) -> Option<Look> {
    let mut counts = [0usize; 6];
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
            Look::Missing,
        ][k]
    })
}

/// Whether `row`, right above `header`, groups its columns (`Q1` over `Sales`, `Units`; years
/// over `Male`, `Female`): two names or more and no values, fewer names than the header's
/// unless it names the label columns the header leaves empty, and at least one spanning the
/// empty cells after it. A lone cell is a title, wherever it stands.
fn is_group_row(row: &Shape, header: &Shape) -> bool {
    if row.is_blank() || row.filled < 2 || row.span() > header.looks.len() {
        return false;
    }
    let named = |c: usize| header.looks.get(c).is_some_and(|l| *l != Look::Empty);
    // Years are group names only in a row whose text stands over label columns alone
    // (`Region,2019,,2020,`); beside other text (`Report,2020`) a year is a value.
    let years_are_names = (0..row.looks.len()).all(|c| row.looks[c] != Look::Text || !named(c));
    let is_name =
        |c: usize| row.looks.get(c) == Some(&Look::Text) || (years_are_names && row.years[c]);
    let values = (0..row.looks.len()).any(|c| row.looks[c].is_value() && !is_name(c));
    let labels_above_empty = (0..row.looks.len()).any(|c| is_name(c) && !named(c));
    if values || (row.filled >= header.filled && !labels_above_empty) {
        return false;
    }
    (0..row.looks.len()).any(|c| {
        is_name(c) && row.looks.get(c + 1).is_none_or(|l| *l == Look::Empty) && named(c + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::super::look::normalise;
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
    fn a_narrow_first_row_over_values_is_a_title_in_text_and_the_header_in_a_workbook() {
        let rows = shapes("a\n1,1,1\n1,1,1\n");
        let text = choose(&rows, &[], true);
        assert_eq!(text.map(|c| (c.header, c.data_from)), Some((None, 1)));
        let workbook = choose(&rows, &[], false);
        assert_eq!(workbook.and_then(|c| c.header), Some(0));
    }

    #[test]
    fn years_exported_as_decimals_under_a_title_are_the_header() {
        let csv =
            "Table 3. Exports (million USD)\nCountry,1989.0,1990.0\nFrance,1.5,2.5\nItaly,3.5,4\n";
        assert_eq!(header_of(csv), Some(1));
        assert_eq!(
            header_of(",1989.0,1990.0\nFrance,1.5,2.5\nItaly,3.5,4\n"),
            Some(0)
        );
    }

    #[test]
    fn a_sparse_header_under_metadata_lines_is_the_header() {
        let csv = "Station:,EDW\nElevation:,2\nDate,Hour,,,Wind,\n\
                   2001-01-01,1,2,3,4,5\n2001-01-01,2,2,3,4,5\n2001-01-01,3,2,3,4,5\n";
        assert_eq!(header_of(csv), Some(2));
    }

    #[test]
    fn names_ending_in_colons_are_a_header_not_metadata() {
        assert_eq!(header_of("Name:,Age:\nAnn,3\nBob,4\n"), Some(0));
    }

    #[test]
    fn values_under_metadata_lines_have_no_header() {
        let c = choose(
            &shapes("Unit: mm\nStation: 260\n2001,1,5.5\n2001,2,6.5\n"),
            &[],
            true,
        );
        assert_eq!(c.map(|c| (c.header, c.data_from)), Some((None, 2)));
    }

    #[test]
    fn a_second_tables_header_never_displaces_the_first() {
        let csv = "Size,Households,Share\n1,2024,0.5\n2,12,0.25\n\n\
                   Region,Owner,Rented,Other\nNorth,1,2,3\n";
        assert_eq!(header_of(csv), Some(0));
    }

    #[test]
    fn the_lower_line_of_a_two_line_header_is_the_header_under_its_groups() {
        let c = choose(
            &shapes(
                "Area,Age,Population,,\n,,Male,Female,Total\nNorth,0-14,1,2,3\nSouth,15-64,4,5,9\n",
            ),
            &[],
            true,
        );
        assert_eq!(c.map(|c| (c.header, c.groups)), Some((Some(1), vec![0])));
        let years = choose(
            &shapes("Region,2019,,2020,\n,Male,Female,Male,Female\nNorth,1,2,3,4\nSouth,5,6,7,8\n"),
            &[],
            true,
        );
        assert_eq!(
            years.map(|c| (c.header, c.groups)),
            Some((Some(1), vec![0]))
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
