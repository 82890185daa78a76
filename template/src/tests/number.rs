use std::cmp::Ordering;

use serde_json::json;

use super::super::number::{Number, NumberSyntax};
use super::text_json;

fn parse(text: &str) -> Option<Number> {
    Number::parse(text, &NumberSyntax::default())
}

fn json_of(n: Number) -> String {
    let mut out = Vec::new();
    n.write_json(&mut out);
    String::from_utf8(out).unwrap()
}

fn written(text: &str) -> Option<String> {
    parse(text).map(json_of)
}

#[test]
fn decimals_are_written_as_python_writes_a_decimal() {
    // Each pair checked against Python's str(Decimal(text)).
    let cases = [
        ("1", "1"),
        ("1.2300", "1.2300"),
        ("-1.5", "-1.5"),
        ("+7", "7"),
        (".5", "0.5"),
        ("5.", "5"),
        ("1e5", "1E+5"),
        ("12e2", "1.2E+3"),
        ("1e-3", "0.001"),
        ("0.000001", "0.000001"),
        ("0.0000001", "1E-7"),
        ("0E-7", "0E-7"),
        ("0.00", "0.00"),
        ("-0", "-0"),
        ("007.50", "7.50"),
        (" 42 ", "42"),
        ("\u{a0}3.5\t", "3.5"),
        (
            "123456789012345678901234567890.12345678",
            "123456789012345678901234567890.12345678",
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(written(text).as_deref(), Some(expected), "{text:?}");
    }
}

#[test]
fn special_values_are_read_in_any_case_and_written_as_strings() {
    assert_eq!(written("NaN").as_deref(), Some("\"NaN\""));
    assert_eq!(written("nan").as_deref(), Some("\"NaN\""));
    assert_eq!(written("-nan").as_deref(), Some("\"NaN\""));
    assert_eq!(written("Infinity").as_deref(), Some("\"INF\""));
    assert_eq!(written("inf").as_deref(), Some("\"INF\""));
    assert_eq!(written("-INF").as_deref(), Some("\"-INF\""));
    assert_eq!(written("+Infinity").as_deref(), Some("\"INF\""));
}

#[test]
fn texts_that_are_not_decimals_are_refused() {
    for text in [
        "", " ", ".", "-", "+", "1e", "e5", "1.2.3", "1,5", "12a", "a12", "1 000", "--1", "1_000",
        "sNaN", "NaN1", "infinit", "0x10", "１２", "1e+", "١٢",
    ] {
        assert!(parse(text).is_none(), "{text:?} should not be a number");
    }
}

#[test]
fn at_most_38_significant_digits_but_trailing_zeros_only_shorten_the_scale() {
    let digits38 = "1".repeat(38);
    assert!(parse(&digits38).is_some());
    assert!(parse(&"1".repeat(39)).is_none());
    // 1 followed by 50 zeros: the value stays exact, its trailing zeros move to the exponent.
    let big = format!("1{}", "0".repeat(50));
    assert_eq!(written(&big).as_deref(), Some("1E+50"));
    assert_eq!(parse(&big), parse("1e50"));
    assert!(parse("1e999999999").is_some());
    assert!(parse("1e1000000001").is_none());
}

#[test]
fn numbers_compare_by_value() {
    let n = |t: &str| parse(t).unwrap();
    assert_eq!(n("1.0"), n("1.00"));
    assert_eq!(n("0"), n("-0.000"));
    assert_eq!(n("1e2"), n("100"));
    assert!(n("-2") < n("-1.5"));
    assert!(n("0.1") < n("0.10000000000000000001"));
    assert!(n("99999999999999999999999999999999999999") < n("1e38"));
    assert!(n("-inf") < n("-1e999"));
    assert!(n("inf") > n("1e999"));
    assert_eq!(n("inf").partial_cmp(&n("Infinity")), Some(Ordering::Equal));
    assert_eq!(n("nan").partial_cmp(&n("1")), None);
    assert_ne!(n("nan"), n("nan"));
    assert_eq!(n("1.50").canonical(), n("1.5").canonical());
    assert_ne!(n("1.5").canonical(), n("-1.5").canonical());
    assert_eq!(n("0").canonical(), n("-0.0").canonical());
    assert_eq!(n("nan").canonical(), None);
}

#[test]
fn integers_and_floats_become_exact_decimals() {
    assert_eq!(json_of(Number::from_i64(i64::MIN)), "-9223372036854775808");
    assert_eq!(json_of(Number::from_f64(12.0)), "12");
    assert_eq!(json_of(Number::from_f64(0.1)), "0.1");
    assert_eq!(json_of(Number::from_f64(-2.5e-7)), "-2.5E-7");
    assert_eq!(json_of(Number::from_f64(1e20)), "1E+20");
    assert_eq!(json_of(Number::from_f64(f64::NAN)), "\"NaN\"");
    assert_eq!(json_of(Number::from_f64(f64::NEG_INFINITY)), "\"-INF\"");
    assert_eq!(Number::from_f64(0.5), parse("0.50").unwrap());
}

#[test]
fn decimal_and_group_characters_read_european_numbers() {
    let field = json!({"name": "n", "type": "number", "decimalChar": ",", "groupChar": "."});
    assert_eq!(text_json(&field, "1.234,50").as_deref(), Some("1234.50"));
    assert_eq!(text_json(&field, "1,5").as_deref(), Some("1.5"));
    assert_eq!(
        text_json(&field, "-1.234.567,891").as_deref(),
        Some("-1234567.891")
    );
    // As in frictionless, group characters are dropped wherever they are.
    assert_eq!(text_json(&field, "1.5").as_deref(), Some("15"));
    assert_eq!(text_json(&field, "1,2,3"), None);

    let comma_only = json!({"name": "n", "type": "number", "decimalChar": ","});
    assert_eq!(text_json(&comma_only, "3,25").as_deref(), Some("3.25"));
    // A `.` that is not the decimal character is an error when no group character takes it.
    assert_eq!(text_json(&comma_only, "3.25"), None);

    let spaces =
        json!({"name": "n", "type": "number", "decimalChar": ",", "groupChar": "\u{202f}"});
    assert_eq!(
        text_json(&spaces, "1\u{202f}234\u{202f}567,5").as_deref(),
        Some("1234567.5")
    );

    let thousands = json!({"name": "n", "type": "number", "groupChar": ","});
    assert_eq!(
        text_json(&thousands, "1,234,567.25").as_deref(),
        Some("1234567.25")
    );
    assert_eq!(text_json(&thousands, "1e3").as_deref(), Some("1E+3"));
}

#[test]
fn non_bare_numbers_ignore_text_around_them() {
    let field = json!({"name": "n", "type": "number", "bareNumber": false});
    assert_eq!(text_json(&field, "€ 95").as_deref(), Some("95"));
    assert_eq!(text_json(&field, "95%").as_deref(), Some("95"));
    assert_eq!(text_json(&field, "EUR -12.5 net").as_deref(), Some("-12.5"));
    // The inner comma is not around the number: frictionless refuses `$1,000` too.
    assert_eq!(text_json(&field, "$1,000"), None);
    assert_eq!(text_json(&field, "none"), None);
    let with_group = json!({"name": "n", "type": "number", "bareNumber": false, "groupChar": ","});
    assert_eq!(text_json(&with_group, "$1,000").as_deref(), Some("1000"));

    let integer = json!({"name": "n", "type": "integer", "bareNumber": false});
    assert_eq!(text_json(&integer, "#12 items").as_deref(), Some("12"));
    assert_eq!(text_json(&integer, "about -3").as_deref(), Some("-3"));
    let bare = json!({"name": "n", "type": "integer"});
    assert_eq!(text_json(&bare, "#12"), None);
}
