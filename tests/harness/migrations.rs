//! The schema as it was before a migration: a test or benchmark of a migration fills a database
//! made with the migrations before it, then runs [`shared::db::MIGRATOR`] for the rest.

use std::path::Path;

use sqlx::migrate::Migrator;

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

/// The first migration of the partitioned row store.
pub const ROW_STORE_PARTITIONS: i64 = 20261129000001;
