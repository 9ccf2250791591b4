//! A plan made ready for the device (buffers allocated, kernels compiled, bind groups made
//! once), and its execution.
//!
//! Buffers: intermediate values live at the offsets the memory plan gives them in one arena
//! buffer; each runtime input has its own buffer; constants are uploaded once per session
//! ([`crate::session`] keeps them across plans); every dispatch's parameters share one buffer.
//! A run uploads the inputs, records every device step into one command buffer, and reads
//! back only the outputs. Steps placed on the host (fallback) split the command stream: the
//! values they read are read back and what they write is uploaded, exactly the copies the
//! placement lists, and every copy is counted in [`Transfers`].

use crate::context::{GpuContext, Pipeline};
use crate::kernels::{self, Grid, Operand, StepIo};
use crate::repr::{self, Narrowing, WORD_BYTES};
use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::Arc;
use tessera_core::plan::{
    Device, DeviceMemory, MemoryPlan, Placement, Plan, Role, Transfers, ValueId,
};
use tessera_core::tract_onnx::prelude::TypedModel;
use tessera_core::{Error, Result, Tensor};

/// GPU storage-buffer bindings must start at multiples of this (WebGPU's largest allowed
/// `minStorageBufferOffsetAlignment`, so it suits every adapter).
pub(crate) const ALIGNMENT: usize = 256;

/// A buffer on the device holding one tensor (for I/O binding and uploaded weights).
#[derive(Debug)]
pub(crate) struct DeviceBuffer {
    pub buffer: wgpu::Buffer,
    /// Bytes of device words (0 for an empty tensor; the buffer itself is never empty).
    pub bytes: usize,
}

/// What the compiled plan keeps for one step.
enum StepExec {
    Device(Vec<Launch>),
    Host,
    /// Writes nothing (empty outputs).
    Skip,
}

struct Launch {
    pipeline: Arc<Pipeline>,
    bind_group: wgpu::BindGroup,
    groups: [u32; 3],
}

/// Where a value's words are on the device.
#[derive(Clone)]
enum Location {
    Arena(u64),
    Input(usize),
    /// Uploaded with the plan's weights when a device step reads it (see `constants`).
    Constant,
    /// No elements: nothing to bind or copy.
    Empty,
}

/// A runtime input as a run is given it.
pub(crate) enum Feed<'a> {
    Host(&'a Tensor),
    Device(&'a DeviceBuffer),
}

/// Where a run leaves an output.
pub(crate) enum Produced {
    Host(Tensor),
    Device(Arc<DeviceBuffer>),
}

/// A plan ready to run on the device.
pub(crate) struct Compiled {
    pub plan: Arc<Plan>,
    typed: Arc<TypedModel>,
    pub placement: Placement,
    pub memory: MemoryPlan,
    pub device_memory: DeviceMemory,
    arena: Option<wgpu::Buffer>,
    inputs: Vec<Option<wgpu::Buffer>>,
    constants: HashMap<ValueId, Arc<DeviceBuffer>>,
    steps: Vec<StepExec>,
    // Kept alive for the bind groups that use them.
    _params: Option<wgpu::Buffer>,
    _dummy: wgpu::Buffer,
    /// Where outputs are read back: made once per plan, reused by every run (runs of a plan
    /// take turns), sized for all outputs.
    staging: Option<wgpu::Buffer>,
}

/// The bytes a value takes on the device.
pub(crate) fn device_bytes(value: &tessera_core::plan::Value) -> usize {
    value.len() * WORD_BYTES
}

fn storage_buffer(ctx: &GpuContext, label: &str, bytes: usize, readable: bool) -> wgpu::Buffer {
    let mut usage =
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
    if readable {
        usage |= wgpu::BufferUsages::COPY_SRC;
    }
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        // Zero-sized buffers cannot be bound.
        size: bytes.max(WORD_BYTES).next_multiple_of(WORD_BYTES) as u64,
        usage,
        mapped_at_creation: false,
    })
}

/// Uploads a host tensor into a new device buffer.
pub(crate) fn upload(
    ctx: &GpuContext,
    tensor: &Tensor,
    narrowing: Narrowing,
    what: &str,
) -> Result<DeviceBuffer> {
    let words = repr::to_words(tensor.data(), narrowing, what)?;
    let limit = ctx.limits.max_buffer_size as usize;
    if words.len() > limit {
        return Err(prepare_error(format!(
            "{what} needs {} bytes on the device, above this adapter's largest buffer ({limit} bytes)",
            words.len()
        )));
    }
    let buffer = storage_buffer(ctx, what, words.len(), true);
    if !words.is_empty() {
        ctx.queue.write_buffer(&buffer, 0, &words);
    }
    Ok(DeviceBuffer {
        buffer,
        bytes: words.len(),
    })
}

