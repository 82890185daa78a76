//! Validation hooks (contract v1.3): a template's `hooks` are the application's own checks, and
//! every batch of an upload's rows is `POST`ed to each hook's webhook endpoint before any of
//! them is stored.
//!
//! **Where they run.** In the consumer, between the parse child and the rows' `COPY`, not in
//! the child. The child is the isolation of a hostile file: it holds the file and nothing else
//! (no database, no signing secrets), it is killed at the parse's deadline, and a parse that
//! waits for the network would spend that deadline on a hook that may take `HOOK_RETRY_FOR`
//! (10 minutes) to come back. So the child validates as it parses and marks each stored row
//! with its row number and verdict ([`crate::parse::ParseEvent::Origin`]); the consumer keeps
//! those rows in a temporary file ([`spool`]), asks each hook about them a batch at a time with
//! a few batches in flight ([`ask`], [`call`]), merges each answer into the rows, the report and
//! the counts ([`merge`]), and only then `COPY`s the rows. No row is stored before every hook
//! passed it, and the consumer's keepalive renews the task's lease and the message's
//! invisibility all along, as during any parse.
//!
//! **What is asked.** The rows the template's policy stores: every row with
//! `keep_invalid_rows`, the valid ones otherwise (an invalid row that is not stored needs no
//! second opinion). A batch is `webhook-id` `<task_id>.<batch>`, numbered across the
//! template's hooks in order; its accepted answer is kept (`hook_answers`) while the task runs,
//! so a worker killed mid-file resumes without asking again about the batches answered before.

mod ask;
pub mod call;
mod merge;
pub mod spool;

use std::collections::HashSet;
use std::time::Duration;

use anyhow::Context as _;
use futures::stream::FuturesOrdered;
use futures::StreamExt as _;
use shared::db;
use shared::domain::{ErrorRecord, OnInvalid};
use shared::webhooks::{SealingKey, SigningSecret};
use sqlx::PgPool;
use uuid::Uuid;

use crate::parse::ValidationReport;
use merge::Merge;
use spool::{Spool, SpooledRow};

/// Batches of one task asked at once, per hook.
const IN_FLIGHT: usize = 4;

/// The consumer's means to call hooks.
#[derive(Clone)]
pub struct Hooks {
    client: reqwest::Client,
    key: Option<SealingKey>,
    allow_private: bool,
    retry_for: Duration,
}

impl Hooks {
    /// Hooks signed with secrets sealed by `key`, retried for `retry_for` (`HOOK_RETRY_FOR`).
    pub fn new(
        key: Option<SealingKey>,
        allow_private: bool,
        retry_for: Duration,
    ) -> anyhow::Result<Self> {
        // Each request sets its hook's timeout; this one only bounds what none sets.
        let client = crate::webhooks::client::build(
            shared::domain::hook::MAX_TIMEOUT,
            IN_FLIGHT,
            allow_private,
        )?;
        Ok(Self {
            client,
            key,
            allow_private,
            retry_for,
        })
    }
}

/// A hook that could not be asked, or gave no usable answer for `HOOK_RETRY_FOR`: the task
/// fails `hook_unavailable` with this message.
#[derive(Debug)]
pub struct Unavailable(pub String);

/// One task's file, as its hooks are told about it.
pub struct Run<'a> {
    pub hooks: &'a Hooks,
    pub db: &'a PgPool,
    pub task_id: Uuid,
    pub source_file_id: Uuid,
    pub tenant_id: &'a str,
    pub template: &'a db::templates::FileTemplate,
    /// The values learned in reviews that the parse was given with the file.
    pub values: &'a template::ValueMaps,
    pub metadata: Option<&'a serde_json::Value>,
    pub end_user: Option<&'a serde_json::Value>,
    /// The report's cap on error records.
    pub max_errors: u32,
}

