use chrono::NaiveDate;
use serde_json::{json, Value as Json};

use super::super::validate::{
    map_columns, mapping, ErrorCode, ErrorRecord, MappedField, MatchKind, RowValidator,
    PRIMARY_KEY_SLOT,
};
use super::super::{Cell, Constraint, Template};
use super::template;

fn invoices() -> Template {
    template(json!({
        "missingValues": ["", "NA"],
        "fields": [
            {"name": "invoice_no", "title": "Invoice no",
             "constraints": {"required": true, "unique": true}},
            {"name": "amount", "type": "number", "alternateNames": ["Betrag"],
             "constraints": {"minimum": 0}},
            {"name": "issued_on", "type": "date", "format": "%d/%m/%Y"},
            {"name": "paid", "type": "boolean"},
        ]
    }))
}

/// A validator for `header`, mapped by [`map_columns`], with the header in row 1.
fn validator<'t>(t: &'t Template, header: &[&str]) -> (RowValidator<'t>, Vec<ErrorRecord>) {
    RowValidator::new(t, header, mapping(&map_columns(t, header)), 1)
}

/// Validates one row of text cells: (valid, the row's JSON, its errors).
fn text_row(v: &mut RowValidator<'_>, row: u64, cells: &[&str]) -> (bool, Json, Vec<ErrorRecord>) {
    let cells: Vec<Cell<'_>> = cells.iter().map(|c| Cell::Text(c)).collect();
    typed_row(v, row, &cells)
}

fn typed_row(
    v: &mut RowValidator<'_>,
    row: u64,
    cells: &[Cell<'_>],
) -> (bool, Json, Vec<ErrorRecord>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let valid = v.row(row, cells, &mut out, &mut |e| errors.push(e));
    let json = serde_json::from_slice(&out).expect("the row is JSON");
    (valid, json, errors)
}

fn codes(errors: &[ErrorRecord]) -> Vec<&'static str> {
    errors.iter().map(|e| e.code.as_str()).collect()
}

#[test]
fn fields_match_columns_by_name_then_title_then_alternate_name() {
    let t = invoices();
    let header = ["Betrag", "paid", "Invoice no", "invoice_no", "x"];
    let mapped = map_columns(&t, &header);
    let found: Vec<(Option<usize>, Option<MatchKind>)> =
        mapped.iter().map(|m| (m.column, m.how)).collect();
    assert_eq!(
        found,
        vec![
            // The exact name wins over the title, whatever their order.
            (Some(3), Some(MatchKind::Exact)),
            (Some(0), Some(MatchKind::Alias)),
            (None, None),
            (Some(1), Some(MatchKind::Exact)),
        ]
    );
    assert_eq!(mapped[0].confidence, 1.0);
    assert_eq!(mapped[2].confidence, 0.0);
    assert_eq!(mapping(&mapped), vec![Some(3), Some(0), None, Some(1)]);
    // A title takes the column when the name is absent; then a normalised text.
    let mapped = map_columns(&t, &["Invoice no", "AMOUNT"]);
    assert_eq!(
        mapped[0],
        MappedField {
            field: 0,
            column: Some(0),
            how: Some(MatchKind::Title),
            confidence: 1.0,
            competitor: None,
        }
    );
    assert_eq!(
        (mapped[1].column, mapped[1].how),
        (Some(1), Some(MatchKind::Normalized))
    );
}

#[test]
fn two_fields_never_share_a_column() {
    // A compiled template names each header text once, so only a repeated header text or a
    // caller's mapping could put two fields on one column.
    let t = template(json!({"fields": [{"name": "a"}, {"name": "b", "title": "B"}]}));
    assert_eq!(
        mapping(&map_columns(&t, &["a", "a", "B"])),
        vec![Some(0), Some(2)]
    );
    let (v, _) = RowValidator::new(&t, &["a", "B"], vec![Some(0), Some(0)], 1);
    assert_eq!(v.counts().errors_by_code.get("missing-label"), Some(&1));
    // A column past the header is no column either.
    let (v, _) = RowValidator::new(&t, &["a"], vec![Some(0), Some(5)], 1);
    assert_eq!(v.counts().errors_by_code.get("missing-label"), Some(&1));
}

