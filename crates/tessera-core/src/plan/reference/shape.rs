//! Data movement. Each kernel computes, for every output element, the flat index it copies
//! from, then [`take`]s those elements (any dtype).

use super::{
    Arg, Real, broadcast_map, by_dtype, fail, from_ints, ints, map_indices, strides, take,
};
use crate::plan::shapes::NdIndexing;
use crate::plan::{PadMode, ScatterReduction};
use crate::{DType, Element, Result, TensorData};
use half::f16;

pub(super) fn transpose(x: Arg, perm: &[usize]) -> Result<TensorData> {
    let s = strides(x.shape);
    let shape = perm
        .iter()
        .map(|&p| x.shape.get(p).copied())
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| fail(format!("bad permutation {perm:?}")))?;
    let steps: Vec<usize> = perm.iter().map(|&p| s[p]).collect();
    take(x.data, &map_indices(&shape, &steps, 0))
}

pub(super) fn slice(
    x: Arg,
    axis: usize,
    start: usize,
    step: usize,
    out_shape: &[usize],
) -> Result<TensorData> {
    let s = strides(x.shape);
    if axis >= s.len() || out_shape.len() != s.len() {
        return Err(fail("axis out of range"));
    }
    let mut steps = s.clone();
    steps[axis] *= step;
    take(x.data, &map_indices(out_shape, &steps, start * s[axis]))
}

pub(super) fn concat(args: &[Arg], axis: usize, out_shape: &[usize]) -> Result<TensorData> {
    let Some(first) = args.first() else {
        return Err(fail("Concat of nothing"));
    };
    if axis >= out_shape.len() {
        return Err(fail("axis out of range"));
    }
    let outer: usize = out_shape[..axis].iter().product();
    by_dtype!(first.dtype(), T => {
        let parts = args
            .iter()
            .map(|a| <T as Element>::slice(a.data))
            .collect::<Option<Vec<&[T]>>>()
            .ok_or_else(|| fail("inputs have different dtypes"))?;
        // Each input contributes, per outer index, one contiguous chunk.
        let chunks: Vec<usize> = args.iter().map(|a| a.shape[axis..].iter().product()).collect();
        let mut out = Vec::with_capacity(out_shape.iter().product());
        for o in 0..outer {
            for (part, &chunk) in parts.iter().zip(&chunks) {
                out.extend_from_slice(&part[o * chunk..(o + 1) * chunk]);
            }
        }
        Ok(<T as Element>::wrap(out))
    })
}

/// An index along an axis of `dim`: negative ones count from the end; out of range is an error.
fn resolve(i: i128, dim: usize) -> Result<usize> {
    let j = if i < 0 { i + dim as i128 } else { i };
    usize::try_from(j)
        .ok()
        .filter(|&j| j < dim)
        .ok_or_else(|| fail(format!("index {i} out of range for an axis of {dim}")))
}

/// Every index of an integer tensor, resolved along an axis of `dim`.
fn resolve_indices(indices: Arg, dim: usize) -> Result<Vec<usize>> {
    ints(indices.data)
        .ok_or_else(|| fail("indices must be integers"))?
        .into_iter()
        .map(|i| resolve(i, dim))
        .collect()
}

/// For every coordinate `c` of `indices` (row-major), the flat index in `data` of `c` with
/// `c[axis]` replaced by the (resolved) index found there: where GatherElements reads and
/// ScatterElements writes.
fn element_targets(data_shape: &[usize], indices: Arg, axis: usize) -> Result<Vec<usize>> {
    let Some(&dim) = data_shape.get(axis) else {
        return Err(fail("axis out of range"));
    };
    if indices.shape.len() != data_shape.len()
        || indices
            .shape
            .iter()
            .zip(data_shape)
            .enumerate()
            .any(|(d, (&i, &x))| d != axis && i > x)
    {
        return Err(fail(format!(
            "indices {:?} do not fit data {data_shape:?} off axis {axis}",
            indices.shape
        )));
    }
    let s = strides(data_shape);
    let mut steps = s.clone();
    steps[axis] = 0;
    let bases = map_indices(indices.shape, &steps, 0);
    let idx = resolve_indices(indices, dim)?;
    if idx.len() != bases.len() {
        return Err(fail("indices hold the wrong number of elements"));
    }
    Ok(bases
        .into_iter()
        .zip(idx)
        .map(|(base, j)| base + j * s[axis])
        .collect())
}

pub(super) fn gather_elements(data: Arg, indices: Arg, axis: usize) -> Result<TensorData> {
    take(data.data, &element_targets(data.shape, indices, axis)?)
}

