//! The HTTP server of `run`: `/metrics` for Prometheus, `/` for a person, and `/-/healthy` and
//! `/-/ready` as Prometheus' own answer them; under a web configuration (`web/`), with TLS, basic
//! auth and headers; every connection bounded in number, time and memory.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{Semaphore, watch};

use super::accept_retry::{ACCEPT_PAUSE, AcceptRetry, Cause};
use super::page;
use super::prometheus::{self, ScrapeView};
use super::web::Web;

/// How many clients may be connected at once; more wait in the kernel's accept queue, holding
/// none of the daemon's descriptors or memory.
pub const MAX_CONNECTIONS: usize = 64;
/// A request head must arrive whole within this time; an idle keep-alive connection is closed
/// after it too (Prometheus reconnects at its next scrape).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// The most a connection buffers of a request (hyper's minimum is 8 KiB); a larger head is
/// answered with 431 and the connection closed. A scrape request is a few hundred bytes.
pub const MAX_REQUEST_HEAD: usize = 16 * 1024;
/// No connection outlives this, however slowly its client reads the response.
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// Serves `/metrics`, the page and the health checks on `listener` until the task is dropped.
/// Any local user can connect, so every connection is bounded in number, time and memory, and a
/// failed accept is never fatal: ingestion and exports go on whatever the clients do.
pub async fn serve(
    listener: tokio::net::TcpListener,
    scrape_views: watch::Receiver<Arc<ScrapeView>>,
    web: Option<Arc<Web>>,
) {
    let app = axum::Router::new()
        .route("/metrics", get(prometheus::metrics))
        .route("/", get(page::page))
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .with_state(scrape_views);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut retry = AcceptRetry::default();
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                if let Some(pause) = retry.after_error(&e) {
                    if pause.begins_episode {
                        match pause.cause {
                            Cause::Descriptors => crate::events::export::starved(&e, pause.wait),
                            Cause::Other => crate::events::export::accept_failing(&e, ACCEPT_PAUSE),
                        }
                    }
                    tokio::time::sleep(pause.wait).await;
                }
                continue;
            }
        };
        // One note per episode: accepts between failures do not end it, a quiet spell does.
        if retry.after_accept() {
            crate::events::export::accepting();
        }
        let (app, web) = (app.clone(), web.clone());
        tokio::spawn(async move {
            let _slot = slot;
            // Errors here are the client's (a timeout, a reset, a head too large, a failed
            // handshake): nothing to report.
            let _ = tokio::time::timeout(CONNECTION_LIFETIME, connection(stream, app, web)).await;
        });
    }
}

/// Serves one connection: as it is, or under the web configuration read again for it.
async fn connection(stream: tokio::net::TcpStream, app: Router, web: Option<Arc<Web>>) {
    let Some(web) = web else {
        return http(stream, app).await;
    };
    let tls = match web.current() {
        Ok(active) => active.tls.clone(),
        Err(invalid) => {
            // Said once per change of the file (a rebuild), not per connection.
            if web.newly_refused() {
                crate::events::export::web_config_refused(&web.refusal(invalid));
            }
            // Over plain HTTP each request is answered 500 below; a TLS handshake cannot be.
            if web.tls_at_start() {
                return;
            }
            None
        }
    };
    let guarded = {
        let web = web.clone();
        app.layer(axum::middleware::from_fn(move |request, next| {
            super::web::guard(web.clone(), request, next)
        }))
    };
    match &tls {
        None => http(stream, guarded).await,
        Some(tls) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
            if let Ok(Ok(stream)) = tokio::time::timeout(HEADER_READ_TIMEOUT, acceptor.accept(stream)).await {
                http(stream, guarded).await;
            }
        }
    }
}

/// HTTP/1.1 on `io`, bounded in time and memory.
async fn http<I>(io: I, app: Router)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(app);
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_REQUEST_HEAD)
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// 200 while the process runs, as Prometheus' own `/-/healthy`.
async fn healthy() -> &'static str {
    "reasonix-exporter is Healthy.\n"
}

/// 200 once the run's first reading of the ledger has ended, 503 before, as Prometheus' own
/// `/-/ready` (which answers 503 until its storage is up): a scrape before serves the store's
/// totals, a part of the ledger's history still to come.
async fn ready(State(views): State<watch::Receiver<Arc<ScrapeView>>>) -> (StatusCode, &'static str) {
    if views.borrow().ready {
        (StatusCode::OK, "reasonix-exporter is Ready.\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable\n")
    }
}
