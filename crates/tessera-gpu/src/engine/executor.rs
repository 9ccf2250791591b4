//! A plan made ready for a device (memory allocated, kernels compiled and bound once), and its
//! runs.
//!
//! Memory: intermediate values live at the offsets the memory plan gives them in one arena;
//! each runtime input has its own buffer; constants are uploaded once per session (the session
//! keeps them across plans); every dispatch's parameters share one buffer; im2col columns use
//! one scratch buffer sized for the largest step. A run uploads the inputs, records every device
//! step, and reads back only the outputs. Steps placed on the host (fallback) read back what they
//! need and upload what the device reads later, exactly the copies the placement lists, and every
//! copy is counted in [`Transfers`].

use super::{ALIGNMENT, Binding, DeviceBuffer, Gpu, upload_tensor};
use crate::kernels::{Grid, Kernel, Launch, Operand, StepIo, Target, encode, step_reason};
use crate::repr::{self, Narrowing, WORD_BYTES};
use std::collections::HashMap;
use std::sync::Arc;
use tessera_core::plan::{
    Constant, Device, DeviceMemory, MemoryPlan, Placement, Plan, Role, TransferDirection,
    Transfers, Value, ValueId,
};
use tessera_core::tract_onnx::prelude::TypedModel;
use tessera_core::{Error, Result, Tensor};

/// A runtime input as a run is given it.
pub enum Feed<'a, B> {
    Host(&'a Tensor),
    Device(&'a DeviceBuffer<B>),
}

/// Where a run leaves an output.
pub enum Produced<B> {
    Host(Tensor),
    Device(Arc<DeviceBuffer<B>>),
}

/// What the compiled plan keeps for one step.
enum StepExec<P> {
    Device(Vec<P>),
    Host,
    /// Writes nothing (empty outputs).
    Skip,
}

/// Where a value's words are on the device.
#[derive(Clone, Copy)]
enum Location {
    Arena(usize),
    Input(usize),
    /// Uploaded with the plan's weights when a device step reads it.
    Constant,
    /// No elements: nothing to bind or copy.
    Empty,
}

/// The bytes a value takes on the device.
pub fn device_bytes(value: &Value) -> usize {
    value.len() * WORD_BYTES
}

/// A step's input and output values.
fn step_io(plan: &Plan, ix: usize) -> Result<StepIo<'_>> {
    let step = &plan.steps[ix];
    let values = |ids: &[ValueId]| ids.iter().map(|&id| plan.value(id)).collect::<Result<_>>();
    Ok(StepIo {
        inputs: values(&step.inputs)?,
        outputs: values(&step.outputs)?,
    })
}

/// Each step of `plan` encoded for `target` once: its kernel, or why it has none (what the
/// placement reports for a step it puts on the host). [`Compiled::new`] takes the kernels.
pub fn encode_steps(
    plan: &Plan,
    target: &Target,
) -> Result<Vec<std::result::Result<Kernel, String>>> {
    (0..plan.steps.len())
        .map(|ix| {
            let io = step_io(plan, ix)?;
            let step = &plan.steps[ix];
            Ok(match step_reason(&io, target) {
                Some(reason) => Err(reason),
                None => encode(&step.op, &io, target).map_err(|e| match e {
                    Error::UnsupportedOps { .. } => {
                        format!("no {} kernel for {}", target.backend, step.op.name())
                    }
                    e => e.to_string(),
                }),
            })
        })
        .collect()
}

/// Uploads a constant, or returns the session's copy of it.
pub type Weights<'a, B> = dyn FnMut(&Constant) -> Result<Arc<DeviceBuffer<B>>> + 'a;

/// A plan ready to run on a device.
pub struct Compiled<G: Gpu> {
    pub plan: Arc<Plan>,
    typed: Arc<TypedModel>,
    pub placement: Placement,
    pub memory: MemoryPlan,
    pub device_memory: DeviceMemory,
    arena: Option<G::Buffer>,
    inputs: Vec<Option<G::Buffer>>,
    constants: HashMap<ValueId, Arc<DeviceBuffer<G::Buffer>>>,
    steps: Vec<StepExec<G::Prepared>>,
    // What the prepared launches bind, kept alive with them.
    _params: Option<G::Buffer>,
    _scratch: Option<G::Buffer>,
    /// Bound where a value has no elements.
    dummy: G::Buffer,
}

