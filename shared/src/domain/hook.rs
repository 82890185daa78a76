//! A template's validation hooks (contract v1.3): the application's own checks, each a webhook
//! endpoint of the tenant that the worker asks about every batch of an upload's rows. The api
//! reads a template body's `hooks` with [`read`] (every problem with its JSON pointer, as the
//! template compiler reports the schema's) and stores what it returns; the worker reads them
//! back as the same type, so both sides agree on the defaults and bounds.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Hooks a template version may have (the `templates.hooks` CHECK says the same).
pub const MAX_HOOKS: usize = 10;
/// Rows a batch holds when the hook does not say.
pub const DEFAULT_BATCH_SIZE: u32 = 1000;
/// The most rows one batch may hold.
pub const MAX_BATCH_SIZE: u32 = 10_000;
/// How long one request may take when the hook does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest timeout a hook may ask for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);

/// One hook, as the template body gives it and as it is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// A webhook endpoint of the tenant (`POST /api/v1/webhooks`); it may take no events.
    pub webhook: Uuid,
    /// The fields sent to it (default: all of the template's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
    /// Rows a request holds, 1..10000 (default 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10000))]
    pub batch_size: Option<u32>,
    /// How long a request may take, a duration up to 60s (`2500ms`, `10s`; default 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

impl Hook {
    pub fn batch_size(&self) -> usize {
        self.batch_size.unwrap_or(DEFAULT_BATCH_SIZE) as usize
    }

    /// The timeout of one request ([`read`] accepted only ones that parse).
    pub fn timeout(&self) -> Duration {
        self.timeout
            .as_deref()
            .and_then(|t| crate::config::parse_duration(t).ok())
            .unwrap_or(DEFAULT_TIMEOUT)
    }

    /// Whether the hook is sent `field`.
    pub fn sends(&self, field: &str) -> bool {
        self.fields
            .as_ref()
            .is_none_or(|fields| fields.iter().any(|f| f == field))
    }
}

/// A problem with a template body's `hooks`, at its JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookProblem {
    pub pointer: String,
    pub message: String,
}

/// Reads a template body's `hooks` (JSON `null` or absent: none) given the template's field
/// names: each hook that reads (`None` for one that does not) and every structural problem (a
/// hook's endpoint is checked by the caller, which knows the tenant's endpoints).
pub fn read(
    value: Option<&serde_json::Value>,
    fields: &[&str],
) -> (Vec<Option<Hook>>, Vec<HookProblem>) {
    let items = match value {
        None | Some(serde_json::Value::Null) => return (Vec::new(), Vec::new()),
        Some(serde_json::Value::Array(items)) => items,
        Some(_) => {
            return (
                Vec::new(),
                vec![problem("/hooks", "`hooks` must be an array".into())],
            )
        }
    };
    let mut problems = Vec::new();
    if items.len() > MAX_HOOKS {
        problems.push(problem(
            "/hooks",
            format!(
                "a template has at most {MAX_HOOKS} hooks, not {}",
                items.len()
            ),
        ));
    }
    let mut hooks = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("/hooks/{i}");
        match serde_json::from_value::<Hook>(item.clone()) {
            Ok(hook) => {
                check(&hook, &at, fields, &mut problems);
                hooks.push(Some(hook));
            }
            Err(e) => {
                problems.push(problem(&at, format!("not a hook: {e}")));
                hooks.push(None);
            }
        }
    }
    (hooks, problems)
}

fn check(hook: &Hook, at: &str, fields: &[&str], problems: &mut Vec<HookProblem>) {
    if let Some(size) = hook.batch_size {
        if !(1..=MAX_BATCH_SIZE).contains(&size) {
            problems.push(problem(
                &format!("{at}/batch_size"),
                format!("batch_size must be 1 to {MAX_BATCH_SIZE}, not {size}"),
            ));
        }
    }
    if let Some(text) = &hook.timeout {
        let fits =
            crate::config::parse_duration(text).is_ok_and(|d| !d.is_zero() && d <= MAX_TIMEOUT);
        if !fits {
            problems.push(problem(
                &format!("{at}/timeout"),
                format!("timeout {text:?} must be a duration above 0 and at most 60s"),
            ));
        }
    }
    for (j, field) in hook.fields.iter().flatten().enumerate() {
        if !fields.contains(&field.as_str()) {
            problems.push(problem(
                &format!("{at}/fields/{j}"),
                format!("the schema has no field {field:?}"),
            ));
        }
    }
}

fn problem(pointer: &str, message: String) -> HookProblem {
    HookProblem {
        pointer: pointer.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_problem_is_reported_at_its_pointer() {
        let hooks = json!([
            {"webhook": Uuid::nil(), "batch_size": 0, "timeout": "61s", "fields": ["id", "nope"]},
            {"webhook": "not-a-uuid"},
            {"webhook": Uuid::nil(), "batch_size": 10000, "timeout": "1m"}
        ]);
        let (read, problems) = read(Some(&hooks), &["id"]);
        assert_eq!(read.iter().filter(|h| h.is_some()).count(), 2);
        let pointers: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/hooks/0/batch_size",
                "/hooks/0/timeout",
                "/hooks/0/fields/1",
                "/hooks/1"
            ]
        );
    }

    #[test]
    fn defaults_apply_and_absent_hooks_are_none() {
        assert_eq!(read(None, &[]), (Vec::new(), Vec::new()));
        let (hooks, problems) = read(Some(&json!([{"webhook": Uuid::nil()}])), &[]);
        assert!(problems.is_empty());
        let hook = hooks[0].as_ref().expect("a hook");
        assert_eq!(hook.batch_size(), 1000);
        assert_eq!(hook.timeout(), Duration::from_secs(10));
        assert!(hook.sends("anything"));
    }
}
