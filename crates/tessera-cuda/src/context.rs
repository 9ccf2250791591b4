//! The CUDA device (opened once per process), its NVRTC module cache, and per-session streams.

use crate::error::{CudaError, DriverContext};
use crate::probe::{self, DeviceSummary};
use crate::shaders::{self, Shader};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tessera_core::{Error, Result};

/// The device every cuda session of this process runs on (the first CUDA device).
pub(crate) struct CudaDevice {
    pub ctx: Arc<CudaContext>,
    pub summary: DeviceSummary,
    /// NVRTC's virtual architecture for this device, e.g. `compute_90`.
    pub arch: String,
    /// Compiled kernels by source and defines: each variant is compiled once per device.
    modules: Mutex<HashMap<Shader, CudaFunction>>,
}

/// The process's CUDA device, opened on first use; an error says why cuda is unavailable.
pub(crate) fn device() -> Result<Arc<CudaDevice>> {
    static DEVICE: OnceLock<std::result::Result<Arc<CudaDevice>, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            let found = probe::devices()?;
            let summary = found
                .into_iter()
                .next()
                .ok_or_else(|| "no CUDA device".to_string())?;
            let ctx = std::panic::catch_unwind(|| CudaContext::new(summary.ordinal))
                .map_err(|_| "opening the CUDA device panicked".to_string())?
                .map_err(|e| CudaError::driver(e, "opening the CUDA device").to_string())?;
            // One stream per session and no sharing of buffers between streams: cudarc's
            // per-allocation event tracking is not needed.
            // SAFETY: no allocation or stream exists yet.
            unsafe { ctx.disable_event_tracking() };
            let (major, minor) = summary.compute_capability;
            Ok(Arc::new(CudaDevice {
                ctx,
                arch: format!("compute_{major}{minor}"),
                summary,
                modules: Mutex::new(HashMap::new()),
            }))
        })
        .clone()
        .map_err(|reason| Error::BackendUnavailable {
            backend: "cuda".into(),
            reason,
            available: vec![],
        })
}

impl CudaDevice {
    /// A new stream (one per session).
    pub fn stream(&self) -> Result<Arc<CudaStream>> {
        self.ctx.new_stream().doing("creating a CUDA stream", false)
    }

    /// The kernel `shader` stands for, compiled on first use.
    pub fn function(&self, shader: &Shader) -> Result<CudaFunction> {
        let mut modules = self
            .modules
            .lock()
            .map_err(|_| Error::Internal("the CUDA module cache was poisoned".into()))?;
        if let Some(function) = modules.get(shader) {
            return Ok(function.clone());
        }
        let ptx = compile_ptx(shader, &self.arch)?;
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .doing(&format!("loading kernel {}", shader.name), false)?;
        let function = module
            .load_function("tessera_main")
            .doing(&format!("finding tessera_main in {}", shader.name), false)?;
        modules.insert(shader.clone(), function.clone());
        Ok(function)
    }
}

/// Compiles one kernel variant to PTX for `arch` (e.g. `compute_80`) with NVRTC. Needs only
/// libnvrtc (no GPU, no driver): the CI check compiles every kernel this way.
pub fn compile_ptx(shader: &Shader, arch: &str) -> Result<String> {
    // SAFETY: only opens the library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::BackendUnavailable {
            backend: "cuda".into(),
            reason: "libnvrtc.so not found (NVRTC compiles the cuda kernels)".into(),
            available: vec![],
        });
    }
    let source = shaders::expand(shader)?;
    let options = CompileOptions {
        name: Some(shader.name.to_string()),
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        ..Default::default()
    };
    let ptx = std::panic::catch_unwind(|| cudarc::nvrtc::compile_ptx_with_opts(&source, options))
        .map_err(|_| Error::Internal(format!("NVRTC panicked compiling {}", shader.name)))?
        .map_err(|e| CudaError::compile(e, describe(shader)).into_error(false))?;
    Ok(ptx.to_src())
}

/// `unary.cu (IN=f32, EXPR=expf(v))`, for compile errors.
pub(crate) fn describe(shader: &Shader) -> String {
    if shader.defines.is_empty() {
        return shader.name.to_string();
    }
    let defines: Vec<String> = shader
        .defines
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{} ({})", shader.name, defines.join(", "))
}
