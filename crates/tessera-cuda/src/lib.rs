//! Tessera's `cuda` backend: the core's backend-neutral [`tessera_core::Plan`] on NVIDIA GPUs,
//! with cuBLAS for matrix products and convolutions (im2col + GEMM) and CUDA C kernels (from
//! `shaders/cuda/`, compiled at run time by NVRTC and cached per device) for everything else.
//!
//! cudarc opens `libcuda`, `libnvrtc` and `libcublas` at run time, so this crate builds and links
//! with no CUDA toolkit or driver; [`status`] says exactly why cuda is unavailable when one is
//! missing, and no call here panics for it.
//!
//! A [`CudaSession`] lowers the model per input signature into the core's plan, places every
//! step (strictly by default: a step without a kernel is an error naming it; with
//! [`CudaOptions::allow_fallback`] it runs on the host and every copy is reported and counted),
//! uploads weights once, keeps intermediate values in one arena allocation laid out by the
//! memory plan, and runs on its own stream. Element types are held as 32-bit words ([`repr`]),
//! like the wgpu backend.
//!
//! Files: `probe.rs` (devices, and why there are none), `error.rs` (CUDA error names),
//! `context.rs` (device, NVRTC module cache, streams), `session.rs` (plans per signature,
//! weights, I/O binding), `executor.rs` (allocations, launches, a run), `kernels/` (one file per
//! op family; the CUDA C is in `shaders/cuda/`).

mod context;
mod error;
mod executor;
mod kernels;
mod probe;
pub mod repr;
mod session;

pub use error::CudaError;
pub use probe::{DeviceSummary, devices};
pub use session::{CudaInput, CudaOptions, CudaSession, DeviceTensor};
pub use tessera_core::plan::{DeviceMemory, PlanReport, Trace, Transfers};

use tessera_core::{Backend, BackendStatus};

/// Whether cuda can be used here, with the devices found or the reason none was.
pub fn status() -> BackendStatus {
    match devices() {
        Ok(found) => BackendStatus {
            backend: Backend::Cuda,
            compiled_in: true,
            available: true,
            detail: format!("{} CUDA device(s) found", found.len()),
            devices: found.iter().map(ToString::to_string).collect(),
            software_only: false,
        },
        Err(reason) => BackendStatus {
            backend: Backend::Cuda,
            compiled_in: true,
            available: false,
            detail: reason,
            devices: vec![],
            software_only: false,
        },
    }
}
