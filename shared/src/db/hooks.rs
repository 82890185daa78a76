//! What the worker's validation hooks read and keep: a hook's endpoint (its URL and sealed
//! secrets, for the tenant whose file it checks) and each batch's accepted answer while the task
//! runs (`hook_answers`), so a resumed task does not ask again about the batches answered before
//! its worker died. The answers go when the task is final (a trigger) or deleted (cascade).

use sqlx::PgExecutor;
use uuid::Uuid;

/// Where a hook's requests go and what signs them.
#[derive(Debug, Clone)]
pub struct HookEndpoint {
    pub id: Uuid,
    pub url: String,
    /// Sealed for the endpoint's id, like a delivery's.
    pub secret: Vec<u8>,
    /// The secret before a rotation, while it still signs.
    pub previous_secret: Option<Vec<u8>>,
}

/// The tenant's endpoint `id`, if it still exists.
pub async fn endpoint(
    db: impl PgExecutor<'_>,
    tenant_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<HookEndpoint>> {
    sqlx::query_as!(
        HookEndpoint,
        r#"SELECT id, url, secret,
                  CASE WHEN previous_secret_until > now() THEN previous_secret END
                      AS previous_secret
           FROM webhook_endpoints WHERE id = $1 AND tenant_id = $2"#,
        id,
        tenant_id
    )
    .fetch_optional(db)
    .await
}

/// The batches of the task whose answers are kept: only these are looked up (a task's first
/// attempt has none, and reads nothing per batch).
pub async fn kept_batches(db: impl PgExecutor<'_>, task_id: Uuid) -> sqlx::Result<Vec<i32>> {
    sqlx::query_scalar!("SELECT batch FROM hook_answers WHERE task_id = $1", task_id)
        .fetch_all(db)
        .await
}

/// The answer kept for batch `batch` of the task, if its request had this body.
pub async fn answer(
    db: impl PgExecutor<'_>,
    task_id: Uuid,
    batch: i32,
    body_sha256: &[u8],
) -> sqlx::Result<Option<serde_json::Value>> {
    sqlx::query_scalar!(
        "SELECT answer FROM hook_answers WHERE task_id = $1 AND batch = $2 AND body_sha256 = $3",
        task_id,
        batch,
        body_sha256
    )
    .fetch_optional(db)
    .await
}

/// One batch's accepted answer, to keep.
#[derive(Debug, Clone)]
pub struct KeptAnswer {
    pub batch: i32,
    pub body_sha256: Vec<u8>,
    pub answer: serde_json::Value,
}

/// Keeps these batches' accepted answers in one statement (a later one for a batch replaces
/// it; a batch appears once). Nothing is kept for a task that is no longer running: the
/// trigger that empties a final task's answers must not be outrun.
pub async fn keep_answers(
    db: impl PgExecutor<'_>,
    task_id: Uuid,
    answers: &[KeptAnswer],
) -> sqlx::Result<()> {
    let batches: Vec<i32> = answers.iter().map(|a| a.batch).collect();
    let digests: Vec<Vec<u8>> = answers.iter().map(|a| a.body_sha256.clone()).collect();
    let bodies: Vec<serde_json::Value> = answers.iter().map(|a| a.answer.clone()).collect();
    sqlx::query!(
        r#"INSERT INTO hook_answers (task_id, batch, body_sha256, answer)
           SELECT $1, k.batch, k.body_sha256, k.answer
           FROM UNNEST($2::int4[], $3::bytea[], $4::jsonb[]) AS k(batch, body_sha256, answer)
           WHERE EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND status = 'RUNNING')
           ON CONFLICT (task_id, batch)
           DO UPDATE SET body_sha256 = EXCLUDED.body_sha256, answer = EXCLUDED.answer,
                         answered_at = now()"#,
        task_id,
        &batches,
        &digests,
        &bodies
    )
    .execute(db)
    .await?;
    Ok(())
}
