//! Compiling a Table Schema document into a [`Template`], listing every problem of the document
//! at once, each at its RFC 6901 JSON pointer (`/fields/2/constraints/pattern`), for the api's
//! `422 invalid_template`.
//!
//! What is checked: JSON types everywhere this engine reads; field names present, non-empty
//! and unique; types and formats known; constraints known and fitting their field's type
//! (`minimum` on a string, `pattern` on an integer and `minLength` on a boolean are problems);
//! patterns compiling within bounds; `minimum`, `maximum`, `enum` values and `example` casting
//! to the field's type; `min…` not above `max…`; `primaryKey` naming fields; and the bounds:
//! at most 1,000 fields, 10,000 enum values a field, 100 `missingValues` (and as many
//! `trueValues`, `falseValues`, `alternateNames`), 256 characters in a name, title, alternate
//! name or listed value, 1,000 in a pattern, 100 in a format. Properties this engine does not
//! read are allowed, as Frictionless allows custom properties.
//!
//! Deliberate differences from frictionless: a field without `type` is a string (as
//! frictionless reads v1 schemas; v2 says `any`); a schema needs at least one field;
//! `foreignKeys` are refused (a template validates one file); a `format` that is not
//! `default` is refused for the types that have no formats (frictionless ignores it), and a
//! date, datetime or time pattern without a `%` directive (`dd/mm/yyyy`, a common slip that
//! Python would read as literal text) is refused; `decimalChar` is one character and
//! `groupChar` one or none; a text in both `trueValues` and `falseValues` is refused; a header
//! text naming two fields (one's title, the other's alternate name...) is refused, since a file
//! could not be mapped; `minimum`, `maximum` and `enum` of a date, datetime or time field are
//! read in the field's format or, failing that, in ISO 8601 (frictionless: the format only).

mod constraints;
mod field;
mod patterns;
mod transforms;

pub use patterns::TEMPLATE_PATTERN_BYTES;

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value as Json;

use super::value::MissingValues;
use super::Template;

/// One problem of a schema document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    /// RFC 6901 pointer into the document (`""` is the document itself).
    pub pointer: String,
    pub message: String,
}

pub(super) const MAX_FIELDS: usize = 1_000;
pub(super) const MAX_ENUM_VALUES: usize = 10_000;
pub(super) const MAX_LISTED: usize = 100;
pub(super) const MAX_LABEL_CHARS: usize = 256;
pub(super) const MAX_PATTERN_CHARS: usize = 1_000;
pub(super) const MAX_FORMAT_CHARS: usize = 100;

/// The problems found so far.
#[derive(Default)]
pub(super) struct Problems(Vec<Problem>);

impl Problems {
    pub fn add(&mut self, pointer: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem {
            pointer: pointer.into(),
            message: message.into(),
        });
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// Escapes a property name for a JSON pointer (`~` → `~0`, `/` → `~1`).
pub(super) fn escape(key: &str) -> Cow<'_, str> {
    if key.contains(['~', '/']) {
        Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(key)
    }
}

/// A JSON value's kind, for "must be …, not …" messages.
pub(super) fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// A name, title or alternate name: a non-empty string of at most 256 characters.
pub(super) fn label<'j>(v: &'j Json, pointer: &str, p: &mut Problems) -> Option<&'j str> {
    let Json::String(s) = v else {
        p.add(pointer, format!("must be a string, not {}", kind(v)));
        return None;
    };
    if s.is_empty() {
        p.add(pointer, "must not be empty");
        return None;
    }
    if s.chars().count() > MAX_LABEL_CHARS {
        p.add(
            pointer,
            format!("must be at most {MAX_LABEL_CHARS} characters long"),
        );
        return None;
    }
    Some(s)
}

/// An array of at most 100 strings of at most 256 characters (`missingValues`, `trueValues`,
/// `alternateNames`...); `None` if it has a problem.
pub(super) fn string_list(v: &Json, pointer: &str, p: &mut Problems) -> Option<Vec<String>> {
    let Json::Array(items) = v else {
        p.add(
            pointer,
            format!("must be an array of strings, not {}", kind(v)),
        );
        return None;
    };
    if items.len() > MAX_LISTED {
        p.add(
            pointer,
            format!(
                "must list at most {MAX_LISTED} values ({} here)",
                items.len()
            ),
        );
        return None;
    }
    let before = p.len();
    let mut out = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        match item {
            Json::String(s) if s.chars().count() > MAX_LABEL_CHARS => p.add(
                format!("{pointer}/{j}"),
                format!("must be at most {MAX_LABEL_CHARS} characters long"),
            ),
            Json::String(s) => out.push(s.clone()),
            other => p.add(
                format!("{pointer}/{j}"),
                format!("must be a string, not {}", kind(other)),
            ),
        }
    }
    (p.len() == before).then_some(out)
}

