//! Transforms and `formats` (contract v1.3): what each makes of a cell, how errors show both
//! texts, and the schema problems each can have.

use serde_json::{json, Value as Json};

use super::super::validate::{map_columns, mapping, ErrorRecord, RowValidator};
use super::super::{compile, Cell, Template};
use super::{one, template};

/// Validates `cells` of the field `descriptor` (its column headed by the field's name), each
/// in a row beside a filled column `k` (so an empty cell is not a blank row): the stored JSON
/// value and the errors.
fn run(descriptor: Json, cells: &[Cell<'_>]) -> Vec<(Json, Vec<ErrorRecord>)> {
    let t = template(json!({"fields": [descriptor, {"name": "k"}]}));
    let header = [t.fields[0].name.as_str(), "k"];
    let (mut v, _) = RowValidator::new(&t, &header, mapping(&map_columns(&t, &header)), 1);
    cells
        .iter()
        .enumerate()
        .map(|(i, cell)| {
            let (mut out, mut errors) = (Vec::new(), Vec::new());
            let row = [*cell, Cell::Text("x")];
            v.row(i as u64 + 2, &row, &mut out, &mut |e| errors.push(e));
            let row: Json = serde_json::from_slice(&out).expect("a row is JSON");
            (row[0].clone(), errors)
        })
        .collect()
}

/// The stored values of text cells through a string field with `transforms`.
fn strings(transforms: Json, texts: &[&str]) -> Vec<Json> {
    let cells: Vec<Cell<'_>> = texts.iter().map(|t| Cell::Text(t)).collect();
    run(json!({"name": "f", "transforms": transforms}), &cells)
        .into_iter()
        .map(|(value, errors)| {
            assert!(errors.is_empty(), "{errors:?}");
            value
        })
        .collect()
}

#[test]
fn text_transforms_apply_in_order() {
    assert_eq!(
        strings(json!(["trim", "collapse_spaces"]), &["  a \t b  ", "x"]),
        vec![json!("a b"), json!("x")]
    );
    assert_eq!(strings(json!(["lower"]), &["ÄBC"]), vec![json!("äbc")]);
    assert_eq!(
        strings(json!(["upper"]), &["straße"]),
        vec![json!("STRASSE")]
    );
    assert_eq!(
        strings(json!(["title"]), &["o'neil-SMITH von berg"]),
        vec![json!("O'Neil-Smith Von Berg")]
    );
    assert_eq!(
        strings(
            json!([{"replace": {"pattern": "(\\d+)-(\\d+)", "with": "$2/$1"}}]),
            &["12-34 and 5-6"]
        ),
        vec![json!("34/12 and 6/5")]
    );
    assert_eq!(
        strings(
            json!([{"split": {"separator": ";", "index": 1}}]),
            &["a;b;c", "a"]
        ),
        vec![json!("b"), Json::Null]
    );
    // The order matters: upper case first, then the map of upper-case texts.
    assert_eq!(
        strings(
            json!(["upper", {"map": {"CALIF.": "CA"}}]),
            &["calif.", "ny"]
        ),
        vec![json!("CA"), json!("NY")]
    );
}

#[test]
fn map_reads_a_boolean_and_an_enum_with_or_without_case() {
    let yes_no = json!({"name": "ok", "type": "boolean", "transforms": [
        {"map": {"ja": "true", "nein": "false", "Y": "true", "N": "false"}, "ignore_case": true}
    ]});
    let cells = [
        Cell::Text("JA"),
        Cell::Text("n"),
        Cell::Text("true"),
        Cell::Text("vielleicht"),
    ];
    let got = run(yes_no, &cells);
    let values: Vec<&Json> = got.iter().map(|(v, _)| v).collect();
    assert_eq!(
        values,
        [
            &json!(true),
            &json!(false),
            &json!(true),
            &json!("vielleicht")
        ]
    );
    assert!(got[..3].iter().all(|(_, e)| e.is_empty()));
    assert_eq!(got[3].1.len(), 1);
    let exact = json!({"name": "state", "transforms": [{"map": {"Calif.": "CA"}}],
                       "constraints": {"enum": ["CA", "NY"]}});
    let got = run(exact, &[Cell::Text("Calif."), Cell::Text("calif.")]);
    assert!(got[0].1.is_empty());
    assert_eq!(got[0].0, json!("CA"));
    assert_eq!(got[1].1[0].code.as_str(), "constraint-error");
}

#[test]
fn default_fills_empty_and_missing_cells_only() {
    let f = json!({"name": "country", "transforms": [{"default": "DE"}]});
    let got = run(f, &[Cell::Empty, Cell::Text(""), Cell::Text("FR")]);
    let values: Vec<&Json> = got.iter().map(|(v, _)| v).collect();
    assert_eq!(values, [&json!("DE"), &json!("DE"), &json!("FR")]);
}

/// libphonenumber's own test numbers (PhoneNumberUtilTest: US_NUMBER 650 253 0000, GB_NUMBER
/// 20 7031 3000, DE_NUMBER 30 123456, IT_NUMBER 02 3661 8300), written as people write them.
#[test]
fn phone_numbers_become_e164() {
    let cases = [
        ("US", "(650) 253-0000", "+16502530000"),
        ("US", "650.253.0000", "+16502530000"),
        ("GB", "020 7031 3000", "+442070313000"),
        ("DE", "030/123456", "+4930123456"),
        ("DE", "(030) 123456", "+4930123456"),
        ("DE", "+49 30 123456", "+4930123456"),
        ("DE", "0049 30 123456", "+4930123456"),
        ("IT", "02 3661 8300", "+390236618300"),
        // Its own country code wins over the region.
        ("DE", "+1 650 253 0000", "+16502530000"),
    ];
    for (region, text, e164) in cases {
        let f = json!({"name": "phone", "transforms": [{"phone": {"region": region}}]});
        let got = run(f, &[Cell::Text(text)]);
        assert_eq!(got[0].0, json!(e164), "{region} {text}");
        assert!(got[0].1.is_empty(), "{region} {text}: {:?}", got[0].1);
    }
}

#[test]
fn an_unreadable_phone_number_is_a_type_error_that_keeps_the_cell() {
    let f = json!({"name": "phone", "transforms": ["trim", {"phone": {"region": "DE"}}]});
    let got = run(
        f,
        &[Cell::Text("call me"), Cell::Text("12"), Cell::Text("")],
    );
    for (value, errors) in &got[..2] {
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].code.as_str(), "type-error");
        assert!(
            errors[0].message.contains("phone number (of region DE)"),
            "{}",
            errors[0].message
        );
        assert_eq!(
            errors[0].value.as_ref(),
            value.as_str().map(String::from).as_ref()
        );
    }
    assert_eq!(got[0].0, json!("call me"));
    // An empty cell is missing, not a wrong number.
    assert_eq!(got[2], (Json::Null, vec![]));
}

