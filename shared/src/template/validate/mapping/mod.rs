//! Matching a template's fields to a file's header: by exact `name` first (for every field),
//! then by `title`, then by `alternateNames`, never two fields to one column. Texts compare
//! exactly (frictionless's default, case included); looser matching belongs to whoever reviews
//! a mapping.

use super::super::Template;

/// Field index → column index in the file (`None`: the file has no column for the field).
pub type Mapping = Vec<Option<usize>>;

/// How a field found its column (the contract's `match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    Exact,
    Title,
    /// Equal once both are normalised (case, spacing, punctuation, NFKC, `No.`/`#`/`number`).
    Normalized,
    Alias,
    /// Similar enough, with a confidence below 1.
    Fuzzy,
    /// Chosen by a person in a review.
    Confirmed,
    /// A mapping a person confirmed for the same template and header texts.
    Remembered,
}

impl MatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Title => "title",
            MatchKind::Normalized => "normalized",
            MatchKind::Alias => "alias",
            MatchKind::Fuzzy => "fuzzy",
            MatchKind::Confirmed => "confirmed",
            MatchKind::Remembered => "remembered",
        }
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

/// Matches every field of `t` (in field order) to a column of `header`.
pub fn map_columns(t: &Template, header: &[&str]) -> Vec<MappedField> {
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
    for how in [MatchKind::Exact, MatchKind::Title, MatchKind::Alias] {
        for m in mapped.iter_mut().filter(|m| m.column.is_none()) {
            let field = &t.fields[m.field];
            let labels: Vec<&str> = match how {
                MatchKind::Exact => vec![field.name.as_str()],
                MatchKind::Title => field.title.iter().map(String::as_str).collect(),
                MatchKind::Alias => field.alternate_names.iter().map(String::as_str).collect(),
                _ => unreachable!("only the exact kinds are tried here"),
            };
            let found = labels
                .iter()
                .find_map(|label| (0..header.len()).find(|&c| !taken[c] && header[c] == *label));
            if let Some(c) = found {
                taken[c] = true;
                m.column = Some(c);
                m.how = Some(how);
                m.confidence = 1.0;
            }
        }
    }
    mapped
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