/// Combines `update` into `slot` as a float reduction.
fn reduce_real<T: Real>(slot: &mut T, update: T, reduction: ScatterReduction) {
    match reduction {
        ScatterReduction::None => *slot = update,
        ScatterReduction::Add => *slot += update,
        ScatterReduction::Mul => *slot = *slot * update,
        ScatterReduction::Max => {
            if update > *slot {
                *slot = update;
            }
        }
        ScatterReduction::Min => {
            if update < *slot {
                *slot = update;
            }
        }
    }
}

pub(super) fn scatter_elements(
    data: Arg,
    indices: Arg,
    updates: Arg,
    axis: usize,
    reduction: ScatterReduction,
) -> Result<TensorData> {
    let targets = element_targets(data.shape, indices, axis)?;
    scatter(data, updates, &targets, reduction)
}

/// ONNX ScatterND: each row of `indices` addresses a slice of the first `k` data axes (negative
/// coordinates counting from the end), into which its row of `updates` is combined, in order.
pub(super) fn scatter_nd(
    data: Arg,
    indices: Arg,
    updates: Arg,
    reduction: ScatterReduction,
) -> Result<TensorData> {
    let targets = nd_elements(data.shape, indices, 0, "ScatterND")?;
    scatter(data, updates, &targets, reduction)
}

/// For each row of GatherND / ScatterND `indices` in order, the flat data indices of the slice it
/// addresses (negative coordinates counting from the end).
fn nd_elements(
    data_shape: &[usize],
    indices: Arg,
    batch_dims: usize,
    op: &str,
) -> Result<Vec<usize>> {
    let nd = NdIndexing::new(data_shape, indices.shape, batch_dims)
        .ok_or_else(|| fail(format!("{op} indices do not fit the data")))?;
    let idx = ints(indices.data).ok_or_else(|| fail("indices must be integers"))?;
    let mut elements = Vec::with_capacity(nd.rows * nd.slice);
    for row in 0..nd.rows {
        let mut at = (row / nd.rows_per_batch.max(1)) * nd.batch_stride;
        let mut stride = nd.batch_stride;
        for j in 0..nd.k {
            let dim = data_shape[batch_dims + j];
            stride /= dim.max(1);
            at += resolve(idx[row * nd.k + j], dim)? * stride;
        }
        elements.extend(at..at + nd.slice);
    }
    Ok(elements)
}

/// `data` with `updates[u]` combined into element `targets[u]`, updates in order.
fn scatter(
    data: Arg,
    updates: Arg,
    targets: &[usize],
    reduction: ScatterReduction,
) -> Result<TensorData> {
    let dtype = data.dtype();
    if updates.dtype() != dtype || updates.data.len() != targets.len() {
        return Err(fail("updates must match the indices and the data's dtype"));
    }
    if reduction == ScatterReduction::None {
        return by_dtype!(dtype, T => {
            let bad = || fail("tensor data does not match its dtype");
            let mut out = <T as Element>::slice(data.data).ok_or_else(bad)?.to_vec();
            let src = <T as Element>::slice(updates.data).ok_or_else(bad)?;
            for (&t, &u) in targets.iter().zip(src) {
                *out.get_mut(t).ok_or_else(|| fail("index out of range"))? = u;
            }
            Ok(<T as Element>::wrap(out))
        });
    }
    fn floats<T: Real>(
        data: &TensorData,
        updates: &TensorData,
        targets: &[usize],
        reduction: ScatterReduction,
        dtype: DType,
    ) -> Result<TensorData> {
        let mut out = T::read(data)?.into_owned();
        let src = T::read(updates)?;
        for (&t, &u) in targets.iter().zip(src.iter()) {
            let slot = out.get_mut(t).ok_or_else(|| fail("index out of range"))?;
            reduce_real(slot, u, reduction);
        }
        T::write(out, dtype)
    }
    match dtype {
        DType::F32 | DType::F16 => {
            floats::<f32>(data.data, updates.data, targets, reduction, dtype)
        }
        DType::F64 => floats::<f64>(data.data, updates.data, targets, reduction, dtype),
        DType::Bool => Err(fail(format!("{reduction:?} reduction of bools"))),
        _ => {
            let (Some(mut out), Some(src)) = (ints(data.data), ints(updates.data)) else {
                return Err(fail("integer data expected"));
            };
            for (&t, &u) in targets.iter().zip(&src) {
                let slot = out.get_mut(t).ok_or_else(|| fail("index out of range"))?;
                // Sums and products wrap like the element type (through 64-bit wrapping
                // arithmetic, narrowed when stored); min and max compare the values.
                *slot = match reduction {
                    ScatterReduction::Add => (*slot as i64).wrapping_add(u as i64) as i128,
                    ScatterReduction::Mul => (*slot as i64).wrapping_mul(u as i64) as i128,
                    ScatterReduction::Max => (*slot).max(u),
                    ScatterReduction::Min => (*slot).min(u),
                    ScatterReduction::None => u,
                };
            }
            from_ints(&out, dtype)
        }
    }
}

