//! The outbox relay against real Postgres and Azurite: exactly the committed messages are sent,
//! failed sends are retried with backoff until DEAD, a crashed relay's batch is rescued, a live
//! relay's claims are renewed while it sends, an outage spends no attempts, and the relay wakes
//! on NOTIFY.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use harness::outage::OutageSender;
use harness::worker::{
    eventually, eventually_some, message_ids, FlakySender, WorkerEnv, SAMPLE_CSV,
};
use shared::db;
use shared::domain::{Envelope, MessageEncoding, OutboxStatus, PARSE_TASK};
use shared::metrics::catalogue as names;
use tokio_util::sync::CancellationToken;
use worker::config::RelayConfig;
use worker::relay::{self, QueueSender};

#[tokio::test]
async fn the_relay_sends_exactly_the_committed_messages() {
    let env = WorkerEnv::new().await;
    let mut committed = Vec::new();
    for i in 0..3 {
        committed.push(
            env.create_upload(&format!("f{i}.csv"), SAMPLE_CSV.as_bytes())
                .await,
        );
    }
    env.create_rolled_back_upload(SAMPLE_CSV.as_bytes()).await;

    let report = env
        .relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    assert_eq!((report.claimed, report.sent, report.failed), (3, 3, 0));

    let bodies = WorkerEnv::drain_queue(&env.queue).await;
    let mut expected: Vec<_> = committed.iter().map(|u| u.outbox_id).collect();
    expected.sort();
    assert_eq!(message_ids(&bodies), expected);
    for upload in &committed {
        let row = env.outbox(upload.outbox_id).await;
        assert_eq!(row.status, OutboxStatus::Completed);
        assert_eq!(row.attempts, 1);
        assert!(row.processed_at.is_some() && row.locked_until.is_none());
    }
    // Each body is a base64 envelope carrying the task.
    let envelope = Envelope::decode(&bodies[0]).expect("envelope");
    assert!(!bodies[0].contains('{'), "base64 by default");
    assert_eq!(envelope.event_type, PARSE_TASK);
    let payload = envelope.parse_task().expect("parse task payload");
    assert!(committed.iter().any(|u| u.task_id == payload.task_id));
    assert!(bodies.iter().all(|b| b.len() < 64 * 1024));
}

#[tokio::test]
async fn a_rolled_back_upload_sends_nothing() {
    let env = WorkerEnv::new().await;
    env.create_rolled_back_upload(SAMPLE_CSV.as_bytes()).await;

    let report = env
        .relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    assert_eq!(report.claimed, 0);
    assert_eq!(env.count("SELECT count(*) FROM outbox_messages").await, 0);
    assert!(WorkerEnv::drain_queue(&env.queue).await.is_empty());
}

#[tokio::test]
async fn text_encoding_sends_plain_json_envelopes() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    let cfg = RelayConfig {
        encoding: MessageEncoding::Text,
        ..WorkerEnv::relay_config()
    };
    env.relay_until_idle(&env.queue, &cfg).await;
    let bodies = WorkerEnv::drain_queue(&env.queue).await;
    assert_eq!(bodies.len(), 1);
    assert!(bodies[0].starts_with('{'));
    let json: serde_json::Value = serde_json::from_str(&bodies[0]).expect("json body");
    assert_eq!(json["message_id"], upload.outbox_id.to_string());
    assert_eq!(json["payload"]["task_id"], upload.task_id.to_string());
}

