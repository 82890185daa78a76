//! What a templated upload does with rows that have errors: a template's default, which an
//! upload may override.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum OnInvalid {
    /// Any error fails the task (`validation_failed`); the report is kept, no rows are stored.
    RejectFile,
    /// Valid rows are stored; invalid ones are only in the report.
    #[default]
    DropInvalidRows,
    /// Every row is stored (a failing cell keeps its original text); the report says which
    /// rows are bad.
    KeepInvalidRows,
}

impl OnInvalid {
    pub const ALL: [OnInvalid; 3] = [
        OnInvalid::RejectFile,
        OnInvalid::DropInvalidRows,
        OnInvalid::KeepInvalidRows,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OnInvalid::RejectFile => "reject_file",
            OnInvalid::DropInvalidRows => "drop_invalid_rows",
            OnInvalid::KeepInvalidRows => "keep_invalid_rows",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

/// A stored policy that is not one of [`OnInvalid::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown on_invalid policy {0:?}")]
pub struct UnknownOnInvalid(pub String);

impl FromStr for OnInvalid {
    type Err = UnknownOnInvalid;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| UnknownOnInvalid(s.to_owned()))
    }
}

// The `on_invalid` columns are `text` with a CHECK: a value that does not decode is an error.
crate::text_column!(OnInvalid);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_serde_name_and_reads_back() {
        for policy in OnInvalid::ALL {
            let json = serde_json::to_string(&policy).expect("serialise");
            assert_eq!(json, format!("\"{}\"", policy.as_str()));
            assert_eq!(OnInvalid::parse(policy.as_str()), Some(policy));
        }
        assert_eq!(OnInvalid::parse("drop"), None);
        assert_eq!(OnInvalid::default(), OnInvalid::DropInvalidRows);
    }
}
