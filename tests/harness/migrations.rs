//! The schema as it was before a migration: a test or benchmark of a migration fills a database
//! made with the migrations before it, then runs [`shared::db::MIGRATOR`] for the rest.

use std::path::Path;

use sqlx::migrate::Migrator;
use sqlx::PgPool;

/// A migrator of the repository's migrations older than `version`, read from copies in `dir`
/// (their checksums are those of [`shared::db::MIGRATOR`], which then applies only the rest).
pub async fn before(version: i64, dir: &Path) -> Migrator {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    for entry in std::fs::read_dir(&source).expect("migrations") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let older = name
            .get(..14)
            .and_then(|v| v.parse::<i64>().ok())
            .is_some_and(|v| v < version);
        if older {
            std::fs::copy(&path, dir.join(name)).expect("copy");
        }
    }
    Migrator::new(dir).await.expect("migrator")
}

/// A new database at the schema before migration `version`, and a pool on it.
pub async fn database_before(version: i64) -> PgPool {
    let url = crate::services::fresh_database().await;
    let db = PgPool::connect(&url).await.expect("connect");
    let dir = tempfile::tempdir().expect("dir");
    // The migrator holds the migrations it read; the copies can go.
    before(version, dir.path())
        .await
        .run(&db)
        .await
        .expect("the schema before the migration");
    db
}

/// The first migration of the partitioned row store.
pub const ROW_STORE_PARTITIONS: i64 = 20261129000001;

/// The first migration of the partitioned event log.
pub const EVENT_LOG_PARTITIONS: i64 = 20261130000001;

/// The migration that splits each tenant's usage into shards.
pub const USAGE_SHARDS: i64 = 20261202000001;
