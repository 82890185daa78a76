//! Compiling a field's `transforms` ([`crate::transform`]): each entry known and well formed,
//! at its JSON pointer (`/fields/2/transforms/1/replace/pattern`), and each fitting the field:
//! `phone` gives a string (an E.164 number), so it belongs to a `string` field; a `default`
//! must itself be a value of the field (checked once the field is compiled, as `example` is).
//!
//! Bounds, so one template cannot hold the api or a parse: 20 transforms a field, 10,000
//! entries a `map` (as `enum`), 256 characters a mapped or default text, a separator or a
//! replacement, 1,000 a `replace` pattern, compiled with regex's size limit of 1 MiB.

use std::collections::HashMap;

use regex::RegexBuilder;
use serde_json::{Map, Value as Json};

use super::super::transform::{Transform, Transforms};
use super::super::FieldType;
use super::{escape, kind, Problems, MAX_ENUM_VALUES, MAX_LABEL_CHARS, MAX_PATTERN_CHARS};

/// Transforms a field may list.
pub(super) const MAX_TRANSFORMS: usize = 20;
/// A `replace` pattern's compiled program.
const REPLACE_SIZE_LIMIT: usize = 1 << 20;

/// The names of the transforms written as a bare string.
const BARE: [&str; 5] = ["trim", "collapse_spaces", "lower", "upper", "title"];
/// The names of the transforms written as a one-key object.
const WITH_OPTIONS: [&str; 5] = ["replace", "map", "default", "phone", "split"];

/// Compiles `transforms` of a field typed `t` (`None` when it has none), adding any problem.
pub(super) fn compile(
    json: Option<&Json>,
    base: &str,
    t: Option<FieldType>,
    p: &mut Problems,
) -> Option<Option<Transforms>> {
    let Some(json) = json else {
        return Some(None);
    };
    let pointer = format!("{base}/transforms");
    let Json::Array(items) = json else {
        p.add(pointer, format!("must be an array, not {}", kind(json)));
        return None;
    };
    if items.len() > MAX_TRANSFORMS {
        p.add(
            pointer,
            format!(
                "must list at most {MAX_TRANSFORMS} transforms ({} here)",
                items.len()
            ),
        );
        return None;
    }
    let before = p.len();
    let list: Vec<Transform> = items
        .iter()
        .enumerate()
        .filter_map(|(j, item)| one(item, &format!("{pointer}/{j}"), t, p))
        .collect();
    if p.len() > before {
        return None;
    }
    Some((!list.is_empty()).then(|| Transforms::new(list)))
}

fn one(item: &Json, pointer: &str, t: Option<FieldType>, p: &mut Problems) -> Option<Transform> {
    let (name, options) = match item {
        Json::String(name) => (name.as_str(), None),
        Json::Object(obj) if obj.contains_key("map") => ("map", Some(item)),
        Json::Object(obj) if obj.len() == 1 => {
            let (name, options) = obj.iter().next()?;
            (name.as_str(), Some(options))
        }
        other => {
            p.add(
                pointer,
                format!(
                    "a transform is a name ({}) or an object with one key ({}), not {}",
                    BARE.join(", "),
                    WITH_OPTIONS.join(", "),
                    kind(other)
                ),
            );
            return None;
        }
    };
    let options_pointer = if name == "map" {
        pointer.to_owned()
    } else {
        format!("{pointer}/{}", escape(name))
    };
    match (name, options) {
        ("trim", None) => Some(Transform::Trim),
        ("collapse_spaces", None) => Some(Transform::CollapseSpaces),
        ("lower", None) => Some(Transform::Lower),
        ("upper", None) => Some(Transform::Upper),
        ("title", None) => Some(Transform::Title),
        ("replace", Some(o)) => replace(o, &options_pointer, p),
        ("map", Some(o)) => map(o, &options_pointer, p),
        ("default", Some(o)) => short_text(o, &options_pointer, p).map(Transform::Default),
        ("phone", Some(o)) => phone(o, &options_pointer, t, p),
        ("split", Some(o)) => split(o, &options_pointer, p),
        (name, _) if BARE.contains(&name) => {
            p.add(
                pointer,
                format!("\"{name}\" takes no options: write it as a string"),
            );
            None
        }
        (name, _) if WITH_OPTIONS.contains(&name) => {
            p.add(
                pointer,
                format!("\"{name}\" needs its options: {{\"{name}\": …}}"),
            );
            None
        }
        (name, _) => {
            p.add(
                pointer,
                format!(
                    "unknown transform \"{name}\" (one of {}, {})",
                    BARE.join(", "),
                    WITH_OPTIONS.join(", ")
                ),
            );
            None
        }
    }
}

/// The object of a transform's options, with only the keys in `allowed`.
fn options<'j>(
    v: &'j Json,
    pointer: &str,
    allowed: &[&str],
    p: &mut Problems,
) -> Option<&'j Map<String, Json>> {
    let Json::Object(obj) = v else {
        p.add(pointer, format!("must be an object, not {}", kind(v)));
        return None;
    };
    let before = p.len();
    for key in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        p.add(
            format!("{pointer}/{}", escape(key)),
            format!("unknown option (one of {})", allowed.join(", ")),
        );
    }
    (p.len() == before).then_some(obj)
}