#[test]
fn label_errors_come_first_in_the_header_row() {
    let t = invoices();
    let (v, errors) = RowValidator::new(
        &t,
        &["invoice_no", "amount", "paid", "amount", "", ""],
        mapping(&map_columns(
            &t,
            &["invoice_no", "amount", "paid", "amount", "", ""],
        )),
        3,
    );
    assert_eq!(
        errors,
        vec![
            ErrorRecord {
                row: 3,
                column: None,
                field: Some("issued_on".into()),
                value: None,
                code: ErrorCode::MissingLabel,
                constraint: None,
                message: "issued_on: no column of the header is headed \"issued_on\"".into(),
                transformed: None,
            },
            ErrorRecord {
                row: 3,
                column: Some("amount".into()),
                field: Some("amount".into()),
                value: None,
                code: ErrorCode::DuplicateLabel,
                constraint: None,
                message: "\"amount\" heads columns 2, 4; column 4 is a duplicate".into(),
                transformed: None,
            },
        ]
    );
    let counts = v.counts();
    assert_eq!(counts.errors_total, 2);
    assert_eq!(counts.errors_by_field.get("issued_on"), Some(&1));
    assert_eq!(counts.rows_valid + counts.rows_rejected, 0);
}

#[test]
fn valid_rows_are_written_typed_in_field_order() {
    let t = invoices();
    let (mut v, labels) = validator(&t, &["paid", "issued_on", "amount", "invoice_no", "note"]);
    assert!(labels.is_empty());
    let (valid, row, errors) = text_row(
        &mut v,
        2,
        &["true", "31/12/2024", "1234.50", "A-1", "ignored"],
    );
    assert!(valid, "{errors:?}");
    assert_eq!(row, json!(["A-1", 1234.50, "2024-12-31", true]));
    let (valid, row, _) = text_row(&mut v, 3, &["NA", "", "0", "A-2", ""]);
    assert!(valid);
    assert_eq!(row, json!(["A-2", 0, null, null]));
    assert_eq!(v.counts().rows_valid, 2);
}

#[test]
fn numbers_keep_their_written_digits_in_the_row() {
    let t = invoices();
    let (mut v, _) = validator(&t, &["invoice_no", "amount"]);
    let mut out = Vec::new();
    v.row(
        2,
        &[Cell::Text("A-1"), Cell::Text("1234.50")],
        &mut out,
        &mut |_| {},
    );
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"["A-1",1234.50,null,null]"#
    );
}

#[test]
fn failing_cells_keep_their_original_text_and_say_why() {
    let t = invoices();
    let (mut v, _) = validator(&t, &["invoice_no", "amount", "issued_on", "paid"]);
    let (valid, row, errors) = text_row(&mut v, 5, &["", "twelve", "2026-31-12", "yes"]);
    assert!(!valid);
    // The required cell's original text is the empty string.
    assert_eq!(row, json!(["", "twelve", "2026-31-12", "yes"]));
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        vec![
            "invoice_no: a value is required",
            "amount: \"twelve\" is not a number",
            "issued_on: \"2026-31-12\" is not a date in the form %d/%m/%Y",
            "paid: \"yes\" is not a boolean (true, True, TRUE, 1 / false, False, FALSE, 0)",
        ]
    );
    assert_eq!(errors[0].code, ErrorCode::ConstraintError);
    assert_eq!(errors[0].constraint, Some(Constraint::Required));
    assert_eq!(errors[0].value.as_deref(), Some(""));
    assert_eq!(
        errors[1],
        ErrorRecord {
            row: 5,
            column: Some("amount".into()),
            field: Some("amount".into()),
            value: Some("twelve".into()),
            code: ErrorCode::TypeError,
            constraint: None,
            message: "amount: \"twelve\" is not a number".into(),
            transformed: None,
        }
    );
    let (valid, row, errors) = text_row(&mut v, 6, &["A-9", "-3.5", "01/01/2024", "1"]);
    assert!(!valid);
    // A constraint error keeps the text as written too.
    assert_eq!(row, json!(["A-9", "-3.5", "2024-01-01", true]));
    assert_eq!(errors[0].constraint, Some(Constraint::Minimum));
    let counts = v.counts();
    assert_eq!(
        (counts.rows_valid, counts.rows_rejected, counts.errors_total),
        (0, 2, 5)
    );
    assert_eq!(counts.errors_by_code.get("type-error"), Some(&3));
    assert_eq!(counts.errors_by_code.get("constraint-error"), Some(&2));
    assert_eq!(counts.errors_by_field.get("amount"), Some(&2));
}

