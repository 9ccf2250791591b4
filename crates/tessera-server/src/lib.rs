//! An Open Inference Protocol server (KServe v2 / Triton HTTP) for Tessera models: what
//! `tessera serve` runs. Stock clients work unchanged, `tritonclient[http]` with its default
//! binary tensor data included, so Tessera can run behind KServe like any v2 runtime.
//!
//! * [`protocol`]: the JSON messages; [`codec`]: request bodies to tensors and back (JSON
//!   `data`, flat or nested, and the binary tensor data extension).
//! * [`registry`]: the served models (`--model NAME=PATH`, or a model repository folder).
//! * [`worker`]: inference off the async runtime, on each model's own threads behind a
//!   bounded queue (full = 503), with optional dynamic batching.
//! * [`routes`]: the axum router; [`metrics`]: Prometheus at `/metrics`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tessera_server::ServerError> {
//! use tessera_server::{ModelSpec, Server, ServerConfig};
//! let config = ServerConfig::new(vec![ModelSpec::parse("cls=model.onnx")?]);
//! let server = Server::bind(config).await?;
//! println!("listening on {}", server.local_addr());
//! server.run_until_signal().await
//! # }
//! ```

pub mod codec;
pub mod error;
pub mod metrics;
pub mod protocol;
pub mod registry;
pub mod routes;
pub mod worker;

pub use error::ServerError;
pub use registry::{ModelSpec, scan_repository};
pub use worker::Batching;

use axum::serve::ListenerExt;
use metrics::Metrics;
use registry::{Registry, WorkerOptions};
use routes::AppState;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tessera::{Session, SessionBuilder};
use tokio::net::TcpListener;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// Everything a server needs to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen (port 0: any free port, see [`Server::local_addr`]).
    pub addr: SocketAddr,
    /// The models to serve.
    pub models: Vec<ModelSpec>,
    /// Backend, threads and fallback for every model's session.
    pub session: SessionBuilder,
    /// Threads running each model; each runs one request (or batch) at a time.
    pub workers_per_model: usize,
    /// Requests a model may have waiting; one more is refused with 503.
    pub queue_capacity: usize,
    /// Largest request body accepted (413 above).
    pub max_body_bytes: usize,
    /// Longest a request may wait and run (504 after).
    pub request_timeout: Duration,
    /// Dynamic batching, off unless set.
    pub batching: Option<Batching>,
    /// After the shutdown signal: how long to keep accepting requests while readiness answers
    /// 503, so that a load balancer stops routing here before connections are refused.
    pub drain_delay: Duration,
}

impl ServerConfig {
    /// Defaults: 127.0.0.1:8000, cpu, 1 worker per model, 64 queued, 64 MiB bodies, 60 s.
    pub fn new(models: Vec<ModelSpec>) -> ServerConfig {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 8000)),
            models,
            session: Session::builder(),
            workers_per_model: 1,
            queue_capacity: 64,
            max_body_bytes: 64 << 20,
            request_timeout: Duration::from_secs(60),
            batching: None,
            drain_delay: Duration::ZERO,
        }
    }
}

/// A server with its models loaded and its socket bound, not yet serving.
pub struct Server {
    listener: TcpListener,
    state: Arc<AppState>,
    max_body_bytes: usize,
    drain_delay: Duration,
}

impl Server {
    /// Loads every model (on a blocking thread) and binds the socket.
    pub async fn bind(config: ServerConfig) -> Result<Server, ServerError> {
        let metrics = Metrics::new()
            .map_err(|e| ServerError::Internal(format!("cannot set up metrics: {e}")))?;
        let options = WorkerOptions {
            session: config.session.clone(),
            workers_per_model: config.workers_per_model,
            queue_capacity: config.queue_capacity,
            batching: config.batching,
        };
        let specs = config.models.clone();
        let load_metrics = metrics.clone();
        let registry =
            tokio::task::spawn_blocking(move || Registry::load(&specs, &options, &load_metrics))
                .await
                .map_err(|e| ServerError::Internal(format!("model loading stopped: {e}")))??;
        let listener = TcpListener::bind(config.addr)
            .await
            .map_err(|source| ServerError::Io {
                context: format!("binding {}", config.addr),
                source,
            })?;
        let state = Arc::new(AppState {
            registry,
            metrics,
            request_timeout: config.request_timeout,
            ready: true.into(),
        });
        Ok(Server {
            listener,
            state,
            max_body_bytes: config.max_body_bytes,
            drain_delay: config.drain_delay,
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }

    /// The served models' names.
    pub fn model_names(&self) -> Vec<String> {
        self.state.registry.models.keys().cloned().collect()
    }

    /// Serves until `shutdown` completes; then readiness answers 503, requests are still served
    /// for the drain delay, and after it the server stops accepting connections, finishes every
    /// accepted request, and stops the workers.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let state = self.state.clone();
        // The handlers time requests out themselves (with a JSON error); this outer limit only
        // catches what they cannot, such as a client that never finishes sending its body.
        let outer_timeout = state.request_timeout + Duration::from_secs(5);
        let app = routes::router(state.clone(), self.max_body_bytes)
            .layer(TimeoutLayer::with_status_code(
                axum::http::StatusCode::REQUEST_TIMEOUT,
                outer_timeout,
            ))
            .layer(TraceLayer::new_for_http());
        let signal_state = state.clone();
        let drain_delay = self.drain_delay;
        // Small responses go out at once rather than waiting on Nagle's algorithm.
        let listener = self.listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!("cannot set TCP_NODELAY: {e}");
            }
        });
        let result = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                shutdown.await;
                signal_state.ready.store(false, Ordering::SeqCst);
                if !drain_delay.is_zero() {
                    tracing::info!("shutting down: not ready, still serving for {drain_delay:?}");
                    tokio::time::sleep(drain_delay).await;
                }
                tracing::info!("shutting down: finishing accepted requests");
            })
            .await
            .map_err(|source| ServerError::Io {
                context: "serving".into(),
                source,
            });
        let closing = state.clone();
        tokio::task::spawn_blocking(move || closing.registry.close())
            .await
            .map_err(|e| ServerError::Internal(format!("stopping the workers: {e}")))?;
        tracing::info!("stopped");
        result
    }

    /// Serves until SIGTERM or Ctrl-C.
    pub async fn run_until_signal(self) -> Result<(), ServerError> {
        self.run_until(shutdown_signal()).await
    }
}

/// Completes on SIGTERM (what Kubernetes sends) or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}
