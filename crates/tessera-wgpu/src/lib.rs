//! Tessera's `wgpu` backend: WGSL compute shaders (from `shaders/wgsl/`) executing the core's
//! backend-neutral [`tessera_core::Plan`] on Vulkan, Metal, DX12 or the browser's WebGPU.
//!
//! A [`WgpuSession`] lowers the model per input signature into the core's plan, places every
//! step (strictly by default: a step without a kernel is an error naming it; with
//! [`WgpuOptions::allow_fallback`] it runs on the host and every copy is reported and counted),
//! compiles one pipeline per kernel variant, uploads weights once, and keeps intermediate values
//! in one arena laid out by the memory plan. Element types are held as 32-bit words
//! ([`repr`]). Which kernels each step runs is decided once for both GPU backends, in
//! `tessera-gpu`.
//!
//! Files: `context.rs` (device, pipeline cache), `session.rs` (plans per signature, weights,
//! I/O binding), `device.rs` (buffers, bind groups, recording and submitting a run for the shared engine), `shaders/` (the WGSL templates of
//! `shaders/wgsl/` and their expansion), `probe.rs` (adapters, and why there are none).

mod context;
mod device;
mod probe;
mod session;
mod shaders;

pub use context::GpuContext;
pub use tessera_gpu::repr;

pub use session::{DeviceTensor, WgpuInput, WgpuOptions, WgpuOutput, WgpuSession};
pub use tessera_core::plan::{DeviceMemory, PlanReport, Trace, Transfers};

pub use probe::{AdapterSummary, adapters};
use tessera_core::{Backend, BackendStatus};

/// Opens the process's device without blocking (required once in a browser before
/// [`status`] or a session can see it; natively sessions open it themselves). Returns the
/// adapter, or the reason there is none.
pub async fn open_device() -> tessera_core::Result<AdapterSummary> {
    Ok(context::open_context().await?.adapter.clone())
}

/// Whether wgpu can be used here, with the adapters found or the reason none was.
pub fn status() -> BackendStatus {
    match adapters() {
        Ok(found) if !found.is_empty() => {
            let software_only = found.iter().all(|a| a.device_type == "Cpu");
            BackendStatus {
                backend: Backend::Wgpu,
                compiled_in: true,
                available: true,
                detail: if software_only {
                    format!(
                        "{} adapter(s) found, software only (a CPU emulating a GPU: right answers, slowly)",
                        found.len()
                    )
                } else {
                    format!("{} adapter(s) found", found.len())
                },
                devices: found.iter().map(ToString::to_string).collect(),
                software_only,
            }
        }
        Ok(_) => BackendStatus {
            backend: Backend::Wgpu,
            compiled_in: true,
            available: false,
            detail: probe::why_no_adapter(),
            devices: vec![],
            software_only: false,
        },
        Err(reason) => BackendStatus {
            backend: Backend::Wgpu,
            compiled_in: true,
            available: false,
            detail: reason,
            devices: vec![],
            software_only: false,
        },
    }
}
