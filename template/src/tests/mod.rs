//! Tests of the template engine, by part: numbers, strptime patterns and ISO forms, casting
//! each type from text and typed cells, constraints, schema compilation, row validation.

// The crate's length limit is for its product code: a test here may be a long table of cases.
#![allow(clippy::too_many_lines)]

mod cast;
mod compile;
mod constraints;
mod mapping;
mod number;
mod perf;
mod strptime;
mod transform;
mod validate;

use serde_json::{json, Value as Json};

use super::{Cell, Field, Template};

/// Compiles a schema that must be valid.
fn template(schema: Json) -> Template {
    match super::compile(&schema) {
        Ok(t) => t,
        Err(problems) => panic!("{schema} should compile: {problems:?}"),
    }
}

/// A template of the single field `descriptor`.
fn one(descriptor: Json) -> Template {
    template(json!({ "fields": [descriptor] }))
}

/// The JSON a field writes for a cell, or `None` when the cell is a type error.
fn cast_json(field: &Field, cell: Cell<'_>) -> Option<String> {
    let value = field.cast(cell).ok()?;
    let mut out = Vec::new();
    value.write_json(&mut out);
    Some(String::from_utf8(out).expect("JSON is UTF-8"))
}

/// `cast_json` of a text cell in a one-field template of `descriptor`.
fn text_json(descriptor: &Json, text: &str) -> Option<String> {
    let t = one(descriptor.clone());
    cast_json(&t.fields[0], Cell::Text(text))
}
