//! The `worker` binary's command line. Besides checking `--help`, this test is why
//! `cargo test --workspace` builds `target/<profile>/worker`, which the workspace's integration
//! tests (`tests/it/worker_process.rs`) run as a child process.

use std::process::Command;

fn worker(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_worker"))
        .args(args)
        .env_clear()
        .output()
        .expect("run the worker binary")
}

#[test]
fn run_help_documents_every_setting_with_its_environment_variable() {
    let out = worker(&["run", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for var in [
        "DATABASE_URL",
        "AZURE_STORAGE_CONNECTION_STRING",
        "QUEUE_NAME",
        "BLOB_CONTAINER",
        "WORKER_ROLE",
        "QUEUE_MESSAGE_ENCODING",
        "RELAY_BATCH_SIZE",
        "RELAY_MAX_ATTEMPTS",
        "OUTBOX_RETENTION",
        "CONSUMER_BATCH_SIZE",
        "VISIBILITY_TIMEOUT",
        "MAX_DEQUEUE_COUNT",
        "SHUTDOWN_GRACE",
        "PARSER_EXE",
    ] {
        assert!(
            help.contains(var),
            "`worker run --help` does not mention {var}:\n{help}"
        );
    }
    assert!(help.contains("--drain"));
}

#[test]
fn the_parse_child_subcommand_is_hidden_and_needs_its_arguments() {
    let out = worker(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("outbox") && help.contains("run"));
    assert!(!help.contains("parse-child"));
    let child = worker(&["parse-child"]);
    assert!(!child.status.success());
}
