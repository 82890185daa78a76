//! Import sessions (contract v1.3): a short-lived, single-template token an application mints
//! for one end user. The token uploads against its template with its metadata and end user,
//! reads only its own files, is refused everything else, runs out after `max_uploads`, and is
//! refused once deleted or expired; pages of its `allowed_origins` get CORS answers, others none.

use harness::app::{authenticated_client, code_of, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};

const CSV: &[u8] = b"id,name\n1,Ada\n2,Grace\n";
const ORIGIN: &str = "https://app.example.com";

/// An app with the template `people`.
async fn app_with_template() -> TestApp {
    let app = TestApp::spawn().await;
    for name in ["people", "other"] {
        let (status, body) = app
            .put_json(
                &format!("/api/v1/templates/{name}"),
                &json!({"schema": {"fields": [{"name": "id", "type": "integer"},
                                              {"name": "name", "type": "string"}]}}),
            )
            .await;
        assert!(status.is_success(), "{body}");
    }
    app
}

async fn create(app: &TestApp, body: Value) -> reqwest::Response {
    app.client
        .post(app.url("/api/v1/sessions"))
        .json(&body)
        .send()
        .await
        .expect("POST /sessions")
}

/// A session of `people` for end user `u-1`; returns the answer's body.
async fn session(app: &TestApp, more: Value) -> Value {
    let mut body = json!({
        "template": "people",
        "end_user": {"id": "u-1", "name": "Ada", "email": "ada@example.com"},
        "metadata": {"order": "A-17"},
        "allowed_origins": [ORIGIN],
    });
    body.as_object_mut()
        .expect("object")
        .extend(more.as_object().expect("object").clone());
    let resp = create(app, body).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    resp.json().await.expect("session body")
}

async fn upload_as(
    app: &TestApp,
    client: &reqwest::Client,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = reqwest::multipart::Form::new();
    for (name, value) in fields {
        form = form.text(name.to_string(), value.to_string());
    }
    let form = form.part(
        "file",
        reqwest::multipart::Part::bytes(CSV.to_vec()).file_name("s.csv"),
    );
    client
        .post(app.url("/api/v1/files"))
        .multipart(form)
        .send()
        .await
        .expect("upload")
}

#[tokio::test]
async fn a_session_token_uploads_with_its_template_metadata_and_end_user_and_reads_only_its_own() {
    let app = app_with_template().await;
    let created = session(&app, json!({"max_uploads": 2, "ttl": "10m"})).await;
    let token = created["token"].as_str().expect("token");
    assert!(token.starts_with("srs_"));
    assert_eq!(created["max_uploads"], 2);
    assert_eq!(created["uploads_used"], 0);
    assert_eq!(created["template"], "people");
    // Stored as a hash only.
    let stored: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM import_sessions
         WHERE position(convert_to($1, 'UTF8') in token_hash) > 0 OR end_user::text LIKE '%' || $1 || '%'",
    )
    .bind(token)
    .fetch_one(&app.db)
    .await
    .expect("sessions");
    assert_eq!(stored, 0, "the token is not stored");

    let end_user = authenticated_client(token);
    let resp = upload_as(&app, &end_user, &[]).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let upload: Value = resp.json().await.expect("upload");
    let file_id = upload["source_file"]["id"].as_str().expect("id").to_owned();
    let task_id = upload["task"]["id"].as_str().expect("task").to_owned();
    assert_eq!(upload["source_file"]["metadata"], json!({"order": "A-17"}));
    assert_eq!(
        upload["source_file"]["end_user"],
        json!({"id": "u-1", "name": "Ada", "email": "ada@example.com"})
    );
    let template: Option<String> =
        sqlx::query_scalar("SELECT template_name FROM source_files WHERE id = $1::uuid")
            .bind(&file_id)
            .fetch_one(&app.db)
            .await
            .expect("file");
    assert_eq!(template.as_deref(), Some("people"));

    // Its own file and task; not another file of the same tenant.
    for path in [
        format!("/api/v1/files/{file_id}"),
        format!("/api/v1/tasks/{task_id}"),
    ] {
        let resp = end_user.get(app.url(&path)).send().await.expect("get");
        assert_eq!(resp.status(), StatusCode::OK, "{path}");
    }
    let theirs = app.upload("theirs.csv", CSV.to_vec(), None).await;
    let theirs: Value = theirs.json().await.expect("upload");
    let theirs = theirs["source_file"]["id"].as_str().expect("id");
    let resp = end_user
        .get(app.url(&format!("/api/v1/files/{theirs}")))
        .send()
        .await
        .expect("get");
    assert_eq!(
        code_of(resp).await,
        (StatusCode::NOT_FOUND, "not_found".into())
    );

    // Another template or other metadata: refused, and not counted.
    let resp = upload_as(&app, &end_user, &[("template", "other")]).await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::FORBIDDEN, "forbidden".into())
    );
    let resp = upload_as(&app, &end_user, &[("metadata", r#"{"order": "B-1"}"#)]).await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::FORBIDDEN, "forbidden".into())
    );
    // Naming its own template is fine; the third upload is one too many.
    let resp = upload_as(&app, &end_user, &[("template", "people")]).await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let resp = upload_as(&app, &end_user, &[]).await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::FORBIDDEN, "session_exhausted".into())
    );
}

