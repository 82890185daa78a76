use serde_json::{json, Value as Json};

use super::super::{compile, FieldType, Problem, TEMPLATE_PATTERN_BYTES};
use super::template;

/// The problems of a schema that must not compile, as (pointer, message) pairs.
fn problems(schema: Json) -> Vec<(String, String)> {
    match compile(&schema) {
        Ok(_) => panic!("{schema} should not compile"),
        Err(problems) => problems
            .into_iter()
            .map(|Problem { pointer, message }| (pointer, message))
            .collect(),
    }
}

fn pointers(schema: Json) -> Vec<String> {
    problems(schema).into_iter().map(|(p, _)| p).collect()
}

#[test]
fn a_valid_schema_compiles_into_fields_key_and_options() {
    let t = template(json!({
        "$schema": "https://frictionlessdata.io/schemas/table-schema.json",
        "missingValues": ["", "NA"],
        "primaryKey": ["invoice_no", "year"],
        "x-custom": {"anything": true},
        "fields": [
            {"name": "invoice_no", "title": "Invoice no", "alternateNames": ["Invoice", "Rechnung"],
             "constraints": {"pattern": "[A-Z]-\\d+"}, "x-note": "custom properties are allowed"},
            {"name": "year", "type": "year"},
            {"name": "amount", "type": "number", "decimalChar": ",", "groupChar": ".",
             "constraints": {"required": true, "minimum": 0, "unique": true}},
            {"name": "issued_on", "type": "date", "format": "%d/%m/%Y", "example": "31/12/2024"},
            {"name": "paid", "type": "boolean", "trueValues": ["yes"], "falseValues": ["no"]},
        ]
    }));
    assert_eq!(t.fields.len(), 5);
    assert_eq!(t.primary_key, vec![0, 1]);
    let invoice = &t.fields[0];
    assert_eq!(invoice.field_type, FieldType::String);
    assert_eq!(invoice.title.as_deref(), Some("Invoice no"));
    assert_eq!(invoice.alternate_names, vec!["Invoice", "Rechnung"]);
    // Primary-key fields are required.
    assert!(invoice.required && t.fields[1].required);
    assert!(t.fields[2].required && t.fields[2].unique);
    assert!(!t.fields[3].required);
    assert_eq!(t.fields[3].format, "%d/%m/%Y");
    assert_eq!(t.field_index("paid"), Some(4));
    // A single key field may be written as a string.
    let single =
        template(json!({"primaryKey": "id", "fields": [{"name": "id", "type": "integer"}]}));
    assert_eq!(single.primary_key, vec![0]);
}

