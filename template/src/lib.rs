//! Import templates: a Frictionless Table Schema (v1, with the v2 `missingValues` on fields and
//! the `alternateNames` extension) compiled once by [`compile`] into a [`Template`], whose
//! [`Field`]s cast each [`Cell`] of an upload into a borrowed typed [`Value`] and check it
//! against the field's constraints; [`validate`] runs that over whole rows. Pure code: no I/O.
//!
//! The semantics follow frictionless-py 5.18 (the reference implementation); the places where
//! this engine deliberately decides otherwise are listed in the doc comment of the module that
//! implements each one ([`Cell`] for typed workbook cells, and `cast`, `number`, `temporal`,
//! `strptime`, `text_format`, `compile` and [`validate`]).

// Functions short enough to read at once (with the workspace's lints, from Cargo.toml).
#![warn(clippy::too_many_lines)]

mod cast;
mod cell;
mod check;
mod compile;
mod fingerprint;
pub mod json_cells;
mod layout;
mod learned;
mod number;
mod strptime;
mod temporal;
mod text_format;
mod transform;
pub mod validate;
mod value;

#[cfg(test)]
mod tests;

pub use cast::CastFailure;
pub use cell::Cell;
pub use check::Constraint;
pub use compile::{compile, Problem, TEMPLATE_PATTERN_BYTES};
pub use learned::ValueMaps;
pub use number::Number;
pub use value::{DateTime, Text, Time, Value};

use check::Rules;
use value::MissingValues;

/// A compiled Table Schema.
#[derive(Debug)]
pub struct Template {
    /// The fields, in the schema's order (the order of a stored row's values).
    pub fields: Vec<Field>,
    /// Indices into `fields` of the primary key, in the key's order; empty without a key. A
    /// composite key is unique as a whole, and each of its fields is required.
    pub primary_key: Vec<usize>,
    /// The schema-level `missingValues`: the texts that mean "no value" in a cell.
    pub(crate) missing_values: MissingValues,
}

/// One compiled field of a template.
#[derive(Debug)]
pub struct Field {
    pub name: String,
    pub title: Option<String>,
    /// The `alternateNames` extension: other header texts that name the field.
    pub alternate_names: Vec<String>,
    pub field_type: FieldType,
    /// The `format` as written in the schema (`default` when absent, without a `fmt:` prefix).
    pub format: String,
    /// `constraints.required`, or membership of the primary key.
    pub required: bool,
    /// `constraints.unique` (checked across the rows of a file by [`validate::RowValidator`]).
    pub unique: bool,
    pub(crate) missing_values: MissingValues,
    pub(crate) syntax: cast::Syntax,
    pub(crate) rules: Rules,
    /// The `transforms` extension, applied to a cell's text before it is cast; `None` without.
    pub(crate) transforms: Option<transform::Transforms>,
}

codes::code_enum! {
    /// The Table Schema types this engine supports; the text is the type's name in a schema.
    pub enum FieldType as "lowercase" {
        String => "string",
        Integer => "integer",
        Number => "number",
        Boolean => "boolean",
        Date => "date",
        DateTime => "datetime",
        Time => "time",
        Year => "year",
        Any => "any",
    }
}

impl FieldType {
    /// The type's name with its article, for messages (`an integer`, `a date`).
    pub(crate) fn with_article(self) -> String {
        let article = match self {
            FieldType::Integer | FieldType::Any => "an",
            _ => "a",
        };
        format!("{article} {}", self.as_str())
    }
}

impl Template {
    /// The index of the field named `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}
