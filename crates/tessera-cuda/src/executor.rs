//! A plan made ready for the device (memory allocated, kernels compiled, launch arguments
//! resolved once), and its execution on a session's stream.
//!
//! Memory: intermediate values live at the offsets the memory plan gives them in one arena
//! allocation; each runtime input has its own; constants are uploaded once per session
//! ([`crate::session`] keeps them across plans); every launch's parameters share one
//! allocation; im2col columns use one scratch allocation sized for the largest step. A run
//! uploads the inputs, enqueues every device step on the session's stream, and reads back only
//! the outputs. Steps placed on the host (fallback) read back what they need and upload what
//! they write, exactly the copies the placement lists, and every copy is counted in
//! [`Transfers`].

use crate::context::CudaDevice;
use crate::error::{CudaError, DriverContext};
use crate::kernels::{self, BLOCK, Gemm, GemmMatrix, Grid, Launch, Operand, StepIo};
use crate::repr::{self, Narrowing, WORD_BYTES};
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, result};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;
use tessera_core::plan::{
    Device, DeviceMemory, MemoryPlan, Placement, Plan, Role, Transfers, ValueId,
};
use tessera_core::tract_onnx::prelude::TypedModel;
use tessera_core::{Error, Result, Tensor};

/// Arena offsets are multiples of this (cuBLAS and vector loads like 256-byte alignment).
pub(crate) const ALIGNMENT: usize = 256;

/// Most blocks along one grid axis used for 1-D kernels (the y axis takes the rest).
const MAX_GRID_X: usize = 65535;

/// A device allocation, freed on drop.
#[derive(Debug)]
pub(crate) struct DeviceBuffer {
    pub ptr: CUdeviceptr,
    /// Bytes of device words (0 for an empty tensor; the allocation itself is never empty).
    pub bytes: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceBuffer {
    pub fn alloc(ctx: &Arc<CudaContext>, bytes: usize, what: &str) -> Result<DeviceBuffer> {
        ctx.bind_to_thread()
            .doing("binding the CUDA context", false)?;
        // SAFETY: the context is current; the size is non-zero.
        let ptr = unsafe { result::malloc_sync(bytes.max(WORD_BYTES)) }
            .map_err(|e| CudaError::driver(e, format!("allocating {bytes} bytes for {what}")))
            .map_err(|e| e.into_error(false))?;
        Ok(DeviceBuffer {
            ptr,
            bytes,
            ctx: ctx.clone(),
        })
    }

    /// Copies the buffer's words back (waits for all work on the device first).
    pub fn read(&self) -> Result<Vec<u8>> {
        read_back(&self.ctx, self.ptr, self.bytes)
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by malloc_sync and freed once; work using it was synchronised
            // by the run that used it.
            let _ = unsafe { result::free_sync(self.ptr) };
        }
    }
}

/// Waits for the device, then copies `bytes` bytes at `ptr` to the host.
pub(crate) fn read_back(ctx: &Arc<CudaContext>, ptr: CUdeviceptr, bytes: usize) -> Result<Vec<u8>> {
    ctx.synchronize().doing("waiting for the device", true)?;
    let mut out = vec![0u8; bytes];
    if bytes > 0 {
        // SAFETY: `ptr` holds at least `bytes` bytes; the device is idle.
        unsafe { result::memcpy_dtoh_sync(&mut out, ptr) }
            .doing("reading back from the device", true)?;
    }
    Ok(out)
}

/// Uploads a host tensor into a new device buffer (synchronously).
pub(crate) fn upload(
    device: &CudaDevice,
    tensor: &Tensor,
    narrowing: Narrowing,
    what: &str,
) -> Result<DeviceBuffer> {
    let words = repr::to_words(tensor.data(), narrowing, what)?;
    let buffer = DeviceBuffer::alloc(&device.ctx, words.len(), what)?;
    if !words.is_empty() {
        // SAFETY: the buffer holds `words.len()` bytes.
        unsafe { result::memcpy_htod_sync(buffer.ptr, &words) }
            .doing(&format!("uploading {what}"), false)?;
    }
    device.ctx.synchronize().doing("uploading", false)?;
    Ok(buffer)
}

