//! `api`: serve the upload API (default) or apply migrations (`api migrate`).

use clap::Parser as _;
use tokio_util::sync::CancellationToken;

use api::config::{Cli, Command};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    shared::telemetry::init(&cli.config.telemetry);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Migrate => {
            api::migrate(&cli.config).await?;
            tracing::info!("migrations applied");
        }
        Command::Serve => {
            let token = CancellationToken::new();
            shared::shutdown::cancel_on_signal(token.clone());
            api::run(cli.config, token).await?;
        }
    }
    Ok(())
}