pub(super) fn trilu(x: Arg, k: Arg, upper: bool) -> Result<TensorData> {
    let rank = x.shape.len();
    if rank < 2 {
        return Err(fail("Trilu needs at least two axes"));
    }
    let k = match ints(k.data).as_deref() {
        Some([k]) => *k,
        _ => return Err(fail("k must be one integer")),
    };
    let (rows, cols) = (x.shape[rank - 2], x.shape[rank - 1]);
    let len: usize = x.shape.iter().product();
    // Index `len` is the zero appended below.
    let map: Vec<usize> = (0..len)
        .map(|flat| {
            let (c, r) = (flat % cols, (flat / cols) % rows);
            let diagonal = c as i128 - r as i128;
            let keep = if upper { diagonal >= k } else { diagonal <= k };
            if keep { flat } else { len }
        })
        .collect();
    take(&with_fill(x.data, 0.0), &map)
}

pub(super) fn one_hot(
    indices: Arg,
    dtype: DType,
    axis: usize,
    depth: usize,
    off: f64,
    on: f64,
) -> Result<TensorData> {
    if axis > indices.shape.len() {
        return Err(fail("axis out of range"));
    }
    // Floats are truncated toward zero (Rust's `as`, saturating), like tract's cast to i32.
    let idx: Vec<i128> = match ints(indices.data) {
        Some(idx) => idx,
        None => indices
            .data
            .to_f64_vec()
            .into_iter()
            .map(|x| x as i128)
            .collect(),
    };
    let outer: usize = indices.shape[..axis].iter().product();
    let inner: usize = indices.shape[axis..].iter().product();
    // Index 0 of the table is `off`, 1 is `on`; an index outside -depth..depth hits no row.
    let mut map = vec![0; outer * depth * inner];
    for o in 0..outer {
        for k in 0..inner {
            if let Ok(d) = resolve(idx[o * inner + k], depth) {
                map[(o * depth + d) * inner + k] = 1;
            }
        }
    }
    let empty = by_dtype!(dtype, T => <T as Element>::wrap(vec![]));
    take(&with_fill(&with_fill(&empty, off), on), &map)
}

pub(super) fn gather(data: Arg, indices: Arg, axis: usize) -> Result<TensorData> {
    let Some(&dim) = data.shape.get(axis) else {
        return Err(fail("axis out of range"));
    };
    let idx = resolve_indices(indices, dim)?;
    let outer: usize = data.shape[..axis].iter().product();
    let inner: usize = data.shape[axis + 1..].iter().product();
    let mut map = Vec::with_capacity(outer * idx.len() * inner);
    for o in 0..outer {
        for &j in &idx {
            let base = (o * dim + j) * inner;
            map.extend(base..base + inner);
        }
    }
    take(data.data, &map)
}

/// ONNX GatherND: for each row of `indices`, the data slice its `k` coordinates (into axes
/// `batch_dims..`, negative ones counting from the end) address, in the row's batch.
pub(super) fn gather_nd(data: Arg, indices: Arg, batch_dims: usize) -> Result<TensorData> {
    take(
        data.data,
        &nd_elements(data.shape, indices, batch_dims, "GatherND")?,
    )
}

/// The data with one more element, `value` cast to its type, at the end.
fn with_fill(data: &TensorData, value: f64) -> TensorData {
    macro_rules! push {
        ($($variant:ident => $conv:expr),*) => {
            match data {
                $(TensorData::$variant(v) => {
                    let mut v = v.clone();
                    v.push($conv);
                    TensorData::$variant(v)
                })*
            }
        };
    }
    push!(F32 => value as f32, F64 => value, F16 => f16::from_f64(value), I8 => value as i8,
        I16 => value as i16, I32 => value as i32, I64 => value as i64, U8 => value as u8,
        U16 => value as u16, U32 => value as u32, U64 => value as u64, Bool => value != 0.0)
}

