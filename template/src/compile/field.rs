//! Compiling one field descriptor: its names, type and format, the options that change how
//! text reads (`trueValues`, `decimalChar`, `missingValues`...), then its constraints.

use serde_json::{Map, Value as Json};

use super::super::cast::Syntax;
use super::super::cell::Cell;
use super::super::number::NumberSyntax;
use super::super::strptime::Pattern;
use super::super::temporal::Temporal;
use super::super::text_format::StringFormat;
use super::super::transform::Transform;
use super::super::value::MissingValues;
use super::super::{Field, FieldType};
use super::patterns::Patterns;
use super::{constraints, kind, label, string_list, transforms, Problems, MAX_FORMAT_CHARS};

/// Types of the Table Schema specification that this engine does not support.
const UNSUPPORTED_TYPES: [&str; 7] = [
    "object",
    "array",
    "list",
    "duration",
    "geopoint",
    "geojson",
    "yearmonth",
];

/// Compiles field `index`; `None` (with the problems added) if it has any problem.
pub(super) fn compile(
    json: &Json,
    index: usize,
    schema_missing: &[String],
    p: &mut Problems,
    patterns: &mut Patterns,
) -> Option<Field> {
    let base = format!("/fields/{index}");
    let Json::Object(obj) = json else {
        p.add(
            base,
            format!("a field must be a JSON object, not {}", kind(json)),
        );
        return None;
    };
    let before = p.len();
    let name = match obj.get("name") {
        None => {
            p.add(&base, "a field needs a \"name\"");
            None
        }
        Some(v) => label(v, &format!("{base}/name"), p),
    };
    let title = obj
        .get("title")
        .and_then(|v| label(v, &format!("{base}/title"), p));
    let alternate_names = match obj.get("alternateNames") {
        None => Vec::new(),
        Some(v) => {
            let pointer = format!("{base}/alternateNames");
            let names = string_list(v, &pointer, p).unwrap_or_default();
            for (j, n) in names.iter().enumerate() {
                if n.is_empty() {
                    p.add(format!("{pointer}/{j}"), "must not be empty");
                }
            }
            names
        }
    };
    for key in ["description", "rdfType"] {
        if let Some(v) = obj.get(key).filter(|v| !v.is_string()) {
            p.add(
                format!("{base}/{key}"),
                format!("must be a string, not {}", kind(v)),
            );
        }
    }
    if obj.contains_key("required") {
        p.add(
            format!("{base}/required"),
            "\"required\" belongs inside \"constraints\"",
        );
    }
    let field_type = field_type(obj, &base, p);
    let format = format_of(obj, &base, p);
    let missing = match obj.get("missingValues") {
        None => schema_missing.to_vec(),
        Some(v) => string_list(v, &format!("{base}/missingValues"), p).unwrap_or_default(),
    };
    let syntax = match (field_type, format) {
        (Some(t), Some(f)) => syntax(t, f, obj, &base, p),
        _ => None,
    };
    let transforms = transforms::compile(obj.get("transforms"), &base, field_type, p);
    let compiled = constraints::compile(
        obj.get("constraints"),
        &base,
        field_type,
        syntax.as_ref(),
        p,
        patterns,
    );
    if p.len() > before {
        return None;
    }
    let field = Field {
        name: name?.to_string(),
        title: title.map(str::to_string),
        alternate_names,
        field_type: field_type?,
        format: shown_format(format?, obj),
        required: compiled.required,
        unique: compiled.unique,
        missing_values: MissingValues::new(&missing),
        syntax: syntax?,
        rules: compiled.rules,
        transforms: transforms?,
    };
    check_example(&field, obj.get("example"), &base, p);
    check_defaults(&field, &base, p);
    (p.len() == before).then_some(field)
}

/// The field's `format` as written (`default` when absent).
fn format_of<'j>(obj: &'j Map<String, Json>, base: &str, p: &mut Problems) -> Option<&'j str> {
    match obj.get("format") {
        None => Some("default"),
        Some(Json::String(s)) if s.chars().count() > MAX_FORMAT_CHARS => {
            p.add(
                format!("{base}/format"),
                format!("must be at most {MAX_FORMAT_CHARS} characters long"),
            );
            None
        }
        // `fmt:` marks a pattern in older (v1.0-rc) schemas.
        Some(Json::String(s)) => Some(s.strip_prefix("fmt:").unwrap_or(s)),
        Some(other) => {
            p.add(
                format!("{base}/format"),
                format!("must be a string, not {}", kind(other)),
            );
            None
        }
    }
}