#[test]
fn every_problem_of_a_document_is_listed_with_its_pointer() {
    let found = problems(json!({
        "missingValues": ["", 3],
        "primaryKey": ["id", "nope"],
        "fields": [
            {"name": "id", "type": "integer", "constraints": {"minLength": 1, "minimum": "ten"}},
            {"name": "id", "type": "text"},
            {"type": "string", "constraints": {"pattern": "(unclosed", "maximum": 3}},
            {"name": "when", "type": "date", "format": "%d/%q/%Y"},
            {"name": "flag", "type": "boolean", "constraints": {"required": "yes", "exclusiveMinimum": 1}},
            {"name": "n", "type": "number", "constraints": {"minimum": 10, "maximum": 5, "enum": [1, "x"]}},
            "not an object",
        ]
    }));
    let expected: &[(&str, &str)] = &[
        ("/missingValues/1", "must be a string, not a number"),
        ("/fields/0/constraints/minLength", "\"minLength\" does not apply to an integer field"),
        ("/fields/0/constraints/minimum", "\"ten\" is not an integer value"),
        ("/fields/1/type", "unknown type \"text\" (one of string, integer, number, boolean, date, datetime, time, year, any)"),
        ("/fields/2", "a field needs a \"name\""),
        ("/fields/2/constraints/maximum", "\"maximum\" does not apply to a string field"),
        ("/fields/2/constraints/pattern", "the pattern is not valid: unclosed group"),
        ("/fields/3/format", "the pattern \"%d/%q/%Y\" is not valid: %q is not a strptime directive"),
        ("/fields/4/constraints/exclusiveMinimum", "\"exclusiveMinimum\" is not a constraint this engine supports"),
        ("/fields/4/constraints/required", "must be true or false, not a string"),
        ("/fields/5/constraints/enum/1", "\"x\" is not a number value"),
        ("/fields/5/constraints/maximum", "maximum 5 is below minimum 10"),
        ("/fields/6", "a field must be a JSON object, not a string"),
        ("/fields/1/name", "\"id\" is already the name of field 0"),
        ("/primaryKey/1", "\"nope\" is not the name of a field"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(p, m)| (p.to_string(), m.to_string()))
        .collect();
    assert_eq!(found, expected);
}

#[test]
fn the_document_and_its_fields_must_be_there() {
    assert_eq!(
        problems(json!([])),
        vec![(
            "".to_string(),
            "a Table Schema must be a JSON object, not an array".to_string()
        )]
    );
    assert_eq!(pointers(json!({})), vec!["/fields"]);
    assert_eq!(pointers(json!({"fields": []})), vec!["/fields"]);
    assert_eq!(pointers(json!({"fields": {"name": "a"}})), vec!["/fields"]);
    assert_eq!(
        pointers(json!({"fields": [{"name": ""}, {"name": 7}, {"name": "x".repeat(257)}]})),
        vec!["/fields/0/name", "/fields/1/name", "/fields/2/name"]
    );
}

#[test]
fn a_template_may_have_1000_fields_but_not_1001() {
    let fields = |n: usize| -> Vec<Json> {
        (0..n)
            .map(|i| json!({"name": format!("f{i}"), "type": "integer", "constraints": {"minimum": 0}}))
            .collect()
    };
    assert_eq!(template(json!({"fields": fields(1000)})).fields.len(), 1000);
    assert_eq!(
        problems(json!({"fields": fields(1001)})),
        vec![(
            "/fields".to_string(),
            "at most 1000 fields are allowed (1001 here)".to_string()
        )]
    );
}

#[test]
fn listed_values_and_texts_are_bounded() {
    let values: Vec<String> = (0..10_001).map(|i| i.to_string()).collect();
    assert_eq!(
        pointers(json!({"fields": [{"name": "e", "constraints": {"enum": values}}]})),
        vec!["/fields/0/constraints/enum"]
    );
    let values: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
    template(json!({"fields": [{"name": "e", "constraints": {"enum": values}}]}));
    let missing: Vec<String> = (0..101).map(|i| format!("m{i}")).collect();
    assert_eq!(
        pointers(json!({"missingValues": missing, "fields": [{"name": "a"}]})),
        vec!["/missingValues"]
    );
    assert_eq!(
        pointers(
            json!({"fields": [{"name": "a", "title": "t".repeat(257), "alternateNames": ["ok", "a".repeat(257)]}]})
        ),
        vec!["/fields/0/title", "/fields/0/alternateNames/1"]
    );
    assert_eq!(
        pointers(json!({"fields": [{"name": "a", "constraints": {"pattern": "a".repeat(1001)}}]})),
        vec!["/fields/0/constraints/pattern"]
    );
    template(json!({"fields": [{"name": "a", "constraints": {"pattern": "a".repeat(1000)}}]}));
    assert_eq!(
        pointers(json!({"fields": [{"name": "a", "constraints": {"enum": []}}]})),
        vec!["/fields/0/constraints/enum"]
    );
}

#[test]
fn hostile_patterns_are_template_problems() {
    let found = problems(json!({"fields": [
        {"name": "a", "constraints": {"pattern": "(\\w{50}){50}"}},
        {"name": "b", "constraints": {"pattern": "(a)\\1"}},
        {"name": "c", "constraints": {"pattern": "a(?=b)"}},
        {"name": "d", "constraints": {"pattern": 5}},
    ]}));
    assert_eq!(found[0].0, "/fields/0/constraints/pattern");
    assert!(
        found[0].1.starts_with("the pattern is too large"),
        "{}",
        found[0].1
    );
    assert_eq!(
        found[1],
        (
            "/fields/1/constraints/pattern".to_string(),
            "the pattern is not valid: backreferences are not supported".to_string()
        )
    );
    assert_eq!(found[2].0, "/fields/2/constraints/pattern");
    assert!(found[2].1.contains("look-around"), "{}", found[2].1);
    assert_eq!(found[3].1, "must be a string, not a number");
}

fn article(field_type: &str) -> String {
    match field_type {
        "integer" | "any" => format!("an {field_type}"),
        _ => format!("a {field_type}"),
    }
}

#[test]
fn constraints_must_fit_the_field_type() {
    let misfits = [
        ("string", "minimum", json!(1)),
        ("integer", "pattern", json!("\\d+")),
        ("boolean", "minLength", json!(1)),
        ("boolean", "maximum", json!(true)),
        ("date", "maxLength", json!(3)),
        ("any", "minimum", json!(1)),
        ("year", "pattern", json!("\\d+")),
    ];
    for (field_type, constraint, value) in misfits {
        let schema = json!({"fields": [{"name": "f", "type": field_type, "constraints": {constraint: value}}]});
        assert_eq!(
            problems(schema),
            vec![(
                format!("/fields/0/constraints/{constraint}"),
                format!(
                    "\"{constraint}\" does not apply to {} field",
                    article(field_type)
                )
            )]
        );
    }
}

#[test]
fn formats_must_exist_for_their_type() {
    let cases = [
        (json!({"name": "a", "format": "binary"}), "a string field has no format \"binary\" (one of default, email, uri, uuid)"),
        (json!({"name": "a", "type": "integer", "format": "currency"}), "an integer field has no format \"currency\" (only \"default\")"),
        (
            json!({"name": "a", "type": "date", "format": "dd/mm/yyyy"}),
            "\"dd/mm/yyyy\" is not a format: use \"default\", \"any\" or a strptime pattern such as %d/%m/%Y",
        ),
        (json!({"name": "a", "type": "time", "format": "%H:%M %Z"}), "the pattern \"%H:%M %Z\" is not valid: %Z (time zone names) is not supported; use %z"),
        (json!({"name": "a", "type": "datetime", "format": 3}), "must be a string, not a number"),
        (json!({"name": "a", "type": "geopoint"}), "the type \"geopoint\" is not supported"),
    ];
    for (field, message) in cases {
        let found = problems(json!({"fields": [field]}));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, message);
    }
}

