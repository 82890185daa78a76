//! Tenant limits: an upload rate (a token bucket per tenant in the unlogged `upload_buckets`, so
//! every api replica draws from the same one) and a storage quota (against the shards of
//! `tenant_usage`, which triggers keep equal to the bytes of the tenant's files and templates). A tenant's own values in
//! `tenant_limits` override the settings' defaults, and so does its [`Retention`] (how long its
//! files are kept; the worker's retention job deletes older ones).

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

/// Uploads per period, with a burst of as many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadRate {
    pub count: u32,
    /// 1 (per second) or 60 (per minute).
    pub per_secs: u32,
}

impl std::fmt::Display for UploadRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let unit = if self.per_secs == 60 { "min" } else { "s" };
        write!(f, "{}/{unit}", self.count)
    }
}

impl std::str::FromStr for UploadRate {
    type Err = String;

    /// `20/s` or `600/min`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (count, unit) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?}: expected <N>/s or <N>/min"))?;
        let count: u32 = count
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0 && n <= 1_000_000)
            .ok_or_else(|| format!("{s:?}: the count must be a whole number from 1 to 1000000"))?;
        let per_secs = match unit.trim() {
            "s" => 1,
            "min" => 60,
            _ => return Err(format!("{s:?}: the period must be s or min")),
        };
        Ok(UploadRate { count, per_secs })
    }
}

/// The shortest retention accepted: a shorter one is far more likely a slip (`--retention 30`
/// reads as 30 seconds) than a wish to delete every file within the hour.
pub const MIN_RETENTION: Duration = Duration::from_secs(3600);

/// How long a tenant's files are kept: `none` (for ever) or a duration in the settings' one
/// vocabulary ([`crate::config::parse_duration`]: `30d`, `12h`), at least [`MIN_RETENTION`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retention(pub Option<Duration>);

impl std::fmt::Display for Retention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // In the largest whole unit, as people write it (`30d`, `36h`), and read back as is.
        let Some(d) = self.0 else {
            return f.write_str("none");
        };
        let secs = d.as_secs();
        let (n, unit) = [(86_400, "d"), (3600, "h"), (60, "m")]
            .into_iter()
            .find(|(unit, _)| secs % unit == 0)
            .map_or((secs, "s"), |(size, unit)| (secs / size, unit));
        write!(f, "{n}{unit}")
    }
}

impl std::str::FromStr for Retention {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "none" {
            return Ok(Retention(None));
        }
        let d = crate::config::parse_duration(s)?;
        if d < MIN_RETENTION {
            return Err(format!(
                "{s:?}: a retention must be at least 1h (or none, to keep files for ever)"
            ));
        }
        Ok(Retention(Some(d)))
    }
}

impl Retention {
    /// Whole seconds, as `tenant_limits.retention_secs` holds them.
    pub fn secs(self) -> Option<i64> {
        self.0
            .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    }
}

/// A tenant's own limits; `None` where the default applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub upload_rate: Option<UploadRate>,
    pub storage_quota_bytes: Option<i64>,
    pub retention: Option<Retention>,
    pub updated_at: Option<DateTime<Utc>>,
}

pub async fn overrides(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<Overrides> {
    let row = sqlx::query!(
        "SELECT upload_rate, upload_rate_secs, storage_quota_bytes, retention_secs, updated_at
         FROM tenant_limits WHERE tenant_id = $1",
        tenant
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map_or_else(Overrides::default, |r| Overrides {
        upload_rate: r
            .upload_rate
            .zip(r.upload_rate_secs)
            .map(|(c, p)| UploadRate {
                count: c.unsigned_abs(),
                per_secs: p.unsigned_abs(),
            }),
        storage_quota_bytes: r.storage_quota_bytes,
        retention: r
            .retention_secs
            .map(|s| Retention(Some(Duration::from_secs(s.unsigned_abs())))),
        updated_at: Some(r.updated_at),
    }))
}

/// Sets the given overrides of `tenant` (the others stay as they are).
pub async fn set(
    db: impl PgExecutor<'_>,
    tenant: &str,
    upload_rate: Option<UploadRate>,
    storage_quota_bytes: Option<i64>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO tenant_limits (tenant_id, upload_rate, upload_rate_secs, storage_quota_bytes)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant_id) DO UPDATE SET
             upload_rate = coalesce(EXCLUDED.upload_rate, tenant_limits.upload_rate),
             upload_rate_secs = coalesce(EXCLUDED.upload_rate_secs, tenant_limits.upload_rate_secs),
             storage_quota_bytes = coalesce(EXCLUDED.storage_quota_bytes,
                                            tenant_limits.storage_quota_bytes),
             updated_at = now()",
        tenant,
        upload_rate.map(|r| r.count as i32),
        upload_rate.map(|r| r.per_secs as i32),
        storage_quota_bytes
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Sets `tenant`'s own retention; `none` drops it, so the RETENTION setting applies again.
pub async fn set_retention(
    db: impl PgExecutor<'_>,
    tenant: &str,
    retention: Retention,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO tenant_limits (tenant_id, retention_secs) VALUES ($1, $2)
         ON CONFLICT (tenant_id) DO UPDATE SET
             retention_secs = EXCLUDED.retention_secs, updated_at = now()",
        tenant,
        retention.secs()
    )
    .execute(db)
    .await?;
    Ok(())
}

