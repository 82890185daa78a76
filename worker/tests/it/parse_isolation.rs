//! The parse in a child process: events stream through unchanged, and a child that runs out of
//! memory, hangs past its deadline or dies costs only its task — the parent gets a code.

use std::path::PathBuf;
use std::time::Duration;

use crate::parse_support::temp_file;
use serde_json::json;
use worker::parse::isolate::{parse_isolated, Isolation};
use worker::parse::{FileFormat, ParseEvent, ParseLimits};

fn isolation(limits: ParseLimits) -> Isolation {
    Isolation::new(PathBuf::from(env!("CARGO_BIN_EXE_worker")), limits)
}

#[tokio::test]
async fn rows_stream_from_the_child_exactly_as_in_process() {
    let (_dir, path) = temp_file(b"id,name\n1,\"a\tb\nc\"\n2,\n", "x.csv");
    let mut events = Vec::new();
    let result = parse_isolated(
        &isolation(ParseLimits::default()),
        &path,
        FileFormat::Csv,
        |e| {
            events.push(e.into_owned());
            Ok(())
        },
    )
    .await
    .expect("no infrastructure error");
    let summary = result.expect("parsed");
    assert_eq!(summary.rows_total, 2);
    let rows: Vec<serde_json::Value> = events
        .iter()
        .filter_map(|e| match e {
            ParseEvent::Row { values, .. } => serde_json::from_str(values).ok(),
            _ => None,
        })
        .collect();
    assert_eq!(rows, [json!(["1", "a\tb\nc"]), json!(["2", null])]);
    assert!(matches!(
        events.first(),
        Some(ParseEvent::SheetStart { index: 0, .. })
    ));
    assert!(matches!(events.last(), Some(ParseEvent::SheetEnd(s)) if s.columns == ["id", "name"]));
}

#[tokio::test]
async fn a_file_failure_in_the_child_comes_back_with_its_code() {
    let (_dir, path) = temp_file(b"%PDF-1.4\n", "x.xlsx");
    let result = parse_isolated(
        &isolation(ParseLimits::default()),
        &path,
        FileFormat::Xlsx,
        |_| Ok(()),
    )
    .await
    .expect("no infrastructure error");
    assert_eq!(
        result.err().map(|f| f.code.as_str()),
        Some("unsupported_format")
    );
}

/// An ods whose one cell is repeated over `rows` × 16,384 cells: a few hundred bytes that
/// declare hundreds of millions of values.
fn ods_repeat_bomb(rows: u32) -> Vec<u8> {
    crate::parse_support::ods(
        "",
        &format!(
            r#"<table:table table:name="Bomb"><table:table-row table:number-rows-repeated="{rows}"><table:table-cell table:number-columns-repeated="16384" office:value-type="float" office:value="1"><text:p>1</text:p></table:table-cell></table:table-row></table:table>"#
        ),
    )
}

/// An ods whose one text cell asks for `spaces` spaces (`<text:s text:c="…"/>`): calamine builds
/// that string before any limit of ours can see it.
fn ods_space_bomb(spaces: u64) -> Vec<u8> {
    crate::parse_support::ods(
        "",
        &format!(
            r#"<table:table table:name="Bomb"><table:table-row><table:table-cell office:value-type="string"><text:p>a<text:s text:c="{spaces}"/>b</text:p></table:table-cell></table:table-row></table:table>"#
        ),
    )
}

#[tokio::test]
async fn a_child_over_its_memory_limit_fails_the_task_and_the_parent_survives() {
    let bytes = ods_space_bomb(2_000_000_000);
    assert!(bytes.len() < 2_000);
    let (_dir, path) = temp_file(&bytes, "bomb.ods");
    let limits = ParseLimits {
        memory_limit_bytes: 128 * 1024 * 1024,
        timeout: Duration::from_secs(60),
        ..ParseLimits::default()
    };
    let result = parse_isolated(&isolation(limits), &path, FileFormat::Ods, |_| Ok(()))
        .await
        .expect("no infrastructure error");
    let Err(failure) = result else {
        panic!("the bomb must fail");
    };
    assert_eq!(failure.code.as_str(), "memory_limit", "{}", failure.message);

    // The parent carries on with the next file.
    let (_dir2, ok) = temp_file(b"a\n1\n", "ok.csv");
    let again = parse_isolated(
        &isolation(ParseLimits::default()),
        &ok,
        FileFormat::Csv,
        |_| Ok(()),
    )
    .await
    .expect("no infrastructure error");
    assert_eq!(again.map(|s| s.rows_total).ok(), Some(1));
}

