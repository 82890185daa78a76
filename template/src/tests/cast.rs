use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use serde_json::{json, Value as Json};

use super::super::Cell;
use super::{cast_json, one, text_json};

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn time(h: u32, m: u32, s: u32) -> NaiveTime {
    NaiveTime::from_hms_opt(h, m, s).unwrap()
}

fn datetime(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> NaiveDateTime {
    date(y, mo, d).and_time(time(h, mi, s))
}

/// Asserts what each text reads as (`None`: a type error) in a field of `descriptor`.
fn texts(descriptor: Json, cases: &[(&str, Option<&str>)]) {
    for (text, expected) in cases {
        assert_eq!(
            text_json(&descriptor, text).as_deref(),
            *expected,
            "{text:?} in {descriptor}"
        );
    }
}

#[test]
fn strings_take_any_text_and_escape_it() {
    texts(
        json!({"name": "s"}),
        &[
            ("plain", Some("\"plain\"")),
            (" kept as is ", Some("\" kept as is \"")),
            (
                "quote \" back\\slash\nnew",
                Some(r#""quote \" back\\slash\nnew""#),
            ),
            ("\u{1}", Some("\"\\u0001\"")),
            ("日本語", Some("\"日本語\"")),
            // The default missing value.
            ("", Some("null")),
        ],
    );
}

/// The table reading of ASCII addresses agrees with the character reading on every address
/// made of a few pieces that each matter to one rule (dots, hyphens, lengths, the last label),
/// and leaves to it every address it cannot read (quoted, or with a character past ASCII).
#[test]
fn ascii_emails_read_by_table_as_by_character() {
    use super::super::text_format::{ascii_email, is_email_by_chars};
    let locals = [
        "",
        "a",
        ".a",
        "a.",
        "a..b",
        "a.b",
        "first+tag",
        "x!#$%&'*+/=?^_`{}|~-y",
        "a b",
        "a(b",
        "a\"b",
        "\"q\"",
        "é",
        "aé",
        "a(é",
        &"l".repeat(64),
        &"l".repeat(65),
        &format!("{}é", "l".repeat(63)),
    ];
    let domains = [
        "",
        "b",
        "b.c",
        "b.co",
        "b.c0",
        "b.1c",
        "-b.com",
        "b-.com",
        "b--c.com",
        "b.-com",
        "b.com-",
        "b.co-m",
        "b..com",
        ".b.com",
        "b.com.",
        "b_c.com",
        "b@c.com",
        "1.2.3.4",
        "B.COM",
        "b.c m",
        "münchen.de",
        "b.dé",
        &format!("{}.com", "d".repeat(63)),
        &format!("{}.com", "d".repeat(64)),
        &format!("b.{}", "c".repeat(63)),
        &format!("b.{}", "c".repeat(64)),
        &format!("{}.com", "d.".repeat(124)),
        &format!("{}.com", "d.".repeat(125)),
        &format!("{}.cé", "d.".repeat(124)),
    ];
    let (mut by_table, mut valid) = (0, 0);
    for local in locals {
        for domain in domains {
            let address = format!("{local}@{domain}");
            let expected = is_email_by_chars(local, domain);
            match ascii_email(address.as_bytes()) {
                Some(verdict) => {
                    assert_eq!(verdict, expected, "{address}");
                    by_table += 1;
                }
                None => assert!(!address.is_ascii() || local.starts_with('"'), "{address}"),
            }
            valid += usize::from(expected);
        }
    }
    assert!(by_table > 300 && valid > 20, "{by_table} {valid}");
    assert_eq!(ascii_email(b"no-at.example.com"), Some(false));
}

#[test]
fn string_formats_check_emails_uris_and_uuids() {
    texts(
        json!({"name": "s", "format": "email"}),
        &[
            ("a@b.com", Some("\"a@b.com\"")),
            (
                "first.last+tag@sub.example.co.uk",
                Some("\"first.last+tag@sub.example.co.uk\""),
            ),
            ("é@x.com", Some("\"é@x.com\"")),
            (
                "\"quoted\"@example.org",
                Some("\"\\\"quoted\\\"@example.org\""),
            ),
            ("a@münchen.de", Some("\"a@münchen.de\"")),
            ("A@B.COM", Some("\"A@B.COM\"")),
            ("\"quoted name\"@example.org", None),
            ("a@1.2.3.4", None),
            ("a@b", None),
            ("a..b@c.com", None),
            (".a@c.com", None),
            ("a@@b.com", None),
            ("a@b.c1", None),
            ("a@-b.com", None),
            ("a b@c.com", None),
            ("a@b_c.com", None),
            ("plain", None),
        ],
    );
    texts(
        json!({"name": "s", "format": "uri"}),
        &[
            (
                "https://example.com/a?b#c",
                Some("\"https://example.com/a?b#c\""),
            ),
            (
                "mailto:someone@example.com",
                Some("\"mailto:someone@example.com\""),
            ),
            ("urn:isbn:0451450523", Some("\"urn:isbn:0451450523\"")),
            ("a:b", Some("\"a:b\"")),
            ("example.com", None),
            ("1a:b", None),
            ("/relative/path", None),
        ],
    );
    texts(
        json!({"name": "s", "format": "uuid"}),
        &[
            (
                "2bc1c94f-0deb-43e9-92a1-4775189ec9f8",
                Some("\"2bc1c94f-0deb-43e9-92a1-4775189ec9f8\""),
            ),
            (
                "2BC1C94F0DEB43E992A14775189EC9F8",
                Some("\"2BC1C94F0DEB43E992A14775189EC9F8\""),
            ),
            (
                "{2bc1c94f-0deb-43e9-92a1-4775189ec9f8}",
                Some("\"{2bc1c94f-0deb-43e9-92a1-4775189ec9f8}\""),
            ),
            (
                "urn:uuid:2bc1c94f-0deb-43e9-92a1-4775189ec9f8",
                Some("\"urn:uuid:2bc1c94f-0deb-43e9-92a1-4775189ec9f8\""),
            ),
            ("2bc1c94f-0deb-43e9-92a1-4775189ec9f", None),
            ("2bc1c94f-0deb-43e9-92a1-4775189ec9fg", None),
            ("2bc1c94f 0deb-43e9-92a1-4775189ec9f8", None),
        ],
    );
}

#[test]
fn integers_read_as_python_int_reads_them() {
    texts(
        json!({"name": "i", "type": "integer"}),
        &[
            ("42", Some("42")),
            (" 5 ", Some("5")),
            ("+5", Some("5")),
            ("-0", Some("0")),
            ("007", Some("7")),
            ("9223372036854775807", Some("9223372036854775807")),
            ("9223372036854775808", None),
            ("5.0", None),
            ("1e3", None),
            ("1_000", None),
            ("twelve", None),
            ("", Some("null")),
        ],
    );
}

#[test]
fn booleans_read_their_listed_texts_exactly() {
    texts(
        json!({"name": "b", "type": "boolean"}),
        &[
            ("true", Some("true")),
            ("True", Some("true")),
            ("TRUE", Some("true")),
            ("1", Some("true")),
            ("false", Some("false")),
            ("0", Some("false")),
            ("yes", None),
            (" true", None),
            ("tRUE", None),
        ],
    );
    texts(
        json!({"name": "b", "type": "boolean", "trueValues": ["oui", "x"], "falseValues": ["non", ""]}),
        &[
            ("oui", Some("true")),
            ("x", Some("true")),
            ("non", Some("false")),
            ("true", None),
            // `""` is a missing value before it is a false value, as in frictionless.
            ("", Some("null")),
        ],
    );
}

#[test]
fn default_dates_times_and_datetimes_are_iso_8601_as_frictionless_reads_it() {
    texts(
        json!({"name": "d", "type": "date"}),
        &[
            ("2024-01-05", Some("\"2024-01-05\"")),
            ("2024-1-5", Some("\"2024-01-05\"")),
            ("2024-02-29", Some("\"2024-02-29\"")),
            ("2023-02-29", None),
            ("2024-13-01", None),
            ("20240105", None),
            ("2024-01-05T00:00:00", None),
            ("0000-01-01", None),
            ("05/01/2024", None),
        ],
    );
    texts(
        json!({"name": "d", "type": "datetime"}),
        &[
            ("2024-01-05T10:00:00", Some("\"2024-01-05T10:00:00\"")),
            ("2024-01-05 10:00:00", Some("\"2024-01-05T10:00:00\"")),
            ("2024-01-05T10:00:00Z", Some("\"2024-01-05T10:00:00Z\"")),
            (
                "2024-01-05T10:00:00+00:00",
                Some("\"2024-01-05T10:00:00Z\""),
            ),
            (
                "2024-01-05T10:00:00+0530",
                Some("\"2024-01-05T10:00:00+05:30\""),
            ),
            (
                "2024-01-05T10:00:00+01",
                Some("\"2024-01-05T10:00:00+01:00\""),
            ),
            (
                "2024-01-05T10:00:00-08:00",
                Some("\"2024-01-05T10:00:00-08:00\""),
            ),
            (
                "2024-01-05 10:00:00,123",
                Some("\"2024-01-05T10:00:00.123\""),
            ),
            (
                "2024-01-05T10:00:00.123456789Z",
                Some("\"2024-01-05T10:00:00.123456Z\""),
            ),
            ("2024-12-31T24:00:00", Some("\"2025-01-01T00:00:00\"")),
            ("2024-12-31T24:00:01", None),
            ("2024-01-05T10:00", None),
            ("2024-02-30T10:00:00", None),
            ("2024-01-05T10:00:00 ", None),
            ("2024-01-05T10:00:00+24:00", None),
            ("2024-01-05x10:00:00", None),
        ],
    );
    texts(
        json!({"name": "t", "type": "time"}),
        &[
            ("10:00:00", Some("\"10:00:00\"")),
            ("10:00:00.5", Some("\"10:00:00.500\"")),
            ("10:00:00,5", Some("\"10:00:00.500\"")),
            ("10:00:00Z", Some("\"10:00:00Z\"")),
            ("10:00:00+0100", Some("\"10:00:00+01:00\"")),
            ("10:00:00-23:59", Some("\"10:00:00-23:59\"")),
            ("24:00:00", Some("\"00:00:00\"")),
            ("10:00", None),
            ("1:00:00", None),
            ("10:00:00.", None),
            ("10:00:00+1", None),
            ("10:60:00", None),
        ],
    );
}

#[test]
fn format_any_reads_the_common_written_forms() {
    texts(
        json!({"name": "d", "type": "date", "format": "any"}),
        &[
            ("2024-01-05", Some("\"2024-01-05\"")),
            // Month first, as dateutil, unless the month cannot be.
            ("05/03/2024", Some("\"2024-05-03\"")),
            ("25/03/2024", Some("\"2024-03-25\"")),
            ("05.03.2024", Some("\"2024-05-03\"")),
            ("March 5, 2024", Some("\"2024-03-05\"")),
            ("5 Mar 2024", Some("\"2024-03-05\"")),
            ("5-Mar-24", Some("\"2024-03-05\"")),
            ("2024/03/05", Some("\"2024-03-05\"")),
            ("20240305", Some("\"2024-03-05\"")),
            ("2024-03-05T10:00:00", Some("\"2024-03-05\"")),
            ("soon", None),
        ],
    );
    texts(
        json!({"name": "d", "type": "datetime", "format": "any"}),
        &[
            ("2024-01-05", Some("\"2024-01-05T00:00:00\"")),
            ("2024-01-05 10:30", Some("\"2024-01-05T10:30:00\"")),
            ("05/03/2024 10:30:15", Some("\"2024-05-03T10:30:15\"")),
            ("March 5, 2024 7:45 PM", Some("\"2024-03-05T19:45:00\"")),
            ("2024-01-05T10:00:00Z", Some("\"2024-01-05T10:00:00Z\"")),
            ("later", None),
        ],
    );
    texts(
        json!({"name": "t", "type": "time", "format": "any"}),
        &[
            ("10:30", Some("\"10:30:00\"")),
            ("7:45 PM", Some("\"19:45:00\"")),
            ("10:30:15.5", Some("\"10:30:15.500\"")),
            ("7pm", Some("\"19:00:00\"")),
            ("noon", None),
        ],
    );
}

#[test]
fn years_are_four_digits_from_0_to_9999() {
    texts(
        json!({"name": "y", "type": "year"}),
        &[
            ("2024", Some("2024")),
            ("0000", Some("0")),
            ("0999", Some("999")),
            ("999", None),
            ("20245", None),
            ("-123", None),
            ("+123", None),
            ("year", None),
        ],
    );
}

#[test]
fn any_fields_keep_text_as_text() {
    texts(
        json!({"name": "a", "type": "any"}),
        &[
            ("12", Some("\"12\"")),
            ("x", Some("\"x\"")),
            ("", Some("null")),
        ],
    );
}

/// The typed-cell table of [`Cell`]: each type's verdict on each kind of workbook cell.
#[test]
fn typed_workbook_cells_cast_as_the_cell_table_says() {
    let cells = [
        Cell::Int(7),
        Cell::Float(2.5),
        Cell::Float(12.0),
        Cell::Bool(true),
        Cell::DateTime(datetime(2024, 3, 5, 0, 0, 0)),
        Cell::DateTime(datetime(2024, 3, 5, 10, 30, 0)),
        Cell::Date(date(2024, 3, 5)),
        Cell::Time(time(10, 30, 0)),
        Cell::Error("#DIV/0!"),
        Cell::Empty,
    ];
    let expected: [(&str, [Option<&str>; 10]); 9] = [
        (
            "string",
            [
                Some("\"7\""),
                Some("\"2.5\""),
                Some("\"12\""),
                Some("\"TRUE\""),
                Some("\"2024-03-05T00:00:00\""),
                Some("\"2024-03-05T10:30:00\""),
                Some("\"2024-03-05\""),
                Some("\"10:30:00\""),
                None,
                Some("null"),
            ],
        ),
        (
            "integer",
            [
                Some("7"),
                None,
                Some("12"),
                None,
                None,
                None,
                None,
                None,
                None,
                Some("null"),
            ],
        ),
        (
            "number",
            [
                Some("7"),
                Some("2.5"),
                Some("12"),
                None,
                None,
                None,
                None,
                None,
                None,
                Some("null"),
            ],
        ),
        (
            "boolean",
            [
                None,
                None,
                None,
                Some("true"),
                None,
                None,
                None,
                None,
                None,
                Some("null"),
            ],
        ),
        (
            "date",
            [
                None,
                None,
                None,
                None,
                Some("\"2024-03-05\""),
                None,
                Some("\"2024-03-05\""),
                None,
                None,
                Some("null"),
            ],
        ),
        (
            "datetime",
            [
                None,
                None,
                None,
                None,
                Some("\"2024-03-05T00:00:00\""),
                Some("\"2024-03-05T10:30:00\""),
                Some("\"2024-03-05T00:00:00\""),
                None,
                None,
                Some("null"),
            ],
        ),
        (
            "time",
            [
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                Some("\"10:30:00\""),
                None,
                Some("null"),
            ],
        ),
        (
            "year",
            [
                Some("7"),
                None,
                Some("12"),
                None,
                None,
                None,
                None,
                None,
                None,
                Some("null"),
            ],
        ),
        (
            "any",
            [
                Some("7"),
                Some("2.5"),
                Some("12"),
                Some("true"),
                Some("\"2024-03-05T00:00:00\""),
                Some("\"2024-03-05T10:30:00\""),
                Some("\"2024-03-05\""),
                Some("\"10:30:00\""),
                Some("\"#DIV/0!\""),
                Some("null"),
            ],
        ),
    ];
    for (field_type, verdicts) in expected {
        let t = one(json!({"name": "f", "type": field_type}));
        for (cell, verdict) in cells.iter().zip(verdicts) {
            assert_eq!(
                cast_json(&t.fields[0], *cell).as_deref(),
                verdict,
                "{cell:?} in a {field_type} field"
            );
        }
    }
}

#[test]
fn numeric_workbook_cells_in_boolean_fields_match_the_listed_texts() {
    let t = one(json!({"name": "b", "type": "boolean"}));
    let field = &t.fields[0];
    assert_eq!(cast_json(field, Cell::Int(1)).as_deref(), Some("true"));
    assert_eq!(cast_json(field, Cell::Float(0.0)).as_deref(), Some("false"));
    assert_eq!(cast_json(field, Cell::Int(2)), None);
}

#[test]
fn workbook_values_outside_the_years_1_to_9999_are_errors() {
    let t = one(json!({"name": "d", "type": "date"}));
    assert_eq!(
        cast_json(&t.fields[0], Cell::Date(date(10_000, 1, 1))),
        None
    );
    let t = one(json!({"name": "y", "type": "year"}));
    assert_eq!(cast_json(&t.fields[0], Cell::Int(10_000)), None);
    assert_eq!(
        cast_json(&t.fields[0], Cell::Float(2024.0)).as_deref(),
        Some("2024")
    );
}

#[test]
fn missing_values_are_null_for_text_cells_only() {
    let t = super::template(json!({
        "missingValues": ["", "NA", "-"],
        "fields": [
            {"name": "n", "type": "integer"},
            {"name": "s", "missingValues": ["n/a"]},
        ]
    }));
    let (n, s) = (&t.fields[0], &t.fields[1]);
    assert_eq!(cast_json(n, Cell::Text("NA")).as_deref(), Some("null"));
    assert_eq!(cast_json(n, Cell::Text("-")).as_deref(), Some("null"));
    assert_eq!(cast_json(n, Cell::Text("")).as_deref(), Some("null"));
    assert_eq!(cast_json(n, Cell::Text("na")), None);
    // A field's own missingValues replace the schema's.
    assert_eq!(cast_json(s, Cell::Text("n/a")).as_deref(), Some("null"));
    assert_eq!(cast_json(s, Cell::Text("NA")).as_deref(), Some("\"NA\""));
    assert_eq!(cast_json(s, Cell::Text("")).as_deref(), Some("\"\""));
    // No missing values at all: an empty text is an empty string, an empty cell still null.
    let t = super::template(
        json!({"missingValues": [], "fields": [{"name": "s"}, {"name": "i", "type": "integer"}]}),
    );
    assert_eq!(
        cast_json(&t.fields[0], Cell::Text("")).as_deref(),
        Some("\"\"")
    );
    assert_eq!(cast_json(&t.fields[1], Cell::Text("")), None);
    assert_eq!(
        cast_json(&t.fields[1], Cell::Empty).as_deref(),
        Some("null")
    );
}

#[test]
fn type_errors_say_what_the_field_takes() {
    let expected = |descriptor: Json| one(descriptor).fields[0].expected();
    assert_eq!(expected(json!({"name": "a", "type": "number"})), "a number");
    assert_eq!(
        expected(json!({"name": "a", "type": "number", "decimalChar": ",", "groupChar": "."})),
        "a number with \",\" as its decimal mark and \".\" between groups of digits"
    );
    assert_eq!(
        expected(json!({"name": "a", "type": "date", "format": "%d/%m/%Y"})),
        "a date in the form %d/%m/%Y"
    );
    assert_eq!(
        expected(json!({"name": "a", "type": "date"})),
        "a date in the form YYYY-MM-DD"
    );
    assert_eq!(
        expected(json!({"name": "a", "type": "time", "format": "any"})),
        "a time"
    );
    assert_eq!(
        expected(json!({"name": "a", "type": "boolean"})),
        "a boolean (true, True, TRUE, 1 / false, False, FALSE, 0)"
    );
    assert_eq!(
        expected(json!({"name": "a", "format": "email"})),
        "an email address"
    );
}
