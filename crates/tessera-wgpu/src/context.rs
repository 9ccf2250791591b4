//! The process-wide wgpu device, and the kernel pipelines compiled on it.
//!
//! Opening a device is slow (drivers load, lavapipe starts LLVM), so one device is opened per
//! process on first use and shared by every session; pipelines are compiled once per shader and
//! defines, whatever session asks.

use crate::probe::AdapterSummary;
use crate::shaders::{self, Shader};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tessera_core::{Error, Result};

/// A device, its queue, and the pipeline cache.
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: wgpu::Limits,
    pub adapter: AdapterSummary,
    pipelines: Mutex<HashMap<PipelineKey, Arc<Pipeline>>>,
    layouts: Mutex<HashMap<usize, Arc<wgpu::BindGroupLayout>>>,
    /// Read-back buffers free for the next run ([`crate::device`]).
    pub(crate) staging: Mutex<Vec<wgpu::Buffer>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.adapter)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PipelineKey {
    name: &'static str,
    defines: Vec<(&'static str, String)>,
    bindings: usize,
}

/// A compiled kernel and the layout of its bind group.
#[derive(Debug)]
pub struct Pipeline {
    pub pipeline: wgpu::ComputePipeline,
    pub layout: Arc<wgpu::BindGroupLayout>,
}

type Opened = std::result::Result<Arc<GpuContext>, String>;

/// The context once an open was attempted (successfully or not): opened at most once per process.
static CONTEXT: OnceLock<Opened> = OnceLock::new();

fn unavailable(reason: String) -> Error {
    Error::BackendUnavailable {
        backend: "wgpu".into(),
        reason,
        available: vec![],
    }
}

/// The shared context. Natively it is opened on first use; in a browser it must have been
/// opened with [`open_context`] (opening a WebGPU device cannot block there). Errors say why no
/// device could be opened.
pub fn context() -> Result<Arc<GpuContext>> {
    #[cfg(not(target_arch = "wasm32"))]
    let opened = CONTEXT.get_or_init(|| {
        std::panic::catch_unwind(|| pollster::block_on(open()))
            .unwrap_or_else(|_| Err("opening the wgpu device panicked inside wgpu".into()))
            .map(Arc::new)
    });
    #[cfg(target_arch = "wasm32")]
    let opened = CONTEXT.get().ok_or_else(|| {
        unavailable("WebGPU was not opened yet: create the session with the async API".into())
    })?;
    opened.clone().map_err(unavailable)
}

/// Opens the shared context without blocking (the only way in a browser); later calls return
/// the same context, or the same reason it could not be opened.
pub async fn open_context() -> Result<Arc<GpuContext>> {
    if CONTEXT.get().is_none() {
        let opened = open().await.map(Arc::new);
        // Another caller may have opened it meanwhile: keep the first.
        let _ = CONTEXT.set(opened);
    }
    context()
}

/// The context if one was opened, without opening it: the reason otherwise.
#[cfg(target_arch = "wasm32")]
pub(crate) fn opened_context() -> Option<Opened> {
    CONTEXT.get().cloned()
}

/// Runs a future to completion natively; in a browser nothing may block, so the caller must use
/// the async API instead.
pub(crate) fn block_on<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    #[cfg(not(target_arch = "wasm32"))]
    return pollster::block_on(future);
    #[cfg(target_arch = "wasm32")]
    {
        drop(future);
        Err(Error::Run {
            backend: "wgpu".into(),
            message: "this call would block, which browsers forbid: use the async API".into(),
        })
    }
}

async fn open() -> std::result::Result<GpuContext, String> {
    // Without WebGPU (Node.js, older browsers) the browser backend must not even be created.
    #[cfg(target_arch = "wasm32")]
    if !wgpu::util::is_browser_webgpu_supported().await {
        return Err(crate::probe::why_no_adapter());
    }
    let adapter = crate::probe::instance()
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            apply_limit_buckets: false,
        })
        .await
        .map_err(|e| format!("{e}; {}", crate::probe::why_no_adapter()))?;
    let info = adapter.get_info();
    let summary = AdapterSummary {
        // Browsers may withhold the adapter's name (privacy); say what it is instead.
        name: if info.name.is_empty() {
            "WebGPU adapter".into()
        } else {
            info.name.clone()
        },
        api: format!("{:?}", info.backend),
        device_type: format!("{:?}", info.device_type),
        driver: format!("{} {}", info.driver, info.driver_info)
            .trim()
            .to_string(),
    };
    // Ask for everything the adapter offers: large models need large storage bindings.
    let limits = adapter.limits();
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("tessera"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("{summary}: could not open a device: {e}"))?;
    // wgpu's default handler panics; errors are caught with error scopes where they happen,
    // and anything else is logged rather than taking the process down.
    device.on_uncaptured_error(Arc::new(|error| {
        tracing::error!(%error, "uncaptured wgpu error");
    }));
    tracing::debug!(adapter = %summary, "wgpu device opened");
    Ok(GpuContext {
        device,
        queue,
        limits,
        adapter: summary,
        pipelines: Mutex::new(HashMap::new()),
        layouts: Mutex::new(HashMap::new()),
        staging: Mutex::new(vec![]),
    })
}

impl GpuContext {
    /// The pipeline for `shader` with `bindings` tensor bindings (after `params`), compiled on
    /// first use. Compilation errors are returned, not logged.
    pub fn pipeline(&self, shader: &Shader, bindings: usize) -> Result<Arc<Pipeline>> {
        let key = PipelineKey {
            name: shader.name,
            defines: shader.defines.clone(),
            bindings,
        };
        if let Some(found) = self.pipelines.lock().map_err(poisoned)?.get(&key) {
            return Ok(found.clone());
        }
        let source = shaders::expand(shader)?;
        let layout = self.layout(bindings)?;
        // Natively a kernel that does not compile is reported here; browsers cannot wait for
        // the scope, so there the async session checks one scope around all of its planning.
        #[cfg(not(target_arch = "wasm32"))]
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(shader.name),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let pipeline_layout = self
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(shader.name),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(shader.name),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(Error::Prepare {
                backend: "wgpu".into(),
                message: format!(
                    "kernel {} ({:?}) does not compile: {error}",
                    shader.name, shader.defines
                ),
            });
        }
        let compiled = Arc::new(Pipeline { pipeline, layout });
        self.pipelines
            .lock()
            .map_err(poisoned)?
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    /// Binding 0: read-only params; 1..=bindings: read-write tensors (see [`shaders::expand`]).
    fn layout(&self, bindings: usize) -> Result<Arc<wgpu::BindGroupLayout>> {
        let mut layouts = self.layouts.lock().map_err(poisoned)?;
        if let Some(found) = layouts.get(&bindings) {
            return Ok(found.clone());
        }
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..=bindings)
            .map(|binding| wgpu::BindGroupLayoutEntry {
                binding: binding as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage {
                        read_only: binding == 0,
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = Arc::new(self.device.create_bind_group_layout(
            &wgpu::BindGroupLayoutDescriptor {
                label: Some("tessera kernel"),
                entries: &entries,
            },
        ));
        layouts.insert(bindings, layout.clone());
        Ok(layout)
    }

    /// Waits for submitted work (native); in browsers the event loop drives it.
    pub fn wait(&self) -> Result<()> {
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Run {
                backend: "wgpu".into(),
                message: format!("waiting for the device: {e}"),
            })?;
        Ok(())
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::Internal("a wgpu cache lock was poisoned by an earlier panic".into())
}
