//! Reductions and normalizations: reduce, (log-)softmax, RMS norm, LRN.

use super::{Arg, Real, by_float, fail, from_ints, ints, map_indices, strides};
use crate::plan::ReduceOp;
use crate::{DType, Result, TensorData};

/// For every input element (row-major): the flat index of its group in the reduced shape (the
/// `axes` kept with size 1), and its position inside the group (row-major over the `axes`).
/// Also returns the number of groups and the group size.
fn groups(shape: &[usize], axes: &[usize]) -> Result<(Vec<usize>, Vec<usize>, usize, usize)> {
    if let Some(&bad) = axes.iter().find(|&&a| a >= shape.len()) {
        return Err(fail(format!("axis {bad} out of range for {shape:?}")));
    }
    let kept: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(ax, &d)| if axes.contains(&ax) { 1 } else { d })
        .collect();
    let reduced: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(ax, &d)| if axes.contains(&ax) { d } else { 1 })
        .collect();
    let zero_unit = |dims: &[usize]| -> Vec<usize> {
        strides(dims)
            .iter()
            .zip(dims)
            .map(|(&s, &d)| if d == 1 { 0 } else { s })
            .collect()
    };
    let group = map_indices(shape, &zero_unit(&kept), 0);
    let inner = map_indices(shape, &zero_unit(&reduced), 0);
    Ok((
        group,
        inner,
        kept.iter().product(),
        reduced.iter().product(),
    ))
}

pub(super) fn reduce(op: ReduceOp, x: Arg, axes: &[usize]) -> Result<TensorData> {
    let (group, inner, count, size) = groups(x.shape, axes)?;
    let dtype = x.dtype();
    if let ReduceOp::ArgMax { last } | ReduceOp::ArgMin { last } = op {
        let max = matches!(op, ReduceOp::ArgMax { .. });
        // Compare as f64 (exact for every integer below 2^53 and every float).
        let values = x.data.to_f64_vec();
        let mut best: Vec<Option<(f64, usize)>> = vec![None; count];
        for ((&v, &g), &i) in values.iter().zip(&group).zip(&inner) {
            let better = match best[g] {
                None => true,
                Some((b, _)) => {
                    let (wins, ties) = if max {
                        (v > b, v == b)
                    } else {
                        (v < b, v == b)
                    };
                    wins || (last && ties) || (v.is_nan() && !b.is_nan())
                }
            };
            if better {
                best[g] = Some((v, i));
            }
        }
        return Ok(TensorData::I64(
            best.iter()
                .map(|b| b.map_or(0, |(_, i)| i as i64))
                .collect(),
        ));
    }
    if dtype.is_float() {
        return by_float!(dtype, "Reduce", T => {
            let xs = T::read(x.data)?;
            let init = match op {
                ReduceOp::Prod => T::ONE,
                ReduceOp::Max => T::from_f64(f64::NEG_INFINITY),
                ReduceOp::Min => T::from_f64(f64::INFINITY),
                _ => T::ZERO,
            };
            let mut acc = vec![init; count];
            for (&v, &g) in xs.iter().zip(&group) {
                let a = acc[g];
                acc[g] = match op {
                    ReduceOp::Sum => a + v,
                    ReduceOp::Prod => a * v,
                    ReduceOp::Max => if v > a || v.is_nan() { v } else { a },
                    ReduceOp::Min => if v < a || v.is_nan() { v } else { a },
                    ReduceOp::MeanOfSquares => a + v * v,
                    other => return Err(fail(format!("{other:?} on {dtype}"))),
                };
            }
            if op == ReduceOp::MeanOfSquares {
                let n = T::from_f64(size as f64);
                acc.iter_mut().for_each(|a| *a /= n);
            }
            T::write(acc, dtype)
        });
    }
    let xs = ints(x.data).ok_or_else(|| fail(format!("Reduce on {dtype}")))?;
    let init = match op {
        ReduceOp::Prod | ReduceOp::All => 1,
        ReduceOp::Max => i128::MIN,
        ReduceOp::Min => i128::MAX,
        _ => 0,
    };
    let mut acc = vec![init; count];
    for (&v, &g) in xs.iter().zip(&group) {
        let a = acc[g];
        acc[g] = match op {
            ReduceOp::Sum => a.wrapping_add(v),
            ReduceOp::Prod => a.wrapping_mul(v),
            ReduceOp::Max => a.max(v),
            ReduceOp::Min => a.min(v),
            ReduceOp::All => i128::from(a != 0 && v != 0),
            ReduceOp::Any => i128::from(a != 0 || v != 0),
            other => return Err(fail(format!("{other:?} on {dtype}"))),
        };
    }
    if matches!(op, ReduceOp::All | ReduceOp::Any) != (dtype == DType::Bool) {
        return Err(fail(format!("{op:?} on {dtype}")));
    }
    from_ints(&acc, dtype)
}

