//! [`KernelOp`]: the backend-neutral operations a plan is made of.
//!
//! Every parameter is concrete (shapes, axes, strides, pads, permutations...), so a GPU backend
//! needs only one kernel per variant and never looks at tract's graph. Shapes are in elements,
//! row-major (C order); every tensor a kernel reads or writes is dense and contiguous unless a
//! variant says otherwise (only [`KernelOp::MatMul`] takes strides).
//!
//! Shape rules for every variant live in [`super::shapes`]; a plan is checked against them.

use crate::DType;

/// An element-wise function of one tensor. The output has the input's shape.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum UnaryOp {
    Abs,
    Neg,
    Sign,
    Exp,
    Ln,
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `1 / x`.
    Recip,
    /// `x * x`.
    Square,
    Sigmoid,
    Tanh,
    Erf,
    /// `x * sigmoid(x)`.
    Silu,
    /// `0.5 x (1 + erf(x / sqrt 2))`.
    GeluExact,
    /// `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))` (GELU's tanh form, ONNX
    /// `Gelu(approximate="tanh")`, which tract also finds in its element-wise spelling); with
    /// `square`, `x^2` in place of `x^3` (tract's fast form).
    GeluTanh {
        square: bool,
    },
    /// `x * relu6(x + 3) / 6`.
    HardSwish,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Floor,
    Ceil,
    /// Round half away from zero.
    Round,
    /// Round half to even (ONNX `Round`).
    RoundHalfToEven,
    /// Logical not (bool).
    Not,
    /// Bitwise not (integers).
    BitNot,
    /// `x >= 0 ? x : alpha * x`.
    LeakyRelu {
        alpha: f32,
    },
    /// `x ^ exponent`.
    PowConst {
        exponent: f32,
    },
    IsNan,
    /// `detect_positive` / `detect_negative` pick which infinities count.
    IsInf {
        detect_positive: bool,
        detect_negative: bool,
    },
}

/// An element-wise function of two tensors, with numpy broadcasting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    /// Integer remainder with the sign of the divisor's C semantics (tract's `Rem`).
    Rem,
    Pow,
    Min,
    Max,
    And,
    Or,
    Xor,
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
    /// Comparisons write bools.
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinaryOp {
    /// Whether the result is a bool tensor whatever the operands are.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

/// A reduction over some axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    /// Mean of `x * x`.
    MeanOfSquares,
    /// Index (i64) of the largest value; `last` picks the last one on ties.
    ArgMax {
        last: bool,
    },
    /// Index (i64) of the smallest value; `last` picks the last one on ties.
    ArgMin {
        last: bool,
    },
    /// Logical and (bool).
    All,
    /// Logical or (bool).
    Any,
}

/// How a [`KernelOp::Pad`] fills the border.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum PadMode {
    /// A constant, given as f64 (cast to the tensor's type).
    Constant(f64),
    /// Mirror without repeating the edge.
    Reflect,
    /// Repeat the edge.
    Edge,
}

/// How a [`KernelOp::ScatterElements`] combines an update with the element it lands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum ScatterReduction {
    /// The update replaces the element (the last update wins when indices repeat).
    None,
    Add,
    Mul,
    Max,
    Min,
}

/// How [`KernelOp::GridSample`] reads between input positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum GridSampleMode {
    /// The nearest position (ties to even).
    Nearest,
    /// Linear along each spatial axis (2 or 3 of them).
    Bilinear,
    /// Cubic along both spatial axes (coefficient -0.75; 2-D only).
    Bicubic,
}

/// What [`KernelOp::GridSample`] reads outside the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum GridPadding {
    Zeros,
    /// The nearest edge value.
    Border,
    /// The input reflected at its edges.
    Reflection,
}