#[test]
fn type_options_are_checked() {
    assert_eq!(
        pointers(json!({"fields": [
            {"name": "a", "type": "number", "decimalChar": ",,"},
            {"name": "b", "type": "number", "decimalChar": ",", "groupChar": ","},
            {"name": "c", "type": "number", "groupChar": "1"},
            {"name": "d", "type": "integer", "bareNumber": "no"},
            {"name": "e", "type": "boolean", "trueValues": ["y", "n"], "falseValues": ["n"]},
            {"name": "f", "type": "boolean", "trueValues": "y"},
            {"name": "g", "required": true},
            {"name": "h", "type": "date", "example": "tomorrow"},
            {"name": "i", "missingValues": [null]},
        ]})),
        vec![
            "/fields/0/decimalChar",
            "/fields/1/groupChar",
            "/fields/2/groupChar",
            "/fields/3/bareNumber",
            "/fields/4/falseValues/0",
            "/fields/5/trueValues",
            "/fields/6/required",
            "/fields/7/example",
            "/fields/8/missingValues/0",
        ]
    );
    // Options of other types are custom properties, as in frictionless.
    template(
        json!({"fields": [{"name": "a", "type": "string", "decimalChar": ",,", "trueValues": 3}]}),
    );
}

#[test]
fn header_texts_may_name_only_one_field() {
    assert_eq!(
        problems(json!({"fields": [
            {"name": "net", "title": "Amount"},
            {"name": "gross", "alternateNames": ["Amount", "gross"]},
            {"name": "Amount"},
        ]})),
        vec![
            (
                "/fields/1/alternateNames/0".to_string(),
                "\"Amount\" is also the title of field 0, so a column with this header could be either"
                    .to_string()
            ),
            (
                "/fields/2/name".to_string(),
                "\"Amount\" is also the title of field 0, so a column with this header could be either"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn primary_keys_name_each_field_once_and_foreign_keys_are_refused() {
    let fields = json!([{"name": "a"}, {"name": "b"}]);
    assert_eq!(
        pointers(json!({"fields": fields, "primaryKey": ["a", "a", 3]})),
        vec!["/primaryKey/1", "/primaryKey/2"]
    );
    assert_eq!(
        pointers(json!({"fields": fields, "primaryKey": 3})),
        vec!["/primaryKey"]
    );
    assert_eq!(
        pointers(
            json!({"fields": fields, "foreignKeys": [{"fields": "a", "reference": {"resource": "x", "fields": "id"}}]})
        ),
        vec!["/foreignKeys"]
    );
    template(json!({"fields": fields, "foreignKeys": []}));
}

#[test]
fn pointers_escape_property_names() {
    assert_eq!(
        pointers(json!({"fields": [{"name": "a", "constraints": {"a/b~c": 1}}]})),
        vec!["/fields/0/constraints/a~1b~0c"]
    );
}

/// A schema of `n` string fields, field `i` with the pattern `pattern(i)`.
fn patterned(n: usize, pattern: impl Fn(usize) -> String) -> Json {
    let fields: Vec<Json> = (0..n)
        .map(|i| json!({"name": format!("f{i}"), "constraints": {"pattern": pattern(i)}}))
        .collect();
    json!({ "fields": fields })
}

#[test]
fn a_thousand_fields_with_one_pattern_share_one_compiled_program() {
    let t = compile(&patterned(1000, |_| r"\w{4}".into())).expect("compiles");
    let first = t.fields[0].rules.pattern.as_ref().expect("a pattern");
    assert!(t.fields.iter().all(|f| f
        .rules
        .pattern
        .as_ref()
        .is_some_and(|p| std::sync::Arc::ptr_eq(p, first))));
    assert!(first.is_match("abcd") && !first.is_match("abc"));
}

#[test]
fn a_thousand_distinct_code_patterns_fit_the_templates_budget() {
    let t = compile(&patterned(1000, |i| format!("C{i}-[0-9]{{8}}"))).expect("compiles");
    assert_eq!(t.fields.len(), 1000);
}

#[test]
fn patterns_past_the_templates_budget_are_one_problem_each_with_its_pointer() {
    // Distinct repeated Unicode classes: each fits alone, their sum does not.
    let found = problems(patterned(1000, |i| format!(r"\w{{4}}{i}")));
    assert!(!found.is_empty());
    assert!(found.len() < 1000, "the first patterns fit");
    for (pointer, message) in &found {
        assert!(pointer.ends_with("/constraints/pattern"), "{pointer}");
        assert!(
            message.contains(&format!("more than {TEMPLATE_PATTERN_BYTES} bytes in all")),
            "{message}"
        );
    }
}