#[tokio::test]
async fn a_sender_failing_twice_records_attempts_and_backoff_then_sends() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    let sender = FlakySender::new(env.queue.clone(), 2);
    let cfg = WorkerEnv::relay_config(); // backoff 200 ms doubling, jittered in the upper half
    let never = CancellationToken::new();

    let before = Utc::now();
    let r = relay::run_once(&env.db, sender.as_ref(), &cfg, &never)
        .await
        .expect("run_once");
    assert_eq!((r.claimed, r.failed), (1, 1));
    let row = env.outbox(upload.outbox_id).await;
    assert_eq!(row.status, OutboxStatus::Failed);
    assert_eq!(row.attempts, 1);
    assert!(row
        .last_error
        .as_deref()
        .is_some_and(|e| e.contains("injected send failure #1")));
    let delay = (row.available_at - before).num_milliseconds();
    assert!(
        (100..=1_000).contains(&delay),
        "first retry after ~100–200 ms, got {delay} ms"
    );

    // Not due yet: an immediate claim finds nothing.
    let r = relay::run_once(&env.db, sender.as_ref(), &cfg, &never)
        .await
        .expect("run_once");
    assert_eq!(r.claimed, 0);

    // Second failure: delay doubles (200–400 ms).
    eventually(
        Duration::from_secs(5),
        "the retry to be sent and fail",
        || async {
            relay::run_once(&env.db, sender.as_ref(), &cfg, &never)
                .await
                .is_ok_and(|r| r.failed == 1)
        },
    )
    .await;
    let row = env.outbox(upload.outbox_id).await;
    assert_eq!((row.status, row.attempts), (OutboxStatus::Failed, 2));
    assert!(row.last_error.as_deref().is_some_and(|e| e.contains("#2")));

    eventually(
        Duration::from_secs(5),
        "the third attempt to be sent",
        || async {
            relay::run_once(&env.db, sender.as_ref(), &cfg, &never)
                .await
                .is_ok_and(|r| r.sent == 1)
        },
    )
    .await;
    let row = env.outbox(upload.outbox_id).await;
    assert_eq!((row.status, row.attempts), (OutboxStatus::Completed, 3));
    assert_eq!(sender.calls(), 3);
    assert_eq!(WorkerEnv::drain_queue(&env.queue).await.len(), 1);
}

#[tokio::test]
async fn a_message_whose_sends_keep_failing_ends_dead_and_stays_until_requeued() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    let always_failing = FlakySender::new(env.queue.clone(), usize::MAX);
    let cfg = RelayConfig {
        max_attempts: 3,
        backoff_base: Duration::from_millis(50),
        backoff_cap: Duration::from_millis(100),
        retention: Duration::ZERO,
        ..WorkerEnv::relay_config()
    };
    let never = CancellationToken::new();
    eventually(
        Duration::from_secs(10),
        "the message to be DEAD",
        || async {
            let _ = relay::run_once(&env.db, always_failing.as_ref(), &cfg, &never).await;
            env.outbox(upload.outbox_id).await.status == OutboxStatus::Dead
        },
    )
    .await;
    let row = env.outbox(upload.outbox_id).await;
    assert_eq!(row.attempts, 3);
    assert_eq!(always_failing.calls(), 3);
    assert!(row.last_error.as_deref().is_some_and(|e| e.contains("#3")));

    // DEAD is never claimed again, nor purged by retention.
    let r = relay::run_once(&env.db, always_failing.as_ref(), &cfg, &never)
        .await
        .expect("run_once");
    assert_eq!(r.claimed, 0);
    worker::maintenance::outbox_retention::purge(&env.db, &cfg)
        .await
        .expect("purge");
    assert_eq!(
        env.outbox(upload.outbox_id).await.status,
        OutboxStatus::Dead
    );

    // An operator requeues it; a healthy sender delivers it.
    assert_eq!(db::outbox::requeue_dead(&env.db).await.expect("requeue"), 1);
    let report = env.relay_until_idle(&env.queue, &cfg).await;
    assert_eq!(report.sent, 1);
    assert_eq!(
        env.outbox(upload.outbox_id).await.status,
        OutboxStatus::Completed
    );
    assert_eq!(WorkerEnv::drain_queue(&env.queue).await.len(), 1);
}

#[tokio::test]
async fn a_batch_claimed_by_a_relay_that_died_is_rescued_after_its_lease_expires() {
    let env = WorkerEnv::new().await;
    let uploads = [
        env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await,
        env.create_upload("b.csv", SAMPLE_CSV.as_bytes()).await,
    ];
    // A relay claims the batch with a 1 s lease and dies before sending anything.
    let claimed = db::outbox::claim_batch(&env.db, 10, Duration::from_secs(1), 64)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 2);

    let cfg = WorkerEnv::relay_config();
    let never = CancellationToken::new();
    let r = relay::run_once(&env.db, &env.queue, &cfg, &never)
        .await
        .expect("run_once");
    assert_eq!(r.claimed, 0, "a live lease is respected");

    eventually(
        Duration::from_secs(10),
        "another relay to rescue the batch",
        || async {
            relay::run_once(&env.db, &env.queue, &cfg, &never)
                .await
                .is_ok_and(|r| r.sent == 2)
        },
    )
    .await;
    let bodies = WorkerEnv::drain_queue(&env.queue).await;
    let mut expected: Vec<_> = uploads.iter().map(|u| u.outbox_id).collect();
    expected.sort();
    assert_eq!(message_ids(&bodies), expected);
}

