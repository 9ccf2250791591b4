//! Data movement kernels: Transpose, Slice, Concat, Gather, Pad, Broadcast, Upsample, Tile, the
//! samplers Resample (Resize's weighted taps along one axis) and GridSample (`transpose`,
//! `slice`, `concat`, `gather`, `pad`, `broadcast`, `upsample` (Tile too), `resample`,
//! `grid_sample`), and the indexing ops GatherElements, GatherNd, ScatterElements, ScatterNd, Trilu,
//! OneHot (`gather_elements`, `gather_nd`, `scatter_elements`, `scatter_nd`, `trilu`, `onehot`).
//!
//! A word is a word: these kernels copy 32-bit words without looking at them, so every dtype
//! shares one `u32` pipeline per shader. Only Pad's and OneHot's constants depend on the dtype;
//! they are passed as the dtype's word bits. ScatterElements with a reduction computes in the
//! dtype's word, one pipeline per word and reduction.

use super::{Dispatch, Grid, Kernel, Operand, StepIo, params, shader, strides, word};
use crate::repr;
use tessera_core::plan::shapes::{
    GRID_SAMPLE_SHAPES, NdIndexing, grid_sample_axes, resample_geometry,
};
use tessera_core::plan::{GridPadding, GridSampleMode, KernelOp, PadMode, ScatterReduction};
use tessera_core::{DType, Error, Result};

pub(super) fn encode(op: &KernelOp, _io: &StepIo) -> Result<Kernel> {
    match op {
        KernelOp::Transpose {
            dtype,
            input_shape,
            perm,
        } => transpose(*dtype, input_shape, perm),
        KernelOp::Slice {
            dtype,
            input_shape,
            axis,
            start,
            end,
            step,
        } => slice(*dtype, input_shape, *axis, *start, *end, *step),
        KernelOp::Concat {
            dtype,
            axis,
            input_shapes,
        } => concat(*dtype, *axis, input_shapes),
        KernelOp::Gather {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            axis,
        } => gather(*dtype, data_shape, indices_shape, *index_dtype, *axis),
        KernelOp::Pad {
            dtype,
            input_shape,
            pads,
            mode,
        } => pad(*dtype, input_shape, pads, mode),
        KernelOp::Broadcast {
            dtype,
            input_shape,
            output_shape,
        } => broadcast(*dtype, input_shape, output_shape),
        KernelOp::Upsample {
            dtype,
            input_shape,
            scales,
        } => upsample(*dtype, input_shape, scales),
        KernelOp::Tile {
            dtype,
            input_shape,
            multipliers,
        } => tile(*dtype, input_shape, multipliers),
        KernelOp::Resample {
            input_shape,
            axis,
            window,
            indices,
            weights,
            bias,
        } => resample(input_shape, *axis, *window, indices, weights, bias),
        KernelOp::GridSample {
            input_shape,
            grid_shape,
            mode,
            padding,
            align_corners,
        } => grid_sample(input_shape, grid_shape, *mode, *padding, *align_corners),
        KernelOp::GatherElements {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            axis,
        } => gather_elements(*dtype, data_shape, indices_shape, *index_dtype, *axis),
        KernelOp::ScatterNd {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            reduction,
        } => scatter_nd(
            op,
            *dtype,
            data_shape,
            indices_shape,
            *index_dtype,
            *reduction,
        ),
        KernelOp::GatherNd {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            batch_dims,
        } => gather_nd(
            op,
            *dtype,
            data_shape,
            indices_shape,
            *index_dtype,
            *batch_dims,
        ),
        KernelOp::ScatterElements {
            dtype,
            data_shape,
            indices_shape,
            index_dtype,
            axis,
            reduction,
        } => scatter_elements(
            *dtype,
            data_shape,
            indices_shape,
            *index_dtype,
            *axis,
            *reduction,
        ),
        KernelOp::Trilu {
            dtype,
            shape,
            upper,
        } => trilu(*dtype, shape, *upper),
        KernelOp::OneHot {
            dtype,
            indices_shape,
            index_dtype,
            axis,
            depth,
            off,
            on,
        } => one_hot(
            *dtype,
            indices_shape,
            *index_dtype,
            *axis,
            *depth,
            (*off, *on),
        ),
        _ => Err(super::no_kernel(op)),
    }
}

