//! [`WgpuSession`]: a model on the wgpu device, with plans per input signature.

use crate::context::{GpuContext, block_on, context, open_context};
use crate::executor::{Compiled, DeviceBuffer, Feed, Produced, device_bytes, upload};
use crate::kernels::{self, StepIo};
use crate::repr::Narrowing;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_core::model::specialize::{Folding, PlanKey};
use tessera_core::plan::{Plan, PlanReport, Step, Trace, Transfers, placement};
use tessera_core::plan_cache::PlanCache;
use tessera_core::{DType, Error, Model, Result, Tensor};

/// An output's shape and dtype.
type Signature = (Vec<usize>, DType);

/// How many plans (distinct input signatures) a session keeps.
const PLAN_CACHE_SIZE: usize = 8;

/// Options of the wgpu backend.
#[derive(Debug, Clone, Default)]
pub struct WgpuOptions {
    /// Run steps the device cannot run on the host instead of refusing the model. Every copy
    /// this causes is listed in the placement report and counted per run.
    pub allow_fallback: bool,
}

/// A tensor that lives on the wgpu device (I/O binding): feed it to a run without a copy
/// through host memory, or read it back with [`DeviceTensor::to_host`].
#[derive(Debug, Clone)]
pub struct DeviceTensor {
    buffer: Arc<DeviceBuffer>,
    shape: Vec<usize>,
    dtype: DType,
}

impl DeviceTensor {
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Copies the tensor back to host memory (blocks: natively only).
    pub fn to_host(&self) -> Result<Tensor> {
        block_on(self.to_host_async())
    }

    /// Copies the tensor back to host memory.
    pub async fn to_host_async(&self) -> Result<Tensor> {
        let ctx = context()?;
        let words =
            crate::executor::read_back(&ctx, &self.buffer.buffer, 0, self.buffer.bytes).await?;
        crate::repr::from_words(self.dtype, self.shape.clone(), &words)
    }
}

/// A run's input: on the host, or already on the device.
#[derive(Debug, Clone)]
pub enum WgpuInput {
    Host(Tensor),
    Device(DeviceTensor),
}

impl WgpuInput {
    fn shape(&self) -> &[usize] {
        match self {
            WgpuInput::Host(t) => t.shape(),
            WgpuInput::Device(t) => &t.shape,
        }
    }

    fn dtype(&self) -> DType {
        match self {
            WgpuInput::Host(t) => t.dtype(),
            WgpuInput::Device(t) => t.dtype,
        }
    }
}

struct PlanEntry {
    /// Runs of one plan share its arena, so they take turns.
    compiled: Mutex<Compiled>,
}

/// A model prepared to run on the wgpu device.
pub struct WgpuSession {
    model: Arc<Model>,
    ctx: Arc<GpuContext>,
    options: WgpuOptions,
    plans: Mutex<PlanCache<Arc<PlanEntry>>>,
    folding: Mutex<Option<Folding>>,
    /// Constants uploaded once per session, by the identity of tract's tensor.
    weights: Mutex<Weights>,
    last_transfers: Mutex<Transfers>,
}

impl std::fmt::Debug for WgpuSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuSession")
            .field("adapter", &self.ctx.adapter)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Why `step` cannot run on wgpu, or `None` when it can.
pub(crate) fn host_reason(plan: &Plan, step: &Step) -> Option<String> {
    let io = StepIo {
        inputs: step
            .inputs
            .iter()
            .filter_map(|&id| plan.value(id).ok())
            .collect(),
        outputs: step
            .outputs
            .iter()
            .filter_map(|&id| plan.value(id).ok())
            .collect(),
    };
    kernels::unsupported_reason(&step.op, &io)
}

impl WgpuSession {
    /// Opens the device (once per process) and prepares the model. A model whose inputs have
    /// fixed shapes is planned right away, so unsupported ops are reported at load.
    pub fn new(model: Arc<Model>, options: WgpuOptions) -> Result<WgpuSession> {
        Self::with_context(context()?, model, options)
    }

    /// [`WgpuSession::new`] without blocking: the way to open one in a browser.
    pub async fn new_async(model: Arc<Model>, options: WgpuOptions) -> Result<WgpuSession> {
        let ctx = open_context().await?;
        checked(&ctx.clone(), || Self::with_context(ctx, model, options)).await
    }