#[tokio::test]
async fn the_relay_loop_wakes_on_notify_without_waiting_for_its_poll() {
    let env = WorkerEnv::new().await;
    let cfg = RelayConfig {
        poll_interval: Duration::from_secs(60),
        ..WorkerEnv::relay_config()
    };
    let shutdown = worker::Shutdown::new();
    let sender: Arc<dyn QueueSender> = Arc::new(env.queue.clone());
    let handle = tokio::spawn(relay::run(
        env.db.clone(),
        sender,
        cfg,
        shutdown.clone(),
        false,
    ));
    // The first (empty) claim and the LISTEN happen right away; give it a moment to park.
    eventually(Duration::from_secs(5), "the relay to listen", || async {
        env.count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'").await >= 1
    })
    .await;

    let upload = env.create_upload("late.csv", SAMPLE_CSV.as_bytes()).await;
    eventually(
        Duration::from_secs(5),
        "the upload to be relayed",
        || async { env.outbox(upload.outbox_id).await.status == OutboxStatus::Completed },
    )
    .await;

    shutdown.stop.cancel();
    handle.await.expect("join").expect("relay stops cleanly");
    assert_eq!(WorkerEnv::drain_queue(&env.queue).await.len(), 1);
}

#[tokio::test]
async fn completed_messages_past_retention_are_purged() {
    let env = WorkerEnv::new().await;
    env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    env.relay_until_idle(&env.queue, &WorkerEnv::relay_config())
        .await;
    let keep = RelayConfig {
        retention: Duration::from_secs(3600),
        ..WorkerEnv::relay_config()
    };
    assert_eq!(
        worker::maintenance::outbox_retention::purge(&env.db, &keep)
            .await
            .expect("purge"),
        0
    );
    let purge_all = RelayConfig {
        retention: Duration::ZERO,
        ..WorkerEnv::relay_config()
    };
    assert_eq!(
        worker::maintenance::outbox_retention::purge(&env.db, &purge_all)
            .await
            .expect("purge"),
        1
    );
    assert_eq!(env.count("SELECT count(*) FROM outbox_messages").await, 0);
}

/// A sender whose sends never finish (a hung connection).
struct HangingSender;

#[worker::relay::async_trait]
impl QueueSender for HangingSender {
    async fn send(&self, _body: &str) -> anyhow::Result<()> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_hard_shutdown_mid_batch_releases_the_unsent_messages_at_once() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    let abort = CancellationToken::new();
    let cfg = WorkerEnv::relay_config();
    let run = relay::run_once(&env.db, &HangingSender, &cfg, &abort);
    let cancel = async {
        eventually(
            Duration::from_secs(5),
            "the batch to be claimed",
            || async { env.outbox(upload.outbox_id).await.status == OutboxStatus::Processing },
        )
        .await;
        abort.cancel();
    };
    let (report, ()) = tokio::join!(run, cancel);
    let report = report.expect("run_once");
    assert_eq!((report.claimed, report.sent, report.released), (1, 0, 1));
    let row = env.outbox(upload.outbox_id).await;
    assert_eq!(
        row.status,
        OutboxStatus::Pending,
        "due again at once, not after the lease"
    );
    assert_eq!(row.attempts, 0);
    let report = env.relay_until_idle(&env.queue, &cfg).await;
    assert_eq!(report.sent, 1);
}

/// A sender whose sends wait until the test opens its gate (a send slower than the lease).
struct GatedSender {
    inner: shared::storage::QueueClient,
    gate: tokio::sync::Semaphore,
}

#[worker::relay::async_trait]
impl QueueSender for GatedSender {
    async fn send(&self, body: &str) -> anyhow::Result<()> {
        let _pass = self.gate.acquire().await?;
        self.inner.send(body).await.map_err(anyhow::Error::new)
    }
}