#[test]
fn short_long_and_blank_rows() {
    let t = invoices();
    let (mut v, _) = validator(&t, &["invoice_no", "amount", "issued_on", "paid"]);
    let (valid, row, errors) = text_row(&mut v, 2, &["A-1", "5"]);
    assert!(!valid);
    assert_eq!(row, json!(["A-1", 5, null, null]));
    assert_eq!(codes(&errors), vec!["missing-cell", "missing-cell"]);
    assert_eq!(
        errors[0].message,
        "issued_on: the row ends before column 3 (\"issued_on\")"
    );
    assert_eq!(errors[0].column.as_deref(), Some("issued_on"));

    let (valid, row, errors) = text_row(&mut v, 3, &["A-2", "5", "01/01/2024", "0", "extra", ""]);
    assert!(!valid);
    assert_eq!(row, json!(["A-2", 5, "2024-01-01", false]));
    assert_eq!(codes(&errors), vec!["extra-cell", "extra-cell"]);
    assert_eq!(errors[0].value.as_deref(), Some("extra"));
    assert_eq!(errors[0].column, None);
    assert_eq!(
        errors[0].message,
        "column 5: the row has more cells than the header"
    );

    for (row, cells) in [(4, vec!["", "NA", "", ""]), (5, vec![]), (6, vec!["", ""])] {
        let (valid, json, errors) = text_row(&mut v, row, &cells);
        assert!(!valid);
        assert_eq!(json, json!([null, null, null, null]));
        assert_eq!(codes(&errors), vec!["blank-row"], "{cells:?}");
        assert_eq!(errors[0].row, row);
    }
    let counts = v.counts();
    assert_eq!((counts.rows_valid, counts.rows_rejected), (0, 5));
    assert_eq!(counts.errors_by_code.get("blank-row"), Some(&3));
}

#[test]
fn typed_cells_validate_and_failures_keep_their_native_json() {
    let t = invoices();
    let (mut v, _) = validator(&t, &["invoice_no", "amount", "issued_on", "paid"]);
    let day = NaiveDate::from_ymd_opt(2024, 3, 5).unwrap();
    let cells = [
        Cell::Int(17),
        Cell::Float(12.5),
        Cell::DateTime(day.and_hms_opt(0, 0, 0).unwrap()),
        Cell::Bool(false),
    ];
    let (valid, row, _) = typed_row(&mut v, 2, &cells);
    assert!(valid);
    assert_eq!(row, json!(["17", 12.5, "2024-03-05", false]));
    let cells = [
        Cell::Text("A-1"),
        Cell::Error("#DIV/0!"),
        Cell::Float(45000.0),
        Cell::Date(day),
    ];
    let (valid, row, errors) = typed_row(&mut v, 3, &cells);
    assert!(!valid);
    assert_eq!(row, json!(["A-1", "#DIV/0!", 45000, "2024-03-05"]));
    assert_eq!(
        codes(&errors),
        vec!["type-error", "type-error", "type-error"]
    );
    assert_eq!(
        errors[1].message,
        "issued_on: \"45000\" is not a date in the form %d/%m/%Y"
    );
}

#[test]
fn error_values_are_cut_to_200_characters() {
    let t = template(json!({"fields": [{"name": "n", "type": "integer"}]}));
    let (mut v, _) = validator(&t, &["n"]);
    let long = "x".repeat(1000);
    let (_, _, errors) = text_row(&mut v, 2, &[&long]);
    let value = errors[0].value.as_deref().unwrap();
    assert_eq!(value.chars().count(), 201);
    assert!(value.ends_with("x…"));
    assert!(errors[0].message.len() < 300);
}