/// Spatial geometry shared by convolutions and pools. Layout is `N, C, spatial...`, or
/// `N, spatial..., C` when `channels_last`; without `batch_axis` the `N` axis is absent (N = 1).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Window {
    /// Batch size.
    pub batch: usize,
    /// Whether the tensors have the `N` axis.
    pub batch_axis: bool,
    /// Whether channels are the last axis instead of axis 1.
    pub channels_last: bool,
    /// Input spatial extent, one per spatial axis.
    pub input: Vec<usize>,
    /// Output spatial extent.
    pub output: Vec<usize>,
    /// Kernel (window) extent.
    pub kernel: Vec<usize>,
    /// Step between two windows.
    pub strides: Vec<usize>,
    /// Spacing between two kernel taps.
    pub dilations: Vec<usize>,
    /// Implicit zero padding before each spatial axis.
    pub pads_before: Vec<usize>,
    /// Implicit zero padding after each spatial axis.
    pub pads_after: Vec<usize>,
}

/// Where a matrix lives in its buffer: element strides of each batch axis (0 = broadcast) and of
/// its rows and columns. `offset` is in elements.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MatLayout {
    pub offset: usize,
    pub batch_strides: Vec<usize>,
    pub row_stride: usize,
    pub col_stride: usize,
}

/// One operation of a plan. Tensor inputs come in the order listed per variant.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum KernelOp {
    /// `out = op(x)`. Inputs: `x`. `dtype` is the input type, `out_dtype` the output type.
    Unary {
        op: UnaryOp,
        dtype: DType,
        out_dtype: DType,
    },
    /// `out = a op b` with broadcasting. Inputs: `a`, `b`. `a_shape`, `b_shape` are padded with
    /// leading 1s to the output's rank; a dimension of 1 broadcasts. `dtype` is the operand type.
    Binary {
        op: BinaryOp,
        dtype: DType,
        a_shape: Vec<usize>,
        b_shape: Vec<usize>,
        out_shape: Vec<usize>,
    },
    /// `out = cond ? a : b` (ONNX `Where`). Inputs: `cond` (bool), `a`, `b`; shapes padded to
    /// the output's rank, broadcasting like [`KernelOp::Binary`].
    Select {
        cond_shape: Vec<usize>,
        a_shape: Vec<usize>,
        b_shape: Vec<usize>,
        out_shape: Vec<usize>,
    },
    /// Element type conversion. Inputs: `x`.
    Cast { from: DType, to: DType },
    /// `out = clamp(round_half_even(x / scale) + zero_point)` into `to` (u8 or i8). Inputs: `x` (f32).
    /// tract stores the reciprocal: `inv_scale = 1 / scale`, and the kernel multiplies by it.
    Quantize {
        inv_scale: f32,
        zero_point: i32,
        to: DType,
    },
    /// `out = (x - zero_point) * scale` as f32. Inputs: `x` (u8, i8 or i32).
    Dequantize {
        scale: f32,
        zero_point: i32,
        from: DType,
    },
    /// `out[i] = table[x[i]]` for 8-bit `x`. Inputs: `x`. `table` has 256 entries.
    LookupTable { table: Vec<u8>, dtype: DType },
    /// `C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]`, every operand addressed through its own
    /// [`MatLayout`] (which also expresses transposes). Inputs: `A`, `B`; output `C`.
    /// `batch` is the output batch shape (row-major over the batch axes); `out_shape` is the
    /// output tensor's shape in the graph, which `c` addresses into.
    MatMul {
        dtype: DType,
        out_shape: Vec<usize>,
        batch: Vec<usize>,
        m: usize,
        k: usize,
        n: usize,
        a: MatLayout,
        b: MatLayout,
        c: MatLayout,
    },
    /// Grouped, strided, dilated, padded convolution. Inputs: `x`, `weights` (`O, I/group,
    /// kernel...`), then `bias` when `has_bias` (`O` values, or a scalar added everywhere).
    Conv {
        dtype: DType,
        window: Window,
        in_channels: usize,
        out_channels: usize,
        group: usize,
        has_bias: bool,
    },
    /// Transposed convolution. Inputs: `x`, `weights` (`O, I/group, kernel...`: tract's
    /// `Deconv` kernel, which tract's ONNX importer regroups from ONNX's `I, O/group, kernel...`),
    /// then `bias` when `has_bias`. `window.input` is the (small) input, `window.output` the (large)
    /// output; `adjustments` are ONNX `output_padding`.
    ConvTranspose {
        dtype: DType,
        window: Window,
        in_channels: usize,
        out_channels: usize,
        group: usize,
        adjustments: Vec<usize>,
        has_bias: bool,
    },
    /// Max pooling; padded taps are ignored. Inputs: `x`.
    MaxPool {
        dtype: DType,
        window: Window,
        channels: usize,
    },
    /// Sum pooling; with `normalize` it averages, dividing by the window size including padding
    /// when `count_include_pad`, by the number of real taps otherwise. Inputs: `x`.
    SumPool {
        dtype: DType,
        window: Window,
        channels: usize,
        normalize: bool,
        count_include_pad: bool,
    },
    /// Reduction of `input_shape` over `axes` (sorted); reduced axes stay, with size 1.
    Reduce {
        op: ReduceOp,
        dtype: DType,
        input_shape: Vec<usize>,
        axes: Vec<usize>,
    },
    /// (Log-)softmax over `axes` of `shape`. Inputs: `x`.
    Softmax {
        dtype: DType,
        shape: Vec<usize>,
        axes: Vec<usize>,
        log: bool,
    },
    /// `x / sqrt(mean(x², axis) + eps)` along `axis` of `shape`. Inputs: `x`.
    RmsNorm {
        dtype: DType,
        shape: Vec<usize>,
        axis: usize,
        eps: f32,
    },
    /// Local response normalization across channels (axis 1) of an `N, C, ...` tensor.
    Lrn {
        dtype: DType,
        shape: Vec<usize>,
        alpha: f32,
        beta: f32,
        bias: f32,
        size: usize,
    },
    /// Copies `input_shape` permuted: output axis `i` is input axis `perm[i]`.
    Transpose {
        dtype: DType,
        input_shape: Vec<usize>,
        perm: Vec<usize>,
    },
    /// Keeps `start, start + step, ...` (below `end`) along `axis`.
    Slice {
        dtype: DType,
        input_shape: Vec<usize>,
        axis: usize,
        start: usize,
        end: usize,
        step: usize,
    },
    /// Joins its inputs (shapes in `input_shapes`) along `axis`.
    Concat {
        dtype: DType,
        axis: usize,
        input_shapes: Vec<Vec<usize>>,
    },
    /// `out[.., i, ..] = data[.., indices[i], ..]` along `axis`; negative indices count from
    /// the end. Inputs: `data`, `indices`. The output shape is `data[..axis] ++ indices ++
    /// data[axis+1..]`.
    Gather {
        dtype: DType,
        data_shape: Vec<usize>,
        indices_shape: Vec<usize>,
        index_dtype: DType,
        axis: usize,
    },
    /// ONNX `GatherND`: each row `p` of `indices` (every axis but the last) holds `k` (its last
    /// dim) coordinates into data axes `batch_dims..batch_dims + k`, and `out[p, t]` is the data
    /// element there, `t` running over the data axes after them; the first `batch_dims` axes of
    /// `p` are shared with the data. Inputs: `data`, `indices`. The output's shape is
    /// `indices_shape[..last] ++ data_shape[batch_dims + k..]`.
    GatherNd {
        dtype: DType,
        data_shape: Vec<usize>,
        indices_shape: Vec<usize>,
        index_dtype: DType,
        batch_dims: usize,
    },
    /// `out[c] = data[c with c[axis] = indices[c]]` for every coordinate `c` of `indices`
    /// (ONNX `GatherElements`); negative indices count from the end. Inputs: `data`, `indices`
    /// (same rank; off `axis`, `indices_shape` is at most `data_shape`). The output has
    /// `indices_shape`.
    GatherElements {
        dtype: DType,
        data_shape: Vec<usize>,
        indices_shape: Vec<usize>,
        index_dtype: DType,
        axis: usize,
    },
    /// `out = data`, then for every coordinate `c` of `updates` in row-major order,
    /// `out[c with c[axis] = indices[c]] = reduction(that, updates[c])` (ONNX
    /// `ScatterElements`); negative indices count from the end. Inputs: `data`, `indices`,
    /// `updates` (`indices` and `updates` of `indices_shape`, same rank as `data`, at most
    /// `data_shape` off `axis`). The output has `data_shape`.
    ScatterElements {
        dtype: DType,
        data_shape: Vec<usize>,
        indices_shape: Vec<usize>,
        index_dtype: DType,
        axis: usize,
        reduction: ScatterReduction,
    },
    /// ONNX `ScatterND`: `out` is `data`, then each row `r` of `indices` (every axis but the
    /// last) addresses, with its `k` coordinates, the slice of the first `k` data axes that
    /// `updates[r]` is combined into (`reduction`), rows in order. Inputs: `data`, `indices`,
    /// `updates` (shape `indices_shape[..last] ++ data_shape[k..]`). The output has `data_shape`.
    ScatterNd {
        dtype: DType,
        data_shape: Vec<usize>,
        indices_shape: Vec<usize>,
        index_dtype: DType,
        reduction: ScatterReduction,
    },
    /// Keeps the upper (`upper`) or lower triangle of the matrices in the last two axes of
    /// `shape`, zeroing the rest: with `r, c` the row and column, the upper triangle is
    /// `c - r >= k`, the lower one `c - r <= k`. Inputs: `x`, `k` (an integer scalar; ONNX
    /// `Trilu`'s diagonal offset).
    Trilu {
        dtype: DType,
        shape: Vec<usize>,
        upper: bool,
    },
    /// `out[.., d, ..] = (indices[..] == d) ? on : off`, the new axis of `depth` inserted at
    /// `axis` of `indices_shape` (ONNX `OneHot`). Inputs: `indices` (integers, or floats
    /// truncated toward zero); a negative index counts from the end, one outside `-depth..depth`
    /// gives a row of `off`. `on` and `off` are cast to `dtype` (Rust's `as`).
    OneHot {
        dtype: DType,
        indices_shape: Vec<usize>,
        index_dtype: DType,
        axis: usize,
        depth: usize,
        off: f64,
        on: f64,
    },
    /// Pads `input_shape` with `pads` (`before, after` per axis).
    Pad {
        dtype: DType,
        input_shape: Vec<usize>,
        pads: Vec<(usize, usize)>,
        mode: PadMode,
    },
    /// Broadcasts `input_shape` (padded to the output rank) to `output_shape`.
    Broadcast {
        dtype: DType,
        input_shape: Vec<usize>,
        output_shape: Vec<usize>,
    },
    /// Nearest upsampling by an integer factor per axis: `out[i] = in[i / scale]`.
    Upsample {
        dtype: DType,
        input_shape: Vec<usize>,
        scales: Vec<usize>,
    },
    /// The input repeated `multipliers[a]` times along each axis `a` (ONNX `Tile`):
    /// `out[c] = in[c mod input_shape]`.
    Tile {
        dtype: DType,
        input_shape: Vec<usize>,
        multipliers: Vec<usize>,
    },
    /// Resampling along one axis (ONNX `Resize`: one step per resized axis, nearest, linear or
    /// cubic, with or without antialiasing). Output position `x` along `axis` is
    /// `bias[x] + Σ_k weights[x·window + k] · input[…, indices[x·window + k], …]` (taps of weight
    /// 0 not read); the axis has `bias.len()` positions out. The tables come from tract's own
    /// plan of the axis; `bias` holds the extrapolation value where a position falls outside
    /// the input (`tf_crop_and_resize`). f32. Input: `x`.
    Resample {
        input_shape: Vec<usize>,
        axis: usize,
        window: usize,
        indices: Vec<u32>,
        weights: Vec<f32>,
        bias: Vec<f32>,
    },
    /// The discrete Fourier transform along `axis` of complex values stored as `[re, im]` pairs
    /// on the last axis (tract's `Fft`, from ONNX `DFT`): `y[k] = Σ_n x[n]·e^(∓2πi·kn/len)`,
    /// `+` when `inverse` (unnormalized, as tract's). f32. Input: `x`; the output has its shape.
    Dft {
        input_shape: Vec<usize>,
        axis: usize,
        inverse: bool,
    },
    /// ONNX `GridSample`: `x` (`N, C, D1..Dk`, k = 2 or 3) sampled at the normalized coordinates
    /// of `grid` (`N, O1..Ok, k`, last axis in reverse spatial order: x then y then z), as
    /// tract's op does. f32. Inputs: `x`, `grid`. Output: `N, C, O1..Ok`.
    GridSample {
        input_shape: Vec<usize>,
        grid_shape: Vec<usize>,
        mode: GridSampleMode,
        padding: GridPadding,
        align_corners: bool,
    },
    /// The `k` largest (or smallest) elements along `axis`, in order, and their indices (ONNX
    /// `TopK` with a known `k`): equal values keep their order along the axis. Input: `x`.
    /// Outputs: values (`dtype`) and indices (i64), shaped like `x` with `k` along `axis`.
    TopK {
        dtype: DType,
        input_shape: Vec<usize>,
        axis: usize,
        k: usize,
        largest: bool,
    },
    /// ONNX `NonZero` into a buffer sized for the largest result (the first stage of a staged
    /// plan, [`crate::lower::stages`]). Input: `x`. Outputs: the coordinates of the `count`
    /// non-zero elements, row-major order, laid out as `[rank, count]` in the first
    /// `rank · count` entries of an i64 `[rank, x.len()]` (the rest unspecified), and `count`
    /// (an i64 scalar).
    NonZero {
        dtype: DType,
        input_shape: Vec<usize>,
    },
    /// ONNX `NonMaxSuppression` as tract computes it (a `max_output_boxes_per_class` of 0
    /// selects without limit), into a buffer sized for the largest result (the first stage of a
    /// staged plan). Per batch and class, boxes scoring above the threshold are taken in
    /// descending score order (equal scores by index) unless their IoU with one already taken
    /// exceeds the IoU threshold. Inputs: `boxes` `[batches, boxes, 4]`, `scores` `[batches,
    /// classes, boxes]`, and `arguments` (f32 `[3]`: `max_output_boxes_per_class`,
    /// `iou_threshold`, `score_threshold`, the last read only with `has_score_threshold`).
    /// Outputs: the selected `(batch, class, box)` rows first in an i64
    /// `[batches · classes · boxes, 3]` (the rest unspecified), their count (an i64 scalar), and
    /// a work buffer of `max(boxes, 1)` u32 (left zeroed).
    NonMaxSuppression {
        dtype: DType,
        batches: usize,
        classes: usize,
        boxes: usize,
        center_point_box: bool,
        has_score_threshold: bool,
    },
    /// The tail of an LSTM cell. Inputs: gate pre-activations `[rows, 4*hidden]` (order i, o,
    /// f, c) and the previous cell state `[rows, hidden]`. Outputs: `h`, `c`, each like the state.
    LstmEpilogue { dtype: DType, hidden: usize },
    /// A node that was not lowered: only a host fallback that runs tract's op can execute it.
    /// Backends never claim to support it.
    Opaque { tract_op: String },
}

