//! Importing found blobs, on the claim loop the relay shares ([`crate::claim`]), with the
//! source as the loop's destination (one source found down defers only its own blobs). A blob
//! is copied into the uploads container ([`super::copy`]), then one transaction writes its
//! source file (with its `origin`), task and outbox message ([`db::uploads::insert`], the
//! statement every upload goes through, with the tenant's quota) and marks its row `IMPORTED`
//! only if the claim is still ours ([`source_blobs::imported`]). A worker killed anywhere before
//! the commit leaves the row claimable once its lease runs out, and a copy nobody recorded
//! (swept by the orphan-blob job); one that lost its claim rolls back: one task per
//! (source, blob, ETag).

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use chrono::Utc;
use shared::db;
use shared::db::source_blobs::{self, Claimed, NotImported};
use shared::db::source_files::{NewSourceFile, TemplateRef};
use shared::db::uploads::{NewUpload, Recorded};
use shared::db::Due;
use shared::domain::origin::Origin;
use shared::domain::OnInvalid;
use shared::failure::{self, Failure};
use shared::storage::BlobStore;
use shared::webhooks::WebhookKeyConfig;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::copy::{self, Copied, Stopped};
use super::SourcesConfig;
use crate::claim::{with_db_retry, Report, Work};
use crate::tenant_container;

/// What importing one blob came to.
#[derive(Debug)]
pub enum Sent {
    Imported {
        source_file_id: Uuid,
    },
    Not(NotImported),
    /// The claim expired and another worker took the blob: nothing was written.
    Lost,
}

/// The outcome code of a source that does not answer (a credential refused, a container gone).
pub const UNREACHABLE: &str = "source_unreachable";

/// How soon an import that met Postgres busy or down is tried again.
const POSTGRES_BUSY_RETRY: Duration = Duration::from_secs(1);

/// Blob imports as a claim loop's work.
pub struct Imports<'a> {
    pub db: &'a PgPool,
    pub cfg: &'a SourcesConfig,
    pub keys: &'a WebhookKeyConfig,
    pub uploads: &'a BlobStore,
    pub containers: &'a tenant_container::Containers,
}

