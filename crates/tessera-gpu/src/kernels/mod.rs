//! The kernel table: for each [`KernelOp`] of a plan step, the launches that compute it on a
//! GPU backend: kernels by name with their defines, parameters, tensors and grid, or a GEMM call
//! where the device has a GEMM library ([`Target::gemm`]).
//!
//! One file per op family; each kernel name is a file in every backend's shader folder
//! (`shaders/wgsl/<name>.wgsl`, `shaders/cuda/<name>.cu`), with the same parameters:
//!
//! | file | ops | kernels |
//! |---|---|---|
//! | `elementwise.rs` | Unary, Binary, Select, Cast, Quantize, Dequantize, LookupTable | `unary`, `binary`, `select`, `cast`, `quantize` |
//! | `matmul.rs` | MatMul | a GEMM call; else `matmul` (tiled), `matvec` (a side is thin, or the GEMM library cannot take the layout) |
//! | `conv.rs` | Conv, ConvTranspose | `im2col` + GEMM calls + `bias` (channels-first, with a GEMM library); else `conv`; `conv_transpose` |
//! | `pool.rs` | MaxPool, SumPool | `pool` |
//! | `reduce.rs` | Reduce, Softmax, RmsNorm, Lrn, TopK, LstmEpilogue, Dft | `reduce`, `softmax`, `norm`, `lrn`, `topk`, `lstm`, `dft` |
//! | `shape.rs` | Transpose, Slice, Concat, Gather, Pad, Broadcast, Upsample, Tile, Resample, GridSample, GatherElements, GatherNd, ScatterElements, ScatterNd, Trilu, OneHot | `transpose`, `slice`, `concat`, `gather`, `pad`, `broadcast`, `upsample` (Tile too), `resample`, `grid_sample`, `gather_elements`, `gather_nd`, `scatter_elements`, `scatter_nd`, `trilu`, `onehot` |
//! | `counted.rs` | NonZero, NonMaxSuppression (a staged plan's counted ops: results sized by values) | `nonzero`, `nms` |
//!
//! Parameters are `u32` words (shapes, strides, f32 bit patterns), so a kernel's shape never goes
//! in a define and compiled kernels are cached by name and defines. Every element is one 32-bit
//! word ([`crate::repr`]). Define values that are expressions (`EXPR`) are written in WGSL's
//! spelling; a backend whose language spells builtins otherwise translates them when it compiles.

mod conv;
mod counted;
mod elementwise;
mod matmul;
mod pool;
mod reduce;
mod shape;

use crate::repr;
use tessera_core::plan::{KernelOp, Value};
use tessera_core::{DType, Error, Result};

/// What differs between the GPU backends when a step is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The backend's name, for messages (`"wgpu"`, `"cuda"`).
    pub backend: &'static str,
    /// The device has a GEMM library (cuBLAS): matrix products and channels-first convolutions
    /// become [`Launch::Gemm`] calls where their layouts allow.
    pub gemm: bool,
    /// The largest tensor one kernel may bind, in words (WebGPU's storage binding limit): a
    /// MatMul whose weights are larger is split into column blocks. `None`: no limit.
    pub max_binding_words: Option<usize>,
}

/// A kernel by name and the values of its defines.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shader {
    /// The kernel's file name without extension, e.g. `"unary"`.
    pub name: &'static str,
    /// Define name → value (element types, the expression to apply).
    pub defines: Vec<(&'static str, String)>,
}

/// A tensor a launch binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// The step's k-th input (read-only).
    Input(usize),
    /// The step's k-th output (read-write).
    Output(usize),
    /// `words` words of the step's k-th input from word `start` (a multiple of 64, so the byte
    /// offset meets WebGPU's 256-byte binding alignment): for inputs larger than one binding.
    InputRange {
        input: usize,
        start: usize,
        words: usize,
    },
    /// The plan's scratch memory (im2col columns) from word `start`; the executor sizes it for
    /// the largest [`Kernel::scratch_words`].
    Scratch { start: usize },
}