fn bad(op: &str, why: impl std::fmt::Display) -> Error {
    Error::Internal(format!("{op}: {why}"))
}

/// A one-dispatch kernel reading input 0 and writing output 0, one thread per output word.
fn copy_kernel(name: &'static str, p: Vec<u32>, n: usize) -> Result<Kernel> {
    Ok(Kernel::single(Dispatch {
        shader: shader(name, vec![]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

fn transpose(dtype: DType, input_shape: &[usize], perm: &[usize]) -> Result<Kernel> {
    word(dtype)?;
    let rank = input_shape.len();
    let mut seen = vec![false; rank];
    for &p in perm {
        match seen.get_mut(p) {
            Some(s) if !*s => *s = true,
            _ => return Err(bad("Transpose", format!("{perm:?} is not a permutation"))),
        }
    }
    if perm.len() != rank {
        return Err(bad("Transpose", format!("{perm:?} is not a permutation")));
    }
    let source = strides(input_shape, false);
    let n: usize = input_shape.iter().product();
    let mut p = params([n, rank])?;
    p.extend(params(perm.iter().map(|&a| input_shape[a]))?);
    p.extend(params(perm.iter().map(|&a| source[a]))?);
    copy_kernel("transpose", p, n)
}

/// The product of `shape[..axis]`, `shape[axis]` and the product of `shape[axis + 1..]`.
fn split_at_axis(op: &str, shape: &[usize], axis: usize) -> Result<(usize, usize, usize)> {
    let dim = *shape
        .get(axis)
        .ok_or_else(|| bad(op, format!("axis {axis} of a rank-{} tensor", shape.len())))?;
    Ok((
        shape[..axis].iter().product(),
        dim,
        shape[axis + 1..].iter().product(),
    ))
}

fn slice(
    dtype: DType,
    input_shape: &[usize],
    axis: usize,
    start: usize,
    end: usize,
    step: usize,
) -> Result<Kernel> {
    word(dtype)?;
    let (outer, dim, inner) = split_at_axis("Slice", input_shape, axis)?;
    if step == 0 || start > end || end > dim {
        return Err(bad(
            "Slice",
            format!("range {start}..{end} step {step} on an axis of {dim}"),
        ));
    }
    let len = (end - start).div_ceil(step);
    let n = outer * len * inner;
    copy_kernel("slice", params([n, inner, len, dim, start, step])?, n)
}

/// One dispatch per input, each copying its slab into the output: a shader binds a few
/// storage buffers at most, so the inputs are never bound together.
fn concat(dtype: DType, axis: usize, input_shapes: &[Vec<usize>]) -> Result<Kernel> {
    word(dtype)?;
    let Some(first) = input_shapes.first() else {
        return Err(bad("Concat", "no inputs"));
    };
    let mut parts = Vec::with_capacity(input_shapes.len());
    for shape in input_shapes {
        if shape.len() != first.len() {
            return Err(bad("Concat", "inputs of different ranks"));
        }
        parts.push(split_at_axis("Concat", shape, axis)?);
    }
    let total: usize = parts.iter().map(|&(_, dim, _)| dim).sum();
    let mut dispatches = Vec::with_capacity(parts.len());
    let mut offset = 0;
    for (k, &(outer, dim, inner)) in parts.iter().enumerate() {
        let n = outer * dim * inner;
        // Per outer index, this input holds `dim * inner` contiguous words of the output's
        // `total * inner`, starting `offset` words in.
        if n > 0 {
            dispatches.push(Dispatch {
                shader: shader("concat", vec![]),
                params: params([n, dim * inner, total * inner, offset])?,
                bindings: vec![Operand::Input(k), Operand::Output(0)],
                grid: Grid::Threads(n),
            });
        }
        offset += dim * inner;
    }
    Ok(Kernel::of(dispatches))
}

/// Whether integer index words are signed (1) or not (0): i64 indices are i32 words on the
/// device; unsigned ones are never negative. Other index types are an error.
fn index_signedness(index_dtype: DType, op: &str) -> Result<usize> {
    match word(index_dtype)? {
        "i32" => Ok(1),
        "u32" if index_dtype != DType::Bool => Ok(0),
        _ => Err(Error::UnsupportedDtype {
            dtype: index_dtype.to_string(),
            context: format!("{op} indices on a GPU"),
        }),
    }
}

/// Out-of-range indices (the reference fails on them) cannot be reported from a shader: their
/// output elements are written as 0 and nothing out of bounds is read.
fn gather(
    dtype: DType,
    data_shape: &[usize],
    indices_shape: &[usize],
    index_dtype: DType,
    axis: usize,
) -> Result<Kernel> {
    word(dtype)?;
    let signed = index_signedness(index_dtype, "Gather")?;
    let (outer, dim, inner) = split_at_axis("Gather", data_shape, axis)?;
    let count: usize = indices_shape.iter().product();
    let n = outer * count * inner;
    Ok(Kernel::single(Dispatch {
        shader: shader("gather", vec![]),
        params: params([n, inner, count, dim, signed])?,
        bindings: vec![Operand::Input(0), Operand::Input(1), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

/// The device word holding `value` cast to `dtype` the way the reference casts Pad's constant
/// (Rust's `as`: floats to integers saturate, NaN gives 0; bool is `!= 0`). i64 saturates to
/// i32 like every i64 constant; f16 is held as f32 and rounds on read-back.
fn fill_word(dtype: DType, value: f64) -> Result<u32> {
    Ok(match dtype {
        DType::F32 | DType::F16 => (value as f32).to_bits(),
        DType::I8 => i32::from(value as i8).cast_unsigned(),
        DType::I16 => i32::from(value as i16).cast_unsigned(),
        DType::I32 | DType::I64 => (value as i32).cast_unsigned(),
        DType::U8 => u32::from(value as u8),
        DType::U16 => u32::from(value as u16),
        DType::U32 | DType::U64 => value as u32,
        DType::Bool => u32::from(value != 0.0),
        DType::F64 => {
            word(dtype)?;
            0
        }
    })
}

fn pad(
    dtype: DType,
    input_shape: &[usize],
    pads: &[(usize, usize)],
    mode: &PadMode,
) -> Result<Kernel> {
    word(dtype)?;
    let rank = input_shape.len();
    if pads.len() != rank {
        return Err(bad("Pad", "one pad pair per axis"));
    }
    let (mode_code, fill) = match mode {
        PadMode::Constant(value) => (0, fill_word(dtype, *value)?),
        PadMode::Reflect => (1, 0),
        PadMode::Edge => (2, 0),
    };
    let out_shape: Vec<usize> = input_shape
        .iter()
        .zip(pads)
        .map(|(d, (b, a))| d + b + a)
        .collect();
    // Reflect and Edge read the border of an empty axis: nothing to read.
    if mode_code != 0 && input_shape.contains(&0) && out_shape.iter().all(|&d| d > 0) {
        return Err(bad("Pad", "cannot reflect or extend an empty axis"));
    }
    let n: usize = out_shape.iter().product();
    let mut p = params([n, rank, mode_code])?;
    p.push(fill);
    p.extend(params(out_shape.iter().copied())?);
    p.extend(params(input_shape.iter().copied())?);
    p.extend(params(strides(input_shape, false))?);
    p.extend(params(pads.iter().map(|&(before, _)| before))?);
    copy_kernel("pad", p, n)
}

fn broadcast(dtype: DType, input_shape: &[usize], output_shape: &[usize]) -> Result<Kernel> {
    word(dtype)?;
    let rank = output_shape.len();
    if input_shape.len() != rank
        || input_shape
            .iter()
            .zip(output_shape)
            .any(|(&i, &o)| i != o && i != 1)
    {
        return Err(bad(
            "Broadcast",
            format!("{input_shape:?} does not broadcast to {output_shape:?}"),
        ));
    }
    let n: usize = output_shape.iter().product();
    let mut p = params([n, rank])?;
    p.extend(params(output_shape.iter().copied())?);
    p.extend(params(strides(input_shape, true))?);
    copy_kernel("broadcast", p, n)
}

fn upsample(dtype: DType, input_shape: &[usize], scales: &[usize]) -> Result<Kernel> {
    if scales.len() != input_shape.len() || scales.contains(&0) {
        return Err(bad("Upsample", "one non-zero scale per axis"));
    }
    repeat(dtype, input_shape, scales, false)
}

fn tile(dtype: DType, input_shape: &[usize], multipliers: &[usize]) -> Result<Kernel> {
    if multipliers.len() != input_shape.len() {
        return Err(bad("Tile", "one multiplier per axis"));
    }
    repeat(dtype, input_shape, multipliers, true)
}

/// The `upsample` kernel: each axis `factors[a]` times longer, its output coordinates divided by
/// the factor (nearest upsampling) or, when `tiled`, taken modulo the input's extent.
fn repeat(dtype: DType, input_shape: &[usize], factors: &[usize], tiled: bool) -> Result<Kernel> {
    word(dtype)?;
    let out_shape: Vec<usize> = input_shape
        .iter()
        .zip(factors)
        .map(|(d, f)| d * f)
        .collect();
    let n: usize = out_shape.iter().product();
    let mut p = params([n, input_shape.len()])?;
    p.extend(params(out_shape.iter().copied())?);
    p.extend(params(
        if tiled { input_shape } else { factors }.iter().copied(),
    )?);
    p.extend(params(strides(input_shape, false))?);
    Ok(Kernel::single(Dispatch {
        shader: shader("upsample", vec![("TILED", tiled.to_string())]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

fn resample(
    input_shape: &[usize],
    axis: usize,
    window: usize,
    indices: &[u32],
    weights: &[f32],
    bias: &[f32],
) -> Result<Kernel> {
    let (outer, len_in, inner) =
        resample_geometry(input_shape, axis, window, indices, weights, bias)
            .map_err(|why| bad("Resample", why))?;
    let len_out = bias.len();
    let n = outer * len_out * inner;
    let mut p = params([n, len_in, len_out, inner, window])?;
    p.extend_from_slice(indices);
    p.extend(weights.iter().chain(bias).map(|w| w.to_bits()));
    copy_kernel("resample", p, n)
}

fn grid_sample(
    input_shape: &[usize],
    grid_shape: &[usize],
    mode: GridSampleMode,
    padding: GridPadding,
    align_corners: bool,
) -> Result<Kernel> {
    let Some(k) = grid_sample_axes(input_shape, grid_shape, mode) else {
        return Err(bad("GridSample", GRID_SAMPLE_SHAPES));
    };
    let positions: usize = grid_shape[1..=k].iter().product();
    let n = input_shape[0] * input_shape[1] * positions;
    let mode = match mode {
        GridSampleMode::Nearest => 0,
        GridSampleMode::Bilinear => 1,
        GridSampleMode::Bicubic => 2,
    };
    let padding = match padding {
        GridPadding::Zeros => 0,
        GridPadding::Border => 1,
        GridPadding::Reflection => 2,
    };
    let mut p = params([
        n,
        input_shape[1],
        k,
        mode,
        padding,
        align_corners as usize,
        positions,
    ])?;
    p.extend(params(
        (0..3).map(|d| input_shape.get(2 + d).copied().unwrap_or(1)),
    )?);
    Ok(Kernel::single(Dispatch {
        shader: shader("grid_sample", vec![]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Input(1), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

/// Checks GatherElements / ScatterElements shapes: same rank, `axis` in range, the indices no
/// larger than the data off `axis`. Returns the data's extent along `axis`.
fn elementwise_indices(
    op: &str,
    data_shape: &[usize],
    indices_shape: &[usize],
    axis: usize,
) -> Result<usize> {
    let fits = data_shape.len() == indices_shape.len()
        && axis < data_shape.len()
        && indices_shape
            .iter()
            .zip(data_shape)
            .enumerate()
            .all(|(d, (&i, &x))| d == axis || i <= x);
    if !fits {
        return Err(bad(
            op,
            format!("indices {indices_shape:?} do not fit data {data_shape:?} along axis {axis}"),
        ));
    }
    Ok(data_shape[axis])
}

/// Out-of-range indices (the reference fails on them) write 0, like Gather's.
fn gather_elements(
    dtype: DType,
    data_shape: &[usize],
    indices_shape: &[usize],
    index_dtype: DType,
    axis: usize,
) -> Result<Kernel> {
    word(dtype)?;
    let signed = index_signedness(index_dtype, "GatherElements")?;
    let dim = elementwise_indices("GatherElements", data_shape, indices_shape, axis)?;
    let n: usize = indices_shape.iter().product();
    let rank = data_shape.len();
    let mut p = params([n, rank, axis, signed, dim])?;
    p.extend(params(indices_shape.iter().copied())?);
    p.extend(params(strides(data_shape, false))?);
    Ok(Kernel::single(Dispatch {
        shader: shader("gather_elements", vec![]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Input(1), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

/// How ND indices address the data, or an error naming the op.
fn nd_indexing(
    op: &KernelOp,
    data_shape: &[usize],
    indices_shape: &[usize],
    batch_dims: usize,
) -> Result<NdIndexing> {
    NdIndexing::new(data_shape, indices_shape, batch_dims).ok_or_else(|| {
        bad(
            &op.name(),
            format!(
                "indices {indices_shape:?} into data {data_shape:?} with {batch_dims} batch axes"
            ),
        )
    })
}

/// One thread per output element: its row of coordinates, resolved like Gather's, and its
/// offset in the slice they address.
fn gather_nd(
    op: &KernelOp,
    dtype: DType,
    data_shape: &[usize],
    indices_shape: &[usize],
    index_dtype: DType,
    batch_dims: usize,
) -> Result<Kernel> {
    word(dtype)?;
    let signed = index_signedness(index_dtype, "GatherND")?;
    let nd = nd_indexing(op, data_shape, indices_shape, batch_dims)?;
    // One output element per addressed data element.
    let n = nd.rows * nd.slice;
    let axes = batch_dims..batch_dims + nd.k;
    let mut p = params([
        n,
        nd.k,
        nd.slice,
        nd.rows_per_batch.max(1),
        nd.batch_stride,
        signed,
    ])?;
    p.extend(params(data_shape[axes.clone()].iter().copied())?);
    p.extend(params(strides(data_shape, false)[axes].iter().copied())?);
    Ok(Kernel::single(Dispatch {
        shader: shader("gather_nd", vec![]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Input(1), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

/// One thread per output element scans the updates along `axis` that may land on it, in order:
/// repeated indices combine deterministically, in the reference's order. Out-of-range indices
/// (the reference fails on them) land nowhere.
fn scatter_elements(
    dtype: DType,
    data_shape: &[usize],
    indices_shape: &[usize],
    index_dtype: DType,
    axis: usize,
    reduction: ScatterReduction,
) -> Result<Kernel> {
    let w = word(dtype)?;
    let signed = index_signedness(index_dtype, "ScatterElements")?;
    let dim = elementwise_indices("ScatterElements", data_shape, indices_shape, axis)?;
    let defines = scatter_defines("ScatterElements", dtype, w, reduction)?;
    let n: usize = data_shape.iter().product();
    let rank = data_shape.len();
    let mut p = params([n, rank, axis, signed, dim, indices_shape[axis]])?;
    p.extend(params(data_shape.iter().copied())?);
    p.extend(params(indices_shape.iter().copied())?);
    p.extend(params(strides(indices_shape, false))?);
    Ok(Kernel::single(Dispatch {
        shader: shader("scatter_elements", defines),
        params: p,
        bindings: vec![
            Operand::Input(0),
            Operand::Input(1),
            Operand::Input(2),
            Operand::Output(0),
        ],
        grid: Grid::Threads(n),
    }))
}

/// The word, combining expression and narrowing of a scatter with `reduction`.
fn scatter_defines(
    op: &str,
    dtype: DType,
    w: &'static str,
    reduction: ScatterReduction,
) -> Result<Vec<(&'static str, String)>> {
    if reduction != ScatterReduction::None && dtype == DType::Bool {
        return Err(Error::UnsupportedDtype {
            dtype: dtype.to_string(),
            context: format!("{op} with a {reduction:?} reduction"),
        });
    }
    // Without a reduction the words move unchanged: one u32 pipeline for every dtype.
    let (w, combine) = match reduction {
        ScatterReduction::None => ("u32", "b"),
        ScatterReduction::Add => (w, "a + b"),
        ScatterReduction::Mul => (w, "a * b"),
        ScatterReduction::Max => (w, "select(a, b, b > a)"),
        ScatterReduction::Min => (w, "select(a, b, b < a)"),
    };
    let wrap = if reduction == ScatterReduction::None {
        ""
    } else {
        repr::wrap(dtype)
    };
    Ok(vec![
        ("T", w.to_string()),
        ("COMBINE", combine.to_string()),
        ("WRAP", wrap.to_string()),
    ])
}

/// One thread per output element scans the rows of indices in order, combining the updates of
/// those that address its slice: deterministic, as the reference.
fn scatter_nd(
    op: &KernelOp,
    dtype: DType,
    data_shape: &[usize],
    indices_shape: &[usize],
    index_dtype: DType,
    reduction: ScatterReduction,
) -> Result<Kernel> {
    let w = word(dtype)?;
    let signed = index_signedness(index_dtype, "ScatterND")?;
    let defines = scatter_defines("ScatterND", dtype, w, reduction)?;
    let nd = nd_indexing(op, data_shape, indices_shape, 0)?;
    let n: usize = data_shape.iter().product();
    let mut p = params([n, nd.k, nd.slice, nd.rows, signed])?;
    p.extend(params(data_shape[..nd.k].iter().copied())?);
    Ok(Kernel::single(Dispatch {
        shader: shader("scatter_nd", defines),
        params: p,
        bindings: vec![
            Operand::Input(0),
            Operand::Input(1),
            Operand::Input(2),
            Operand::Output(0),
        ],
        grid: Grid::Threads(n),
    }))
}

fn trilu(dtype: DType, shape: &[usize], upper: bool) -> Result<Kernel> {
    word(dtype)?;
    let rank = shape.len();
    if rank < 2 {
        return Err(bad("Trilu", "the input must have at least two axes"));
    }
    let n: usize = shape.iter().product();
    Ok(Kernel::single(Dispatch {
        shader: shader("trilu", vec![]),
        params: params([n, shape[rank - 2], shape[rank - 1], usize::from(upper)])?,
        bindings: vec![Operand::Input(0), Operand::Input(1), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

fn one_hot(
    dtype: DType,
    indices_shape: &[usize],
    index_dtype: DType,
    axis: usize,
    depth: usize,
    (off, on): (f64, f64),
) -> Result<Kernel> {
    if axis > indices_shape.len() {
        return Err(bad(
            "OneHot",
            format!("axis {axis} of rank-{} indices", indices_shape.len()),
        ));
    }
    let kind = match word(index_dtype)? {
        "f32" => 2,
        _ => index_signedness(index_dtype, "OneHot")?,
    };
    let outer: usize = indices_shape[..axis].iter().product();
    let inner: usize = indices_shape[axis..].iter().product();
    let n = outer * depth * inner;
    let mut p = params([n, depth, inner, kind])?;
    p.push(fill_word(dtype, off)?);
    p.push(fill_word(dtype, on)?);
    Ok(Kernel::single(Dispatch {
        shader: shader("onehot", vec![]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}
