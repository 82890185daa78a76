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
//! those rows in a temporary file ([`spool`]) that each hook's [`stage`] reads while it is
//! written, asking a batch at a time with a few batches in flight ([`ask`], [`call`]), merging
//! each answer into the rows and the counts ([`merge`]), and handing each answered window on,
//! in order, to the next hook or to the `COPY`. The parse, the hooks and the store overlap, as
//! the parse and the store do without hooks; still no row is stored before every hook passed
//! it, and the consumer's keepalive renews the task's lease and the message's invisibility all
//! along, as during any parse.
//!
//! **What is asked.** The rows the template's policy stores: every row with
//! `keep_invalid_rows`, the valid ones otherwise (an invalid row that is not stored needs no
//! second opinion). A batch is `webhook-id` `<task_id>.<batch>` ([`stage::Numbering`]); its
//! accepted answer is kept (`hook_answers`, by [`keep`], a few at a time) while the task runs,
//! so a worker killed mid-file resumes without asking again about the batches answered before.

mod ask;
pub use shared::webhooks::hook_call as call;
mod keep;
mod merge;
pub mod spool;
mod stage;

use std::collections::HashSet;
use std::time::Duration;

use anyhow::Context as _;
use futures::future::try_join_all;
use shared::db;
use shared::webhooks::SealingKey;
use sqlx::PgPool;
use template::Template;
use tokio::sync::mpsc;
use uuid::Uuid;

pub use merge::{Merge, Tally};
use spool::{SpooledRow, Tail};
use stage::{Numbering, Rows, IN_FLIGHT};

/// Answered windows waiting between two stages, or for the `COPY`.
const PASSED_ON: usize = 4;

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
        let client = shared::webhooks::client::build(
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

/// Why the hooks stopped before their last row.
#[derive(Debug)]
pub enum Stop {
    Unavailable(Unavailable),
    /// Ours (the database away, the spool unreadable): the task is tried again.
    Fault(anyhow::Error),
}

impl From<anyhow::Error> for Stop {
    fn from(e: anyhow::Error) -> Self {
        Self::Fault(e)
    }
}

impl Stop {
    fn closed(what: &str) -> Self {
        Self::Fault(anyhow::anyhow!("{what} stopped before the last row"))
    }
}

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

/// The file's template compiled, to check written-back values with: with the values learned in
/// reviews, as the parse read the file.
pub async fn compile(run: &Run<'_>) -> anyhow::Result<Template> {
    let schema = run.template.schema.clone();
    let mut compiled = tokio::task::spawn_blocking(move || template::compile(&schema))
        .await
        .context("compiling the template for its hooks")?
        .map_err(|_| anyhow::anyhow!("the file's template does not compile"))?;
    compiled.learn_values(run.values);
    Ok(compiled)
}

/// Asks every hook of the template about the rows the parse writes to the spool of `rows`, as
/// they come: the first hook's stage reads the spool, each further hook's the windows the one
/// before passed on, and the last passes them to `out` (the `COPY`), so the parse, the hooks
/// and the store overlap. Returns each hook's [`Tally`], in the template's order, once the
/// last row went out.
pub async fn check(
    run: &Run<'_>,
    compiled: &Template,
    rows: Tail,
    out: mpsc::Sender<Vec<SpooledRow>>,
) -> Result<Vec<Tally>, Stop> {
    let kept: HashSet<u32> = db::hooks::kept_batches(run.db, run.task_id)
        .await
        .context("reading which hook answers are kept")?
        .into_iter()
        .filter_map(|b| u32::try_from(b).ok())
        .collect();
    let mut endpoints = Vec::new();
    for (n, hook) in run.template.hooks.iter().enumerate() {
        let Some(endpoint) = db::hooks::endpoint(run.db, run.tenant_id, hook.webhook)
            .await
            .context("reading a hook's webhook endpoint")?
        else {
            return Err(Stop::Unavailable(Unavailable(format!(
                "hook {n}'s webhook endpoint {} no longer exists",
                hook.webhook
            ))));
        };
        let secrets = call::secrets(run.hooks.key.as_ref(), &endpoint).map_err(|why| {
            Stop::Unavailable(Unavailable(format!("hook {n} cannot be signed: {why}")))
        })?;
        endpoints.push((endpoint, secrets));
    }
    let targets: Vec<ask::Target<'_>> = run
        .template
        .hooks
        .iter()
        .zip(&endpoints)
        .enumerate()
        .map(|(number, (hook, (endpoint, secrets)))| ask::Target {
            run,
            hook,
            number,
            url: &endpoint.url,
            secrets,
            fields: compiled,
            sent: compiled
                .fields
                .iter()
                .map(|f| hook.sends(&f.name).then(|| json_string(&f.name)))
                .collect(),
            kept: &kept,
        })
        .collect();
    let mut merges: Vec<Merge<'_>> = targets
        .iter()
        .map(|_| Merge::new(compiled, run.max_errors as usize))
        .collect();
    let hooks = u32::try_from(targets.len()).unwrap_or(u32::MAX);
    let (keep, answers) = mpsc::channel(keep::QUEUE);
    let mut stages = Vec::new();
    let mut input = Some(Rows::Tail(rows));
    let mut last = Some(out);
    for (n, (target, merge)) in targets.iter().zip(merges.iter_mut()).enumerate() {
        let (to_next, from_this) = mpsc::channel(PASSED_ON);
        let to = if n + 1 == targets.len() {
            last.take().unwrap_or(to_next)
        } else {
            to_next
        };
        let rows = input
            .replace(Rows::after(from_this))
            .context("a stage's rows")?;
        let numbering = Numbering {
            hook: u32::try_from(n).unwrap_or(u32::MAX),
            hooks,
        };
        stages.push(stage::run(target, merge, rows, numbering, to, keep.clone()));
    }
    drop(keep);
    let keeper = async {
        keep::run(run.db, run.task_id, answers)
            .await
            .map_err(Stop::Fault)
    };
    tokio::try_join!(try_join_all(stages), keeper)?;
    Ok(merges.into_iter().map(|m| m.tally).collect())
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}
