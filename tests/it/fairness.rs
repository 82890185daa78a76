//! Fair shares between tenants: the relay keeps no more than `RELAY_TENANT_IN_FLIGHT` tasks of
//! one tenant between the outbox and a finished parse, and takes tenants in turn, so another
//! tenant's upload is sent at once instead of waiting behind a neighbour's backlog in the queue.
//! A tenant at its share is woken when one of its tasks finishes, and drain jobs still drain.

use std::collections::HashSet;
use std::time::Duration;

use harness::worker::{slow_parser, Upload, WorkerEnv, WorkerProcess, SAMPLE_CSV};
use shared::db;
use shared::domain::{OutboxStatus, TaskStatus};
use sqlx::postgres::PgListener;
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(30);

async fn uploads(env: &WorkerEnv, tenant: &str, n: usize) -> Vec<Upload> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(
            env.create_upload_for(tenant, &format!("{tenant}-{i}.csv"), SAMPLE_CSV.as_bytes())
                .await,
        );
    }
    out
}

fn outbox_ids(uploads: &[Upload]) -> HashSet<Uuid> {
    uploads.iter().map(|u| u.outbox_id).collect()
}

#[tokio::test]
async fn a_claim_takes_tenants_in_turn_and_none_past_its_share() {
    let env = WorkerEnv::new().await;
    let a = uploads(&env, "tenant-a", 30).await;
    let b = uploads(&env, "tenant-b", 3).await;

    // Room for 4 rows: two tenants waiting, so each gets its oldest two.
    let first = db::outbox::claim_batch(&env.db, 4, LEASE, 5)
        .await
        .expect("claim");
    let got: HashSet<Uuid> = first.iter().map(|m| m.id).collect();
    let want: HashSet<Uuid> = [
        a[0].outbox_id,
        a[1].outbox_id,
        b[0].outbox_id,
        b[1].outbox_id,
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want, "each tenant's oldest two, in turn");

    // Room for many more: tenant A stops at its share of 5 (the 2 held count), B sends its last.
    let second = db::outbox::claim_batch(&env.db, 100, LEASE, 5)
        .await
        .expect("claim");
    let second: HashSet<Uuid> = second.iter().map(|m| m.id).collect();
    assert_eq!(second.len(), 4, "{second:?}");
    assert!(second.contains(&b[2].outbox_id));
    assert_eq!(second.intersection(&outbox_ids(&a[2..5])).count(), 3);

    // Sent: A's five tasks are in flight, and nothing more of A is claimable.
    let all: Vec<Uuid> = got.iter().chain(second.iter()).copied().collect();
    db::outbox::mark_sent(&env.db, &all).await.expect("sent");
    let third = db::outbox::claim_batch(&env.db, 100, LEASE, 5)
        .await
        .expect("claim");
    assert!(third.is_empty(), "A is at its share: {third:?}");
    let due = db::outbox::due(&env.db, 5).await.expect("due");
    assert_eq!(
        due.held, 5,
        "A's tasks in flight are what the relay waits for"
    );
    assert_eq!(
        due.next_in_secs, None,
        "nothing is due until one of them finishes"
    );

    // One of A's tasks finishes: the relay is woken at its commit, and A gets one more.
    let mut listener = PgListener::connect_with(&env.db).await.expect("listener");
    listener.listen("outbox_messages").await.expect("listen");
    sqlx::query(
        "UPDATE tasks SET status = 'FAILED', error_code = 'parse_error', error_message = 'x',
                          finished_at = now()
         WHERE id = $1",
    )
    .bind(a[0].task_id)
    .execute(&env.db)
    .await
    .expect("finish a task");
    tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .expect("a NOTIFY when a tenant at its share has a task finish")
        .expect("notification");
    let fourth = db::outbox::claim_batch(&env.db, 100, LEASE, 5)
        .await
        .expect("claim");
    assert_eq!(
        fourth.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![a[5].outbox_id],
        "A's next row, and only one"
    );
}

