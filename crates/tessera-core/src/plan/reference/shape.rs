//! Data movement. Each kernel computes, for every output element, the flat index it copies
//! from, then [`take`]s those elements (any dtype).

use super::{Arg, broadcast_map, by_dtype, fail, ints, map_indices, strides, take};
use crate::plan::PadMode;
use crate::{Element, Result, TensorData};
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

pub(super) fn gather(data: Arg, indices: Arg, axis: usize) -> Result<TensorData> {
    let Some(&dim) = data.shape.get(axis) else {
        return Err(fail("axis out of range"));
    };
    let idx = ints(indices.data).ok_or_else(|| fail("indices must be integers"))?;
    let idx = idx
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + dim as i128 } else { i };
            usize::try_from(j)
                .ok()
                .filter(|&j| j < dim)
                .ok_or_else(|| fail(format!("index {i} out of range for an axis of {dim}")))
        })
        .collect::<Result<Vec<usize>>>()?;
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

pub(super) fn upsample(x: Arg, scales: &[usize]) -> Result<TensorData> {
    if scales.len() != x.shape.len() || scales.contains(&0) {
        return Err(fail("one non-zero scale per axis"));
    }
    let out_shape: Vec<usize> = x.shape.iter().zip(scales).map(|(d, s)| d * s).collect();
    let s = strides(x.shape);
    let mut map = Vec::with_capacity(out_shape.iter().product());
    for flat in 0..out_shape.iter().product::<usize>() {
        let (mut rest, mut at) = (flat, 0);
        for axis in (0..out_shape.len()).rev() {
            let o = rest % out_shape[axis];
            rest /= out_shape[axis];
            at += (o / scales[axis]) * s[axis];
        }
        map.push(at);
    }
    take(x.data, &map)
}
