//! The HTTP routes of the Open Inference Protocol, plus `/metrics`.

use crate::codec::{HEADER_LENGTH, decode_request, encode_response, select_outputs};
use crate::error::ServerError;
use crate::metrics::Metrics;
use crate::protocol::{ModelMetadata, ServerMetadata};
use crate::registry::Registry;
use crate::worker::Job;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What every handler shares.
pub struct AppState {
    pub registry: Registry,
    pub metrics: Metrics,
    pub request_timeout: Duration,
    /// False once shutdown has begun (`/v2/health/ready` then answers 503).
    pub ready: AtomicBool,
}

type Shared = State<Arc<AppState>>;

/// The router: protocol routes, `/metrics`, a JSON 404 for anything else, and a body limit.
pub fn router(state: Arc<AppState>, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2", get(server_metadata))
        .route("/v2/models/{name}", get(model_metadata))
        .route(
            "/v2/models/{name}/versions/{version}",
            get(model_metadata_version),
        )
        .route("/v2/models/{name}/ready", get(model_ready))
        .route(
            "/v2/models/{name}/versions/{version}/ready",
            get(model_ready_version),
        )
        .route("/v2/models/{name}/infer", post(infer))
        .route(
            "/v2/models/{name}/versions/{version}/infer",
            post(infer_version),
        )
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
}

async fn live() -> StatusCode {
    StatusCode::OK
}

async fn ready(State(state): Shared) -> StatusCode {
    if state.ready.load(Ordering::SeqCst) {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn server_metadata() -> Json<ServerMetadata> {
    Json(ServerMetadata {
        name: "tessera",
        version: env!("CARGO_PKG_VERSION"),
        extensions: vec!["binary_tensor_data"],
    })
}

async fn model_metadata(
    State(state): Shared,
    Path(name): Path<String>,
) -> Result<Json<ModelMetadata>, ServerError> {
    Ok(Json(state.registry.get(&name, None)?.metadata.clone()))
}

async fn model_metadata_version(
    State(state): Shared,
    Path((name, version)): Path<(String, String)>,
) -> Result<Json<ModelMetadata>, ServerError> {
    Ok(Json(
        state.registry.get(&name, Some(&version))?.metadata.clone(),
    ))
}

async fn model_ready(
    State(state): Shared,
    Path(name): Path<String>,
) -> Result<StatusCode, ServerError> {
    state.registry.get(&name, None)?;
    Ok(StatusCode::OK)
}

async fn model_ready_version(
    State(state): Shared,
    Path((name, version)): Path<(String, String)>,
) -> Result<StatusCode, ServerError> {
    state.registry.get(&name, Some(&version))?;
    Ok(StatusCode::OK)
}

async fn metrics(State(state): Shared) -> Result<Response, ServerError> {
    let text = state.metrics.render().map_err(ServerError::Internal)?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

async fn not_found() -> ServerError {
    ServerError::NotFound("no such route".into())
}

async fn method_not_allowed(method: axum::http::Method) -> ServerError {
    ServerError::MethodNotAllowed(format!("{method} is not allowed on this route"))
}

async fn infer(
    state: Shared,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServerError> {
    infer_inner(state, name, None, headers, body).await
}

async fn infer_version(
    state: Shared,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServerError> {
    infer_inner(state, name, Some(version), headers, body).await
}

async fn infer_inner(
    State(state): Shared,
    name: String,
    version: Option<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServerError> {
    let model = state.registry.get(&name, version.as_deref())?;
    let start = Instant::now();
    state.metrics.requests.with_label_values(&[&name]).inc();
    let result = run_inference(&state, &name, model, &headers, body).await;
    if result.is_err() {
        state.metrics.failures.with_label_values(&[&name]).inc();
    }
    state
        .metrics
        .request_latency
        .with_label_values(&[&name])
        .observe(start.elapsed().as_secs_f64());
    result
}

async fn run_inference(
    state: &AppState,
    name: &str,
    model: &crate::registry::LoadedModel,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ServerError> {
    let body = body.map_err(|rejection| {
        let message = format!("cannot read the request body: {}", rejection.body_text());
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ServerError::PayloadTooLarge(message)
        } else {
            ServerError::BadRequest(message)
        }
    })?;
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING) {
        let encoding = encoding.to_str().unwrap_or("?");
        if encoding != "identity" {
            return Err(ServerError::UnsupportedMediaType(format!(
                "Content-Encoding '{encoding}' is not supported; send the body uncompressed"
            )));
        }
    }
    let header_length = match headers.get(HEADER_LENGTH) {
        Some(value) => Some(value.to_str().map_err(|_| {
            ServerError::BadRequest("Inference-Header-Content-Length is not text".into())
        })?),
        None => None,
    };
    let decoded = decode_request(&body, header_length)?;
    let selected = select_outputs(&decoded.request, &model.output_names)?;

    let (reply, answer) = oneshot::channel();
    model.workers.submit(Job {
        inputs: decoded.inputs,
        reply,
    })?;
    let outputs = match tokio::time::timeout(state.request_timeout, answer).await {
        Err(_) => {
            return Err(ServerError::Timeout(format!(
                "model '{name}' did not answer within {:.1} s",
                state.request_timeout.as_secs_f64()
            )));
        }
        Ok(Err(_)) => return Err(ServerError::Internal("the worker stopped".into())),
        Ok(Ok(result)) => result.map_err(ServerError::from_inference)?,
    };

    let mut outputs: Vec<Option<(String, tessera::Tensor)>> =
        outputs.into_iter().map(Some).collect();
    let mut chosen = Vec::with_capacity(selected.len());
    for (wanted, binary) in selected {
        let tensor = outputs
            .iter_mut()
            .find(|o| o.as_ref().is_some_and(|(n, _)| *n == wanted))
            .and_then(Option::take)
            .map(|(_, t)| t)
            .ok_or_else(|| ServerError::BadRequest(format!("output '{wanted}' requested twice")))?;
        chosen.push((wanted, binary, tensor));
    }
    let (body, json_length) =
        encode_response(name, &model.version, decoded.request.id.clone(), chosen)?;
    let mut response = body.into_response();
    let headers = response.headers_mut();
    match json_length {
        Some(length) => {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            headers.insert(HEADER_LENGTH, HeaderValue::from(length));
        }
        None => {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
    }
    Ok(response)
}
