//! Compiling a field's `constraints`: each must be one its type supports (as frictionless
//! checks), with a value of the right JSON type that casts to the field's type; patterns are
//! compiled within the template's budget ([`super::patterns`]), so a hostile pattern, or many,
//! is a template problem rather than a hang or a memory blow-up.

use std::sync::Arc;

use serde_json::Value as Json;

use super::super::cast::Syntax;
use super::super::cell::Cell;
use super::super::check::{clip, CompiledPattern, Enumeration, Rules};
use super::super::fingerprint::{Fingerprint, FingerprintSet};
use super::super::temporal::Temporal;
use super::super::value::Value;
use super::super::FieldType;
use super::patterns::Patterns;
use super::{escape, kind, Problems, MAX_ENUM_VALUES, MAX_PATTERN_CHARS};

/// How many enum values a message lists before `…`.
const ENUM_SHOWN: usize = 10;

pub(super) struct Compiled {
    pub required: bool,
    pub unique: bool,
    pub rules: Rules,
}

/// The constraints each type supports (besides `required`, `unique` and `enum`, which all do).
fn supports(t: FieldType, constraint: &str) -> bool {
    match constraint {
        "required" | "unique" | "enum" => true,
        "minLength" | "maxLength" | "pattern" => t == FieldType::String,
        "minimum" | "maximum" => matches!(
            t,
            FieldType::Integer
                | FieldType::Number
                | FieldType::Date
                | FieldType::DateTime
                | FieldType::Time
                | FieldType::Year
        ),
        _ => false,
    }
}

const KNOWN: [&str; 8] = [
    "required",
    "unique",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "pattern",
    "enum",
];

pub(super) fn compile(
    json: Option<&Json>,
    base: &str,
    field_type: Option<FieldType>,
    syntax: Option<&Syntax>,
    p: &mut Problems,
    patterns: &mut Patterns,
) -> Compiled {
    let mut out = Compiled {
        required: false,
        unique: false,
        rules: Rules::default(),
    };
    let base = format!("{base}/constraints");
    let constraints = match json {
        None => return out,
        Some(Json::Object(c)) => c,
        Some(other) => {
            p.add(base, format!("must be an object, not {}", kind(other)));
            return out;
        }
    };
    // In name order, whatever order the document's map keeps.
    let mut entries: Vec<_> = constraints.iter().collect();
    entries.sort_by_key(|(key, _)| *key);
    for (key, value) in entries {
        let pointer = format!("{base}/{}", escape(key));
        if !KNOWN.contains(&key.as_str()) {
            p.add(
                pointer,
                format!("\"{key}\" is not a constraint this engine supports"),
            );
            continue;
        }
        if let Some(t) = field_type.filter(|t| !supports(*t, key)) {
            p.add(
                pointer,
                format!("\"{key}\" does not apply to {} field", t.with_article()),
            );
            continue;
        }
        let rules = &mut out.rules;
        match key.as_str() {
            "required" => out.required = flag(value, &pointer, p),
            "unique" => out.unique = flag(value, &pointer, p),
            "minLength" => rules.min_length = length(value, &pointer, p),
            "maxLength" => rules.max_length = length(value, &pointer, p),
            "minimum" => rules.minimum = syntax.and_then(|s| bound(s, value, &pointer, p)),
            "maximum" => rules.maximum = syntax.and_then(|s| bound(s, value, &pointer, p)),
            "pattern" => rules.pattern = pattern(value, &pointer, p, patterns),
            _ => rules.enumeration = syntax.and_then(|s| enumeration(s, value, &pointer, p)),
        }
    }
    let rules = &out.rules;
    if let (Some(min), Some(max)) = (rules.min_length, rules.max_length) {
        if min > max {
            p.add(
                format!("{base}/maxLength"),
                format!("maxLength {max} is below minLength {min}"),
            );
        }
    }
    if let (Some(min), Some(max)) = (&rules.minimum, &rules.maximum) {
        if min.compare(max).is_some_and(|o| o.is_gt()) {
            p.add(
                format!("{base}/maximum"),
                format!("maximum {max} is below minimum {min}"),
            );
        }
    }
    out
}