fn check_size(ctx: &GpuContext, what: &str, bytes: usize) -> Result<()> {
    let limit = ctx.limits.max_storage_buffer_binding_size as usize;
    if bytes > limit {
        return Err(Error::Prepare {
            backend: "wgpu".into(),
            message: format!(
                "{what} needs {bytes} bytes on the device, above this adapter's largest storage binding ({limit} bytes)"
            ),
        });
    }
    Ok(())
}

/// Reads `bytes` bytes at `offset` of `buffer` back to the host (submits pending work first).
pub(crate) async fn read_back(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    offset: u64,
    bytes: usize,
) -> Result<Vec<u8>> {
    if bytes == 0 {
        return Ok(vec![]);
    }
    let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tessera read-back"),
        size: bytes as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, bytes as u64);
    ctx.queue.submit([encoder.finish()]);
    map_read(ctx, &staging).await
}

/// Waits for submitted work, then copies a `MAP_READ` buffer's bytes out. Natively the wait
/// blocks; in a browser the event loop completes the mapping while this awaits.
async fn map_read(ctx: &GpuContext, staging: &wgpu::Buffer) -> Result<Vec<u8>> {
    let (sender, receiver) = futures_channel::oneshot::channel();
    staging.map_async(wgpu::MapMode::Read, .., move |result| {
        sender.send(result).ok();
    });
    ctx.wait()?;
    receiver
        .await
        .map_err(|_| run_error("the device never answered a read-back"))?
        .map_err(|e| run_error(format!("reading back from the device: {e}")))?;
    let data = staging
        .get_mapped_range(..)
        .map_err(|e| run_error(format!("reading back from the device: {e}")))?
        .to_vec();
    staging.unmap();
    Ok(data)
}

fn run_error(message: impl Into<String>) -> Error {
    Error::Run {
        backend: "wgpu".into(),
        message: message.into(),
    }
}

fn prepare_error(message: impl Into<String>) -> Error {
    Error::Prepare {
        backend: "wgpu".into(),
        message: message.into(),
    }
}

/// Spreads `workgroups` over x and y (each holds at most `max` groups).
fn spread(workgroups: usize, max: u32) -> Result<[u32; 3]> {
    let max = max.max(1) as usize;
    let x = workgroups.min(max);
    let y = workgroups.div_ceil(x.max(1));
    if y > max {
        return Err(prepare_error(format!(
            "{workgroups} workgroups exceed this adapter's dispatch limits"
        )));
    }
    Ok([x as u32, y as u32, 1])
}

impl Compiled {
    /// Allocates and compiles everything `plan` needs. `weights` uploads a constant (or returns
    /// the session's copy of it).
    pub fn new(
        ctx: &GpuContext,
        plan: Arc<Plan>,
        typed: Arc<TypedModel>,
        placement: Placement,
        weights: &mut dyn FnMut(&tessera_core::plan::Constant) -> Result<Arc<DeviceBuffer>>,
    ) -> Result<Compiled> {
        let memory = MemoryPlan::build_with(
            &plan.values,
            &plan.steps,
            &plan.outputs,
            &device_bytes,
            ALIGNMENT,
        )?;
        let max_buffer = ctx.limits.max_buffer_size as usize;
        if memory.planned_bytes > max_buffer {
            return Err(prepare_error(format!(
                "the plan's intermediate values need {} bytes at once, above this adapter's largest buffer ({max_buffer} bytes)",
                memory.planned_bytes
            )));
        }
        let arena = (memory.planned_bytes > 0)
            .then(|| storage_buffer(ctx, "tessera arena", memory.planned_bytes, true));
        let mut inputs = vec![];
        let mut input_bytes = 0;
        for &id in &plan.inputs {
            let value = plan.value(id)?;
            let bytes = device_bytes(value);
            check_size(ctx, &format!("input '{}'", value.name), bytes)?;
            input_bytes += bytes;
            inputs.push((bytes > 0).then(|| storage_buffer(ctx, &value.name, bytes, true)));
        }

        // Constants the device reads.
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
            // Constant outputs go up too (when the device can hold them), for runs that leave
            // their outputs on the device; host runs return them from the host.
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

        let dummy = storage_buffer(ctx, "tessera empty", WORD_BYTES, false);
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
            _dummy: dummy,
            staging: None,
        };

