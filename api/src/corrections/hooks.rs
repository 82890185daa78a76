//! A revision's corrected rows asked of the template's validation hooks, as an upload's rows are
//! (contract v1.3: corrected rows are checked "exactly as at upload (…, hooks)").
//!
//! **Why the api asks, in the request.** The contract answers a correction at once, with the
//! errors still on the rows and the new counts; queueing the revision for the worker would make
//! that answer a promise. A revision is at most 10,000 rows, a few batches, so the api asks
//! itself, bounded: each batch is one request within the hook's own `timeout` (default 10 s, at
//! most 60 s), not retried for `HOOK_RETRY_FOR` as an upload's batches are, because a person is
//! waiting. The request is async, so no thread of the runtime waits on a slow hook. It is
//! signed, sent and read with the worker's code ([`shared::webhooks::hook_call`], the
//! public-only client of [`shared::webhooks::client`]): the same secrets, SSRF rules (checked at
//! connect time), answer bound and answer checks. A hook that gives no usable answer fails the
//! request `503 hook_unavailable` and the revision's transaction rolls back: nothing of it is
//! kept. The transaction (holding the file's task row) stays open during the calls, so two
//! revisions of a file still take turns and no answer is merged into rows another revision
//! changed meanwhile.
//!
//! **What is asked.** Each corrected row the policy stores (the valid ones; every one with
//! `keep_invalid_rows`), with its values as checked again, `webhook-id`
//! `<task_id>.r<revision>.<batch>.<12 hex digits of the body's SHA-256>` (a refused revision's
//! number is used again by the next request, which may ask something else) and `"revision"` in
//! the body. Errors join the row's records
//! as `hook-error`; written values are applied as corrections of their cells in the same
//! revision and checked again by the engine (uniqueness included), not asked again. The hooks
//! are asked in order, each about the rows as the ones before it left them.

use std::collections::{BTreeMap, HashSet};
use std::sync::OnceLock;

use sha2::{Digest as _, Sha256};
use shared::db;
use shared::domain::hook::{Hook, MAX_TIMEOUT};
use shared::domain::{ErrorRecord, OnInvalid};
use shared::webhooks::hook_call::{self, Answer, Body, BodyRow, HookError};
use shared::webhooks::{client, SigningSecret};
use uuid::Uuid;

use super::{CorrectionItem, FileCtx, Rechecked};
use crate::error::{ApiError, ApiErrorCode};
use crate::state::AppState;

/// Who asks: the file and its upload, as the hooks are told about them.
pub(super) struct Asker<'a> {
    pub state: &'a AppState,
    pub tenant_id: &'a str,
    pub task_id: Uuid,
    pub source: &'a db::source_files::SourceFile,
    pub template: &'a db::templates::FileTemplate,
    pub revision: i32,
}

/// What the hooks said about the corrected rows.
#[derive(Debug, Default)]
pub(super) struct Said {
    /// Each row's hook errors.
    pub errors: BTreeMap<i64, Vec<HookError>>,
    /// Written values, as corrections of their cells.
    pub written: Vec<CorrectionItem>,
}

/// The client, one per setting of private networks (tests run apps of both in one process).
fn http(allow_private: bool) -> Result<&'static reqwest::Client, ApiError> {
    static CLIENTS: [OnceLock<reqwest::Client>; 2] = [OnceLock::new(), OnceLock::new()];
    let cell = &CLIENTS[usize::from(allow_private)];
    if let Some(c) = cell.get() {
        return Ok(c);
    }
    let built = client::build(MAX_TIMEOUT, 4, allow_private).map_err(ApiError::Internal)?;
    Ok(cell.get_or_init(|| built))
}

fn unavailable(message: String) -> ApiError {
    ApiError::Refused {
        status: reqwest::StatusCode::SERVICE_UNAVAILABLE,
        code: ApiErrorCode::HookUnavailable,
        message,
    }
}

