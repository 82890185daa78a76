//! `api`: serve the upload API (default), apply migrations (`api migrate`), manage API keys
//! (`api keys …`) or tenants' limits (`api tenants …`).

use std::time::Duration;

use clap::Parser as _;
use tokio_util::sync::CancellationToken;

use api::config::{Cli, Command};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut cli = Cli::parse();
    let telemetry = shared::telemetry::init(&cli.config.telemetry, "sheetrelay-api");
    apply_deprecated_settings(&mut cli.config);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Migrate => {
            api::migrate(&cli.config).await?;
            tracing::info!("migrations applied");
        }
        Command::Keys(command) => api::keys_cli::run(&cli.config, command).await?,
        Command::Tenants(command) => api::tenants_cli::run(&cli.config, command).await?,
        Command::Serve => {
            let token = CancellationToken::new();
            shared::shutdown::cancel_on_signal(token.clone());
            let served = api::run(cli.config, token).await;
            // The last requests' spans, exported before the process goes.
            let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
            served?;
        }
    }
    Ok(())
}

/// `SHUTDOWN_GRACE_SECS` (whole seconds) was renamed `SHUTDOWN_GRACE` (a duration such as
/// `25s`); the old name is still read, with a warning, for one release.
fn apply_deprecated_settings(cfg: &mut api::Config) {
    if std::env::var_os("SHUTDOWN_GRACE").is_some() {
        return;
    }
    let Ok(secs) = std::env::var("SHUTDOWN_GRACE_SECS") else {
        return;
    };
    match secs.trim().parse::<u64>() {
        Ok(secs) => {
            cfg.shutdown_grace = Duration::from_secs(secs);
            tracing::warn!(
                "SHUTDOWN_GRACE_SECS is deprecated and will be removed in the next release: \
                 use SHUTDOWN_GRACE={secs}s"
            );
        }
        Err(_) => tracing::warn!(value = %secs, "ignoring SHUTDOWN_GRACE_SECS: not whole seconds"),
    }
}
