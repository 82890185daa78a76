//! A template body's `hooks` (contract v1.3) checked before the version is stored: their shape
//! and bounds ([`shared::domain::hook::read`]), their fields against the compiled schema, and
//! each endpoint against the caller's own webhook endpoints, so a hook can only ever call an
//! endpoint of the tenant whose files it checks. Problems are JSON pointers into the body
//! (`/hooks/0/webhook`), beside the schema's own.

use shared::db;
use shared::domain::hook::{self, Hook};
use template::{Problem, Template};

use crate::error::ApiError;
use crate::state::AppState;

/// The hooks of the body, or `invalid_template` with every problem they have.
pub async fn checked(
    state: &AppState,
    tenant_id: &str,
    template: &Template,
    value: Option<&serde_json::Value>,
) -> Result<Vec<Hook>, ApiError> {
    let fields: Vec<&str> = template.fields.iter().map(|f| f.name.as_str()).collect();
    let as_problem = |p: hook::HookProblem| Problem {
        pointer: p.pointer,
        message: p.message,
    };
    let (hooks, problems) = hook::read(value, &fields);
    let mut problems: Vec<Problem> = problems.into_iter().map(as_problem).collect();
    for (i, h) in hooks.iter().enumerate() {
        let Some(h) = h else { continue };
        if db::webhooks::find(&state.db, tenant_id, h.webhook)
            .await?
            .is_none()
        {
            problems.push(Problem {
                pointer: format!("/hooks/{i}/webhook"),
                message: format!("the tenant has no webhook endpoint {}", h.webhook),
            });
        }
    }
    if problems.is_empty() {
        Ok(hooks.into_iter().flatten().collect())
    } else {
        Err(ApiError::InvalidTemplate(problems))
    }
}
