//! The cases: tens to hundreds of valid invoice rows each, with faults planted at known rows. Faults
//! that would interact (a short row whose missing cell is also required, a duplicate key in a
//! row with a type error) are kept in separate cases or rows, so each expected error has one
//! cause.

use super::invoice::{self, FIELDS};
use super::table::{Cell, Table, XlsxCells};
use super::{Expected, FaultCase, FileKind};

const TYPE: &str = "type-error";

/// Every case, each named for what it plants.
pub fn cases() -> Vec<FaultCase> {
    vec![
        cell_values(),
        duplicates(),
        primary_key_nulls(),
        ragged_rows(),
        blank_rows(),
        missing_label(),
        reordered_columns(),
        duplicate_label(),
    ]
}

fn case(name: &'static str, table: &Table, cells: XlsxCells, expected: Vec<Expected>) -> FaultCase {
    FaultCase {
        name,
        schema: invoice::schema(),
        csv: table.csv(),
        xlsx: table.xlsx(cells),
        expected,
    }
}

/// A cell of every type that does not cast, a value breaking each constraint, and valid values
/// that look odd. The workbook has real date, datetime and time cells.
fn cell_values() -> FaultCase {
    let mut table = invoice::table(300);
    let type_errors = [
        (12, "amount", Cell::text("twelve")),
        (30, "issued_on", Cell::text("31/02/2026")),
        (100, "email", Cell::text("not-an-email")),
        (110, "paid", Cell::text("maybe")),
        (120, "created_at", Cell::text("yesterday")),
        (130, "due_time", Cell::text("25:61:00")),
        (140, "fiscal_year", Cell::text("20X6")),
    ];
    let constraint_errors = [
        (45, "quantity", Cell::Int(5_000), "maximum"),
        (46, "quantity", Cell::Int(0), "minimum"),
        (60, "reference", Cell::text("R-1"), "minLength"),
        (61, "reference", Cell::text("REF-000000061"), "maxLength"),
        (75, "status", Cell::text("overdue"), "enum"),
        (90, "invoice_no", Cell::text("INV-12A45"), "pattern"),
        (150, "reference", Cell::Empty, "required"),
        (151, "reference", Cell::text("n/a"), "required"),
    ];
    let mut expected = Vec::new();
    for (row, field, cell) in type_errors {
        *table.cell_mut(row, field) = cell;
        expected.push(Expected::cell(row, field, TYPE, None));
    }
    for (row, field, cell, constraint) in constraint_errors {
        *table.cell_mut(row, field) = cell;
        expected.push(Expected::constraint(row, field, constraint));
    }
    expected.sort_by_key(|e| e.row);
    // Valid, though they look odd: missing values in optional fields, an amount without group
    // separators, and among the workbook's date cells a date typed as text in the template's
    // format (29 February of a leap year).
    *table.cell_mut(160, "amount") = Cell::text("n/a");
    *table.cell_mut(161, "email") = Cell::Empty;
    *table.cell_mut(162, "amount") = Cell::text("1234,5");
    *table.cell_mut(163, "issued_on") = Cell::text("29/02/2028");
    case("cell_values", &table, XlsxCells::Typed, expected)
}

/// The unique field's value again, twice, and a composite primary key again. Everything is text
/// in the workbook.
fn duplicates() -> FaultCase {
    let mut table = invoice::table(200);
    let taken = invoice::reference(18); // row 20's
    *table.cell_mut(50, "reference") = Cell::Text(taken.clone());
    *table.cell_mut(120, "reference") = Cell::Text(taken.clone());
    // Another case is another value.
    *table.cell_mut(140, "reference") = Cell::Text(taken.to_lowercase());
    // Row 30's invoice and line; the same invoice with another line is a line of it.
    let key = table.row_mut(30)[..2].to_vec();
    table.row_mut(80)[..2].clone_from_slice(&key);
    let expected = vec![
        Expected::cell(50, "reference", "unique-error", None),
        Expected::row(80, "primary-key"),
        Expected::cell(120, "reference", "unique-error", None),
    ];
    case("duplicates", &table, XlsxCells::Text, expected)
}

/// Primary-key fields left empty: one of the two, then both. They are required because they
/// form the key (Table Schema), though the schema does not say `required`.
fn primary_key_nulls() -> FaultCase {
    let mut table = invoice::table(60);
    *table.cell_mut(20, "line") = Cell::Empty;
    *table.cell_mut(40, "invoice_no") = Cell::Empty;
    *table.cell_mut(40, "line") = Cell::text("n/a");
    let expected = vec![
        Expected::constraint(20, "line", "required"),
        Expected::constraint(40, "invoice_no", "required"),
        Expected::constraint(40, "line", "required"),
    ];
    case("primary_key_nulls", &table, XlsxCells::Text, expected)
}

/// A row with a cell too many and one with a cell too few (the last, optional field).
fn ragged_rows() -> FaultCase {
    let mut table = invoice::table(80);
    table.row_mut(20).push(Cell::text("surplus"));
    table.row_mut(40).pop();
    let last = FIELDS[FIELDS.len() - 1];
    let expected = vec![
        Expected::row(20, "extra-cell"),
        Expected {
            only_in: Some(FileKind::Csv),
            ..Expected::cell(40, last, "missing-cell", None)
        },
    ];
    case("ragged_rows", &table, XlsxCells::Typed, expected)
}

/// Rows with no value at all between valid rows: a line of bare commas in the CSV file, a gap
/// between rows in the workbook.
fn blank_rows() -> FaultCase {
    let mut table = invoice::table(80);
    for row in [30, 60] {
        *table.row_mut(row) = vec![Cell::Empty; FIELDS.len()];
    }
    let expected = vec![
        Expected::row(30, "blank-row"),
        Expected::row(60, "blank-row"),
    ];
    case("blank_rows", &table, XlsxCells::Typed, expected)
}

/// A file without the column of an optional field.
fn missing_label() -> FaultCase {
    let mut table = invoice::table(50);
    table.remove_column("due_time");
    let expected = vec![Expected::label(None, "due_time", "missing-label")];
    case("missing_label", &table, XlsxCells::Typed, expected)
}

/// The columns in the opposite order with a column the template does not name among them:
/// fields are found by name, other columns are ignored. One type error shows the values are
/// read from the right column.
fn reordered_columns() -> FaultCase {
    let mut table = invoice::table(50);
    table.reverse_columns();
    table.insert_column(6, "comment", |row| Cell::Text(format!("note on row {row}")));
    *table.cell_mut(10, "amount") = Cell::text("twelve");
    let expected = vec![Expected::cell(10, "amount", TYPE, None)];
    case("reordered_columns", &table, XlsxCells::Typed, expected)
}

/// A header naming one field twice: a second `email` column, with the same values, at the end.
fn duplicate_label() -> FaultCase {
    let mut table = invoice::table(30);
    let email = table.column_index("email");
    let copies: Vec<Cell> = table.rows.iter().map(|r| r[email].clone()).collect();
    table.insert_column(FIELDS.len(), "email", |row| {
        copies[usize::try_from(row - 2).expect("row index")].clone()
    });
    let expected = vec![Expected::label(Some("email"), "email", "duplicate-label")];
    case("duplicate_label", &table, XlsxCells::Typed, expected)
}
