//! [`GpuSession`]: a model on a GPU, with plans per input signature, weights uploaded once, and
//! tensors that stay on the device between runs (I/O binding).

use super::stages::{Built, Planned};
use super::{
    Compiled, DeviceBuffer, Feed, Gpu, Produced, device_bytes, encode_steps, upload_tensor,
};
use crate::repr::{self, Narrowing};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_core::model::specialize::{Folding, Folds, PlanKey};
use tessera_core::plan::{ConstantData, Plan, PlanReport, Trace, Transfers, placement};
use tessera_core::plan_cache::PlanCache;
use tessera_core::tract_onnx::prelude::TypedModel;
use tessera_core::{DType, Error, Model, Result, Tensor};

/// An output's shape and dtype.
pub(super) type Signature = (Vec<usize>, DType);

/// How many plans (distinct input signatures) a session keeps.
const PLAN_CACHE_SIZE: usize = 8;

/// Options of a GPU session.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Run steps the device cannot run on the host instead of refusing the model. Every copy
    /// this causes is listed in the placement report and counted per run.
    pub allow_fallback: bool,
}

/// A tensor that lives on the device (I/O binding): feed it to a run without a copy through
/// host memory, or read it back with [`DeviceTensor::to_host`].
pub struct DeviceTensor<G: Gpu> {
    gpu: Arc<G>,
    buffer: Arc<DeviceBuffer<G::Buffer>>,
    shape: Vec<usize>,
    dtype: DType,
}

impl<G: Gpu> Clone for DeviceTensor<G> {
    fn clone(&self) -> Self {
        DeviceTensor {
            gpu: self.gpu.clone(),
            buffer: self.buffer.clone(),
            shape: self.shape.clone(),
            dtype: self.dtype,
        }
    }
}

impl<G: Gpu> std::fmt::Debug for DeviceTensor<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceTensor")
            .field("shape", &self.shape)
            .field("dtype", &self.dtype)
            .finish_non_exhaustive()
    }
}

impl<G: Gpu> DeviceTensor<G> {
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Copies the tensor back to host memory (blocks: not in a browser).
    pub fn to_host(&self) -> Result<Tensor> {
        self.gpu.block_on(self.to_host_async())
    }

    /// Copies the tensor back to host memory.
    pub async fn to_host_async(&self) -> Result<Tensor> {
        let mut run = self.gpu.begin()?;
        let read = self.gpu.read(&mut run, &[self.buffer.binding()]).await?;
        self.gpu.finish(run).await?;
        let words = read.into_iter().next().ok_or_else(|| {
            Error::Internal("the device returned no words for a tensor read back".into())
        })?;
        repr::from_words(self.dtype, self.shape.clone(), &words)
    }
}

/// A run's output: read back to the host, or left on the device.
pub enum Output<G: Gpu> {
    Host(Tensor),
    Device(DeviceTensor<G>),
}

/// A run's input: on the host, or already on the device.
pub enum Input<G: Gpu> {
    Host(Tensor),
    Device(DeviceTensor<G>),
}

impl<G: Gpu> Clone for Input<G> {
    fn clone(&self) -> Self {
        match self {
            Input::Host(t) => Input::Host(t.clone()),
            Input::Device(t) => Input::Device(t.clone()),
        }
    }
}

impl<G: Gpu> std::fmt::Debug for Input<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Host(t) => f.debug_tuple("Host").field(t).finish(),
            Input::Device(t) => f.debug_tuple("Device").field(t).finish(),
        }
    }
}

impl<G: Gpu> Input<G> {
    fn shape(&self) -> &[usize] {
        match self {
            Input::Host(t) => t.shape(),
            Input::Device(t) => &t.shape,
        }
    }

    fn dtype(&self) -> DType {
        match self {
            Input::Host(t) => t.dtype(),
            Input::Device(t) => t.dtype,
        }
    }
}

pub(super) struct PlanEntry<G: Gpu> {
    /// Runs of one plan share its arena, so they take turns.
    pub(super) compiled: Mutex<Compiled<G>>,
}