#[test]
fn an_error_shows_the_original_and_the_transformed_text() {
    let f = json!({"name": "qty", "type": "integer", "transforms": ["trim", "lower"],
                   "constraints": {"maximum": 10}});
    let got = run(
        f,
        &[
            Cell::Text(" 12 "),
            Cell::Text(" X "),
            Cell::Text("oops"),
            Cell::Text(" 7"),
        ],
    );
    let (stored, errors) = &got[0];
    assert_eq!(errors[0].code.as_str(), "constraint-error");
    assert_eq!(errors[0].value.as_deref(), Some(" 12 "));
    assert_eq!(errors[0].transformed.as_deref(), Some("12"));
    // A failing cell is stored as the file had it.
    assert_eq!(stored, &json!(" 12 "));
    let (stored, errors) = &got[1];
    assert_eq!(errors[0].code.as_str(), "type-error");
    assert_eq!(
        (errors[0].value.as_deref(), errors[0].transformed.as_deref()),
        (Some(" X "), Some("x"))
    );
    assert_eq!(stored, &json!(" X "));
    // Transforms that change nothing leave `transformed` out.
    assert_eq!(got[2].1[0].transformed, None);
    let record = serde_json::to_value(&got[2].1[0]).expect("serializes");
    assert!(record.get("transformed").is_none(), "{record}");
    assert_eq!(got[3], (json!(7), vec![]));
}

#[test]
fn typed_workbook_cells_are_transformed_only_in_string_fields() {
    let number = json!({"name": "n", "type": "number", "transforms": [{"replace": {"pattern": "5", "with": "6"}}]});
    assert_eq!(run(number, &[Cell::Float(1.5)])[0], (json!(1.5), vec![]));
    let text = json!({"name": "t", "transforms": [{"replace": {"pattern": "5", "with": "6"}}]});
    assert_eq!(run(text, &[Cell::Float(1.5)])[0], (json!("1.6"), vec![]));
    let phone = json!({"name": "p", "transforms": [{"phone": {"region": "US"}}]});
    assert_eq!(
        run(phone, &[Cell::Int(6_502_530_000)])[0],
        (json!("+16502530000"), vec![])
    );
}