#[test]
fn unique_values_are_checked_across_100k_rows_and_name_the_first_row() {
    let t = template(json!({"fields": [
        {"name": "id", "type": "integer", "constraints": {"unique": true}},
        {"name": "code", "constraints": {"unique": true}},
        {"name": "n", "type": "number", "constraints": {"unique": true}},
    ]}));
    let (mut v, _) = validator(&t, &["id", "code", "n"]);
    v.reserve(100_000);
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for i in 0..100_000u64 {
        let id = i.to_string();
        let code = format!("C{i}");
        // Nulls never collide.
        let n = if i % 2 == 0 {
            String::new()
        } else {
            format!("{i}.5")
        };
        let cells = [Cell::Text(&id), Cell::Text(&code), Cell::Text(&n)];
        out.clear();
        assert!(v.row(i + 2, &cells, &mut out, &mut |e| errors.push(e)));
    }
    assert!(errors.is_empty());
    // Repeats: the same integer, the same code, the same number written differently.
    let (valid, _, errors) = text_row(&mut v, 100_002, &["41", "C7", "3.50"]);
    assert!(!valid);
    let found: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e.code.as_str(), e.message.as_str()))
        .collect();
    assert_eq!(
        found,
        vec![
            ("unique-error", "id: \"41\" already appears in row 43"),
            ("unique-error", "code: \"C7\" already appears in row 9"),
            ("unique-error", "n: \"3.50\" already appears in row 5"),
        ]
    );
    // The first row stays the one named.
    let (_, _, errors) = text_row(&mut v, 100_003, &["41", "new", ""]);
    assert_eq!(errors[0].message, "id: \"41\" already appears in row 43");
    let counts = v.counts();
    assert_eq!(counts.rows_valid, 100_000);
    assert_eq!(counts.errors_by_code.get("unique-error"), Some(&4));
}

#[test]
fn composite_primary_keys_are_unique_as_a_whole_across_100k_rows() {
    let t = template(json!({
        "primaryKey": ["year", "no"],
        "fields": [
            {"name": "no", "type": "integer"},
            {"name": "year", "type": "year"},
            {"name": "note"},
        ]
    }));
    let (mut v, _) = validator(&t, &["no", "year", "note"]);
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for i in 0..100_000u64 {
        // 50,000 numbers in each of two years: every (year, no) pair once.
        let no = (i % 50_000).to_string();
        let year = if i < 50_000 { "2023" } else { "2024" };
        let cells = [Cell::Text(&no), Cell::Text(year), Cell::Text("x")];
        out.clear();
        v.row(i + 2, &cells, &mut out, &mut |e| errors.push(e));
    }
    assert!(errors.is_empty(), "{:?}", &errors[..errors.len().min(3)]);
    let (valid, _, errors) = text_row(&mut v, 100_002, &["007", "2024", "again"]);
    assert!(!valid);
    assert_eq!(
        errors,
        vec![ErrorRecord {
            row: 100_002,
            column: None,
            field: None,
            value: Some("2024, 007".into()),
            code: ErrorCode::PrimaryKey,
            constraint: None,
            message: "primary key (year, no): \"2024\", \"007\" already appears in row 50009"
                .into(),
            transformed: None,
        }]
    );
    // Key fields are required; a key with a null part is not compared.
    let (valid, _, errors) = text_row(&mut v, 100_003, &["", "2024", ""]);
    assert!(!valid);
    assert_eq!(codes(&errors), vec!["constraint-error"]);
    assert_eq!(errors[0].message, "no: a value is required");
}

#[test]
fn a_single_field_key_names_its_field_and_column() {
    let t = template(
        json!({"primaryKey": "invoice_no", "fields": [{"name": "invoice_no", "title": "Invoice"}]}),
    );
    let (mut v, _) = validator(&t, &["Invoice"]);
    text_row(&mut v, 2, &["A-1"]);
    text_row(&mut v, 3, &["A-2"]);
    let (_, _, errors) = text_row(&mut v, 4, &["A-1"]);
    assert_eq!(errors[0].code, ErrorCode::PrimaryKey);
    assert_eq!(errors[0].column.as_deref(), Some("Invoice"));
    assert_eq!(errors[0].field.as_deref(), Some("invoice_no"));
    assert_eq!(
        errors[0].message,
        "invoice_no: \"A-1\" already appears in row 2 (primary key)"
    );
}

#[test]
fn a_key_with_an_unmapped_field_is_not_checked() {
    let t = template(json!({"primaryKey": ["a", "b"], "fields": [{"name": "a"}, {"name": "b"}]}));
    let (mut v, labels) = validator(&t, &["a"]);
    assert_eq!(codes(&labels), vec!["missing-label"]);
    assert!(text_row(&mut v, 2, &["x"]).0);
    let (valid, row, errors) = text_row(&mut v, 3, &["x"]);
    assert!(valid, "{errors:?}");
    assert_eq!(row, json!(["x", null]));
}

