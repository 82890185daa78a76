//! `worker outbox stats` and `worker outbox requeue-dead`: the operator's view of the outbox.
//! `stats` prints one JSON object per line (status, count, oldest) so it pipes into `jq`.

use std::io::Write as _;

use anyhow::Context as _;
use shared::db;

use crate::config::{OutboxAction, OutboxArgs};

pub async fn run(args: &OutboxArgs) -> anyhow::Result<()> {
    let pool = args.database.pool().context("invalid DATABASE_URL")?;
    let mut out = std::io::stdout().lock();
    match args.action {
        OutboxAction::Stats => {
            let stats = db::outbox::stats(&pool)
                .await
                .context("reading outbox stats")?;
            for s in stats {
                writeln!(out, "{}", serde_json::to_string(&s)?)?;
            }
        }
        OutboxAction::RequeueDead => {
            let n = db::outbox::requeue_dead(&pool)
                .await
                .context("requeueing DEAD messages")?;
            writeln!(out, "{}", serde_json::json!({ "requeued": n }))?;
        }
    }
    Ok(())
}