    fn with_context(
        ctx: Arc<GpuContext>,
        model: Arc<Model>,
        options: WgpuOptions,
    ) -> Result<WgpuSession> {
        let session = WgpuSession {
            model,
            ctx,
            options,
            plans: Mutex::new(PlanCache::new(PLAN_CACHE_SIZE)),
            folding: Mutex::new(None),
            weights: Mutex::new(Weights::default()),
            last_transfers: Mutex::new(Transfers::default()),
        };
        if let Some(sample) = session.sample_inputs() {
            match session.plan_for(&sample) {
                Err(e @ Error::UnsupportedOps { .. }) => return Err(e),
                Err(e) => {
                    tracing::debug!(error = %e, "planning at load failed; planning at first run")
                }
                Ok(_) => {}
            }
        }
        Ok(session)
    }

    /// Zero inputs of the declared shapes, when every dim is fixed.
    fn sample_inputs(&self) -> Option<Vec<Tensor>> {
        self.model
            .info()
            .inputs
            .iter()
            .map(|input| {
                let shape = input
                    .dims
                    .as_ref()?
                    .iter()
                    .map(|d| match d {
                        tessera_core::Dim::Fixed(n) => Some(*n),
                        _ => None,
                    })
                    .collect::<Option<Vec<usize>>>()?;
                // The model file states these dims: a sample past 256 MiB (or one whose size
                // overflows) is not allocated; the plan is then made at the first run.
                if tessera_core::tensor::byte_count(input.dtype, &shape)? > 256 << 20 {
                    return None;
                }
                Tensor::zeros(input.dtype, shape).ok()
            })
            .collect()
    }

    /// The adapter this session runs on.
    pub fn adapter(&self) -> String {
        self.ctx.adapter.to_string()
    }

    /// Bytes of weights (constants) this session has uploaded: each once, whatever plans use it.
    pub fn uploaded_weight_bytes(&self) -> usize {
        self.weights
            .lock()
            .map(|w| w.by_content.values().map(|b| b.bytes).sum())
            .unwrap_or(0)
    }

    /// Bytes copied between host and device by the last run.
    pub fn last_transfers(&self) -> Transfers {
        self.last_transfers.lock().map(|t| *t).unwrap_or_default()
    }

    /// Runs the model on host inputs (checked and in model order); outputs come back to the
    /// host. Blocks: natively only.
    pub fn run(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>> {
        block_on(self.run_async(inputs))
    }

    /// [`WgpuSession::run`] without blocking: the way to run in a browser.
    pub async fn run_async(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>> {
        // Planned on the inputs themselves: no copy of them on the way.
        let (entry, folding) = checked(&self.ctx, || self.plan_for(&inputs)).await?;
        let feeds: Vec<Feed> = inputs
            .iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(t, _)| Feed::Host(t))
            .collect();
        self.execute(&entry, &feeds, false)
            .await?
            .0
            .into_iter()
            .map(|p| match p {
                Produced::Host(t) => Ok(t),
                Produced::Device(_) => Err(Error::Internal("output left on the device".into())),
            })
            .collect()
    }

    /// Runs with inputs on the host or the device, and leaves every output on the device.
    pub fn run_on_device(&self, inputs: Vec<WgpuInput>) -> Result<Vec<DeviceTensor>> {
        block_on(self.run_on_device_async(inputs))
    }

    /// [`WgpuSession::run_on_device`] without blocking.
    pub async fn run_on_device_async(&self, inputs: Vec<WgpuInput>) -> Result<Vec<DeviceTensor>> {
        let (plan_outputs, shapes) = self.run_inner(&inputs, true).await?;
        plan_outputs
            .into_iter()
            .zip(shapes)
            .map(|(p, (shape, dtype))| match p {
                Produced::Device(buffer) => Ok(DeviceTensor {
                    buffer,
                    shape,
                    dtype,
                }),
                Produced::Host(t) => self.upload(&t),
            })
            .collect()
    }

    /// Uploads a tensor to the device (counted as input bytes of no run).
    pub fn upload(&self, tensor: &Tensor) -> Result<DeviceTensor> {
        let buffer = upload(&self.ctx, tensor, Narrowing::Checked, "an uploaded tensor")?;
        Ok(DeviceTensor {
            buffer: Arc::new(buffer),
            shape: tensor.shape().to_vec(),
            dtype: tensor.dtype(),
        })
    }

    /// Plans for these inputs without running: placement and device memory.
    pub fn report(&self, inputs: &[Tensor]) -> Result<PlanReport> {
        let (entry, _) = self.plan_for(inputs)?;
        let compiled = entry.compiled.lock().map_err(poisoned)?;
        Ok(PlanReport {
            backend: "wgpu".into(),
            device: self.ctx.adapter.to_string(),
            placement: compiled.placement.clone(),
            memory: compiled.device_memory,
            plan: compiled.plan.clone(),
        })
    }

    /// Runs with every step's outputs read back as soon as it ran: the plan, its runtime inputs
    /// (folded ones left out), and every value the device computed.
    pub fn trace(&self, inputs: &[Tensor]) -> Result<Trace> {
        block_on(self.trace_async(inputs))
    }

    /// [`WgpuSession::trace`] without blocking.
    pub async fn trace_async(&self, inputs: &[Tensor]) -> Result<Trace> {
        let (entry, folding) = checked(&self.ctx, || self.plan_for(inputs)).await?;
        let runtime: Vec<Tensor> = inputs
            .iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(t, _)| t.clone())
            .collect();
        let feeds: Vec<Feed> = runtime.iter().map(Feed::Host).collect();
        let compiled = entry.compiled.lock().map_err(poisoned)?;
        let mut values = HashMap::new();
        compiled
            .run(&self.ctx, &feeds, false, Some(&mut values), None)
            .await?;
        Ok(Trace {
            plan: compiled.plan.clone(),
            inputs: runtime,
            values,
        })
    }