#[test]
fn a_slow_pattern_validates_a_100_kb_value_in_linear_time() {
    let t = template(json!({"fields": [{"name": "s", "constraints": {"pattern": "(a+)+$"}}]}));
    let (mut v, _) = validator(&t, &["s"]);
    let text = format!("{}b", "a".repeat(100_000));
    let (valid, _, errors) = text_row(&mut v, 2, &[&text]);
    assert!(!valid);
    assert_eq!(errors[0].constraint, Some(Constraint::Pattern));
    let text = "a".repeat(100_000);
    assert!(text_row(&mut v, 3, &[&text]).0);
}

#[test]
fn error_codes_and_constraints_have_the_contract_names() {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        codes,
        vec![
            "type-error",
            "constraint-error",
            "unique-error",
            "primary-key",
            "missing-cell",
            "extra-cell",
            "blank-row",
            "missing-label",
            "duplicate-label",
            "hook-error"
        ]
    );
    for &code in ErrorCode::ALL {
        assert_eq!(serde_json::to_value(code).unwrap(), json!(code.as_str()));
        assert_eq!(code.as_str().parse::<ErrorCode>(), Ok(code));
    }
    assert_eq!(
        serde_json::to_value(Constraint::MinLength).unwrap(),
        json!("minLength")
    );
    assert_eq!(
        serde_json::to_value(MatchKind::Alias).unwrap(),
        json!("alias")
    );
}

#[test]
fn the_row_shortcut_writes_what_the_typed_value_writes() {
    // Each field type twice: bare (cells take the shortcut) and with a constraint every value
    // passes (cells are cast and checked, then copied when their text is the stored form).
    let types = [
        ("string", json!({})),
        ("any", json!({})),
        ("integer", json!({"minimum": i64::MIN})),
        ("number", json!({"minimum": -1e300})),
        ("boolean", json!({"enum": [true, false]})),
        ("date", json!({"minimum": "0001-01-01"})),
        ("datetime", json!({"minimum": "0001-01-01T00:00:00"})),
        ("time", json!({"minimum": "00:00:00"})),
        ("year", json!({"minimum": 0})),
    ];
    let texts = [
        "0",
        "-0",
        "7",
        "007",
        "+7",
        "-12",
        "9223372036854775807",
        "9223372036854775808",
        " 5",
        "1.5",
        "1.50",
        "-0.5",
        "0.000001",
        "0.0000001",
        "0.0000000",
        "0.000000",
        "1e3",
        ".5",
        "5.",
        "12345678901234567890",
        "1234567890123456789.5",
        "NaN",
        "-inf",
        "true",
        "False",
        "1",
        "2024-03-05",
        "2024-3-5",
        "2024-02-30",
        "0000-01-01",
        "2024-03-05T10:30:00",
        "2024-03-05T10:30:00Z",
        "2024-03-05 10:30:00",
        "2024-03-05T24:00:00",
        "2024-03-05T10:30:00+01:00",
        "2024-03-05T10:30:00.5",
        "10:30:00",
        "10:30:00Z",
        "24:00:00",
        "1:30:00",
        "2024",
        "0999",
        "text \"quoted\"",
        "tab\there",
        "日本",
    ];
    for (field_type, constraints) in types {
        for constrained in [false, true] {
            let mut field = json!({"name": "f", "type": field_type});
            if constrained {
                field["constraints"] = constraints.clone();
            }
            let t = template(json!({"fields": [field]}));
            let (mut v, _) = validator(&t, &["f"]);
            for text in texts {
                let mut out = Vec::new();
                let valid = v.row(2, &[Cell::Text(text)], &mut out, &mut |_| {});
                let expected = match t.fields[0].cast(Cell::Text(text)) {
                    Ok(value) if t.fields[0].check(&value).is_ok() => {
                        let mut json = b"[".to_vec();
                        value.write_json(&mut json);
                        json.push(b']');
                        Some(json)
                    }
                    _ => None,
                };
                assert_eq!(
                    valid,
                    expected.is_some(),
                    "{text:?} in {field_type} ({constrained})"
                );
                if let Some(expected) = expected {
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        String::from_utf8(expected).unwrap(),
                        "{text:?} in {field_type} ({constrained})"
                    );
                }
            }
        }
    }
}

