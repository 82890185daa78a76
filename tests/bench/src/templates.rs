//! `templates`: what checking uploads against an import template costs. Every figure is a parse +
//! store through the consumer ([`parse::store`]) of the bench's 12-column table, the upload naming
//! a template that uses every constraint kind and a type or format fitting each column
//! ([`schema`]): the 1M-row CSV and xlsx, each also stored without a template in the same run (in
//! alternating order from run to run, as the host drifts by tens of percent from one minute to
//! the next) for the ratio of the two; a 10M-row CSV, whose `unique` key makes the parse child
//! hold one fingerprint per row, for the worker's and the child's peak RSS against their limits;
//! and a CSV in which every row has an error, for exact counts, capped error records and memory
//! that does not grow with the errors.

use crate::env::Stack;
use crate::gen;
use crate::parse::{self, Templated};
use crate::procs::MB;
use crate::report::Run;

/// Sizes of one run.
pub struct Sizes {
    /// Rows of the CSV and the xlsx stored with and without the template, and of the CSV in
    /// which every row has an error (the same size, so its peaks compare with the clean CSV's).
    pub rows: u64,
    /// Rows of the big CSV, whose `unique` key holds one fingerprint per row.
    pub unique_rows: u64,
}

/// The template: the bench table's 12 columns (two of them matched by another name: `code` by
/// `title`, `quantity` by `alternateNames`), every constraint kind, and each type the columns
/// fit, the datetimes in the CSV's own format. Every row of [`gen::csv`] and [`gen::xlsx`] is
/// valid against it.
pub fn schema() -> serde_json::Value {
    serde_json::json!({
        "fields": [
            {"name": "id", "type": "integer",
             "constraints": {"required": true, "unique": true, "minimum": 0}},
            {"name": "customer", "title": "code", "type": "string",
             "constraints": {"required": true, "pattern": "C-[0-9]{8}"}},
            {"name": "name", "type": "string", "constraints": {"minLength": 2, "maxLength": 40}},
            {"name": "qty", "alternateNames": ["quantity"], "type": "integer",
             "constraints": {"minimum": 0, "maximum": 1000}},
            {"name": "amount", "type": "number", "constraints": {"minimum": 0}},
            {"name": "date", "type": "date"},
            {"name": "datetime", "type": "datetime", "format": "%Y-%m-%d %H:%M:%S"},
            {"name": "active", "type": "boolean"},
            {"name": "discount", "type": "integer", "constraints": {"maximum": 50}},
            {"name": "note", "type": "string", "constraints": {"maxLength": 200}},
            {"name": "prefecture", "type": "string", "constraints": {"enum": gen::PREFS}},
            {"name": "email", "type": "string", "format": "email"}
        ]
    })
}

/// The same template with transforms on every field (contract v1.3), the clean-ups people put
/// on imported text: `trim` and `collapse_spaces` everywhere, `upper` then a `map` on the
/// prefecture. Every row stays valid (the bench's cells need none of them), so the ratio to
/// [`schema`] is what running them costs.
fn with_transforms(schema: &serde_json::Value) -> serde_json::Value {
    let mut schema = schema.clone();
    for field in schema["fields"].as_array_mut().into_iter().flatten() {
        let mut transforms = vec![
            serde_json::json!("trim"),
            serde_json::json!("collapse_spaces"),
        ];
        if field["name"] == "prefecture" {
            let map: serde_json::Map<String, serde_json::Value> = gen::PREFS
                .iter()
                .map(|p| (p.to_lowercase(), serde_json::json!(p)))
                .collect();
            transforms.push(serde_json::json!({"map": map, "ignore_case": true}));
        }
        field["transforms"] = serde_json::Value::Array(transforms);
    }
    schema
}

