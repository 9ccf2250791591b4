//! Tessera's `wgpu` backend: WGSL compute shaders (from `shaders/wgsl/`) executing the core's
//! backend-neutral [`tessera_core::Plan`] on Vulkan, Metal, DX12 or the browser's WebGPU.
//!
//! Today this crate finds and describes adapters (for `tessera devices`) and reports plainly
//! that the backend does not run models yet; the kernels follow the plan's `KernelOp`s.

mod kernels;
mod probe;
pub mod repr;

pub use probe::{AdapterSummary, adapters};
use tessera_core::{Backend, BackendStatus};

/// Whether wgpu can be used here, with the adapters found or the reason none was.
pub fn status() -> BackendStatus {
    match adapters() {
        Ok(found) if !found.is_empty() => BackendStatus {
            backend: Backend::Wgpu,
            compiled_in: true,
            available: false,
            detail: format!(
                "{} adapter(s) found, but the wgpu backend does not run models yet (its kernels are in progress)",
                found.len()
            ),
            devices: found.iter().map(ToString::to_string).collect(),
        },
        Ok(_) => BackendStatus {
            backend: Backend::Wgpu,
            compiled_in: true,
            available: false,
            detail: probe::why_no_adapter(),
            devices: vec![],
        },
        Err(reason) => BackendStatus {
            backend: Backend::Wgpu,
            compiled_in: true,
            available: false,
            detail: reason,
            devices: vec![],
        },
    }
}
