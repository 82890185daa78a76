//! The delivery claim in Postgres, without a worker: each endpoint's share is bounded, and one
//! endpoint's backlog, however long, neither hides another endpoint's due rows nor is read by
//! claims while that endpoint is at its concurrency.

use std::time::Duration;

use harness::app::TestApp;
use shared::db::deliveries::{self, Delivery};
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(60);
const PER_ENDPOINT: i32 = 4;

/// An enabled endpoint of tenant `t` taking `task.failed` (the claim needs no real secret).
async fn endpoint(app: &TestApp) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, tenant_id, url, events, secret)
         VALUES ($1, 't', 'https://example.com/hook', '{task.failed}', '\\x00')",
    )
    .bind(id)
    .execute(&app.db)
    .await
    .expect("endpoint");
    id
}

/// `n` events of tenant `t`, fanned out to its endpoints by the database, oldest first;
/// then only the deliveries of `to` are kept, due at their event's time.
async fn backlog(app: &TestApp, to: Uuid, n: i32) {
    sqlx::query(
        "INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data, created_at)
         SELECT gen_random_uuid(), 't', 'task.failed', gen_random_uuid(), gen_random_uuid(),
                '{}', now() - interval '1 hour' + g * interval '1 ms'
         FROM generate_series(1, $1) g",
    )
    .bind(n)
    .execute(&app.db)
    .await
    .expect("events");
    sqlx::query(
        "DELETE FROM webhook_deliveries d USING events e
         WHERE e.id = d.event_id AND d.endpoint_id <> $1 AND d.status = 'PENDING'
           AND e.created_at < now() - interval '1 minute'",
    )
    .bind(to)
    .execute(&app.db)
    .await
    .expect("keep one endpoint's");
    sqlx::query(
        "UPDATE webhook_deliveries d SET available_at = e.created_at FROM events e
         WHERE e.id = d.event_id",
    )
    .execute(&app.db)
    .await
    .expect("due at the event's time");
}

fn of(claimed: &[Delivery], endpoint: Uuid) -> usize {
    claimed.iter().filter(|d| d.endpoint_id == endpoint).count()
}

#[tokio::test]
async fn a_long_backlog_of_one_endpoint_hides_no_other_endpoints_due_rows() {
    let app = TestApp::spawn().await;
    let hung = endpoint(&app).await;
    let healthy = endpoint(&app).await;
    // Older than anything of the healthy endpoint, and more than any fixed scan window.
    backlog(&app, hung, 6000).await;
    // One new event: a delivery to each endpoint, due now.
    sqlx::query(
        "INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data)
         VALUES (gen_random_uuid(), 't', 'task.failed', gen_random_uuid(), gen_random_uuid(), '{}')",
    )
    .execute(&app.db)
    .await
    .expect("a new event");

    // Nothing held: the hung endpoint gets its concurrency, the healthy one its row.
    let claimed = deliveries::claim(&app.db, 100, LEASE, PER_ENDPOINT, &[], &[])
        .await
        .expect("claim");
    assert_eq!(of(&claimed, hung), PER_ENDPOINT as usize);
    assert_eq!(
        of(&claimed, healthy),
        1,
        "the healthy endpoint's row is claimed"
    );
    let oldest = claimed
        .iter()
        .filter(|d| d.endpoint_id == hung)
        .map(|d| d.event_created_at)
        .max()
        .expect("hung rows");
    let older: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
         WHERE d.endpoint_id = $1 AND d.status = 'PENDING' AND e.created_at < $2",
    )
    .bind(hung)
    .bind(oldest)
    .fetch_one(&app.db)
    .await
    .expect("count");
    assert_eq!(older, 0, "an endpoint's oldest rows go first");

    // The hung endpoint at its concurrency here: a second claim takes none of its rows.
    let another = endpoint(&app).await;
    sqlx::query(
        "INSERT INTO events (id, tenant_id, type, source_file_id, task_id, data)
         VALUES (gen_random_uuid(), 't', 'task.failed', gen_random_uuid(), gen_random_uuid(), '{}')",
    )
    .execute(&app.db)
    .await
    .expect("another event");
    let claimed = deliveries::claim(
        &app.db,
        100,
        LEASE,
        PER_ENDPOINT,
        &[hung, healthy],
        &[PER_ENDPOINT, 1],
    )
    .await
    .expect("claim");
    assert_eq!(of(&claimed, hung), 0, "no room: none of its backlog");
    assert_eq!(of(&claimed, healthy), 1);
    assert_eq!(of(&claimed, another), 1);
}

#[tokio::test]
async fn an_expired_claim_counts_against_its_endpoints_room() {
    let app = TestApp::spawn().await;
    let slow = endpoint(&app).await;
    backlog(&app, slow, 10).await;
    let first = deliveries::claim(
        &app.db,
        100,
        Duration::from_millis(1),
        PER_ENDPOINT,
        &[],
        &[],
    )
    .await
    .expect("claim");
    assert_eq!(first.len(), PER_ENDPOINT as usize);
    // Their claims have expired: a new claim may take them back, but never more than the room.
    sqlx::query("UPDATE webhook_deliveries SET locked_until = now() - interval '1 s' WHERE status = 'PROCESSING'")
        .execute(&app.db)
        .await
        .expect("expire");
    let again = deliveries::claim(&app.db, 100, LEASE, PER_ENDPOINT, &[slow], &[1])
        .await
        .expect("claim");
    assert_eq!(again.len(), PER_ENDPOINT as usize - 1);
    let rescued = again
        .iter()
        .filter(|d| first.iter().any(|f| f.id == d.id))
        .count();
    assert_eq!(
        rescued,
        PER_ENDPOINT as usize - 1,
        "the expired claims are the oldest rows"
    );
}
