//! Mapping that looks at values, and learned column names (contract v1.3), end to end on real
//! Postgres and Azurite with a real worker: a confirmed mapping teaches its (header text →
//! field) pairs to the tenant's template, so a file with one column fewer or more than the
//! confirmed one maps with `"match": "learned"` and no review; a name match whose values do not
//! fit its field waits for a person; a column whose values are all e-mail addresses is taken
//! for a field `email` its header names only weakly; learned pairs stay with their tenant and
//! template.

use harness::app::TestApp;
use reqwest::StatusCode;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::review::rows;

/// A required `invoice` no header names, an `amount` no header names, a `Note`.
fn invoices() -> Value {
    json!({"schema": {"fields": [
        {"name": "invoice", "type": "string", "constraints": {"required": true}},
        {"name": "amount", "type": "number"},
        {"name": "Note", "type": "string"}
    ]}})
}

async fn make_template(app: &TestApp, name: &str, body: &Value) {
    let (status, body) = app
        .put_json(&format!("/api/v1/templates/{name}"), body)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Uploads `bytes` against `template`: the task id and file id.
async fn upload(app: &TestApp, template: &str, bytes: &[u8]) -> (String, String) {
    let resp = app
        .upload_with("export.csv", bytes.to_vec(), &[("template", template)])
        .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let body: Value = resp.json().await.expect("upload body");
    let id = |v: &Value| v["id"].as_str().expect("id").to_owned();
    (id(&body["task"]), id(&body["source_file"]))
}

/// Each field's `match` in the task's result (`none` for no column).
fn match_kinds(task: &Value) -> Vec<String> {
    task["result"]["validation"]["mapping"]
        .as_array()
        .expect("mapping")
        .iter()
        .map(|m| m["match"].as_str().unwrap_or("none").to_owned())
        .collect()
}

async fn reviews_of(app: &TestApp, task_id: &str) -> i64 {
    let id: Uuid = task_id.parse().expect("uuid");
    sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE task_id = $1 AND type = 'task.needs_review'",
    )
    .bind(id)
    .fetch_one(&app.db)
    .await
    .expect("count")
}

/// The pairs learned for a tenant's template, sorted.
async fn learned(app: &TestApp, tenant: &str, template: &str) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT header_text, field FROM learned_columns
         WHERE tenant_id = $1 AND template_name = $2 ORDER BY header_text",
    )
    .bind(tenant)
    .bind(template)
    .fetch_all(&app.db)
    .await
    .expect("learned pairs")
}