/// Weights on the device, each uploaded once per session. tract shares the tensors of untouched
/// weights between plans (found by identity); weights it rebuilds while optimizing a plan for
/// new shapes (a folded reshape) are found by content.
struct Weights<B> {
    /// By the identity of tract's tensor (kept alive here, so the identity stays unique).
    by_identity: HashMap<usize, (ConstantData, Arc<DeviceBuffer<B>>)>,
    by_content: HashMap<(DType, Vec<usize>, u64), Arc<DeviceBuffer<B>>>,
}

/// A model prepared to run on a GPU.
pub struct GpuSession<G: Gpu> {
    model: Arc<Model>,
    pub(super) gpu: Arc<G>,
    allow_fallback: bool,
    plans: Mutex<PlanCache<Planned<G>>>,
    folding: Mutex<Option<Folding>>,
    weights: Mutex<Weights<G::Buffer>>,
    last_transfers: Mutex<Transfers>,
}

impl<G: Gpu> std::fmt::Debug for GpuSession<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuSession")
            .field("backend", &self.gpu.target().backend)
            .field("device", &self.gpu.describe())
            .field("allow_fallback", &self.allow_fallback)
            .finish_non_exhaustive()
    }
}

impl<G: Gpu> GpuSession<G> {
    /// Prepares the model on `gpu`. With `allow_fallback`, steps the device cannot run run on
    /// the host (every copy listed and counted); without, such a model is refused. A model
    /// whose inputs have fixed shapes is planned right away, so unsupported ops are reported at
    /// load.
    pub fn new(gpu: Arc<G>, model: Arc<Model>, allow_fallback: bool) -> Result<GpuSession<G>> {
        let session = GpuSession {
            model,
            gpu,
            allow_fallback,
            plans: Mutex::new(PlanCache::new(PLAN_CACHE_SIZE)),
            folding: Mutex::new(None),
            weights: Mutex::new(Weights {
                by_identity: HashMap::new(),
                by_content: HashMap::new(),
            }),
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

    /// [`GpuSession::new`], with planning checked the way the device needs (in a browser a
    /// kernel the device rejects is only reported asynchronously).
    pub async fn new_async(
        gpu: Arc<G>,
        model: Arc<Model>,
        allow_fallback: bool,
    ) -> Result<GpuSession<G>> {
        let checker = gpu.clone();
        checker
            .checked(|| GpuSession::new(gpu, model, allow_fallback))
            .await
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

    /// The device this session runs on.
    pub fn device_name(&self) -> String {
        self.gpu.describe()
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
    /// host. Blocks: not in a browser.
    pub fn run(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>> {
        self.gpu.block_on(self.run_async(inputs))
    }

    /// [`GpuSession::run`] without blocking: the way to run in a browser.
    pub async fn run_async(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>> {
        // Planned on the inputs themselves: no copy of them on the way.
        let (planned, folding) = self.gpu.checked(|| self.plan_for(&inputs)).await?;
        let feeds = host_feeds(&inputs, &folding);
        self.execute(&planned, &feeds, false)
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
    pub fn run_on_device(&self, inputs: Vec<Input<G>>) -> Result<Vec<DeviceTensor<G>>> {
        self.gpu.block_on(self.run_on_device_async(inputs))
    }

    /// [`GpuSession::run_on_device`] without blocking.
    pub async fn run_on_device_async(&self, inputs: Vec<Input<G>>) -> Result<Vec<DeviceTensor<G>>> {
        (self.run_inputs_async(inputs, true).await?.into_iter())
            .map(|output| match output {
                Output::Device(t) => Ok(t),
                // A host step's output (fallback): put where the caller asked.
                Output::Host(t) => self.upload(&t),
            })
            .collect()
    }

    /// [`GpuSession::run_inputs_async`], blocking (not in a browser).
    pub fn run_inputs(&self, inputs: Vec<Input<G>>, on_device: bool) -> Result<Vec<Output<G>>> {
        self.gpu.block_on(self.run_inputs_async(inputs, on_device))
    }

    /// Runs with inputs on the host or the device (never copied back); with `on_device` the
    /// outputs stay on the device, else they are read back (counted in the run's transfers).
    pub async fn run_inputs_async(
        &self,
        inputs: Vec<Input<G>>,
        on_device: bool,
    ) -> Result<Vec<Output<G>>> {
        let elsewhere = (inputs.iter())
            .position(|i| matches!(i, Input::Device(t) if !Arc::ptr_eq(&t.gpu, &self.gpu)));
        if let Some(ix) = elsewhere {
            return Err(Error::InputMismatch(format!(
                "input {ix} is in another device's memory than this session's: copy it to the \
                 host first"
            )));
        }
        let (planned, folding) = self.gpu.checked(|| self.plan_for_inputs(&inputs)).await?;
        let feeds: Vec<Feed<G::Buffer>> = inputs
            .iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(input, _)| match input {
                Input::Host(t) => Feed::Host(t),
                Input::Device(t) => Feed::Device(&t.buffer),
            })
            .collect();
        let (outputs, signatures) = self.execute(&planned, &feeds, on_device).await?;
        let outputs = outputs.into_iter().zip(signatures);
        let outputs = outputs.map(|(produced, (shape, dtype))| match produced {
            Produced::Device(buffer) => Output::Device(DeviceTensor {
                gpu: self.gpu.clone(),
                buffer,
                shape,
                dtype,
            }),
            Produced::Host(t) => Output::Host(t),
        });
        Ok(outputs.collect())
    }

    /// Uploads a tensor to the device (counted as input bytes of no run).
    pub fn upload(&self, tensor: &Tensor) -> Result<DeviceTensor<G>> {
        let buffer = upload_tensor(&*self.gpu, tensor, Narrowing::Checked, "an uploaded tensor")?;
        Ok(DeviceTensor {
            gpu: self.gpu.clone(),
            buffer: Arc::new(buffer),
            shape: tensor.shape().to_vec(),
            dtype: tensor.dtype(),
        })
    }

    /// Plans for these inputs without running: placement and device memory. A model planned in
    /// stages (shapes that depend on values) runs once on them, to know the counts its later
    /// stages are planned for. Blocks: not in a browser for a staged model.
    pub fn report(&self, inputs: &[Tensor]) -> Result<PlanReport> {
        let (planned, folding) = self.plan_for(inputs)?;
        let entry = match &planned {
            Planned::Whole(entry) => entry,
            Planned::Staged(_) => {
                let feeds = host_feeds(inputs, &folding);
                let ran = self
                    .gpu
                    .block_on(self.run_planned(&planned, &feeds, false))?;
                return self.stages_report(&ran.3);
            }
        };
        let compiled = entry.compiled.lock().map_err(|e| self.poisoned(e))?;
        Ok(PlanReport {
            backend: self.gpu.target().backend.into(),
            device: self.gpu.describe(),
            placement: compiled.placement.clone(),
            memory: compiled.device_memory,
            plan: compiled.plan.clone(),
            next: None,
        })
    }

    /// Runs with every step's outputs read back as soon as it ran: the plan, its runtime inputs
    /// (folded ones left out), and every value the device computed. Blocks: not in a browser.
    pub fn trace(&self, inputs: &[Tensor]) -> Result<Trace> {
        self.gpu.block_on(self.trace_async(inputs))
    }

    /// [`GpuSession::trace`] without blocking.
    pub async fn trace_async(&self, inputs: &[Tensor]) -> Result<Trace> {
        let (planned, folding) = self.gpu.checked(|| self.plan_for(inputs)).await?;
        let entry = self.one_plan(&planned, "tracing")?;
        let runtime: Vec<Tensor> = inputs
            .iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(t, _)| t.clone())
            .collect();
        let feeds: Vec<Feed<G::Buffer>> = runtime.iter().map(Feed::Host).collect();
        let compiled = entry.compiled.lock().map_err(|e| self.poisoned(e))?;
        let mut values = HashMap::new();
        compiled
            .run(&*self.gpu, &feeds, false, Some(&mut values), None)
            .await?;
        Ok(Trace {
            plan: compiled.plan.clone(),
            inputs: runtime,
            values,
        })
    }

    /// Runs `runs` times with each step submitted and waited for on its own, and returns the
    /// plan with every step's time summed over the runs (wall clock around submit + wait: it
    /// includes each submission's overhead, which one batched run does not pay). Natively only.
    pub fn profile(&self, inputs: &[Tensor], runs: u32) -> Result<(Arc<Plan>, Vec<Duration>)> {
        let (planned, folding) = self.plan_for(inputs)?;
        let entry = self.one_plan(&planned, "profiling")?;
        let feeds = host_feeds(inputs, &folding);
        let compiled = entry.compiled.lock().map_err(|e| self.poisoned(e))?;
        let mut total: Vec<Duration> = vec![Duration::ZERO; compiled.plan.steps.len()];
        for _ in 0..runs {
            let mut times = Vec::with_capacity(total.len());
            self.gpu
                .block_on(compiled.run(&*self.gpu, &feeds, false, None, Some(&mut times)))?;
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

    /// The plan of a model planned whole; what `doing` needs (a staged model is refused).
    fn one_plan<'a>(&self, planned: &'a Planned<G>, doing: &str) -> Result<&'a PlanEntry<G>> {
        match planned {
            Planned::Whole(entry) => Ok(entry),
            Planned::Staged(_) => Err(Error::Run {
                backend: self.gpu.target().backend.into(),
                message: format!(
                    "{doing} is not available for a model whose shapes depend on values \
                     computed at run time (it runs in stages): run it, or ask for its placement"
                ),
            }),
        }
    }

    /// One run of what was planned; records its transfers. Returns the outputs and their
    /// signatures.
    async fn execute(
        &self,
        planned: &Planned<G>,
        feeds: &[Feed<'_, G::Buffer>],
        on_device: bool,
    ) -> Result<(Vec<Produced<G::Buffer>>, Vec<Signature>)> {
        let (outputs, signatures, transfers, _) =
            self.run_planned(planned, feeds, on_device).await?;
        *self.last_transfers.lock().map_err(|e| self.poisoned(e))? = transfers;
        Ok((outputs, signatures))
    }

    /// The plan for inputs that may live on the device. Lowering needs host tensors: device
    /// inputs stand in as zeros of their shape, which is only right when the plan does not
    /// need their values (folding them is refused).
    fn plan_for_inputs(&self, inputs: &[Input<G>]) -> Result<(Planned<G>, Folding)> {
        // A plan already built for these signatures is found without copying any input.
        let preferred = self.folding.lock().map_err(|e| self.poisoned(e))?.clone();
        if let Some(folding) = &preferred {
            let signatures = inputs.iter().map(|input| match input {
                Input::Host(t) => (t.dtype(), t.shape(), Some(t)),
                Input::Device(t) => (t.dtype, &t.shape[..], None),
            });
            if let Some(key) = PlanKey::from_signatures(signatures, folding)
                && let Some(entry) = self.plans.lock().map_err(|e| self.poisoned(e))?.get(&key)
            {
                return Ok((entry, folding.clone()));
            }
        }
        let host: Vec<Tensor> = inputs
            .iter()
            .map(|input| match input {
                Input::Host(t) => Ok(t.clone()),
                Input::Device(t) => Tensor::zeros(t.dtype, t.shape.clone()),
            })
            .collect::<Result<_>>()?;
        let (entry, folding) = self.plan_for(&host)?;
        for ((input, folded), info) in inputs.iter().zip(&folding).zip(&self.model.info().inputs) {
            if *folded && matches!(input, Input::Device(_)) {
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

    fn plan_for(&self, inputs: &[Tensor]) -> Result<(Planned<G>, Folding)> {
        let preferred = self.folding.lock().map_err(|e| self.poisoned(e))?.clone();
        if let Some(folding) = &preferred {
            let key = PlanKey::new(inputs, folding);
            if let Some(entry) = self.plans.lock().map_err(|e| self.poisoned(e))?.get(&key) {
                return Ok((entry, folding.clone()));
            }
        }
        // Only small shape-like inputs are folded in: a plan folding a large one would compute
        // the model from its values on the host when the plan is made, out of placement's
        // sight, again for each new value.
        let lowering = |folds| tessera_core::model::specialize::Lowering {
            before_declutter: Some(tessera_core::lower::prepare_for_gpu),
            keep_axes: false,
            folds,
        };
        // A folding that leaves an input to run and under which every step lowers comes first
        // (training-mode Dropout lowers once its ratio is known); else the first folding that
        // plans, whose unsupported steps placement names (or, with fallback, runs on the host).
        // Either may be cut into stages where shapes depend on values (`stages.rs`).
        let (lowered, built) = match self.model.lower_then_for(
            inputs,
            preferred.as_deref(),
            lowering(Folds::SmallLeavingAnInput),
            |typed| Built::of(typed, true),
        ) {
            Ok(found) => found,
            Err(_) => self.model.lower_then_for(
                inputs,
                preferred.as_deref(),
                lowering(Folds::Small),
                |typed| Built::of(typed, false),
            )?,
        };
        let planned = self.planned(built, lowered.typed)?;
        let key = PlanKey::new(inputs, &lowered.folding);
        self.plans
            .lock()
            .map_err(|e| self.poisoned(e))?
            .insert(key, planned.clone());
        *self.folding.lock().map_err(|e| self.poisoned(e))? = Some(lowered.folding.clone());
        Ok((planned, lowered.folding))
    }

    /// Makes `plan` (of the graph `typed`) ready for the device: each step encoded once
    /// (placement reads why a step has no kernel, the compiled plan takes the kernels), weights
    /// uploaded once per session.
    pub(super) fn compile(&self, plan: Plan, typed: TypedModel) -> Result<Arc<PlanEntry<G>>> {
        let plan = Arc::new(plan);
        let target = self.gpu.target();
        let kernels = encode_steps(&plan, &target)?;
        let placement = placement::place(
            &plan,
            target.backend,
            &|ix| kernels[ix].as_ref().err().cloned(),
            self.allow_fallback,
            &device_bytes,
        )?;
        let mut weights = self.weights.lock().map_err(|e| self.poisoned(e))?;
        let compiled = Compiled::new(
            &*self.gpu,
            plan.clone(),
            Arc::new(typed),
            placement,
            kernels,
            &mut |constant| {
                let id = constant.data.identity();
                if let Some((_, buffer)) = weights.by_identity.get(&id) {
                    return Ok(buffer.clone());
                }
                let value = plan.value(constant.value)?;
                let what = format!("constant '{}'", value.name);
                let tensor = constant.data.to_tensor()?;
                // The device words are what is hashed and uploaded: no other copy.
                let words = repr::to_words(tensor.data(), Narrowing::Saturating, &what)?;
                let content = (
                    tensor.dtype(),
                    tensor.shape().to_vec(),
                    content_hash(&words),
                );
                let buffer = match weights.by_content.get(&content) {
                    Some(buffer) => buffer.clone(),
                    None => {
                        let buffer = Arc::new(DeviceBuffer {
                            buffer: self.gpu.upload(&words, &what)?,
                            bytes: words.len(),
                        });
                        weights.by_content.insert(content, buffer.clone());
                        buffer
                    }
                };
                weights
                    .by_identity
                    .insert(id, (constant.data.clone(), buffer.clone()));
                Ok(buffer)
            },
        )?;
        Ok(Arc::new(PlanEntry {
            compiled: Mutex::new(compiled),
        }))
    }

    pub(super) fn poisoned<T>(&self, _: std::sync::PoisonError<T>) -> Error {
        Error::Internal(format!(
            "a previous {} run panicked while holding a lock",
            self.gpu.target().backend
        ))
    }
}

/// The runtime inputs (those not folded into the plan) as host feeds, in order.
fn host_feeds<'a, B>(inputs: &'a [Tensor], folding: &[bool]) -> Vec<Feed<'a, B>> {
    inputs
        .iter()
        .zip(folding)
        .filter(|(_, folded)| !**folded)
        .map(|(t, _)| Feed::Host(t))
        .collect()
}

fn content_hash(words: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    words.hash(&mut hasher);
    hasher.finish()
}
