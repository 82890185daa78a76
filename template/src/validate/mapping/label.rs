//! Header texts as mapping compares them. Two texts name the same thing when their [`key`]s are
//! equal; how alike two different keys are is their [`similarity`].

use unicode_normalization::UnicodeNormalization as _;

/// Words that all mean "number" in a header (`Invoice No.`, `Invoice #`, `invoice_nr`).
const NUMBER: [&str; 6] = ["no", "nr", "nbr", "num", "number", "numero"];

/// A header text reduced to what names it: Unicode NFKC (full-width `ＩＮＶＯＩＣＥ` meets
/// `INVOICE`, `ｶﾅ` meets `カナ`), lower case, words split at punctuation, spaces and camelCase
/// humps and joined without them, and `No.`/`#`/`nr` read as `number`. So `Invoice No.`,
/// `INVOICE NO`, `invoice_number`, `invoiceNumber` and `Invoice #` all have the key
/// `invoicenumber`.
pub fn key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let mut last_lower = false;
    let flush = |word: &mut String, out: &mut String| {
        if NUMBER.contains(&word.as_str()) {
            out.push_str("number");
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.nfkc() {
        if c == '#' {
            flush(&mut word, &mut out);
            out.push_str("number");
            last_lower = false;
        } else if c.is_alphanumeric() {
            if c.is_uppercase() && last_lower {
                flush(&mut word, &mut out);
            }
            last_lower = c.is_lowercase();
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word, &mut out);
            last_lower = false;
        }
    }
    flush(&mut word, &mut out);
    out
}

/// How alike two keys are, from 0 to 1: one minus their edit distance over the longer one's
/// length. Edit distance rather than a prefix-weighted score (Jaro-Winkler) because header
/// texts share long prefixes while naming different things (`invoicedate`, `invoicenumber`
/// score 0.87 under Jaro-Winkler and 0.62 here); so one typo in a ten-letter key is 0.9 and
/// short keys never pass the threshold by similarity alone.
pub fn similarity(a: &str, b: &str) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    strsim::normalized_levenshtein(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_that_name_the_same_thing_share_a_key() {
        for text in [
            "Invoice No.",
            "INVOICE NO",
            "invoice_number",
            "invoiceNumber",
            "Invoice #",
            "invoice-nr",
            "ＩＮＶＯＩＣＥ　ＮＯ",
            " Invoice  Number ",
        ] {
            assert_eq!(key(text), "invoicenumber", "{text}");
        }
        assert_eq!(key("E-Mail"), "email");
        assert_eq!(key("請求番号"), "請求番号");
        assert_eq!(key("ｶﾅ"), key("カナ"));
        assert_eq!(key("---"), "");
        assert_ne!(key("Invoice date"), key("Invoice no"));
        // A word that merely contains "no" is kept.
        assert_eq!(key("Notes"), "notes");
    }

    #[test]
    fn similarity_is_edit_distance_over_length() {
        assert_eq!(similarity("amount", "amount"), 1.0);
        assert!((similarity("invoicenumbr", "invoicenumber") - 12.0 / 13.0).abs() < 1e-9);
        assert!(similarity("invoicedate", "invoicenumber") < 0.65);
        assert!(similarity("ammount", "amount") < 0.9);
        assert_eq!(similarity("", "amount"), 0.0);
    }
}
