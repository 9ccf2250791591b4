//! Shape and dtype rules of every [`KernelOp`]: what a step produces from what it reads.
//!
//! A plan copies its shapes from tract's facts; checking each step against these rules catches
//! a translator that got a parameter wrong before any backend runs it.

use super::kernel::{GridSampleMode, KernelOp, ReduceOp, UnaryOp, Window};
use crate::{DType, Error, Result};

type Shape = Vec<usize>;

/// `(outer, len_in, inner)` of a `Resample` along `axis`: the elements before the axis, its
/// extent and the elements after it; or why the tables do not fit the input.
pub fn resample_geometry(
    input_shape: &[usize],
    axis: usize,
    window: usize,
    indices: &[u32],
    weights: &[f32],
    bias: &[f32],
) -> std::result::Result<(usize, usize, usize), &'static str> {
    let Some(&len_in) = input_shape.get(axis) else {
        return Err("axis past the rank");
    };
    let taps = window.checked_mul(bias.len());
    if taps != Some(indices.len()) || taps != Some(weights.len()) {
        return Err("window × output positions indices and weights");
    }
    if indices.iter().any(|&i| i as usize >= len_in) {
        return Err("an index past the input axis");
    }
    let outer = input_shape[..axis].iter().product();
    let inner = input_shape[axis + 1..].iter().product();
    Ok((outer, len_in, inner))
}

/// What [`dft_geometry`] accepts, for errors.
pub const DFT_SHAPES: &str = "[re, im] pairs on the last axis, the transformed axis before it";

/// `(outer, len, inner)` of a `Dft` along `axis` (`inner` counts the elements after `axis`,
/// the pair included), when the shape has the pairs and the axis is one before them.
pub fn dft_geometry(input_shape: &[usize], axis: usize) -> Option<(usize, usize, usize)> {
    let rank = input_shape.len();
    if rank < 2 || input_shape[rank - 1] != 2 || axis + 1 >= rank {
        return None;
    }
    let outer = input_shape[..axis].iter().product();
    let inner = input_shape[axis + 1..].iter().product();
    Some((outer, input_shape[axis], inner))
}

/// What [`grid_sample_axes`] accepts, for errors.
pub const GRID_SAMPLE_SHAPES: &str =
    "x N, C and 2 or 3 spatial axes (2 for bicubic), grid N, O1..Ok, k";

/// The number of spatial axes of a `GridSample` of `x` at `grid`, when the shapes fit it.
pub fn grid_sample_axes(
    input_shape: &[usize],
    grid_shape: &[usize],
    mode: GridSampleMode,
) -> Option<usize> {
    let k = input_shape.len().checked_sub(2)?;
    let fits = (k == 2 || (k == 3 && mode != GridSampleMode::Bicubic))
        && grid_shape.len() == k + 2
        && grid_shape[0] == input_shape[0]
        && grid_shape[k + 1] == k;
    fits.then_some(k)
}

fn bad(op: &KernelOp, why: impl std::fmt::Display) -> Error {
    Error::Internal(format!("{}: {why}", op.name()))
}

fn arity(
    op: &KernelOp,
    inputs: &[(&[usize], DType)],
    range: std::ops::RangeInclusive<usize>,
) -> Result<()> {
    if range.contains(&inputs.len()) {
        Ok(())
    } else {
        Err(bad(
            op,
            format!("takes {range:?} inputs, got {}", inputs.len()),
        ))
    }
}

fn expect_shape(op: &KernelOp, what: &str, actual: &[usize], declared: &[usize]) -> Result<()> {
    if actual == declared {
        Ok(())
    } else {
        Err(bad(
            op,
            format!("{what} is {actual:?}, the op says {declared:?}"),
        ))
    }
}

/// Pads `shape` with leading 1s to `rank`.
pub fn padded(shape: &[usize], rank: usize) -> Shape {
    let mut out = vec![1; rank.saturating_sub(shape.len())];
    out.extend_from_slice(shape);
    out
}

fn broadcasts(op: &KernelOp, operand: &[usize], out: &[usize]) -> Result<()> {
    if operand.len() == out.len() && operand.iter().zip(out).all(|(&a, &o)| a == o || a == 1) {
        Ok(())
    } else {
        Err(bad(
            op,
            format!("{operand:?} does not broadcast to {out:?}"),
        ))
    }
}

