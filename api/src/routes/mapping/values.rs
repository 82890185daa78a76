//! Whether a review answer's value maps fit (contract v1.3, "Value mapping in review"): each
//! names an `enum` or `boolean` field of the template, maps at most
//! [`MAX_UNKNOWN_VALUES`] texts of one to [`MAX_TEXT_CHARS`] characters, each to one of the
//! values the field allows. Every problem is reported, each with its JSON pointer.

use std::collections::BTreeMap;

use shared::db::learned_values::{ValueMaps, MAX_TEXT_CHARS};
use shared::domain::review::MAX_UNKNOWN_VALUES;
use template::{Problem, Template};

use super::check::escape;

/// The maps to learn, or every problem.
pub fn check(template: &Template, answer: &ValueMaps) -> Result<ValueMaps, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut maps = ValueMaps::new();
    for (name, map) in answer {
        let at = format!("/values/{}", escape(name));
        let Some(field) = template.fields.iter().find(|f| &f.name == name) else {
            problems.push(Problem {
                pointer: at,
                message: format!("the template has no field {name:?}"),
            });
            continue;
        };
        let Some(allowed) = field.allowed_values() else {
            problems.push(Problem {
                pointer: at,
                message: format!(
                    "{name:?} is neither an enum nor a boolean field: its texts are not mapped"
                ),
            });
            continue;
        };
        if map.len() > MAX_UNKNOWN_VALUES {
            problems.push(Problem {
                pointer: at,
                message: format!(
                    "maps {} texts: at most {MAX_UNKNOWN_VALUES} a field",
                    map.len()
                ),
            });
            continue;
        }
        let mut kept = BTreeMap::new();
        for (text, value) in map {
            let pointer = format!("{at}/{}", escape(text));
            let chars = text.chars().count();
            if text.trim().is_empty() || chars > MAX_TEXT_CHARS {
                problems.push(Problem {
                    pointer,
                    message: format!(
                        "a mapped text has 1 to {MAX_TEXT_CHARS} characters, not all blank"
                    ),
                });
            } else if !allowed.contains(value) {
                problems.push(Problem {
                    pointer,
                    message: format!(
                        "{value:?} is not a value of {name:?} (it allows {})",
                        shown(&allowed)
                    ),
                });
            } else {
                kept.insert(text.clone(), value.clone());
            }
        }
        maps.insert(name.clone(), kept);
    }
    if problems.is_empty() {
        Ok(maps)
    } else {
        Err(problems)
    }
}

/// The first allowed values, for a message.
fn shown(allowed: &[String]) -> String {
    let mut shown: Vec<String> = allowed.iter().take(10).map(|v| format!("{v:?}")).collect();
    if allowed.len() > 10 {
        shown.push(format!("… ({} values)", allowed.len()));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_maps_are_checked_against_the_fields_and_their_allowed_values() {
        let template = template::compile(&json!({"fields": [
            {"name": "state", "type": "string", "constraints": {"enum": ["CA", "NY"]}},
            {"name": "paid", "type": "boolean"},
            {"name": "note", "type": "string"}
        ]}))
        .expect("compiles");
        let answer: ValueMaps = serde_json::from_value(json!({
            "state": {"Calif.": "CA", "N/Y": "New York"},
            "paid": {"ja": "true", " ": "false"},
            "note": {"x": "y"},
            "nope": {"a": "b"}
        }))
        .expect("maps");
        let problems = check(&template, &answer).expect_err("refused");
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/values/nope",
                "/values/note",
                "/values/paid/ ",
                "/values/state/N~1Y"
            ]
        );
        let good: ValueMaps =
            serde_json::from_value(json!({"state": {"Calif.": "CA"}, "paid": {"ja": "true"}}))
                .expect("maps");
        assert_eq!(check(&template, &good).expect("accepted"), good);
    }
}