fn flag(v: &Json, pointer: &str, p: &mut Problems) -> bool {
    match v {
        Json::Bool(b) => *b,
        other => {
            p.add(
                pointer,
                format!("must be true or false, not {}", kind(other)),
            );
            false
        }
    }
}

fn length(v: &Json, pointer: &str, p: &mut Problems) -> Option<usize> {
    let n = v.as_u64().and_then(|n| usize::try_from(n).ok());
    if n.is_none() {
        p.add(
            pointer,
            format!("must be a non-negative integer, not {}", kind(v)),
        );
    }
    n
}

/// A constraint value as the cell it stands for.
fn json_cell(v: &Json) -> Option<Cell<'_>> {
    Some(match v {
        Json::String(s) => Cell::Text(s),
        Json::Bool(b) => Cell::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64()?),
        },
        _ => return None,
    })
}

/// Casts a constraint value: in the field's format, or ISO 8601 for the temporal types.
fn cast<'j>(syntax: &Syntax, v: &'j Json) -> Option<Value<'j>> {
    let cell = json_cell(v)?;
    syntax.read(cell).or_else(|| {
        let iso = match syntax {
            Syntax::Date(_) => Syntax::Date(Temporal::Default),
            Syntax::DateTime(_) => Syntax::DateTime(Temporal::Default),
            Syntax::Time(_) => Syntax::Time(Temporal::Default),
            _ => return None,
        };
        iso.read(cell)
    })
}

fn bound(syntax: &Syntax, v: &Json, pointer: &str, p: &mut Problems) -> Option<Value<'static>> {
    let value = cast(syntax, v).and_then(|v| v.into_static());
    if value.is_none() {
        p.add(
            pointer,
            format!(
                "{} is not {} value",
                clip(&v.to_string()),
                syntax.field_type().with_article()
            ),
        );
    }
    value
}

fn pattern(
    v: &Json,
    pointer: &str,
    p: &mut Problems,
    patterns: &mut Patterns,
) -> Option<Arc<CompiledPattern>> {
    let Json::String(source) = v else {
        p.add(pointer, format!("must be a string, not {}", kind(v)));
        return None;
    };
    if source.chars().count() > MAX_PATTERN_CHARS {
        p.add(
            pointer,
            format!("must be at most {MAX_PATTERN_CHARS} characters long"),
        );
        return None;
    }
    patterns
        .compile(source)
        .map_err(|refused| p.add(pointer, refused.message()))
        .ok()
}

fn enumeration(syntax: &Syntax, v: &Json, pointer: &str, p: &mut Problems) -> Option<Enumeration> {
    let Json::Array(items) = v else {
        p.add(pointer, format!("must be an array, not {}", kind(v)));
        return None;
    };
    if items.is_empty() {
        p.add(pointer, "must list at least one value");
        return None;
    }
    if items.len() > MAX_ENUM_VALUES {
        p.add(
            pointer,
            format!(
                "must list at most {MAX_ENUM_VALUES} values ({} here)",
                items.len()
            ),
        );
        return None;
    }
    let before = p.len();
    let mut values = FingerprintSet::default();
    values.reserve(items.len());
    let mut shown = Vec::new();
    let mut texts = Vec::with_capacity(items.len());
    for (j, item) in items.iter().enumerate() {
        let fingerprint = cast(syntax, item).and_then(|v| {
            if shown.len() < ENUM_SHOWN {
                shown.push(format!("\"{}\"", clip(&v.to_string())));
            }
            texts.push(v.to_string());
            v.fingerprint()
        });
        match fingerprint {
            Some(f) => {
                values.insert(Fingerprint::from(f));
            }
            None => p.add(
                format!("{pointer}/{j}"),
                format!(
                    "{} is not {} value",
                    clip(&item.to_string()),
                    syntax.field_type().with_article()
                ),
            ),
        }
    }
    if items.len() > ENUM_SHOWN {
        shown.push(format!("… ({} values)", items.len()));
    }
    (p.len() == before).then(|| Enumeration {
        values,
        texts,
        shown: shown.join(", "),
    })
}