fn window_shape(window: &Window, channels: usize) -> (Shape, Shape) {
    let make = |spatial: &[usize]| {
        let mut shape = if window.batch_axis {
            vec![window.batch]
        } else {
            vec![]
        };
        if window.channels_last {
            shape.extend_from_slice(spatial);
            shape.push(channels);
        } else {
            shape.push(channels);
            shape.extend_from_slice(spatial);
        }
        shape
    };
    (make(&window.input), make(&window.output))
}

/// The output extent of a window along one axis, as a convolution computes it.
pub fn conv_output_dim(
    input: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    before: usize,
    after: usize,
) -> Option<usize> {
    let field = dilation
        .checked_mul(kernel.checked_sub(1)?)?
        .checked_add(1)?;
    let padded = input.checked_add(before)?.checked_add(after)?;
    Some(padded.checked_sub(field)? / stride.max(1) + 1)
}

fn check_window(op: &KernelOp, window: &Window) -> Result<()> {
    let rank = window.input.len();
    let lens = [
        window.output.len(),
        window.kernel.len(),
        window.strides.len(),
        window.dilations.len(),
        window.pads_before.len(),
        window.pads_after.len(),
    ];
    if lens.iter().any(|&l| l != rank) {
        return Err(bad(op, "window fields have different ranks"));
    }
    Ok(())
}

/// How GatherND / ScatterND indices address their data: each row of `indices` (every axis but
/// the last) holds `k` coordinates into data axes `batch_dims..batch_dims + k` and addresses the
/// `slice` elements after them, within its batch (the first `batch_dims` axes, shared).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdIndexing {
    pub k: usize,
    /// Data elements each row addresses (the data axes after the indexed ones).
    pub slice: usize,
    /// Rows of indices, in all.
    pub rows: usize,
    /// Rows of indices in one batch.
    pub rows_per_batch: usize,
    /// Data elements in one batch.
    pub batch_stride: usize,
}

impl NdIndexing {
    /// `None` when the indices do not fit the data.
    pub fn new(data: &[usize], indices: &[usize], batch_dims: usize) -> Option<NdIndexing> {
        let k = indices.last().copied().unwrap_or(0);
        let fits = !indices.is_empty()
            && batch_dims < indices.len()
            && batch_dims + k <= data.len()
            && data[..batch_dims] == indices[..batch_dims];
        if !fits {
            return None;
        }
        let row_axes = &indices[..indices.len() - 1];
        Some(NdIndexing {
            k,
            slice: data[batch_dims + k..].iter().product(),
            rows: row_axes.iter().product(),
            rows_per_batch: row_axes[batch_dims..].iter().product(),
            batch_stride: data[batch_dims..].iter().product(),
        })
    }
}

/// GatherND's output shape (and ScatterND's updates', with no batch axes): `indices` rows of
/// `k` coordinates into data axes `batch_dims..batch_dims + k`, the batch axes shared.
pub fn gather_nd_shape(
    op: &KernelOp,
    data: &[usize],
    indices: &[usize],
    batch_dims: usize,
) -> Result<Vec<usize>> {
    let Some(nd) = NdIndexing::new(data, indices, batch_dims) else {
        return Err(bad(
            op,
            format!("indices {indices:?} into data {data:?} with {batch_dims} batch axes"),
        ));
    };
    let mut shape = indices[..indices.len() - 1].to_vec();
    shape.extend_from_slice(&data[batch_dims + nd.k..]);
    Ok(shape)
}

/// GatherElements / ScatterElements: `indices` has `data`'s rank, `axis` is one of its axes,
/// and off `axis` no index dimension exceeds the data's.
fn check_elementwise_indices(
    op: &KernelOp,
    data: &[usize],
    indices: &[usize],
    axis: usize,
) -> Result<()> {
    if data.len() != indices.len() || axis >= data.len() {
        return Err(bad(
            op,
            format!("indices {indices:?} and data {data:?} along axis {axis}"),
        ));
    }
    for (d, (&i, &x)) in indices.iter().zip(data).enumerate() {
        if d != axis && i > x {
            return Err(bad(
                op,
                format!("indices {indices:?} exceed data {data:?} off axis {axis}"),
            ));
        }
    }
    Ok(())
}

/// Index tensors are integers of the dtype the op says.
fn check_index_dtype(op: &KernelOp, actual: DType, declared: DType) -> Result<()> {
    if actual != declared || actual.is_float() || actual == DType::Bool {
        return Err(bad(
            op,
            format!("indices are {actual}, the op says {declared} (an integer type)"),
        ));
    }
    Ok(())
}