#[tokio::test]
async fn a_child_past_its_deadline_is_killed_with_parse_timeout() {
    let mut big = b"id,name,amount\n".to_vec();
    for i in 0..400_000 {
        big.extend_from_slice(format!("{i},name {i},{i}.5\n").as_bytes());
    }
    let (_dir, path) = temp_file(&big, "big.csv");
    let limits = ParseLimits {
        timeout: Duration::from_millis(100),
        ..ParseLimits::default()
    };
    let started = std::time::Instant::now();
    let result = parse_isolated(&isolation(limits), &path, FileFormat::Csv, |_| {
        // A slow consumer keeps the child from finishing before the deadline.
        std::thread::sleep(Duration::from_micros(50));
        Ok(())
    })
    .await
    .expect("no infrastructure error");
    assert_eq!(result.err().map(|f| f.code.as_str()), Some("parse_timeout"));
    // Unparsed, the rows would keep this consumer busy for 20 s: the child was stopped long
    // before, although frames were always waiting and the read never had to wait for it.
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_failing_row_consumer_is_an_infrastructure_error_and_stops_the_child() {
    let (_dir, path) = temp_file(b"a\n1\n2\n", "x.csv");
    let outcome = parse_isolated(
        &isolation(ParseLimits::default()),
        &path,
        FileFormat::Csv,
        |e| {
            if matches!(e, ParseEvent::Row { .. }) {
                anyhow::bail!("database down");
            }
            Ok(())
        },
    )
    .await;
    assert_eq!(
        outcome.err().map(|e| e.to_string()).as_deref(),
        Some("database down")
    );
}

#[tokio::test]
async fn a_child_that_parsed_a_small_file_waits_for_the_next_and_one_that_failed_does_not() {
    let iso = isolation(ParseLimits::default());
    let (_dir, csv) = temp_file(b"id\n1\n2\n", "x.csv");
    let (_dir2, pdf) = temp_file(b"%PDF-1.4\n", "x.xlsx");
    let parse = |path: PathBuf, format| {
        let iso = iso.clone();
        async move {
            let mut rows = 0;
            let result = parse_isolated(&iso, &path, format, |e| {
                rows += u64::from(matches!(e, ParseEvent::Row { .. }));
                Ok(())
            })
            .await
            .expect("no infrastructure error");
            (result.map(|s| s.rows_total), rows)
        }
    };
    assert_eq!(iso.idle_children(), 0);
    assert_eq!(parse(csv.clone(), FileFormat::Csv).await, (Ok(2), 2));
    assert_eq!(iso.idle_children(), 1);
    // The same child again: rows are numbered afresh and nothing of the first file remains.
    assert_eq!(parse(csv.clone(), FileFormat::Csv).await, (Ok(2), 2));
    assert_eq!(iso.idle_children(), 1);
    let (failed, _) = parse(pdf, FileFormat::Xlsx).await;
    assert_eq!(
        failed.err().map(|f| f.code.as_str()),
        Some("unsupported_format")
    );
    assert_eq!(iso.idle_children(), 0, "a child that failed is not kept");
    assert_eq!(parse(csv, FileFormat::Csv).await, (Ok(2), 2));
    assert_eq!(iso.idle_children(), 1);
}

/// An xls whose one BOUNDSHEET8 record is 3 bytes long: calamine 0.38 indexes past its end and
/// panics.
fn xls_that_panics_the_reader() -> Vec<u8> {
    use crate::parse_support::biff::{bof, compound_file, record};
    let mut stream = Vec::new();
    bof(&mut stream, 0x0005);
    record(&mut stream, 0x0085, &[0, 0, 0]);
    record(&mut stream, 0x000A, &[]);
    compound_file(&stream)
}

#[tokio::test]
async fn a_parser_panic_fails_only_its_task_with_parser_crashed() {
    let iso = isolation(ParseLimits::default());
    let (_dir, bad) = temp_file(&xls_that_panics_the_reader(), "x.xls");
    let result = parse_isolated(&iso, &bad, FileFormat::Xls, |_| Ok(()))
        .await
        .expect("no infrastructure error");
    let failure = result.expect_err("the parse failed");
    assert_eq!(
        failure.code.as_str(),
        "parser_crashed",
        "{}",
        failure.message
    );
    assert!(
        failure
            .message
            .starts_with("the parser failed on this file"),
        "{}",
        failure.message
    );
    // The same isolation goes on parsing good files.
    let (_dir2, good) = temp_file(b"a\n1\n", "x.csv");
    let again = parse_isolated(&iso, &good, FileFormat::Csv, |_| Ok(()))
        .await
        .expect("no infrastructure error");
    assert_eq!(again.map(|s| s.rows_total).ok(), Some(1));
}

#[tokio::test]
async fn an_ods_repeated_past_the_readers_cell_cap_fails_as_a_decompression_limit() {
    let (_dir, path) = temp_file(&ods_repeat_bomb(1000), "bomb.ods");
    let result = parse_isolated(
        &isolation(ParseLimits::default()),
        &path,
        FileFormat::Ods,
        |_| Ok(()),
    )
    .await
    .expect("no infrastructure error");
    let failure = result.expect_err("the bomb must fail");
    assert_eq!(
        failure.code.as_str(),
        "decompression_limit",
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn an_xlsb_cell_naming_a_missing_shared_string_panics_the_reader_and_fails_only_its_task() {
    use crate::parse_support::xlsb::{xlsb, XlsbCell, XlsbSheet};
    let sheet = |cells| XlsbSheet {
        name: "S".to_owned(),
        hidden: false,
        cells,
    };
    let text = |r, s: &str| XlsbCell::Text(r, 0, s.to_owned());
    let iso = isolation(ParseLimits::default());
    let bad = xlsb(&[sheet(vec![text(0, "a"), XlsbCell::SharedString(1, 0, 5)])]);
    let (_dir, path) = temp_file(&bad, "x.xlsb");
    let result = parse_isolated(&iso, &path, FileFormat::Xlsb, |_| Ok(()))
        .await
        .expect("no infrastructure error");
    let failure = result.expect_err("the parse failed");
    assert_eq!(
        failure.code.as_str(),
        "parser_crashed",
        "{}",
        failure.message
    );
    assert!(
        failure.message.contains("index out of bounds"),
        "{}",
        failure.message
    );
    // The same isolation reads the next xlsb.
    let good = xlsb(&[sheet(vec![text(0, "a"), text(1, "b")])]);
    let (_dir2, path) = temp_file(&good, "y.xlsb");
    let mut rows = Vec::new();
    let again = parse_isolated(&iso, &path, FileFormat::Xlsb, |e| {
        if let ParseEvent::Row { values, .. } = e {
            rows.push(values.into_owned());
        }
        Ok(())
    })
    .await
    .expect("no infrastructure error");
    assert_eq!(again.map(|s| s.rows_total).ok(), Some(1));
    assert_eq!(rows, [r#"["b"]"#]);
}
