//! The test harness's own services: the shared Postgres and Azurite start, a fresh database
//! accepts queries, a dedicated cluster can be taken down and brought back, and generated
//! names are valid Azure queue/container names.

use anyhow::Context as _;
use harness::services::{self, DedicatedPostgres};
use sqlx::{Connection as _, PgConnection};

#[tokio::test]
async fn a_fresh_database_is_empty_and_accepts_queries() -> anyhow::Result<()> {
    let url = services::fresh_database().await;
    let other = services::fresh_database().await;
    assert_ne!(url, other, "each call creates a new database");

    let mut conn = PgConnection::connect(&url).await.context("connect")?;
    let name: String = sqlx::query_scalar("select current_database()")
        .fetch_one(&mut conn)
        .await?;
    assert!(name.starts_with("t_"), "{name}");
    let tables: i64 = sqlx::query_scalar(
        "select count(*) from information_schema.tables where table_schema = 'public'",
    )
    .fetch_one(&mut conn)
    .await?;
    assert_eq!(tables, 0);
    Ok(())
}

#[tokio::test]
async fn a_dedicated_postgres_refuses_connections_while_stopped_and_accepts_them_after_restart(
) -> anyhow::Result<()> {
    let pg = DedicatedPostgres::start().await;
    let url = pg.create_database("outage").await;
    let mut conn = PgConnection::connect(&url).await.context("connect")?;
    sqlx::query("select 1").execute(&mut conn).await?;

    pg.stop().await;
    assert!(
        sqlx::query("select 1").execute(&mut conn).await.is_err(),
        "an open connection is closed by the shutdown"
    );
    assert!(PgConnection::connect(&url).await.is_err(), "stopped");

    pg.restart().await;
    let mut conn = PgConnection::connect(&url).await.context("reconnect")?;
    let one: i32 = sqlx::query_scalar("select 1").fetch_one(&mut conn).await?;
    assert_eq!(one, 1);
    Ok(())
}

#[tokio::test]
async fn azurite_answers_on_its_blob_and_queue_endpoints() -> anyhow::Result<()> {
    let services = services::services().await;
    assert!(services
        .storage_connection_string
        .contains(&format!("BlobEndpoint={};", services.blob_endpoint)));
    for endpoint in [&services.blob_endpoint, &services.queue_endpoint] {
        // Unsigned, so 403 AuthenticationFailed: what matters is that Azurite answers.
        let response = reqwest::get(format!("{endpoint}?comp=list")).await?;
        assert_eq!(response.status().as_u16(), 403, "{endpoint}");
    }
    Ok(())
}

#[test]
fn unique_names_are_valid_azure_names_and_never_repeat() {
    let names: Vec<String> = ["uploads", "Parse Tasks!", "", "--x--", &"a".repeat(80)]
        .iter()
        .map(|prefix| services::unique_name(prefix))
        .collect();
    for name in &names {
        assert!((3..=63).contains(&name.len()), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{name}"
        );
        assert!(!name.starts_with('-') && !name.ends_with('-'), "{name}");
        assert!(!name.contains("--"), "{name}");
    }
    assert!(names[1].starts_with("parse-tasks-"), "{}", names[1]);
    assert_ne!(
        services::unique_name("uploads"),
        services::unique_name("uploads")
    );
}
