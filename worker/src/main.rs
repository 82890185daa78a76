//! `worker run [--role all|relay|consumer] [--drain]`, `worker outbox stats|requeue-dead`, and
//! the hidden `worker parse-child …` that the consumer starts to parse files in isolation.

use std::future::Future;
use std::process::ExitCode;

use clap::Parser as _;
use worker::config::{Cli, Command};
use worker::parse::isolate;

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run(cfg) => in_runtime(async move {
            shared::telemetry::init(&cfg.telemetry);
            let token = tokio_util::sync::CancellationToken::new();
            shared::shutdown::cancel_on_signal(token.clone());
            worker::run(*cfg, token).await
        }),
        Command::Outbox(args) => in_runtime(async move {
            shared::telemetry::init(&args.telemetry);
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
