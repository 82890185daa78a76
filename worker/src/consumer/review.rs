//! The consumer's side of the mapping review: what a templated parse is given (the mapping a
//! person confirmed for this task, and those remembered and the column names learned for its
//! template, and the values learned for its fields: the parse child has no database), and stopping a task in `NEEDS_REVIEW` when the child asks for one.

use anyhow::Context as _;
use shared::db;
use shared::domain::review::Review;
use uuid::Uuid;

use super::finish::Ending;
use super::Consumer;
use crate::parse::TemplateJob;

impl Consumer {
    /// The parse request's template part for task `task_id`, whose file belongs to `tenant_id`.
    pub(super) async fn template_job(
        &self,
        task_id: Uuid,
        tenant_id: &str,
        t: &db::templates::FileTemplate,
    ) -> anyhow::Result<TemplateJob> {
        let (confirmed, confirmed_sheet) = match db::reviews::confirmed_mapping(&self.db, task_id)
            .await
            .context("reading the confirmed mapping")?
        {
            Some(c) => (Some(c.mapping.0), c.sheet),
            None => (None, None),
        };
        // A confirmed mapping is used as it is: nothing else is read.
        let (remembered, learned) = if confirmed.is_some() {
            Default::default()
        } else {
            let remembered = db::remembered_mappings::of_template(&self.db, tenant_id, &t.name)
                .await
                .context("reading the remembered mappings")?;
            let learned = db::learned_columns::of_template(&self.db, tenant_id, &t.name)
                .await
                .context("reading the learned column names")?;
            (remembered, learned)
        };
        // Read with a confirmed mapping too: its answer's value maps were learned with it.
        let values = db::learned_values::of_template(&self.db, tenant_id, &t.name)
            .await
            .context("reading the learned values")?;
        Ok(TemplateJob {
            schema: t.schema.clone(),
            sheet: t.sheet.clone(),
            on_invalid: t.on_invalid,
            max_errors: self.cfg.validation_max_errors,
            confirmed,
            confirmed_sheet,
            remembered,
            learned,
            values,
            hooked: !t.hooks.is_empty(),
        })
    }

    /// Stops our attempt of `task_id` in NEEDS_REVIEW with `review`: the task then holds no
    /// lease, and the caller deletes the message (the answer sends a new one).
    pub(super) async fn request_review(
        &self,
        task_id: Uuid,
        attempt: i32,
        review: Option<Review>,
    ) -> anyhow::Result<Ending> {
        // The parse only asks for a review with its document.
        let review = review.context("a review without its document")?;
        if !db::reviews::request(&self.db, task_id, attempt, &review)
            .await
            .context("stopping the task for a review")?
        {
            return Ok(Ending::Lost);
        }
        tracing::info!(%task_id, attempt, reason = %review.reason,
            "task needs a mapping review");
        Ok(Ending::InReview)
    }
}