/// One kernel dispatch's place in the parameter buffer, or a GEMM call.
struct Pending {
    step: usize,
    launch: Launch,
    /// Byte range of its parameters (kernel dispatches).
    params: Option<(usize, usize)>,
}

impl<G: Gpu> Compiled<G> {
    /// Allocates and binds everything `plan` needs; `kernels` are [`encode_steps`]' (with the
    /// device's target), and `weights` uploads a constant (or returns the session's copy of it).
    pub fn new(
        gpu: &G,
        plan: Arc<Plan>,
        typed: Arc<TypedModel>,
        placement: Placement,
        kernels: Vec<std::result::Result<Kernel, String>>,
        weights: &mut Weights<'_, G::Buffer>,
    ) -> Result<Compiled<G>> {
        let backend = gpu.target().backend;
        let prepare_error = |message: String| Error::Prepare {
            backend: backend.into(),
            message,
        };
        let memory = MemoryPlan::build_with(
            &plan.values,
            &plan.steps,
            &plan.outputs,
            &device_bytes,
            ALIGNMENT,
        )?;
        let max_buffer = gpu.max_buffer_bytes();
        if memory.planned_bytes > max_buffer {
            return Err(prepare_error(format!(
                "the plan's intermediate values need {} bytes at once, above this device's largest buffer ({max_buffer} bytes)",
                memory.planned_bytes
            )));
        }
        let arena = (memory.planned_bytes > 0)
            .then(|| gpu.alloc(memory.planned_bytes, "the arena of intermediate values"))
            .transpose()?;
        let max_binding = gpu.max_binding_bytes();
        let mut inputs = vec![];
        let mut input_bytes = 0;
        for &id in &plan.inputs {
            let value = plan.value(id)?;
            let bytes = device_bytes(value);
            if bytes > max_binding {
                return Err(prepare_error(format!(
                    "input '{}' needs {bytes} bytes on the device, above this device's largest binding ({max_binding} bytes)",
                    value.name
                )));
            }
            input_bytes += bytes;
            let what = format!("input '{}'", value.name);
            inputs.push((bytes > 0).then(|| gpu.alloc(bytes, &what)).transpose()?);
        }

        // Constants the device reads, and constant outputs the device can hold (for runs that
        // leave their outputs there; host runs return them from the host).
        let mut constants = HashMap::new();
        let mut constant_bytes = 0;
        let device_reads: Vec<ValueId> = plan
            .steps
            .iter()
            .zip(&placement.steps)
            .filter(|(_, d)| **d == Device::Device)
            .flat_map(|(s, _)| s.inputs.iter().copied())
            .collect();
        for constant in &plan.constants {
            let holdable = repr::word(plan.value(constant.value)?.dtype).is_some();
            let used = device_reads
                .iter()
                .chain(plan.outputs.iter().filter(|_| holdable))
                .any(|&id| plan.root(id).ok() == Some(constant.value));
            if used && !plan.value(constant.value)?.is_empty() {
                let buffer = weights(constant)?;
                constant_bytes += buffer.bytes;
                constants.insert(constant.value, buffer);
            }
        }

        let dummy = gpu.alloc(WORD_BYTES, "an empty tensor")?;
        let mut compiled = Compiled {
            plan: plan.clone(),
            typed,
            placement,
            memory,
            device_memory: DeviceMemory::default(),
            arena,
            inputs,
            constants,
            steps: vec![],
            _params: None,
            _scratch: None,
            dummy,
        };

        // First pass: the launches and their parameters; second: bindings.
        let mut kinds = vec![];
        let mut pending: Vec<Pending> = vec![];
        let mut params_blob: Vec<u8> = vec![];
        let mut scratch_words = 0;
        for (ix, (step, kernel)) in plan.steps.iter().zip(kernels).enumerate() {
            if compiled.placement.steps[ix] == Device::Host {
                kinds.push(StepExec::Host);
                continue;
            }
            let mut outputs = step.outputs.iter().map(|&id| plan.value(id));
            if outputs.try_fold(true, |empty, v| Ok::<_, Error>(empty && v?.is_empty()))? {
                kinds.push(StepExec::Skip);
                continue;
            }
            kinds.push(StepExec::Device(vec![]));
            let kernel = kernel.map_err(|reason| {
                prepare_error(format!(
                    "step '{}' ({}): {reason}",
                    step.node,
                    step.op.name()
                ))
            })?;
            scratch_words = scratch_words.max(kernel.scratch_words);
            for launch in kernel.launches {
                let params = match &launch {
                    Launch::Kernel(dispatch) => {
                        let empty = match dispatch.grid {
                            Grid::Threads(n) => n == 0,
                            Grid::Groups(g) => g.contains(&0),
                        };
                        if empty {
                            continue;
                        }
                        let start = params_blob.len().next_multiple_of(ALIGNMENT);
                        params_blob.resize(start, 0);
                        // At least one word is bound.
                        let words: &[u32] = if dispatch.params.is_empty() {
                            &[0]
                        } else {
                            &dispatch.params
                        };
                        for word in words {
                            params_blob.extend_from_slice(&word.to_le_bytes());
                        }
                        Some((start, words.len() * WORD_BYTES))
                    }
                    Launch::Gemm(_) => None,
                };
                pending.push(Pending {
                    step: ix,
                    launch,
                    params,
                });
            }
        }
        let params = (!params_blob.is_empty())
            .then(|| gpu.upload(&params_blob, "kernel parameters"))
            .transpose()?;
        let scratch = (scratch_words > 0)
            .then(|| gpu.alloc(scratch_words * WORD_BYTES, "im2col scratch"))
            .transpose()?;
        for p in pending {
            let step = &plan.steps[p.step];
            let operands: Vec<Operand> = match &p.launch {
                Launch::Kernel(dispatch) => dispatch.bindings.clone(),
                Launch::Gemm(gemm) => vec![gemm.a.operand, gemm.b.operand, gemm.c.operand],
            };
            let bindings = operands
                .iter()
                .map(|&operand| compiled.operand(p.step, operand, scratch.as_ref(), scratch_words))
                .collect::<Result<Vec<_>>>()?;
            if let Some(wide) = bindings.iter().find(|b| b.bytes > max_binding) {
                return Err(prepare_error(format!(
                    "step '{}' ({}) binds {} bytes at once, above this device's largest binding ({max_binding} bytes)",
                    step.node,
                    step.op.name(),
                    wide.bytes
                )));
            }
            let params = match (p.params, &params) {
                (Some((offset, bytes)), Some(buffer)) => Some(Binding {
                    buffer,
                    offset,
                    bytes,
                }),
                (Some(_), None) => return Err(Error::Internal("no kernel parameters".into())),
                (None, _) => None,
            };
            let prepared = gpu.prepare(&p.launch, params, &bindings, &step.node)?;
            if let StepExec::Device(launches) = &mut kinds[p.step] {
                launches.push(prepared);
            }
        }
        compiled.steps = kinds;
        compiled.device_memory = DeviceMemory {
            arena: compiled.memory.planned_bytes,
            peak_live: compiled.memory.peak_live_bytes,
            inputs: input_bytes,
            constants: constant_bytes,
            other: params_blob.len() + scratch_words * WORD_BYTES,
        };
        compiled._params = params;
        compiled._scratch = scratch;
        Ok(compiled)
    }

