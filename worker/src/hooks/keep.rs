//! The keeper of a task's hook answers (`hook_answers`): the stages hand it each new answer and
//! go on; it inserts whatever has queued up in one statement, so a file of 1,000 batches costs
//! a few `INSERT`s rather than 1,000 on the hooks' path, and an answer is kept within one
//! statement's time of arriving (a worker killed meanwhile asks that batch again: at least once).

use anyhow::Context as _;
use shared::db;
use shared::db::hooks::KeptAnswer;
use sqlx::PgPool;
use tokio::sync::mpsc;
use uuid::Uuid;

/// Answers a stage may hand over before it waits for the keeper.
pub const QUEUE: usize = 64;

/// Answers kept by one statement at most.
const PER_STATEMENT: usize = 256;

/// Keeps the answers sent on `answers` until every sender is gone.
pub async fn run(
    db: &PgPool,
    task_id: Uuid,
    mut answers: mpsc::Receiver<KeptAnswer>,
) -> anyhow::Result<()> {
    let mut queued = Vec::new();
    while answers.recv_many(&mut queued, PER_STATEMENT).await > 0 {
        db::hooks::keep_answers(db, task_id, &queued)
            .await
            .context("keeping hook answers")?;
        queued.clear();
    }
    Ok(())
}
