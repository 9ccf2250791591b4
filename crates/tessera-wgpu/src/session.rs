//! [`WgpuSession`]: a model on the wgpu device. The session itself is the shared GPU engine's
//! ([`tessera_gpu::engine::GpuSession`]); this opens the device for it.

use crate::context::{GpuContext, context, open_context};
use std::sync::Arc;
use tessera_core::{Model, Result};
use tessera_gpu::engine::{self, GpuSession};

/// Options of the wgpu backend.
pub type WgpuOptions = engine::GpuOptions;

/// A tensor that lives on the wgpu device (I/O binding): feed it to a run without a copy
/// through host memory, or read it back with `to_host` (natively) or `to_host_async`.
pub type DeviceTensor = engine::DeviceTensor<GpuContext>;

/// A run's input: on the host, or already on the device.
pub type WgpuInput = engine::Input<GpuContext>;
/// A run's output, on the host or on the device.
pub type WgpuOutput = engine::Output<GpuContext>;

/// A model prepared to run on the wgpu device: every run, report, trace and profile method is
/// the engine's [`GpuSession`]'s. Blocking calls work natively; in a browser use the `_async`
/// ones.
#[derive(Debug)]
pub struct WgpuSession {
    session: GpuSession<GpuContext>,
    ctx: Arc<GpuContext>,
}

impl WgpuSession {
    /// Opens the device (once per process) and prepares the model. A model whose inputs have
    /// fixed shapes is planned right away, so unsupported ops are reported at load.
    pub fn new(model: Arc<Model>, options: WgpuOptions) -> Result<WgpuSession> {
        let ctx = context()?;
        Ok(WgpuSession {
            session: GpuSession::new(ctx.clone(), model, options.allow_fallback)?,
            ctx,
        })
    }

    /// [`WgpuSession::new`] without blocking: the way to open one in a browser.
    pub async fn new_async(model: Arc<Model>, options: WgpuOptions) -> Result<WgpuSession> {
        let ctx = open_context().await?;
        Ok(WgpuSession {
            session: GpuSession::new_async(ctx.clone(), model, options.allow_fallback).await?,
            ctx,
        })
    }

    /// The adapter this session runs on.
    pub fn adapter(&self) -> String {
        self.ctx.adapter.to_string()
    }
}

impl std::ops::Deref for WgpuSession {
    type Target = GpuSession<GpuContext>;

    fn deref(&self) -> &GpuSession<GpuContext> {
        &self.session
    }
}
