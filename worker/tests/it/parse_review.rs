//! The mapping review inside the parse: a template whose required field finds no column stops
//! with the review document and no rows; a confirmed or remembered mapping goes through.

use std::collections::BTreeMap;

use serde_json::json;
use shared::domain::review::{header_key, Review};
use shared::domain::OnInvalid;
use worker::parse::{
    parse_templated, FileFormat, ParseEvent, ParseLimits, ParseSummary, TemplateJob,
};

const FILE: &[u8] = b"Monthly export\n\nRef,Sum,Note\nA-1,5,x\nA-2,,y\nA-3,7,\n";

fn job() -> TemplateJob {
    TemplateJob {
        schema: json!({"fields": [
            {"name": "invoice", "constraints": {"required": true}},
            {"name": "amount", "type": "number"},
            {"name": "Note"},
        ]}),
        sheet: None,
        on_invalid: OnInvalid::DropInvalidRows,
        max_errors: 100,
        confirmed: None,
        confirmed_sheet: None,
        remembered: BTreeMap::new(),
        learned: Vec::new(),
        values: Default::default(),
        hooked: false,
    }
}

struct Outcome {
    summary: ParseSummary,
    rows: Vec<String>,
    review: Option<Review>,
}

fn run(job: &TemplateJob) -> Outcome {
    run_on(FILE, job)
}

fn run_on(file: &[u8], job: &TemplateJob) -> Outcome {
    let (_dir, path) = crate::parse_support::temp_file(file, "upload.csv");
    let mut rows = Vec::new();
    let mut review = None;
    let summary = parse_templated(
        &path,
        FileFormat::Csv,
        &ParseLimits::default(),
        job,
        &mut |e| {
            match e {
                ParseEvent::Row { values, .. } => rows.push(values.into_owned()),
                ParseEvent::NeedsReview(r) => review = Some(r),
                _ => {}
            }
            Ok(())
        },
    )
    .expect("parses");
    Outcome {
        summary,
        rows,
        review,
    }
}

#[test]
fn a_required_field_without_a_column_stops_for_a_review_with_samples() {
    let out = run(&job());
    let review = out.review.expect("a review");
    assert!(out.rows.is_empty(), "no row is sent: {:?}", out.rows);
    assert!(out.summary.validation.is_none());
    assert_eq!(review.reason, "required_field_unmapped");
    assert_eq!(review.header_row, 3);
    let columns: Vec<(usize, &str, Vec<&str>)> = review
        .columns
        .iter()
        .map(|c| {
            let samples = c.samples.iter().map(String::as_str).collect();
            (c.index, c.name.as_str(), samples)
        })
        .collect();
    assert_eq!(
        columns,
        vec![
            (0, "Ref", vec!["A-1", "A-2", "A-3"]),
            (1, "Sum", vec!["5", "7"]),
            (2, "Note", vec!["x", "y"]),
        ]
    );
    let suggested: Vec<(&str, Option<usize>, Option<&str>)> = review
        .suggested_mapping
        .iter()
        .map(|s| (s.field.as_str(), s.column_index, s.how.as_deref()))
        .collect();
    assert_eq!(
        suggested,
        vec![
            ("invoice", None, None),
            ("amount", None, None),
            ("Note", Some(2), Some("exact")),
        ]
    );
}

#[test]
fn a_confirmed_mapping_is_used_as_it_is() {
    let mut job = job();
    job.confirmed = Some(BTreeMap::from([
        ("invoice".to_owned(), Some(0)),
        ("amount".to_owned(), Some(1)),
        ("Note".to_owned(), None),
    ]));
    let out = run(&job);
    assert!(out.review.is_none());
    assert_eq!(
        out.rows,
        [
            r#"["A-1",5,null]"#,
            r#"["A-2",null,null]"#,
            r#"["A-3",7,null]"#
        ]
    );
    let mapping = out.summary.validation.expect("validated").mapping;
    let kinds: Vec<Option<&str>> = mapping.iter().map(|m| m.how.as_deref()).collect();
    assert_eq!(kinds, [Some("confirmed"), Some("confirmed"), None]);
}

