//! Automatic mapping held to a corpus of real-world header variants: every case says whether it
//! may go through on its own and, if so, which column each field must get. The figure this
//! prints is the one in `BENCHMARKS.md`: no automatic mapping is wrong, and every uncertain
//! case stops for a review.

use serde_json::json;

use super::super::validate::values::{fit, suggest_by_values, value_fit};
use super::super::validate::{
    map_columns, map_columns_with, review_reason, Evidence, MappedField, MatchKind, ReviewReason,
    FUZZY_THRESHOLD,
};
use super::super::Template;
use super::{one, template};

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

/// Sampled values by column, from rows of texts.
fn columns(rows: &[&[&str]]) -> Vec<Vec<String>> {
    let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    (0..width)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.to_string())
                .collect()
        })
        .collect()
}

fn with_samples(t: &Template, header: &[&str], rows: &[&[&str]]) -> Vec<MappedField> {
    let samples = columns(rows);
    map_columns_with(
        t,
        header,
        Evidence {
            samples: &samples,
            ..Evidence::default()
        },
    )
}

fn people() -> Template {
    template(json!({"fields": [
        {"name": "email", "format": "email", "constraints": {"required": true}},
        {"name": "customer"},
        {"name": "code", "constraints": {"pattern": "[A-Z]{3}"}},
        {"name": "amount", "type": "number"},
        {"name": "status", "constraints": {"enum": ["open", "paid"]}},
    ]}))
}

#[test]
fn value_fit_is_the_share_of_samples_a_field_reads() {
    let t = people();
    let field = |name: &str| t.fields.iter().find(|f| f.name == name).unwrap();
    let texts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mails = texts(&["ann@example.com", "bo@example.org", "", "cy@example.net"]);
    assert_eq!(value_fit(field("email"), &mails), Some(1.0));
    assert_eq!(
        value_fit(field("email"), &texts(&["Ann", "Bo", "Cy"])),
        Some(0.0)
    );
    // Too few samples to say anything.
    assert_eq!(value_fit(field("email"), &texts(&["Ann", "Bo"])), None);
    // A text field reads anything: values say nothing (digits are fine for ids and phones).
    assert_eq!(
        value_fit(field("customer"), &texts(&["1001", "1002", "1003"])),
        None
    );
    // A pattern or an enum does discriminate.
    assert_eq!(
        value_fit(field("code"), &texts(&["1001", "1002", "1003"])),
        Some(0.0)
    );
    assert_eq!(
        value_fit(field("code"), &texts(&["ABC", "DEF", "x1"])),
        Some(2.0 / 3.0)
    );
    // Clearly unfit takes at least three values that do not fit, and more than half.
    let code = |v: &[&str]| fit(field("code"), &texts(v)).unwrap();
    assert!(code(&["1", "2", "3"]).clearly_unfit());
    assert!(
        !code(&["1", "2", "ABC"]).clearly_unfit(),
        "two odd values are rows' errors"
    );
    assert!(code(&["1", "2", "3", "ABC", "DEF"]).clearly_unfit());
    assert!(!code(&["1", "2", "3", "ABC", "DEF", "GHI"]).clearly_unfit());
    assert!(code(&["ABC", "DEF", "GHI"]).strong());
    assert_eq!(
        value_fit(field("status"), &texts(&["open", "paid", "open"])),
        Some(1.0)
    );
    assert_eq!(
        value_fit(field("status"), &texts(&["2024-01-02", "2024-01-03", "x"])),
        Some(0.0)
    );
    // A number as a workbook cell's text fits a field with another decimal mark.
    let euro = one(json!({"name": "n", "type": "number", "decimalChar": ","}));
    assert_eq!(
        value_fit(&euro.fields[0], &texts(&["1,5", "12.25", "3"])),
        Some(1.0)
    );
    // So do a workbook's date, time and boolean cells, whatever the field's own forms.
    let dated = template(json!({"fields": [
        {"name": "d", "type": "date", "format": "%d/%m/%Y"},
        {"name": "t", "type": "time", "format": "%H.%M"},
        {"name": "b", "type": "boolean", "trueValues": ["yes"], "falseValues": ["no"]},
    ]}));
    let cells = texts(&["2024-01-31", "2024-02-01T10:30:00", "31/01/2024"]);
    assert_eq!(value_fit(&dated.fields[0], &cells), Some(1.0));
    let times = texts(&["10:30:00", "23:59:59.250", "10.30"]);
    assert_eq!(value_fit(&dated.fields[1], &times), Some(1.0));
    let flags = texts(&["true", "false", "yes"]);
    assert_eq!(value_fit(&dated.fields[2], &flags), Some(1.0));
    // Out of range is a row's error, not the wrong column.
    let small = one(json!({"name": "n", "type": "integer", "constraints": {"maximum": 5}}));
    assert_eq!(
        value_fit(&small.fields[0], &texts(&["10", "20", "30"])),
        Some(1.0)
    );
}

#[test]
fn an_e_mail_column_is_matched_by_its_values() {
    let t = people();
    let header = ["E-mail address", "Customer"];
    // By name alone `E-mail address` is too unlike `email`: the required field waits.
    let by_name = map_columns(&t, &header);
    assert_eq!(by_name[0].column, None);
    assert_eq!(
        review_reason(&t, &by_name),
        Some(ReviewReason::RequiredUnmapped)
    );
    let rows: &[&[&str]] = &[
        &["ann@example.com", "Ann"],
        &["bo@example.org", "Bo"],
        &["cy@example.net", "Cy"],
    ];
    let mapped = with_samples(&t, &header, rows);
    assert_eq!(mapped[0].column, Some(0));
    assert_eq!(mapped[0].how, Some(MatchKind::Fuzzy));
    assert!(mapped[0].confidence >= FUZZY_THRESHOLD && mapped[0].confidence < 1.0);
    assert_eq!(review_reason(&t, &mapped), None, "{mapped:?}");
    // Addresses that do not fit lift nothing.
    let rows: &[&[&str]] = &[&["Ann", "Ann"], &["Bo", "Bo"], &["Cy", "Cy"]];
    assert_eq!(with_samples(&t, &header, rows)[0].column, None);
}

