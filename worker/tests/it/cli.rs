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
        "PARSE_MAX_ROWS",
        "PARSE_MAX_COLUMNS",
        "PARSE_MAX_CELL_BYTES",
        "PARSE_MAX_INFLATE_RATIO",
        "PARSE_MAX_INFLATED_BYTES",
        "PARSE_MEMORY_LIMIT",
        "PARSE_TIMEOUT",
        "PARSER_EXE",
    ] {
        assert!(
            help.contains(var),
            "`worker run --help` does not mention {var}:\n{help}"
        );
    }
    assert!(help.contains("--drain"));
}

/// Runs `worker parse-child` with `input` on its stdin.
fn parse_child(args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_worker"))
        .arg("parse-child")
        .args(args)
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the worker binary");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.as_bytes())
        .expect("write the request");
    drop(stdin);
    child.wait_with_output().expect("wait for the parse child")
}

#[test]
fn the_parse_child_subcommand_is_hidden_and_serves_files_named_on_stdin() {
    let out = worker(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("outbox") && help.contains("run"));
    assert!(!help.contains("parse-child"));
    assert!(!parse_child(&["--bogus"], "").status.success());
    assert!(!parse_child(&[], "not a request\n").status.success());

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("a.csv");
    std::fs::write(&path, "id\n1\n").expect("write the file");
    let request = format!(
        "{}\n",
        serde_json::json!({"format": "csv", "path": path.to_str().expect("a UTF-8 path")})
    );
    // Two requests, then the end of input: two complete answers and a clean exit.
    let out = parse_child(&[], &request.repeat(2));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tags: Vec<&str> = std::str::from_utf8(&out.stdout)
        .expect("frames are UTF-8")
        .lines()
        .map(|l| l.split('\t').next().unwrap_or(""))
        .collect();
    assert_eq!(tags, ["S", "R", "E", "D", "S", "R", "E", "D"]);
}