#[test]
fn uniqueness_holds_on_the_transformed_values() {
    let f = json!({"name": "email", "transforms": ["trim", "lower"],
                   "constraints": {"unique": true}});
    let got = run(f, &[Cell::Text("A@x.org"), Cell::Text(" a@X.org ")]);
    assert_eq!(got[1].1[0].code.as_str(), "unique-error");
    assert_eq!(got[1].1[0].transformed.as_deref(), Some("a@x.org"));
}

#[test]
fn formats_read_dates_in_several_layouts() {
    let t = template(json!({"fields": [
        {"name": "d", "type": "date", "formats": ["%d.%m.%Y", "%m/%d/%Y"]},
        {"name": "dt", "type": "datetime", "format": "default", "formats": ["%d.%m.%Y %H:%M"]},
    ]}));
    let read = |i: usize, text: &str| super::cast_json(&t.fields[i], Cell::Text(text));
    assert_eq!(read(0, "31.01.2024").as_deref(), Some("\"2024-01-31\""));
    assert_eq!(read(0, "01/31/2024").as_deref(), Some("\"2024-01-31\""));
    assert_eq!(read(0, "2024-01-31"), None, "formats replace the default");
    assert_eq!(
        read(1, "2024-01-31T10:00:00").as_deref(),
        Some("\"2024-01-31T10:00:00\"")
    );
    assert_eq!(
        read(1, "31.01.2024 10:00").as_deref(),
        Some("\"2024-01-31T10:00:00\"")
    );
    assert!(
        t.fields[0].expected().contains("%d.%m.%Y or %m/%d/%Y"),
        "{}",
        t.fields[0].expected()
    );
}

fn problems(fields: Json) -> Vec<(String, String)> {
    match compile(&json!({ "fields": fields })) {
        Ok(_) => Vec::new(),
        Err(problems) => problems
            .into_iter()
            .map(|p| (p.pointer, p.message))
            .collect(),
    }
}

fn pointers(fields: Json) -> Vec<String> {
    problems(fields).into_iter().map(|(p, _)| p).collect()
}

#[test]
fn a_transform_that_cannot_apply_is_refused_at_its_pointer() {
    assert_eq!(
        pointers(
            json!([{"name": "a", "type": "integer", "transforms": [{"phone": {"region": "DE"}}]}])
        ),
        ["/fields/0/transforms/0/phone"]
    );
    assert_eq!(
        pointers(json!([{"name": "a", "transforms": ["trim", {"phone": {"region": "XX"}}]}])),
        ["/fields/0/transforms/1/phone/region"]
    );
    assert_eq!(
        pointers(json!([{"name": "a", "transforms": [{"replace": {"pattern": "(", "with": ""}}]}])),
        ["/fields/0/transforms/0/replace/pattern"]
    );
    assert_eq!(
        pointers(json!([{"name": "a", "type": "integer", "transforms": [{"default": "none"}]}])),
        ["/fields/0/transforms/0/default"]
    );
    assert_eq!(
        pointers(json!([{"name": "a", "transforms": ["strip", {"trim": true}, 3, {"map": []}]}])),
        [
            "/fields/0/transforms/0",
            "/fields/0/transforms/1",
            "/fields/0/transforms/2",
            "/fields/0/transforms/3/map"
        ]
    );
    assert_eq!(
        pointers(json!([{"name": "a", "transforms": [{"split": {"separator": "", "index": 1}}]}])),
        ["/fields/0/transforms/0/split/separator"]
    );
    assert_eq!(
        pointers(json!([{"name": "d", "type": "date", "formats": ["%d.%m.%Y", "dd/mm"]}])),
        ["/fields/0/formats/1"]
    );
}

#[test]
fn transform_lists_and_maps_are_bounded() {
    let many: Vec<Json> = (0..1_000).map(|_| json!("trim")).collect();
    let found = problems(json!([{"name": "a", "transforms": many}]));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "/fields/0/transforms");
    let big: serde_json::Map<String, Json> = (0..100_000)
        .map(|i| (format!("k{i}"), json!("v")))
        .collect();
    let found = problems(json!([{"name": "a", "transforms": [{"map": big}]}]));
    assert_eq!(found.len(), 1);
    assert!(found[0].1.contains("at most 10000"), "{found:?}");
}

#[test]
fn a_template_without_transforms_is_unchanged() {
    let t: Template = one(json!({"name": "a", "type": "integer"}));
    assert!(t.fields[0].transforms.is_none());
}
