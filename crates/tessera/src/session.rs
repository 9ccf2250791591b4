//! [`Session`]: a model bound to one backend.

use crate::resolve_backend;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tessera_core::model::inputs::{Fed, order_inputs};
use tessera_core::plan::{CopyPlacement, PlanReport, StepPlacement, Trace, Transfers};
use tessera_core::{Backend, Error, Model, ModelInfo, Result, Tensor};

/// Options for building a [`Session`].
#[derive(Debug, Clone)]
pub struct SessionBuilder {
    backend: Backend,
    threads: Option<usize>,
    allow_fallback: bool,
}

impl Default for SessionBuilder {
    fn default() -> Self {
        SessionBuilder {
            backend: Backend::Cpu,
            threads: None,
            allow_fallback: false,
        }
    }
}

impl SessionBuilder {
    /// The backend to run on (default: [`Backend::Cpu`]).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Worker threads for the cpu backend (default: one per available core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// On a GPU backend, run the steps it has no kernel for on the host instead of refusing the
    /// model (default: refuse, naming every such op). Every copy this causes between host and
    /// device is listed in [`Session::plan_report`] and counted per run
    /// ([`Session::last_transfers`]).
    pub fn allow_fallback(mut self, allow: bool) -> Self {
        self.allow_fallback = allow;
        self
    }

    /// Loads a model file and binds it to the backend.
    pub fn load(self, path: impl AsRef<Path>) -> Result<Session> {
        self.build(Model::load(path)?)
    }

    /// Loads a model from bytes and binds it to the backend.
    pub fn load_bytes(self, bytes: &[u8]) -> Result<Session> {
        self.build(Model::from_bytes(bytes)?)
    }

    /// [`SessionBuilder::load_bytes`] without blocking: the way to open a session in a browser,
    /// where a WebGPU device can only be opened asynchronously.
    pub async fn load_bytes_async(self, bytes: &[u8]) -> Result<Session> {
        self.build_async(Model::from_bytes(bytes)?).await
    }

    /// [`SessionBuilder::build`] without blocking (see [`SessionBuilder::load_bytes_async`]).
    pub async fn build_async(self, model: Model) -> Result<Session> {
        #[cfg(feature = "wgpu")]
        if matches!(self.backend, Backend::Wgpu | Backend::Auto) {
            // Opened (or found missing, with the reason) before the backend is resolved, so
            // `auto` and the error for `wgpu` both see it.
            let _ = tessera_wgpu::open_device().await;
            let (backend, choice) = resolve_backend(self.backend)?;
            if backend == Backend::Wgpu {
                let model = Arc::new(model);
                let options = tessera_wgpu::WgpuOptions {
                    allow_fallback: self.allow_fallback,
                };
                let wgpu = tessera_wgpu::WgpuSession::new_async(model.clone(), options).await?;
                return Ok(Session {
                    model,
                    backend,
                    choice,
                    engine: Engine::Wgpu(wgpu),
                });
            }
        }
        self.build(model)
    }

    /// Binds an already loaded model to the backend.
    pub fn build(self, model: Model) -> Result<Session> {
        let (backend, choice) = resolve_backend(self.backend)?;
        let model = Arc::new(model);
        let engine = match backend {
            #[cfg(feature = "cpu")]
            Backend::Cpu => Engine::Cpu(tessera_cpu::CpuSession::new(
                model.clone(),
                &tessera_cpu::CpuOptions {
                    threads: self.threads,
                },
            )?),
            #[cfg(feature = "wgpu")]
            Backend::Wgpu => Engine::Wgpu(tessera_wgpu::WgpuSession::new(
                model.clone(),
                tessera_wgpu::WgpuOptions {
                    allow_fallback: self.allow_fallback,
                },
            )?),
            #[cfg(feature = "cuda")]
            Backend::Cuda => Engine::Cuda(tessera_cuda::CudaSession::new(
                model.clone(),
                tessera_cuda::CudaOptions {
                    allow_fallback: self.allow_fallback,
                },
            )?),
            #[allow(unreachable_patterns)]
            other => {
                return Err(Error::BackendUnavailable {
                    backend: other.to_string(),
                    reason: "not compiled in".into(),
                    available: vec![],
                });
            }
        };
        Ok(Session {
            model,
            backend,
            choice,
            engine,
        })
    }
}