/// How many threads a dispatch launches, in blocks of [`BLOCK`] threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// One thread per item; the executor spreads the blocks over x and y when there are more
    /// than the device allows along one axis. Kernels use `thread_index`.
    Threads(usize),
    /// Exactly these block counts.
    Groups([u32; 3]),
}

/// Threads per block (workgroup) of every kernel; the row kernels' shared-memory layouts
/// assume it.
pub const BLOCK: u32 = 64;

impl Grid {
    /// The block counts to launch on a device with at most `max_per_axis` blocks along an
    /// axis (`Threads` spread over x and y), or `None` when nothing runs.
    pub fn blocks(self, max_per_axis: u32) -> Result<Option<[u32; 3]>> {
        match self {
            Grid::Threads(0) => Ok(None),
            Grid::Threads(threads) => {
                let blocks = threads.div_ceil(BLOCK as usize);
                let max = max_per_axis.max(1) as usize;
                let x = blocks.min(max);
                let y = blocks.div_ceil(x);
                if y > max {
                    return Err(Error::Internal(format!(
                        "{threads} threads exceed the device's launch grid"
                    )));
                }
                Ok(Some([x as u32, y as u32, 1]))
            }
            Grid::Groups(groups) if groups.contains(&0) => Ok(None),
            Grid::Groups(groups) => Ok(Some(groups)),
        }
    }
}

/// One kernel launch.
#[derive(Debug, Clone)]
pub struct Dispatch {
    pub shader: Shader,
    /// The launch's parameters (at least one word is bound).
    pub params: Vec<u32>,
    /// Tensors after `params`, in order.
    pub bindings: Vec<Operand>,
    pub grid: Grid,
}

/// One matrix of a [`Gemm`], row-major: element `(r, c)` of batch `i` is at word
/// `offset + i * batch_stride + r * row_stride + c * col_stride` of `operand`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmMatrix {
    pub operand: Operand,
    pub offset: usize,
    pub batch_stride: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

/// `C[i] = A[i] (m x k) · B[i] (k x n)` for `batch` matrices, f32, through the device's GEMM
/// library. [`Gemm::check`] says whether a column-major BLAS can take the layouts (one stride of
/// each matrix must be 1, C's column stride must be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batch: usize,
    pub a: GemmMatrix,
    pub b: GemmMatrix,
    pub c: GemmMatrix,
}

impl Gemm {
    /// Whether a BLAS can take these layouts (and sizes fit its 32-bit arguments).
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

/// One step of a kernel: a compiled kernel or a GEMM library call.
#[derive(Debug, Clone)]
pub enum Launch {
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
pub struct Kernel {
    pub launches: Vec<Launch>,
    /// Words of scratch memory the launches use ([`Operand::Scratch`]).
    pub scratch_words: usize,
}

impl Kernel {
    /// A kernel of one launch.
    pub fn single(launch: impl Into<Launch>) -> Kernel {
        Kernel {
            launches: vec![launch.into()],
            scratch_words: 0,
        }
    }

    /// A kernel of these dispatches, in order.
    pub fn of(dispatches: Vec<Dispatch>) -> Kernel {
        Kernel {
            launches: dispatches.into_iter().map(Launch::Kernel).collect(),
            scratch_words: 0,
        }
    }

    /// The kernel dispatches (not the GEMM calls), in order.
    pub fn dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.launches.iter().filter_map(|l| match l {
            Launch::Kernel(d) => Some(d),
            Launch::Gemm(_) => None,
        })
    }
}

/// A step's input and output tensors, as the plan gives them.
pub struct StepIo<'a> {
    pub inputs: Vec<&'a Value>,
    pub outputs: Vec<&'a Value>,
}

