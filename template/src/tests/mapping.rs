//! Automatic mapping held to a corpus of real-world header variants: every case says whether it
//! may go through on its own and, if so, which column each field must get. The figure this
//! prints is the one in `BENCHMARKS.md`: no automatic mapping is wrong, and every uncertain
//! case stops for a review.

use serde_json::json;

use super::super::validate::{map_columns, review_reason, MatchKind, FUZZY_THRESHOLD};
use super::super::Template;
use super::template;

fn invoices() -> Template {
    template(json!({"fields": [
        {"name": "invoice_no", "title": "Invoice number", "constraints": {"required": true},
         "alternateNames": ["Rechnungsnummer", "請求番号"]},
        {"name": "customer", "title": "Customer name", "constraints": {"required": true}},
        {"name": "issued_on", "title": "Issue date", "alternateNames": ["Invoice date"]},
        {"name": "due_on", "title": "Due date"},
        {"name": "amount", "constraints": {"required": true}, "alternateNames": ["Total", "Betrag"]},
        {"name": "currency"},
        {"name": "paid", "alternateNames": ["Status"]},
    ]}))
}

fn contacts() -> Template {
    template(json!({"fields": [
        {"name": "first_name"},
        {"name": "last_name"},
        {"name": "email", "constraints": {"required": true},
         "alternateNames": ["E-mail address", "Mail"]},
        {"name": "phone", "alternateNames": ["Telephone", "Tel", "Mobile"]},
        {"name": "company"},
        {"name": "country", "alternateNames": ["Land"]},
    ]}))
}

fn sales() -> Template {
    template(json!({"fields": [
        {"name": "order_id", "constraints": {"required": true}, "alternateNames": ["Order #"]},
        {"name": "sku", "constraints": {"required": true},
         "alternateNames": ["Item code", "Product code"]},
        {"name": "quantity", "constraints": {"required": true}, "alternateNames": ["Qty", "Units"]},
        {"name": "unit_price", "alternateNames": ["Price"]},
        {"name": "region"},
    ]}))
}

/// What a case must come to: through on its own with each field on the column of this header
/// text (fields not named: no column), or stopped for a review.
enum Expect {
    Auto(&'static [(&'static str, &'static str)]),
    Review,
}
use Expect::{Auto, Review};

type Case = (fn() -> Template, &'static [&'static str], Expect);