#[tokio::test]
async fn a_relay_job_sends_a_small_tenant_at_once_and_drain_jobs_still_finish_everything() {
    let env = WorkerEnv::new().await;
    let a = uploads(&env, "tenant-a", 20).await;
    let b = uploads(&env, "tenant-b", 2).await;

    // A relay job alone: it sends A's share and all of B, waits a lease for A's tasks to
    // finish (no consumer runs), and exits, leaving A's backlog in the outbox.
    let mut cmd = env.command(&["run", "--role", "relay", "--drain"]);
    cmd.env("RELAY_TENANT_IN_FLIGHT", "4")
        .env("RELAY_LEASE", "1s");
    let mut relay = WorkerProcess::spawn(cmd);
    let status = relay.wait(Duration::from_secs(60)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", relay.log());
    assert_eq!(
        env.queue.approximate_length().await.expect("length"),
        6,
        "A's share and B's two; log:\n{}",
        relay.log()
    );
    for u in &b {
        assert_eq!(
            env.outbox(u.outbox_id).await.status,
            OutboxStatus::Completed
        );
    }
    assert_eq!(
        env.count(
            "SELECT count(*) FROM outbox_messages WHERE status = 'PENDING' AND tenant_id = 'tenant-a'"
        )
        .await,
        16
    );

    // A job that relays and consumes works A's backlog off four at a time, and exits when done.
    let mut cmd = env.command(&["run", "--drain"]);
    cmd.env("RELAY_TENANT_IN_FLIGHT", "4")
        .env("RELAY_LEASE", "2s");
    let mut job = WorkerProcess::spawn(cmd);
    let status = job.wait(Duration::from_secs(120)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", job.log());
    for u in a.iter().chain(&b) {
        let task = env.task(u.task_id).await;
        assert_eq!(task.status, TaskStatus::Completed, "log:\n{}", job.log());
        assert_eq!(task.attempts, 1, "each task parsed once");
        assert_eq!(env.row_count(u.source_file_id).await, 2);
    }
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE status <> 'COMPLETED'")
            .await,
        0
    );
    assert_eq!(env.queue.approximate_length().await.expect("length"), 0);
}

#[tokio::test]
async fn a_drain_job_waits_past_a_lease_for_the_parses_its_own_consumer_has_in_hand() {
    let env = WorkerEnv::new().await;
    let a = uploads(&env, "tenant-a", 3).await;
    // One task of A at a time, and the first parse (a fresh child: later ones reuse it) longer
    // than the relay's lease: the relay, at A's share, has nothing it can claim for longer than
    // its patience with work held elsewhere. It must still wait, since the consumer beside it
    // is the one parsing. Without that, the job ended with A's other two tasks in the outbox.
    let parser = slow_parser(Duration::from_millis(2500));
    let mut cmd = env.command(&["run", "--drain"]);
    cmd.env("PARSER_EXE", &parser)
        .env("RELAY_TENANT_IN_FLIGHT", "1")
        .env("RELAY_LEASE", "1s");
    let mut job = WorkerProcess::spawn(cmd);
    let status = job.wait(Duration::from_secs(120)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", job.log());
    for u in &a {
        let task = env.task(u.task_id).await;
        assert_eq!(task.status, TaskStatus::Completed, "log:\n{}", job.log());
        assert_eq!(env.row_count(u.source_file_id).await, 2);
    }
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE status <> 'COMPLETED'")
            .await,
        0,
        "nothing left in the outbox for another job"
    );
}

#[tokio::test]
async fn a_consumer_job_beside_an_always_on_relay_stays_for_what_the_share_holds_back() {
    let env = WorkerEnv::new().await;
    let a = uploads(&env, "tenant-a", 6).await;
    // The deployed shape: an always-on relay, here with a share of one task, so each of A's
    // next messages is sent only once the one before has been parsed.
    let mut cmd = env.command(&["run", "--role", "relay"]);
    cmd.env("RELAY_TENANT_IN_FLIGHT", "1");
    let relay = WorkerProcess::spawn(cmd);
    // One consumer job, draining: the queue is empty each time it finishes a task, until the
    // relay has sent the next.
    let mut cmd = env.command(&["run", "--role", "consumer", "--drain"]);
    cmd.env("VISIBILITY_TIMEOUT", "30s");
    let mut job = WorkerProcess::spawn(cmd);
    let status = job.wait(Duration::from_secs(120)).await;
    assert!(status.success(), "exit {status:?}; log:\n{}", job.log());
    relay.terminate();
    for u in &a {
        let task = env.task(u.task_id).await;
        assert_eq!(
            task.status,
            TaskStatus::Completed,
            "the job left before A's backlog was worked off; log:\n{}",
            job.log()
        );
    }
}