/// Asks every hook of the template about the rows of `spool`, in order: the rows as the last
/// hook left them, with the report's records and counts merged in; `Unavailable` when a hook
/// cannot be asked. `Err` is ours (the database away), for the task to be tried again.
pub async fn check(
    run: &Run<'_>,
    mut spool: Spool,
    validation: &mut ValidationReport,
    errors: &mut Vec<ErrorRecord>,
) -> anyhow::Result<Result<Spool, Unavailable>> {
    let schema = run.template.schema.clone();
    let mut compiled = tokio::task::spawn_blocking(move || template::compile(&schema))
        .await
        .context("compiling the template for its hooks")?
        .map_err(|_| anyhow::anyhow!("the file's template does not compile"))?;
    // Written-back values are read as the parse read the file: with the values learned in reviews.
    compiled.learn_values(run.values);
    let mut merge = Merge::new(&compiled, validation, errors, run.max_errors as usize);
    let mut batch = 0u32;
    let kept: HashSet<u32> = db::hooks::kept_batches(run.db, run.task_id)
        .await
        .context("reading which hook answers are kept")?
        .into_iter()
        .filter_map(|b| u32::try_from(b).ok())
        .collect();
    for (n, hook) in run.template.hooks.iter().enumerate() {
        let Some(endpoint) = db::hooks::endpoint(run.db, run.tenant_id, hook.webhook)
            .await
            .context("reading a hook's webhook endpoint")?
        else {
            return Ok(Err(Unavailable(format!(
                "hook {n}'s webhook endpoint {} no longer exists",
                hook.webhook
            ))));
        };
        let secrets = match secrets(run.hooks.key.as_ref(), &endpoint) {
            Ok(s) => s,
            Err(why) => {
                return Ok(Err(Unavailable(format!(
                    "hook {n} cannot be signed: {why}"
                ))))
            }
        };
        let target = ask::Target {
            run,
            hook,
            number: n,
            url: &endpoint.url,
            secrets: &secrets,
            fields: &compiled,
            sent: compiled
                .fields
                .iter()
                .map(|f| hook.sends(&f.name).then(|| json_string(&f.name)))
                .collect(),
            kept: &kept,
        };
        spool = match pass(&target, spool, &mut batch, &mut merge).await? {
            Ok(next) => next,
            Err(unavailable) => return Ok(Err(unavailable)),
        };
    }
    Ok(Ok(spool))
}

/// The endpoint's signing secrets: its current one, and the previous one during a rotation.
fn secrets(
    key: Option<&SealingKey>,
    endpoint: &db::hooks::HookEndpoint,
) -> Result<Vec<SigningSecret>, String> {
    let key = key.ok_or("WEBHOOK_SECRET_KEY is not set on the worker")?;
    let open = |sealed: &[u8]| {
        key.open(endpoint.id, sealed)
            .map_err(|_| "its secret does not open with WEBHOOK_SECRET_KEY".to_owned())
    };
    let mut secrets = vec![open(&endpoint.secret)?];
    if let Some(previous) = &endpoint.previous_secret {
        secrets.push(open(previous)?);
    }
    Ok(secrets)
}

/// One hook's pass over the rows: windows of up to a batch of rows, each asked about the ones
/// the policy stores (the others ride along, so the order holds), [`IN_FLIGHT`] at a time,
/// merged and written to the next spool in order.
async fn pass(
    target: &ask::Target<'_>,
    spool: Spool,
    batch: &mut u32,
    merge: &mut Merge<'_>,
) -> anyhow::Result<Result<Spool, Unavailable>> {
    let keep_all = target.run.template.on_invalid == OnInvalid::KeepInvalidRows;
    let asked = |r: &SpooledRow| keep_all || r.valid;
    let mut rows = spool.read()?;
    let mut next = Spool::new().context("starting the next row spool")?;
    let mut in_flight = FuturesOrdered::new();
    let mut ended = false;
    while !ended || !in_flight.is_empty() {
        if !ended && in_flight.len() < IN_FLIGHT {
            // At most a batch of rows, asked or not: a window never grows past it, however
            // many rows an earlier hook left out.
            let mut window = Vec::new();
            let mut count = 0;
            while window.len() < target.hook.batch_size() {
                let Some(row) = rows.next_row()? else {
                    ended = true;
                    break;
                };
                count += usize::from(asked(&row));
                window.push(row);
            }
            if !window.is_empty() {
                let number = *batch;
                *batch += u32::from(count > 0);
                in_flight.push_back(target.ask(number, window, count > 0, keep_all));
            }
            continue;
        }
        let Some(done) = in_flight.next().await else {
            continue;
        };
        let (mut window, answer) = match done? {
            Ok(answered) => answered,
            Err(unavailable) => return Ok(Err(unavailable)),
        };
        if let Some(answer) = answer {
            merge.apply(&mut window, answer);
        }
        for row in &window {
            next.push(row).context("writing the row spool")?;
        }
    }
    Ok(Ok(next))
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}
