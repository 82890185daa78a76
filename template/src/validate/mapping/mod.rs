//! Matching a template's fields to a file's header, the contract's `match` kinds in order: the
//! field's exact `name` (frictionless's own rule, case included), its exact `title`, either
//! once normalised ([`label::key`]: case, spacing, punctuation, NFKC, `No.`/`#`), its
//! `alternateNames` normalised, and last the most similar column with its similarity as the
//! confidence. Never two fields to one column. Before all of them come the header texts the
//! tenant's people taught the template ([`MatchKind::Learned`]), and after them the columns'
//! sampled values are weighed ([`values`]). What is not certain (a required field with no
//! column, two columns for one field, a match under [`FUZZY_THRESHOLD`]) waits for a person:
//! see [`super::review_reason`].

pub mod label;
pub mod values;

use super::super::Template;

/// Field index → column index in the file (`None`: the file has no column for the field).
pub type Mapping = Vec<Option<usize>>;

codes::code_enum! {
    /// How a field found its column (the contract's `match`).
    pub enum MatchKind as "lowercase" {
        Exact => "exact",
        Title => "title",
        /// Equal once both are normalised (case, spacing, punctuation, NFKC, `No.`/`#`/`number`).
        Normalized => "normalized",
        Alias => "alias",
        /// Similar enough, with a confidence below 1.
        Fuzzy => "fuzzy",
        /// Chosen by a person in a review.
        Confirmed => "confirmed",
        /// A mapping a person confirmed for the same template and header texts.
        Remembered => "remembered",
        /// A header text a person confirmed for the field in an earlier file (contract v1.3).
        Learned => "learned",
    }
}

/// Where one field was found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MappedField {
    /// Index into the template's fields.
    pub field: usize,
    pub column: Option<usize>,
    /// `None` when no column matched.
    pub how: Option<MatchKind>,
    /// 1.0 for a certain match, below for a fuzzy one, 0.0 for none.
    pub confidence: f64,
    /// Another column that matched the field as well as `column` did: a person must choose.
    pub competitor: Option<usize>,
}

/// A fuzzy match below this confidence is not taken without a review.
pub const FUZZY_THRESHOLD: f64 = 0.9;

/// The [`MappedField`]s of a mapping a person chose (`how` is [`MatchKind::Confirmed`] or
/// [`MatchKind::Remembered`]).
pub fn chosen(mapping: &Mapping, how: MatchKind) -> Vec<MappedField> {
    mapping
        .iter()
        .enumerate()
        .map(|(field, column)| MappedField {
            field,
            column: *column,
            how: column.map(|_| how),
            confidence: if column.is_some() { 1.0 } else { 0.0 },
            competitor: None,
        })
        .collect()
}

/// What besides the header texts tells which column is which field.
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'e> {
    /// (header text, field name) pairs people confirmed for the template: a column headed
    /// exactly so is that field's ([`MatchKind::Learned`]).
    pub learned: &'e [(String, String)],
    /// Sampled values of the file's columns, by column index (fewer entries than columns is
    /// fine): weighed by [`values::weigh`].
    pub samples: &'e [Vec<String>],
}

/// Matches every field of `t` (in field order) to a column of `header` by the header texts
/// alone: [`map_columns_with`] without evidence.
pub fn map_columns(t: &Template, header: &[&str]) -> Vec<MappedField> {
    map_columns_with(t, header, Evidence::default())
}

/// Matches every field of `t` (in field order) to a column of `header`: learned texts first,
/// then every field is tried at one kind before any is tried at the next, so a weaker kind
/// never takes a column a stronger one wants, and no column is given to two fields; last the
/// sampled values are weighed.
pub fn map_columns_with(t: &Template, header: &[&str], evidence: Evidence<'_>) -> Vec<MappedField> {
    let keys: Vec<String> = header.iter().map(|h| label::key(h)).collect();
    let mut taken = vec![false; header.len()];
    let mut mapped: Vec<MappedField> = (0..t.fields.len())
        .map(|field| MappedField {
            field,
            column: None,
            how: None,
            confidence: 0.0,
            competitor: None,
        })
        .collect();
    learned(t, header, evidence.learned, &mut taken, &mut mapped);
    by_name(t, header, &keys, &mut taken, &mut mapped);
    fuzzy(t, &keys, &mut taken, &mut mapped);
    values::weigh(t, &keys, evidence.samples, &mut taken, &mut mapped);
    mapped
}

/// Each field takes the first free column headed by a text learned for it; a second one with
/// another learned text competes (two texts a person gave the field, both in one file).
fn learned(
    t: &Template,
    header: &[&str],
    pairs: &[(String, String)],
    taken: &mut [bool],
    mapped: &mut [MappedField],
) {
    if pairs.is_empty() {
        return;
    }
    for m in mapped.iter_mut() {
        let name = t.fields[m.field].name.as_str();
        let is_learned =
            |c: usize| !taken[c] && pairs.iter().any(|(text, f)| f == name && text == header[c]);
        let mut found = (0..header.len()).filter(|&c| is_learned(c));
        let Some(first) = found.next() else {
            continue;
        };
        let competitor = found.find(|&c| header[c] != header[first]);
        taken[first] = true;
        *m = MappedField {
            field: m.field,
            column: Some(first),
            how: Some(MatchKind::Learned),
            confidence: 1.0,
            competitor,
        };
    }
}

