//! The kernel table: for each [`KernelOp`] of a plan step, the launches that compute it:
//! cuBLAS GEMMs ([`Gemm`]) and CUDA C kernels compiled by NVRTC ([`Dispatch`]).
//!
//! One file per op family, each next to its kernels in `shaders/cuda/` (the same families and
//! parameter layouts as the wgpu backend's `shaders/wgsl/`):
//!
//! | file | ops | kernels |
//! |---|---|---|
//! | `elementwise.rs` | Unary, Binary, Select, Cast, Quantize, Dequantize, LookupTable | `unary.cu`, `binary.cu`, `select.cu`, `cast.cu`, `quantize.cu` |
//! | `matmul.rs` | MatMul | cuBLAS sgemm / strided-batched; `matvec.cu` for layouts cuBLAS cannot take |
//! | `conv.rs` | Conv, ConvTranspose | `im2col.cu` + cuBLAS + `bias.cu`; `conv.cu` (channels-last, 1-D..3-D direct), `conv_transpose.cu` |
//! | `pool.rs` | MaxPool, SumPool | `pool.cu` |
//! | `reduce.rs` | Reduce, Softmax, RmsNorm, Lrn, LstmEpilogue | `reduce.cu`, `softmax.cu`, `norm.cu`, `lrn.cu`, `lstm.cu` |
//! | `shape.rs` | Transpose, Slice, Concat, Gather, Pad, Broadcast, Upsample, GatherElements, ScatterElements, Trilu, OneHot | `transpose.cu`, `slice.cu`, ..., `onehot.cu` |
//!
//! A kernel is `common.cuh`, then `#define TS_<KEY> value` for each of [`Shader::defines`]
//! (element types, the function to apply), then the `.cu` file. Its entry point is
//! `tessera_main(params, tensors...)`: `params` is the launch's `u32` parameters, the tensors are
//! the [`Dispatch::bindings`] in order. Every element is one 32-bit word ([`crate::repr`]).
//! Modules are cached per device by source and defines, so a kernel's shape goes in `params`,
//! never in a define.

mod conv;
mod elementwise;
mod matmul;
#[cfg(test)]
mod nvrtc_tests;
mod pool;
mod reduce;
mod shape;

use crate::repr;
use tessera_core::plan::{KernelOp, Value};
use tessera_core::{DType, Error, Result};

/// A CUDA C kernel source and the values of its `TS_<KEY>` macros.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Shader {
    /// File name under `shaders/cuda/`, e.g. `"unary.cu"`.
    pub name: &'static str,
    /// The file's text (`include_str!`).
    pub source: &'static str,
    /// `TS_<KEY>` → value.
    pub defines: Vec<(&'static str, String)>,
}

/// A tensor a launch reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operand {
    /// The step's k-th input.
    Input(usize),
    /// The step's k-th output.
    Output(usize),
    /// The plan's scratch buffer (im2col columns) from word `start`; the executor sizes it for
    /// the largest [`Kernel::scratch_words`].
    Scratch { start: usize },
}

/// How many threads a dispatch launches (blocks of [`BLOCK`] threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grid {
    /// One thread per item; the runtime spreads the blocks over x and y when there are more
    /// than 65535. Kernels use `thread_index`.
    Threads(usize),
    /// Exactly these block counts.
    Groups([u32; 3]),
}

/// Threads per block of every kernel (the WGSL kernels' workgroup size, which the reductions'
/// shared-memory layouts assume).
pub(crate) const BLOCK: u32 = 64;

/// One kernel launch.
#[derive(Debug, Clone)]
pub(crate) struct Dispatch {
    pub shader: Shader,
    /// The launch's parameters (at least one word is passed).
    pub params: Vec<u32>,
    /// Tensors after `params`, in order.
    pub bindings: Vec<Operand>,
    pub grid: Grid,
}

