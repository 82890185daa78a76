//! Header detection and dialects over a set of generated messy files (`parse_support::messy`):
//! each must come out with the header row and column names a person reads in it. The share
//! found right is printed (`cargo test -p worker --test parse_headers -- --nocapture`).

use crate::parse_support::{messy, parse};
use serde_json::json;
use shared::domain::task_result::{SetAside, SetAsideKind};
use shared::domain::OnInvalid;
use worker::parse::{
    parse_templated, ColumnType, FileFormat, ParseEvent, ParseLimits, TemplateJob,
};

#[test]
fn every_messy_fixture_gets_the_header_a_person_reads() {
    let fixtures = messy::all();
    assert!(fixtures.len() >= 40, "{} fixtures", fixtures.len());
    let mut right = 0;
    let mut wrong = Vec::new();
    for f in &fixtures {
        let p = parse(&f.bytes, f.format);
        let Ok(summary) = &p.result else {
            wrong.push(format!("{}: failed: {:?}", f.name, p.result));
            continue;
        };
        let sheet = &summary.sheets[0];
        if sheet.header_row == f.header_row {
            right += 1;
        }
        if sheet.header_row != f.header_row || sheet.columns != f.columns {
            wrong.push(format!(
                "{}: header row {} {:?}, expected {} {:?}",
                f.name, sheet.header_row, sheet.columns, f.header_row, f.columns
            ));
        }
    }
    println!(
        "header detection: {right}/{} right header rows ({:.1} %)",
        fixtures.len(),
        100.0 * f64::from(right) / fixtures.len() as f64
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_motivating_file_has_its_header_on_line_3_and_typed_columns() {
    let p = parse(
        b"Monthly sales export\n\nregion,units,price\nNorth,5,1.50\nSouth,7,2.25\n",
        FileFormat::Csv,
    );
    let sheet = &p.summary().sheets[0];
    assert_eq!(sheet.header_row, 3);
    assert_eq!(
        sheet.layout.set_aside,
        [SetAside::new(1, 2, SetAsideKind::Above, None)]
    );
    assert_eq!(
        sheet.column_types,
        [ColumnType::Text, ColumnType::Integer, ColumnType::Decimal]
    );
    assert_eq!(
        p.rows(0),
        [json!(["North", "5", "1.50"]), json!(["South", "7", "2.25"])]
    );
}

#[test]
fn a_totals_row_is_data_but_not_part_of_the_column_types() {
    let p = parse(
        b"id,qty,price\n1,1,2.50\n2,2,3.00\nTotal,3,5.50\n",
        FileFormat::Csv,
    );
    let sheet = &p.summary().sheets[0];
    assert_eq!(p.rows(0).len(), 3);
    assert_eq!(sheet.totals_row, Some(4));
    assert_eq!(
        sheet.column_types,
        [
            ColumnType::Integer,
            ColumnType::Integer,
            ColumnType::Decimal
        ]
    );
}

#[test]
fn a_second_table_and_notes_after_a_blank_row_are_left_out_and_reported() {
    let p = parse(
        b"id,amount\n1,10\n2,20\n\nregion,total\nNorth,30\n\nSource: ERP\n",
        FileFormat::Csv,
    );
    let sheet = &p.summary().sheets[0];
    assert_eq!(p.rows(0), [json!(["1", "10"]), json!(["2", "20"])]);
    assert_eq!(
        sheet.layout.set_aside,
        [
            SetAside::new(4, 6, SetAsideKind::Table, Some(5)),
            SetAside::new(7, 8, SetAsideKind::Notes, None)
        ]
    );
    assert_eq!(
        sheet.column_types,
        [ColumnType::Integer, ColumnType::Integer]
    );
}

#[test]
fn dialects_come_out_as_plain_cells() {
    let spaced = parse(b"id, name\n1, \"Lee, K\"\n2, Ann\n", FileFormat::Csv);
    assert_eq!(
        spaced.rows(0),
        [json!(["1", "Lee, K"]), json!(["2", "Ann"])]
    );
    assert_eq!(
        spaced.summary().sheets[0].column_types[0],
        ColumnType::Integer
    );
    let single = parse(b"'id','name'\n'1','O''Brien, J'\n", FileFormat::Csv);
    assert_eq!(single.rows(0), [json!(["1", "O'Brien, J"])]);
    let escaped = parse(b"id,q\n1,\"say \\\"hi\\\"\"\n", FileFormat::Csv);
    assert_eq!(escaped.rows(0), [json!(["1", "say \"hi\""])]);
    let spaces = parse(b"id name\n1 ann\n2 bob\n", FileFormat::Csv);
    assert_eq!(spaces.rows(0), [json!(["1", "ann"]), json!(["2", "bob"])]);
    let ragged = parse(b"a,b,c\n1,2\n1,2,3,4\n1,2,3\n", FileFormat::Csv);
    assert_eq!(ragged.summary().sheets[0].ragged_rows, 2);
}

#[test]
fn a_file_without_a_header_is_all_data_with_generated_names() {
    let p = parse(b"1,2.5\n2,3.5\n", FileFormat::Csv);
    let sheet = &p.summary().sheets[0];
    assert_eq!(sheet.header_row, 0);
    assert!(sheet.layout.header_rows.is_empty());
    assert_eq!(sheet.columns, ["column_1", "column_2"]);
    assert_eq!(p.rows(0), [json!(["1", "2.5"]), json!(["2", "3.5"])]);
}

#[test]
fn bad_input_gets_a_bounded_answer() {
    // All title, no table: the first row is the header, as it always was.
    let title = parse(b"Sales report\nNothing this month\n", FileFormat::Csv);
    assert_eq!(title.summary().sheets[0].columns, ["Sales report"]);
    // A row of 16,384 empty cells above the header is blank.
    let mut wide = ",".repeat(16_383).into_bytes();
    wide.extend_from_slice(b"\nid,n\n1,2\n");
    let p = parse(&wide, FileFormat::Csv);
    assert_eq!(p.summary().sheets[0].header_row, 2);
    // A header phase of huge rows decides on what it holds.
    let mut huge = format!("{}\n", "x".repeat(900_000)).repeat(3).into_bytes();
    huge.extend_from_slice(b"a\n");
    assert_eq!(parse(&huge, FileFormat::Csv).code(), "ok");
}

#[test]
fn a_template_finds_its_header_below_rows_that_look_like_one() {
    let bytes = b"Customer,Region\nACME,North\n\nInvoice No.,Amount\nA-1,5\nA-2,7\n";
    let without = parse(bytes, FileFormat::Csv);
    assert_eq!(without.summary().sheets[0].header_row, 1);

    let job = invoice_job();
    let (_dir, path) = crate::parse_support::temp_file(bytes, "upload.csv");
    let mut rows = 0;
    let summary = parse_templated(
        &path,
        FileFormat::Csv,
        &ParseLimits::default(),
        &job,
        &mut |e| {
            rows += usize::from(matches!(e, ParseEvent::Row { .. }));
            Ok(())
        },
    );
    let report = summary.ok().and_then(|s| s.validation);
    assert_eq!(
        report.map(|r| (r.header_row, r.rows_valid, r.errors_total)),
        Some((4, 2, 0))
    );
    assert_eq!(rows, 2);
}

#[test]
fn a_templated_sheet_validates_a_note_under_its_table_instead_of_setting_it_aside() {
    let bytes = b"Invoice No.,Amount\nA-1,5\nA-2,7\n\nSource: ERP\n";
    let (_dir, path) = crate::parse_support::temp_file(bytes, "upload.csv");
    let summary = parse_templated(
        &path,
        FileFormat::Csv,
        &ParseLimits::default(),
        &invoice_job(),
        &mut |_| Ok(()),
    )
    .expect("parsed");
    let sheet = &summary.sheets[0];
    assert!(sheet.layout.set_aside.is_empty(), "{:?}", sheet.layout);
    assert_eq!(sheet.layout.data.map(|d| d.last_row), Some(5));
    let report = summary.validation.expect("a report");
    // The blank row and the note are rows of the table, reported as errors.
    assert_eq!((report.rows_valid, report.rows_rejected), (2, 2));
}

/// A template of two fields, `invoice_no` and a number `amount`, dropping invalid rows.
fn invoice_job() -> TemplateJob {
    TemplateJob {
        schema: json!({"fields": [
            {"name": "invoice_no", "title": "Invoice No."},
            {"name": "amount", "title": "Amount", "type": "number"},
        ]}),
        sheet: None,
        on_invalid: OnInvalid::DropInvalidRows,
        max_errors: 100,
        confirmed: None,
        confirmed_sheet: None,
        remembered: Default::default(),
        learned: Vec::new(),
        values: Default::default(),
        hooked: false,
    }
}