#[tokio::test]
async fn a_live_relay_renews_its_claims_while_a_send_takes_longer_than_the_lease() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    let cfg = RelayConfig {
        lease: Duration::from_millis(600),
        ..WorkerEnv::relay_config()
    };
    let slow = GatedSender {
        inner: env.queue.clone(),
        gate: tokio::sync::Semaphore::new(0),
    };
    let never = CancellationToken::new();
    let other_relay = async {
        let first_expiry = eventually_some(Duration::from_secs(5), "the claim", || async {
            let row = env.outbox(upload.outbox_id).await;
            row.locked_until
                .filter(|_| row.status == OutboxStatus::Processing)
        })
        .await;
        eventually(
            Duration::from_secs(10),
            "the claim to be renewed past its first expiry",
            || async {
                env.outbox(upload.outbox_id)
                    .await
                    .locked_until
                    .is_some_and(|t| t > first_expiry + chrono::Duration::milliseconds(300))
            },
        )
        .await;
        eventually(
            Duration::from_secs(10),
            "the first expiry to pass",
            || async {
                sqlx::query_scalar::<_, bool>("SELECT now() > $1")
                    .bind(first_expiry)
                    .fetch_one(&env.db)
                    .await
                    .expect("now")
            },
        )
        .await;
        let r = relay::run_once(&env.db, &env.queue, &cfg, &never)
            .await
            .expect("run_once");
        assert_eq!(r.claimed, 0, "a renewed claim is not claimable");
        slow.gate.add_permits(1);
    };
    let (report, ()) = tokio::join!(relay::run_once(&env.db, &slow, &cfg, &never), other_relay);
    let report = report.expect("run_once");
    assert_eq!((report.claimed, report.sent), (1, 1));
    let row = env.outbox(upload.outbox_id).await;
    assert_eq!((row.status, row.attempts), (OutboxStatus::Completed, 1));
    let bodies = WorkerEnv::drain_queue(&env.queue).await;
    assert_eq!(message_ids(&bodies), vec![upload.outbox_id], "sent once");
}

#[tokio::test]
async fn an_outage_longer_than_the_whole_retry_budget_makes_nothing_dead() {
    let env = WorkerEnv::new().await;
    let mut expected: Vec<_> = env
        .create_uploads(5, SAMPLE_CSV.as_bytes(), 5)
        .await
        .iter()
        .map(|u| u.outbox_id)
        .collect();
    expected.sort();
    // The old budget: 10 attempts, 10 ms doubling to 40 ms. The outage lasts until every message
    // was refused twice that often.
    let cfg = RelayConfig {
        max_attempts: 10,
        backoff_base: Duration::from_millis(10),
        backoff_cap: Duration::from_millis(40),
        outage_backoff_cap: Duration::from_millis(40),
        ..WorkerEnv::relay_config()
    };
    let queue = OutageSender::new(env.queue.clone());
    // One batch: the first send finds the queue down, the other four are not tried.
    let never = CancellationToken::new();
    let r = relay::run_once(&env.db, queue.as_ref(), &cfg, &never)
        .await
        .expect("run_once");
    assert_eq!((r.claimed, r.deferred, r.failed, r.dead), (5, 5, 0, 0));
    assert_eq!(queue.refused(), 1);

    let shutdown = worker::Shutdown::new();
    let sender: Arc<dyn QueueSender> = queue.clone();
    let relay = tokio::spawn(relay::run(
        env.db.clone(),
        sender,
        cfg,
        shutdown.clone(),
        false,
    ));
    eventually(
        Duration::from_secs(30),
        "every message refused 20 times",
        || async {
            env.count("SELECT count(*) FROM outbox_messages WHERE deferrals >= 20")
                .await
                == 5
        },
    )
    .await;
    assert_eq!(
        env.count(
            "SELECT count(*) FROM outbox_messages \
             WHERE status IN ('FAILED', 'PROCESSING') AND attempts = 0"
        )
        .await,
        5,
        "no attempt spent, nothing DEAD"
    );
    let row = env.outbox(expected[0]).await;
    assert!(
        row.last_error
            .as_deref()
            .is_some_and(|e| e.contains("connection refused")),
        "{:?}",
        row.last_error
    );

    queue.end();
    eventually(Duration::from_secs(10), "everything sent", || async {
        env.count("SELECT count(*) FROM outbox_messages WHERE status = 'COMPLETED'")
            .await
            == 5
    })
    .await;
    shutdown.stop.cancel();
    relay.await.expect("join").expect("relay stops cleanly");
    assert!(queue.refused() >= 20, "refused {}", queue.refused());
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE attempts = 1")
            .await,
        5,
        "the one attempt is the send that worked"
    );
    let bodies = WorkerEnv::drain_queue(&env.queue).await;
    assert_eq!(message_ids(&bodies), expected, "each sent once");
}