/// One matrix of a [`Gemm`], row-major: element `(r, c)` of batch `i` is at word
/// `offset + i * batch_stride + r * row_stride + c * col_stride` of `operand`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GemmMatrix {
    pub operand: Operand,
    pub offset: usize,
    pub batch_stride: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

/// `C[i] = A[i] (m x k) · B[i] (k x n)` for `batch` matrices, f32, through cuBLAS. The executor
/// turns it into a column-major call (C^T = B^T A^T); [`Gemm::check`] says whether cuBLAS can
/// take the layouts (one stride of each matrix must be 1, C's column stride must be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub a: GemmMatrix,
    pub b: GemmMatrix,
    pub c: GemmMatrix,
}

impl Gemm {
    /// Whether cuBLAS can take these layouts (and sizes fit its 32-bit arguments).
    pub fn check(&self) -> bool {
        let fits = |v: usize| i32::try_from(v).is_ok();
        let leading = |x: &GemmMatrix, rows: usize, cols: usize| {
            (x.col_stride == 1 && x.row_stride >= cols.max(1))
                || (x.row_stride == 1 && x.col_stride >= rows.max(1))
        };
        [self.m, self.n, self.k, self.batch].into_iter().all(fits)
            && [&self.a, &self.b, &self.c]
                .iter()
                .all(|x| fits(x.row_stride) && fits(x.col_stride))
            && leading(&self.a, self.m, self.k)
            && leading(&self.b, self.k, self.n)
            && self.c.col_stride == 1
            && self.c.row_stride >= self.n.max(1)
    }
}

/// One step of a kernel: a CUDA C kernel or a cuBLAS call.
#[derive(Debug, Clone)]
pub(crate) enum Launch {
    Kernel(Dispatch),
    Gemm(Gemm),
}

impl From<Dispatch> for Launch {
    fn from(d: Dispatch) -> Launch {
        Launch::Kernel(d)
    }
}

/// What one plan step runs on the device: launches in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kernel {
    pub dispatches: Vec<Launch>,
    /// Words of scratch memory the launches use ([`Operand::Scratch`]).
    pub scratch_words: usize,
}

impl Kernel {
    /// A kernel of one launch.
    pub fn single(dispatch: impl Into<Launch>) -> Kernel {
        Kernel {
            dispatches: vec![dispatch.into()],
            scratch_words: 0,
        }
    }
}

/// A step's input and output tensors, as the plan gives them.
pub(crate) struct StepIo<'a> {
    pub inputs: Vec<&'a Value>,
    pub outputs: Vec<&'a Value>,
}

/// Why a step cannot run on cuda (for placement reports), or `None` when it can.
pub(crate) fn unsupported_reason(op: &KernelOp, io: &StepIo) -> Option<String> {
    for value in io.inputs.iter().chain(&io.outputs) {
        if repr::word(value.dtype).is_none() {
            return Some(format!(
                "{} tensors ('{}') are not supported on cuda (held as 32-bit words, like wgpu)",
                value.dtype, value.name
            ));
        }
    }
    match encode(op, io) {
        Ok(_) => None,
        Err(Error::UnsupportedOps { .. }) => Some(format!("no cuda kernel for {}", op.name())),
        Err(e) => Some(e.to_string()),
    }
}