#[derive(Debug)]
enum Engine {
    #[cfg(feature = "cpu")]
    Cpu(tessera_cpu::CpuSession),
    #[cfg(feature = "wgpu")]
    Wgpu(tessera_wgpu::WgpuSession),
    #[cfg(feature = "cuda")]
    Cuda(tessera_cuda::CudaSession),
}

/// A model bound to one backend. Plans are built per input signature and cached.
#[derive(Debug)]
pub struct Session {
    model: Arc<Model>,
    backend: Backend,
    choice: String,
    engine: Engine,
}

/// Where every step runs and what a run copies (see [`Session::placement`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct PlacementSummary {
    pub backend: String,
    /// The device (adapter) name; `None` on cpu.
    pub device: Option<String>,
    pub steps: Vec<StepPlacement>,
    pub copies: Vec<CopyPlacement>,
}

impl Session {
    /// Starts building a session.
    pub fn builder() -> SessionBuilder {
        SessionBuilder::default()
    }

    /// The loaded model (for diagnostics that lower it themselves).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn model(&self) -> &Model {
        &self.model
    }

    /// The cpu engine, when this session runs on cpu.
    #[cfg(feature = "cpu")]
    pub(crate) fn cpu(&self) -> Option<&tessera_cpu::CpuSession> {
        match &self.engine {
            Engine::Cpu(cpu) => Some(cpu),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The wgpu engine, when this session runs on wgpu (natively: diagnostics and profiles).
    #[cfg(all(feature = "wgpu", not(target_arch = "wasm32")))]
    pub(crate) fn wgpu(&self) -> Option<&tessera_wgpu::WgpuSession> {
        match &self.engine {
            Engine::Wgpu(wgpu) => Some(wgpu),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The model's declared inputs, outputs, opset and ops.
    pub fn info(&self) -> &ModelInfo {
        self.model.info()
    }

    /// The backend that runs this session.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The device a GPU backend runs on (adapter name), `None` on cpu.
    pub fn device_name(&self) -> Option<String> {
        match &self.engine {
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => Some(wgpu.adapter()),
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => Some(cuda.device_name()),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Why this backend was chosen (useful with [`Backend::Auto`]).
    pub fn backend_choice(&self) -> &str {
        &self.choice
    }

    /// Worker threads in use on the cpu backend.
    pub fn threads(&self) -> usize {
        match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.threads(),
            #[allow(unreachable_patterns)]
            _ => 1,
        }
    }

    /// Runs the model on named inputs; returns the outputs, named, in the model's order.
    /// Inputs are checked against the model first: a wrong name, dtype, rank or dim is an error
    /// that names what the model expects.
    pub fn run(&self, inputs: Vec<(String, Tensor)>) -> Result<Vec<(String, Tensor)>> {
        let ordered = order_inputs(self.info(), inputs)?;
        let outputs = match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.run(ordered)?,
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => wgpu.run(ordered)?,
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => cuda.run(ordered)?,
        };
        Ok(self.name_outputs(outputs))
    }

    /// [`Session::run`] without blocking: the way to run on WebGPU in a browser (the cpu
    /// backend computes in place; a GPU backend awaits the device).
    pub async fn run_async(&self, inputs: Vec<(String, Tensor)>) -> Result<Vec<(String, Tensor)>> {
        let ordered = order_inputs(self.info(), inputs)?;
        let outputs = match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.run(ordered)?,
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => wgpu.run_async(ordered).await?,
            // The driver's own stream synchronises; there is no event loop to yield to.
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => cuda.run(ordered)?,
        };
        Ok(self.name_outputs(outputs))
    }

    fn name_outputs<T>(&self, outputs: Vec<T>) -> Vec<(String, T)> {
        self.info()
            .outputs
            .iter()
            .map(|o| o.name.clone())
            .zip(outputs)
            .collect()
    }

    /// Puts a tensor where this session's backend computes (I/O binding): on a GPU backend it
    /// is uploaded once and can feed many runs; on cpu it stays where it is.
    pub fn upload(&self, tensor: Tensor) -> Result<DeviceTensor> {
        match &self.engine {
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => Ok(DeviceTensor::Wgpu(wgpu.upload(&tensor)?)),
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => Ok(DeviceTensor::Cuda(cuda.upload(&tensor)?)),
            #[allow(unreachable_patterns)]
            _ => Ok(DeviceTensor::Host(tensor)),
        }
    }

    /// Runs on inputs that may already be on the device and leaves the outputs there, so a
    /// pipeline of runs never round-trips through host memory. Inputs whose values the plan
    /// needs (shapes, indices) must be given on the host.
    pub fn run_on_device(
        &self,
        inputs: Vec<(String, DeviceTensor)>,
    ) -> Result<Vec<(String, DeviceTensor)>> {
        let ordered = order_inputs(self.info(), inputs)?;
        let outputs: Vec<DeviceTensor> = match &self.engine {
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => (wgpu.run_on_device(wgpu_feeds(ordered)?)?.into_iter())
                .map(DeviceTensor::Wgpu)
                .collect(),
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => {
                let feeds = ordered
                    .into_iter()
                    .map(|input| match input {
                        DeviceTensor::Host(t) => Ok(tessera_cuda::CudaInput::Host(t)),
                        DeviceTensor::Cuda(t) => Ok(tessera_cuda::CudaInput::Device(t)),
                        #[allow(unreachable_patterns)]
                        other => Ok(tessera_cuda::CudaInput::Host(other.to_host()?)),
                    })
                    .collect::<Result<Vec<_>>>()?;
                cuda.run_on_device(feeds)?
                    .into_iter()
                    .map(DeviceTensor::Cuda)
                    .collect()
            }
            #[allow(unreachable_patterns)]
            _ => {
                let host = ordered
                    .into_iter()
                    .map(|input| match input {
                        DeviceTensor::Host(t) => Ok(t),
                        #[allow(unreachable_patterns)]
                        other => other.to_host(),
                    })
                    .collect::<Result<Vec<_>>>()?;
                match &self.engine {
                    #[cfg(feature = "cpu")]
                    Engine::Cpu(cpu) => {
                        cpu.run(host)?.into_iter().map(DeviceTensor::Host).collect()
                    }
                    #[allow(unreachable_patterns)]
                    _ => return Err(Error::Internal("no engine".into())),
                }
            }
        };
        Ok(self.name_outputs(outputs))
    }

    /// Runs on inputs that may already be on the device (never copied back), without blocking
    /// (in a browser, WebGPU work can only be awaited). With `outputs_on_device` the outputs stay
    /// on the device ([`Session::run_on_device`]); else they are read back in the run, counted
    /// in [`Session::last_transfers`], and come as [`DeviceTensor::Host`].
    pub async fn run_bound_async(
        &self,
        inputs: Vec<(String, DeviceTensor)>,
        outputs_on_device: bool,
    ) -> Result<Vec<(String, DeviceTensor)>> {
        #[cfg(feature = "wgpu")]
        if let Engine::Wgpu(wgpu) = &self.engine {
            let feeds = wgpu_feeds(order_inputs(self.info(), inputs)?)?;
            let outputs = (wgpu
                .run_inputs_async(feeds, outputs_on_device)
                .await?
                .into_iter())
            .map(|output| match output {
                tessera_wgpu::WgpuOutput::Device(t) => DeviceTensor::Wgpu(t),
                tessera_wgpu::WgpuOutput::Host(t) => DeviceTensor::Host(t),
            })
            .collect();
            return Ok(self.name_outputs(outputs));
        }
        let outputs = self.run_on_device(inputs)?;
        if outputs_on_device {
            return Ok(outputs);
        }
        (outputs.into_iter())
            .map(|(name, t)| Ok((name, DeviceTensor::Host(t.to_host()?))))
            .collect()
    }

    /// Where each step of the plan for these inputs runs, what crosses between host and
    /// device, and the device memory it holds. `None` on cpu (everything is on the host).
    pub fn plan_report(&self, inputs: Vec<(String, Tensor)>) -> Result<Option<PlanReport>> {
        let ordered = order_inputs(self.info(), inputs)?;
        match &self.engine {
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => Ok(Some(wgpu.report(&ordered)?)),
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => Ok(Some(cuda.report(&ordered)?)),
            #[allow(unreachable_patterns)]
            _ => {
                drop(ordered);
                Ok(None)
            }
        }
    }

    /// Where each step of the plan for these inputs runs and what a run copies between host
    /// and device, as data, on every backend (cpu: tract's optimized nodes, all on the host,
    /// no copies).
    pub fn placement(&self, inputs: Vec<(String, Tensor)>) -> Result<PlacementSummary> {
        #[cfg(feature = "cpu")]
        if let Some(cpu) = self.cpu() {
            let ordered = order_inputs(self.info(), inputs)?;
            return Ok(PlacementSummary {
                backend: Backend::Cpu.to_string(),
                device: None,
                steps: cpu.placement(&ordered)?,
                copies: Vec::new(),
            });
        }
        let report = self.plan_report(inputs)?.ok_or_else(|| {
            Error::Internal(format!("no placement for the {} backend", self.backend))
        })?;
        Ok(PlacementSummary {
            steps: report.step_placements(),
            copies: report.copy_placements(),
            backend: report.backend,
            device: Some(report.device),
        })
    }

    /// Runs with every step's output read back as soon as it ran (slow: for finding where
    /// backends disagree). `None` on cpu, which runs tract's own graph rather than the plan.
    pub fn trace(&self, inputs: Vec<(String, Tensor)>) -> Result<Option<Trace>> {
        let ordered = order_inputs(self.info(), inputs)?;
        match &self.engine {
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => Ok(Some(wgpu.trace(&ordered)?)),
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => Ok(Some(cuda.trace(&ordered)?)),
            #[allow(unreachable_patterns)]
            _ => {
                drop(ordered);
                Ok(None)
            }
        }
    }

    /// Bytes copied between host and device by the last run (`None` on cpu).
    pub fn last_transfers(&self) -> Option<Transfers> {
        match &self.engine {
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => Some(wgpu.last_transfers()),
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => Some(cuda.last_transfers()),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// Builds the plan for these inputs without running it (to time loading apart from running).
    pub fn prepare(&self, inputs: Vec<(String, Tensor)>) -> Result<()> {
        let ordered = order_inputs(self.info(), inputs)?;
        match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.prepare(&ordered),
            #[cfg(feature = "wgpu")]
            Engine::Wgpu(wgpu) => wgpu.prepare(&ordered),
            #[cfg(feature = "cuda")]
            Engine::Cuda(cuda) => cuda.prepare(&ordered),
        }
    }

    /// Whether a run on these inputs is short and on one thread: the cpu backend with several
    /// threads has built their plan, chosen one thread for it, and its last run took at most
    /// `limit`. A caller for whom a hop to a pool thread costs (the browser's threaded module)
    /// runs these where it is. False on GPU backends, or when the inputs are not what the model
    /// expects (the run then says what is wrong).
    pub fn brief_on_one_thread(&self, inputs: &[(String, Tensor)], limit: Duration) -> bool {
        let named = inputs.iter().map(|(name, t)| (name.clone(), t)).collect();
        let Ok(ordered) = order_inputs(self.info(), named) else {
            return false;
        };
        match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.brief_on_one_thread(&ordered, limit).unwrap_or(false),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = (ordered, limit);
                false
            }
        }
    }

    /// Tells the cpu backend's thread choice what handing a run to a pool thread cost the caller
    /// beyond the run itself, for a caller that runs one-thread runs of at most `brief_limit`
    /// where it is (the browser's threaded module): that hop is charged to the pool. Nothing on
    /// GPU backends.
    pub fn record_pool_hop(&self, cost: Duration, brief_limit: Duration) -> Result<()> {
        match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.record_pool_hop(cost, brief_limit),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = (cost, brief_limit);
                Ok(())
            }
        }
    }

    /// Whether runs on these inputs are still choosing between one thread and the pool (the cpu
    /// backend with several threads times both over its first runs of a plan); a benchmark that
    /// wants steady-state times runs until this is false. Always false on GPU backends.
    pub fn choosing_threads(&self, inputs: Vec<(String, Tensor)>) -> Result<bool> {
        let ordered = order_inputs(self.info(), inputs)?;
        match &self.engine {
            #[cfg(feature = "cpu")]
            Engine::Cpu(cpu) => cpu.choosing_threads(&ordered),
            #[allow(unreachable_patterns)]
            _ => Ok(false),
        }
    }
}

