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
///
/// This is a last line of defence, not a way to handle bad input: the browser build aborts on
/// panic (`panic = "abort"`), so a panic caught here natively traps the whole wasm module there.
/// Every panic, caught or not, is counted ([`panics_seen`], [`panics_seen_on_this_thread`]) so
/// tests can assert that none happened; the fix for one is a check before tract is called.
pub fn catch_panic<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    install_panic_counter();
    let before = panics_seen_on_this_thread();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            // A panic on a worker thread (tract's thread pool) that was resumed on this one was
            // counted on the worker: count it on this thread too, once.
            if panics_seen_on_this_thread() == before {
                THREAD_PANICS.with(|n| n.set(n.get() + 1));
            }
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(Error::Internal(format!("{what}: {message}")))
        }
    }
}

static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    static THREAD_PANICS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Installs (once per process) a panic hook that counts every panic, caught or not, then hands
/// it to the hook that was there before (which prints it, by default). [`catch_panic`] installs
/// it; tests call it first so that panics outside Tessera's calls are counted too.
pub fn install_panic_counter() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // `try_with`: a panic while the thread's locals are being destroyed is still counted
            // process-wide.
            let _ = THREAD_PANICS.try_with(|n| n.set(n.get() + 1));
            previous(info);
        }));
    });
}

/// Panics seen in this process since [`install_panic_counter`] (or the first [`catch_panic`]),
/// caught or not, on any thread.
pub fn panics_seen() -> usize {
    PANICS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Panics seen on the calling thread, caught or not, plus panics on other threads that
/// [`catch_panic`] caught on this one (a thread pool's worker panic resumed here). For per-case
/// accounting when other threads of the process run other work.
pub fn panics_seen_on_this_thread() -> usize {
    THREAD_PANICS.with(std::cell::Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caught_panics_are_counted() {
        install_panic_counter();
        let (all, mine) = (panics_seen(), panics_seen_on_this_thread());
        let err = catch_panic("testing", || -> Result<()> { panic!("on purpose") }).unwrap_err();
        assert!(err.to_string().contains("on purpose"), "{err}");
        assert!(panics_seen() > all);
        assert_eq!(panics_seen_on_this_thread(), mine + 1);
        // A panic on another thread, resumed on this one, counts here once.
        let err = catch_panic("testing", || -> Result<()> {
            let payload = std::thread::spawn(|| panic!("elsewhere"))
                .join()
                .unwrap_err();
            std::panic::resume_unwind(payload)
        })
        .unwrap_err();
        assert!(err.to_string().contains("elsewhere"), "{err}");
        assert_eq!(panics_seen_on_this_thread(), mine + 2);
    }
}
