//! `/metrics` with the default addresses: the real `api` binary and two `worker` binaries (a
//! relay and a consumer, as a host running the roles apart has them), none given
//! `METRICS_ADDR`, all serve their metrics and keep running. The api and the worker have
//! different defaults, and a worker whose default another process holds takes a free port and
//! says so. Whatever else holds the default ports on the machine running the tests, each
//! process either serves on its default or warns that it did not.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use harness::worker::{WorkerEnv, WorkerProcess};
use shared::metrics::catalogue as names;

use crate::observability::{logged_metrics_addr, scrape};

/// The warning of a process whose default metrics address was taken.
const DEFAULT_IN_USE: &str = "the default metrics address is in use";

/// Waits until `process` serves `/metrics` (at the address its log names) with `metric` in it,
/// failing at once, with its log, if it exits first. Returns the address. `poke`, when given, is
/// requested on each round (the api's series appear with its first request).
async fn serving(
    process: &mut WorkerProcess,
    what: &str,
    metric: &str,
    poke: Option<&str>,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = process.child.try_wait().expect("poll the process") {
            panic!("the {what} exited ({status}); log:\n{}", process.log());
        }
        if let Some(url) = poke {
            let _ = reqwest::get(url).await;
        }
        if let Some(addr) = logged_metrics_addr(&process.log()) {
            if let Some(text) = scrape(&format!("http://{addr}/metrics")).await {
                if text.contains(metric) {
                    return addr;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "the {what} served no /metrics within 60 s; log:\n{}",
            process.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Its default, or a warning that names the address taken instead.
fn on_default_or_says_why(process: &WorkerProcess, addr: &str, default: &str, what: &str) {
    let log = process.log();
    assert!(
        addr == default || (log.contains(DEFAULT_IN_USE) && log.contains(addr)),
        "the {what} serves /metrics on {addr}, not its default {default}, without saying so; log:\n{log}"
    );
}

#[tokio::test]
async fn the_api_and_two_workers_on_one_host_serve_metrics_without_metrics_addr() {
    let env = WorkerEnv::new().await;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut api = env.api_command(&[]);
    api.env("LISTEN_ADDR", format!("127.0.0.1:{port}"));
    let mut api = WorkerProcess::spawn(api);
    let healthz = format!("http://127.0.0.1:{port}/healthz");
    let api_addr = serving(&mut api, "api", names::HTTP_REQUESTS, Some(&healthz)).await;

    let worker = |role: &str| {
        let mut cmd = env.command(&["run", "--role", role]);
        cmd.env_remove("METRICS_ADDR");
        WorkerProcess::spawn(cmd)
    };
    let mut relay = worker("relay");
    let relay_addr = serving(&mut relay, "relay worker", names::OUTBOX_SENDS, None).await;
    let mut consumer = worker("consumer");
    let consumer_addr = serving(
        &mut consumer,
        "consumer worker",
        names::CONSUMER_MESSAGES,
        None,
    )
    .await;

    on_default_or_says_why(&api, &api_addr, "127.0.0.1:9090", "api");
    on_default_or_says_why(&relay, &relay_addr, "127.0.0.1:9091", "relay worker");
    on_default_or_says_why(
        &consumer,
        &consumer_addr,
        "127.0.0.1:9091",
        "consumer worker",
    );
    assert_ne!(relay_addr, consumer_addr);
    assert_ne!(api_addr, relay_addr);
    // All three still run, each serving its own metrics.
    for (process, addr, what) in [
        (&mut api, &api_addr, "api"),
        (&mut relay, &relay_addr, "relay worker"),
        (&mut consumer, &consumer_addr, "consumer worker"),
    ] {
        assert!(
            process.child.try_wait().expect("poll").is_none(),
            "the {what} exited; log:\n{}",
            process.log()
        );
        assert!(
            scrape(&format!("http://{addr}/metrics")).await.is_some(),
            "the {what} stopped serving /metrics"
        );
    }
}