/// The bytes a value takes on the device.
pub(crate) fn device_bytes(value: &tessera_core::plan::Value) -> usize {
    value.len() * WORD_BYTES
}

/// What the compiled plan keeps for one step.
enum StepExec {
    Device(Vec<Ready>),
    Host,
    /// Writes nothing (empty outputs).
    Skip,
}

/// A launch with its arguments resolved to device addresses.
enum Ready {
    Kernel {
        function: CudaFunction,
        grid: (u32, u32, u32),
        /// `params`, then each tensor's address.
        args: Vec<CUdeviceptr>,
    },
    Gemm(ReadyGemm),
}

/// A column-major cuBLAS call: `C' (m' x n') = op(A') · op(B')` with `A' = B^T`, `B' = A^T`,
/// `C' = C^T` of the row-major product.
struct ReadyGemm {
    trans_a: cublasOperation_t,
    trans_b: cublasOperation_t,
    m: i32,
    n: i32,
    k: i32,
    a: CUdeviceptr,
    lda: i32,
    stride_a: i64,
    b: CUdeviceptr,
    ldb: i32,
    stride_b: i64,
    c: CUdeviceptr,
    ldc: i32,
    stride_c: i64,
    batch: i32,
}

/// Where a value's words are on the device.
#[derive(Clone)]
enum Location {
    Arena(usize),
    Input(usize),
    Constant,
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

/// The stream and cuBLAS handle a session runs on.
pub(crate) struct Exec<'a> {
    pub device: &'a CudaDevice,
    pub stream: &'a Arc<CudaStream>,
    pub blas: &'a cudarc::cublas::CudaBlas,
}

/// A plan ready to run on the device.
pub(crate) struct Compiled {
    pub plan: Arc<Plan>,
    typed: Arc<TypedModel>,
    pub placement: Placement,
    pub memory: MemoryPlan,
    pub device_memory: DeviceMemory,
    arena: Option<DeviceBuffer>,
    inputs: Vec<Option<DeviceBuffer>>,
    constants: HashMap<ValueId, Arc<DeviceBuffer>>,
    steps: Vec<StepExec>,
    _params: Option<DeviceBuffer>,
    _scratch: Option<DeviceBuffer>,
    dummy: DeviceBuffer,
}

fn prepare_error(message: impl Into<String>) -> Error {
    Error::Prepare {
        backend: "cuda".into(),
        message: message.into(),
    }
}

/// Blocks for `threads` threads, spread over x and y.
fn spread(threads: usize) -> Result<(u32, u32, u32)> {
    let blocks = threads.div_ceil(BLOCK as usize);
    let x = blocks.clamp(1, MAX_GRID_X);
    let y = blocks.div_ceil(x);
    if y > MAX_GRID_X {
        return Err(prepare_error(format!(
            "{threads} threads exceed the launch grid"
        )));
    }
    Ok((x as u32, y as u32, 1))
}

