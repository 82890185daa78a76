//! The mapping review inside the parse child. A templated file is mapped with the mapping a
//! person chose when there is one (confirmed in this task's review, or remembered for its
//! header set: [`chosen_mapping`]); otherwise the matcher's mapping goes through only when
//! [`review_reason`](template::validate::review_reason) finds nothing to ask. When it
//! does, no row is stored: a few rows below the header are read for sample values
//! ([`Sampling`]) and the parse ends with the review document, which the parent stores on the
//! task (`NEEDS_REVIEW`).

use std::collections::BTreeSet;

use shared::domain::review::{self, Review, ReviewColumn, ReviewValues, SuggestedField};
use template::validate::{self as engine, MappedField, MatchKind, ReviewReason};
use template::{Cell, Template};

use super::job::TemplateJob;

/// The mapping a person chose for a file with `header`: the task's confirmed mapping, else the
/// one remembered for the header set, as long as it still gives every required field of
/// `template` a column (a newer template version may have added one). `None`: match anew.
pub(crate) fn chosen_mapping(
    template: &Template,
    job: &TemplateJob,
    header: &[&str],
) -> Option<Vec<MappedField>> {
    if let Some(confirmed) = &job.confirmed {
        let mapping = template
            .fields
            .iter()
            .map(|f| {
                confirmed
                    .get(&f.name)
                    .copied()
                    .flatten()
                    .filter(|&c| c < header.len())
            })
            .collect();
        return Some(engine::chosen(&mapping, MatchKind::Confirmed));
    }
    let remembered = job.remembered.get(&review::header_key(header))?;
    let mut taken = vec![false; header.len()];
    let mut mapping = Vec::with_capacity(template.fields.len());
    for field in &template.fields {
        let text = remembered.get(&field.name).cloned().flatten();
        let column = text.and_then(|t| (0..header.len()).find(|&c| !taken[c] && header[c] == t));
        if let Some(c) = column {
            taken[c] = true;
        } else if field.required {
            return None;
        }
        mapping.push(column);
    }
    Some(engine::chosen(&mapping, MatchKind::Remembered))
}

/// The characters of a cell kept as a sample (a cell may hold a megabyte).
const MAX_SAMPLE_CHARS: usize = 200;

/// A review being written: the file's columns gather sample values from the rows below the
/// header, and each `enum` or `boolean` field the texts of its suggested column it cannot read.
pub(crate) struct Sampling {
    review: Review,
    rows_seen: u64,
    unknown: Vec<Unknown>,
}

/// The texts a field cannot read in its suggested column.
struct Unknown {
    field: usize,
    column: usize,
    texts: BTreeSet<String>,
}

impl Sampling {
    pub fn new(
        reason: ReviewReason,
        template: &Template,
        sheet: &str,
        header: &[String],
        header_row: u64,
        mapped: &[MappedField],
    ) -> Self {
        let columns = header
            .iter()
            .enumerate()
            .map(|(index, name)| ReviewColumn {
                index,
                name: name.clone(),
                samples: Vec::new(),
            })
            .collect();
        let suggested_mapping = mapped
            .iter()
            .zip(&template.fields)
            .map(|(m, field)| SuggestedField {
                field: field.name.clone(),
                column_index: m.column,
                how: m.how.map(|h| h.as_str().to_owned()),
                confidence: m.confidence,
            })
            .collect();
        Self {
            review: Review {
                reason: reason.as_str().to_owned(),
                sheet: sheet.to_owned(),
                sheet_index: None,
                layout: None,
                header_row,
                columns,
                suggested_mapping,
                values: Vec::new(),
            },
            rows_seen: 0,
            unknown: mapped
                .iter()
                .zip(&template.fields)
                .enumerate()
                .filter_map(|(field, (m, f))| {
                    f.allowed_values()?;
                    Some(Unknown {
                        field,
                        column: m.column?,
                        texts: BTreeSet::new(),
                    })
                })
                .collect(),
        }
    }

    /// Takes the non-empty cells of one data row as samples, up to [`review::MAX_SAMPLES`] per
    /// column, from the first [`review::SAMPLE_ROWS`] rows.
    pub fn sample(&mut self, template: &Template, cells: &[Cell<'_>]) {
        if self.rows_seen >= review::SAMPLE_ROWS {
            return;
        }
        self.rows_seen += 1;
        for u in &mut self.unknown {
            let Some(cell) = cells.get(u.column).filter(|c| **c != Cell::Empty) else {
                continue;
            };
            let text = cell.text();
            let text = text.trim();
            if text.is_empty()
                || u.texts.len() >= review::MAX_UNKNOWN_VALUES
                || template.fields[u.field].reads(text)
            {
                continue;
            }
            u.texts
                .insert(text.chars().take(MAX_SAMPLE_CHARS).collect());
        }
        for (column, cell) in self.review.columns.iter_mut().zip(cells) {
            if column.samples.len() >= review::MAX_SAMPLES || *cell == Cell::Empty {
                continue;
            }
            let text = cell.text();
            if !text.trim().is_empty() {
                column
                    .samples
                    .push(text.chars().take(MAX_SAMPLE_CHARS).collect());
            }
        }
    }

    pub fn into_review(self, template: &Template) -> Review {
        let mut review = self.review;
        review.values = self
            .unknown
            .into_iter()
            .filter(|u| !u.texts.is_empty())
            .map(|u| {
                let field = &template.fields[u.field];
                ReviewValues {
                    allowed: field.allowed_values().unwrap_or_default(),
                    field: field.name.clone(),
                    unknown: u.texts.into_iter().collect(),
                }
            })
            .collect();
        review
    }
}
