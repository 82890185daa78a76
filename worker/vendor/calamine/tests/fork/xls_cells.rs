//! Patches 3 and 6: `Xls::take_worksheet_cells` moves a sheet's cells out as a row-major list,
//! with BIFF8 strings decoded in place. They must be the cells stock `worksheet_range` gives for
//! the same file, including cells written out of order or twice (the value written last wins).

use std::io::Cursor;

use calamine::{Data, Reader, Xls};

use crate::support::biff::{xls, Cached, XlsCell, XlsSheet};
use crate::support::{range_cells, Positioned};

fn sheet(name: &str, hidden: bool, cells: Vec<XlsCell>) -> XlsSheet {
    XlsSheet {
        name: name.to_owned(),
        hidden,
        cells,
        dimensions: None,
    }
}

fn workbook() -> Vec<u8> {
    let mut table = Vec::new();
    for r in 0..3_000u16 {
        table.push(XlsCell::Number(r, 0, f64::from(r) + 0.25));
        table.push(XlsCell::Shared(r, 1, format!("shared {}", r % 300)));
        table.push(XlsCell::Label(r, 2, format!("Größe 🦀 {r}")));
        table.push(XlsCell::Rk(r, 3, i32::from(r)));
        table.push(XlsCell::MulRk(r, 4, vec![1, 2, 3]));
        table.push(XlsCell::Bool(r, 7, r % 2 == 0));
        table.push(XlsCell::Error(r, 8, 0x07));
        table.push(XlsCell::Formula(r, 9, Cached::Text(format!("f{r}"))));
    }
    let shuffled = vec![
        XlsCell::Label(5, 5, "last".to_owned()),
        XlsCell::Number(0, 0, 1.0),
        XlsCell::Label(2, 1, "first".to_owned()),
        XlsCell::Number(5, 5, 2.0),
        XlsCell::Label(2, 1, "second".to_owned()),
        XlsCell::Bool(1, 3, true),
    ];
    xls(
        &[
            sheet("Table", false, table),
            sheet("Shuffled", true, shuffled),
        ],
        false,
    )
}

fn taken(name: &str) -> Vec<Positioned> {
    let mut wb: Xls<_> = Xls::new(Cursor::new(workbook())).expect("open the xls");
    wb.take_worksheet_cells(name)
        .expect("take the cells")
        .into_iter()
        .filter(|c| *c.get_value() != Data::Empty)
        .map(|c| (c.get_position(), c.get_value().clone()))
        .collect()
}

fn ranged(name: &str) -> Vec<Positioned> {
    let mut wb: Xls<_> = Xls::new(Cursor::new(workbook())).expect("open the xls");
    range_cells(&wb.worksheet_range(name).expect("range"))
}

#[test]
fn taken_cells_are_the_cells_of_the_stock_range() {
    let cells = taken("Table");
    assert_eq!(cells.len(), 3_000 * 10);
    assert_eq!(cells, ranged("Table"));
    assert_eq!(cells[2], ((0, 2), Data::String("Größe 🦀 0".to_owned())));
}

#[test]
fn cells_out_of_order_come_out_in_rows_with_the_value_written_last() {
    let cells = taken("Shuffled");
    assert_eq!(cells, ranged("Shuffled"));
    assert_eq!(
        cells,
        [
            ((0, 0), Data::Float(1.0)),
            ((1, 3), Data::Bool(true)),
            ((2, 1), Data::String("second".to_owned())),
            ((5, 5), Data::Float(2.0)),
        ]
    );
}

#[test]
fn a_taken_sheet_is_gone_from_the_workbook() {
    let mut wb: Xls<_> = Xls::new(Cursor::new(workbook())).expect("open the xls");
    assert!(!wb
        .take_worksheet_cells("Table")
        .expect("first take")
        .is_empty());
    assert!(wb
        .take_worksheet_cells("Table")
        .expect("second take")
        .is_empty());
}
