//! What a column's sampled values say about a field. A header text alone can be wrong (a
//! column headed `Amount` holding names, `Status` holding dates), and a header text can be
//! unlike every label while the values leave no doubt (`E-mail address` full of e-mail
//! addresses, for a field `email`). So, once the names are matched, the sampled values are
//! weighed ([`weigh`]):
//!
//! - a name match whose values clearly do not fit the field (its type and format, `pattern`,
//!   `enum`; fewer than half of them, and at least three) is no longer certain: its confidence
//!   drops below [`FUZZY_THRESHOLD`] and the mapping waits for a person;
//! - a weak name match (similar, or one key inside the other) whose values fit strongly (at
//!   least [`STRONG_FIT`]) a field that only some values fit is lifted to the threshold, unless another free column's values
//!   fit that field as well: then a person chooses between them.
//!
//! Values alone (no name evidence) never map a column on their own: [`suggest_by_values`]
//! only pre-fills a review that is asked anyway, and only when one column fits.
//!
//! A field any text fits (a `string` without format, `pattern` or `enum`; `any`) learns
//! nothing from values: a column of digits under `customer` or `phone` is as likely right as
//! wrong, so such a match is left as the names made it.

use super::super::super::{Cell, Constraint, Field, FieldType, Template};
use super::{label, MappedField, MatchKind, FUZZY_THRESHOLD};
use crate::cast::Syntax;
use crate::text_format::StringFormat;
use crate::transform::{Applied, Buffers};

/// Fewer non-empty samples than this say nothing.
pub const MIN_SAMPLES: usize = 3;
/// Values that fit less often than this do not fit the field.
pub const UNFIT_BELOW: f64 = 0.5;
/// Values that fit at least this often fit it strongly.
pub const STRONG_FIT: f64 = 0.9;
/// A header with one key inside the other (`emailaddress` holds `email`) is this similar.
const CONTAINED: f64 = 0.6;
/// The least name evidence values may lift.
const WEAK_NAME: f64 = 0.5;
/// The most a value-only suggestion is worth: never certain.
const VALUES_ONLY: f64 = 0.5;

/// Whether only some values fit `field`: a typed field, a string with a format, a pattern or an
/// enum. Values tell nothing about the others.
pub fn discriminating(field: &Field) -> bool {
    !matches!(
        field.syntax,
        Syntax::String(StringFormat::Default) | Syntax::Any
    ) || field.rules.pattern.is_some()
        || field.rules.enumeration.is_some()
}

/// How a column's samples fit a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// Non-blank samples, the field's missing values left out.
    pub seen: usize,
    /// Those the field reads.
    pub fit: usize,
}

impl Fit {
    /// The share (0 to 1) of the samples that fit.
    pub fn share(self) -> f64 {
        self.fit as f64 / self.seen as f64
    }

    /// The values clearly do not fit: fewer than half do, and at least [`MIN_SAMPLES`] do not
    /// (one odd value in three is a row's error, not the wrong column).
    pub fn clearly_unfit(self) -> bool {
        self.share() < UNFIT_BELOW && self.seen - self.fit >= MIN_SAMPLES
    }

    /// The values fit strongly: at least [`STRONG_FIT`] of them.
    pub fn strong(self) -> bool {
        self.share() >= STRONG_FIT
    }
}

/// How `samples` (one column's values) fit `field`'s type, format, pattern and enum. `None`
/// when values tell nothing: fewer than [`MIN_SAMPLES`] samples, or a field any text fits.
/// Other constraints (length, range) are the rows' errors, not a sign of the wrong column.
pub fn fit(field: &Field, samples: &[String]) -> Option<Fit> {
    if !discriminating(field) {
        return None;
    }
    let mut counts = Fit { seen: 0, fit: 0 };
    for text in samples.iter().map(|s| s.trim()) {
        if text.is_empty() || field.missing_values.contains(text) {
            continue;
        }
        counts.seen += 1;
        if fits(field, text) {
            counts.fit += 1;
        }
    }
    (counts.seen >= MIN_SAMPLES).then_some(counts)
}

/// The share (0 to 1) of `samples` that fit `field` (see [`fit`]).
pub fn value_fit(field: &Field, samples: &[String]) -> Option<f64> {
    fit(field, samples).map(Fit::share)
}

/// Whether one sample fits `field`, as its transforms leave it (`Ja` fits a boolean field that
/// maps it). A workbook's typed cell arrives as its text (`2024-01-31`, `12.5`, `true`), which a
/// field with another date format or decimal mark would not read from text but does read from
/// the cell: such a text fits too.
pub(crate) fn fits(field: &Field, text: &str) -> bool {
    let mut buffers = Buffers::default();
    let text = match &field.transforms {
        None => text,
        Some(t) => match t.apply(
            Cell::Text(text),
            field.field_type == FieldType::String,
            &field.missing_values,
            &mut buffers,
        ) {
            Applied::Unchanged => text,
            Applied::Changed => buffers.out.as_str(),
            Applied::Unreadable(_) => return false,
        },
    };
    match field.cast(Cell::Text(text)) {
        Ok(value) => !matches!(
            field.check(&value),
            Err((Constraint::Pattern | Constraint::Enum, _))
        ),
        Err(_) => workbook_form(field, text),
    }
}

