//! Where a process's `/metrics` listens. An address set in `METRICS_ADDR` is the operator's
//! choice and is bound or refused. Without one, each binary has its own default (the api's and
//! the worker's differ, so both run side by side on one host), and when another process holds
//! that default (a second worker beside the first, one per role) the listener moves to a port
//! the system picks on the same interface and says where: defaults that stop a process would
//! fail exactly the user who configured nothing.

use std::io::ErrorKind;
use std::net::SocketAddr;

use anyhow::Context as _;
use tokio::net::TcpListener;

/// Binds the `/metrics` listener on `configured` (`METRICS_ADDR`) when it is set, failing when
/// that address cannot be bound; otherwise on `default`, or, when that one is in use, on a free
/// port of the same interface, with a warning that names the address taken instead. The bound
/// address is the listener's `local_addr`.
pub async fn bind(
    configured: Option<SocketAddr>,
    default: SocketAddr,
) -> anyhow::Result<TcpListener> {
    if let Some(addr) = configured {
        return TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr} (METRICS_ADDR)"));
    }
    match TcpListener::bind(default).await {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            let any_port = SocketAddr::new(default.ip(), 0);
            let listener = TcpListener::bind(any_port).await.with_context(|| {
                format!("cannot listen on {any_port} for /metrics ({default} is in use)")
            })?;
            let taken = listener.local_addr().context("metrics listener address")?;
            tracing::warn!(
                default = %default,
                metrics_addr = %taken,
                "the default metrics address is in use (another process on this host); serving /metrics on {taken} instead (set METRICS_ADDR to choose)"
            );
            Ok(listener)
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "cannot listen on {default} (the default METRICS_ADDR)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn held() -> (TcpListener, SocketAddr) {
        let holder = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = holder.local_addr().expect("addr");
        (holder, addr)
    }

    #[tokio::test]
    async fn a_taken_default_moves_to_a_free_port_on_the_same_interface() {
        let (_holder, default) = held().await;
        let listener = bind(None, default).await.expect("falls back");
        let bound = listener.local_addr().expect("addr");
        assert_eq!(bound.ip(), default.ip());
        assert_ne!(bound.port(), default.port());
    }

    #[tokio::test]
    async fn a_free_default_is_used() {
        let (holder, default) = held().await;
        drop(holder);
        let listener = bind(None, default).await.expect("binds");
        assert_eq!(listener.local_addr().expect("addr"), default);
    }

    #[tokio::test]
    async fn a_taken_configured_address_is_an_error() {
        let (_holder, configured) = held().await;
        let (_other, default) = held().await;
        let error = bind(Some(configured), default)
            .await
            .expect_err("the operator's address is not replaced");
        assert!(
            format!("{error:#}").contains(&format!("cannot listen on {configured} (METRICS_ADDR)")),
            "{error:#}"
        );
    }
}