        // First pass: kernels, pipelines and parameters; second: bind groups.
        struct Pending {
            step: usize,
            pipeline: Arc<Pipeline>,
            params: (usize, usize),
            bindings: Vec<Operand>,
            groups: [u32; 3],
        }
        let mut pending: Vec<Pending> = vec![];
        let mut params_blob: Vec<u8> = vec![];
        let mut kinds = vec![];
        let max_groups = ctx.limits.max_compute_workgroups_per_dimension;
        for (ix, step) in plan.steps.iter().enumerate() {
            if compiled.placement.steps[ix] == Device::Host {
                kinds.push(0u8);
                continue;
            }
            let io = StepIo {
                inputs: step
                    .inputs
                    .iter()
                    .map(|&id| plan.value(id))
                    .collect::<Result<_>>()?,
                outputs: step
                    .outputs
                    .iter()
                    .map(|&id| plan.value(id))
                    .collect::<Result<_>>()?,
            };
            if io.outputs.iter().all(|v| v.is_empty()) {
                kinds.push(1);
                continue;
            }
            kinds.push(2);
            let max_binding = ctx.limits.max_storage_buffer_binding_size as usize;
            let kernel = kernels::encode_limited(&step.op, &io, max_binding).map_err(|e| {
                prepare_error(format!("step '{}' ({}): {e}", step.node, step.op.name()))
            })?;
            for dispatch in kernel.dispatches {
                let groups = match dispatch.grid {
                    Grid::Threads(0) => continue,
                    Grid::Threads(n) => spread(n.div_ceil(64), max_groups)?,
                    Grid::Groups(g) if g.contains(&0) => continue,
                    Grid::Groups(g) => g,
                };
                let pipeline = ctx.pipeline(&dispatch.shader, dispatch.bindings.len())?;
                let start = params_blob.len().next_multiple_of(ALIGNMENT);
                params_blob.resize(start, 0);
                let words = if dispatch.params.is_empty() {
                    vec![0]
                } else {
                    dispatch.params
                };
                for word in &words {
                    params_blob.extend_from_slice(&word.to_le_bytes());
                }
                pending.push(Pending {
                    step: ix,
                    pipeline,
                    params: (start, words.len() * WORD_BYTES),
                    bindings: dispatch.bindings,
                    groups,
                });
            }
        }
        let params = (!params_blob.is_empty()).then(|| {
            let buffer = storage_buffer(ctx, "tessera params", params_blob.len(), false);
            ctx.queue.write_buffer(&buffer, 0, &params_blob);
            buffer
        });
        let mut launches: Vec<Vec<Launch>> = (0..plan.steps.len()).map(|_| vec![]).collect();
        for p in pending {
            let step = &plan.steps[p.step];
            let params = params
                .as_ref()
                .ok_or_else(|| Error::Internal("no params".into()))?;
            let mut targets: Vec<(&wgpu::Buffer, u64, u64)> =
                vec![(params, p.params.0 as u64, p.params.1 as u64)];
            for operand in &p.bindings {
                let target = match *operand {
                    Operand::Input(k) | Operand::Output(k) => {
                        let ids = if matches!(operand, Operand::Input(_)) {
                            &step.inputs
                        } else {
                            &step.outputs
                        };
                        let id = *ids.get(k).ok_or_else(|| {
                            Error::Internal(format!("step '{}' has no operand {k}", step.node))
                        })?;
                        compiled.binding(id)?
                    }
                    Operand::InputRange {
                        input,
                        start,
                        words,
                    } => {
                        let id = *step.inputs.get(input).ok_or_else(|| {
                            Error::Internal(format!("step '{}' has no input {input}", step.node))
                        })?;
                        let (buffer, offset, bytes) = compiled.binding(id)?;
                        let (from, len) =
                            ((start * WORD_BYTES) as u64, (words * WORD_BYTES) as u64);
                        if from + len > bytes {
                            return Err(Error::Internal(format!(
                                "step '{}': a slice of input {input} runs past its end",
                                step.node
                            )));
                        }
                        (buffer, offset + from, len)
                    }
                };
                targets.push(target);
            }
            let max_binding = ctx.limits.max_storage_buffer_binding_size;
            if let Some(&(_, _, size)) = targets.iter().find(|t| t.2 > max_binding) {
                return Err(prepare_error(format!(
                    "step '{}' ({}) binds {size} bytes at once, above this adapter's largest storage binding ({max_binding} bytes)",
                    step.node,
                    step.op.name()
                )));
            }
            let entries: Vec<wgpu::BindGroupEntry> = targets
                .iter()
                .enumerate()
                .map(|(binding, &(buffer, offset, size))| wgpu::BindGroupEntry {
                    binding: binding as u32,
                    resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                        buffer,
                        offset,
                        size: NonZeroU64::new(size.max(WORD_BYTES as u64)),
                    }),
                })
                .collect();
            let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&step.node),
                layout: &p.pipeline.layout,
                entries: &entries,
            });
            launches[p.step].push(Launch {
                pipeline: p.pipeline,
                bind_group,
                groups: p.groups,
            });
        }
        compiled.steps = kinds
            .into_iter()
            .zip(launches)
            .map(|(kind, launches)| match kind {
                0 => StepExec::Host,
                1 => StepExec::Skip,
                _ => StepExec::Device(launches),
            })
            .collect();
        let other = params_blob.len();
        compiled.device_memory = DeviceMemory {
            arena: compiled.memory.planned_bytes,
            peak_live: compiled.memory.peak_live_bytes,
            inputs: input_bytes,
            constants: constant_bytes,
            other,
        };
        let output_bytes: usize = plan
            .outputs
            .iter()
            .map(|&id| plan.value(id).map(device_bytes))
            .sum::<Result<usize>>()?;
        compiled.staging = (output_bytes > 0).then(|| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("tessera outputs"),
                size: output_bytes as u64,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        compiled._params = params;
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
                    })? as u64,
            ),
        })
    }

    /// The buffer range holding `id`.
    fn binding(&self, id: ValueId) -> Result<(&wgpu::Buffer, u64, u64)> {
        let bytes = device_bytes(self.plan.value(id)?) as u64;
        Ok(match self.location(id)? {
            Location::Arena(offset) => (self.arena_buffer()?, offset, bytes),
            Location::Input(k) => match self.inputs.get(k).and_then(Option::as_ref) {
                Some(buffer) => (buffer, 0, bytes),
                None => (&self._dummy, 0, WORD_BYTES as u64),
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
                (&held.buffer, 0, bytes)
            }
            Location::Empty => (&self._dummy, 0, WORD_BYTES as u64),
        })
    }

    fn arena_buffer(&self) -> Result<&wgpu::Buffer> {
        self.arena
            .as_ref()
            .ok_or_else(|| Error::Internal("the plan has no arena".into()))
    }

    /// Runs the plan. `feeds` are the runtime inputs in plan order; `on_device` leaves the
    /// outputs on the device. With `trace`, every step's outputs are read back as soon as the
    /// step ran (slow; for finding where backends disagree) and not counted as transfers.
    pub async fn run(
        &self,
        ctx: &GpuContext,
        feeds: &[Feed<'_>],
        on_device: bool,
        mut trace: Option<&mut HashMap<ValueId, Tensor>>,
        mut timings: Option<&mut Vec<std::time::Duration>>,
    ) -> Result<(Vec<Produced>, Transfers)> {
        let plan = &self.plan;
        if feeds.len() != plan.inputs.len() {
            return Err(Error::Internal(format!(
                "the plan takes {} inputs, got {}",
                plan.inputs.len(),
                feeds.len()
            )));
        }
        // Out-of-range indices from the host are the cpu backend's error, not a silent 0 in a
        // shader (which only guards against reading outside its buffers).
        let host: Vec<Option<&Tensor>> = feeds
            .iter()
            .map(|feed| match feed {
                Feed::Host(t) => Some(*t),
                Feed::Device(_) => None,
            })
            .collect();
        plan.check_host_indices("wgpu", &host)?;
        let mut transfers = Transfers::default();
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        for (k, (feed, &id)) in feeds.iter().zip(&plan.inputs).enumerate() {
            let value = plan.value(id)?;
            let Some(buffer) = self.inputs[k].as_ref() else {
                continue;
            };
            // Only what a device step reads goes up (the placement lists exactly those).
            let read_on_device = self.placement.io_transfers.iter().any(|t| {
                t.value == id && t.direction == tessera_core::plan::TransferDirection::HostToDevice
            });
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
                    ctx.queue.write_buffer(buffer, 0, &words);
                    transfers.input_bytes += words.len();
                }
                Feed::Device(device) => {
                    encoder.copy_buffer_to_buffer(
                        &device.buffer,
                        0,
                        buffer,
                        0,
                        device.bytes as u64,
                    );
                }
            }
        }

        // Values computed on, or read back to, the host, by buffer owner.
        let mut host: HashMap<ValueId, Tensor> = HashMap::new();
        let mut pass_open = false;
        let mut pass: Option<wgpu::ComputePass<'static>> = None;
        for (ix, exec) in self.steps.iter().enumerate() {
            // Only when profiling: `Instant` does not exist in browsers.
            let step_start = timings.is_some().then(std::time::Instant::now);
            match exec {
                StepExec::Skip => {}
                StepExec::Device(launches) => {
                    if !pass_open {
                        pass = Some(
                            encoder
                                .begin_compute_pass(&wgpu::ComputePassDescriptor::default())
                                .forget_lifetime(),
                        );
                        pass_open = true;
                    }
                    let p = pass
                        .as_mut()
                        .ok_or_else(|| Error::Internal("no pass".into()))?;
                    for launch in launches {
                        p.set_pipeline(&launch.pipeline.pipeline);
                        p.set_bind_group(0, &launch.bind_group, &[]);
                        let [x, y, z] = launch.groups;
                        p.dispatch_workgroups(x, y, z);
                    }
                    // Profiling: each step submitted and waited for on its own.
                    if timings.is_some() {
                        drop(pass.take());
                        pass_open = false;
                        let finished = std::mem::replace(
                            &mut encoder,
                            ctx.device
                                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                                    label: None,
                                }),
                        );
                        ctx.queue.submit([finished.finish()]);
                        ctx.wait()?;
                    }
                    if let Some(trace) = trace.as_deref_mut() {
                        drop(pass.take());
                        pass_open = false;
                        let finished = std::mem::replace(
                            &mut encoder,
                            ctx.device
                                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                                    label: None,
                                }),
                        );
                        ctx.queue.submit([finished.finish()]);
                        for &id in &plan.steps[ix].outputs {
                            let value = plan.value(id)?;
                            let (buffer, offset, bytes) = self.binding(id)?;
                            let words = if value.is_empty() {
                                vec![]
                            } else {
                                read_back(ctx, buffer, offset, bytes as usize).await?
                            };
                            trace.insert(
                                id,
                                repr::from_words(value.dtype, value.shape.clone(), &words)?,
                            );
                        }
                    }
                }
                StepExec::Host => {
                    drop(pass.take());
                    pass_open = false;
                    let finished = std::mem::replace(
                        &mut encoder,
                        ctx.device
                            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                                label: None,
                            }),
                    );
                    ctx.queue.submit([finished.finish()]);
                    self.run_host_step(ctx, ix, feeds, &mut host, &mut transfers)
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
        drop(pass.take());

        // Outputs.
        let mut produced = Vec::with_capacity(plan.outputs.len());
        // (buffer, offset, bytes, offset in the staging buffer) of each output read back.
        let mut reads: Vec<(&wgpu::Buffer, u64, u64, usize)> = vec![];
        let mut staging_bytes = 0usize;
        enum Source {
            Ready(Produced),
            Staged { at: usize, bytes: usize },
        }
        let mut sources = vec![];
        for &id in &plan.outputs {
            let value = plan.value(id)?;
            let root = plan.root(id)?;
            let bytes = device_bytes(value);
            if let Some(tensor) = host.get(&root) {
                let tensor = Tensor::new(value.shape.clone(), tensor.data().clone())?;
                sources.push(Source::Ready(if on_device {
                    let what = format!("output '{}'", value.name);
                    transfers.fallback_bytes += bytes;
                    Produced::Device(Arc::new(upload(ctx, &tensor, Narrowing::Checked, &what)?))
                } else {
                    Produced::Host(tensor)
                }));
                continue;
            }
            let (buffer, offset) = match self.location(id)? {
                Location::Empty => {
                    sources.push(Source::Ready(Produced::Host(repr::from_words(
                        value.dtype,
                        value.shape.clone(),
                        &[],
                    )?)));
                    continue;
                }
                Location::Input(k) => match &feeds[k] {
                    Feed::Host(tensor) if !on_device => {
                        let tensor = Tensor::new(value.shape.clone(), tensor.data().clone())?;
                        sources.push(Source::Ready(Produced::Host(tensor)));
                        continue;
                    }
                    _ => (
                        self.inputs[k]
                            .as_ref()
                            .ok_or_else(|| Error::Internal("input buffer".into()))?,
                        0,
                    ),
                },
                Location::Constant if !on_device => {
                    let constant = plan
                        .constants
                        .iter()
                        .find(|c| c.value == root)
                        .ok_or_else(|| Error::Internal("constant output".into()))?;
                    let tensor = constant.data.to_tensor()?;
                    let tensor = Tensor::new(value.shape.clone(), tensor.into_parts().1)?;
                    sources.push(Source::Ready(Produced::Host(tensor)));
                    continue;
                }
                Location::Constant => {
                    let (buffer, offset, _) = self.binding(id)?;
                    (buffer, offset)
                }
                Location::Arena(offset) => (self.arena_buffer()?, offset),
            };
            if on_device {
                let copy = storage_buffer(ctx, &value.name, bytes, true);
                encoder.copy_buffer_to_buffer(buffer, offset, &copy, 0, bytes as u64);
                sources.push(Source::Ready(Produced::Device(Arc::new(DeviceBuffer {
                    buffer: copy,
                    bytes,
                }))));
            } else {
                reads.push((buffer, offset, bytes as u64, staging_bytes));
                sources.push(Source::Staged {
                    at: staging_bytes,
                    bytes,
                });
                staging_bytes += bytes;
            }
        }
        let staging = self.staging.as_ref().filter(|_| staging_bytes > 0);
        if let Some(staging) = staging {
            for &(buffer, offset, bytes, at) in &reads {
                encoder.copy_buffer_to_buffer(buffer, offset, staging, at as u64, bytes);
            }
        }
        ctx.queue.submit([encoder.finish()]);
        if let Some(error) = scope.pop().await {
            return Err(run_error(format!("the device rejected the run: {error}")));
        }
        let staged = match staging {
            Some(staging) => map_read(ctx, staging).await?,
            None => {
                ctx.wait()?;
                vec![]
            }
        };
        for (source, &id) in sources.into_iter().zip(&plan.outputs) {
            produced.push(match source {
                Source::Ready(p) => p,
                Source::Staged { at, bytes } => {
                    let value = plan.value(id)?;
                    transfers.output_bytes += bytes;
                    Produced::Host(repr::from_words(
                        value.dtype,
                        value.shape.clone(),
                        &staged[at..at + bytes],
                    )?)
                }
            });
        }
        Ok((produced, transfers))
    }

    /// Runs step `ix` on the host: reads back what it needs, computes, uploads what the
    /// device reads later.
    async fn run_host_step(
        &self,
        ctx: &GpuContext,
        ix: usize,
        feeds: &[Feed<'_>],
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
                match root_value.role {
                    Role::Input(k) => match &feeds[k] {
                        Feed::Host(t) => (*t).clone(),
                        Feed::Device(buffer) => {
                            let words = read_back(ctx, &buffer.buffer, 0, buffer.bytes).await?;
                            transfers.fallback_bytes += words.len();
                            repr::from_words(root_value.dtype, root_value.shape.clone(), &words)?
                        }
                    },
                    Role::Constant => plan
                        .constants
                        .iter()
                        .find(|c| c.value == root)
                        .ok_or_else(|| Error::Internal("constant".into()))?
                        .data
                        .to_tensor()?,
                    _ => {
                        let Location::Arena(offset) = self.location(root)? else {
                            return Err(Error::Internal(format!(
                                "'{}' is neither on the host nor in the arena",
                                root_value.name
                            )));
                        };
                        let bytes = device_bytes(root_value);
                        let words = read_back(ctx, self.arena_buffer()?, offset, bytes).await?;
                        transfers.fallback_bytes += words.len();
                        repr::from_words(root_value.dtype, root_value.shape.clone(), &words)?
                    }
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
                ctx.queue.write_buffer(self.arena_buffer()?, offset, &words);
                transfers.fallback_bytes += words.len();
            }
            host.insert(id, tensor);
        }
        Ok(())
    }
}