#[tokio::test]
async fn a_session_token_is_refused_everything_else_and_once_deleted_or_expired() {
    let app = app_with_template().await;
    let created = session(&app, json!({})).await;
    let token = created["token"].as_str().expect("token");
    let id = created["id"].as_str().expect("id");
    let end_user = authenticated_client(token);
    for (method, path) in [
        (reqwest::Method::GET, "/api/v1/files"),
        (reqwest::Method::GET, "/api/v1/templates"),
        (reqwest::Method::GET, "/api/v1/webhooks"),
        (reqwest::Method::GET, "/api/v1/events"),
        (reqwest::Method::POST, "/api/v1/sessions"),
    ] {
        let resp = end_user
            .request(method.clone(), app.url(path))
            .json(&json!({}))
            .send()
            .await
            .expect("request");
        assert_eq!(
            code_of(resp).await,
            (StatusCode::FORBIDDEN, "forbidden".into()),
            "{method} {path}"
        );
    }
    // A forged or truncated token is no session's.
    for forged in [
        &token[..token.len() - 1],
        "srs_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "srs_",
    ] {
        let resp = upload_as(&app, &authenticated_client(forged), &[]).await;
        assert_eq!(
            code_of(resp).await,
            (StatusCode::UNAUTHORIZED, "unauthorized".into()),
            "{forged}"
        );
    }
    // Another session's file of the same tenant is not found.
    let other = session(&app, json!({"end_user": {"id": "u-2"}})).await;
    let other_client = authenticated_client(other["token"].as_str().expect("token"));
    let resp = upload_as(&app, &other_client, &[]).await;
    let theirs: Value = resp.json().await.expect("upload");
    let theirs = theirs["source_file"]["id"].as_str().expect("id");
    let resp = end_user
        .get(app.url(&format!("/api/v1/files/{theirs}/rows")))
        .send()
        .await
        .expect("get");
    assert_eq!(
        code_of(resp).await,
        (StatusCode::NOT_FOUND, "not_found".into())
    );

    // Deleted: 401 from then on.
    let resp = app
        .client
        .delete(app.url(&format!("/api/v1/sessions/{id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    let resp = upload_as(&app, &end_user, &[]).await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::UNAUTHORIZED, "unauthorized".into())
    );

    // Expired: 401 too.
    let created = session(&app, json!({})).await;
    sqlx::query(
        "UPDATE import_sessions SET expires_at = now() - interval '1 second' WHERE id = $1::uuid",
    )
    .bind(created["id"].as_str().expect("id"))
    .execute(&app.db)
    .await
    .expect("expire");
    let resp = upload_as(
        &app,
        &authenticated_client(created["token"].as_str().expect("t")),
        &[],
    )
    .await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::UNAUTHORIZED, "unauthorized".into())
    );
}