#[test]
fn a_remembered_mapping_follows_its_header_texts_not_their_order() {
    let mut job = job();
    // Remembered from a file with the same texts in another order.
    let key = header_key(&["Note", "Ref", "Sum"]);
    let remembered = BTreeMap::from([
        ("invoice".to_owned(), Some("Ref".to_owned())),
        ("amount".to_owned(), Some("Sum".to_owned())),
        ("Note".to_owned(), Some("Note".to_owned())),
    ]);
    job.remembered.insert(key, remembered);
    let out = run(&job);
    assert!(out.review.is_none());
    assert_eq!(out.rows[0], r#"["A-1",5,"x"]"#);
    let mapping = out.summary.validation.expect("validated").mapping;
    assert!(mapping
        .iter()
        .all(|m| m.how.as_deref() == Some("remembered")));
}

#[test]
fn a_remembered_mapping_that_leaves_a_required_field_out_is_not_used() {
    let mut job = job();
    let remembered = BTreeMap::from([("amount".to_owned(), Some("Sum".to_owned()))]);
    job.remembered
        .insert(header_key(&["Ref", "Sum", "Note"]), remembered);
    let out = run(&job);
    assert_eq!(
        out.review.map(|r| r.reason).as_deref(),
        Some("required_field_unmapped")
    );
}

#[test]
fn a_workbook_is_validated_on_its_first_sheet_with_the_templates_columns() {
    let mut wb = rust_xlsxwriter::Workbook::new();
    let cover = wb.add_worksheet().set_name("Cover").expect("name");
    cover
        .write_string(0, 0, "Annual report 2026")
        .expect("write");
    wb.add_worksheet().set_name("Blank").expect("name");
    let data = wb.add_worksheet().set_name("Data").expect("name");
    for (r, row) in [["Ref", "Sum"], ["A-1", "5"], ["A-2", "7"]]
        .iter()
        .enumerate()
    {
        for (c, text) in row.iter().enumerate() {
            let (r, c) = (r as u32, c as u16);
            match text.parse::<f64>() {
                Ok(n) => data.write_number(r, c, n).map(drop),
                Err(_) => data.write_string(r, c, *text).map(drop),
            }
            .expect("write");
        }
    }
    let bytes = wb.save_to_buffer().expect("xlsx");
    let (_dir, path) = crate::parse_support::temp_file(&bytes, "book.xlsx");
    let mut job = job();
    job.schema = json!({"fields": [{"name": "Ref"}, {"name": "Sum", "type": "number"}]});
    let mut rows = Vec::new();
    let summary = parse_templated(
        &path,
        FileFormat::Xlsx,
        &ParseLimits::default(),
        &job,
        &mut |e| {
            if let ParseEvent::Row { values, .. } = e {
                rows.push(values.into_owned());
            }
            Ok(())
        },
    )
    .expect("parses");
    assert_eq!(rows, [r#"["A-1",5]"#, r#"["A-2",7]"#]);
    let report = summary.validation.expect("validated");
    let validated = &summary.sheets[report.sheet as usize];
    assert_eq!(validated.name, "Data");
    let skipped: Vec<(&str, &str)> = report
        .skipped_sheets
        .iter()
        .map(|s| (s.name.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(
        skipped,
        [("Cover", "no_matching_columns"), ("Blank", "no_table")]
    );
}

/// States and yes/no in the application's own words: an `enum` and a `boolean` field whose
/// column's texts they mostly cannot read.
const STATES: &[u8] = b"id,state,paid\n1,Calif.,Y\n2,N.Y.,N\n3,Tex.,ja\n4,CA,true\n5,Calif.,\n";

fn states_job() -> TemplateJob {
    TemplateJob {
        schema: json!({"fields": [
            {"name": "id", "type": "integer"},
            {"name": "state", "constraints": {"required": true, "enum": ["CA", "NY", "TX"]}},
            {"name": "paid", "type": "boolean"},
        ]}),
        ..job()
    }
}

#[test]
fn a_review_lists_the_texts_an_enum_or_boolean_field_cannot_read_with_its_values() {
    let out = run_on(STATES, &states_job());
    let review = out.review.expect("a review: the values do not fit");
    assert_eq!(review.reason, "low_confidence");
    let values: Vec<(&str, Vec<&str>, Vec<&str>)> = review
        .values
        .iter()
        .map(|v| {
            let unknown = v.unknown.iter().map(String::as_str).collect();
            let allowed = v.allowed.iter().map(String::as_str).collect();
            (v.field.as_str(), unknown, allowed)
        })
        .collect();
    assert_eq!(
        values,
        [
            (
                "state",
                vec!["Calif.", "N.Y.", "Tex."],
                vec!["CA", "NY", "TX"]
            ),
            (
                "paid",
                vec!["N", "Y", "ja"],
                vec!["true", "True", "TRUE", "1", "false", "False", "FALSE", "0"]
            ),
        ]
    );
}

#[test]
fn learned_values_read_the_texts_and_the_file_goes_through_without_a_review() {
    let mut job = states_job();
    job.values = serde_json::from_value(json!({
        "state": {"Calif.": "CA", "N.Y.": "NY", "Tex.": "TX"},
        "paid": {"Y": "true", "N": "false", "ja": "true"},
    }))
    .expect("maps");
    let out = run_on(STATES, &job);
    assert!(out.review.is_none(), "{:?}", out.review);
    assert_eq!(
        out.rows,
        [
            r#"[1,"CA",true]"#,
            r#"[2,"NY",false]"#,
            r#"[3,"TX",true]"#,
            r#"[4,"CA",true]"#,
            r#"[5,"CA",null]"#
        ]
    );
    let report = out.summary.validation.expect("validated");
    assert_eq!((report.rows_valid, report.errors_total), (5, 0));
}
