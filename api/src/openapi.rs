//! The OpenAPI 3.1 document: the operations of the routes the router serves (registered together
//! in [`crate::routes`]), the view types, and the two ways to authenticate as security schemes.

use std::sync::LazyLock;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use crate::routes::{export, upload};

/// What the route table does not say: the document's info, and schemas no operation refers to.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "sheetrelay",
        description = "Upload CSV/TSV and Excel files; follow their parse task, or be told when it ends through webhooks, the event feed or the event stream; page through, export or delete the parsed rows. Every /api/v1 route needs `Authorization: Bearer <API key or Entra ID access token>`."
    ),
    components(schemas(
        crate::error::ErrorBody,
        crate::views::UploadView,
        export::ExportFormat,
        upload::UploadForm
    ))
)]
struct ApiDoc;

/// The document, from the same route table as the router ([`crate::routes::api`] and
/// [`crate::routes::public`]), so it describes exactly the routes served.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(crate::routes::api())
        .merge(crate::routes::public())
        .into_openapi();
    // After the paths are in: the edge's answers are added to every operation.
    SecuritySchemes.modify(&mut doc);
    EdgeResponses.modify(&mut doc);
    doc
}

/// `api_key`: a key from `api keys create`; `entra_id`: an Entra ID access token. Both travel
/// as a bearer token.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        let bearer = |description: &str, format: &str| {
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format(format)
                    .description(Some(description))
                    .build(),
            )
        };
        components.add_security_scheme(
            "api_key",
            bearer("An API key (`srk_…`) from `api keys create`", "API key"),
        );
        components.add_security_scheme(
            "entra_id",
            bearer(
                "An Entra ID access token for the configured audience, with the required role or scope",
                "JWT",
            ),
        );
    }
}

/// The answers any operation may give besides its own, because they come from the edge or the
/// runtime rather than the handler: `414`/`431` (request target or headers over the edge's
/// limits), `500 internal_error`, and for `/api/v1` routes `401` (every one needs credentials:
/// the auth layer answers before any handler) and `503` (Postgres or Entra ID's signing
/// keys unavailable, or the request ran past `HTTP_REQUEST_TIMEOUT`), unless the handler says more. Declared on every operation so that a generated
/// client and a schema fuzzer know them.
struct EdgeResponses;

impl Modify for EdgeResponses {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let error = |description: &str| {
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for (path, item) in doc.paths.paths.iter_mut() {
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
                &mut item.head,
                &mut item.options,
            ];
            for op in operations.into_iter().flatten() {
                let mut add = |status: &str, description: &str| {
                    op.responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error(description).into());
                };
                add(
                    "414",
                    "The request target is over the edge's limit (`uri_too_long`)",
                );
                add(
                    "431",
                    "Too many request headers, or too many bytes of them (`headers_too_large`)",
                );
                add("500", "An unexpected server error (`internal_error`)");
                if path.starts_with("/api/v1/") {
                    add("401", "Missing or invalid credentials (`unauthorized`)");
                    add(
                        "503",
                        "Postgres unavailable (`database_unavailable`), Entra ID's signing keys unavailable (`auth_unavailable`), or the request ran past the deadline (`request_timeout`)",
                    );
                }
            }
        }
    }
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, content_type = "application/json")))]
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    // Built once: the route table does not change while the process runs.
    static DOCUMENT: LazyLock<utoipa::openapi::OpenApi> = LazyLock::new(document);
    axum::Json(DOCUMENT.clone())
}