/// Why no kernel can take a step's tensors on `target` (a type no word holds), or `None`.
pub fn step_reason(io: &StepIo, target: &Target) -> Option<String> {
    io.inputs.iter().chain(&io.outputs).find_map(|value| {
        repr::word(value.dtype).is_none().then(|| {
            format!(
                "{} tensors ('{}') are not supported on {} (GPU tensors are held as 32-bit words)",
                value.dtype, value.name, target.backend
            )
        })
    })
}

/// The launches for one step on `target`. An op without a kernel is `Err(UnsupportedOps)`
/// naming the backend.
pub fn encode(op: &KernelOp, io: &StepIo, target: &Target) -> Result<Kernel> {
    encode_op(op, io, target).map_err(|e| match e {
        Error::UnsupportedOps { backend: None, ops } => Error::UnsupportedOps {
            backend: Some(target.backend.into()),
            ops,
        },
        e => e,
    })
}

fn encode_op(op: &KernelOp, io: &StepIo, target: &Target) -> Result<Kernel> {
    match op {
        KernelOp::MatMul { .. } => matmul::encode(op, io, target),
        KernelOp::Conv { .. } | KernelOp::ConvTranspose { .. } => conv::encode(op, io, target),
        KernelOp::MaxPool { .. } | KernelOp::SumPool { .. } => pool::encode(op, io),
        KernelOp::Reduce { .. }
        | KernelOp::Softmax { .. }
        | KernelOp::RmsNorm { .. }
        | KernelOp::Lrn { .. }
        | KernelOp::TopK { .. }
        | KernelOp::LstmEpilogue { .. }
        | KernelOp::Dft { .. } => reduce::encode(op, io),
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
        | KernelOp::Tile { .. }
        | KernelOp::Resample { .. }
        | KernelOp::GridSample { .. }
        | KernelOp::GatherElements { .. }
        | KernelOp::GatherNd { .. }
        | KernelOp::ScatterElements { .. }
        | KernelOp::ScatterNd { .. }
        | KernelOp::Trilu { .. }
        | KernelOp::OneHot { .. } => shape::encode(op, io),
        KernelOp::NonZero { .. } | KernelOp::NonMaxSuppression { .. } => counted::encode(op),
        _ => Err(no_kernel(op)),
    }
}

/// The error for an op (or a variant of one) without a kernel; [`encode`] names the backend.
pub(crate) fn no_kernel(op: &KernelOp) -> Error {
    Error::UnsupportedOps {
        backend: None,
        ops: vec![tessera_core::UnsupportedOp {
            op_type: op.name(),
            first_node: String::new(),
            count: 1,
            reason: None,
        }],
    }
}

/// The device word type of `dtype` (`"f32"`, `"i32"`, `"u32"`).
pub(crate) fn word(dtype: DType) -> Result<&'static str> {
    repr::word(dtype).ok_or_else(|| Error::UnsupportedDtype {
        dtype: dtype.to_string(),
        context: "GPU tensors (held as 32-bit words)".into(),
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

/// The output's axes and each operand's strides with unit axes dropped and neighbouring axes
/// merged wherever every operand walks them as one (contiguous, or broadcast along both): kernels
/// that find an element's operands by a division per axis then divide less: `[1, 8, 240, 240]`
/// by `[1, 8, 1, 1]` becomes `[8, 57600]`, equal shapes one axis (lavapipe divides each lane on
/// its own: ppocrv4_det's element-wise ops were half of its run there).
pub(crate) fn collapse_axes(
    shape: &[usize],
    strides: &[Vec<usize>],
) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut merged: Vec<usize> = vec![];
    let mut merged_strides: Vec<Vec<usize>> = vec![vec![]; strides.len()];
    for (axis, &dim) in shape.iter().enumerate() {
        if dim == 1 {
            continue;
        }
        // The axis before continues into this one for every operand: (o, i) at o * outer + i *
        // inner is element o * dim + i of one axis of stride `inner`.
        let continues = !merged.is_empty()
            && strides
                .iter()
                .zip(&merged_strides)
                .all(|(s, m)| m.last() == Some(&(s[axis] * dim)));
        if continues && let Some(last) = merged.last_mut() {
            *last *= dim;
            for (s, m) in strides.iter().zip(merged_strides.iter_mut()) {
                if let Some(stride) = m.last_mut() {
                    *stride = s[axis];
                }
            }
        } else {
            merged.push(dim);
            for (s, m) in strides.iter().zip(merged_strides.iter_mut()) {
                m.push(s[axis]);
            }
        }
    }
    (merged, merged_strides)
}

/// A `usize` as one u32 parameter; larger values are an error (kernels index with 32-bit words,
/// and a WebGPU binding holds at most 4 GiB anyway).
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

/// A kernel by name with these defines.
pub fn shader(name: &'static str, defines: Vec<(&'static str, String)>) -> Shader {
    Shader { name, defines }
}