#[tokio::test]
async fn a_session_is_made_only_from_what_the_contract_allows() {
    let app = app_with_template().await;
    let base = json!({"template": "people", "end_user": {"id": "u"}, "allowed_origins": [ORIGIN]});
    let with = |more: Value| {
        let mut b = base.clone();
        b.as_object_mut()
            .expect("object")
            .extend(more.as_object().expect("object").clone());
        b
    };
    for (body, code) in [
        (with(json!({"template": "nope"})), "unknown_template"),
        (with(json!({"allowed_origins": []})), "invalid_parameter"),
        (
            with(json!({"allowed_origins": ["https://a.example/path"]})),
            "invalid_parameter",
        ),
        (with(json!({"allowed_origins": ["*"]})), "invalid_parameter"),
        (with(json!({"max_uploads": 0})), "invalid_parameter"),
        (with(json!({"max_uploads": 101})), "invalid_parameter"),
        (with(json!({"ttl": "2h"})), "invalid_parameter"),
        (with(json!({"ttl": "30s"})), "invalid_parameter"),
        (with(json!({"end_user": {"id": ""}})), "invalid_parameter"),
        (with(json!({"metadata": [1]})), "invalid_metadata"),
    ] {
        let resp = create(&app, body.clone()).await;
        assert_eq!(
            code_of(resp).await,
            (StatusCode::UNPROCESSABLE_ENTITY, code.into()),
            "{body}"
        );
    }
    let created = session(&app, json!({})).await;
    assert_eq!(created["max_uploads"], 10, "the default");
    let expires: chrono::DateTime<chrono::Utc> = created["expires_at"]
        .as_str()
        .expect("expires_at")
        .parse()
        .expect("time");
    let ttl = expires - chrono::Utc::now();
    assert!(
        ttl > chrono::Duration::minutes(14) && ttl <= chrono::Duration::minutes(15),
        "{ttl}"
    );
}

#[tokio::test]
async fn pages_of_a_sessions_origins_get_cors_answers_and_other_origins_none() {
    let app = app_with_template().await;
    let created = session(&app, json!({})).await;
    let token = created["token"].as_str().expect("token");
    let plain = reqwest::Client::new();
    let preflight = |origin: &'static str| {
        plain
            .request(reqwest::Method::OPTIONS, app.url("/api/v1/files"))
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header("Access-Control-Request-Headers", "authorization")
            .send()
    };
    let allow = |resp: &reqwest::Response| {
        resp.headers()
            .get("access-control-allow-origin")
            .map(|v| v.to_str().expect("ascii").to_owned())
    };
    let resp = preflight(ORIGIN).await.expect("preflight");
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(allow(&resp).as_deref(), Some(ORIGIN));
    let resp = preflight("https://evil.example").await.expect("preflight");
    assert_eq!(allow(&resp), None);

    let task = upload_as(&app, &authenticated_client(token), &[]).await;
    let task: Value = task.json().await.expect("upload");
    let path = format!("/api/v1/tasks/{}", task["task"]["id"].as_str().expect("id"));
    for (origin, expected) in [(ORIGIN, Some(ORIGIN)), ("https://evil.example", None)] {
        let resp = plain
            .get(app.url(&path))
            .header("Origin", origin)
            .bearer_auth(token)
            .send()
            .await
            .expect("get");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(allow(&resp).as_deref(), expected, "{origin}");
        if expected.is_some() {
            let exposed = resp.headers()["access-control-expose-headers"]
                .to_str()
                .expect("ascii")
                .to_ascii_lowercase();
            assert!(
                exposed.contains("location") && exposed.contains("upload-offset"),
                "{exposed}"
            );
        }
    }
    // The tenant's own key from a session's origin gets nothing: the origin is the session's.
    let resp = app
        .client
        .get(app.url(&path))
        .header("Origin", ORIGIN)
        .send()
        .await
        .expect("get");
    assert_eq!(allow(&resp), None);
}

#[tokio::test]
async fn a_tenant_holds_a_bounded_number_of_live_sessions() {
    let app = app_with_template().await;
    // 9,999 live sessions and an expired one, written directly: the bound counts live ones.
    sqlx::query(
        "INSERT INTO import_sessions (id, tenant_id, token_hash, template_name, end_user,
                                      allowed_origins, max_uploads, expires_at)
         SELECT gen_random_uuid(), 'default', sha256(s::text::bytea), 'people', '{\"id\": \"u\"}',
                ARRAY['https://a.example'], 1,
                now() + CASE WHEN s = 0 THEN interval '-1 hour' ELSE interval '1 hour' END
         FROM generate_series(0, 9999) s",
    )
    .execute(&app.db)
    .await
    .expect("sessions");
    session(&app, json!({})).await;
    let resp = create(
        &app,
        json!({"template": "people", "end_user": {"id": "u"}, "allowed_origins": [ORIGIN]}),
    )
    .await;
    assert_eq!(
        code_of(resp).await,
        (StatusCode::TOO_MANY_REQUESTS, "too_many_sessions".into())
    );
}