/// A string of at most 256 characters (a mapped or default text, a separator, a replacement).
fn short_text(v: &Json, pointer: &str, p: &mut Problems) -> Option<String> {
    match v {
        Json::String(s) if s.chars().count() > MAX_LABEL_CHARS => {
            p.add(
                pointer,
                format!("must be at most {MAX_LABEL_CHARS} characters long"),
            );
            None
        }
        Json::String(s) => Some(s.clone()),
        other => {
            p.add(pointer, format!("must be a string, not {}", kind(other)));
            None
        }
    }
}

fn required<'j>(
    obj: &'j Map<String, Json>,
    key: &str,
    pointer: &str,
    p: &mut Problems,
) -> Option<&'j Json> {
    let v = obj.get(key);
    if v.is_none() {
        p.add(pointer, format!("needs \"{key}\""));
    }
    v
}

fn replace(v: &Json, pointer: &str, p: &mut Problems) -> Option<Transform> {
    let obj = options(v, pointer, &["pattern", "with"], p)?;
    let pattern_pointer = format!("{pointer}/pattern");
    let pattern = match required(obj, "pattern", pointer, p)? {
        Json::String(s) if s.chars().count() > MAX_PATTERN_CHARS => {
            p.add(
                pattern_pointer,
                format!("must be at most {MAX_PATTERN_CHARS} characters long"),
            );
            return None;
        }
        Json::String(s) => s,
        other => {
            p.add(
                pattern_pointer,
                format!("must be a string, not {}", kind(other)),
            );
            return None;
        }
    };
    let with = short_text(
        required(obj, "with", pointer, p)?,
        &format!("{pointer}/with"),
        p,
    )?;
    match RegexBuilder::new(pattern)
        .size_limit(REPLACE_SIZE_LIMIT)
        .build()
    {
        Ok(pattern) => Some(Transform::Replace { pattern, with }),
        Err(e) => {
            p.add(
                pattern_pointer,
                format!("the pattern does not compile: {e}"),
            );
            None
        }
    }
}

/// `{"map": {"<from>": "<to>", …}, "ignore_case": bool}`: the whole transform object (its
/// `ignore_case` sits beside `map`, as the contract writes it).
fn map(v: &Json, pointer: &str, p: &mut Problems) -> Option<Transform> {
    let obj = options(v, pointer, &["map", "ignore_case"], p)?;
    let entries_pointer = format!("{pointer}/map");
    let entries = match obj.get("map") {
        Some(Json::Object(entries)) => entries,
        Some(other) => {
            p.add(
                entries_pointer,
                format!("must be an object, not {}", kind(other)),
            );
            return None;
        }
        None => return None,
    };
    let ignore_case = ignore_case(obj, pointer, p)?;
    if entries.len() > MAX_ENUM_VALUES {
        p.add(
            entries_pointer,
            format!(
                "must map at most {MAX_ENUM_VALUES} texts ({} here)",
                entries.len()
            ),
        );
        return None;
    }
    let before = p.len();
    let mut table = HashMap::with_capacity(entries.len());
    for (from, to) in entries {
        let to = short_text(to, &format!("{entries_pointer}/{}", escape(from)), p);
        if let Some(to) = to {
            let key = if ignore_case {
                from.to_lowercase()
            } else {
                from.clone()
            };
            table.insert(key, to);
        }
    }
    (p.len() == before).then(|| Transform::map(table, ignore_case))
}

fn ignore_case(obj: &Map<String, Json>, pointer: &str, p: &mut Problems) -> Option<bool> {
    match obj.get("ignore_case") {
        None => Some(false),
        Some(Json::Bool(b)) => Some(*b),
        Some(other) => {
            p.add(
                format!("{pointer}/ignore_case"),
                format!("must be true or false, not {}", kind(other)),
            );
            None
        }
    }
}

fn phone(v: &Json, pointer: &str, t: Option<FieldType>, p: &mut Problems) -> Option<Transform> {
    let obj = options(v, pointer, &["region"], p)?;
    let region_pointer = format!("{pointer}/region");
    let region = match required(obj, "region", pointer, p)? {
        Json::String(s) => s,
        other => {
            p.add(
                region_pointer,
                format!("must be a string, not {}", kind(other)),
            );
            return None;
        }
    };
    let Ok(id) = region.parse::<phonenumber::country::Id>() else {
        p.add(
            region_pointer,
            format!("\"{region}\" is not a region libphonenumber knows (an ISO 3166 alpha-2 code such as DE)"),
        );
        return None;
    };
    if let Some(t) = t.filter(|t| *t != FieldType::String) {
        p.add(
            pointer,
            format!(
                "phone gives a string (an E.164 number), so it cannot apply to {} field",
                t.with_article()
            ),
        );
        return None;
    }
    Some(Transform::Phone(id))
}

fn split(v: &Json, pointer: &str, p: &mut Problems) -> Option<Transform> {
    let obj = options(v, pointer, &["separator", "index"], p)?;
    let separator = short_text(
        required(obj, "separator", pointer, p)?,
        &format!("{pointer}/separator"),
        p,
    )?;
    if separator.is_empty() {
        p.add(format!("{pointer}/separator"), "must not be empty");
        return None;
    }
    let index = match obj.get("index") {
        None => 0,
        Some(Json::Number(n)) if n.as_u64().is_some_and(|i| i < 1_000) => n.as_u64()? as usize,
        Some(other) => {
            p.add(
                format!("{pointer}/index"),
                format!("must be an integer from 0 to 999, not {other}"),
            );
            return None;
        }
    };
    Some(Transform::Split { separator, index })
}
