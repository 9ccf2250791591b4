//! The one error type every Tessera library returns.

use std::path::PathBuf;

/// Result alias used across Tessera.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One operator that a backend cannot run, with where it occurs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnsupportedOp {
    /// ONNX op type, e.g. `CumProd` (with its domain when not the default one).
    pub op_type: String,
    /// Name of the first node that uses it.
    pub first_node: String,
    /// How many nodes use it.
    pub count: usize,
    /// Why the backend cannot run it, when there is more to say than "no kernel".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl std::fmt::Display for UnsupportedOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}×, first node '{}')",
            self.op_type, self.count, self.first_node
        )?;
        match &self.reason {
            Some(reason) => write!(f, " [{reason}]"),
            None => Ok(()),
        }
    }
}

/// Everything that can go wrong in Tessera. Bad input of any kind ends here, never in a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The bytes are not a well-formed ONNX model.
    #[error("not a valid ONNX model: {0}")]
    InvalidModel(String),

    /// The model uses operators that this backend does not implement.
    #[error("{} cannot run this model: unsupported operator(s): {}", .backend.as_ref().map(|b| format!("the {b} backend")).unwrap_or_else(|| "Tessera".into()), list(.ops))]
    UnsupportedOps {
        backend: Option<String>,
        ops: Vec<UnsupportedOp>,
    },

    /// A tensor uses an element type Tessera does not handle (float8, int4, bfloat16, strings...).
    #[error("unsupported data type {dtype} ({context})")]
    UnsupportedDtype { dtype: String, context: String },

    /// The inputs given do not match what the model declares.
    #[error("{0}")]
    InputMismatch(String),

    /// A tensor file or buffer could not be decoded.
    #[error("bad tensor data{}: {reason}", .path.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default())]
    TensorData {
        path: Option<PathBuf>,
        reason: String,
    },

    /// A backend was asked for but cannot be used here.
    #[error("backend '{backend}' is not available: {reason}. Available backends: {}", if .available.is_empty() { "none".to_string() } else { .available.join(", ") })]
    BackendUnavailable {
        backend: String,
        reason: String,
        available: Vec<String>,
    },

    /// The model could not be turned into a runnable plan for these inputs.
    #[error("cannot prepare the model for the {backend} backend: {message}")]
    Prepare { backend: String, message: String },

    /// Running the plan failed.
    #[error("inference failed on the {backend} backend: {message}")]
    Run { backend: String, message: String },

    /// A bug: tract or Tessera panicked; the panic was caught and turned into this error.
    #[error("internal error (please report it): {0}")]
    Internal(String),
}

fn list(ops: &[UnsupportedOp]) -> String {
    ops.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn tensor_data(path: Option<&std::path::Path>, reason: impl Into<String>) -> Self {
        Error::TensorData {
            path: path.map(Into::into),
            reason: reason.into(),
        }
    }
}

/// Renders a tract error with its whole chain of causes on one line (no backtrace).
pub fn chain_message(error: &anyhow::Error) -> String {
    format!("{error:#}")
}

/// Runs `f`, turning a panic inside tract into [`Error::Internal`] so callers never see one.
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::Internal(format!("{what}: {message}")))
        }
    }
}
