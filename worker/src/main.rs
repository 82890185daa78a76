//! `worker run [--role all|relay|consumer] [--drain] [--max-runtime D] [--max-messages N]`,
//! `worker outbox stats|requeue-dead`, `worker task show <id>`, and the hidden
//! `worker parse-child …` that the consumer starts to parse files in isolation.
//!
//! Exit codes, for job platforms: 0 done (drained, a bound reached, or stopped by a signal with
//! in-flight work finished or released); 1 failed (a dependency refuses us, start-up failed, or
//! the loops did not stop in time; any other loop failure restarts that loop, see
//! [`worker::supervisor`]); 2 the command line or a setting is invalid (clap).

// Product functions stay short enough to read at once (clippy's default, 100 lines); the
// workspace lints cannot be extended per crate, so the lint is switched on here.
#![warn(clippy::too_many_lines)]

use std::future::Future;
use std::process::ExitCode;

use clap::Parser as _;
use worker::config::{Cli, Command};
use worker::parse::isolate;

/// `service.name` of the worker's spans unless `OTEL_SERVICE_NAME` says otherwise.
const SERVICE_NAME: &str = "sheetrelay-worker";

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(cfg) => in_runtime(async move {
            let telemetry = shared::telemetry::init(&cfg.telemetry, SERVICE_NAME);
            let token = tokio_util::sync::CancellationToken::new();
            shared::shutdown::cancel_on_signal(token.clone());
            let ran = worker::run(*cfg, token).await;
            // A job replica exits right after: its last spans are exported first.
            let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
            ran
        }),
        Command::Task(args) => in_runtime(async move {
            let _telemetry = shared::telemetry::init(&args.telemetry, SERVICE_NAME);
            worker::task_cli::run(&args).await
        }),
        Command::Outbox(args) => in_runtime(async move {
            let _telemetry = shared::telemetry::init(&args.telemetry, SERVICE_NAME);
            worker::outbox_cli::run(&args).await
        }),
        // A parse child starts no runtime: its parse is synchronous, under a memory limit.
        Command::ParseChild(args) => isolate::child_main(args),
    }
}

/// Runs a command on a new async runtime; failure is logged and exits non-zero.
fn in_runtime(command: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("worker: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "worker failed");
            eprintln!("worker: {e:#}");
            ExitCode::FAILURE
        }
    }
}
