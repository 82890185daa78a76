//! `worker run [--role all|relay|consumer] [--drain]`, `worker outbox stats|requeue-dead`, and
//! the hidden `worker parse-child …` that the consumer starts to parse files in isolation.

use std::process::ExitCode;

use clap::Parser as _;
use worker::config::{Cli, Command};
use worker::parse::isolate;

fn main() -> ExitCode {
    // A parse child must not start a runtime or read the worker's configuration.
    if std::env::args().nth(1).as_deref() == Some(isolate::CHILD_SUBCOMMAND) {
        return isolate::child_main();
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("worker: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(cfg) => {
                shared::telemetry::init(&cfg.telemetry);
                let token = tokio_util::sync::CancellationToken::new();
                shared::shutdown::cancel_on_signal(token.clone());
                worker::run(*cfg, token).await
            }
            Command::Outbox(args) => {
                shared::telemetry::init(&args.telemetry);
                worker::outbox_cli::run(&args).await
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "worker failed");
            eprintln!("worker: {e:#}");
            ExitCode::FAILURE
        }
    }
}
