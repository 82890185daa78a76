//! `/api/v1/templates`: a tenant's import templates. A template's `schema` is a Frictionless
//! Table Schema document, compiled here exactly as the worker compiles it
//! ([`template::compile`]), so a template the api accepts is one the worker can run and
//! an invalid one is refused with every problem and its JSON pointer. A `PUT` of an existing
//! name makes a new version; uploads record the version they were checked against.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use shared::db;
use shared::db::templates::{NewTemplate, Stored, Template};
use shared::domain::OnInvalid;

mod hooks;

use shared::domain::hook::Hook;

use super::query;
use crate::auth::Principal;
use crate::error::{ApiError, ApiErrorCode, ErrorBody};
use crate::extract::{AppJson, AppQuery};
use crate::state::AppState;
use crate::uploads::limits::quota;

/// The largest template document accepted, in bytes of JSON.
pub const MAX_TEMPLATE_BYTES: usize = 1 << 20;

/// `PUT /api/v1/templates/{name}` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateRequest {
    /// A Frictionless Table Schema document.
    #[schema(value_type = Object)]
    pub schema: serde_json::Value,
    /// What happens to rows with errors (default `drop_invalid_rows`).
    pub on_invalid: Option<OnInvalid>,
    /// The workbook sheet to validate: a name or a glob (`Data*`); null for the first sheet.
    #[schema(max_length = 256)]
    pub sheet: Option<String>,
    /// The application's checks of each batch of rows (contract v1.3): at most 10.
    #[schema(value_type = Option<Vec<Hook>>)]
    pub hooks: Option<serde_json::Value>,
}

/// A stored template version.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TemplateView {
    pub name: String,
    pub version: i32,
    #[schema(value_type = Object)]
    pub schema: serde_json::Value,
    pub on_invalid: OnInvalid,
    pub sheet: Option<String>,
    pub hooks: Vec<Hook>,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl From<Template> for TemplateView {
    fn from(t: Template) -> Self {
        Self {
            name: t.name,
            version: t.version,
            schema: t.schema,
            on_invalid: t.on_invalid,
            sheet: t.sheet,
            hooks: t.hooks.0,
            created_at: t.created_at,
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TemplateList {
    /// The latest version of each template, by name.
    pub templates: Vec<TemplateView>,
    /// Pass as `after` for the next page; null on the last page.
    pub next_after: Option<String>,
}

/// Templates per page when `limit` is not given.
const DEFAULT_LIMIT: i64 = 100;
/// A page holds templates up to about this many bytes of schema (at least one template), so a
/// tenant's list is never one answer of hundreds of megabytes (1,000 templates of 1 MiB).
pub const PAGE_BYTES: i64 = 8 << 20;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListTemplatesQuery {
    /// Return templates named after this one (the previous page's `next_after`).
    #[param(max_length = 64)]
    pub after: Option<String>,
    /// Page size, 1..1000 (default 100); a page also ends once it holds 8 MiB of schemas.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VersionQuery {
    /// A version of the template (default: the latest).
    #[param(minimum = 1)]
    pub version: Option<i32>,
}

/// `^[a-z0-9][a-z0-9_-]{0,63}$`, as the contract and the schema say.
pub fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.len() <= 64
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The latest version of the tenant's template `name`, as an upload, an import session or a Blob
/// source names it: `422 unknown_template` when the tenant has none (or no template can have
/// that name).
pub(crate) async fn named(
    state: &AppState,
    tenant: &str,
    name: &str,
) -> Result<Template, ApiError> {
    let unknown = || {
        ApiError::unprocessable(
            ApiErrorCode::UnknownTemplate,
            format!("no template {name:?}"),
        )
    };
    if !valid_name(name) {
        return Err(unknown());
    }
    db::templates::find(&state.db, tenant, name, None)
        .await?
        .ok_or_else(unknown)
}

fn checked_name(name: &str) -> Result<(), ApiError> {
    if valid_name(name) {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            "a template name is 1 to 64 characters of a-z, 0-9, _ and -, starting with a letter or digit",
        ))
    }
}

/// Create a template, or a new version of one.
#[utoipa::path(
    put,
    path = "/api/v1/templates/{name}",
    tag = "templates",
    security(("api_key" = []), ("entra_id" = [])),
    params(("name" = String, Path, pattern = "^[a-z0-9][a-z0-9_-]{0,63}$", description = "Template name")),
    request_body(content = TemplateRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "The first version", body = TemplateView),
        (status = 200, description = "A new version", body = TemplateView),
        (status = 400, description = "Bad name, a body that is not the request's JSON, or a text holding U+0000", body = ErrorBody),
        (status = 403, description = "`quota_exceeded`: the template does not fit in the tenant's storage quota", body = ErrorBody),
        (status = 409, description = "The tenant holds the most templates allowed", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 422, description = "invalid_template: every problem with its JSON pointer in `error.details`", body = ErrorBody),
    )
)]
pub async fn put_template(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(name): Path<String>,
    AppJson(request): AppJson<TemplateRequest>,
) -> Result<Response, ApiError> {
    checked_name(&name)?;
    let hooks = checked_body(&state, &principal.tenant_id, &request).await?;
    let on_invalid = request.on_invalid.unwrap_or_default();
    // Read before the transaction: a request holding one connection while it waits for a second
    // starves the pool when many do (seen with 8 PUTs racing 64 uploads).
    let quota_bytes = i64::try_from(quota(&state, &principal.tenant_id).await?).unwrap_or(i64::MAX);
    let mut tx = state.db.begin().await?;
    let stored = db::templates::put(
        &mut tx,
        &NewTemplate {
            tenant_id: &principal.tenant_id,
            name: &name,
            schema: &request.schema,
            on_invalid: on_invalid.as_str(),
            sheet: request.sheet.as_deref(),
            hooks: &hooks,
            quota_bytes,
        },
    )
    .await?;
    let (status, template) = match stored {
        Stored::Created(t) => (StatusCode::CREATED, t),
        Stored::NewVersion(t) => (StatusCode::OK, t),
        Stored::LimitReached => {
            return Err(ApiError::Conflict {
                code: ApiErrorCode::TemplateLimitReached,
                message: format!(
                    "the tenant already holds {} templates; delete one first",
                    db::templates::MAX_TEMPLATES_PER_TENANT
                ),
            })
        }
        Stored::QuotaExceeded { used, bytes } => {
            return Err(ApiError::Refused {
                status: StatusCode::FORBIDDEN,
                code: ApiErrorCode::QuotaExceeded,
                message: format!(
                    "the tenant stores {used} bytes (files and templates) of its quota; this \
                     template's {bytes} bytes do not fit"
                ),
            })
        }
    };
    tx.commit().await?;
    tracing::info!(template = %template.name, version = template.version,
                   tenant_id = %principal.tenant_id, "template stored");
    Ok((status, Json(TemplateView::from(template))).into_response())
}