/// A tensor where a session computes: on the host (cpu), or in device memory (I/O binding).
#[derive(Debug, Clone)]
pub enum DeviceTensor {
    Host(Tensor),
    #[cfg(feature = "wgpu")]
    Wgpu(tessera_wgpu::DeviceTensor),
    #[cfg(feature = "cuda")]
    Cuda(tessera_cuda::DeviceTensor),
}

impl DeviceTensor {
    pub fn shape(&self) -> &[usize] {
        match self {
            DeviceTensor::Host(t) => t.shape(),
            #[cfg(feature = "wgpu")]
            DeviceTensor::Wgpu(t) => t.shape(),
            #[cfg(feature = "cuda")]
            DeviceTensor::Cuda(t) => t.shape(),
        }
    }

    pub fn dtype(&self) -> tessera_core::DType {
        match self {
            DeviceTensor::Host(t) => t.dtype(),
            #[cfg(feature = "wgpu")]
            DeviceTensor::Wgpu(t) => t.dtype(),
            #[cfg(feature = "cuda")]
            DeviceTensor::Cuda(t) => t.dtype(),
        }
    }

    /// [`DeviceTensor::to_host`] that waits for the device without blocking (browsers).
    pub async fn to_host_async(&self) -> Result<Tensor> {
        match self {
            #[cfg(feature = "wgpu")]
            DeviceTensor::Wgpu(t) => t.to_host_async().await,
            #[allow(unreachable_patterns)]
            other => other.to_host(),
        }
    }

