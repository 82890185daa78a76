//! The OpenAPI 3.1 document, generated from the handlers' annotations and the view types, with
//! the two ways to authenticate as security schemes.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{export, files, health, rows, tasks, upload};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "sheetrelay",
        description = "Upload CSV/TSV and Excel files; follow their parse task; page through, export or delete the parsed rows. Every /api/v1 route needs `Authorization: Bearer <API key or Entra ID access token>`."
    ),
    paths(
        upload::upload,
        files::list_files,
        files::get_file,
        files::delete_file,
        rows::list_rows,
        export::export_rows,
        tasks::get_task,
        health::healthz,
        health::readyz,
        openapi_json
    ),
    components(schemas(
        crate::error::ErrorBody,
        crate::views::UploadView,
        export::ExportFormat,
        upload::UploadForm
    )),
    modifiers(&SecuritySchemes)
)]
pub struct ApiDoc;

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

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, content_type = "application/json")))]
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(ApiDoc::openapi())
}