/// The certain name matches: exact name, exact title, normalised, alternate names.
fn by_name(
    t: &Template,
    header: &[&str],
    keys: &[String],
    taken: &mut [bool],
    mapped: &mut [MappedField],
) {
    for how in [
        MatchKind::Exact,
        MatchKind::Title,
        MatchKind::Normalized,
        MatchKind::Alias,
    ] {
        for m in mapped.iter_mut().filter(|m| m.column.is_none()) {
            let field = &t.fields[m.field];
            let found = match how {
                // Exact texts: the first column that has it (a repeat is a duplicate label).
                MatchKind::Exact | MatchKind::Title => {
                    let label = match how {
                        MatchKind::Exact => Some(field.name.as_str()),
                        _ => field.title.as_deref(),
                    };
                    label
                        .and_then(|l| (0..header.len()).find(|&c| !taken[c] && header[c] == l))
                        .map(|c| (c, None))
                }
                MatchKind::Normalized => {
                    let labels = std::iter::once(&field.name).chain(&field.title);
                    by_key(labels, header, keys, taken)
                }
                _ => by_key(field.alternate_names.iter(), header, keys, taken),
            };
            if let Some((c, competitor)) = found {
                taken[c] = true;
                *m = MappedField {
                    field: m.field,
                    column: Some(c),
                    how: Some(how),
                    confidence: 1.0,
                    competitor,
                };
            }
        }
    }
}

/// The first free column whose key is that of one of `labels`, and another free column with a
/// different text and the same key (`Invoice No` beside `Invoice #`): which one is meant is for
/// a person to say.
fn by_key<'l>(
    labels: impl Iterator<Item = &'l String>,
    header: &[&str],
    keys: &[String],
    taken: &[bool],
) -> Option<(usize, Option<usize>)> {
    let wanted: Vec<String> = labels
        .map(|l| label::key(l))
        .filter(|k| !k.is_empty())
        .collect();
    let mut free = (0..keys.len()).filter(|&c| !taken[c] && wanted.contains(&keys[c]));
    let first = free.next()?;
    let competitor = free.find(|&c| header[c] != header[first]);
    Some((first, competitor))
}

/// Below this similarity a column is not even suggested for a field.
const FUZZY_FLOOR: f64 = 0.7;
/// A second column within this much of the best one competes with it.
const FUZZY_MARGIN: f64 = 0.05;

/// Fields still without a column take the most similar free column (best pairs first), with
/// the similarity as confidence; a second free column nearly as similar competes.
fn fuzzy(t: &Template, keys: &[String], taken: &mut [bool], mapped: &mut [MappedField]) {
    // Keys once per label, and empty header cells skipped: a row of 16,384 columns costs one
    // comparison per field label and non-empty cell.
    let labels = values::label_keys(t);
    let score = |field: usize, c: usize| {
        labels[field]
            .iter()
            .map(|l| label::similarity(l, &keys[c]))
            .fold(0.0, f64::max)
    };
    let open: Vec<usize> = mapped
        .iter()
        .filter(|m| m.column.is_none())
        .map(|m| m.field)
        .collect();
    let mut pairs: Vec<(f64, usize, usize)> = open
        .iter()
        .flat_map(|&f| {
            (0..keys.len())
                .filter(|&c| !taken[c] && !keys[c].is_empty())
                .map(move |c| (f, c))
        })
        .map(|(f, c)| (score(f, c), f, c))
        .filter(|(s, _, _)| *s >= FUZZY_FLOOR)
        .collect();
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for (s, f, c) in pairs.iter().copied() {
        if taken[c] || mapped[f].column.is_some() {
            continue;
        }
        taken[c] = true;
        mapped[f].column = Some(c);
        mapped[f].how = Some(MatchKind::Fuzzy);
        mapped[f].confidence = s;
    }
    for m in mapped
        .iter_mut()
        .filter(|m| m.how == Some(MatchKind::Fuzzy))
    {
        let best = m.confidence;
        m.competitor = pairs
            .iter()
            .find(|&&(s, f, c)| {
                f == m.field && Some(c) != m.column && !taken[c] && s >= best - FUZZY_MARGIN
            })
            .map(|&(_, _, c)| c);
    }
}

/// The [`Mapping`] of a [`map_columns`] result.
pub fn mapping(mapped: &[MappedField]) -> Mapping {
    let mut out = vec![None; mapped.len()];
    for m in mapped {
        if let Some(slot) = out.get_mut(m.field) {
            *slot = m.column;
        }
    }
    out
}
