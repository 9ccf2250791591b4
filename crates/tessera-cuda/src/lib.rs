//! Tessera's `cuda` backend: the core's backend-neutral [`tessera_core::Plan`] on NVIDIA GPUs,
//! with cuBLAS for matrix products and convolutions (im2col + GEMM) and CUDA C kernels (from
//! `shaders/cuda/`, compiled at run time by NVRTC and cached per device) for everything else.
//!
//! cudarc opens `libcuda`, `libnvrtc` and `libcublas` at run time, so this crate builds and links
//! with no CUDA toolkit or driver; [`status`] says exactly why cuda is unavailable when one is
//! missing, and no call here panics for it.
//!
//! A [`CudaSession`] is the shared GPU engine's session (`tessera-gpu`: plans per input
//! signature, placement, one arena laid out by the memory plan, weights uploaded once, I/O
//! binding) on this device, with its own stream and cuBLAS handle. Placement is strict by
//! default (a step without a kernel is an error naming it; with [`CudaOptions::allow_fallback`]
//! it runs on the host and every copy is reported and counted). Element types are held as
//! 32-bit words ([`repr`]), as on wgpu, and both backends encode every step the same way.
//!
//! Files: `probe.rs` (devices, and why there are none), `error.rs` (CUDA error names),
//! `context.rs` (device, NVRTC module cache, streams), `session.rs` (opens a session),
//! `device.rs` (allocations, launches, cuBLAS calls, a run on the stream: what the engine asks
//! of a device), `shaders/` (the CUDA C of `shaders/cuda/` and its expansion).

mod context;
mod device;
mod error;
mod probe;
mod session;
mod shaders;

pub use device::CudaGpu;
pub use tessera_gpu::repr;

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
