//! The contract's "Mapping review": the document a task waiting in `NEEDS_REVIEW` shows (the
//! file's columns with sample values and the suggested mapping), the mapping a person sends
//! back, and the key under which a confirmed mapping is remembered. The worker writes the
//! document, the api reads it to check the answer against it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::task_result::SheetLayout;

/// Sample values shown per column.
pub const MAX_SAMPLES: usize = 5;

/// Rows read below the header looking for sample values before the parse stops looking.
pub const SAMPLE_ROWS: u64 = 100;

/// Why a task waits and what a person chooses from. Its fields (and its parts') are declared
/// in sorted key order: the api served the stored `jsonb` through a sorted map, and the typed
/// document writes the same bytes only in that order (a test pins it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Review {
    pub columns: Vec<ReviewColumn>,
    /// The 1-based row of the header in the file.
    pub header_row: u64,
    /// Where the reviewed sheet's table lies, as the parse that asked found it (an extension:
    /// the page shows what was set aside, and a layout override is checked against it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<SheetLayout>,
    /// `required_field_unmapped`, `competing_columns` or `low_confidence`.
    pub reason: String,
    /// The workbook sheet the review is about (`Sheet1` for CSV/TSV): the answer applies to
    /// it.
    pub sheet: String,
    /// The reviewed sheet's index among the sheets read: what a layout override names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet_index: Option<u32>,
    /// Every template field, in field order, with the column the matcher suggests.
    pub suggested_mapping: Vec<SuggestedField>,
    /// Each `enum` or `boolean` field whose suggested column's sampled texts it cannot read,
    /// with those texts and the values a person may map them to (contract v1.3); none: absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<ReviewValues>,
}

/// Texts of a column its field cannot read, and what they may be mapped to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewValues {
    /// The values the field allows (an enum's values, a boolean's true and false values).
    pub allowed: Vec<String>,
    pub field: String,
    /// Up to [`MAX_UNKNOWN_VALUES`] distinct texts, sorted, as the field's transforms leave them.
    pub unknown: Vec<String>,
}

/// Unknown texts a review lists per field, and a person may map per field in one answer.
pub const MAX_UNKNOWN_VALUES: usize = 100;

/// One column of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewColumn {
    /// 0-based position in the header: what a mapping names.
    pub index: usize,
    /// The header text as in the file.
    pub name: String,
    /// Up to five non-empty values from the rows below the header, as text.
    pub samples: Vec<String>,
}

/// The matcher's suggestion for one field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SuggestedField {
    pub column_index: Option<usize>,
    pub confidence: f64,
    pub field: String,
    /// How it matched (`exact`, `title`, …), null for no column.
    #[serde(rename = "match")]
    pub how: Option<String>,
}

/// A mapping a person chose: field name → 0-based column index, `None` for no column.
pub type ConfirmedMapping = BTreeMap<String, Option<usize>>;

/// A remembered mapping: field name → header text, `None` for no column. Naming columns by
/// their text lets a file with the same columns in another order map alike.
pub type RememberedMapping = BTreeMap<String, Option<String>>;

/// The key of a header set: the sha256 (lower hex) of its texts sorted, as a JSON array (so no
/// separator can make two sets collide). Order and repeats aside, the same texts give the same
/// key.
pub fn header_key<S: AsRef<str>>(texts: &[S]) -> String {
    let mut sorted: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let json = serde_json::to_vec(&sorted).unwrap_or_default();
    super::digest::sha256_hex(&json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_serialises_with_its_keys_sorted_as_the_stored_document_was_served() {
        let review = Review {
            columns: vec![ReviewColumn {
                index: 0,
                name: "Amount".into(),
                samples: vec!["12".into()],
            }],
            header_row: 1,
            layout: Some(SheetLayout::default()),
            reason: "low_confidence".into(),
            sheet: "Sheet1".into(),
            sheet_index: Some(0),
            suggested_mapping: vec![SuggestedField {
                column_index: Some(0),
                confidence: 0.7,
                field: "amount".into(),
                how: Some("fuzzy".into()),
            }],
            values: vec![ReviewValues {
                allowed: vec!["true".into(), "false".into()],
                field: "paid".into(),
                unknown: vec!["Y".into()],
            }],
        };
        let typed = serde_json::to_string(&review).expect("serialise");
        let sorted = serde_json::to_value(&review).expect("to value").to_string();
        assert_eq!(typed, sorted);
    }

    #[test]
    fn the_header_key_ignores_order_but_not_text() {
        let a = header_key(&["id", "amount", "date"]);
        assert_eq!(a, header_key(&["date", "id", "amount"]));
        assert_ne!(a, header_key(&["id", "amount", "Date"]));
        // A separator inside a text cannot forge another set.
        assert_ne!(header_key(&["a,b"]), header_key(&["a", "b"]));
        assert_eq!(a.len(), 64);
    }
}