    /// The tensor in host memory (a read-back from a device).
    pub fn to_host(&self) -> Result<Tensor> {
        match self {
            DeviceTensor::Host(t) => Ok(t.clone()),
            #[cfg(feature = "wgpu")]
            DeviceTensor::Wgpu(t) => t.to_host(),
            #[cfg(feature = "cuda")]
            DeviceTensor::Cuda(t) => t.to_host(),
        }
    }
}

/// A wgpu run's feeds: device tensors as they are, host ones to upload (tensors on another
/// device come back to the host first).
#[cfg(feature = "wgpu")]
fn wgpu_feeds(ordered: Vec<DeviceTensor>) -> Result<Vec<tessera_wgpu::WgpuInput>> {
    (ordered.into_iter())
        .map(|input| match input {
            DeviceTensor::Host(t) => Ok(tessera_wgpu::WgpuInput::Host(t)),
            DeviceTensor::Wgpu(t) => Ok(tessera_wgpu::WgpuInput::Device(t)),
            #[allow(unreachable_patterns)]
            other => Ok(tessera_wgpu::WgpuInput::Host(other.to_host()?)),
        })
        .collect()
}

impl Fed for DeviceTensor {
    fn dtype(&self) -> tessera_core::DType {
        DeviceTensor::dtype(self)
    }

    fn shape(&self) -> &[usize] {
        DeviceTensor::shape(self)
    }
}