/// The fixed-layout shortcut of a formatted date, datetime or time field (`layout.rs`) takes
/// exactly the cells `strptime` reads, and writes what the typed value writes.
#[test]
fn the_layout_shortcut_writes_what_strptime_reads() {
    use super::super::layout::Stored;
    use super::super::strptime::Pattern;
    let fields = [
        ("datetime", "%Y-%m-%d %H:%M:%S"),
        ("datetime", "%d/%m/%Y %H:%M"),
        ("datetime", "%Y%m%dT%H%M%S"),
        ("date", "%d/%m/%Y"),
        ("date", "%Y-%m-%d %H:%M"),
        ("date", "%m%d"),
        ("time", "%H:%M"),
        ("time", "%d %H:%M:%S"),
        ("time", "%Y-%m-%d %H"),
    ];
    let mut texts: Vec<String> = [
        "2024-03-05 07:08:09",
        "2024-03-05 7:08:09",
        "2024-03-05  07:08:09",
        "2024-03-05\t07:08:09",
        "2024-02-29 23:59:59",
        "2023-02-29 00:00:00",
        "1900-02-29 00:00:00",
        "2000-02-29 00:00:00",
        "0000-01-01 00:00:00",
        "2024-13-01 00:00:00",
        "2024-00-10 00:00:00",
        "2024-04-31 00:00:00",
        "2024-03-05 24:00:00",
        "2024-03-05 23:60:00",
        "2024-03-05 23:59:60",
        "2024-03-05 23:59:61",
        "2024-03-05x07:08:09",
        "05/03/2024 07:08",
        "5/3/2024 7:08",
        "31/04/2024",
        "29/02/2024",
        "20240305T070809",
        "20240305t070809",
        "20240305T7089",
        "0229",
        "0230",
        "07:08",
        "7:08",
        "29 07:08:09",
        "32 07:08:09",
        "2024-03-05 07",
        "2024-03-05 07:08",
        "2024-02-30 07:08",
        "0228",
        "1231",
        "１２:３４",
    ]
    .map(String::from)
    .to_vec();
    // Every digit in every place of a few shapes.
    for shape in ["2024-03-05 07:08:09", "05/03/2024 07:08", "07:08"] {
        for i in 0..shape.len() {
            for d in ['0', '1', '2', '3', '6', '9', 'a', ' '] {
                let mut t: Vec<char> = shape.chars().collect();
                t[i] = d;
                texts.push(t.into_iter().collect());
            }
        }
    }
    for (field_type, format) in fields {
        let pattern = Pattern::compile(format).unwrap();
        let layout = pattern.layout().expect("a layout");
        let stored = match field_type {
            "date" => Stored::Date,
            "datetime" => Stored::DateTime,
            _ => Stored::Time,
        };
        let t = template(json!({"fields": [{"name": "f", "type": field_type, "format": format}]}));
        let (mut v, _) = validator(&t, &["f"]);
        let (mut valid_texts, mut fast) = (0, 0);
        for text in &texts {
            let mut out = Vec::new();
            let valid = v.row(2, &[Cell::Text(text)], &mut out, &mut |_| {});
            let expected = t.fields[0].cast(Cell::Text(text)).ok().map(|value| {
                let mut json = b"[".to_vec();
                value.write_json(&mut json);
                json.push(b']');
                json
            });
            assert_eq!(valid, expected.is_some(), "{text:?} in {format}");
            let mut direct = Vec::new();
            if layout.write(stored, text, &mut direct) {
                fast += 1;
                direct.insert(0, b'[');
                direct.push(b']');
                assert_eq!(Some(&direct), expected.as_ref(), "{text:?} in {format}");
            }
            if let Some(expected) = expected {
                valid_texts += 1;
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    String::from_utf8(expected).unwrap(),
                    "{text:?} in {format}"
                );
            }
        }
        assert!(
            fast > 0 && valid_texts > fast / 2,
            "{format}: {fast} of {valid_texts}"
        );
    }
}

#[test]
fn first_rows_keep_every_fingerprint_through_growth_zero_included() {
    use super::super::fingerprint::FirstRows;
    let mut rows = FirstRows::default();
    assert_eq!(rows.insert(0, 2), None);
    assert_eq!(rows.insert(0, 3), Some(2));
    // Fingerprints that share their low 64 bits or their shard still differ.
    let fingerprint = |i: u128| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) << 64) | (i % 7 + 1);
    for i in 1..50_000u128 {
        assert_eq!(rows.insert(fingerprint(i), i as u64 + 10), None, "{i}");
    }
    rows.reserve(100_000);
    for i in 1..50_000u128 {
        assert_eq!(rows.insert(fingerprint(i), 1), Some(i as u64 + 10), "{i}");
    }
    assert_eq!(rows.insert(1 << 127, u64::MAX), None);
    assert_eq!(rows.insert(1 << 127, 5), Some(u64::from(u32::MAX)));
}