impl Compiled {
    /// Allocates and compiles everything `plan` needs. `weights` uploads a constant (or returns
    /// the session's copy of it).
    pub fn new(
        device: &CudaDevice,
        plan: Arc<Plan>,
        typed: Arc<TypedModel>,
        placement: Placement,
        weights: &mut dyn FnMut(&tessera_core::plan::Constant) -> Result<Arc<DeviceBuffer>>,
    ) -> Result<Compiled> {
        let ctx = &device.ctx;
        let memory = MemoryPlan::build_with(
            &plan.values,
            &plan.steps,
            &plan.outputs,
            &device_bytes,
            ALIGNMENT,
        )?;
        let arena = (memory.planned_bytes > 0)
            .then(|| {
                DeviceBuffer::alloc(
                    ctx,
                    memory.planned_bytes,
                    "the arena of intermediate values",
                )
            })
            .transpose()?;
        let mut inputs = vec![];
        let mut input_bytes = 0;
        for &id in &plan.inputs {
            let value = plan.value(id)?;
            let bytes = device_bytes(value);
            input_bytes += bytes;
            inputs.push(
                (bytes > 0)
                    .then(|| DeviceBuffer::alloc(ctx, bytes, &format!("input '{}'", value.name)))
                    .transpose()?,
            );
        }

        // Constants the device reads (and constant outputs, for runs that leave outputs there).
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

        let dummy = DeviceBuffer::alloc(ctx, WORD_BYTES, "an empty tensor")?;
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

        // First pass: kernels and parameters; second: addresses.
        let mut kernels_of: Vec<Option<kernels::Kernel>> = vec![];
        let mut params_blob: Vec<u8> = vec![];
        let mut params_at: Vec<Vec<usize>> = vec![];
        let mut scratch_words = 0;
        for (ix, step) in plan.steps.iter().enumerate() {
            params_at.push(vec![]);
            if compiled.placement.steps[ix] == Device::Host {
                kernels_of.push(None);
                continue;
            }
            let io = step_io(&plan, ix)?;
            if io.outputs.iter().all(|v| v.is_empty()) {
                kernels_of.push(None);
                continue;
            }
            let kernel = kernels::encode(&step.op, &io).map_err(|e| {
                prepare_error(format!("step '{}' ({}): {e}", step.node, step.op.name()))
            })?;
            scratch_words = scratch_words.max(kernel.scratch_words);
            for launch in &kernel.dispatches {
                if let Launch::Kernel(dispatch) = launch {
                    let start = params_blob.len().next_multiple_of(ALIGNMENT);
                    params_blob.resize(start, 0);
                    let words = if dispatch.params.is_empty() {
                        vec![0]
                    } else {
                        dispatch.params.clone()
                    };
                    for word in &words {
                        params_blob.extend_from_slice(&word.to_le_bytes());
                    }
                    params_at[ix].push(start);
                }
            }
            kernels_of.push(Some(kernel));
        }
        let params = (!params_blob.is_empty())
            .then(|| DeviceBuffer::alloc(ctx, params_blob.len(), "kernel parameters"))
            .transpose()?;
        if let Some(p) = &params {
            // SAFETY: the allocation holds the blob.
            unsafe { result::memcpy_htod_sync(p.ptr, &params_blob) }
                .doing("uploading kernel parameters", false)?;
        }
        let scratch = (scratch_words > 0)
            .then(|| DeviceBuffer::alloc(ctx, scratch_words * WORD_BYTES, "im2col scratch"))
            .transpose()?;

        let mut steps = vec![];
        for (ix, kernel) in kernels_of.into_iter().enumerate() {
            let Some(kernel) = kernel else {
                steps.push(if compiled.placement.steps[ix] == Device::Host {
                    StepExec::Host
                } else {
                    StepExec::Skip
                });
                continue;
            };
            let mut ready = vec![];
            let mut param_starts = params_at[ix].iter();
            for launch in kernel.dispatches {
                match launch {
                    Launch::Kernel(dispatch) => {
                        let start = *param_starts
                            .next()
                            .ok_or_else(|| Error::Internal("kernel parameters".into()))?;
                        let grid = match dispatch.grid {
                            Grid::Threads(0) => continue,
                            Grid::Threads(n) => spread(n)?,
                            Grid::Groups(g) if g.contains(&0) => continue,
                            Grid::Groups([x, y, z]) => (x, y, z),
                        };
                        let function = device.function(&dispatch.shader)?;
                        let params_ptr = params
                            .as_ref()
                            .ok_or_else(|| Error::Internal("no params".into()))?
                            .ptr
                            + start as u64;
                        let mut args = vec![params_ptr];
                        for operand in &dispatch.bindings {
                            args.push(compiled.address(ix, *operand, scratch.as_ref())?);
                        }
                        ready.push(Ready::Kernel {
                            function,
                            grid,
                            args,
                        });
                    }
                    Launch::Gemm(gemm) => {
                        ready.push(Ready::Gemm(compiled.ready_gemm(
                            ix,
                            &gemm,
                            scratch.as_ref(),
                        )?));
                    }
                }
            }
            steps.push(StepExec::Device(ready));
        }
        compiled.steps = steps;
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

    fn ready_gemm(
        &self,
        ix: usize,
        gemm: &Gemm,
        scratch: Option<&DeviceBuffer>,
    ) -> Result<ReadyGemm> {
        let int = |v: usize| {
            i32::try_from(v).map_err(|_| Error::Internal(format!("{v} does not fit cuBLAS")))
        };
        let ptr = |x: &GemmMatrix| -> Result<CUdeviceptr> {
            Ok(self.address(ix, x.operand, scratch)? + (x.offset * WORD_BYTES) as u64)
        };
        // A row-major matrix X with unit column stride is X^T column-major (op N); with unit
        // row stride it is X column-major, so X^T needs op T.
        let op = |x: &GemmMatrix, cols: usize| -> Result<(cublasOperation_t, i32)> {
            if x.col_stride == 1 && x.row_stride >= cols.max(1) {
                Ok((cublasOperation_t::CUBLAS_OP_N, int(x.row_stride)?))
            } else {
                Ok((cublasOperation_t::CUBLAS_OP_T, int(x.col_stride.max(1))?))
            }
        };
        let (trans_a, lda) = op(&gemm.b, gemm.n)?;
        let (trans_b, ldb) = op(&gemm.a, gemm.k)?;
        Ok(ReadyGemm {
            trans_a,
            trans_b,
            m: int(gemm.n)?,
            n: int(gemm.m)?,
            k: int(gemm.k)?,
            a: ptr(&gemm.b)?,
            lda,
            stride_a: gemm.b.batch_stride as i64,
            b: ptr(&gemm.a)?,
            ldb,
            stride_b: gemm.a.batch_stride as i64,
            c: ptr(&gemm.c)?,
            ldc: int(gemm.c.row_stride.max(1))?,
            stride_c: gemm.c.batch_stride as i64,
            batch: int(gemm.batch)?,
        })
    }

    /// The device address of a launch operand of step `ix`.
    fn address(
        &self,
        ix: usize,
        operand: Operand,
        scratch: Option<&DeviceBuffer>,
    ) -> Result<CUdeviceptr> {
        let step = &self.plan.steps[ix];
        let operand_id = |ids: &[ValueId], k: usize| {
            ids.get(k)
                .copied()
                .ok_or_else(|| Error::Internal(format!("step '{}' has no operand {k}", step.node)))
        };
        Ok(match operand {
            Operand::Input(k) => self.value_address(operand_id(&step.inputs, k)?)?,
            Operand::Output(k) => self.value_address(operand_id(&step.outputs, k)?)?,
            Operand::Scratch { start } => {
                scratch
                    .ok_or_else(|| Error::Internal("no scratch allocation".into()))?
                    .ptr
                    + (start * WORD_BYTES) as u64
            }
        })
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

    fn value_address(&self, id: ValueId) -> Result<CUdeviceptr> {
        Ok(match self.location(id)? {
            Location::Arena(offset) => self.arena_ptr()? + offset as u64,
            Location::Input(k) => self
                .inputs
                .get(k)
                .and_then(Option::as_ref)
                .map_or(self.dummy.ptr, |b| b.ptr),
            Location::Constant => {
                let root = self.plan.root(id)?;
                self.constants
                    .get(&root)
                    .ok_or_else(|| {
                        Error::Internal(format!(
                            "constant '{}' is not on the device",
                            self.plan
                                .value(root)
                                .map(|v| v.name.as_str())
                                .unwrap_or("?")
                        ))
                    })?
                    .ptr
            }
            Location::Empty => self.dummy.ptr,
        })
    }

    fn arena_ptr(&self) -> Result<CUdeviceptr> {
        self.arena
            .as_ref()
            .map(|a| a.ptr)
            .ok_or_else(|| Error::Internal("the plan has no arena".into()))
    }

    fn launch(&self, exec: &Exec, ready: &Ready) -> Result<()> {
        match ready {
            Ready::Kernel {
                function,
                grid,
                args,
            } => {
                let mut args = args.clone();
                let mut pointers: Vec<*mut c_void> = args
                    .iter_mut()
                    .map(|a| a as *mut CUdeviceptr as *mut c_void)
                    .collect();
                // SAFETY: the kernel takes exactly these pointer arguments (`tessera_main`'s
                // signature is the dispatch's bindings), all of live allocations of this plan.
                unsafe {
                    result::launch_kernel(
                        function.cu_function(),
                        *grid,
                        (BLOCK, 1, 1),
                        0,
                        exec.stream.cu_stream(),
                        &mut pointers,
                    )
                }
                .doing("launching a kernel", true)
            }
            Ready::Gemm(g) => {
                let (alpha, beta) = (1.0f32, 0.0f32);
                // SAFETY: pointers and strides were checked against the plan's sizes when the
                // launch was prepared; alpha and beta live through the call.
                unsafe {
                    cudarc::cublas::result::sgemm_strided_batched(
                        *exec.blas.handle(),
                        g.trans_a,
                        g.trans_b,
                        g.m,
                        g.n,
                        g.k,
                        &alpha,
                        g.a as *const f32,
                        g.lda,
                        g.stride_a,
                        g.b as *const f32,
                        g.ldb,
                        g.stride_b,
                        &beta,
                        g.c as *mut f32,
                        g.ldc,
                        g.stride_c,
                        g.batch,
                    )
                }
                .doing("a cuBLAS matrix product", true)
            }
        }
    }

    /// Runs the plan. `feeds` are the runtime inputs in plan order; `on_device` leaves the
    /// outputs on the device. With `trace`, every step's outputs are read back as soon as the
    /// step ran (slow; for finding where backends disagree) and not counted as transfers.
    pub fn run(
        &self,
        exec: &Exec,
        feeds: &[Feed],
        on_device: bool,
        mut trace: Option<&mut HashMap<ValueId, Tensor>>,
    ) -> Result<(Vec<Produced>, Transfers)> {
        let plan = &self.plan;
        let ctx = &exec.device.ctx;
        ctx.bind_to_thread()
            .doing("binding the CUDA context", true)?;
        if feeds.len() != plan.inputs.len() {
            return Err(Error::Internal(format!(
                "the plan takes {} inputs, got {}",
                plan.inputs.len(),
                feeds.len()
            )));
        }
        // Out-of-range indices from the host are the cpu backend's error, not a silent 0 in a
        // kernel (which only guards against reading outside its buffers); as on wgpu.
        let host: Vec<Option<&Tensor>> = feeds
            .iter()
            .map(|feed| match feed {
                Feed::Host(t) => Some(*t),
                Feed::Device(_) => None,
            })
            .collect();
        plan.check_host_indices("cuda", &host)?;
        let stream = exec.stream.cu_stream();
        let mut transfers = Transfers::default();
        // Host words must outlive their asynchronous copies: kept until the stream is synced.
        let mut staged: Vec<Vec<u8>> = vec![];
        for (k, (feed, &id)) in feeds.iter().zip(&plan.inputs).enumerate() {
            let value = plan.value(id)?;
            let Some(buffer) = self.inputs[k].as_ref() else {
                continue;
            };
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
                    // SAFETY: the buffer holds the input's words; `words` is kept in `staged`.
                    unsafe { result::memcpy_htod_async(buffer.ptr, &words, stream) }
                        .doing("uploading an input", true)?;
                    transfers.input_bytes += words.len();
                    staged.push(words);
                }
                Feed::Device(device) => {
                    // SAFETY: both hold `device.bytes` bytes.
                    unsafe {
                        result::memcpy_dtod_async(buffer.ptr, device.ptr, device.bytes, stream)
                    }
                    .doing("copying a device input", true)?;
                }
            }
        }

        let mut host: HashMap<ValueId, Tensor> = HashMap::new();
        for (ix, exec_step) in self.steps.iter().enumerate() {
            match exec_step {
                StepExec::Skip => {}
                StepExec::Device(launches) => {
                    for ready in launches {
                        self.launch(exec, ready)?;
                    }
                    if let Some(trace) = trace.as_deref_mut() {
                        for &id in &plan.steps[ix].outputs {
                            let value = plan.value(id)?;
                            let words = if value.is_empty() {
                                vec![]
                            } else {
                                read_back(ctx, self.value_address(id)?, device_bytes(value))?
                            };
                            trace.insert(
                                id,
                                repr::from_words(value.dtype, value.shape.clone(), &words)?,
                            );
                        }
                    }
                }
                StepExec::Host => {
                    self.run_host_step(exec, ix, feeds, &mut host, &mut transfers)?;
                    if let Some(trace) = trace.as_deref_mut() {
                        for &id in &plan.steps[ix].outputs {
                            if let Some(t) = host.get(&id) {
                                trace.insert(id, t.clone());
                            }
                        }
                    }
                }
            }
        }

        let mut produced = Vec::with_capacity(plan.outputs.len());
        for &id in &plan.outputs {
            let value = plan.value(id)?;
            let root = plan.root(id)?;
            let bytes = device_bytes(value);
            if let Some(tensor) = host.get(&root) {
                let tensor = Tensor::new(value.shape.clone(), tensor.data().clone())?;
                produced.push(if on_device {
                    transfers.fallback_bytes += bytes;
                    let what = format!("output '{}'", value.name);
                    Produced::Device(Arc::new(upload(
                        exec.device,
                        &tensor,
                        Narrowing::Checked,
                        &what,
                    )?))
                } else {
                    Produced::Host(tensor)
                });
                continue;
            }
            match self.location(id)? {
                Location::Empty => {
                    produced.push(Produced::Host(repr::from_words(
                        value.dtype,
                        value.shape.clone(),
                        &[],
                    )?));
                    continue;
                }
                Location::Input(k) if !on_device => {
                    if let Feed::Host(tensor) = &feeds[k] {
                        produced.push(Produced::Host(Tensor::new(
                            value.shape.clone(),
                            tensor.data().clone(),
                        )?));
                        continue;
                    }
                }
                Location::Constant if !on_device => {
                    let constant = plan
                        .constants
                        .iter()
                        .find(|c| c.value == root)
                        .ok_or_else(|| Error::Internal("constant output".into()))?;
                    let tensor = constant.data.to_tensor()?;
                    produced.push(Produced::Host(Tensor::new(
                        value.shape.clone(),
                        tensor.into_parts().1,
                    )?));
                    continue;
                }
                _ => {}
            }
            let source = self.value_address(id)?;
            if on_device {
                let copy = DeviceBuffer::alloc(ctx, bytes, &format!("output '{}'", value.name))?;
                // SAFETY: both hold `bytes` bytes.
                unsafe { result::memcpy_dtod_async(copy.ptr, source, bytes, stream) }
                    .doing("copying an output", true)?;
                produced.push(Produced::Device(Arc::new(copy)));
            } else {
                let words = read_back(ctx, source, bytes)?;
                transfers.output_bytes += bytes;
                produced.push(Produced::Host(repr::from_words(
                    value.dtype,
                    value.shape.clone(),
                    &words,
                )?));
            }
        }
        exec.stream.synchronize().doing("finishing the run", true)?;
        drop(staged);
        Ok((produced, transfers))
    }

    /// Runs step `ix` on the host: reads back what it needs, computes, uploads what the
    /// device reads later.
    fn run_host_step(
        &self,
        exec: &Exec,
        ix: usize,
        feeds: &[Feed],
        host: &mut HashMap<ValueId, Tensor>,
        transfers: &mut Transfers,
    ) -> Result<()> {
        let plan = &self.plan;
        let ctx = &exec.device.ctx;
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
                            let words = buffer.read()?;
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
                        let words = read_back(ctx, self.arena_ptr()? + offset as u64, bytes)?;
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
                ctx.synchronize().doing("waiting for the device", true)?;
                // SAFETY: the arena holds the value at `offset`; the device is idle.
                unsafe { result::memcpy_htod_sync(self.arena_ptr()? + offset as u64, &words) }
                    .doing("uploading a host step's output", true)?;
                transfers.fallback_bytes += words.len();
            }
            host.insert(id, tensor);
        }
        Ok(())
    }
}

/// A step's input and output values.
pub(crate) fn step_io(plan: &Plan, ix: usize) -> Result<StepIo<'_>> {
    let step = &plan.steps[ix];
    Ok(StepIo {
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
    })
}
