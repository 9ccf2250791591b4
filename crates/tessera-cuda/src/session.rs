//! [`CudaSession`]: a model on the CUDA device, on its own stream. The session itself is the
//! shared GPU engine's ([`tessera_gpu::engine::GpuSession`]); this opens the device for it.

use crate::context::device;
use crate::device::CudaGpu;
use std::sync::Arc;
use tessera_core::{Model, Result};
use tessera_gpu::engine::{self, GpuSession};

/// Options of the cuda backend.
pub type CudaOptions = engine::GpuOptions;

/// A tensor that lives on the CUDA device (I/O binding): feed it to a run without a copy
/// through host memory, or read it back with `to_host`.
pub type DeviceTensor = engine::DeviceTensor<CudaGpu>;

/// A run's input: on the host, or already on the device.
pub type CudaInput = engine::Input<CudaGpu>;

/// A model prepared to run on the CUDA device: every run, report, trace and profile method is
/// the engine's [`GpuSession`]'s.
#[derive(Debug)]
pub struct CudaSession {
    session: GpuSession<CudaGpu>,
}

impl CudaSession {
    /// Opens the device (once per process), a stream and a cuBLAS handle for this session, and
    /// prepares the model. A model whose inputs have fixed shapes is planned right away, so
    /// unsupported ops are reported at load.
    pub fn new(model: Arc<Model>, options: CudaOptions) -> Result<CudaSession> {
        let gpu = Arc::new(CudaGpu::new(device()?)?);
        Ok(CudaSession {
            session: GpuSession::new(gpu, model, options.allow_fallback)?,
        })
    }
}

impl std::ops::Deref for CudaSession {
    type Target = GpuSession<CudaGpu>;

    fn deref(&self) -> &GpuSession<CudaGpu> {
        &self.session
    }
}
