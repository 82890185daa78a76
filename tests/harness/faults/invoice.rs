//! The invoice template every case validates against: twelve fields with every type, format and
//! constraint kind the contract names, and a generator of rows that satisfy all of it, varied
//! enough to exercise each type's accepted forms (grouped amounts, every true and false word,
//! dates across a year), into which the cases plant their faults.

use chrono::{Duration, NaiveDate, NaiveTime};
use serde_json::{json, Value};

use super::table::{Cell, Table};

/// The fields, in schema order; the header of a well-formed file names them in this order.
pub const FIELDS: [&str; 12] = [
    "invoice_no",
    "line",
    "reference",
    "email",
    "status",
    "quantity",
    "amount",
    "paid",
    "issued_on",
    "created_at",
    "due_time",
    "fiscal_year",
];

/// The Table Schema. `invoice_no` and `line` form the primary key (so they are required without
/// saying so); `reference` is the explicitly required, unique field; `n/a` is a missing value
/// like an empty cell.
pub fn schema() -> Value {
    json!({
        "fields": [
            {"name": "invoice_no", "type": "string",
             "constraints": {"pattern": "INV-[0-9]{5}"}},
            {"name": "line", "type": "integer", "constraints": {"minimum": 1}},
            {"name": "reference", "type": "string",
             "constraints": {"required": true, "unique": true, "minLength": 8, "maxLength": 12}},
            {"name": "email", "type": "string", "format": "email"},
            {"name": "status", "type": "string",
             "constraints": {"enum": ["draft", "sent", "paid", "void"]}},
            {"name": "quantity", "type": "integer",
             "constraints": {"minimum": 1, "maximum": 999}},
            {"name": "amount", "type": "number", "decimalChar": ",", "groupChar": "."},
            {"name": "paid", "type": "boolean",
             "trueValues": ["yes", "ja"], "falseValues": ["no", "nein"]},
            {"name": "issued_on", "type": "date", "format": "%d/%m/%Y"},
            {"name": "created_at", "type": "datetime"},
            {"name": "due_time", "type": "time"},
            {"name": "fiscal_year", "type": "year"}
        ],
        "primaryKey": ["invoice_no", "line"],
        "missingValues": ["", "n/a"]
    })
}

/// `rows` valid rows under the schema's header, at rows 2 to `rows + 1`.
pub fn table(rows: usize) -> Table {
    Table {
        header: FIELDS.iter().map(|f| (*f).to_owned()).collect(),
        rows: (0..rows).map(good_row).collect(),
    }
}

/// The `i`th valid row: three lines per invoice, a reference of its own, and values that cycle
/// through each field's accepted forms.
pub fn good_row(i: usize) -> Vec<Cell> {
    let n = i64::try_from(i).expect("row index fits in i64");
    let start = NaiveDate::from_ymd_opt(2026, 1, 1).expect("a date");
    let opening = NaiveTime::from_hms_opt(9, 0, 0).expect("a time");
    vec![
        Cell::Text(invoice_no(i / 3)),
        Cell::Int(n % 3 + 1),
        Cell::Text(reference(i)),
        Cell::Text(format!("buyer{}@example.com", i % 17)),
        Cell::text(["draft", "sent", "paid", "void"][i % 4]),
        Cell::Int(1 + n * 7 % 999),
        // From cents to more than a million, so some amounts have two group separators.
        Cell::Amount(n * n * 7_919 % 200_000_000 + 1),
        Cell::text(["yes", "no", "ja", "nein"][i % 4]),
        Cell::Date(start + Duration::days(n % 365)),
        Cell::DateTime(start.and_time(opening) + Duration::minutes(n * 37)),
        Cell::Time(opening + Duration::minutes(n * 13 % 480)),
        Cell::Int(2020 + n % 7),
    ]
}

/// The invoice number of the `n`th invoice: matches the pattern `INV-[0-9]{5}`.
pub fn invoice_no(n: usize) -> String {
    format!("INV-{:05}", 10_000 + n)
}

/// The reference of the `i`th row: ten characters, within minLength 8 and maxLength 12.
pub fn reference(i: usize) -> String {
    format!("REF{i:07}")
}
