//! One batch asked of one hook until it answers usably: the request body (the contract's
//! `rows.validate`), an answer kept from an earlier attempt of the task when the body is the
//! same (a new answer is handed back to be kept), else requests retried with backoff while the answer is missing, not `200`, too long or
//! not about the batch (a row that was not in it, a field the hook is not sent), for at most
//! `HOOK_RETRY_FOR`.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};
use shared::db;
use shared::domain::hook::Hook;
use shared::webhooks::SigningSecret;
use template::Template;

use super::call::{self, Answer, Body, BodyRow};
use super::spool::SpooledRow;
use super::{Run, Unavailable};
use crate::retry::Backoff;

/// The first wait after a failed request, doubling up to [`BACKOFF_MAX`].
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// One hook of the task, ready to be asked.
pub struct Target<'a> {
    pub run: &'a Run<'a>,
    pub hook: &'a Hook,
    /// Its place in the template's `hooks`.
    pub number: usize,
    pub url: &'a str,
    pub secrets: &'a [SigningSecret],
    pub fields: &'a Template,
    /// Each field's name as a JSON string where the hook is sent it, in field order.
    pub sent: Vec<Option<String>>,
    /// The batches of the task with a kept answer ([`db::hooks::kept_batches`]).
    pub kept: &'a HashSet<u32>,
}

/// A batch, and the answer about it.
pub struct Answered {
    pub window: Vec<SpooledRow>,
    /// None when no row of it was asked about.
    pub answer: Option<Answer>,
    /// A new answer, to keep for a resumed attempt ([`super::keep`]).
    pub keep: Option<db::hooks::KeptAnswer>,
}

impl Target<'_> {
    /// Asks about the rows of `window` the policy may store ([`SpooledRow::may_be_stored`]).
    pub async fn ask(
        &self,
        batch: u32,
        window: Vec<SpooledRow>,
        any: bool,
        keep_all: bool,
    ) -> anyhow::Result<Result<Answered, Unavailable>> {
        if !any {
            return Ok(Ok(Answered {
                window,
                answer: None,
                keep: None,
            }));
        }
        let asked: Vec<&SpooledRow> = window
            .iter()
            .filter(|r| r.may_be_stored(keep_all))
            .collect();
        let body = serde_json::to_vec(&self.body(batch, &asked)?)?;
        let digest = Sha256::digest(&body);
        let run = self.run;
        let number = i32::try_from(batch).unwrap_or(i32::MAX);
        if self.kept.contains(&batch) {
            let kept = db::hooks::answer(run.db, run.task_id, number, &digest)
                .await
                .context("reading a kept hook answer")?;
            if let Some(answer) = kept.and_then(|k| serde_json::from_value::<Answer>(k).ok()) {
                return Ok(Ok(Answered {
                    window,
                    answer: Some(answer),
                    keep: None,
                }));
            }
        }
        let rows: HashSet<u64> = asked.iter().map(|r| r.row).collect();
        let id = format!("{}.{batch}", run.task_id);
        let request = call::Request {
            url: self.url,
            id: &id,
            secrets: self.secrets,
            body: &body,
            timeout: self.hook.timeout(),
            allow_private: run.hooks.allow_private,
        };
        let started = Instant::now();
        let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
        loop {
            let why = match call::post(&run.hooks.client, &request).await {
                Ok(answer) => match call::about_the_batch(&answer, &rows, |f| {
                    self.fields.field_index(f).is_some() && self.hook.sends(f)
                }) {
                    Ok(()) => {
                        let keep = db::hooks::KeptAnswer {
                            batch: number,
                            body_sha256: digest.to_vec(),
                            answer: serde_json::to_value(&answer)?,
                        };
                        return Ok(Ok(Answered {
                            window,
                            answer: Some(answer),
                            keep: Some(keep),
                        }));
                    }
                    Err(why) => why,
                },
                Err(why) => why,
            };
            let left = run.hooks.retry_for.saturating_sub(started.elapsed());
            tracing::warn!(task_id = %run.task_id, hook = self.number, batch, error = %why,
                "a validation hook gave no usable answer");
            if left.is_zero() {
                return Ok(Err(Unavailable(format!(
                    "hook {} (webhook endpoint {}) gave no usable answer for batch {batch} \
                     within {:?}; the last: {why}",
                    self.number, self.hook.webhook, run.hooks.retry_for
                ))));
            }
            tokio::time::sleep(backoff.next_delay().min(left)).await;
        }
    }

    /// The request body: each asked row with the values of the fields the hook is sent.
    fn body<'b>(&'b self, batch: u32, asked: &[&SpooledRow]) -> anyhow::Result<Body<'b>> {
        let run = self.run;
        let rows = asked
            .iter()
            .map(|r| {
                let values =
                    call::values_object(&r.values, &self.sent).context("a spooled row's values")?;
                Ok(BodyRow { row: r.row, values })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Body {
            r#type: "rows.validate",
            task_id: run.task_id,
            source_file_id: run.source_file_id,
            template: &run.template.name,
            template_version: run.template.version,
            metadata: run.metadata,
            end_user: run.end_user,
            batch,
            revision: None,
            rows,
        })
    }
}