#[test]
fn two_columns_of_e_mail_addresses_are_for_a_person_to_choose() {
    let t = people();
    let header = ["E-mail address", "Backup", "Customer"];
    let rows: &[&[&str]] = &[
        &["ann@example.com", "a@example.com", "Ann"],
        &["bo@example.org", "b@example.com", "Bo"],
        &["cy@example.net", "c@example.com", "Cy"],
    ];
    let mapped = with_samples(&t, &header, rows);
    assert_eq!(mapped[0].column, Some(0));
    assert_eq!(mapped[0].competitor, Some(1));
    assert_eq!(review_reason(&t, &mapped), Some(ReviewReason::Competing));
}

#[test]
fn a_name_match_whose_values_do_not_fit_is_not_certain() {
    let t = people();
    let header = ["email", "customer", "code", "amount", "status"];
    let good: &[&[&str]] = &[
        &["a@example.com", "1001", "ABC", "12.5", "open"],
        &["b@example.com", "1002", "DEF", "3", "paid"],
        &["c@example.com", "1003", "GHI", "4", "open"],
    ];
    let mapped = with_samples(&t, &header, good);
    assert!(mapped.iter().all(|m| m.confidence == 1.0), "{mapped:?}");
    assert_eq!(review_reason(&t, &mapped), None);
    // A numeric column named like a text field: `customer` reads digits, so it stays certain;
    // `code` has a pattern digits do not match, so it does not.
    let numeric: &[&[&str]] = &[
        &["a@example.com", "1001", "1", "12.5", "open"],
        &["b@example.com", "1002", "2", "3", "paid"],
        &["c@example.com", "1003", "3", "4", "open"],
    ];
    let mapped = with_samples(&t, &header, numeric);
    assert_eq!(mapped[1].confidence, 1.0);
    assert_eq!(mapped[2].column, Some(2), "still suggested");
    assert!(mapped[2].confidence < FUZZY_THRESHOLD, "{:?}", mapped[2]);
    assert_eq!(review_reason(&t, &mapped), Some(ReviewReason::Unsure));
    // Names under `amount`, dates under the enum field `status`.
    let swapped: &[&[&str]] = &[
        &["a@example.com", "Ann", "ABC", "Ann", "2024-01-02"],
        &["b@example.com", "Bo", "DEF", "Bo", "2024-01-03"],
        &["c@example.com", "Cy", "GHI", "Cy", "2024-01-04"],
    ];
    let mapped = with_samples(&t, &header, swapped);
    assert!(mapped[3].confidence < FUZZY_THRESHOLD);
    assert!(mapped[4].confidence < FUZZY_THRESHOLD);
    assert_eq!(
        mapped[3].how,
        Some(MatchKind::Exact),
        "the name still says why"
    );
    assert_eq!(review_reason(&t, &mapped), Some(ReviewReason::Unsure));
}

#[test]
fn values_alone_only_suggest_and_only_when_one_column_fits() {
    let t = people();
    let header = ["Contact", "Other"];
    let rows: &[&[&str]] = &[
        &["ann@example.com", "x"],
        &["bo@example.org", "y"],
        &["cy@example.net", "z"],
    ];
    let samples = columns(rows);
    let mut mapped = with_samples(&t, &header, rows);
    assert_eq!(mapped[0].column, None, "no name evidence: not mapped");
    suggest_by_values(&t, &samples, &mut mapped);
    assert_eq!(mapped[0].column, Some(0));
    assert!(mapped[0].confidence <= 0.5);
    assert!(review_reason(&t, &mapped).is_some());
    let both: &[&[&str]] = &[
        &["ann@example.com", "a@example.com"],
        &["bo@example.org", "b@example.com"],
        &["cy@example.net", "c@example.com"],
    ];
    let mut mapped = with_samples(&t, &header, both);
    suggest_by_values(&t, &columns(both), &mut mapped);
    assert_eq!(mapped[0].column, None, "two fit: nothing suggested");
}

#[test]
fn learned_texts_map_before_names_and_two_compete() {
    let t = invoices();
    let learned = vec![
        ("Kunde".to_string(), "customer".to_string()),
        ("Nr.".to_string(), "invoice_no".to_string()),
        ("Rg-Nr".to_string(), "invoice_no".to_string()),
    ];
    let evidence = Evidence {
        learned: &learned,
        ..Evidence::default()
    };
    let header = ["Nr.", "Kunde", "Betrag", "Notes"];
    let mapped = map_columns_with(&t, &header, evidence);
    assert_eq!(mapped[0].column, Some(0));
    assert_eq!(mapped[0].how, Some(MatchKind::Learned));
    assert_eq!(mapped[1].how, Some(MatchKind::Learned));
    assert_eq!(mapped[4].how, Some(MatchKind::Alias));
    assert_eq!(review_reason(&t, &mapped), None);
    // Another tenant's or template's words are not given: by name alone this waits.
    assert!(review_reason(&t, &map_columns(&t, &header)).is_some());
    let header = ["Nr.", "Rg-Nr", "Kunde", "Betrag"];
    let mapped = map_columns_with(&t, &header, evidence);
    assert_eq!(mapped[0].competitor, Some(1));
    assert_eq!(review_reason(&t, &mapped), Some(ReviewReason::Competing));
}
