//! Run one ONNX file on any device: the library a Rust application depends on.
//!
//! ```no_run
//! use tessera::{Backend, Session, Tensor};
//! let session = Session::builder().backend(Backend::Cpu).threads(2).load("model.onnx")?;
//! let x = Tensor::from_vec(vec![1, 3], vec![0.1f32, 0.2, 0.3])?;
//! for (name, value) in session.run(vec![("x".into(), x)])? {
//!     println!("{name}: {}", value.summary(4));
//! }
//! # Ok::<(), tessera::Error>(())
//! ```
//!
//! Backends are cargo features: `cpu` (default), `wgpu`, `cuda`. A backend that is not compiled
//! in or not usable here is never replaced silently: asking for it is an error that says why and
//! lists what is available; [`Backend::Auto`] picks the best available one and says which.

pub mod check;
pub mod compare;
#[cfg(not(target_arch = "wasm32"))]
pub mod diagnostics;
pub mod profile;
mod session;

pub use session::{DeviceTensor, PlacementSummary, Session, SessionBuilder};
/// Panic accounting: every panic, caught or not, is counted (tests assert none happened).
pub use tessera_core::error::{install_panic_counter, panics_seen, panics_seen_on_this_thread};
/// onnxruntime's `com.microsoft` quantization operators, which the core rewrites into standard ones.
pub use tessera_core::ops::microsoft_quant::OPERATORS as MICROSOFT_QUANTIZATION_OPS;
pub use tessera_core::plan::report::mib as plan_mib;
pub use tessera_core::plan::{
    CopyCause, CopyPlacement, DeviceMemory, PlanReport, StepPlacement, Transfers,
};
pub use tessera_core::tensor::{byte_count, element_count, npy, onnx_pb};
pub use tessera_core::{
    Backend, BackendStatus, DType, Dim, Element, Error, IoInfo, Model, ModelInfo, QuantFormat,
    Quantization, QuantizedExecution, Result, Tensor, TensorData, UnsupportedOp,
};

/// Every backend, with whether it is compiled in and usable here, best first.
pub fn backends() -> Vec<BackendStatus> {
    Backend::PREFERENCE
        .into_iter()
        .map(backend_status)
        .collect()
}

/// The status of one concrete backend.
pub fn backend_status(backend: Backend) -> BackendStatus {
    match backend {
        #[cfg(feature = "cpu")]
        Backend::Cpu => tessera_cpu::status(),
        #[cfg(not(feature = "cpu"))]
        Backend::Cpu => BackendStatus::not_compiled_in(Backend::Cpu, "cpu"),
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => tessera_wgpu::status(),
        #[cfg(not(feature = "wgpu"))]
        Backend::Wgpu => BackendStatus::not_compiled_in(Backend::Wgpu, "wgpu"),
        #[cfg(feature = "cuda")]
        Backend::Cuda => tessera_cuda::status(),
        #[cfg(not(feature = "cuda"))]
        Backend::Cuda => BackendStatus::not_compiled_in(Backend::Cuda, "cuda"),
        Backend::Auto => {
            let (picked, _) =
                resolve_backend(Backend::Auto).unwrap_or((Backend::Cpu, String::new()));
            backend_status(picked)
        }
    }
}

/// Turns a requested backend into a usable one, with a sentence saying why it was chosen;
/// an unusable request is an error naming the reason and the alternatives.
pub fn resolve_backend(requested: Backend) -> Result<(Backend, String)> {
    // A concrete request that is available probes nothing else: the cpu path never loads a GPU
    // driver (Vulkan's loader and Mesa print to the terminal when they are merely probed).
    if requested != Backend::Auto {
        let status = backend_status(requested);
        if status.available {
            return Ok((requested, format!("{requested} requested")));
        }
    }
    let statuses: Vec<BackendStatus> = Backend::PREFERENCE
        .into_iter()
        .map(backend_status)
        .collect();
    let available: Vec<String> = statuses
        .iter()
        .filter(|s| s.available)
        .map(|s| s.backend.to_string())
        .collect();
    if requested == Backend::Auto {
        let mut skipped = Vec::new();
        // A software-only GPU backend (lavapipe) is slower than the cpu backend: auto skips it.
        let usable = |s: &BackendStatus| s.available && !s.software_only;
        for status in &statuses {
            if usable(status) {
                let why = if skipped.is_empty() {
                    format!(
                        "auto picked {}: the best backend, and available",
                        status.backend
                    )
                } else {
                    format!("auto picked {}: {}", status.backend, skipped.join("; "))
                };
                return Ok((status.backend, why));
            }
            skipped.push(if status.available {
                format!("{}: {}", status.backend, status.detail)
            } else {
                format!("{} {}", status.backend, status.detail)
            });
        }
        if let Some(status) = statuses.iter().find(|s| s.available) {
            return Ok((
                status.backend,
                format!("auto picked {}: {}", status.backend, skipped.join("; ")),
            ));
        }
        return Err(Error::BackendUnavailable {
            backend: "auto".into(),
            reason: skipped.join("; "),
            available,
        });
    }
    let status = statuses
        .into_iter()
        .find(|s| s.backend == requested)
        .unwrap_or_else(|| backend_status(requested));
    Err(Error::BackendUnavailable {
        backend: requested.to_string(),
        reason: status.detail,
        available,
    })
}

/// How `backend` runs a quantized operator type: one of [`Quantization::ops`] other than the
/// float/integer conversions, or a float operator of a QDQ pattern ([`Quantization::qdq_ops`]).
pub fn quantized_execution(backend: Backend, op: &str) -> QuantizedExecution {
    match backend {
        #[cfg(feature = "cpu")]
        Backend::Cpu => tessera_cpu::quantized_execution(op),
        // Both GPU backends run the core's plan: its translators decide.
        _ => tessera_core::lower::quantized_execution(op),
    }
}

/// Which of the model's op types a backend can run (`None` when the backend is not compiled in).
pub fn supported_ops(backend: Backend, info: &ModelInfo) -> Option<Vec<(String, bool)>> {
    match backend {
        // A model that loaded is fully supported on cpu: loading rejects ops tract lacks.
        #[cfg(feature = "cpu")]
        Backend::Cpu => Some(
            info.op_histogram
                .keys()
                .map(|op| (op.clone(), true))
                .collect(),
        ),
        // Which op types a GPU backend runs depends on the shapes and dtypes they get: ask for
        // a plan report (`tessera inspect --backend`), which names each step's device.
        _ => None,
    }
}