/// The shapes and dtypes `op` produces from `inputs`, or `None` for [`KernelOp::Opaque`].
pub fn output_shapes(
    op: &KernelOp,
    inputs: &[(&[usize], DType)],
) -> Result<Option<Vec<(Shape, DType)>>> {
    let first = |ix: usize| -> Result<(&[usize], DType)> {
        inputs
            .get(ix)
            .copied()
            .ok_or_else(|| bad(op, format!("missing input {ix}")))
    };
    let one = |shape: Shape, dtype: DType| Ok(Some(vec![(shape, dtype)]));
    match op {
        KernelOp::Opaque { .. } => Ok(None),
        KernelOp::Unary {
            op: unary,
            dtype,
            out_dtype,
        } => {
            arity(op, inputs, 1..=1)?;
            let (shape, dt) = first(0)?;
            if dt != *dtype {
                return Err(bad(op, format!("input is {dt}, the op says {dtype}")));
            }
            let expected_out = match unary {
                UnaryOp::IsNan | UnaryOp::IsInf { .. } => DType::Bool,
                _ => *out_dtype,
            };
            one(shape.to_vec(), expected_out)
        }
        KernelOp::Binary {
            op: binary,
            dtype,
            a_shape,
            b_shape,
            out_shape,
        } => {
            arity(op, inputs, 2..=2)?;
            expect_shape(op, "a", &padded(first(0)?.0, out_shape.len()), a_shape)?;
            expect_shape(op, "b", &padded(first(1)?.0, out_shape.len()), b_shape)?;
            broadcasts(op, a_shape, out_shape)?;
            broadcasts(op, b_shape, out_shape)?;
            let dt = if binary.is_comparison() {
                DType::Bool
            } else {
                *dtype
            };
            one(out_shape.clone(), dt)
        }
        KernelOp::Select {
            cond_shape,
            a_shape,
            b_shape,
            out_shape,
        } => {
            arity(op, inputs, 3..=3)?;
            let rank = out_shape.len();
            expect_shape(op, "cond", &padded(first(0)?.0, rank), cond_shape)?;
            expect_shape(op, "a", &padded(first(1)?.0, rank), a_shape)?;
            expect_shape(op, "b", &padded(first(2)?.0, rank), b_shape)?;
            for s in [cond_shape, a_shape, b_shape] {
                broadcasts(op, s, out_shape)?;
            }
            one(out_shape.clone(), first(1)?.1)
        }
        KernelOp::Cast { to, .. } => one(first(0)?.0.to_vec(), *to),
        KernelOp::Quantize { to, .. } => one(first(0)?.0.to_vec(), *to),
        KernelOp::Dequantize { .. } => one(first(0)?.0.to_vec(), DType::F32),
        KernelOp::LookupTable { table, dtype } => {
            if table.len() != 256 {
                return Err(bad(op, "table must have 256 entries"));
            }
            one(first(0)?.0.to_vec(), *dtype)
        }
        KernelOp::MatMul {
            dtype,
            batch,
            m,
            k,
            n,
            a,
            b,
            c,
            out_shape,
        } => {
            arity(op, inputs, 2..=2)?;
            let operands = [
                (a, first(0)?.0, *m, *k, "A"),
                (b, first(1)?.0, *k, *n, "B"),
                (c, out_shape.as_slice(), *m, *n, "C"),
            ];
            for (layout, shape, rows, cols, what) in operands {
                if layout.batch_strides.len() != batch.len() {
                    return Err(bad(op, format!("{what}: one batch stride per batch axis")));
                }
                let len: usize = shape.iter().product();
                if len == 0 || rows == 0 || cols == 0 || batch.contains(&0) {
                    continue;
                }
                let last = layout.offset
                    + batch
                        .iter()
                        .zip(&layout.batch_strides)
                        .map(|(d, s)| (d - 1) * s)
                        .sum::<usize>()
                    + (rows - 1) * layout.row_stride
                    + (cols - 1) * layout.col_stride;
                if last >= len {
                    return Err(bad(
                        op,
                        format!("{what} addresses element {last} of a {shape:?} tensor"),
                    ));
                }
            }
            one(out_shape.clone(), *dtype)
        }
        KernelOp::Conv {
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
        } => {
            arity(op, inputs, 2..=3)?;
            check_window(op, window)?;
            if inputs.len() != 2 + usize::from(*has_bias) || *group == 0 || in_channels % group != 0
            {
                return Err(bad(op, "inconsistent inputs or groups"));
            }
            let (input, _) = window_shape(window, *in_channels);
            expect_shape(op, "input", first(0)?.0, &input)?;
            for axis in 0..window.input.len() {
                let expected = conv_output_dim(
                    window.input[axis],
                    window.kernel[axis],
                    window.strides[axis],
                    window.dilations[axis],
                    window.pads_before[axis],
                    window.pads_after[axis],
                );
                if expected != Some(window.output[axis]) {
                    return Err(bad(
                        op,
                        format!(
                            "spatial axis {axis}: output {} but geometry gives {expected:?}",
                            window.output[axis]
                        ),
                    ));
                }
            }
            let mut weights = vec![*out_channels, in_channels / group];
            weights.extend_from_slice(&window.kernel);
            expect_shape(op, "weights", first(1)?.0, &weights)?;
            let (_, output) = window_shape(window, *out_channels);
            one(output, *dtype)
        }
        KernelOp::ConvTranspose {
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
            ..
        } => {
            arity(op, inputs, 2..=3)?;
            check_window(op, window)?;
            if inputs.len() != 2 + usize::from(*has_bias) || *group == 0 {
                return Err(bad(op, "inconsistent inputs or groups"));
            }
            let (input, _) = window_shape(window, *in_channels);
            expect_shape(op, "input", first(0)?.0, &input)?;
            let mut weights = vec![*out_channels, in_channels / group];
            weights.extend_from_slice(&window.kernel);
            expect_shape(op, "weights", first(1)?.0, &weights)?;
            let (_, output) = window_shape(window, *out_channels);
            one(output, *dtype)
        }
        KernelOp::MaxPool {
            dtype,
            window,
            channels,
        }
        | KernelOp::SumPool {
            dtype,
            window,
            channels,
            ..
        } => {
            arity(op, inputs, 1..=1)?;
            check_window(op, window)?;
            let (input, output) = window_shape(window, *channels);
            expect_shape(op, "input", first(0)?.0, &input)?;
            one(output, *dtype)
        }
        KernelOp::Reduce {
            op: reducer,
            dtype,
            input_shape,
            axes,
        } => {
            arity(op, inputs, 1..=1)?;
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            let mut shape = input_shape.clone();
            for &axis in axes {
                *shape
                    .get_mut(axis)
                    .ok_or_else(|| bad(op, "axis out of range"))? = 1;
            }
            let dt = match reducer {
                ReduceOp::ArgMax { .. } | ReduceOp::ArgMin { .. } => DType::I64,
                _ => *dtype,
            };
            one(shape, dt)
        }
        KernelOp::Softmax { dtype, shape, .. }
        | KernelOp::RmsNorm { dtype, shape, .. }
        | KernelOp::Lrn { dtype, shape, .. } => {
            arity(op, inputs, 1..=1)?;
            expect_shape(op, "input", first(0)?.0, shape)?;
            one(shape.clone(), *dtype)
        }
        KernelOp::Transpose {
            dtype,
            input_shape,
            perm,
        } => {
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            if sorted != (0..input_shape.len()).collect::<Vec<_>>() {
                return Err(bad(op, "not a permutation"));
            }
            one(perm.iter().map(|&p| input_shape[p]).collect(), *dtype)
        }
        KernelOp::Slice {
            dtype,
            input_shape,
            axis,
            start,
            end,
            step,
        } => {
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            let dim = *input_shape
                .get(*axis)
                .ok_or_else(|| bad(op, "axis out of range"))?;
            if *step == 0 || start > end || *end > dim {
                return Err(bad(op, "bad range"));
            }
            let mut shape = input_shape.clone();
            shape[*axis] = (end - start).div_ceil(*step);
            one(shape, *dtype)
        }
        KernelOp::Concat {
            dtype,
            axis,
            input_shapes,
        } => {
            if inputs.len() != input_shapes.len() || input_shapes.is_empty() {
                return Err(bad(op, "input count"));
            }
            for ((shape, _), declared) in inputs.iter().zip(input_shapes) {
                expect_shape(op, "input", shape, declared)?;
            }
            let mut shape = input_shapes[0].clone();
            *shape
                .get_mut(*axis)
                .ok_or_else(|| bad(op, "axis out of range"))? = input_shapes
                .iter()
                .map(|s| s.get(*axis).copied().unwrap_or(0))
                .sum();
            one(shape, *dtype)
        }
        KernelOp::Gather {
            dtype,
            data_shape,
            indices_shape,
            axis,
            ..
        } => {
            arity(op, inputs, 2..=2)?;
            expect_shape(op, "data", first(0)?.0, data_shape)?;
            expect_shape(op, "indices", first(1)?.0, indices_shape)?;
            if *axis >= data_shape.len() {
                return Err(bad(op, "axis out of range"));
            }
            let mut shape = data_shape[..*axis].to_vec();
            shape.extend_from_slice(indices_shape);
            shape.extend_from_slice(&data_shape[axis + 1..]);
            one(shape, *dtype)
        }
        KernelOp::GatherNd {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            batch_dims,
        } => {
            arity(op, inputs, 2..=2)?;
            expect_shape(op, "data", first(0)?.0, data_shape)?;
            expect_shape(op, "indices", first(1)?.0, indices_shape)?;
            check_index_dtype(op, first(1)?.1, *index_dtype)?;
            one(
                gather_nd_shape(op, data_shape, indices_shape, *batch_dims)?,
                *dtype,
            )
        }
        KernelOp::ScatterNd {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            ..
        } => {
            arity(op, inputs, 3..=3)?;
            expect_shape(op, "data", first(0)?.0, data_shape)?;
            expect_shape(op, "indices", first(1)?.0, indices_shape)?;
            check_index_dtype(op, first(1)?.1, *index_dtype)?;
            let updates = gather_nd_shape(op, data_shape, indices_shape, 0)?;
            expect_shape(op, "updates", first(2)?.0, &updates)?;
            one(data_shape.clone(), *dtype)
        }
        KernelOp::GatherElements {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            axis,
        } => {
            arity(op, inputs, 2..=2)?;
            expect_shape(op, "data", first(0)?.0, data_shape)?;
            expect_shape(op, "indices", first(1)?.0, indices_shape)?;
            check_elementwise_indices(op, data_shape, indices_shape, *axis)?;
            check_index_dtype(op, first(1)?.1, *index_dtype)?;
            one(indices_shape.clone(), *dtype)
        }
        KernelOp::ScatterElements {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            axis,
            ..
        } => {
            arity(op, inputs, 3..=3)?;
            expect_shape(op, "data", first(0)?.0, data_shape)?;
            expect_shape(op, "indices", first(1)?.0, indices_shape)?;
            expect_shape(op, "updates", first(2)?.0, indices_shape)?;
            check_elementwise_indices(op, data_shape, indices_shape, *axis)?;
            check_index_dtype(op, first(1)?.1, *index_dtype)?;
            if first(2)?.1 != *dtype {
                return Err(bad(op, "updates must have the data's dtype"));
            }
            one(data_shape.clone(), *dtype)
        }
        KernelOp::Trilu { dtype, shape, .. } => {
            arity(op, inputs, 2..=2)?;
            expect_shape(op, "input", first(0)?.0, shape)?;
            if shape.len() < 2 {
                return Err(bad(op, "the input must have at least two axes"));
            }
            let (k_shape, k_dtype) = first(1)?;
            if k_shape.iter().product::<usize>() != 1
                || k_dtype.is_float()
                || k_dtype == DType::Bool
            {
                return Err(bad(op, "k must be one integer"));
            }
            one(shape.clone(), *dtype)
        }
        KernelOp::OneHot {
            dtype,
            indices_shape,
            index_dtype,
            axis,
            depth,
            ..
        } => {
            arity(op, inputs, 1..=1)?;
            expect_shape(op, "indices", first(0)?.0, indices_shape)?;
            if first(0)?.1 != *index_dtype || *index_dtype == DType::Bool {
                return Err(bad(op, "indices are numbers of the op's index dtype"));
            }
            if *axis > indices_shape.len() {
                return Err(bad(op, "axis out of range"));
            }
            let mut shape = indices_shape.clone();
            shape.insert(*axis, *depth);
            one(shape, *dtype)
        }
        KernelOp::Pad {
            dtype,
            input_shape,
            pads,
            ..
        } => {
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            if pads.len() != input_shape.len() {
                return Err(bad(op, "one pad pair per axis"));
            }
            one(
                input_shape
                    .iter()
                    .zip(pads)
                    .map(|(d, (b, a))| d + b + a)
                    .collect(),
                *dtype,
            )
        }
        KernelOp::Broadcast {
            dtype,
            input_shape,
            output_shape,
        } => {
            expect_shape(
                op,
                "input",
                &padded(first(0)?.0, output_shape.len()),
                input_shape,
            )?;
            broadcasts(op, input_shape, output_shape)?;
            one(output_shape.clone(), *dtype)
        }
        KernelOp::Upsample {
            dtype,
            input_shape,
            scales: factors,
        }
        | KernelOp::Tile {
            dtype,
            input_shape,
            multipliers: factors,
        } => {
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            if factors.len() != input_shape.len() {
                return Err(bad(op, "one factor per axis"));
            }
            one(
                input_shape
                    .iter()
                    .zip(factors)
                    .map(|(d, f)| d * f)
                    .collect(),
                *dtype,
            )
        }
        KernelOp::Dft {
            input_shape, axis, ..
        } => {
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            if dft_geometry(input_shape, *axis).is_none() {
                return Err(bad(op, DFT_SHAPES));
            }
            one(input_shape.clone(), DType::F32)
        }
        KernelOp::GridSample {
            input_shape,
            grid_shape,
            mode,
            ..
        } => {
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            expect_shape(op, "grid", first(1)?.0, grid_shape)?;
            let Some(k) = grid_sample_axes(input_shape, grid_shape, *mode) else {
                return Err(bad(op, GRID_SAMPLE_SHAPES));
            };
            let mut shape = input_shape[..2].to_vec();
            shape.extend_from_slice(&grid_shape[1..=k]);
            one(shape, DType::F32)
        }
        KernelOp::Resample {
            input_shape,
            axis,
            window,
            indices,
            weights,
            bias,
        } => {
            expect_shape(op, "input", first(0)?.0, input_shape)?;
            resample_geometry(input_shape, *axis, *window, indices, weights, bias)
                .map_err(|why| bad(op, why))?;
            let mut shape = input_shape.clone();
            shape[*axis] = bias.len();
            one(shape, DType::F32)
        }
        KernelOp::TopK {
            dtype,
            input_shape,
            axis,
            k,
            ..
        } => {
            arity(op, inputs, 1..=1)?;
            expect_shape(op, "x", first(0)?.0, input_shape)?;
            if input_shape.get(*axis).is_none_or(|&len| *k > len) {
                return Err(bad(
                    op,
                    format!("k = {k} along axis {axis} of {input_shape:?}"),
                ));
            }
            let mut shape = input_shape.clone();
            shape[*axis] = *k;
            Ok(Some(vec![(shape.clone(), *dtype), (shape, DType::I64)]))
        }
        KernelOp::NonZero { dtype, input_shape } => {
            arity(op, inputs, 1..=1)?;
            expect_shape(op, "x", first(0)?.0, input_shape)?;
            if first(0)?.1 != *dtype {
                return Err(bad(
                    op,
                    format!("x is {}, the op says {dtype}", first(0)?.1),
                ));
            }
            let bound: usize = input_shape.iter().product();
            Ok(Some(vec![
                (vec![input_shape.len(), bound], DType::I64),
                (vec![], DType::I64),
            ]))
        }
        KernelOp::NonMaxSuppression {
            dtype,
            batches,
            classes,
            boxes,
            ..
        } => {
            arity(op, inputs, 3..=3)?;
            expect_shape(op, "boxes", first(0)?.0, &[*batches, *boxes, 4])?;
            expect_shape(op, "scores", first(1)?.0, &[*batches, *classes, *boxes])?;
            expect_shape(op, "arguments", first(2)?.0, &[3])?;
            if first(0)?.1 != *dtype || first(1)?.1 != *dtype || first(2)?.1 != DType::F32 {
                return Err(bad(
                    op,
                    format!("boxes and scores must be {dtype}, arguments f32"),
                ));
            }
            Ok(Some(vec![
                (vec![batches * classes * boxes, 3], DType::I64),
                (vec![], DType::I64),
                (vec![(*boxes).max(1)], DType::U32),
            ]))
        }
        KernelOp::LstmEpilogue { dtype, hidden } => {
            arity(op, inputs, 2..=2)?;
            let state = first(1)?.0.to_vec();
            let rows: usize = state.iter().product::<usize>() / hidden.max(&1);
            if first(0)?.0.iter().product::<usize>() != rows * 4 * hidden {
                return Err(bad(op, "pre-activations must hold 4*hidden per state row"));
            }
            Ok(Some(vec![(state.clone(), *dtype), (state, *dtype)]))
        }
    }
}