/// The body's schema compiled, its sheet pattern checked and its hooks read: the hooks, or
/// `invalid_template` with every problem the schema and the hooks have.
async fn checked_body(
    state: &AppState,
    tenant_id: &str,
    request: &TemplateRequest,
) -> Result<Vec<Hook>, ApiError> {
    let compiled = state
        .compiler
        .compile(request.schema.clone())
        .await
        .map_err(ApiError::Internal)?
        .map_err(ApiError::InvalidTemplate)?;
    if let Some(sheet) = &request.sheet {
        if sheet.is_empty() || sheet.chars().count() > 256 {
            return Err(ApiError::InvalidTemplate(vec![template::Problem {
                pointer: String::new(),
                message: "`sheet` must be 1 to 256 characters".into(),
            }]));
        }
    }
    hooks::checked(state, tenant_id, &compiled, request.hooks.as_ref()).await
}

/// The caller's templates, latest version of each, by name, in pages.
#[utoipa::path(
    get,
    path = "/api/v1/templates",
    tag = "templates",
    security(("api_key" = []), ("entra_id" = [])),
    params(ListTemplatesQuery),
    responses(
        (status = 200, body = TemplateList),
        (status = 400, description = "Bad after or limit", body = ErrorBody),
    )
)]
pub async fn list_templates(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    AppQuery(q): AppQuery<ListTemplatesQuery>,
) -> Result<Json<TemplateList>, ApiError> {
    let limit = query::limit(q.limit, DEFAULT_LIMIT)?;
    let found = db::templates::list_latest(
        &state.db,
        &principal.tenant_id,
        q.after.as_deref(),
        limit + 1,
    )
    .await?;
    let (templates, next_after) = page_of(found, limit);
    Ok(Json(TemplateList {
        templates: templates.into_iter().map(TemplateView::from).collect(),
        next_after,
    }))
}

/// The first templates of `found` (read with one more than `limit`) that make a page: at most
/// `limit`, and no more than [`PAGE_BYTES`] of schema unless the first alone is larger; with the
/// cursor of the next page when some are left ([`query::cut`], at the smaller of the two).
fn page_of(found: Vec<db::templates::Sized>, limit: i64) -> (Vec<Template>, Option<String>) {
    let mut bytes = 0i64;
    let fit = found
        .iter()
        .take_while(|t| {
            bytes += t.bytes;
            bytes <= PAGE_BYTES
        })
        .count()
        .max(1);
    let templates = found.into_iter().map(|t| t.template).collect();
    query::cut(templates, limit.min(fit as i64), |t: &Template| {
        t.name.clone()
    })
}

/// One template: its latest version, or the one asked for.
#[utoipa::path(
    get,
    path = "/api/v1/templates/{name}",
    tag = "templates",
    security(("api_key" = []), ("entra_id" = [])),
    params(("name" = String, Path, description = "Template name"), VersionQuery),
    responses(
        (status = 200, body = TemplateView),
        (status = 400, description = "Bad name or version", body = ErrorBody),
        (status = 404, description = "No such template or version", body = ErrorBody),
    )
)]
pub async fn get_template(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(name): Path<String>,
    AppQuery(q): AppQuery<VersionQuery>,
) -> Result<Json<TemplateView>, ApiError> {
    checked_name(&name)?;
    if q.version.is_some_and(|v| v < 1) {
        return Err(ApiError::bad_request(
            ApiErrorCode::InvalidParameter,
            "version must be ≥ 1",
        ));
    }
    db::templates::find(&state.db, &principal.tenant_id, &name, q.version)
        .await?
        .map(|t| Json(TemplateView::from(t)))
        .ok_or_else(|| ApiError::NotFound(format!("no template {name:?}")))
}

/// Delete a template: it can no longer be used, and uploads keep the version they used.
#[utoipa::path(
    delete,
    path = "/api/v1/templates/{name}",
    tag = "templates",
    security(("api_key" = []), ("entra_id" = [])),
    params(("name" = String, Path, description = "Template name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Bad name", body = ErrorBody),
        (status = 404, description = "No such template", body = ErrorBody),
    )
)]
pub async fn delete_template(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    checked_name(&name)?;
    if db::templates::delete(&state.db, &principal.tenant_id, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no template {name:?}")))
    }
}
