//! `worker task show <id>`: a task's record for operators, in the same JSON as
//! `GET /api/v1/tasks/{id}` (timeline, deliveries, progress, failed attempts, trace id), read
//! straight from Postgres whatever the tenant.

use std::io::Write as _;

use anyhow::Context as _;
use shared::db;
use shared::task_view::TaskDetailView;

use crate::config::{TaskAction, TaskArgs};

pub async fn run(args: &TaskArgs) -> anyhow::Result<()> {
    let pool = args.database.pool().context("invalid DATABASE_URL")?;
    match args.action {
        TaskAction::Show { id } => {
            let task = db::tasks::find(&pool, id)
                .await
                .context("reading the task")?
                .with_context(|| format!("no task {id}"))?;
            let lineage = db::tasks::lineage(&pool, id)
                .await
                .context("reading the task's lineage")?
                .with_context(|| format!("no task {id}"))?;
            let view = TaskDetailView::new(&task, &lineage);
            writeln!(
                std::io::stdout().lock(),
                "{}",
                serde_json::to_string_pretty(&view)?
            )?;
        }
    }
    Ok(())
}