/// The CSV stored with the template and with [`with_transforms`] of it, in alternating order;
/// records `csv.transforms_ratio_pct`, rows/s with the transforms over without.
async fn transforms(
    stack: &Stack,
    run: &mut Run,
    csv: &std::path::Path,
    rows: u64,
    clean: &Templated<'_>,
    index: usize,
) -> anyhow::Result<()> {
    let schema = with_transforms(clean.schema);
    let transformed = Templated {
        schema: &schema,
        ..*clean
    };
    let mut order = [(false, clean), (true, &transformed)];
    if index % 2 == 1 {
        order.reverse();
    }
    let mut rates = [0.0_f64; 2];
    for (with, template) in order {
        let label = if with {
            "csv.transforms"
        } else {
            "csv.template_again"
        };
        let stored = parse::store(stack, run, label, csv, "csv", rows, Some(template)).await?;
        rates[usize::from(with)] = stored.rows_per_s;
    }
    let ratio = rates[1] / rates[0] * 100.0;
    eprintln!(
        "  csv: {:.0} rows/s with transforms on every field, {:.0} without: {ratio:.1} %",
        rates[1], rates[0]
    );
    run.put("csv.transforms_ratio_pct", "%", ratio);
    Ok(())
}

pub async fn run(stack: &Stack, sizes: &Sizes, index: usize) -> anyhow::Result<Run> {
    // Generated (or found in the cache) before anything is timed.
    let csv = gen::csv(sizes.rows, false)?;
    let xlsx = gen::xlsx(sizes.rows)?;
    let bad = gen::csv_bad_quantities(sizes.rows)?;
    let unique = gen::csv(sizes.unique_rows, false)?;
    let schema = schema();
    let clean = Templated {
        schema: &schema,
        rows_valid: sizes.rows,
        errors_total: 0,
    };
    let mut run = Run::default();
    run.note(format!(
        "templates: {} rows of the parse scenario's CSV and xlsx, stored with and without a 12-field template using every constraint kind (template_ratio_pct = rows/s with / without, measured in the same run, which goes first alternating from run to run); csv_unique_big: {} rows with a unique id; csv_all_invalid: {} rows whose every quantity is over the maximum (drop_invalid_rows), *_over_clean_mb = its peak minus the clean CSV's with the template",
        sizes.rows, sizes.unique_rows, sizes.rows
    ));

    let mut clean_csv = None;
    for (label, file, format) in [("csv", &csv, "csv"), ("xlsx", &xlsx, "xlsx")] {
        let mut order = [None, Some(&clean)];
        if index % 2 == 1 {
            order.reverse();
        }
        // Rows/s without and with the template.
        let mut rates = [0.0_f64; 2];
        for template in order {
            let mode = if template.is_some() {
                "template"
            } else {
                "plain"
            };
            let label = format!("{label}.{mode}");
            let stored =
                parse::store(stack, &mut run, &label, file, format, sizes.rows, template).await?;
            rates[usize::from(template.is_some())] = stored.rows_per_s;
            if template.is_some() && format == "csv" {
                clean_csv = Some(stored);
            }
        }
        let [plain, templated] = rates;
        let ratio = templated / plain * 100.0;
        eprintln!(
            "  {label}: {templated:.0} rows/s with the template, {plain:.0} without: {ratio:.1} %"
        );
        run.put(format!("{label}.template_ratio_pct"), "%", ratio);
    }

    transforms(stack, &mut run, &csv, sizes.rows, &clean, index).await?;

    let all_valid = Templated {
        rows_valid: sizes.unique_rows,
        ..clean
    };
    parse::store(
        stack,
        &mut run,
        "csv_unique_big",
        &unique,
        "csv",
        sizes.unique_rows,
        Some(&all_valid),
    )
    .await?;

    let all_invalid = Templated {
        rows_valid: 0,
        errors_total: sizes.rows,
        ..clean
    };
    let invalid = parse::store(
        stack,
        &mut run,
        "csv_all_invalid",
        &bad,
        "csv",
        sizes.rows,
        Some(&all_invalid),
    )
    .await?;
    if let Some(clean) = clean_csv {
        let over = |a: u64, b: u64| (a as f64 - b as f64) / MB;
        run.put(
            "csv_all_invalid.worker_peak_over_clean_mb",
            "MB",
            over(invalid.worker_peak, clean.worker_peak),
        );
        run.put(
            "csv_all_invalid.child_peak_over_clean_mb",
            "MB",
            over(invalid.child_peak, clean.child_peak),
        );
    }
    Ok(run)
}