/// Whether `text` is the form a workbook's typed cell of `field`'s type is read as.
fn workbook_form(field: &Field, text: &str) -> bool {
    use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
    match field.syntax {
        Syntax::Integer { .. } | Syntax::Number(_) | Syntax::Year => text.parse::<f64>().is_ok(),
        Syntax::Date(_) | Syntax::DateTime(_) => {
            NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok()
                || NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").is_ok()
                || NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").is_ok()
        }
        Syntax::Time(_) => NaiveTime::parse_from_str(text, "%H:%M:%S%.f").is_ok(),
        Syntax::Boolean { .. } => matches!(text, "true" | "false"),
        _ => false,
    }
}

/// How much a header key names a field whose label keys are `labels`: their best similarity,
/// or [`CONTAINED`] when one key holds another of at least three characters.
pub fn name_hint(labels: &[String], key: &str) -> f64 {
    labels
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (short, long) = if l.len() <= key.len() {
                (l.as_str(), key)
            } else {
                (key, l.as_str())
            };
            let inside = short.chars().count() >= 3 && long.contains(short);
            let similar = label::similarity(l, key);
            if inside {
                similar.max(CONTAINED)
            } else {
                similar
            }
        })
        .fold(0.0, f64::max)
}

/// The confidence of a weak name match (`name` its [`name_hint`]) whose values fit strongly:
/// at the threshold, a little above for a closer name, never 1.
fn lifted(name: f64) -> f64 {
    FUZZY_THRESHOLD + 0.05 * name
}

/// Each field's label keys (name, title, alternate names).
pub(super) fn label_keys(t: &Template) -> Vec<Vec<String>> {
    t.fields
        .iter()
        .map(|f| {
            std::iter::once(&f.name)
                .chain(&f.title)
                .chain(&f.alternate_names)
                .map(|l| label::key(l))
                .collect()
        })
        .collect()
}

/// Weighs the name matches of `mapped` by the columns' `samples` (by column index) and lifts
/// weak name matches whose values fit (see the module's notes). Learned matches (a person's
/// choice) are left alone.
pub(super) fn weigh(
    t: &Template,
    keys: &[String],
    samples: &[Vec<String>],
    taken: &mut [bool],
    mapped: &mut [MappedField],
) {
    if samples.is_empty() {
        return;
    }
    let fit_of = |field: usize, c: usize| samples.get(c).and_then(|s| fit(&t.fields[field], s));
    for m in mapped.iter_mut() {
        let (Some(c), Some(how)) = (m.column, m.how) else {
            continue;
        };
        if matches!(
            how,
            MatchKind::Learned | MatchKind::Confirmed | MatchKind::Remembered
        ) {
            continue;
        }
        match fit_of(m.field, c) {
            Some(f) if f.clearly_unfit() => {
                // Below the threshold whatever the name: 0.3 for no value fitting.
                let share = f.share();
                m.confidence = (m.confidence * (0.3 + 0.4 * share)).min(FUZZY_THRESHOLD - 0.1);
            }
            Some(f) if f.strong() && how == MatchKind::Fuzzy => {
                m.confidence = m.confidence.max(lifted(m.confidence));
            }
            _ => {}
        }
    }
    let labels = label_keys(t);
    for m in mapped.iter_mut().filter(|m| m.column.is_none()) {
        let strong: Vec<usize> = (0..keys.len())
            .filter(|&c| !taken[c] && fit_of(m.field, c).is_some_and(Fit::strong))
            .collect();
        let best = strong
            .iter()
            .map(|&c| (name_hint(&labels[m.field], &keys[c]), c))
            .filter(|(name, _)| *name >= WEAK_NAME)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        let Some((name, c)) = best else {
            continue;
        };
        taken[c] = true;
        m.column = Some(c);
        m.how = Some(MatchKind::Fuzzy);
        m.confidence = lifted(name);
        // Two columns whose values fit the field: the name alone is too weak to choose.
        m.competitor = strong.into_iter().find(|&o| o != c);
    }
}

/// Fills the fields of `mapped` that have no column with the one free column whose sampled
/// values fit them strongly (none when two do, or none does), as a `fuzzy` suggestion of at
/// most [`VALUES_ONLY`] confidence: for a review that is asked anyway, never to map a file.
pub fn suggest_by_values(t: &Template, samples: &[Vec<String>], mapped: &mut [MappedField]) {
    let mut taken = vec![false; samples.len()];
    for c in mapped.iter().filter_map(|m| m.column) {
        if let Some(t) = taken.get_mut(c) {
            *t = true;
        }
    }
    for m in mapped.iter_mut().filter(|m| m.column.is_none()) {
        let fitting: Vec<(usize, f64)> = (0..samples.len())
            .filter(|&c| !taken[c])
            .filter_map(|c| fit(&t.fields[m.field], &samples[c]).map(|f| (c, f)))
            .filter(|(_, f)| f.strong())
            .map(|(c, f)| (c, f.share()))
            .collect();
        if let [(c, fit)] = fitting.as_slice() {
            taken[*c] = true;
            m.column = Some(*c);
            m.how = Some(MatchKind::Fuzzy);
            m.confidence = VALUES_ONLY * fit;
        }
    }
}
