//! The contract's "Mapping review": the document a task waiting in `NEEDS_REVIEW` shows (the
//! file's columns with sample values and the suggested mapping), the mapping a person sends
//! back, and the key under which a confirmed mapping is remembered. The worker writes the
//! document, the api reads it to check the answer against it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Sample values shown per column.
pub const MAX_SAMPLES: usize = 5;

/// Rows read below the header looking for sample values before the parse stops looking.
pub const SAMPLE_ROWS: u64 = 100;

/// Why a task waits and what a person chooses from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Review {
    /// `required_field_unmapped`, `competing_columns` or `low_confidence`.
    pub reason: String,
    /// The workbook sheet the review is about (`Sheet1` for CSV/TSV): the answer applies to
    /// it.
    pub sheet: String,
    /// The 1-based row of the header in the file.
    pub header_row: u64,
    pub columns: Vec<ReviewColumn>,
    /// Every template field, in field order, with the column the matcher suggests.
    pub suggested_mapping: Vec<SuggestedField>,
}

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
    pub field: String,
    pub column_index: Option<usize>,
    /// How it matched (`exact`, `title`, …), null for no column.
    #[serde(rename = "match")]
    pub how: Option<String>,
    pub confidence: f64,
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
    fn the_header_key_ignores_order_but_not_text() {
        let a = header_key(&["id", "amount", "date"]);
        assert_eq!(a, header_key(&["date", "id", "amount"]));
        assert_ne!(a, header_key(&["id", "amount", "Date"]));
        // A separator inside a text cannot forge another set.
        assert_ne!(header_key(&["a,b"]), header_key(&["a", "b"]));
        assert_eq!(a.len(), 64);
    }
}
