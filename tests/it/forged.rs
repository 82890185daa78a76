//! The consumer trusts the database, not the message: a message whose task belongs to another
//! file than the one it names goes to the poison queue and changes nothing.

use chrono::Utc;
use harness::worker::WorkerEnv;
use shared::domain::{Envelope, MessageEncoding, ParseTaskPayload, TaskStatus, PARSE_TASK};
use uuid::Uuid;
use worker::consumer::Outcome;

#[tokio::test]
async fn a_message_naming_another_file_than_its_tasks_is_poisoned_and_changes_no_task() {
    let env = WorkerEnv::new().await;
    let victim = env.create_upload("a.csv", b"id\n1\n").await;
    let other = env.create_upload("b.csv", b"id\n2\n3\n").await;
    let forged = Envelope {
        message_id: Uuid::now_v7(),
        event_type: PARSE_TASK.to_owned(),
        payload: serde_json::to_value(ParseTaskPayload::new(
            victim.task_id,
            other.source_file_id,
            None,
        ))
        .expect("json"),
        created_at: Utc::now(),
    }
    .encode(MessageEncoding::Base64);
    env.queue.send(&forged).await.expect("send");

    let consumer = env.consumer(WorkerEnv::consumer_config());
    let outcomes = env.consume_until_idle(&consumer).await;
    assert_eq!(outcomes.len(), 1);
    assert!(
        matches!(&outcomes[0], Outcome::Poisoned { task_id: None, .. }),
        "{outcomes:?}"
    );
    for upload in [&victim, &other] {
        let task = env.task(upload.task_id).await;
        assert_eq!(task.status, TaskStatus::Pending);
        assert_eq!(task.attempts, 0);
        assert_eq!(env.row_count(upload.source_file_id).await, 0);
    }
    assert_eq!(WorkerEnv::drain_queue(&env.poison).await, [forged]);
}
