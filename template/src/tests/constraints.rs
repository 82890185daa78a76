use serde_json::{json, Value as Json};

use super::super::{Cell, Constraint};
use super::one;

/// The constraint (and message) a text cell fails in a field of `descriptor`; `Ok` if none.
fn verdict(descriptor: &Json, text: &str) -> Result<(), (Constraint, String)> {
    let t = one(descriptor.clone());
    let field = &t.fields[0];
    let value = field
        .cast(Cell::Text(text))
        .unwrap_or_else(|_| panic!("{text:?} should cast in {descriptor}"));
    field.check(&value)
}

fn fails(descriptor: &Json, text: &str) -> Option<Constraint> {
    verdict(descriptor, text).err().map(|(c, _)| c)
}

#[test]
fn required_refuses_empty_and_missing_values() {
    let field = json!({"name": "code", "constraints": {"required": true}});
    assert_eq!(fails(&field, "x"), None);
    assert_eq!(
        verdict(&field, ""),
        Err((Constraint::Required, "code: a value is required".into()))
    );
    let optional = json!({"name": "code"});
    assert_eq!(fails(&optional, ""), None);
}

#[test]
fn lengths_count_characters_not_bytes() {
    let field = json!({"name": "s", "constraints": {"minLength": 2, "maxLength": 3}});
    assert_eq!(fails(&field, "ab"), None);
    assert_eq!(fails(&field, "abc"), None);
    assert_eq!(fails(&field, "日本語"), None);
    assert_eq!(fails(&field, "😀😀"), None);
    assert_eq!(
        verdict(&field, "a"),
        Err((
            Constraint::MinLength,
            "s: \"a\" is shorter than 2 characters".into()
        ))
    );
    assert_eq!(fails(&field, "日"), Some(Constraint::MinLength));
    assert_eq!(
        verdict(&field, "abcd"),
        Err((
            Constraint::MaxLength,
            "s: \"abcd\" is longer than 3 characters".into()
        ))
    );
    assert_eq!(fails(&field, "日本語か"), Some(Constraint::MaxLength));
    let one_char = json!({"name": "s", "constraints": {"maxLength": 1}});
    assert_eq!(
        verdict(&one_char, "ab").unwrap_err().1,
        "s: \"ab\" is longer than 1 character"
    );
}

#[test]
fn minimum_and_maximum_bound_every_ordered_type() {
    let cases: [(Json, &str, &str, &str, &str); 6] = [
        (
            json!({"type": "integer", "constraints": {"minimum": 1, "maximum": "10"}}),
            "1",
            "10",
            "0",
            "11",
        ),
        (
            json!({"type": "number", "constraints": {"minimum": 0.5, "maximum": 2}}),
            "0.50",
            "2.000",
            "0.4999",
            "2.0001",
        ),
        (
            json!({"type": "date", "format": "%d/%m/%Y", "constraints": {"minimum": "01/01/2024", "maximum": "2024-12-31"}}),
            "01/01/2024",
            "31/12/2024",
            "31/12/2023",
            "01/01/2025",
        ),
        (
            json!({"type": "datetime", "constraints": {"minimum": "2024-01-01T00:00:00Z"}}),
            "2024-01-01T01:00:00+01:00",
            "2030-01-01T00:00:00",
            "2024-01-01T00:59:59+01:00",
            "2099-01-01T00:00:00Z",
        ),
        (
            json!({"type": "time", "constraints": {"minimum": "09:00:00", "maximum": "17:00:00"}}),
            "09:00:00",
            "17:00:00",
            "08:59:59",
            "17:00:01",
        ),
        (
            json!({"type": "year", "constraints": {"minimum": 1900, "maximum": "2100"}}),
            "1900",
            "2100",
            "1899",
            "2101",
        ),
    ];
    for (mut descriptor, low, high, below, above) in cases {
        descriptor["name"] = json!("v");
        assert_eq!(fails(&descriptor, low), None, "{low} in {descriptor}");
        assert_eq!(fails(&descriptor, high), None, "{high} in {descriptor}");
        assert_eq!(
            fails(&descriptor, below),
            Some(Constraint::Minimum),
            "{below} in {descriptor}"
        );
        let over = fails(&descriptor, above);
        let expected = if descriptor["constraints"].get("maximum").is_some() {
            Some(Constraint::Maximum)
        } else {
            None
        };
        assert_eq!(over, expected, "{above} in {descriptor}");
    }
    let amount = json!({"name": "amount", "type": "number", "constraints": {"minimum": 0}});
    assert_eq!(
        verdict(&amount, "-5"),
        Err((
            Constraint::Minimum,
            "amount: \"-5\" is below the minimum 0".into()
        ))
    );
    assert_eq!(
        verdict(&amount, "NaN"),
        Err((
            Constraint::Minimum,
            "amount: \"NaN\" cannot be compared with the minimum 0".into()
        ))
    );
    assert_eq!(fails(&amount, "Infinity"), None);
    assert_eq!(fails(&amount, "-Infinity"), Some(Constraint::Minimum));
}

#[test]
fn patterns_match_the_whole_value() {
    let field = json!({"name": "code", "constraints": {"pattern": "[A-Z]{2}-\\d+"}});
    assert_eq!(fails(&field, "AB-12"), None);
    assert_eq!(
        verdict(&field, "AB-12x"),
        Err((
            Constraint::Pattern,
            "code: \"AB-12x\" does not match the pattern [A-Z]{2}-\\d+".into()
        ))
    );
    assert_eq!(fails(&field, "xAB-12"), Some(Constraint::Pattern));
    let alternatives = json!({"name": "c", "constraints": {"pattern": "a|b"}});
    assert_eq!(fails(&alternatives, "a"), None);
    assert_eq!(fails(&alternatives, "b"), None);
    assert_eq!(fails(&alternatives, "axyz"), Some(Constraint::Pattern));
    let unicode = json!({"name": "c", "constraints": {"pattern": "\\w+"}});
    assert_eq!(fails(&unicode, "Zürich"), None);
}

