//! What a templated upload does with rows that have errors: a template's default, which an
//! upload may override.

crate::code_enum! {
    #[derive(Default)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    pub enum OnInvalid {
        /// Any error fails the task (`validation_failed`); the report is kept, no rows are
        /// stored.
        RejectFile => "reject_file",
        /// Valid rows are stored; invalid ones are only in the report.
        #[default]
        DropInvalidRows => "drop_invalid_rows",
        /// Every row is stored (a failing cell keeps its original text); the report says which
        /// rows are bad.
        KeepInvalidRows => "keep_invalid_rows",
    }
}

// The `on_invalid` columns are `text` with a CHECK: a value that does not decode is an error.
crate::text_column!(OnInvalid);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_serde_name_and_reads_back() {
        for &policy in OnInvalid::ALL {
            let json = serde_json::to_string(&policy).expect("serialise");
            assert_eq!(json, format!("\"{}\"", policy.as_str()));
            assert_eq!(policy.as_str().parse::<OnInvalid>(), Ok(policy));
        }
        assert!("drop".parse::<OnInvalid>().is_err());
        assert_eq!(OnInvalid::default(), OnInvalid::DropInvalidRows);
    }
}