impl KernelOp {
    /// A short name for reports and kernel tables (`"MatMul"`, `"Binary.Add"`...).
    pub fn name(&self) -> String {
        match self {
            KernelOp::Unary { op, .. } => format!("Unary.{}", variant_name(op)),
            KernelOp::Binary { op, .. } => format!("Binary.{op:?}"),
            KernelOp::Reduce { op, .. } => format!("Reduce.{}", variant_name(op)),
            KernelOp::Opaque { tract_op } => tract_op.clone(),
            other => variant_name(other),
        }
    }

    /// The variant's name alone (`"Unary"`, `"MatMul"`...): the key a backend's kernel table uses.
    pub fn kind(&self) -> String {
        variant_name(self)
    }
}

fn variant_name(value: &impl std::fmt::Debug) -> String {
    let debug = format!("{value:?}");
    debug
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let op = KernelOp::Unary {
            op: UnaryOp::LeakyRelu { alpha: 0.1 },
            dtype: DType::F32,
            out_dtype: DType::F32,
        };
        assert_eq!(op.name(), "Unary.LeakyRelu");
        assert_eq!(op.kind(), "Unary");
        let op = KernelOp::Cast {
            from: DType::I64,
            to: DType::F32,
        };
        assert_eq!(op.name(), "Cast");
        assert!(BinaryOp::Ge.is_comparison());
        assert!(!BinaryOp::Add.is_comparison());
    }
}
