//! Upload metadata (contract v1.3): the application's own context of a file, a JSON object of
//! at most [`MAX_METADATA_BYTES`] as serialised. Read the same way from a multipart part and
//! from tus `Upload-Metadata`, so both refuse the same things with the same words.

use serde_json::Value;

/// The most bytes the metadata's compact JSON may take.
pub const MAX_METADATA_BYTES: usize = 4096;

/// Reads `text` as upload metadata: a JSON object within the bound, or why not (for the
/// `invalid_metadata` answer).
pub fn parse(text: &[u8]) -> Result<Value, String> {
    let value: Value =
        serde_json::from_slice(text).map_err(|e| format!("metadata is not JSON: {e}"))?;
    check(value)
}

/// `value` as upload metadata (already JSON, as in a session's request body), or why not.
pub fn check(value: Value) -> Result<Value, String> {
    if !value.is_object() {
        return Err("metadata must be a JSON object".into());
    }
    if holds_nul(&value) {
        // Postgres text (and so jsonb) cannot hold it: refused here, not failed on store.
        return Err("metadata holds U+0000, which cannot be stored".into());
    }
    let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
    if size > MAX_METADATA_BYTES {
        return Err(format!(
            "metadata takes {size} bytes as JSON; at most {MAX_METADATA_BYTES} are allowed"
        ));
    }
    Ok(value)
}

/// Whether a string or key anywhere in `value` holds U+0000.
fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_a_json_object_within_four_kib() {
        assert_eq!(
            parse(br#"{"customer": 42, "batch": "b-7"}"#),
            Ok(serde_json::json!({"customer": 42, "batch": "b-7"}))
        );
        assert!(parse(b"[1, 2]").is_err_and(|e| e.contains("object")));
        assert!(parse(b"{nope").is_err_and(|e| e.contains("not JSON")));
        assert!(parse(b"\"text\"").is_err_and(|e| e.contains("object")));
        // 4,096 bytes exactly: `{"k":"` + 4,088 + `"}`.
        let at_bound = format!(r#"{{"k":"{}"}}"#, "x".repeat(4088));
        assert_eq!(at_bound.len(), MAX_METADATA_BYTES);
        assert!(parse(at_bound.as_bytes()).is_ok());
        let past = format!(r#"{{"k":"{}"}}"#, "x".repeat(4089));
        assert!(parse(past.as_bytes()).is_err_and(|e| e.contains("4097 bytes")));
        assert!(parse(br#"{"a": ["\u0000"]}"#).is_err_and(|e| e.contains("U+0000")));
        assert!(parse(br#"{"\u0000": 1}"#).is_err_and(|e| e.contains("U+0000")));
        assert!(parse(br#"{"tab": "\t", "bell": "\u0007"}"#).is_ok());
        // Measured compact: spaces in the given text do not count.
        let spaced = format!(r#"{{ "k" :  "{}" }}"#, "x".repeat(4088));
        assert!(parse(spaced.as_bytes()).is_ok());
    }
}
