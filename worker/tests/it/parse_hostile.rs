//! Broken and hostile files fail with their own code, in process, without crashing: encrypted
//! Office files, zip bombs, lying shared-string counts, PDFs and truncated archives.

use std::io::Write;

use crate::parse_support::{make_zip, parse, parse_with, patch_zip};
use rust_xlsxwriter::Workbook;
use worker::parse::{FileFormat, ParseLimits};

fn small_xlsx() -> Vec<u8> {
    let mut wb = Workbook::new();
    let ws = wb.add_worksheet();
    ws.write_string(0, 0, "name").expect("write");
    ws.write_string(1, 0, "value").expect("write");
    wb.save_to_buffer().expect("xlsx")
}

/// A compound file laid out like a password-protected OOXML workbook (MS-OFFCRYPTO).
fn encrypted_office_file() -> Vec<u8> {
    let mut cf = cfb::CompoundFile::create(std::io::Cursor::new(Vec::new())).expect("cfb");
    cf.create_stream("EncryptionInfo")
        .and_then(|mut s| s.write_all(&[4, 0, 4, 0, 0x40, 0, 0, 0]))
        .expect("stream");
    cf.create_stream("EncryptedPackage")
        .and_then(|mut s| s.write_all(&[0x5A; 4096]))
        .expect("stream");
    cf.flush().expect("flush");
    cf.into_inner().into_inner()
}

#[test]
fn a_password_protected_workbook_fails_as_encrypted() {
    let bytes = encrypted_office_file();
    assert_eq!(parse(&bytes, FileFormat::Xlsx).code(), "encrypted_file");
    assert_eq!(parse(&bytes, FileFormat::Xls).code(), "encrypted_file");
}

#[test]
fn a_compound_file_without_a_workbook_is_corrupt() {
    let mut cf = cfb::CompoundFile::create(std::io::Cursor::new(Vec::new())).expect("cfb");
    cf.create_stream("Other")
        .and_then(|mut s| s.write_all(b"nothing"))
        .expect("stream");
    cf.flush().expect("flush");
    let bytes = cf.into_inner().into_inner();
    assert_eq!(parse(&bytes, FileFormat::Xls).code(), "corrupt_file");
}

#[test]
fn a_zip_bomb_fails_on_the_inflation_ratio() {
    // ~20 MB of sheet XML that deflates to a few tens of KB.
    let mut sheet = String::from(
        r#"<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#,
    );
    sheet.push_str(&"<row><c><v>0</v></c></row>".repeat(800_000));
    sheet.push_str("</sheetData></worksheet>");
    let bomb = patch_zip(&small_xlsx(), "xl/worksheets/sheet1.xml", |_| sheet.clone());
    assert!(bomb.len() < 200_000, "fixture is {} bytes", bomb.len());
    let p = parse(&bomb, FileFormat::Xlsx);
    assert_eq!(p.code(), "decompression_limit");
    assert!(p.events.is_empty());
}

#[test]
fn a_workbook_past_the_absolute_inflation_cap_fails() {
    let limits = ParseLimits {
        max_inflated_bytes: 2_000,
        ..ParseLimits::default()
    };
    assert_eq!(
        parse_with(&small_xlsx(), FileFormat::Xlsx, &limits).code(),
        "decompression_limit"
    );
}

#[test]
fn a_shared_strings_part_claiming_trillions_of_strings_is_refused_before_calamine_reads_it() {
    let bytes = patch_zip(&small_xlsx(), "xl/sharedStrings.xml", |xml| {
        xml.replace("uniqueCount=\"2\"", "uniqueCount=\"4000000000000\"")
            .replace("count=\"2\"", "count=\"4000000000000\"")
    });
    let p = parse(&bytes, FileFormat::Xlsx);
    assert_eq!(p.code(), "corrupt_file");
}

#[test]
fn xml_entities_are_never_expanded() {
    let lol = r#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lollollollollollollollollollol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="2" uniqueCount="2"><si><t>name</t></si><si><t>&lol3;</t></si></sst>"#;
    let bytes = patch_zip(&small_xlsx(), "xl/sharedStrings.xml", |_| lol.to_owned());
    let p = parse(&bytes, FileFormat::Xlsx);
    let expanded = p.events.iter().any(
        |e| matches!(e, worker::parse::ParseEvent::Row { values, .. } if values.contains("lollol")),
    );
    assert!(!expanded);
    assert_eq!(p.code(), "corrupt_file");
}

#[test]
fn a_pdf_named_xlsx_is_an_unsupported_format() {
    let p = parse(
        b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n1 0 obj\n<<>>\nendobj\n",
        FileFormat::Xlsx,
    );
    assert_eq!(p.code(), "unsupported_format");
}

#[test]
fn an_excel_4_worksheet_is_an_unsupported_format() {
    let biff4 = [0x09, 0x04, 0x06, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00];
    assert_eq!(parse(&biff4, FileFormat::Xls).code(), "unsupported_format");
}

#[test]
fn a_zip_without_a_workbook_is_an_unsupported_format() {
    let bytes = make_zip(&[("readme.txt", b"hello")]);
    assert_eq!(parse(&bytes, FileFormat::Xlsx).code(), "unsupported_format");
}

#[test]
fn a_truncated_xlsx_is_corrupt() {
    let bytes = small_xlsx();
    let p = parse(&bytes[..bytes.len() / 2], FileFormat::Xlsx);
    assert_eq!(p.code(), "corrupt_file");
    let f = p.result.err().map(|f| f.message).unwrap_or_default();
    assert!(f.contains("zip"), "{f}");
}

#[test]
fn broken_sheet_xml_is_corrupt_with_the_sheet_named() {
    let bytes = patch_zip(&small_xlsx(), "xl/worksheets/sheet1.xml", |xml| {
        xml.replace(
            "</sheetData>",
            "<row r=\"3\"><c r=\"A3\" t=\"n\"><v>1</v></c></sheetData",
        )
    });
    let p = parse(&bytes, FileFormat::Xlsx);
    assert_eq!(p.code(), "corrupt_file");
    let f = p.result.err().map(|f| f.message).unwrap_or_default();
    assert!(f.contains("Sheet1"), "{f}");
}

#[test]
fn an_empty_file_fails_as_empty_whatever_its_name() {
    assert_eq!(parse(b"", FileFormat::Xlsx).code(), "empty_file");
}

#[test]
fn a_shared_strings_count_above_its_size_is_fine_when_unique_strings_fit() {
    // `count` is the number of references to shared strings, which can exceed any size bound.
    let bytes = patch_zip(&small_xlsx(), "xl/sharedStrings.xml", |xml| {
        xml.replace(" count=\"2\"", " count=\"4000000000000\"")
    });
    let p = parse(&bytes, FileFormat::Xlsx);
    assert_eq!(p.code(), "ok");
}