impl Asker<'_> {
    /// Asks hook `n` about the corrected rows of `rows` that the policy stores (rows an
    /// earlier hook found wrong are invalid by now, so under `drop_invalid_rows` not asked).
    pub async fn ask(
        &self,
        n: usize,
        file: &FileCtx<'_>,
        rows: &[Rechecked],
    ) -> Result<Said, ApiError> {
        let keep_all = file.on_invalid == OnInvalid::KeepInvalidRows;
        let asked: Vec<&Rechecked> = rows
            .iter()
            .filter(|r| r.corrected && (keep_all || r.after.valid))
            .collect();
        let mut said = Said::default();
        let hooks = &self.template.hooks.0;
        let Some(hook) = hooks.get(n).filter(|_| !asked.is_empty()) else {
            return Ok(said);
        };
        let count = u32::try_from(hooks.len()).unwrap_or(u32::MAX);
        let (url, secrets) = self.endpoint(n, hook).await?;
        let sent: Vec<Option<String>> = file
            .template
            .fields
            .iter()
            .map(|f| hook.sends(&f.name).then(|| json_string(&f.name)))
            .collect();
        for (local, batch) in (0u32..).zip(asked.chunks(hook.batch_size())) {
            let number = local * count + u32::try_from(n).unwrap_or(u32::MAX);
            let answer = self
                .post((hook, &url, &secrets), (number, batch, &sent), file)
                .await?;
            for e in answer.errors {
                let row = i64::try_from(e.row).unwrap_or(i64::MAX);
                said.errors.entry(row).or_default().push(e);
            }
            said.written
                .extend(answer.values.into_iter().map(|v| CorrectionItem {
                    sheet: file.sheet,
                    row: i64::try_from(v.row).unwrap_or(i64::MAX),
                    field: v.field,
                    value: hook_call::value_text(&v.value),
                }));
        }
        // A value for a field without a column has no cell to hold it.
        said.written.retain(|w| {
            let f = file.template.fields.iter().position(|f| f.name == w.field);
            f.is_some_and(|f| file.mapping[f].is_some())
        });
        Ok(said)
    }

    /// Hook `n`'s endpoint: its URL and signing secrets.
    async fn endpoint(
        &self,
        n: usize,
        hook: &Hook,
    ) -> Result<(String, Vec<SigningSecret>), ApiError> {
        let endpoint = db::hooks::endpoint(&self.state.db, self.tenant_id, hook.webhook)
            .await?
            .ok_or_else(|| {
                unavailable(format!(
                    "hook {n}'s webhook endpoint {} no longer exists",
                    hook.webhook
                ))
            })?;
        let key = self.state.webhooks.keys.secret_key.as_ref();
        let secrets = hook_call::secrets(key, &endpoint)
            .map_err(|why| unavailable(format!("hook {n} cannot be signed: {why}")))?;
        Ok((endpoint.url, secrets))
    }

    /// One batch asked, once: its answer, checked against the batch.
    async fn post(
        &self,
        (hook, url, secrets): (&Hook, &str, &[SigningSecret]),
        (batch, rows, sent): (u32, &[&Rechecked], &[Option<String>]),
        file: &FileCtx<'_>,
    ) -> Result<Answer, ApiError> {
        let mut body_rows = Vec::with_capacity(rows.len());
        for r in rows {
            let values = hook_call::values_object(&r.after.values.to_string(), sent)
                .map_err(|e| ApiError::Internal(e.into()))?;
            let row = u64::try_from(r.after.row_number).unwrap_or(0);
            body_rows.push(BodyRow { row, values });
        }
        let body = Body {
            r#type: "rows.validate",
            task_id: self.task_id,
            source_file_id: self.source.id,
            template: &self.template.name,
            template_version: self.template.version,
            metadata: self.source.metadata.as_ref(),
            end_user: self.source.end_user.as_ref(),
            batch,
            revision: Some(self.revision),
            rows: body_rows,
        };
        let body = serde_json::to_vec(&body).map_err(|e| ApiError::Internal(e.into()))?;
        // A revision refused (a hook down) leaves its number free for the next request, which
        // may ask something else: the body's digest keeps the id of each question its own.
        let digest = Sha256::digest(&body);
        let id = format!(
            "{}.r{}.{batch}.{:012x}",
            self.task_id,
            self.revision,
            u64::from_be_bytes([
                digest[0], digest[1], digest[2], digest[3], digest[4], digest[5], digest[6],
                digest[7]
            ]) >> 16
        );
        let allow_private = self.state.webhooks.keys.allow_private_networks;
        let request = hook_call::Request {
            url,
            id: &id,
            secrets,
            body: &body,
            timeout: hook.timeout(),
            allow_private,
        };
        let answer = hook_call::post(http(allow_private)?, &request)
            .await
            .map_err(|why| unavailable(format!("the hook gave no usable answer: {why}")))?;
        let asked: HashSet<u64> = rows
            .iter()
            .filter_map(|r| u64::try_from(r.after.row_number).ok())
            .collect();
        hook_call::about_the_batch(&answer, &asked, |f| {
            file.template.field_index(f).is_some() && hook.sends(f)
        })
        .map_err(|why| unavailable(format!("the hook gave no usable answer: {why}")))?;
        Ok(answer)
    }
}

impl Said {
    /// A later hook's answer added.
    pub fn add(&mut self, later: Said) {
        for (row, errors) in later.errors {
            self.errors.entry(row).or_default().extend(errors);
        }
        self.written.extend(later.written);
    }
}

/// The hooks' errors joined to the corrected rows' records (each row then invalid).
pub(super) fn merge_errors(
    rows: &mut [Rechecked],
    errors: &BTreeMap<i64, Vec<HookError>>,
    file: &FileCtx<'_>,
    headers: &[String],
) {
    for r in rows.iter_mut().filter(|r| r.corrected) {
        for e in errors.get(&r.after.row_number).into_iter().flatten() {
            let f = file.template.field_index(&e.field);
            let value = f
                .and_then(|f| r.after.values.get(f))
                .and_then(hook_call::value_text);
            let column = f
                .and_then(|f| file.mapping[f])
                .and_then(|c| headers.get(c).cloned());
            r.after.errors.push(hook_call::error_record(
                file.sheet,
                e.clone(),
                value,
                column,
            ));
            r.after.valid = false;
        }
    }
}

/// A row checked again only because a key value it shares moved keeps the hook errors it had:
/// no hook was asked about it again, so their verdict stands.
pub(super) fn keep_verdicts(rows: &mut [Rechecked]) {
    for r in rows.iter_mut().filter(|r| !r.corrected) {
        let kept: Vec<ErrorRecord> = r
            .before
            .errors
            .0
            .iter()
            .filter(|e| e.code == "hook-error")
            .cloned()
            .collect();
        if !kept.is_empty() {
            r.after.valid = false;
            r.after.errors.extend(kept);
        }
    }
}

/// `text` as a JSON string.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}
