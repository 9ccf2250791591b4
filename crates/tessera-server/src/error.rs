//! [`ServerError`]: everything a request or the server can fail with, and its HTTP status.
//! Every error reaches the client as `{"error": "…"}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// A failed request, or a server that could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The request is malformed or does not fit the model (400).
    #[error("{0}")]
    BadRequest(String),
    /// No such model, version or route (404).
    #[error("{0}")]
    NotFound(String),
    /// The route exists but not for this HTTP method (405).
    #[error("{0}")]
    MethodNotAllowed(String),
    /// The body is larger than the server accepts (413).
    #[error("{0}")]
    PayloadTooLarge(String),
    /// A content encoding the server does not decode (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The model's queue is full or the server is shutting down (503).
    #[error("{0}")]
    Unavailable(String),
    /// Inference did not finish within the request timeout (504).
    #[error("{0}")]
    Timeout(String),
    /// The model failed on valid-looking input, or a worker is gone (500).
    #[error("{0}")]
    Internal(String),
    /// A model could not be loaded at start-up.
    #[error("model '{name}': {source}")]
    Load {
        name: String,
        #[source]
        source: tessera::Error,
    },
    /// The model repository or a `--model` spec is unusable.
    #[error("{0}")]
    Config(String),
    /// The listening socket could not be opened or served.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl ServerError {
    /// The HTTP status a client sees.
    pub fn status(&self) -> StatusCode {
        match self {
            ServerError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ServerError::NotFound(_) => StatusCode::NOT_FOUND,
            ServerError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ServerError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ServerError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ServerError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServerError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ServerError::Internal(_)
            | ServerError::Load { .. }
            | ServerError::Config(_)
            | ServerError::Io { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// An error from running the model: input problems are the client's (400), the rest ours.
    pub fn from_inference(error: tessera::Error) -> ServerError {
        use tessera::Error as E;
        match error {
            E::InputMismatch(_)
            | E::TensorData { .. }
            | E::UnsupportedDtype { .. }
            // The plan depends on the input shapes (and some input values): a shape the
            // model's graph cannot take fails here.
            | E::Prepare { .. } => ServerError::BadRequest(error.to_string()),
            other => ServerError::Internal(other.to_string()),
        }
    }
}

#[derive(serde::Serialize)]
struct ErrorBody {
    error: String,
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(status = status.as_u16(), "{self}");
        } else {
            tracing::debug!(status = status.as_u16(), "{self}");
        }
        (
            status,
            Json(ErrorBody {
                error: self.to_string(),
            }),
        )
            .into_response()
    }
}