    /// Runs `runs` times with each step submitted and waited for on its own, and returns the
    /// plan with every step's time summed over the runs (wall clock around submit + wait: it
    /// includes each submission's overhead, which one batched run does not pay).
    pub fn profile(&self, inputs: &[Tensor], runs: u32) -> Result<(Arc<Plan>, Vec<Duration>)> {
        let (entry, folding) = self.plan_for(inputs)?;
        let feeds: Vec<Feed> = inputs
            .iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(t, _)| Feed::Host(t))
            .collect();
        let compiled = entry.compiled.lock().map_err(poisoned)?;
        let mut total: Vec<Duration> = vec![Duration::ZERO; compiled.plan.steps.len()];
        for _ in 0..runs {
            let mut times = Vec::with_capacity(total.len());
            block_on(compiled.run(&self.ctx, &feeds, false, None, Some(&mut times)))?;
            for (sum, t) in total.iter_mut().zip(times) {
                *sum += t;
            }
        }
        Ok((compiled.plan.clone(), total))
    }

    /// Builds the plan for these inputs without running it.
    pub fn prepare(&self, inputs: &[Tensor]) -> Result<()> {
        self.plan_for(inputs).map(drop)
    }

    /// Runs with inputs that may be on the device; also returns each output's shape and dtype.
    async fn run_inner(
        &self,
        inputs: &[WgpuInput],
        on_device: bool,
    ) -> Result<(Vec<Produced>, Vec<Signature>)> {
        let (entry, folding) = checked(&self.ctx, || self.plan_for_inputs(inputs)).await?;
        let feeds: Vec<Feed> = inputs
            .iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(input, _)| match input {
                WgpuInput::Host(t) => Feed::Host(t),
                WgpuInput::Device(t) => Feed::Device(&t.buffer),
            })
            .collect();
        self.execute(&entry, &feeds, on_device).await
    }

    /// One run of a plan; records its transfers. Returns the outputs and their signatures.
    async fn execute(
        &self,
        entry: &PlanEntry,
        feeds: &[Feed<'_>],
        on_device: bool,
    ) -> Result<(Vec<Produced>, Vec<Signature>)> {
        let compiled = entry.compiled.lock().map_err(poisoned)?;
        let (outputs, transfers) = compiled
            .run(&self.ctx, feeds, on_device, None, None)
            .await?;
        *self.last_transfers.lock().map_err(poisoned)? = transfers;
        let signature = compiled
            .plan
            .outputs
            .iter()
            .map(|&id| compiled.plan.value(id).map(|v| (v.shape.clone(), v.dtype)))
            .collect::<Result<_>>()?;
        Ok((outputs, signature))
    }

    /// The plan for inputs that may live on the device. Lowering needs host tensors: device
    /// inputs stand in as zeros of their shape, which is only right when the plan does not
    /// need their values (folding them is refused).
    fn plan_for_inputs(&self, inputs: &[WgpuInput]) -> Result<(Arc<PlanEntry>, Folding)> {
        let host: Vec<Tensor> = inputs
            .iter()
            .map(|input| match input {
                WgpuInput::Host(t) => Ok(t.clone()),
                WgpuInput::Device(t) => Tensor::zeros(t.dtype, t.shape.clone()),
            })
            .collect::<Result<_>>()?;
        let (entry, folding) = self.plan_for(&host)?;
        for ((input, folded), info) in inputs.iter().zip(&folding).zip(&self.model.info().inputs) {
            if *folded && matches!(input, WgpuInput::Device(_)) {
                return Err(Error::InputMismatch(format!(
                    "input '{}' ({} {:?}) must be given on the host: the plan needs its values (a shape or an index) to be built",
                    info.name,
                    input.dtype(),
                    input.shape()
                )));
            }
        }
        Ok((entry, folding))
    }

    fn plan_for(&self, inputs: &[Tensor]) -> Result<(Arc<PlanEntry>, Folding)> {
        let preferred = self.folding.lock().map_err(poisoned)?.clone();
        if let Some(folding) = &preferred {
            let key = PlanKey::new(inputs, folding);
            if let Some(entry) = self.plans.lock().map_err(poisoned)?.get(&key) {
                return Ok((entry, folding.clone()));
            }
        }
        let (lowered, plan) = self
            .model
            .lower_then(inputs, preferred.as_deref(), Plan::build)?;
        let plan = Arc::new(plan);

        let placement = placement::place(
            &plan,
            "wgpu",
            &|ix| host_reason(&plan, &plan.steps[ix]),
            self.options.allow_fallback,
            &device_bytes,
        )?;
        let compiled = {
            let mut weights = self.weights.lock().map_err(poisoned)?;
            let ctx = &self.ctx;
            Compiled::new(
                ctx,
                plan.clone(),
                Arc::new(lowered.typed),
                placement,
                &mut |constant| {
                    let id = constant.data.identity();
                    if let Some((_, buffer)) = weights.by_identity.get(&id) {
                        return Ok(buffer.clone());
                    }
                    let value = plan.value(constant.value)?;
                    let tensor = constant.data.to_tensor()?;
                    let content = content_key(&tensor);
                    let buffer = match weights.by_content.get(&content) {
                        Some(buffer) => buffer.clone(),
                        None => {
                            let buffer = Arc::new(upload(
                                ctx,
                                &tensor,
                                Narrowing::Saturating,
                                &format!("constant '{}'", value.name),
                            )?);
                            weights.by_content.insert(content, buffer.clone());
                            buffer
                        }
                    };
                    weights
                        .by_identity
                        .insert(id, (constant.data.clone(), buffer.clone()));
                    Ok(buffer)
                },
            )?
        };
        let entry = Arc::new(PlanEntry {
            compiled: Mutex::new(compiled),
        });
        let key = PlanKey::new(inputs, &lowered.folding);
        self.plans
            .lock()
            .map_err(poisoned)?
            .insert(key, entry.clone());
        *self.folding.lock().map_err(poisoned)? = Some(lowered.folding.clone());
        Ok((entry, lowered.folding))
    }
}