/// Compiles a Table Schema; on failure, every problem of the document (the document's size is
/// the caller's to bound).
pub fn compile(schema: &Json) -> Result<super::Template, Vec<Problem>> {
    let mut p = Problems::default();
    let Some(root) = schema.as_object() else {
        p.add(
            "",
            format!("a Table Schema must be a JSON object, not {}", kind(schema)),
        );
        return Err(p.0);
    };
    for key in ["name", "title", "description"] {
        if let Some(v) = root.get(key).filter(|v| !v.is_string()) {
            p.add(
                format!("/{key}"),
                format!("must be a string, not {}", kind(v)),
            );
        }
    }
    let missing = match root.get("missingValues") {
        None => vec![String::new()],
        Some(v) => string_list(v, "/missingValues", &mut p).unwrap_or_default(),
    };
    let no_fields = Vec::new();
    let fields_json = match root.get("fields") {
        None => {
            p.add("/fields", "a Table Schema needs \"fields\"");
            &no_fields
        }
        Some(Json::Array(a)) if a.is_empty() => {
            p.add("/fields", "a Table Schema needs at least one field");
            a
        }
        Some(Json::Array(a)) if a.len() > MAX_FIELDS => {
            p.add(
                "/fields",
                format!("at most {MAX_FIELDS} fields are allowed ({} here)", a.len()),
            );
            a
        }
        Some(Json::Array(a)) => a,
        Some(other) => {
            p.add("/fields", format!("must be an array, not {}", kind(other)));
            &no_fields
        }
    };
    let mut patterns = patterns::Patterns::default();
    let fields: Vec<_> = fields_json
        .iter()
        .enumerate()
        .filter_map(|(i, f)| field::compile(f, i, &missing, &mut p, &mut patterns))
        .collect();
    let names: Vec<Option<&str>> = fields_json
        .iter()
        .map(|f| f.get("name").and_then(Json::as_str))
        .collect();
    check_labels(fields_json, &mut p);
    let primary_key = primary_key(root.get("primaryKey"), &names, &mut p);
    match root.get("foreignKeys") {
        None => {}
        Some(Json::Array(a)) if a.is_empty() => {}
        Some(_) => p.add(
            "/foreignKeys",
            "foreign keys are not supported: a template validates a single file",
        ),
    }
    if p.len() > 0 {
        return Err(p.0);
    }
    let mut fields = fields;
    for &i in &primary_key {
        fields[i].required = true;
    }
    Ok(Template {
        fields,
        primary_key,
        missing_values: MissingValues::new(&missing),
    })
}

/// Names unique; no header text (name, title or alternate name) naming two fields.
fn check_labels(fields: &[Json], p: &mut Problems) {
    // label → (field index, which label of it)
    let mut seen: HashMap<&str, (usize, &'static str)> = HashMap::new();
    for (i, field) in fields.iter().enumerate() {
        let mut labels: Vec<(&str, &'static str, String)> = Vec::new();
        if let Some(name) = field.get("name").and_then(Json::as_str) {
            labels.push((name, "name", format!("/fields/{i}/name")));
        }
        if let Some(title) = field.get("title").and_then(Json::as_str) {
            labels.push((title, "title", format!("/fields/{i}/title")));
        }
        if let Some(Json::Array(aliases)) = field.get("alternateNames") {
            for (j, alias) in aliases.iter().enumerate() {
                if let Some(alias) = alias.as_str() {
                    labels.push((
                        alias,
                        "alternate name",
                        format!("/fields/{i}/alternateNames/{j}"),
                    ));
                }
            }
        }
        for (text, what, pointer) in labels {
            match seen.get(text) {
                Some(&(other, _)) if other == i => {}
                Some(&(other, "name")) if what == "name" => p.add(
                    pointer,
                    format!("\"{text}\" is already the name of field {other}"),
                ),
                Some(&(other, other_what)) => p.add(
                    pointer,
                    format!(
                        "\"{text}\" is also the {other_what} of field {other}, so a column with \
                         this header could be either"
                    ),
                ),
                None => {
                    seen.insert(text, (i, what));
                }
            }
        }
    }
}

/// `primaryKey`: a field name or an array of them, each naming a field once.
fn primary_key(v: Option<&Json>, names: &[Option<&str>], p: &mut Problems) -> Vec<usize> {
    let mut key = Vec::new();
    let mut add = |name: &Json, pointer: String, p: &mut Problems| {
        let Json::String(name) = name else {
            p.add(pointer, format!("must be a field name, not {}", kind(name)));
            return;
        };
        match names.iter().position(|n| *n == Some(name.as_str())) {
            None => p.add(pointer, format!("\"{name}\" is not the name of a field")),
            Some(i) if key.contains(&i) => {
                p.add(pointer, format!("\"{name}\" is in the primary key twice"))
            }
            Some(i) => key.push(i),
        }
    };
    match v {
        None => {}
        Some(Json::Array(items)) => {
            for (j, item) in items.iter().enumerate() {
                add(item, format!("/primaryKey/{j}"), p);
            }
        }
        Some(single) => add(single, "/primaryKey".into(), p),
    }
    key
}
