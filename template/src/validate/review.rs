//! When a mapping needs a person: the contract's "Mapping review". A mapping goes through on its
//! own only when it is certain; otherwise the task waits in `NEEDS_REVIEW` with the reason.

use super::super::Template;
use super::mapping::{MappedField, MatchKind, FUZZY_THRESHOLD};

codes::code_enum! {
    /// Why a mapping needs a review (the review's `reason`).
    pub enum ReviewReason {
        /// A required field has no column.
        #[serde(rename = "required_field_unmapped")]
        RequiredUnmapped => "required_field_unmapped",
        /// Two columns match one field equally well.
        #[serde(rename = "competing_columns")]
        Competing => "competing_columns",
        /// A match is below [`FUZZY_THRESHOLD`]: a fuzzy name, or a name whose sampled values
        /// do not fit the field.
        #[serde(rename = "low_confidence")]
        Unsure => "low_confidence",
    }
}

/// The first reason `mapped` (from [`super::map_columns`]) needs a review, or `None` when it
/// may go through as it is. Mappings a person chose never need one.
pub fn review_reason(t: &Template, mapped: &[MappedField]) -> Option<ReviewReason> {
    let chosen =
        |m: &MappedField| matches!(m.how, Some(MatchKind::Confirmed | MatchKind::Remembered));
    if mapped.iter().any(chosen) {
        return None;
    }
    if mapped
        .iter()
        .any(|m| m.column.is_none() && t.fields[m.field].required)
    {
        return Some(ReviewReason::RequiredUnmapped);
    }
    if mapped.iter().any(|m| m.competitor.is_some()) {
        return Some(ReviewReason::Competing);
    }
    if mapped
        .iter()
        .any(|m| m.column.is_some() && m.confidence < FUZZY_THRESHOLD)
    {
        return Some(ReviewReason::Unsure);
    }
    None
}