fn field_type(obj: &Map<String, Json>, base: &str, p: &mut Problems) -> Option<FieldType> {
    let pointer = format!("{base}/type");
    match obj.get("type") {
        None => Some(FieldType::String),
        Some(Json::String(t)) => t.parse::<FieldType>().ok().or_else(|| {
            if UNSUPPORTED_TYPES.contains(&t.as_str()) {
                p.add(pointer, format!("the type \"{t}\" is not supported"));
            } else {
                let known: Vec<&str> = FieldType::ALL.iter().map(|t| t.as_str()).collect();
                p.add(
                    pointer,
                    format!("unknown type \"{t}\" (one of {})", known.join(", ")),
                );
            }
            None
        }),
        Some(other) => {
            p.add(pointer, format!("must be a string, not {}", kind(other)));
            None
        }
    }
}

/// The type's reading of text under `format` and the options of the type.
fn syntax(
    t: FieldType,
    format: &str,
    obj: &Map<String, Json>,
    base: &str,
    p: &mut Problems,
) -> Option<Syntax> {
    let pointer = format!("{base}/format");
    let only_default = |p: &mut Problems| {
        if format == "default" {
            Some(())
        } else {
            p.add(
                &pointer,
                format!(
                    "{} field has no format \"{format}\" (only \"default\")",
                    t.with_article()
                ),
            );
            None
        }
    };
    let temporal = |p: &mut Problems| match obj.get("formats") {
        None => temporal(format, &pointer, p),
        Some(list) => several(obj.contains_key("format").then_some(format), list, base, p),
    };
    Some(match t {
        FieldType::String => match format.parse::<StringFormat>().ok() {
            Some(f) => Syntax::String(f),
            None => {
                p.add(
                    &pointer,
                    format!(
                        "a string field has no format \"{format}\" (one of default, email, uri, \
                         uuid)"
                    ),
                );
                return None;
            }
        },
        FieldType::Integer => {
            only_default(p)?;
            Syntax::Integer {
                bare: boolean(obj, "bareNumber", true, base, p)?,
            }
        }
        FieldType::Number => {
            only_default(p)?;
            Syntax::Number(number_syntax(obj, base, p)?)
        }
        FieldType::Boolean => {
            only_default(p)?;
            boolean_syntax(obj, base, p)?
        }
        FieldType::Date => Syntax::Date(temporal(p)?),
        FieldType::DateTime => Syntax::DateTime(temporal(p)?),
        FieldType::Time => Syntax::Time(temporal(p)?),
        FieldType::Year => {
            only_default(p)?;
            Syntax::Year
        }
        FieldType::Any => {
            only_default(p)?;
            Syntax::Any
        }
    })
}

/// One date, datetime or time format: `default`, `any` or a strptime pattern.
fn temporal(format: &str, pointer: &str, p: &mut Problems) -> Option<Temporal> {
    match format {
        "default" => Some(Temporal::Default),
        "any" => Some(Temporal::Any),
        pattern if !pattern.contains('%') => {
            p.add(
                pointer,
                format!(
                    "\"{pattern}\" is not a format: use \"default\", \"any\" or a strptime \
                     pattern such as %d/%m/%Y"
                ),
            );
            None
        }
        pattern => match Pattern::compile(pattern) {
            Ok(compiled) => Some(Temporal::Pattern(compiled)),
            Err(e) => {
                p.add(
                    pointer,
                    format!("the pattern \"{pattern}\" is not valid: {e}"),
                );
                None
            }
        },
    }
}

/// The `formats` extension (contract v1.3): several layouts, tried in order after `format`
/// when the field also gives one.
fn several(format: Option<&str>, list: &Json, base: &str, p: &mut Problems) -> Option<Temporal> {
    let pointer = format!("{base}/formats");
    let names = string_list(list, &pointer, p)?;
    if names.is_empty() {
        p.add(pointer, "must list at least one format");
        return None;
    }
    let before = p.len();
    let mut all = Vec::with_capacity(names.len() + 1);
    if let Some(f) = format {
        all.extend(temporal(f, &format!("{base}/format"), p));
    }
    for (j, name) in names.iter().enumerate() {
        if name.chars().count() > MAX_FORMAT_CHARS {
            p.add(
                format!("{pointer}/{j}"),
                format!("must be at most {MAX_FORMAT_CHARS} characters long"),
            );
            continue;
        }
        all.extend(temporal(name, &format!("{pointer}/{j}"), p));
    }
    (p.len() == before).then_some(Temporal::Several(all))
}