const CASES: &[Case] = &[
    // Invoices.
    (
        invoices,
        &[
            "invoice_no",
            "customer",
            "issued_on",
            "due_on",
            "amount",
            "currency",
            "paid",
        ],
        Auto(&[
            ("invoice_no", "invoice_no"),
            ("customer", "customer"),
            ("issued_on", "issued_on"),
            ("due_on", "due_on"),
            ("amount", "amount"),
            ("currency", "currency"),
            ("paid", "paid"),
        ]),
    ),
    (
        invoices,
        &[
            "Invoice number",
            "Customer name",
            "Issue date",
            "Due date",
            "amount",
        ],
        Auto(&[
            ("invoice_no", "Invoice number"),
            ("customer", "Customer name"),
            ("issued_on", "Issue date"),
            ("due_on", "Due date"),
            ("amount", "amount"),
        ]),
    ),
    (
        invoices,
        &[
            "INVOICE NO",
            "CUSTOMER",
            "ISSUE DATE",
            "DUE DATE",
            "AMOUNT",
            "CURRENCY",
            "PAID",
        ],
        Auto(&[
            ("invoice_no", "INVOICE NO"),
            ("customer", "CUSTOMER"),
            ("issued_on", "ISSUE DATE"),
            ("due_on", "DUE DATE"),
            ("amount", "AMOUNT"),
            ("currency", "CURRENCY"),
            ("paid", "PAID"),
        ]),
    ),
    (
        invoices,
        &["Invoice #", "Customer Name", "Amount", "Currency"],
        Auto(&[
            ("invoice_no", "Invoice #"),
            ("customer", "Customer Name"),
            ("amount", "Amount"),
            ("currency", "Currency"),
        ]),
    ),
    (
        invoices,
        &[
            "invoiceNumber",
            "customerName",
            "issueDate",
            "dueDate",
            "amount",
        ],
        Auto(&[
            ("invoice_no", "invoiceNumber"),
            ("customer", "customerName"),
            ("issued_on", "issueDate"),
            ("due_on", "dueDate"),
            ("amount", "amount"),
        ]),
    ),
    (
        invoices,
        &["ＩＮＶＯＩＣＥ　ＮＯ", "ＣＵＳＴＯＭＥＲ", "ＡＭＯＵＮＴ"],
        Auto(&[
            ("invoice_no", "ＩＮＶＯＩＣＥ　ＮＯ"),
            ("customer", "ＣＵＳＴＯＭＥＲ"),
            ("amount", "ＡＭＯＵＮＴ"),
        ]),
    ),
    (invoices, &["Rechnungsnummer", "Kunde", "Betrag"], Review),
    (
        invoices,
        &["請求番号", "Customer", "Invoice date", "Total", "Status"],
        Auto(&[
            ("invoice_no", "請求番号"),
            ("customer", "Customer"),
            ("issued_on", "Invoice date"),
            ("amount", "Total"),
            ("paid", "Status"),
        ]),
    ),
    (
        invoices,
        &["Invoice Numbr", "Customer", "Amount"],
        Auto(&[
            ("invoice_no", "Invoice Numbr"),
            ("customer", "Customer"),
            ("amount", "Amount"),
        ]),
    ),
    (invoices, &["Invoice no", "Customer", "Ammount"], Review),
    (
        invoices,
        &["Invoice no", "Customer", "Issue date", "Currency", "Notes"],
        Review,
    ),
    (
        invoices,
        &["Invoice No", "Invoice #", "Customer", "Amount"],
        Review,
    ),
    (
        invoices,
        &["invoice_no", "customer", "amount", "Notes", "Internal ref"],
        Auto(&[
            ("invoice_no", "invoice_no"),
            ("customer", "customer"),
            ("amount", "amount"),
        ]),
    ),
    (
        invoices,
        &["amount", "paid", "customer", "invoice_no"],
        Auto(&[
            ("invoice_no", "invoice_no"),
            ("customer", "customer"),
            ("amount", "amount"),
            ("paid", "paid"),
        ]),
    ),
    (invoices, &["Invoice date", "Customer", "Amount"], Review),
    (
        invoices,
        &[
            "Invoice no",
            "Customer",
            "Total excl. VAT",
            "Total incl. VAT",
        ],
        Review,
    ),
    (
        invoices,
        &["Invoice no", "Customer", "Amount (EUR)"],
        Review,
    ),
    (
        invoices,
        &["Invoice no", "Customer name", "Customer number", "Amount"],
        Auto(&[
            ("invoice_no", "Invoice no"),
            ("customer", "Customer name"),
            ("amount", "Amount"),
        ]),
    ),
    (
        invoices,
        &["invoice_no ", " customer", "amount"],
        Auto(&[
            ("invoice_no", "invoice_no "),
            ("customer", " customer"),
            ("amount", "amount"),
        ]),
    ),
    (invoices, &["column_1", "column_2", "column_3"], Review),
    // Contacts.
    (
        contacts,
        &[
            "First Name",
            "Last Name",
            "Email",
            "Phone",
            "Company",
            "Country",
        ],
        Auto(&[
            ("first_name", "First Name"),
            ("last_name", "Last Name"),
            ("email", "Email"),
            ("phone", "Phone"),
            ("company", "Company"),
            ("country", "Country"),
        ]),
    ),
    (
        contacts,
        &["firstname", "lastname", "e-mail", "tel", "company", "land"],
        Auto(&[
            ("first_name", "firstname"),
            ("last_name", "lastname"),
            ("email", "e-mail"),
            ("phone", "tel"),
            ("company", "company"),
            ("country", "land"),
        ]),
    ),
    (
        contacts,
        &["Given name", "Surname", "Email address", "Mobile"],
        Auto(&[("email", "Email address"), ("phone", "Mobile")]),
    ),
    (
        contacts,
        &["E-Mail", "Phone Number", "Company Name", "Country"],
        Auto(&[("email", "E-Mail"), ("country", "Country")]),
    ),
    (
        contacts,
        &["Email", "Email (work)"],
        Auto(&[("email", "Email")]),
    ),
    (contacts, &["mail", "Mail", "Phone"], Review),
    (contacts, &["First name", "Last name", "Phone"], Review),
    (contacts, &["Emial", "Phone"], Review),
    (
        contacts,
        &["Emailaddres", "Phone"],
        Auto(&[("email", "Emailaddres"), ("phone", "Phone")]),
    ),
    (
        contacts,
        &["EMAIL", "TELEPHONE", "COUNTRY"],
        Auto(&[
            ("email", "EMAIL"),
            ("phone", "TELEPHONE"),
            ("country", "COUNTRY"),
        ]),
    ),
    // Sales orders.
    (
        sales,
        &["Order ID", "SKU", "Qty", "Unit Price", "Region"],
        Auto(&[
            ("order_id", "Order ID"),
            ("sku", "SKU"),
            ("quantity", "Qty"),
            ("unit_price", "Unit Price"),
            ("region", "Region"),
        ]),
    ),
    (
        sales,
        &["Order #", "Item code", "Units", "Price", "Region"],
        Auto(&[
            ("order_id", "Order #"),
            ("sku", "Item code"),
            ("quantity", "Units"),
            ("unit_price", "Price"),
            ("region", "Region"),
        ]),
    ),
    (
        sales,
        &["order_number", "product_code", "quantity", "unit price"],
        Auto(&[
            ("order_id", "order_number"),
            ("sku", "product_code"),
            ("quantity", "quantity"),
            ("unit_price", "unit price"),
        ]),
    ),
    (sales, &["Order", "SKU", "Quantity"], Review),
    (
        sales,
        &["Order ID", "SKU", "Quantity", "Qty"],
        Auto(&[
            ("order_id", "Order ID"),
            ("sku", "SKU"),
            ("quantity", "Quantity"),
        ]),
    ),
    (sales, &["Order ID", "SKU", "Qty", "Units"], Review),
    (
        sales,
        &["Order ID", "SKU", "sku", "Quantity"],
        Auto(&[
            ("order_id", "Order ID"),
            ("sku", "sku"),
            ("quantity", "Quantity"),
        ]),
    ),
    (
        sales,
        &["Order ID", "SKU", "Quantity", "Unit Price", "Price"],
        Auto(&[
            ("order_id", "Order ID"),
            ("sku", "SKU"),
            ("quantity", "Quantity"),
            ("unit_price", "Unit Price"),
        ]),
    ),
    (
        sales,
        &["Order ID", "SKU", "Quantity", "Sales Region", "Region"],
        Auto(&[
            ("order_id", "Order ID"),
            ("sku", "SKU"),
            ("quantity", "Quantity"),
            ("region", "Region"),
        ]),
    ),
    (
        sales,
        &["OrderID", "SKU ", "QTY.", "Unitprice"],
        Auto(&[
            ("order_id", "OrderID"),
            ("sku", "SKU "),
            ("quantity", "QTY."),
            ("unit_price", "Unitprice"),
        ]),
    ),
    (
        sales,
        &["Order ID", "Item code", "Product code", "Qty"],
        Review,
    ),
    (
        sales,
        &["Ｏｒｄｅｒ ＩＤ", "ＳＫＵ", "Ｑｔｙ"],
        Auto(&[
            ("order_id", "Ｏｒｄｅｒ ＩＤ"),
            ("sku", "ＳＫＵ"),
            ("quantity", "Ｑｔｙ"),
        ]),
    ),
    (sales, &["Ordr ID", "SKU", "Quantity"], Review),
    (sales, &["Order Identifier", "SKU", "Quantity"], Review),
    (
        sales,
        &["Quantity", "SKU", "Order ID", "Region", "Notes", "Discount"],
        Auto(&[
            ("order_id", "Order ID"),
            ("sku", "SKU"),
            ("quantity", "Quantity"),
            ("region", "Region"),
        ]),
    ),
];