/// What [`admit`] found for an upload about to start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Admission {
    /// `None` when an upload was taken from the tenant's bucket, else how long until there is one.
    pub wait: Option<Duration>,
    /// The tenant's storage quota (its own, else the default given).
    pub quota_bytes: i64,
    /// The bytes the tenant stores now.
    pub used_bytes: i64,
}

/// Takes one upload from `tenant`'s bucket (its own rate, else `default_rate`) and reads its
/// quota (its own, else `default_quota`) and usage, in one statement: one round trip per upload
/// where there were four, each of which woke a Postgres backend.
///
/// The bucket holds at most the rate's count and refills continuously; a take is one
/// conditional upsert, so concurrent takes never spend the same token. The table is unlogged,
/// so the statement's commit does not wait for a disk write while it holds the tenant's bucket.
pub async fn admit(
    db: impl PgExecutor<'_>,
    tenant: &str,
    default_rate: UploadRate,
    default_quota: i64,
) -> sqlx::Result<Admission> {
    let row = sqlx::query!(
        r#"WITH own AS (
               SELECT upload_rate, upload_rate_secs, storage_quota_bytes
               FROM tenant_limits WHERE tenant_id = $1
           ), rate AS (
               SELECT coalesce((SELECT upload_rate FROM own), $2)::float8 AS burst,
                      coalesce((SELECT upload_rate FROM own), $2)::float8
                          / coalesce((SELECT upload_rate_secs FROM own), $3)::float8
                          AS per_second
           ), taken AS (
               INSERT INTO upload_buckets AS b (tenant_id, tokens, refilled_at)
               SELECT $1, burst - 1, now() FROM rate
               ON CONFLICT (tenant_id) DO UPDATE SET
                   tokens = least((SELECT burst FROM rate),
                                  b.tokens + extract(epoch FROM now() - b.refilled_at)::float8
                                      * (SELECT per_second FROM rate)) - 1,
                   refilled_at = now()
               WHERE least((SELECT burst FROM rate),
                           b.tokens + extract(epoch FROM now() - b.refilled_at)::float8
                               * (SELECT per_second FROM rate)) >= 1
               RETURNING 1
           )
           SELECT EXISTS (SELECT FROM taken) AS "taken!",
                  (SELECT least(r.burst, b.tokens
                                + extract(epoch FROM now() - b.refilled_at)::float8 * r.per_second)
                   FROM upload_buckets b WHERE b.tenant_id = $1) AS available,
                  r.per_second AS "per_second!",
                  coalesce((SELECT storage_quota_bytes FROM own), $4) AS "quota_bytes!",
                  coalesce((SELECT sum(stored_bytes) FROM tenant_usage WHERE tenant_id = $1),
                           0)::bigint AS "used_bytes!"
           FROM rate r"#,
        tenant,
        default_rate.count as i32,
        default_rate.per_secs as i32,
        default_quota
    )
    .fetch_one(db)
    .await?;
    let wait = (!row.taken).then(|| {
        let missing = (1.0 - row.available.unwrap_or(0.0)).max(0.0);
        Duration::from_secs_f64(missing / row.per_second)
    });
    Ok(Admission {
        wait,
        quota_bytes: row.quota_bytes,
        used_bytes: row.used_bytes,
    })
}

/// The bytes `tenant` stores (no lock: the check before a file is streamed).
pub async fn usage(db: impl PgExecutor<'_>, tenant: &str) -> sqlx::Result<i64> {
    let n = sqlx::query_scalar!(
        r#"SELECT coalesce(sum(stored_bytes), 0)::bigint AS "used!" FROM tenant_usage
           WHERE tenant_id = $1"#,
        tenant
    )
    .fetch_one(db)
    .await?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_is_none_or_a_duration_of_at_least_an_hour_shown_in_its_largest_unit() {
        let parse = |s: &str| s.parse::<Retention>();
        assert_eq!(parse("none"), Ok(Retention(None)));
        assert_eq!(
            parse("30d"),
            Ok(Retention(Some(Duration::from_secs(30 * 86_400))))
        );
        assert!(parse("59m").is_err_and(|e| e.contains("at least 1h")));
        assert!(parse("soon").is_err_and(|e| e.contains("invalid duration")));
        for (given, shown) in [
            ("30d", "30d"),
            ("36h", "36h"),
            ("90m", "90m"),
            ("none", "none"),
        ] {
            let retention = parse(given).expect("valid");
            assert_eq!(retention.to_string(), shown);
            assert_eq!(parse(shown), Ok(retention), "{shown} reads back");
        }
        assert_eq!(parse("1h 30s").expect("valid").to_string(), "3630s");
        assert_eq!(Retention(None).secs(), None);
        assert_eq!(parse("2h").expect("valid").secs(), Some(7200));
    }
}