/// Weights on the device, each uploaded once per session. tract shares the tensors of untouched
/// weights between plans (found by identity); weights it rebuilds while optimizing a plan for
/// new shapes (a folded reshape) are found by content.
#[derive(Default)]
struct Weights {
    /// By the identity of tract's tensor (kept alive here, so the identity stays unique).
    by_identity: HashMap<usize, (tessera_core::plan::ConstantData, Arc<DeviceBuffer>)>,
    by_content: HashMap<(DType, Vec<usize>, u64), Arc<DeviceBuffer>>,
}

/// Runs `plan` (which compiles kernels and uploads weights). In a browser a kernel the device
/// rejects is only reported asynchronously, so planning is checked under one error scope there;
/// natively each kernel is checked as it compiles.
async fn checked<T>(ctx: &GpuContext, plan: impl FnOnce() -> Result<T>) -> Result<T> {
    #[cfg(target_arch = "wasm32")]
    {
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let planned = plan();
        if let Some(error) = scope.pop().await {
            return Err(Error::Prepare {
                backend: "wgpu".into(),
                message: format!("the device rejected a kernel or buffer: {error}"),
            });
        }
        planned
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let _ = ctx;
        plan()
    }
}

fn content_key(tensor: &Tensor) -> (DType, Vec<usize>, u64) {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    tensor.data().to_le_bytes().hash(&mut hasher);
    (tensor.dtype(), tensor.shape().to_vec(), hasher.finish())
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::Internal("a previous wgpu run panicked while holding a lock".into())
}
