//! Graceful shutdown: one `CancellationToken` cancelled by Ctrl-C or SIGTERM. Loops check it
//! between iterations and while idle, never in the middle of a claimed batch.

use tokio_util::sync::CancellationToken;

/// Cancels `token` on the first Ctrl-C or SIGTERM (what container platforms send before killing).
pub fn cancel_on_signal(token: CancellationToken) {
    tokio::spawn(async move {
        let ctrl_c = tokio::signal::ctrl_c();
        #[cfg(unix)]
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot listen for SIGTERM");
                    std::future::pending::<()>().await
                }
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => tracing::info!("Ctrl-C received, shutting down"),
            _ = term => tracing::info!("SIGTERM received, shutting down"),
        }
        token.cancel();
    });
}