/// Integers through the increasing run and the tables together find exactly the duplicates a
/// plain map finds, with the first row of each: in order, with outliers ahead of the run,
/// behind it, repeated, and at the ends of `i64`.
#[test]
fn first_rows_of_integers_match_a_map_whatever_the_order() {
    use super::super::fingerprint::FirstRows;
    use super::super::value::Value;
    use std::collections::HashMap;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let sequences: Vec<Vec<i64>> = vec![
        (0..5_000).collect(),
        (0..5_000).rev().collect(),
        [vec![10_000], (0..5_000).collect()].concat(),
        (0..5_000)
            .map(|i| if i % 97 == 0 { i - 50 } else { i })
            .collect(),
        (0..5_000).map(|i| i / 3).collect(),
        (0..5_000).map(|_| (next() % 3_000) as i64).collect(),
        (0..5_000)
            .map(|i| {
                if next() % 10 == 0 {
                    (next() % 6_000) as i64
                } else {
                    i
                }
            })
            .collect(),
        vec![i64::MIN, -1, 0, i64::MAX, i64::MIN, 0, i64::MAX, 5, -1],
    ];
    for (n, values) in sequences.iter().enumerate() {
        let mut rows = FirstRows::default();
        rows.reserve(values.len());
        let mut oracle: HashMap<i64, u64> = HashMap::new();
        for (row, &v) in values.iter().enumerate() {
            let row = row as u64 + 2;
            let expected = oracle.get(&v).copied();
            oracle.entry(v).or_insert(row);
            assert_eq!(
                rows.insert_value(&Value::Integer(v), row),
                expected,
                "sequence {n}, row {row}, value {v}"
            );
        }
    }
}

#[test]
fn the_key_index_holds_every_row_of_each_value_and_a_seeded_row_is_an_earlier_one() {
    let t = template(json!({
        "fields": [
            {"name": "id", "type": "integer", "constraints": {"unique": true}},
            {"name": "code"}
        ],
        "primaryKey": ["code"]
    }));
    let (mut v, _) = validator(&t, &["id", "code"]);
    for (row, id, code) in [(2, "1", "A"), (3, "2", "B"), (4, "1", "C"), (5, "9", "A")] {
        text_row(&mut v, row, &[id, code]);
    }
    let rows_of = |slot: i32| {
        let mut rows: Vec<u64> = v.key_values(slot).map(|(_, r)| r).collect();
        rows.sort_unstable();
        rows
    };
    // Every row's value is there, the duplicates' too (rows 4 and 5).
    assert_eq!(rows_of(0), [2, 3, 4, 5]);
    assert_eq!(rows_of(PRIMARY_KEY_SLOT), [2, 3, 4, 5]);
    assert_eq!(v.key_slots(), [0, PRIMARY_KEY_SLOT]);
    assert_eq!((v.key_count(0), v.key_count(PRIMARY_KEY_SLOT)), (4, 4));
    let same = |slot: i32, a: u64, b: u64| {
        let f = |r: u64| v.key_values(slot).find(|e| e.1 == r).map(|e| e.0);
        f(a) == f(b)
    };
    assert!(same(0, 2, 4) && !same(0, 2, 3));
    assert!(same(PRIMARY_KEY_SLOT, 2, 5));

    // Re-checking row 4 alone, with row 2 seeded as holding its id: the same record as at
    // upload; with nothing seeded, none.
    v.track_keys();
    v.forget();
    let (_, _, errors) = text_row(&mut v, 4, &["1", "C"]);
    assert!(errors.is_empty());
    let keys = v.row_keys().to_vec();
    assert_eq!(keys.len(), 2);
    v.forget();
    for &(slot, f) in &keys {
        if slot == 0 {
            v.seed(slot, f, 2);
        }
    }
    let (valid, _, errors) = text_row(&mut v, 4, &["1", "C"]);
    assert!(!valid);
    assert_eq!(codes(&errors), ["unique-error"]);
    assert_eq!(errors[0].message, "id: \"1\" already appears in row 2");
}