#[test]
fn enums_compare_values_of_the_field_type() {
    let string = json!({"name": "status", "constraints": {"enum": ["open", "closed"]}});
    assert_eq!(fails(&string, "open"), None);
    assert_eq!(
        verdict(&string, "done"),
        Err((
            Constraint::Enum,
            "status: \"done\" is not one of \"open\", \"closed\"".into()
        ))
    );
    assert_eq!(fails(&string, "Open"), Some(Constraint::Enum));

    let number = json!({"name": "n", "type": "number", "constraints": {"enum": [1.5, "2", 3]}});
    assert_eq!(fails(&number, "1.50"), None);
    assert_eq!(fails(&number, "2.0"), None);
    assert_eq!(fails(&number, "3e0"), None);
    assert_eq!(fails(&number, "NaN"), Some(Constraint::Enum));
    assert_eq!(fails(&number, "4"), Some(Constraint::Enum));

    let date = json!({"name": "d", "type": "date", "format": "%d/%m/%Y", "constraints": {"enum": ["01/02/2024"]}});
    assert_eq!(fails(&date, "1/2/2024"), None);
    assert_eq!(fails(&date, "02/01/2024"), Some(Constraint::Enum));

    let boolean = json!({"name": "b", "type": "boolean", "constraints": {"enum": [true]}});
    assert_eq!(fails(&boolean, "1"), None);
    assert_eq!(fails(&boolean, "0"), Some(Constraint::Enum));

    let many: Vec<String> = (0..25).map(|i| format!("v{i}")).collect();
    let long = json!({"name": "e", "constraints": {"enum": many}});
    let message = verdict(&long, "x").unwrap_err().1;
    assert!(
        message.ends_with("\"v8\", \"v9\", … (25 values)"),
        "{message}"
    );
}

#[test]
fn the_first_failing_constraint_is_the_one_reported() {
    let field =
        json!({"name": "s", "constraints": {"minLength": 3, "pattern": "[a-z]+", "enum": ["abc"]}});
    assert_eq!(fails(&field, "AB"), Some(Constraint::MinLength));
    assert_eq!(fails(&field, "ABC"), Some(Constraint::Pattern));
    assert_eq!(fails(&field, "abd"), Some(Constraint::Enum));
}

#[test]
fn long_values_are_cut_in_messages() {
    let field = json!({"name": "s", "constraints": {"maxLength": 5}});
    let text = "é".repeat(500);
    let message = verdict(&field, &text).unwrap_err().1;
    assert_eq!(
        message,
        format!("s: \"{}…\" is longer than 5 characters", "é".repeat(200))
    );
}

#[test]
fn a_pattern_built_to_backtrack_still_runs_in_linear_time() {
    // `(a+)+$` takes exponential time in a backtracking engine on "aaa…b"; here it must just
    // return (no timing assertion).
    let field = json!({"name": "s", "constraints": {"pattern": "(a+)+"}});
    let text = format!("{}b", "a".repeat(100_000));
    assert_eq!(fails(&field, &text), Some(Constraint::Pattern));
    let nested = json!({"name": "s", "constraints": {"pattern": "(a|aa|a?)*(a*)*c"}});
    assert_eq!(fails(&nested, &text), Some(Constraint::Pattern));
}

/// A pattern's DFA walk says what the regex says, on patterns of every kind (Unicode classes,
/// alternations, repetitions, anchors inside, empty matches) and texts that end early, late or
/// in the middle of a character; a pattern with a Unicode word boundary, or whose DFA would pass
/// the size cap (a Unicode `\w` repeated), has no DFA and still answers through the regex.
#[test]
fn pattern_dfa_walks_agree_with_the_regex() {
    let patterns = [
        "C-[0-9]{8}",
        "[A-Z]{2}-\\d{4}",
        "a|ab",
        "(ab)*",
        "",
        "\\w+",
        "[α-ω]+\\s?\\d*",
        "(?i)straße",
        "x{2,3}y?",
        "^a$|b",
        "\\bword\\b",
        ".*",
    ];
    let texts = [
        "",
        "C-12345678",
        "C-1234567",
        "C-123456789",
        "c-12345678",
        "AB-1234",
        "AB-12345",
        "a",
        "ab",
        "abab",
        "aba",
        "word",
        "a word",
        "αβγ 12",
        "αβγ",
        "STRASSE",
        "Straße",
        "xx",
        "xxxy",
        "xxxxy",
        "b",
        "\u{1F600}",
        "\n",
    ];
    let mut matched = 0;
    for pattern in patterns {
        let descriptor = json!({"name": "p", "constraints": {"pattern": pattern}});
        let template = one(descriptor);
        let compiled = template.fields[0]
            .rules
            .pattern
            .as_ref()
            .expect("a pattern");
        for text in texts {
            let expected = compiled.regex().expect("the regex builds").is_match(text);
            assert_eq!(compiled.is_match(text), expected, "{pattern:?} on {text:?}");
            matched += usize::from(expected);
        }
        let has_dfa = compiled.dfa.get().is_some_and(Option::is_some);
        let expected = !matches!(pattern, "\\w+" | "\\bword\\b");
        assert_eq!(has_dfa, expected, "{pattern:?}");
    }
    assert!(matched > 20, "{matched}");
}
