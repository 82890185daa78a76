//! Whether a review's answer fits: every field it names is the template's, every column index
//! is one of the file's, no column serves two fields and every required field has a column.
//! Every problem is reported, each with its JSON pointer into the request.

use std::collections::BTreeMap;

use shared::domain::review::ConfirmedMapping;
use template::{Problem, Template};

/// The answer as sent: field name → column index (any integer, checked here) or null.
pub type Answer = BTreeMap<String, Option<i64>>;

/// `key` as one token of a JSON pointer (RFC 6901).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The mapping to store (every template field, unmapped ones as null), or every problem.
pub fn check(
    template: &Template,
    columns: usize,
    answer: &Answer,
) -> Result<ConfirmedMapping, Vec<Problem>> {
    let mut problems = Vec::new();
    let problem = |field: &str, message: String| Problem {
        pointer: format!("/mapping/{}", escape(field)),
        message,
    };
    let mut users: BTreeMap<usize, &str> = BTreeMap::new();
    for (field, column) in answer {
        if !template.fields.iter().any(|f| &f.name == field) {
            problems.push(problem(
                field,
                format!("the template has no field {field:?}"),
            ));
            continue;
        }
        let Some(column) = *column else { continue };
        let Some(index) = usize::try_from(column).ok().filter(|&i| i < columns) else {
            problems.push(problem(
                field,
                format!(
                    "the file has no column {column} (its columns are 0 to {})",
                    columns.saturating_sub(1)
                ),
            ));
            continue;
        };
        if let Some(other) = users.insert(index, field) {
            problems.push(problem(
                field,
                format!("column {index} is given to {other:?} as well: a column maps to one field"),
            ));
        }
    }
    let mut mapping = ConfirmedMapping::new();
    for field in &template.fields {
        let column = answer
            .get(&field.name)
            .copied()
            .flatten()
            .and_then(|c| usize::try_from(c).ok())
            .filter(|&i| i < columns);
        if column.is_none() && field.required {
            problems.push(problem(
                &field.name,
                format!("{:?} is required: it must have a column", field.name),
            ));
        }
        mapping.insert(field.name.clone(), column);
    }
    if problems.is_empty() {
        Ok(mapping)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Template {
        template::compile(&json!({"fields": [
            {"name": "invoice", "constraints": {"required": true}},
            {"name": "amount"},
            {"name": "a/b"},
        ]}))
        .expect("compiles")
    }

    fn answer(pairs: &[(&str, Option<i64>)]) -> Answer {
        pairs.iter().map(|(f, c)| ((*f).to_owned(), *c)).collect()
    }

    #[test]
    fn a_fitting_answer_names_every_field() {
        let mapping = check(&template(), 3, &answer(&[("invoice", Some(2))])).expect("fits");
        assert_eq!(
            mapping,
            ConfirmedMapping::from([
                ("invoice".into(), Some(2)),
                ("amount".into(), None),
                ("a/b".into(), None),
            ])
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_pointer() {
        let problems = check(
            &template(),
            3,
            &answer(&[
                ("nope", Some(0)),
                ("amount", Some(3)),
                ("a/b", Some(-1)),
                ("invoice", None),
            ]),
        )
        .expect_err("does not fit");
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/mapping/a~1b",
                "/mapping/amount",
                "/mapping/nope",
                "/mapping/invoice"
            ]
        );
    }

    #[test]
    fn one_column_for_two_fields_is_refused() {
        let problems = check(
            &template(),
            3,
            &answer(&[("invoice", Some(1)), ("amount", Some(1))]),
        )
        .expect_err("does not fit");
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("column 1"),
            "{}",
            problems[0].message
        );
    }
}