fn boolean(
    obj: &Map<String, Json>,
    key: &str,
    default: bool,
    base: &str,
    p: &mut Problems,
) -> Option<bool> {
    match obj.get(key) {
        None => Some(default),
        Some(Json::Bool(b)) => Some(*b),
        Some(other) => {
            p.add(
                format!("{base}/{key}"),
                format!("must be true or false, not {}", kind(other)),
            );
            None
        }
    }
}

fn number_syntax(obj: &Map<String, Json>, base: &str, p: &mut Problems) -> Option<NumberSyntax> {
    let before = p.len();
    let mut char_option = |key: &str, allow_empty: bool| -> Option<Option<char>> {
        let pointer = format!("{base}/{key}");
        let v = obj.get(key)?;
        let Json::String(s) = v else {
            p.add(pointer, format!("must be a string, not {}", kind(v)));
            return None;
        };
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (None, None) if allow_empty => Some(None),
            (Some(c), None) if c.is_ascii_digit() || matches!(c, '+' | '-' | 'e' | 'E') => {
                p.add(
                    pointer,
                    format!("\"{c}\" is part of how numbers are written"),
                );
                None
            }
            (Some(c), None) => Some(Some(c)),
            _ => {
                let size = if allow_empty {
                    "empty or one character"
                } else {
                    "one character"
                };
                p.add(pointer, format!("must be {size}"));
                None
            }
        }
    };
    let decimal = char_option("decimalChar", false).flatten().unwrap_or('.');
    let group = char_option("groupChar", true).flatten();
    let bare = boolean(obj, "bareNumber", true, base, p);
    if group == Some(decimal) {
        p.add(format!("{base}/groupChar"), "must differ from decimalChar");
    }
    (p.len() == before).then_some(NumberSyntax {
        decimal,
        group,
        bare: bare?,
    })
}

fn boolean_syntax(obj: &Map<String, Json>, base: &str, p: &mut Problems) -> Option<Syntax> {
    let list = |key: &str, default: [&str; 4], p: &mut Problems| match obj.get(key) {
        None => Some(default.map(String::from).to_vec()),
        Some(v) => string_list(v, &format!("{base}/{key}"), p),
    };
    let true_values = list("trueValues", ["true", "True", "TRUE", "1"], p);
    let false_values = list("falseValues", ["false", "False", "FALSE", "0"], p);
    let (true_values, false_values) = (true_values?, false_values?);
    let before = p.len();
    for (j, v) in false_values.iter().enumerate() {
        if true_values.contains(v) {
            p.add(
                format!("{base}/falseValues/{j}"),
                format!("\"{v}\" is also one of the trueValues"),
            );
        }
    }
    (p.len() == before).then_some(Syntax::Boolean {
        true_values,
        false_values,
    })
}

/// `example` must be a value of the field (frictionless checks it when it is not empty).
fn check_example(field: &Field, example: Option<&Json>, base: &str, p: &mut Problems) {
    let cell = match example {
        None | Some(Json::Null) => return,
        Some(Json::String(s)) if s.is_empty() => return,
        Some(Json::String(s)) => Cell::Text(s),
        Some(Json::Bool(b)) => Cell::Bool(*b),
        Some(Json::Number(n)) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Some(other) => {
            p.add(
                format!("{base}/example"),
                format!(
                    "an example of {} field cannot be {}",
                    field.field_type.with_article(),
                    kind(other)
                ),
            );
            return;
        }
    };
    if field.cast(cell).is_err() {
        p.add(
            format!("{base}/example"),
            format!(
                "the example \"{}\" is not {}",
                cell.text(),
                field.expected()
            ),
        );
    }
}

/// The format a message names: `format`, or with the `formats` extension every layout tried,
/// in order (`%d.%m.%Y or %m/%d/%Y`).
fn shown_format(format: &str, obj: &Map<String, Json>) -> String {
    let Some(Json::Array(list)) = obj.get("formats") else {
        return format.to_string();
    };
    let given = obj.contains_key("format").then_some(format);
    given
        .into_iter()
        .chain(list.iter().filter_map(Json::as_str))
        .collect::<Vec<_>>()
        .join(" or ")
}

/// A `default` transform's text must itself be a value of the field, or every empty cell it
/// fills would be an error.
fn check_defaults(field: &Field, base: &str, p: &mut Problems) {
    let Some(list) = &field.transforms else {
        return;
    };
    for (j, t) in list.list().iter().enumerate() {
        if let Transform::Default(text) = t {
            if field.cast(Cell::Text(text)).is_err() {
                p.add(
                    format!("{base}/transforms/{j}/default"),
                    format!("\"{text}\" is not {}", field.expected()),
                );
            }
        }
    }
}
