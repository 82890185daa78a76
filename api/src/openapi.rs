//! The OpenAPI 3.1 document, generated from the handlers' annotations and the view types.

use utoipa::OpenApi;

use crate::routes::{files, health, rows, tasks};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "sheetrelay",
        description = "Upload CSV/TSV and Excel files; poll their parse task; page through the parsed rows."
    ),
    paths(
        files::upload,
        files::get_file,
        rows::list_rows,
        tasks::get_task,
        health::healthz,
        health::readyz,
        health::metrics,
        openapi_json
    ),
    components(schemas(crate::error::ErrorBody, crate::views::UploadView))
)]
pub struct ApiDoc;

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, content_type = "application/json")))]
pub async fn openapi_json() -> axum::Json<utoipa::openapi::OpenApi> {
    axum::Json(ApiDoc::openapi())
}