/// The dispatches for one step. An op without a kernel is `Err(UnsupportedOps)`.
pub(crate) fn encode(op: &KernelOp, io: &StepIo) -> Result<Kernel> {
    match op {
        KernelOp::MatMul { .. } => matmul::encode(op, io),
        KernelOp::Conv { .. } | KernelOp::ConvTranspose { .. } => conv::encode(op, io),
        KernelOp::MaxPool { .. } | KernelOp::SumPool { .. } => pool::encode(op, io),
        KernelOp::Reduce { .. }
        | KernelOp::Softmax { .. }
        | KernelOp::RmsNorm { .. }
        | KernelOp::Lrn { .. }
        | KernelOp::LstmEpilogue { .. } => reduce::encode(op, io),
        KernelOp::Unary { .. }
        | KernelOp::Binary { .. }
        | KernelOp::Select { .. }
        | KernelOp::Cast { .. }
        | KernelOp::Quantize { .. }
        | KernelOp::Dequantize { .. }
        | KernelOp::LookupTable { .. } => elementwise::encode(op, io),
        KernelOp::Transpose { .. }
        | KernelOp::Slice { .. }
        | KernelOp::Concat { .. }
        | KernelOp::Gather { .. }
        | KernelOp::Pad { .. }
        | KernelOp::Broadcast { .. }
        | KernelOp::Upsample { .. }
        | KernelOp::GatherElements { .. }
        | KernelOp::ScatterElements { .. }
        | KernelOp::Trilu { .. }
        | KernelOp::OneHot { .. } => shape::encode(op, io),
        _ => Err(no_kernel(op)),
    }
}

/// The error for an op (or a variant of one) without a cuda kernel.
pub(crate) fn no_kernel(op: &KernelOp) -> Error {
    Error::UnsupportedOps {
        backend: Some("cuda".into()),
        ops: vec![tessera_core::UnsupportedOp {
            op_type: op.name(),
            first_node: String::new(),
            count: 1,
            reason: None,
        }],
    }
}

/// The device word type of `dtype` (`"f32"`, `"i32"`, `"u32"`: typedefs in `common.cuh`).
pub(crate) fn word(dtype: DType) -> Result<&'static str> {
    repr::word(dtype).ok_or_else(|| Error::UnsupportedDtype {
        dtype: dtype.to_string(),
        context: "cuda tensors (held as 32-bit words)".into(),
    })
}

/// Row-major strides of `shape`, with 0 where a dimension is 1 (so it broadcasts) when
/// `broadcast` is set.
pub(crate) fn strides(shape: &[usize], broadcast: bool) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut step = 1;
    for axis in (0..shape.len()).rev() {
        strides[axis] = if broadcast && shape[axis] == 1 {
            0
        } else {
            step
        };
        step *= shape[axis];
    }
    strides
}

/// Pushes a `usize` as one u32 parameter; larger values are an error (kernels index with
/// 32-bit words).
pub(crate) fn u32_param(value: usize) -> Result<u32> {
    u32::try_from(value)
        .map_err(|_| Error::Internal(format!("{value} does not fit a 32-bit kernel parameter")))
}

/// Packs parameters: every value must fit in a u32.
pub(crate) fn params(values: impl IntoIterator<Item = usize>) -> Result<Vec<u32>> {
    values.into_iter().map(u32_param).collect()
}

/// Number of elements of the step's first output (0 without one).
pub(crate) fn output_len(io: &StepIo) -> usize {
    io.outputs.first().map_or(0, |v| v.len())
}

/// Defines every kernel template is given the same way.
pub(crate) fn shader(
    name: &'static str,
    source: &'static str,
    defines: Vec<(&'static str, String)>,
) -> Shader {
    Shader {
        name,
        source,
        defines,
    }
}

/// The prelude of every kernel.
pub(crate) const COMMON: &str = include_str!("../../../../shaders/cuda/common.cuh");

/// The CUDA C a [`Shader`] stands for: `common.cuh`, the `TS_<KEY>` macros, then the kernel.
pub(crate) fn expand(shader: &Shader) -> Result<String> {
    let mut text = String::with_capacity(COMMON.len() + shader.source.len() + 256);
    text.push_str(COMMON);
    text.push('\n');
    for (key, value) in &shader.defines {
        if value.contains('\n') {
            return Err(Error::Internal(format!(
                "kernel {}: the value of TS_{key} spans lines",
                shader.name
            )));
        }
        text.push_str(&format!("#define TS_{key} {value}\n"));
    }
    text.push_str(&format!("#line 1 \"{}\"\n", shader.name));
    text.push_str(shader.source);
    Ok(text)
}