/// Uploads `Ref,Sum,Note` against `invoices`, waits for its review and answers it.
async fn teach(app: &TestApp) {
    let (task_id, _) = upload(app, "invoices", b"Ref,Sum,Note\nA-1,5,x\nA-2,7,y\n").await;
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    let (status, body) = app
        .put_json(
            &format!("/api/v1/tasks/{task_id}/mapping"),
            &json!({"mapping": {"invoice": 0, "amount": 1, "Note": 2}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let task = app.run_worker_until_completed(&task_id).await;
    assert_eq!(match_kinds(&task), ["confirmed"; 3]);
}

#[tokio::test]
async fn learned_names_map_a_file_with_one_column_fewer_or_more_without_a_review() {
    let app = TestApp::spawn().await;
    make_template(&app, "invoices", &invoices()).await;
    teach(&app).await;
    let pairs = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        learned(&app, "default", "invoices").await,
        pairs(&[("Note", "Note"), ("Ref", "invoice"), ("Sum", "amount")])
    );

    // One column fewer: another header set, so nothing is remembered for it, but its texts
    // are learned.
    let (fewer, fewer_file) = upload(&app, "invoices", b"Sum,Ref\n9,B-1\n").await;
    let task = app.run_worker_until_final(&fewer).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(match_kinds(&task), ["learned", "learned", "none"]);
    let mapping = &task["result"]["validation"]["mapping"];
    assert_eq!(mapping[0]["column"], "Ref");
    assert_eq!(mapping[0]["confidence"], 1.0);
    assert_eq!(rows(&app, &fewer_file).await, [json!(["B-1", 9, null])]);
    assert_eq!(reviews_of(&app, &fewer).await, 0);

    // One column more, unrelated.
    let (more, more_file) = upload(&app, "invoices", b"Ref,Sum,Note,Region\nC-1,3,z,EU\n").await;
    let task = app.run_worker_until_final(&more).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(match_kinds(&task), ["learned"; 3]);
    assert_eq!(rows(&app, &more_file).await, [json!(["C-1", 3, "z"])]);
    assert_eq!(reviews_of(&app, &more).await, 0);
}

#[tokio::test]
async fn learned_pairs_stay_with_their_tenant_and_template() {
    let app = TestApp::spawn().await;
    make_template(&app, "invoices", &invoices()).await;
    make_template(&app, "bills", &invoices()).await;
    // Another tenant's template of the same name knows these texts; so does another template
    // of ours. Neither is given to `invoices`.
    sqlx::query(
        "INSERT INTO learned_columns (tenant_id, template_name, header_text, field)
         VALUES ('other', 'invoices', 'Ref', 'invoice'), ('other', 'invoices', 'Sum', 'amount'),
                ('default', 'bills', 'Ref', 'invoice'), ('default', 'bills', 'Sum', 'amount')",
    )
    .execute(&app.db)
    .await
    .expect("learn elsewhere");
    let (task_id, _) = upload(&app, "invoices", b"Ref,Sum\nA-1,5\n").await;
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    assert_eq!(task["review"]["reason"], "required_field_unmapped");
    // `bills` uses its own pairs.
    let (bill, _) = upload(&app, "bills", b"Ref,Sum,Extra\nA-1,5,q\n").await;
    let task = app.run_worker_until_final(&bill).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(match_kinds(&task), ["learned", "learned", "none"]);

    // An answer teaches its own tenant's template only.
    let (status, body) = app
        .put_json(
            &format!("/api/v1/tasks/{task_id}/mapping"),
            &json!({"mapping": {"invoice": 0, "amount": null}}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(
        learned(&app, "default", "invoices").await,
        [("Ref".to_string(), "invoice".to_string())],
        "a column left without a field teaches nothing"
    );
    assert_eq!(learned(&app, "other", "invoices").await.len(), 2);
    assert_eq!(learned(&app, "default", "bills").await.len(), 2);

    // Deleting the template forgets what it learned.
    let resp = app
        .client
        .delete(app.url("/api/v1/templates/bills"))
        .send()
        .await
        .expect("DELETE");
    assert!(resp.status().is_success(), "{}", resp.status());
    assert!(learned(&app, "default", "bills").await.is_empty());
}

#[tokio::test]
async fn a_name_match_whose_values_do_not_fit_waits_for_a_person() {
    let app = TestApp::spawn().await;
    let template = json!({"schema": {"fields": [
        {"name": "invoice", "type": "string", "constraints": {"required": true}},
        {"name": "amount", "type": "number"},
        {"name": "status", "type": "string", "constraints": {"enum": ["open", "paid"]}}
    ]}});
    make_template(&app, "invoices", &template).await;
    // `amount` holds names, `status` dates: the names match, the values do not.
    let file = b"invoice,amount,status\nA-1,Ann,2024-01-02\nA-2,Bo,2024-01-03\nA-3,Cy,2024-01-04\n";
    let (task_id, file_id) = upload(&app, "invoices", file).await;
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    let review = &task["review"];
    assert_eq!(review["reason"], "low_confidence", "{review}");
    let suggested = review["suggested_mapping"].as_array().expect("suggested");
    assert_eq!(suggested[0]["confidence"], 1.0, "invoice fits: {review}");
    for field in &suggested[1..] {
        assert_eq!(field["match"], "exact", "{review}");
        let confidence = field["confidence"].as_f64().expect("confidence");
        assert!(confidence < 0.9, "{review}");
    }
    let stored = "SELECT count(*) FROM parsed_row_chunks WHERE source_file_id = $1";
    let id: Uuid = file_id.parse().expect("uuid");
    let n: i64 = sqlx::query_scalar(stored)
        .bind(id)
        .fetch_one(&app.db)
        .await
        .expect("count");
    assert_eq!(n, 0, "nothing stored before a person says");

    // The same names with values that fit go straight through.
    let file = b"invoice,amount,status\nA-1,5,open\nA-2,7,paid\nA-3,9,open\n";
    let (task_id, _) = upload(&app, "invoices", file).await;
    let task = app.run_worker_until_final(&task_id).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    assert_eq!(match_kinds(&task), ["exact"; 3]);
}

#[tokio::test]
async fn a_column_of_e_mail_addresses_is_taken_for_email() {
    let app = TestApp::spawn().await;
    let template = json!({"schema": {"fields": [
        {"name": "email", "type": "string", "format": "email", "constraints": {"required": true}},
        {"name": "name", "type": "string"}
    ]}});
    make_template(&app, "contacts", &template).await;
    let file = b"E-mail address,Name\nann@example.com,Ann\nbo@example.org,Bo\ncy@example.net,Cy\n";
    let (task_id, file_id) = upload(&app, "contacts", file).await;
    let task = app.run_worker_until_final(&task_id).await;
    assert_eq!(task["status"], "COMPLETED", "{task}");
    let mapping = &task["result"]["validation"]["mapping"][0];
    assert_eq!(mapping["column"], "E-mail address", "{task}");
    assert_eq!(mapping["match"], "fuzzy");
    let confidence = mapping["confidence"].as_f64().expect("confidence");
    assert!((0.9..1.0).contains(&confidence), "{mapping}");
    assert_eq!(rows(&app, &file_id).await.len(), 3);

    // Two columns of addresses: a person chooses.
    let file = b"E-mail address,Backup,Name\na@example.com,b@example.com,Ann\nc@example.com,d@example.com,Bo\ne@example.com,f@example.com,Cy\n";
    let (task_id, _) = upload(&app, "contacts", file).await;
    let task = app.run_worker_until_review(&task_id).await;
    assert_eq!(task["status"], "NEEDS_REVIEW", "{task}");
    assert_eq!(task["review"]["reason"], "competing_columns");
}

#[tokio::test]
async fn a_template_keeps_at_most_its_bound_of_pairs_the_oldest_pruned_first() {
    use shared::db::learned_columns::{learn, pairs, MAX_PER_TEMPLATE};
    let app = TestApp::spawn().await;
    sqlx::query(
        "INSERT INTO learned_columns (tenant_id, template_name, header_text, field, learned_at)
         SELECT 'default', 'invoices', 'old ' || i, 'amount', now() - make_interval(days => 1000 - i)
         FROM generate_series(1, $1) i",
    )
    .bind(MAX_PER_TEMPLATE as i32)
    .execute(&app.db)
    .await
    .expect("fill the template's pairs");
    let header = ["Ref", "Sum", "old 500"];
    let mapping = [("invoice", Some(0)), ("amount", Some(1)), ("note", None)]
        .into_iter()
        .map(|(f, c)| (f.to_owned(), c))
        .collect();
    let taught = pairs(&header, &mapping);
    let mut tx = app.db.begin().await.expect("begin");
    learn(&mut tx, "default", "invoices", &header, &taught)
        .await
        .expect("learn");
    tx.commit().await.expect("commit");
    let now = learned(&app, "default", "invoices").await;
    assert_eq!(now.len() as i64, MAX_PER_TEMPLATE, "bounded");
    let has = |text: &str| now.iter().any(|(t, _)| t == text);
    assert!(has("Ref") && has("Sum"));
    // `old 500` headed a column the answer gave no field: forgotten, not kept as `amount`.
    assert!(!has("old 500"));
    // One pair was forgotten, two learned: the single oldest went.
    assert!(!has("old 1") && has("old 2"), "{:?}", &now[..3]);
}
