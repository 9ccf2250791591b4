//! The kernel table: for each [`KernelOp`] of a plan step, the WGSL dispatches that compute it.
//!
//! One file per op family, each next to its shaders in `shaders/wgsl/`:
//!
//! | file | ops | shaders |
//! |---|---|---|
//! | `elementwise.rs` | Unary, Binary, Select, Cast, Quantize, Dequantize, LookupTable | `unary.wgsl`, `binary.wgsl`, `select.wgsl`, `cast.wgsl`, `quantize.wgsl` |
//! | `matmul.rs` | MatMul | `matmul.wgsl`, `matvec.wgsl` |
//! | `conv.rs` | Conv, ConvTranspose | `conv.wgsl`, `conv_transpose.wgsl` |
//! | `pool.rs` | MaxPool, SumPool | `pool.wgsl` |
//! | `reduce.rs` | Reduce, Softmax, RmsNorm, Lrn, LstmEpilogue | `reduce.wgsl`, `softmax.wgsl`, `norm.wgsl`, `lrn.wgsl`, `lstm.wgsl` |
//! | `shape.rs` | Transpose, Slice, Concat, Gather, Pad, Broadcast, Upsample, GatherElements, ScatterElements, Trilu, OneHot | `transpose.wgsl`, `slice.wgsl`, ..., `gather_elements.wgsl`, `scatter_elements.wgsl`, `trilu.wgsl`, `onehot.wgsl` |
//!
//! A kernel is a WGSL template: `common.wgsl` is prepended, and `{{NAME}}` placeholders are
//! replaced by [`Shader::defines`] (element types, the function to apply). Binding 0 is always
//! the dispatch's `params: array<u32>` (declared in `common.wgsl`); bindings 1.. are the
//! [`Dispatch::bindings`] in order, declared by the shader (`var<storage, read>` for step
//! inputs, `var<storage, read_write>` for outputs). Every element is one 32-bit word
//! ([`crate::repr`]). Pipelines are cached by shader name and defines, so a kernel's shape
//! goes in `params`, never in a define.

#[cfg(test)]
mod compute_tests;
mod conv;
#[cfg(test)]
mod device_tests;
mod elementwise;
mod matmul;
mod pool;
mod reduce;
mod shape;
#[cfg(test)]
mod tests;

use crate::repr;
use tessera_core::plan::{KernelOp, Value};
use tessera_core::{DType, Error, Result};

/// A WGSL template and the values of its placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Shader {
    /// File name under `shaders/wgsl/`, e.g. `"unary.wgsl"`.
    pub name: &'static str,
    /// The file's text (`include_str!`).
    pub source: &'static str,
    /// `{{KEY}}` → value.
    pub defines: Vec<(&'static str, String)>,
}

/// A tensor a dispatch binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operand {
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
}

/// How many workgroups a dispatch launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Grid {
    /// One thread per item, 64 per workgroup (`@workgroup_size(64)`); the runtime spreads the
    /// workgroups over x and y when there are more than 65535. Shaders use `thread_index`.
    Threads(usize),
    /// Exactly these workgroup counts.
    Groups([u32; 3]),
}

/// One compute dispatch.
#[derive(Debug, Clone)]
pub(crate) struct Dispatch {
    pub shader: Shader,
    /// The dispatch's parameters, bound at binding 0 (at least one word is bound).
    pub params: Vec<u32>,
    /// Bindings 1.. in order.
    pub bindings: Vec<Operand>,
    pub grid: Grid,
}

/// What one plan step runs on the device: dispatches in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Kernel {
    pub dispatches: Vec<Dispatch>,
}

impl Kernel {
    /// A kernel of one dispatch.
    pub fn single(dispatch: Dispatch) -> Kernel {
        Kernel {
            dispatches: vec![dispatch],
        }
    }
}

/// A step's input and output tensors, as the plan gives them.
pub(crate) struct StepIo<'a> {
    pub inputs: Vec<&'a Value>,
    pub outputs: Vec<&'a Value>,
}

/// Why a step cannot run on wgpu (for placement reports), or `None` when it can.
pub(crate) fn unsupported_reason(op: &KernelOp, io: &StepIo) -> Option<String> {
    for value in io.inputs.iter().chain(&io.outputs) {
        if repr::word(value.dtype).is_none() {
            return Some(format!(
                "{} tensors ('{}') are not supported on wgpu (WGSL has no 64-bit types)",
                value.dtype, value.name
            ));
        }
    }
    match encode(op, io) {
        Ok(_) => None,
        Err(Error::UnsupportedOps { .. }) => Some(format!("no wgpu kernel for {}", op.name())),
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

/// [`encode`], for a device whose storage bindings hold at most `max_binding_bytes`: a MatMul
/// whose weight matrix is larger (the 4096-wide fully connected layers of VGG or AlexNet are
/// 150-400 MB; lavapipe binds 128 MiB) is split into column blocks, each binding a slice of it.
pub(crate) fn encode_limited(
    op: &KernelOp,
    io: &StepIo,
    max_binding_bytes: usize,
) -> Result<Kernel> {
    if let KernelOp::MatMul { .. } = op {
        let too_big = io
            .inputs
            .get(1)
            .is_some_and(|b| b.len() * repr::WORD_BYTES > max_binding_bytes);
        if too_big {
            return matmul::split_columns(op, io, max_binding_bytes / repr::WORD_BYTES);
        }
    }
    encode(op, io)
}

/// The error for an op (or a variant of one) without a wgpu kernel.
pub(crate) fn no_kernel(op: &KernelOp) -> Error {
    Error::UnsupportedOps {
        backend: Some("wgpu".into()),
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
        context: "wgpu tensors (WGSL has no 64-bit types)".into(),
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

/// Pushes a `usize` as one u32 parameter; larger values are an error (a wgpu binding holds at
/// most 4 GiB anyway).
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
const COMMON: &str = include_str!("../../../../shaders/wgsl/common.wgsl");

/// The WGSL a [`Shader`] stands for: `common.wgsl`, then the template with its `{{KEY}}`
/// placeholders replaced. Tensor bindings are written `var<storage, read>` in the templates (to
/// say what a kernel reads) and compiled as `read_write`: intermediate tensors share one arena
/// buffer, and WebGPU forbids binding one buffer both read-only and read-write in a dispatch,
/// while several read-write bindings of it are allowed. `params` (in the prelude) stays
/// read-only.
pub(crate) fn expand(shader: &Shader) -> Result<String> {
    let mut body = shader
        .source
        .replace("var<storage, read> ", "var<storage, read_write> ");
    for (key, value) in &shader.defines {
        body = body.replace(&format!("{{{{{key}}}}}"), value);
    }
    if let Some(at) = body.find("{{") {
        let rest = &body[at..];
        let end = rest.find("}}").map_or(rest.len().min(40), |e| e + 2);
        return Err(Error::Internal(format!(
            "kernel {}: placeholder {} has no value",
            shader.name,
            &rest[..end]
        )));
    }
    Ok(format!("{COMMON}\n{body}"))
}