#[async_trait::async_trait]
impl Work for Imports<'_> {
    type Item = Claimed;
    type Sent = Sent;

    fn name(&self) -> &'static str {
        "sources"
    }

    fn rows(&self) -> (&'static str, &'static str) {
        ("source blob", "worker")
    }

    fn db(&self) -> &PgPool {
        self.db
    }

    fn channel(&self) -> &'static str {
        "source_blobs"
    }

    fn id(b: &Claimed) -> Uuid {
        b.id
    }

    fn destination(b: &Claimed) -> Uuid {
        b.source_id
    }

    fn is_down(sent: &Sent) -> bool {
        matches!(sent, Sent::Not(NotImported::Retry { outcome, .. }) if outcome == UNREACHABLE)
    }

    fn span(&self, b: &Claimed) -> tracing::Span {
        tracing::info_span!("import blob", source_id = %b.source_id, blob = %b.blob,
            etag = %b.etag, attempt = b.attempts)
    }

    async fn claim(
        &self,
        limit: i64,
        lease: Duration,
        _held: &HashMap<Uuid, usize>,
    ) -> sqlx::Result<Vec<Claimed>> {
        source_blobs::claim(self.db, limit, lease).await
    }

    async fn extend(&self, ids: &[Uuid], lease: Duration) -> sqlx::Result<u64> {
        source_blobs::extend_claims(self.db, ids, lease).await
    }

    async fn send(&self, b: &Claimed) -> Sent {
        let sent = match self.import(b).await {
            Ok(sent) => sent,
            // Postgres busy (every pooled connection taken by the imports in flight) or down, or
            // a lost race: not the blob's doing, so it costs no attempt and waits only a moment.
            Err(e) if failure::of_db(e.as_ref()) == Some(Failure::Outage) => {
                tracing::info!(source_id = %b.source_id, blob = %b.blob,
                    error = format!("{e:#}"), "blob import waits for Postgres");
                Sent::Not(NotImported::Deferred {
                    retry_in: POSTGRES_BUSY_RETRY,
                })
            }
            Err(e) => {
                tracing::warn!(source_id = %b.source_id, blob = %b.blob,
                    error = format!("{e:#}"), "blob import failed");
                self.retry("import_failed", format!("{e:#}"), b)
            }
        };
        let outcome = match &sent {
            Sent::Imported { .. } => "imported",
            Sent::Not(NotImported::Skipped { .. }) => "skipped",
            Sent::Not(NotImported::Retry { .. }) => "failed",
            Sent::Not(NotImported::Deferred { .. }) => "deferred",
            Sent::Lost => "lost",
        };
        super::metrics::import(b, outcome);
        sent
    }

    async fn record(
        &self,
        batch: Vec<(Claimed, Option<Sent>)>,
        abort: &CancellationToken,
    ) -> anyhow::Result<Report> {
        let mut report = Report::default();
        let mut down: Option<(Uuid, String)> = None;
        for (b, sent) in batch {
            let settle = match sent {
                Some(Sent::Imported { .. }) => {
                    report.sent += 1;
                    continue;
                }
                Some(Sent::Lost) => continue,
                Some(Sent::Not(not)) => {
                    match &not {
                        NotImported::Retry {
                            outcome, message, ..
                        } if outcome == UNREACHABLE => {
                            down.get_or_insert((b.source_id, message.clone()));
                            report.failed += 1;
                        }
                        NotImported::Retry { .. } => report.failed += 1,
                        NotImported::Skipped { .. } => report.sent += 1,
                        NotImported::Deferred { .. } => report.deferred += 1,
                    }
                    not
                }
                None => {
                    report.deferred += 1;
                    NotImported::Deferred {
                        retry_in: self.cfg.retry_in(b.failures),
                    }
                }
            };
            with_db_retry(abort, || source_blobs::settle(self.db, b.id, &settle))
                .await
                .context("recording a blob import")?;
        }
        if let Some((source, message)) = down {
            with_db_retry(abort, || {
                db::sources::failed(self.db, source, UNREACHABLE, &message)
            })
            .await
            .context("recording a source's failure")?;
        }
        Ok(report)
    }

    async fn release(&self, ids: &[Uuid]) -> sqlx::Result<u64> {
        source_blobs::release(self.db, ids).await
    }

    async fn due(&self) -> sqlx::Result<Due> {
        source_blobs::due(self.db).await
    }
}