    fn location(&self, id: ValueId) -> Result<Location> {
        let root = self.plan.root(id)?;
        let value = self.plan.value(root)?;
        if value.is_empty() {
            return Ok(Location::Empty);
        }
        Ok(match value.role {
            Role::Input(k) => Location::Input(k),
            Role::Constant => Location::Constant,
            _ => Location::Arena(
                self.memory
                    .offset_of
                    .get(root.0)
                    .copied()
                    .flatten()
                    .ok_or_else(|| {
                        Error::Internal(format!("'{}' has no place in the arena", value.name))
                    })?,
            ),
        })
    }

    /// The device range holding `id`.
    fn binding(&self, id: ValueId) -> Result<Binding<'_, G::Buffer>> {
        let bytes = device_bytes(self.plan.value(id)?);
        let at = |buffer, offset| Binding {
            buffer,
            offset,
            bytes,
        };
        let empty = Binding {
            buffer: &self.dummy,
            offset: 0,
            bytes: WORD_BYTES,
        };
        Ok(match self.location(id)? {
            Location::Arena(offset) => at(self.arena_buffer()?, offset),
            Location::Input(k) => match self.inputs.get(k).and_then(Option::as_ref) {
                Some(buffer) => at(buffer, 0),
                None => empty,
            },
            Location::Constant => {
                let root = self.plan.root(id)?;
                let held = self.constants.get(&root).ok_or_else(|| {
                    Error::Internal(format!(
                        "constant '{}' is not on the device",
                        self.plan
                            .value(root)
                            .map(|v| v.name.as_str())
                            .unwrap_or("?")
                    ))
                })?;
                at(&held.buffer, 0)
            }
            Location::Empty => empty,
        })
    }

    /// The device range a launch operand of step `ix` binds.
    fn operand<'a>(
        &'a self,
        ix: usize,
        operand: Operand,
        scratch: Option<&'a G::Buffer>,
        scratch_words: usize,
    ) -> Result<Binding<'a, G::Buffer>> {
        let step = &self.plan.steps[ix];
        let id = |ids: &[ValueId], k: usize| {
            ids.get(k)
                .copied()
                .ok_or_else(|| Error::Internal(format!("step '{}' has no operand {k}", step.node)))
        };
        Ok(match operand {
            Operand::Input(k) => self.binding(id(&step.inputs, k)?)?,
            Operand::Output(k) => self.binding(id(&step.outputs, k)?)?,
            Operand::InputRange {
                input,
                start,
                words,
            } => {
                let whole = self.binding(id(&step.inputs, input)?)?;
                let (from, len) = (start * WORD_BYTES, words * WORD_BYTES);
                if from + len > whole.bytes {
                    return Err(Error::Internal(format!(
                        "step '{}': a slice of input {input} runs past its end",
                        step.node
                    )));
                }
                Binding {
                    buffer: whole.buffer,
                    offset: whole.offset + from,
                    bytes: len,
                }
            }
            Operand::Scratch { start } => Binding {
                buffer: scratch.ok_or_else(|| Error::Internal("no scratch memory".into()))?,
                offset: start * WORD_BYTES,
                bytes: scratch_words.saturating_sub(start) * WORD_BYTES,
            },
        })
    }

    fn arena_buffer(&self) -> Result<&G::Buffer> {
        self.arena
            .as_ref()
            .ok_or_else(|| Error::Internal("the plan has no arena".into()))
    }

    fn constant_tensor(&self, root: ValueId) -> Result<Tensor> {
        self.plan
            .constants
            .iter()
            .find(|c| c.value == root)
            .ok_or_else(|| Error::Internal("a constant the plan does not hold".into()))?
            .data
            .to_tensor()
    }

    /// Runs the plan. `feeds` are the runtime inputs in plan order; `on_device` leaves the
    /// outputs on the device. With `trace`, every step's outputs are read back as soon as the
    /// step ran (slow; for finding where backends disagree) and not counted as transfers. With
    /// `timings`, each step is submitted and waited for on its own and its wall time pushed
    /// (it includes each submission's overhead, which one batched run does not pay).
    pub async fn run(
        &self,
        gpu: &G,
        feeds: &[Feed<'_, G::Buffer>],
        on_device: bool,
        mut trace: Option<&mut HashMap<ValueId, Tensor>>,
        mut timings: Option<&mut Vec<std::time::Duration>>,
    ) -> Result<(Vec<Produced<G::Buffer>>, Transfers)> {
        let plan = &self.plan;
        if feeds.len() != plan.inputs.len() {
            return Err(Error::Internal(format!(
                "the plan takes {} inputs, got {}",
                plan.inputs.len(),
                feeds.len()
            )));
        }
        // Out-of-range indices from the host are the cpu backend's error, not a silent 0 in a
        // kernel (which only guards against reading outside its buffers).
        let host: Vec<Option<&Tensor>> = feeds
            .iter()
            .map(|feed| match feed {
                Feed::Host(t) => Some(*t),
                Feed::Device(_) => None,
            })
            .collect();
        plan.check_host_indices(gpu.target().backend, &host)?;
        let mut transfers = Transfers::default();
        let mut run = gpu.begin()?;
        for (k, (feed, &id)) in feeds.iter().zip(&plan.inputs).enumerate() {
            let value = plan.value(id)?;
            let Some(buffer) = self.inputs[k].as_ref() else {
                continue;
            };
            // Only what a device step reads goes up (the placement lists exactly those).
            let read_on_device = self
                .placement
                .io_transfers
                .iter()
                .any(|t| t.value == id && t.direction == TransferDirection::HostToDevice);
            if !read_on_device && !on_device {
                continue;
            }
            match feed {
                Feed::Host(tensor) => {
                    let words = repr::to_words(
                        tensor.data(),
                        Narrowing::Checked,
                        &format!("input '{}'", value.name),
                    )?;
                    transfers.input_bytes += words.len();
                    let to = Binding {
                        buffer,
                        offset: 0,
                        bytes: words.len(),
                    };
                    gpu.write(&mut run, to, words)?;
                }
                Feed::Device(device) => gpu.copy(&mut run, device.binding(), buffer)?,
            }
        }

        // Values computed on, or read back to, the host, by buffer owner.
        let mut host: HashMap<ValueId, Tensor> = HashMap::new();
        for (ix, exec) in self.steps.iter().enumerate() {
            // Only when profiling: `Instant` does not exist in browsers.
            let step_start = timings.is_some().then(std::time::Instant::now);
            match exec {
                StepExec::Skip => {}
                StepExec::Device(launches) => {
                    gpu.record(&mut run, launches)?;
                    if timings.is_some() {
                        gpu.sync(&mut run).await?;
                    }
                    if let Some(trace) = trace.as_deref_mut() {
                        let outputs = &plan.steps[ix].outputs;
                        let ranges = outputs
                            .iter()
                            .map(|&id| self.binding(id))
                            .collect::<Result<Vec<_>>>()?;
                        let words = gpu.read(&mut run, &ranges).await?;
                        for (&id, words) in outputs.iter().zip(words) {
                            let value = plan.value(id)?;
                            let words = if value.is_empty() { &[][..] } else { &words };
                            trace.insert(
                                id,
                                repr::from_words(value.dtype, value.shape.clone(), words)?,
                            );
                        }
                    }
                }
                StepExec::Host => {
                    self.run_host_step(gpu, &mut run, ix, feeds, &mut host, &mut transfers)
                        .await?;
                    if let Some(trace) = trace.as_deref_mut() {
                        for &id in &plan.steps[ix].outputs {
                            if let Some(t) = host.get(&id) {
                                trace.insert(id, t.clone());
                            }
                        }
                    }
                }
            }
            if let (Some(timings), Some(start)) = (timings.as_deref_mut(), step_start) {
                timings.push(start.elapsed());
            }
        }

        // Outputs: what is ready now, and what is read back together at the end.
        enum Source<B> {
            Ready(Produced<B>),
            Read(usize),
        }
        let mut sources = Vec::with_capacity(plan.outputs.len());
        let mut reads: Vec<Binding<'_, G::Buffer>> = vec![];
        for &id in &plan.outputs {
            let value = plan.value(id)?;
            let root = plan.root(id)?;
            let bytes = device_bytes(value);
            if let Some(tensor) = host.get(&root) {
                let tensor = Tensor::new(value.shape.clone(), tensor.data().clone())?;
                sources.push(Source::Ready(if on_device {
                    let what = format!("output '{}'", value.name);
                    transfers.fallback_bytes += bytes;
                    Produced::Device(Arc::new(upload_tensor(
                        gpu,
                        &tensor,
                        Narrowing::Checked,
                        &what,
                    )?))
                } else {
                    Produced::Host(tensor)
                }));
                continue;
            }
            match self.location(id)? {
                Location::Empty => {
                    let empty = repr::from_words(value.dtype, value.shape.clone(), &[])?;
                    sources.push(Source::Ready(Produced::Host(empty)));
                    continue;
                }
                // An input that is an output: from where it was given (a device input no step
                // reads was never copied into the plan's own buffer).
                Location::Input(k) if !on_device => match feeds.get(k) {
                    Some(Feed::Host(tensor)) => {
                        let tensor = Tensor::new(value.shape.clone(), tensor.data().clone())?;
                        sources.push(Source::Ready(Produced::Host(tensor)));
                        continue;
                    }
                    Some(Feed::Device(device)) => {
                        sources.push(Source::Read(reads.len()));
                        reads.push(device.binding());
                        continue;
                    }
                    None => {}
                },
                Location::Constant if !on_device => {
                    let tensor = self.constant_tensor(root)?;
                    let tensor = Tensor::new(value.shape.clone(), tensor.into_parts().1)?;
                    sources.push(Source::Ready(Produced::Host(tensor)));
                    continue;
                }
                _ => {}
            }
            let from = self.binding(id)?;
            if on_device {
                let copy = gpu.alloc(bytes, &format!("output '{}'", value.name))?;
                gpu.copy(&mut run, from, &copy)?;
                sources.push(Source::Ready(Produced::Device(Arc::new(DeviceBuffer {
                    buffer: copy,
                    bytes,
                }))));
            } else {
                sources.push(Source::Read(reads.len()));
                reads.push(from);
            }
        }
        let mut words = if reads.is_empty() {
            vec![]
        } else {
            gpu.read(&mut run, &reads).await?
        };
        gpu.finish(run).await?;
        let mut produced = Vec::with_capacity(sources.len());
        for (source, &id) in sources.into_iter().zip(&plan.outputs) {
            produced.push(match source {
                Source::Ready(p) => p,
                Source::Read(at) => {
                    let value = plan.value(id)?;
                    let bytes = std::mem::take(&mut words[at]);
                    transfers.output_bytes += bytes.len();
                    Produced::Host(repr::from_words(value.dtype, value.shape.clone(), &bytes)?)
                }
            });
        }
        Ok((produced, transfers))
    }

    /// Runs step `ix` on the host: reads back what it needs, computes, uploads what the
    /// device reads later.
    async fn run_host_step(
        &self,
        gpu: &G,
        run: &mut G::Run,
        ix: usize,
        feeds: &[Feed<'_, G::Buffer>],
        host: &mut HashMap<ValueId, Tensor>,
        transfers: &mut Transfers,
    ) -> Result<()> {
        let plan = &self.plan;
        let step = &plan.steps[ix];
        let mut args = Vec::with_capacity(step.inputs.len());
        for &id in &step.inputs {
            let value = plan.value(id)?;
            let root = plan.root(id)?;
            let root_value = plan.value(root)?;
            let tensor = if let Some(t) = host.get(&root) {
                t.clone()
            } else {
                let device_range = match root_value.role {
                    Role::Input(k) => match &feeds[k] {
                        Feed::Host(_) => None,
                        Feed::Device(buffer) => Some(buffer.binding()),
                    },
                    Role::Constant => None,
                    _ => match self.location(root)? {
                        Location::Arena(offset) => Some(Binding {
                            buffer: self.arena_buffer()?,
                            offset,
                            bytes: device_bytes(root_value),
                        }),
                        _ => {
                            return Err(Error::Internal(format!(
                                "'{}' is neither on the host nor in the arena",
                                root_value.name
                            )));
                        }
                    },
                };
                match (device_range, root_value.role) {
                    (Some(range), _) => {
                        let words = gpu
                            .read(run, &[range])
                            .await?
                            .pop()
                            .ok_or_else(|| Error::Internal("a read-back of nothing".into()))?;
                        transfers.fallback_bytes += words.len();
                        repr::from_words(root_value.dtype, root_value.shape.clone(), &words)?
                    }
                    (None, Role::Input(k)) => match &feeds[k] {
                        Feed::Host(t) => (*t).clone(),
                        Feed::Device(_) => return Err(Error::Internal("a device feed".into())),
                    },
                    (None, _) => self.constant_tensor(root)?,
                }
            };
            host.insert(root, tensor.clone());
            args.push(Tensor::new(value.shape.clone(), tensor.into_parts().1)?);
        }
        let outputs = tessera_core::plan::host::run_step(plan, &self.typed, ix, &args)?;
        for (&id, tensor) in step.outputs.iter().zip(outputs) {
            let read_on_device = plan.steps[ix + 1..]
                .iter()
                .zip(&self.placement.steps[ix + 1..])
                .filter(|(_, d)| **d == Device::Device)
                .any(|(s, _)| s.inputs.iter().any(|&i| plan.root(i).ok() == Some(id)));
            if read_on_device
                && !tensor.is_empty()
                && let Location::Arena(offset) = self.location(id)?
            {
                let words = repr::to_words(tensor.data(), Narrowing::Checked, &step.node)?;
                transfers.fallback_bytes += words.len();
                let to = Binding {
                    buffer: self.arena_buffer()?,
                    offset,
                    bytes: words.len(),
                };
                gpu.write(run, to, words)?;
            }
            host.insert(id, tensor);
        }
        Ok(())
    }
}