pub(super) fn softmax(x: Arg, axes: &[usize], log: bool) -> Result<TensorData> {
    let (group, _, count, _) = groups(x.shape, axes)?;
    by_float!(x.dtype(), "Softmax", T => {
        let xs = T::read(x.data)?;
        let mut max = vec![T::from_f64(f64::NEG_INFINITY); count];
        for (&v, &g) in xs.iter().zip(&group) {
            if v > max[g] {
                max[g] = v;
            }
        }
        let mut sum = vec![T::ZERO; count];
        for (&v, &g) in xs.iter().zip(&group) {
            sum[g] += (v - max[g]).exp();
        }
        let out: Vec<T> = xs
            .iter()
            .zip(&group)
            .map(|(&v, &g)| {
                if log {
                    v - max[g] - sum[g].map64(f64::ln)
                } else {
                    (v - max[g]).exp() / sum[g]
                }
            })
            .collect();
        T::write(out, x.dtype())
    })
}

pub(super) fn rms_norm(x: Arg, axis: usize, eps: f32) -> Result<TensorData> {
    let (group, _, count, size) = groups(x.shape, &[axis])?;
    by_float!(x.dtype(), "RmsNorm", T => {
        let xs = T::read(x.data)?;
        let mut squares = vec![T::ZERO; count];
        for (&v, &g) in xs.iter().zip(&group) {
            squares[g] += v * v;
        }
        let n = T::from_f64(size as f64);
        let eps = T::from_f64(eps as f64);
        let scale: Vec<T> = squares.iter().map(|&s| (s / n + eps).map64(|v| 1.0 / v.sqrt())).collect();
        let out: Vec<T> = xs.iter().zip(&group).map(|(&v, &g)| v * scale[g]).collect();
        T::write(out, x.dtype())
    })
}

/// `x / (bias + alpha / size * sum of x² over the channels c - (size-1)/2 ..= c +
/// ceil((size-1)/2))^beta`, channels on axis 1.
pub(super) fn lrn(x: Arg, alpha: f32, beta: f32, bias: f32, size: usize) -> Result<TensorData> {
    if x.shape.len() < 2 || size == 0 {
        return Err(fail(format!("LRN of {:?} with size {size}", x.shape)));
    }
    let channels = x.shape[1];
    let inner: usize = x.shape[2..].iter().product();
    let outer = x.shape[0];
    by_float!(x.dtype(), "Lrn", T => {
        let xs = T::read(x.data)?;
        let mut out = vec![T::ZERO; xs.len()];
        for n in 0..outer {
            for c in 0..channels {
                let lo = c.saturating_sub((size - 1) / 2);
                let hi = (c + (size - 1).div_ceil(2)).min(channels - 1);
                for i in 0..inner {
                    let at = |ch: usize| xs[(n * channels + ch) * inner + i];
                    let mut squares = T::ZERO;
                    for ch in lo..=hi {
                        squares += at(ch) * at(ch);
                    }
                    let base = bias as f64 + alpha as f64 / size as f64 * squares.to_f64();
                    out[(n * channels + c) * inner + i] = T::from_f64(at(c).to_f64() / base.powf(beta as f64));
                }
            }
        }
        T::write(out, x.dtype())
    })
}

/// The `k` largest (or smallest) elements along `axis` and their indices, equal values in their
/// order along the axis (a stable sort, as tract's).
pub(super) fn top_k(x: Arg, axis: usize, k: usize, largest: bool) -> Result<Vec<TensorData>> {
    let Some(&len) = x.shape.get(axis) else {
        return Err(fail("axis out of range"));
    };
    if k > len {
        return Err(fail("k is larger than the axis"));
    }
    // Integers compare exactly; floats as f64.
    let exact = ints(x.data).filter(|_| !x.dtype().is_float());
    let keys: Vec<f64> = if exact.is_some() {
        vec![]
    } else {
        x.data.to_f64_vec()
    };
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let mut map = vec![0; outer * k * inner];
    let mut indices = vec![0i64; outer * k * inner];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * len + j) * inner + i;
            let mut order: Vec<usize> = (0..len).collect();
            order.sort_by(|&a, &b| {
                let ord = match &exact {
                    Some(v) => v[at(a)].cmp(&v[at(b)]),
                    None => keys[at(a)]
                        .partial_cmp(&keys[at(b)])
                        .unwrap_or(std::cmp::Ordering::Less),
                };
                if largest { ord.reverse() } else { ord }
            });
            for (rank, &j) in order.iter().take(k).enumerate() {
                let out = (o * k + rank) * inner + i;
                map[out] = at(j);
                indices[out] = j as i64;
            }
        }
    }
    Ok(vec![super::take(x.data, &map)?, TensorData::I64(indices)])
}