#[test]
fn no_automatic_mapping_is_wrong_and_every_uncertain_case_is_reviewed() {
    let (mut auto, mut review, mut wrong) = (0, 0, 0);
    for (i, (template_of, header, expect)) in CASES.iter().enumerate() {
        let t = template_of();
        let mapped = map_columns(&t, header);
        let reason = review_reason(&t, &mapped);
        let got: Vec<(&str, Option<&str>)> = mapped
            .iter()
            .map(|m| (t.fields[m.field].name.as_str(), m.column.map(|c| header[c])))
            .collect();
        match expect {
            Auto(want) => {
                assert_eq!(reason, None, "case {i} {header:?} must go through: {got:?}");
                for (field, column) in &got {
                    let expected = want.iter().find(|(f, _)| f == field).map(|(_, c)| *c);
                    if *column != expected {
                        wrong += 1;
                        eprintln!("case {i}: {field} got {column:?}, expected {expected:?}");
                    }
                }
                auto += 1;
            }
            Review => {
                assert!(reason.is_some(), "case {i} {header:?} must stop: {got:?}");
                review += 1;
            }
        }
        // Nothing taken above the threshold is wrong, reviewed or not.
        for m in &mapped {
            let certain = m.confidence >= FUZZY_THRESHOLD || m.how != Some(MatchKind::Fuzzy);
            if let (Some(c), true, Auto(want)) = (m.column, certain, expect) {
                let field = t.fields[m.field].name.as_str();
                assert!(
                    want.iter().any(|(f, h)| *f == field && *h == header[c]),
                    "case {i}: {field} certain on {:?}",
                    header[c]
                );
            }
        }
    }
    println!(
        "mapping: {} header sets, {auto} mapped automatically ({wrong} wrong), {review} sent to review",
        CASES.len()
    );
    assert_eq!(wrong, 0);
}

#[test]
fn a_header_of_16384_empty_cells_maps_nothing_and_asks() {
    let t = invoices();
    let header = vec![""; 16_384];
    let mapped = map_columns(&t, &header);
    assert!(mapped.iter().all(|m| m.column.is_none()));
    assert!(review_reason(&t, &mapped).is_some());
}

#[test]
fn two_columns_nearly_as_similar_compete_for_a_field() {
    let t = sales();
    // "Quantty" and "Quantiy" are one edit from "quantity" each.
    let header = ["Order ID", "SKU", "Quantty", "Quantiy"];
    let mapped = map_columns(&t, &header);
    let quantity = &mapped[2];
    assert_eq!(quantity.how, Some(MatchKind::Fuzzy));
    assert!(quantity.competitor.is_some(), "{quantity:?}");
    assert!(review_reason(&t, &mapped).is_some());
}