pub(super) fn pad(x: Arg, pads: &[(usize, usize)], mode: &PadMode) -> Result<TensorData> {
    if pads.len() != x.shape.len() {
        return Err(fail("one pad pair per axis"));
    }
    let out_shape: Vec<usize> = x
        .shape
        .iter()
        .zip(pads)
        .map(|(d, (b, a))| d + b + a)
        .collect();
    let s = strides(x.shape);
    let len: usize = x.shape.iter().product();
    // Source coordinate along one axis for output coordinate `o`, or `None` for the constant.
    let source = |axis: usize, o: usize| -> Result<Option<usize>> {
        let (dim, before) = (x.shape[axis], pads[axis].0);
        let i = o as i64 - before as i64;
        if (0..dim as i64).contains(&i) {
            return Ok(Some(i as usize));
        }
        match mode {
            PadMode::Constant(_) => Ok(None),
            PadMode::Edge => Ok(Some(i.clamp(0, dim as i64 - 1) as usize)),
            PadMode::Reflect => {
                if dim < 2 {
                    return Ok(Some(0));
                }
                // Mirror without repeating the edge: period 2 (dim - 1).
                let period = 2 * (dim as i64 - 1);
                let m = i.rem_euclid(period);
                Ok(Some(if m < dim as i64 { m } else { period - m } as usize))
            }
        }
    };
    let out_len: usize = out_shape.iter().product();
    let mut map = Vec::with_capacity(out_len);
    for flat in 0..out_len {
        let mut rest = flat;
        let mut coords = vec![0; out_shape.len()];
        for axis in (0..out_shape.len()).rev() {
            coords[axis] = rest % out_shape[axis];
            rest /= out_shape[axis];
        }
        let mut at = Some(0);
        for (axis, &o) in coords.iter().enumerate() {
            at = match (at, source(axis, o)?) {
                (Some(a), Some(i)) => Some(a + i * s[axis]),
                _ => None,
            };
        }
        // Index `len` is the fill value appended below.
        map.push(at.unwrap_or(len));
    }
    let fill = match mode {
        PadMode::Constant(v) => *v,
        _ => 0.0,
    };
    take(&with_fill(x.data, fill), &map)
}

pub(super) fn broadcast(
    x: Arg,
    input_shape: &[usize],
    output_shape: &[usize],
) -> Result<TensorData> {
    take(x.data, &broadcast_map(input_shape, output_shape)?)
}

pub(super) fn resample(
    x: Arg,
    axis: usize,
    window: usize,
    indices: &[u32],
    weights: &[f32],
    bias: &[f32],
) -> Result<TensorData> {
    let TensorData::F32(xs) = x.data else {
        return Err(fail("Resample reads f32"));
    };
    // The same check as the plan's shape rule: an index past the axis is an error, not a panic.
    let (outer, len_in, inner) =
        crate::plan::shapes::resample_geometry(x.shape, axis, window, indices, weights, bias)
            .map_err(fail)?;
    let len_out = bias.len();
    let mut out = Vec::with_capacity(outer * len_out * inner);
    for o in 0..outer {
        for (p, &b) in bias.iter().enumerate() {
            for i in 0..inner {
                let mut acc = b;
                for k in 0..window {
                    let w = weights[p * window + k];
                    if w != 0.0 {
                        acc += w * xs[(o * len_in + indices[p * window + k] as usize) * inner + i];
                    }
                }
                out.push(acc);
            }
        }
    }
    Ok(TensorData::F32(out))
}

pub(super) fn tile(x: Arg, multipliers: &[usize]) -> Result<TensorData> {
    if multipliers.len() != x.shape.len() {
        return Err(fail("one multiplier per axis"));
    }
    repeat(x, multipliers, true)
}

pub(super) fn upsample(x: Arg, scales: &[usize]) -> Result<TensorData> {
    if scales.len() != x.shape.len() || scales.contains(&0) {
        return Err(fail("one non-zero scale per axis"));
    }
    repeat(x, scales, false)
}

/// Each axis `factors[a]` times longer: output coordinate `o` reads `o mod len` when `tiled`,
/// else `o / factor` (nearest upsampling).
fn repeat(x: Arg, factors: &[usize], tiled: bool) -> Result<TensorData> {
    let out_shape: Vec<usize> = x.shape.iter().zip(factors).map(|(d, f)| d * f).collect();
    let s = strides(x.shape);
    let mut map = Vec::with_capacity(out_shape.iter().product());
    for flat in 0..out_shape.iter().product::<usize>() {
        let (mut rest, mut at) = (flat, 0);
        for axis in (0..out_shape.len()).rev() {
            let o = rest % out_shape[axis];
            rest /= out_shape[axis];
            let source = if tiled {
                o % x.shape[axis]
            } else {
                o / factors[axis]
            };
            at += source * s[axis];
        }
        map.push(at);
    }
    take(x.data, &map)
}