impl Imports<'_> {
    fn retry(&self, outcome: &str, message: String, b: &Claimed) -> Sent {
        Sent::Not(NotImported::Retry {
            outcome: outcome.to_owned(),
            message,
            retry_in: self.cfg.retry_in(b.failures),
        })
    }

    /// Copies the blob and records it; see the module docs.
    async fn import(&self, b: &Claimed) -> anyhow::Result<Sent> {
        let stored = tenant_container::Stored {
            owner: b.source_id,
            url: &b.container_url,
            credential_kind: Some(&b.credential_kind),
            sealed: b.sealed_secret.as_deref(),
        };
        let source = match self.containers.open(self.keys, stored).await {
            Ok(store) => store,
            Err(e) => return Ok(self.retry(UNREACHABLE, format!("{e:#}"), b)),
        };
        let Some(template) = self.template(b).await? else {
            let message = format!(
                "the source's template {:?} does not exist any more",
                b.template_name
            );
            return Ok(self.retry("unknown_template", message, b));
        };
        let file_id = Uuid::now_v7();
        let target = format!("{}/{file_id}", Utc::now().format("%Y/%m/%d"));
        let found = copy::Found {
            name: &b.blob,
            etag: &b.etag,
            listed_size: b
                .size_bytes
                .filter(|_| b.found_by == "listing")
                .and_then(|s| u64::try_from(s).ok()),
        };
        let copied = copy::copy(
            &source,
            &found,
            self.uploads,
            &target,
            self.cfg.max_blob_bytes,
        )
        .await;
        let copied = match copied {
            Ok(copied) => copied,
            Err(Stopped::Not(not)) => return Ok(Sent::Not(not)),
            Err(Stopped::Source(e)) => return Ok(self.retry(UNREACHABLE, e.to_string(), b)),
            Err(Stopped::Uploads(e)) => {
                return Ok(self.retry("storage_unavailable", e.to_string(), b))
            }
        };
        let sent = self
            .record_file(b, file_id, &target, &copied, template)
            .await;
        if !matches!(sent, Ok(Sent::Imported { .. })) {
            if let Err(e) = self.uploads.delete(&target).await {
                tracing::warn!(blob = %target, error = %e, "could not delete an unrecorded copy");
            }
        }
        let sent = sent?;
        if matches!(sent, Sent::Imported { .. }) && b.after_import == "delete" {
            if let Err(e) = source.delete_at(&b.blob, &b.etag).await {
                tracing::warn!(source_id = %b.source_id, blob = %b.blob, error = %e,
                    "could not delete an imported blob from its source");
            }
        }
        Ok(sent)
    }

    /// The source's template at its latest version (`Some(None)` for a source without one);
    /// `None` when it was deleted.
    async fn template(&self, b: &Claimed) -> anyhow::Result<Option<Option<(String, i32, String)>>> {
        let Some(name) = &b.template_name else {
            return Ok(Some(None));
        };
        let found = db::templates::find(self.db, &b.tenant_id, name, None).await?;
        Ok(found.map(|t| {
            let policy = match b.on_invalid.as_deref().map(str::parse::<OnInvalid>) {
                Some(Ok(p)) => p,
                _ => t.on_invalid,
            };
            Some((t.name, t.version, policy.as_str().to_owned()))
        }))
    }

    /// Writes the file, task and outbox message, and marks the blob imported, in one
    /// transaction.
    async fn record_file(
        &self,
        b: &Claimed,
        file_id: Uuid,
        target: &str,
        copied: &Copied,
        template: Option<(String, i32, String)>,
    ) -> anyhow::Result<Sent> {
        let origin = Origin {
            source_id: b.source_id,
            blob: b.blob.clone(),
            etag: copy::unquoted(&b.etag).to_owned(),
        };
        let uploaded_by = format!("source:{}", b.source_id);
        let upload = NewUpload {
            file: NewSourceFile {
                id: file_id,
                tenant_id: &b.tenant_id,
                uploaded_by: &uploaded_by,
                file_name: copy::file_name(&b.blob),
                content_type: copied.format.content_type(),
                format: copied.format,
                size_bytes: i64::try_from(copied.size).unwrap_or(i64::MAX),
                sha256: &copied.sha256,
                blob_name: target,
                idempotency_key: None,
                template: template
                    .as_ref()
                    .map(|(name, version, on_invalid)| TemplateRef {
                        name,
                        version: *version,
                        on_invalid,
                    }),
                metadata: b.metadata.as_ref(),
                session: None,
                origin: Some(&origin),
            },
            task_id: Uuid::now_v7(),
            message_id: Uuid::now_v7(),
            inline: copied.small.as_deref(),
            traceparent: None,
        };
        let own = db::limits::overrides(self.db, &b.tenant_id).await?;
        let quota = own
            .storage_quota_bytes
            .unwrap_or_else(|| i64::try_from(self.cfg.storage_quota_bytes).unwrap_or(i64::MAX));
        let mut tx = self.db.begin().await?;
        match db::uploads::insert(&mut tx, &upload, quota).await? {
            Recorded::OverQuota { used } => {
                tx.rollback().await?;
                let message = format!(
                    "the tenant stores {used} bytes of its quota of {quota}; the blob does not fit"
                );
                Ok(self.retry("quota_exceeded", message, b))
            }
            Recorded::Stored(file, task) => {
                if !source_blobs::imported(&mut tx, b.id, file.id).await? {
                    tx.rollback().await?;
                    return Ok(Sent::Lost);
                }
                tx.commit().await?;
                tracing::info!(source_id = %b.source_id, blob = %b.blob, source_file_id = %file.id,
                    task_id = %task.id, size_bytes = copied.size, "blob imported");
                Ok(Sent::Imported {
                    source_file_id: file.id,
                })
            }
        }
    }
}