#[tokio::test]
async fn due_tells_an_idle_relay_what_is_held_and_when_the_next_row_comes_due() {
    let env = WorkerEnv::new().await;
    let nothing = db::outbox::due(&env.db, 64).await.expect("due");
    assert_eq!((nothing.held, nothing.next_in_secs), (0, None));

    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    let claimed = db::outbox::claim_batch(&env.db, 10, Duration::from_secs(30), 64)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 1);
    let held = db::outbox::due(&env.db, 64).await.expect("due");
    assert_eq!(held.held, 1);
    let expires_in = held.next_in_secs.expect("the claim's expiry");
    assert!((25.0..=30.0).contains(&expires_in), "{expires_in}");
    assert_eq!(
        db::outbox::claimable_count(&env.db).await.expect("backlog"),
        0,
        "a live claim is not in the scalers' backlog"
    );

    // The service refused it: due again in 10 s, nothing held.
    db::outbox::mark_failed(
        &env.db,
        upload.outbox_id,
        "400",
        Duration::from_secs(10),
        10,
    )
    .await
    .expect("mark failed");
    let failed = db::outbox::due(&env.db, 64).await.expect("due");
    assert_eq!(failed.held, 0);
    let retry_in = failed.next_in_secs.expect("the retry's time");
    assert!((5.0..=10.0).contains(&retry_in), "{retry_in}");
    assert_eq!(
        db::outbox::claimable_count(&env.db).await.expect("backlog"),
        0
    );
}

#[tokio::test]
async fn the_scalers_backlog_counts_claimable_rows_and_expired_claims() {
    let env = WorkerEnv::new().await;
    env.create_uploads(3, SAMPLE_CSV.as_bytes(), 3).await;
    assert_eq!(
        db::outbox::claimable_count(&env.db).await.expect("backlog"),
        3
    );
    // A relay claims two for 300 ms and dies: they leave the backlog, then come back.
    let claimed = db::outbox::claim_batch(&env.db, 2, Duration::from_millis(300), 64)
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 2);
    assert_eq!(
        db::outbox::claimable_count(&env.db).await.expect("backlog"),
        1
    );
    eventually(Duration::from_secs(5), "the claims to expire", || async {
        db::outbox::claimable_count(&env.db).await.expect("backlog") == 3
    })
    .await;
}

#[tokio::test]
async fn a_queue_that_refuses_our_credentials_spends_no_attempts() {
    let env = WorkerEnv::new().await;
    env.create_uploads(3, SAMPLE_CSV.as_bytes(), 3).await;
    // The right account with the wrong key: Azurite answers 403, as Azure does for an identity
    // without its role. No message is at fault.
    let wrong = env.storage_with("AccountKey", "d3Jvbmcga2V5IGZvciB0aGlzIGFjY291bnQ=");
    let refused = shared::storage::QueueClient::new(&wrong, &wrong.queue_name).expect("client");
    let never = CancellationToken::new();
    let r = relay::run_once(&env.db, &refused, &WorkerEnv::relay_config(), &never)
        .await
        .expect("run_once");
    assert_eq!((r.claimed, r.deferred, r.failed, r.dead), (3, 3, 0, 0));
    assert_eq!(
        env.count("SELECT count(*) FROM outbox_messages WHERE attempts = 0 AND deferrals = 1")
            .await,
        3,
        "deferred, no attempt spent"
    );
}

/// The value of the unlabelled gauge `name` in a `/metrics` text.
fn gauge(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test]
async fn the_relay_reports_the_oldest_queued_task_rising_while_no_consumer_starts_it() {
    let env = WorkerEnv::new().await;
    let upload = env.create_upload("a.csv", SAMPLE_CSV.as_bytes()).await;
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let mut cfg = harness::worker::run_config(&env.database_url, env.storage.clone());
    cfg.role = worker::config::Role::Relay;
    cfg.metrics_addr = Some(addr);
    let relay = harness::worker::RunningWorker::start(cfg);
    let url = format!("http://{addr}/metrics");
    let age = || async {
        crate::observability::scrape(&url)
            .await
            .and_then(|text| gauge(&text, names::TASKS_OLDEST_QUEUED))
    };
    // Sent to the queue, and no consumer runs: the task's wait is reported...
    let first = eventually_some(Duration::from_secs(60), "a queued task's age", || async {
        age().await.filter(|&secs| secs > 0.0)
    })
    .await;
    assert!(env.task(upload.task_id).await.status == shared::domain::TaskStatus::Pending);
    // ...and keeps rising at the next readings, for nothing starts it.
    eventually_some(Duration::from_secs(60), "the age rising", || async {
        age().await.filter(|&secs| secs > first)
    })
    .await;
    relay.stop().await;
}
