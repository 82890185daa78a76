//! A person's correction of where a sheet's table lies (`PUT /api/v1/tasks/{id}/layout`, an
//! extension of the contract's "Sheet layout"): which row is the header, or that there is none,
//! and which row is the table's last. The api checks it against what the task's result or
//! review says of the sheet and stores it on the task (`tasks.layout_override`); every attempt
//! of the task reads it from there, so a redelivered message parses with the same override. The
//! worker's table driver forces it instead of guessing. One type for the request, the stored
//! document and what the worker reads, so the three cannot drift.

use serde::{Deserialize, Deserializer, Serialize};

/// The override of some of a file's sheets; the others are read as detected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LayoutOverride {
    /// One entry per sheet to correct (at most one per sheet).
    pub sheets: Vec<SheetOverride>,
}

/// One sheet's correction. A key left out keeps what detection finds; `null` and a row number
/// force it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SheetOverride {
    /// The sheet's `index` in `result.sheets` (0 for CSV/TSV).
    pub sheet: u32,
    /// The 1-based row of the header (a single row; rows above it are set aside as `above`);
    /// `null`: the table has no header, every row from the first is data.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u64>, minimum = 1))]
    pub header_row: Option<Option<u64>>,
    /// The table's last row: the rows after it are set aside (as `notes`, or `table` when they
    /// hold a table); `null`: the table runs to the sheet's last row, nothing below it is set
    /// aside.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u64>, minimum = 1))]
    pub last_row: Option<Option<u64>>,
}

/// A key that is present, `null` or not: `Some(None)` for `null`, as a missing key is `None`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(d).map(Some)
}

/// Where a sheet's header is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForcedHeader {
    /// Found by detection.
    #[default]
    Detect,
    /// The table has no header.
    None,
    /// This 1-based row.
    Row(u64),
}

/// Where a sheet's table ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ForcedEnd {
    /// Found by detection.
    #[default]
    Detect,
    /// At the sheet's last row.
    SheetEnd,
    /// At this 1-based row.
    Row(u64),
}

impl SheetOverride {
    pub fn header(&self) -> ForcedHeader {
        match self.header_row {
            None => ForcedHeader::Detect,
            Some(None) => ForcedHeader::None,
            Some(Some(row)) => ForcedHeader::Row(row),
        }
    }

    pub fn end(&self) -> ForcedEnd {
        match self.last_row {
            None => ForcedEnd::Detect,
            Some(None) => ForcedEnd::SheetEnd,
            Some(Some(row)) => ForcedEnd::Row(row),
        }
    }
}

impl LayoutOverride {
    /// The correction of sheet `index`, if any.
    pub fn sheet(&self, index: u32) -> Option<&SheetOverride> {
        self.sheets.iter().find(|s| s.sheet == index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_key_detects_and_null_forces() {
        let json = r#"{"sheets":[{"sheet":0,"header_row":null,"last_row":9},{"sheet":1}]}"#;
        let o: LayoutOverride = serde_json::from_str(json).expect("override");
        let first = o.sheet(0).expect("sheet 0");
        assert_eq!(first.header(), ForcedHeader::None);
        assert_eq!(first.end(), ForcedEnd::Row(9));
        let second = o.sheet(1).expect("sheet 1");
        assert_eq!(
            (second.header(), second.end()),
            (ForcedHeader::Detect, ForcedEnd::Detect)
        );
        // Stored and read back, the three states survive.
        let back: LayoutOverride =
            serde_json::from_str(&serde_json::to_string(&o).expect("json")).expect("back");
        assert_eq!(back, o);
        assert!(o.sheet(2).is_none());
    }

    #[test]
    fn unknown_keys_are_refused() {
        let json = r#"{"sheets":[{"sheet":0,"header":3}]}"#;
        assert!(serde_json::from_str::<LayoutOverride>(json).is_err());
    }
}
