//! A revision's validation counts: the ones before it, less what the rows it re-checked had,
//! plus what they have now. Exact as long as the re-checked rows' records were all kept (a
//! row's records past the report's cap are not known, and cannot be taken off).

use shared::domain::task_result::ValidationResult;
use shared::domain::ErrorRecord;

/// One re-checked row: its records and validity before and after.
pub struct Change<'a> {
    pub before: &'a [ErrorRecord],
    pub was_valid: bool,
    pub after: &'a [ErrorRecord],
    pub valid: bool,
}

/// Applies `change` to `v`.
pub fn apply(v: &mut ValidationResult, change: &Change<'_>) {
    for e in change.before {
        v.errors_total = v.errors_total.saturating_sub(1);
        take(&mut v.errors_by_code, &e.code);
        if let Some(field) = &e.field {
            take(&mut v.errors_by_field, field);
        }
    }
    for e in change.after {
        v.errors_total += 1;
        *v.errors_by_code.entry(e.code.clone()).or_default() += 1;
        if let Some(field) = &e.field {
            *v.errors_by_field.entry(field.clone()).or_default() += 1;
        }
    }
    match (change.was_valid, change.valid) {
        (false, true) => {
            v.rows_rejected = v.rows_rejected.saturating_sub(1);
            v.rows_valid += 1;
        }
        (true, false) => {
            v.rows_valid = v.rows_valid.saturating_sub(1);
            v.rows_rejected += 1;
        }
        _ => {}
    }
}

/// One less of `key`, which goes when none are left.
fn take(counts: &mut std::collections::BTreeMap<String, u64>, key: &str) {
    if let Some(n) = counts.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(key);
        }
    }
}
