//! `keyset`: the rows page of one file (`GET /api/v1/files/{id}/rows?after=…`) on a database
//! holding only that file, then again once `BENCH_KEYSET_ROWS` more rows (default 100M; 2M with
//! `--quick`) of many other files are stored beside it. The rows are generated in bulk
//! ([`crate::bulk`]); the pages are read through the release api at random offsets of the
//! probe file, the same offsets both times, one request at a time.

use std::time::Instant;

use anyhow::{ensure, Context as _};

use crate::bulk::{generate, insert_many};
use crate::env::{self, count, fresh_env};
use crate::report::{median, quantile, Run};

/// Rows of the file whose pages are read.
const PROBE_ROWS: i64 = 1_000_000;
/// Rows per page, the endpoint's default.
const PAGE: i64 = 100;
/// Pages timed each time, after [`WARM_UP`] untimed ones.
const PAGES: usize = 1_000;
const WARM_UP: usize = 50;

pub async fn run(other_rows: i64) -> anyhow::Result<Run> {
    let env = fresh_env().await;
    let probe = generate(&env, "probe", 1, PROBE_ROWS, 0).await?[0];
    let mut api = env::spawn_api(&env, 100 * 1024 * 1024).await?;
    let result = async {
        let client = env::tenant_client(&env, Some("probe")).await?;
        let url = format!("{}/api/v1/files/{probe}/rows", api.base_url);
        // The same random offsets both times (a fixed LCG).
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let offsets: Vec<i64> = (0..WARM_UP + PAGES)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((state >> 33) % (PROBE_ROWS - PAGE) as u64) as i64
            })
            .collect();

        let mut run = Run::default();
        let alone = pages(&client, &url, &offsets).await?;
        put(&mut run, "alone", &alone);

        let started = Instant::now();
        insert_many(&env.db, "others", other_rows).await?;
        sqlx::query("VACUUM ANALYZE parsed_row_chunks")
            .execute(&env.db)
            .await?;
        let generated_s = started.elapsed().as_secs_f64();
        let stored = count(
            &env.db,
            "SELECT coalesce(sum(row_count), 0)::bigint FROM parsed_row_chunks",
        )
        .await?;
        let files = count(&env.db, "SELECT count(*) FROM source_files").await?;
        let bytes = count(
            &env.db,
            "SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint FROM pg_inherits
             WHERE inhparent = 'parsed_row_chunks'::regclass",
        )
        .await?;

        let crowded = pages(&client, &url, &offsets).await?;
        put(&mut run, "crowded", &crowded);
        run.put("crowded.rows_stored", "rows", stored as f64);
        run.put("crowded.files_stored", "files", files as f64);
        run.put(
            "crowded.row_store_bytes_per_row",
            "B",
            bytes as f64 / stored as f64,
        );
        run.put(
            "crowded_over_alone_p99_pct",
            "%",
            crowded.p99_ms / alone.p99_ms * 100.0,
        );
        run.note(format!(
            "keyset: {PAGES} pages of {PAGE} rows at random offsets of a {PROBE_ROWS}-row file (after {WARM_UP} untimed), one request at a time through target/release/api, first with that file alone, then with {stored} rows in {files} files stored (generated in SQL in {generated_s:.0} s, then VACUUM ANALYZE); row_store_bytes_per_row = pg_total_relation_size of parsed_row_chunks' partitions / rows, lz4-compressed chunks of 256 rows and their index"
        ));
        Ok(run)
    }
    .await;
    env::terminate(&mut api.child).await;
    result
}

struct Pages {
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

fn put(run: &mut Run, prefix: &str, p: &Pages) {
    run.put(format!("{prefix}.page_p50_ms"), "ms", p.p50_ms);
    run.put(format!("{prefix}.page_p99_ms"), "ms", p.p99_ms);
    run.put(format!("{prefix}.page_max_ms"), "ms", p.max_ms);
}

/// Reads a page at each offset; the timings of all but the first [`WARM_UP`]. Each page must
/// be whole: [`PAGE`] rows, starting right after its offset.
async fn pages(client: &reqwest::Client, url: &str, offsets: &[i64]) -> anyhow::Result<Pages> {
    let mut ms = Vec::with_capacity(PAGES);
    for (i, &after) in offsets.iter().enumerate() {
        let t0 = Instant::now();
        let resp = client
            .get(format!("{url}?after={after}&limit={PAGE}"))
            .send()
            .await?;
        ensure!(
            resp.status().is_success(),
            "page after {after}: {}",
            resp.status()
        );
        let body: serde_json::Value = resp.json().await.context("page body")?;
        let elapsed = t0.elapsed().as_secs_f64() * 1e3;
        let rows = body["rows"].as_array().context("rows")?;
        ensure!(
            rows.len() as i64 == PAGE && rows[0]["index"].as_i64() == Some(after + 1),
            "page after {after}: {} rows from {}",
            rows.len(),
            rows[0]["index"]
        );
        if i >= WARM_UP {
            ms.push(elapsed);
        }
    }
    Ok(Pages {
        p50_ms: median(&ms),
        p99_ms: quantile(&ms, 0.99),
        max_ms: quantile(&ms, 1.0),
    })
}
