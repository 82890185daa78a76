//! Messy files as people send them, generated here with the header row and column names a
//! person reads in each: titles, date lines, notes and rules above the table, group rows,
//! totals, notes and second tables below it, no header at all, and every CSV dialect the
//! reader detects; as CSV/TSV text and as xlsx, xls and ods workbooks.

use chrono::NaiveDate;
use rust_xlsxwriter::{Format, Workbook};
use worker::parse::FileFormat;

use super::biff::{xls, XlsCell, XlsSheet};
use super::ods;

/// One generated file and what a person reads in it.
pub struct Fixture {
    pub name: String,
    pub format: FileFormat,
    pub bytes: Vec<u8>,
    /// The 1-based header row; 0 for a file without one.
    pub header_row: u64,
    pub columns: Vec<String>,
}

/// A workbook cell.
#[derive(Clone, Copy)]
pub enum V {
    T(&'static str),
    N(f64),
    /// An ISO date, written as a date-formatted number (a date cell in ods).
    D(&'static str),
    E,
}

use V::{D, E, N, T};

fn text(name: &str, format: FileFormat, body: &str, header_row: u64, columns: &[&str]) -> Fixture {
    Fixture {
        name: name.to_owned(),
        format,
        bytes: body.as_bytes().to_vec(),
        header_row,
        columns: columns.iter().map(|c| (*c).to_owned()).collect(),
    }
}

fn csv(name: &str, body: &str, header_row: u64, columns: &[&str]) -> Fixture {
    text(name, FileFormat::Csv, body, header_row, columns)
}

const SALES: &str = "region,product,units,price\nNorth,Widget,5,1.50\nSouth,Gadget,7,2.25\n\
                     East,Widget,1,1.50\nWest,Gizmo,12,9.99\n";
const SALES_COLUMNS: [&str; 4] = ["region", "product", "units", "price"];

/// The text fixtures: every dialect, and the layouts above and below a table.
pub fn text_fixtures() -> Vec<Fixture> {
    let wide_blank = format!("{}\n", ",".repeat(16_383));
    let mut out = vec![
        csv("clean", SALES, 1, &SALES_COLUMNS),
        csv(
            "title, blank line, header",
            &format!("Monthly sales export\n\n{SALES}"),
            3,
            &SALES_COLUMNS,
        ),
        csv(
            "title and date line",
            &format!("Monthly sales export\nGenerated 2026-11-01\n{SALES}"),
            3,
            &SALES_COLUMNS,
        ),
        csv(
            "title, date, two blank lines",
            &format!("Sales report Q3 2026\n2026-11-01\n\n\n{SALES}"),
            5,
            &SALES_COLUMNS,
        ),
        csv(
            "notes above",
            &format!("Note: prices in EUR\nSource: ERP export, do not edit\n\n{SALES}"),
            4,
            &SALES_COLUMNS,
        ),
        csv(
            "decorative rules",
            &format!("=====================\nSALES\n----,----,----,----\n{SALES}"),
            4,
            &SALES_COLUMNS,
        ),
        csv(
            "key-value preamble",
            &format!("Company,ACME Corp\nPeriod,2026-Q3\n\n{SALES}"),
            4,
            &SALES_COLUMNS,
        ),
        csv(
            "title padded with delimiters",
            &format!("Monthly sales export,,,\n,,,\n{SALES}"),
            3,
            &SALES_COLUMNS,
        ),
        csv(
            "crlf with title",
            &format!("Sales\r\n\r\n{}", SALES.replace('\n', "\r\n")),
            3,
            &SALES_COLUMNS,
        ),
        csv(
            "bom with title",
            &format!("\u{FEFF}Sales export\n{SALES}"),
            2,
            &SALES_COLUMNS,
        ),
        text(
            "tsv clean",
            FileFormat::Tsv,
            &SALES.replace(',', "\t"),
            1,
            &SALES_COLUMNS,
        ),
        text(
            "tsv with title",
            FileFormat::Tsv,
            &format!("Export 2026-11-01\n\n{}", SALES.replace(',', "\t")),
            3,
            &SALES_COLUMNS,
        ),
        csv(
            "semicolons and decimal commas with title",
            "Umsatz Oktober\n\nRegion;Produkt;Menge;Preis\nNord;Widget;5;1,50\nSüd;Gadget;7;2,25\nOst;Gizmo;3;9,99\n",
            3,
            &["Region", "Produkt", "Menge", "Preis"],
        ),
        csv(
            "pipes with title",
            &format!("SALES|||\n{}", SALES.replace(',', "|")),
            2,
            &SALES_COLUMNS,
        ),
        csv(
            "comma and space",
            "id, name, amount\n1, Ann, 2.5\n2, \"Lee, K\", 3\n3, Bob, 4.25\n",
            1,
            &["id", "name", "amount"],
        ),
        csv(
            "comma and space with title",
            "Payments\n\nid, name, amount\n1, Ann, 2.5\n2, Bob, 3\n3, Eve, 4.25\n",
            3,
            &["id", "name", "amount"],
        ),
        csv(
            "single space",
            "id name qty\n1 ann 5\n2 bob 7\n3 eve 9\n",
            1,
            &["id", "name", "qty"],
        ),
        csv(
            "single quotes",
            "'id','name','city'\n'1','O''Brien, J','Cork'\n'2','Lee','Rome'\n",
            1,
            &["id", "name", "city"],
        ),
        csv(
            "backslash escapes",
            "id,quote,n\n1,\"say \\\"hi\\\", ok\",5\n2,\"plain\",6\n",
            1,
            &["id", "quote", "n"],
        ),
        csv(
            "ragged rows",
            "id,name,qty\n1,Ann,5,extra\n2,Bob\n3,Eve,9\n",
            1,
            &["id", "name", "qty", "column_4"],
        ),
        csv(
            "missing final newline",
            "id,name,qty\n1,Ann,5\n2,Bob,7",
            1,
            &["id", "name", "qty"],
        ),
        csv(
            "trailing blank lines",
            &format!("{SALES}\n\n\n,,,\n\n"),
            1,
            &SALES_COLUMNS,
        ),
        csv(
            "totals row",
            "item,qty,price\nA,1,2.50\nB,2,3.00\nC,4,1.25\nTotal,7,6.75\n",
            1,
            &["item", "qty", "price"],
        ),
        csv(
            "title and totals row",
            "Invoice summary\n\nid,customer,amount\n1,ACME,100\n2,Globex,250\nGrand total:,,350\n",
            3,
            &["id", "customer", "amount"],
        ),
        csv(
            "no header, numbers and dates",
            "1,2.5,2024-01-01\n2,3.5,2024-01-02\n3,4.5,2024-01-03\n",
            0,
            &["column_1", "column_2", "column_3"],
        ),
        csv(
            "no header, with a text column",
            "1,Ann,2024-01-01,5\n2,Bob,2024-01-02,7\n3,Eve,2024-01-03,9\n",
            0,
            &["column_1", "column_2", "column_3", "column_4"],
        ),
        csv(
            "group row above the names",
            "region,Q1,,Q2,\n,sales,units,sales,units\nNorth,1,2,3,4\nSouth,5,6,7,8\n",
            2,
            &["region", "Q1 sales", "Q1 units", "Q2 sales", "Q2 units"],
        ),
        csv(
            "title and group row",
            "Quarterly report\n\n,Q1,,Q2,\nregion,sales,units,sales,units\nNorth,1,2,3,4\nSouth,5,6,7,8\n",
            4,
            &["region", "Q1 sales", "Q1 units", "Q2 sales", "Q2 units"],
        ),
        csv(
            "second table after a blank line",
            "id,amount\n1,10\n2,20\n\nregion,total\nNorth,30\n",
            1,
            &["id", "amount"],
        ),
        csv(
            "footnotes below",
            &format!("{SALES}\n* prices exclude VAT\nSource: ERP\n"),
            1,
            &SALES_COLUMNS,
        ),
        csv(
            "years heading columns",
            "region,2024,2025,2026\nNorth,5,6,7\nSouth,8,9,10\n",
            1,
            &["region", "2024", "2025", "2026"],
        ),
        csv(
            "blank header name and title",
            "Stock list\n\nsku,,qty\nA-1,red,5\nB-2,blue,7\n",
            3,
            &["sku", "column_2", "qty"],
        ),
        csv(
            "all text columns",
            "name,city,country\nAnn,Paris,France\nBob,Rome,Italy\n",
            1,
            &["name", "city", "country"],
        ),
        csv(
            "all title and no table",
            "Sales report\nNothing to report this month\n",
            1,
            &["Sales report"],
        ),
        csv(
            "a header row of 16,384 empty cells",
            &format!("{wide_blank}{SALES}"),
            2,
            &SALES_COLUMNS,
        ),
    ];
    let (sjis, _, _) = encoding_rs::SHIFT_JIS
        .encode("売上レポート\n\n氏名,住所,年齢\n山田,東京,42\n鈴木,大阪,37\n");
    out.push(Fixture {
        name: "shift_jis with title".into(),
        format: FileFormat::Csv,
        bytes: sjis.into_owned(),
        header_row: 3,
        columns: ["氏名", "住所", "年齢"].map(String::from).to_vec(),
    });
    out
}

/// A sheet's rows, its header row and its column names.
type Grid = (&'static str, Vec<Vec<V>>, u64, Vec<&'static str>);

/// Sheets as grids, written as xlsx, xls and ods.
fn grids() -> Vec<Grid> {
    let table = || {
        vec![
            vec![T("id"), T("customer"), T("amount"), T("due")],
            vec![N(1.0), T("ACME"), N(100.5), D("2026-01-31")],
            vec![N(2.0), T("Globex"), N(250.0), D("2026-02-28")],
            vec![N(3.0), T("Initech"), N(75.25), D("2026-03-31")],
        ]
    };
    let columns = vec!["id", "customer", "amount", "due"];
    let with_above = |above: Vec<Vec<V>>| {
        let mut rows = above;
        rows.extend(table());
        rows
    };
    vec![
        ("clean", table(), 1, columns.clone()),
        (
            "title and blank row",
            with_above(vec![vec![T("Receivables")], vec![]]),
            3,
            columns.clone(),
        ),
        (
            "title and date cell",
            with_above(vec![
                vec![T("Receivables")],
                vec![T("As of"), D("2026-11-01")],
            ]),
            3,
            columns.clone(),
        ),
        (
            "logo row gap and title",
            with_above(vec![
                vec![],
                vec![],
                vec![E, T("ACME Corp — Receivables")],
                vec![],
            ]),
            5,
            columns.clone(),
        ),
        (
            "group row",
            vec![
                vec![T("Customer"), E, T("Invoice"), E],
                vec![T("id"), T("name"), T("amount"), T("due")],
                vec![N(1.0), T("ACME"), N(100.5), D("2026-01-31")],
                vec![N(2.0), T("Globex"), N(250.0), D("2026-02-28")],
            ],
            2,
            vec![
                "Customer id",
                "Customer name",
                "Invoice amount",
                "Invoice due",
            ],
        ),
        (
            "totals row",
            {
                let mut rows = table();
                rows.push(vec![T("Total"), E, N(425.75), E]);
                rows
            },
            1,
            columns.clone(),
        ),
    ]
}

/// The workbook fixtures: each grid as xlsx, xls and ods.
pub fn workbook_fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for (name, rows, header_row, columns) in grids() {
        let columns: Vec<String> = columns.into_iter().map(String::from).collect();
        for (format, bytes) in [
            (FileFormat::Xlsx, xlsx_of(&rows)),
            (FileFormat::Xls, xls_of(&rows)),
            (FileFormat::Ods, ods_of(&rows)),
        ] {
            out.push(Fixture {
                name: format!("{name} ({})", format.as_str()),
                format,
                bytes,
                header_row,
                columns: columns.clone(),
            });
        }
    }
    out
}

/// Every fixture.
pub fn all() -> Vec<Fixture> {
    let mut out = text_fixtures();
    out.extend(workbook_fixtures());
    out
}

fn serial(iso: &str) -> f64 {
    let day = NaiveDate::parse_from_str(iso, "%Y-%m-%d").expect("an ISO date");
    let epoch = NaiveDate::from_ymd_opt(1899, 12, 30).expect("the Excel epoch");
    (day - epoch).num_days() as f64
}

fn xlsx_of(rows: &[Vec<V>]) -> Vec<u8> {
    let mut wb = Workbook::new();
    let ws = wb.add_worksheet();
    let date = Format::new().set_num_format("yyyy-mm-dd");
    for (r, row) in rows.iter().enumerate() {
        for (c, v) in row.iter().enumerate() {
            let (r, c) = (r as u32, c as u16);
            match *v {
                T(s) => ws.write_string(r, c, s).map(|_| ()),
                N(n) => ws.write_number(r, c, n).map(|_| ()),
                D(d) => ws
                    .write_number_with_format(r, c, serial(d), &date)
                    .map(|_| ()),
                E => Ok(()),
            }
            .expect("write a cell");
        }
    }
    wb.save_to_buffer().expect("xlsx")
}

fn xls_of(rows: &[Vec<V>]) -> Vec<u8> {
    let mut cells = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        for (c, v) in row.iter().enumerate() {
            let (r, c) = (r as u16, c as u16);
            match *v {
                T(s) => cells.push(XlsCell::Shared(r, c, s.to_owned())),
                N(n) => cells.push(XlsCell::Number(r, c, n)),
                D(d) => cells.push(XlsCell::Date(r, c, serial(d))),
                E => {}
            }
        }
    }
    let sheet = XlsSheet {
        name: "Sheet1".into(),
        hidden: false,
        cells,
        dimensions: None,
    };
    xls(&[sheet], false)
}

fn ods_of(rows: &[Vec<V>]) -> Vec<u8> {
    let mut table = String::from(r#"<table:table table:name="Sheet1">"#);
    for row in rows {
        table.push_str("<table:table-row>");
        if row.is_empty() {
            table.push_str("<table:table-cell/>");
        }
        for v in row {
            table.push_str(&match *v {
                T(s) => format!(
                    r#"<table:table-cell office:value-type="string"><text:p>{s}</text:p></table:table-cell>"#
                ),
                N(n) => format!(
                    r#"<table:table-cell office:value-type="float" office:value="{n}"><text:p>{n}</text:p></table:table-cell>"#
                ),
                D(d) => format!(
                    r#"<table:table-cell office:value-type="date" office:date-value="{d}"><text:p>{d}</text:p></table:table-cell>"#
                ),
                E => "<table:table-cell/>".to_owned(),
            });
        }
        table.push_str("</table:table-row>");
    }
    table.push_str("</table:table>");
    ods("", &table)
}