/// The source of kernel `name` in a backend's [`kernel_sources!`](crate::kernel_sources) table.
pub fn source_of(sources: &[(&str, &'static str)], name: &str) -> Result<&'static str> {
    sources
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
        .ok_or_else(|| Error::Internal(format!("no kernel named {name}")))
}

/// `[(name, source)]` for every kernel [`encode`] may name, read from `$dir` (relative to the
/// invoking file) with extension `$ext`, plus the backend's `$extra` kernels (those only its
/// [`Target`] reaches). A kernel added here must exist in every backend's language, or that
/// backend does not build.
#[macro_export]
macro_rules! kernel_sources {
    ($dir:literal, $ext:literal, [$($extra:literal),* $(,)?]) => {
        $crate::kernel_sources!(@list $dir, $ext, [
            "binary", "broadcast", "cast", "concat", "conv", "conv_transpose", "gather",
            "gather_elements", "gather_nd", "lrn", "lstm", "matvec", "norm", "onehot", "pad", "pool",
            "quantize", "reduce", "scatter_elements", "scatter_nd", "select", "slice", "softmax", "topk",
            "transpose", "trilu", "unary", "upsample", "resample", "grid_sample", "dft", "nonzero", "nms", $($extra),*
        ])
    };
    (@list $dir:literal, $ext:literal, [$($name:literal),*]) => {
        &[$(($name, include_str!(concat!($dir, $name, $ext)))),*]
    };
}

#[cfg(test)]
mod tests {
    use super::{collapse_axes, strides};

    #[test]
    fn axes_walked_as_one_are_merged_and_unit_axes_dropped() {
        let same = strides(&[2, 3, 4], true);
        assert_eq!(
            collapse_axes(&[2, 3, 4], &[same.clone(), same]),
            (vec![24], vec![vec![1], vec![1]])
        );
        // A per-channel operand: the spatial axes merge, the channel axis stays apart.
        assert_eq!(
            collapse_axes(
                &[1, 8, 24, 24],
                &[strides(&[1, 8, 24, 24], true), strides(&[1, 8, 1, 1], true)]
            ),
            (vec![8, 576], vec![vec![576, 1], vec![1, 0]])
        );
        // Broadcast along both of two neighbouring axes merges them; a scalar operand stays 0.
        assert_eq!(
            collapse_axes(
                &[5, 2, 3],
                &[strides(&[5, 1, 1], true), strides(&[1, 1, 1], true)]
            ),
            (vec![5, 6], vec![vec![1, 0], vec![0, 0]])
        );
        // Transposed strides do not merge.
        assert_eq!(
            collapse_axes(&[3, 4], &[vec![1, 3], vec![4, 1]]),
            (vec![3, 4], vec![vec![1, 3], vec![4, 1]])
        );
        // All unit axes: rank 0, one element.
        assert_eq!(
            collapse_axes(&[1, 1], &[vec![0, 0]]),
            (vec![], vec![vec![]])
        );
    }
}
