//! [ONNX `ReduceMax`] and `ReduceMin` (and `GlobalMaxPool`, which tract makes one) of f32 over
//! consecutive axes, replacing tract's `Reduce<Max>` / `Reduce<Min>` in cpu plans. tract reduces
//! each output value through an ndarray slice of its own and builds its vector kernel again for
//! each: magika's global max pool over 512 × 508 values took 0.65 ms per run, 2.5 ns a value.
//! Here the input is `[outer, reduced, inner]`: the `reduced` rows of `inner` values are folded
//! into one output row, vectorized across it, or, when `inner` is 1, each row is folded in lane
//! groups; output rows are the pool's tasks. A NaN in a window makes its result NaN (as numpy's
//! `max`, which the ONNX reference uses).
//!
//! [ONNX `ReduceMax`]: https://onnx.ai/onnx/operators/onnx__ReduceMax.html

use crate::parallel::par_chunks_mut;
use crate::simd::F32_LANES as LANES;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::nn::{Reduce, Reducer};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastReduceExtremum {
    /// Max when true, min otherwise.
    pub max: bool,
    pub outer: usize,
    pub reduced: usize,
    pub inner: usize,
    pub output_shape: TVec<usize>,
}

/// `acc` or `v`, whichever wins (larger for a max, smaller for a min); a NaN always wins and then
/// stays. A select on two comparisons: LLVM vectorizes it.
#[inline(always)]
fn pick<const MAX: bool>(acc: f32, v: f32) -> f32 {
    let wins = if MAX { v > acc } else { v < acc };
    if wins || v.is_nan() { v } else { acc }
}

/// The extremum of a non-empty row. Plain loops: iterator adaptors
/// here may stay out of line, compiled without the wide registers of [`crate::simd::widest`].
#[inline(always)]
fn extremum_of_row<const MAX: bool>(row: &[f32]) -> f32 {
    let groups = row.len() / LANES * LANES;
    let mut lanes = [row[0]; LANES];
    for group in row[..groups].chunks_exact(LANES) {
        for lane in 0..LANES {
            lanes[lane] = pick::<MAX>(lanes[lane], group[lane]);
        }
    }
    let mut acc = row[0];
    for lane in lanes {
        acc = pick::<MAX>(acc, lane);
    }
    for &v in &row[groups..] {
        acc = pick::<MAX>(acc, v);
    }
    acc
}

impl FastReduceExtremum {
    /// The fast version of `op` on an input of `shape`, when it applies: a max or a min over
    /// consecutive axes, none of them empty.
    pub fn for_op(op: &Reduce, shape: &[usize]) -> Option<FastReduceExtremum> {
        let max = match op.reducer {
            Reducer::Max => true,
            Reducer::Min => false,
            _ => return None,
        };
        let (&first, &last) = (op.axes.first()?, op.axes.last()?);
        let consecutive = op.axes.windows(2).all(|w| w[1] == w[0] + 1);
        if !consecutive || last >= shape.len() {
            return None;
        }
        let reduced: usize = shape[first..=last].iter().product();
        if reduced == 0 {
            return None;
        }
        let mut output_shape: TVec<usize> = shape.into();
        output_shape[first..=last].iter_mut().for_each(|d| *d = 1);
        Some(FastReduceExtremum {
            max,
            outer: shape[..first].iter().product(),
            reduced,
            inner: shape[last + 1..].iter().product(),
            output_shape,
        })
    }

    pub fn compute(&self, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        if self.max {
            self.compute_as::<true>(input, output)
        } else {
            self.compute_as::<false>(input, output)
        }
    }

    fn compute_as<const MAX: bool>(&self, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        let (reduced, inner) = (self.reduced, self.inner);
        ensure!(
            reduced > 0
                && input.len() == self.outer * reduced * inner
                && output.len() == self.outer * inner,
            "a reduction of {} values into {} for [{}, {reduced}, {inner}]",
            input.len(),
            output.len(),
            self.outer
        );
        if output.is_empty() {
            return Ok(());
        }
        par_chunks_mut(output, inner, input.len(), |first_row, rows| {
            crate::simd::widest(
                #[inline(always)]
                || {
                    for (i, out) in rows.chunks_exact_mut(inner).enumerate() {
                        let block = &input[(first_row + i) * reduced * inner..][..reduced * inner];
                        if inner == 1 {
                            out[0] = extremum_of_row::<MAX>(block);
                            continue;
                        }
                        out.copy_from_slice(&block[..inner]);
                        for row in block[inner..].chunks_exact(inner) {
                            for (acc, &v) in out.iter_mut().zip(row) {
                                *acc = pick::<MAX>(*acc, v);
                            }
                        }
                    }
                },
            );
            Ok(())
        })
    }
}

impl Op for FastReduceExtremum {
    fn name(&self) -> StaticName {
        if self.max {
            "FastReduceMax".into()
        } else {
            "FastReduceMin".into()
        }
    }

    op_as_typed_op!();
}

impl EvalOp for FastReduceExtremum {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        super::eval_f32(inputs, Some(&self.output_shape), |input, _, output| {
            self.compute(input, output)
        })
    }
}

impl TypedOp for FastReduceExtremum {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values with ties, negatives and no pattern a loop could lean on.
    fn values(count: usize) -> Vec<f32> {
        (0..count)
            .map(|i| ((i * 7919 + 13) % 101) as f32 * 0.5 - 25.0)
            .collect()
    }

    /// tract's own reduction of `input` (`shape`) over `axes`.
    fn tract_s(reducer: Reducer, axes: &[usize], shape: &[usize], input: &[f32]) -> Vec<f32> {
        let tensor = Tensor::from_shape(shape, input).unwrap();
        let reduced = reducer.reduce(axes, &tensor).unwrap();
        let plain = reduced.try_as_plain_ram().unwrap();
        plain.as_slice::<f32>().unwrap().to_vec()
    }

    fn fast(reducer: Reducer, axes: &[usize], shape: &[usize], input: &[f32]) -> Vec<f32> {
        let op = Reduce::new(axes.into(), reducer);
        let fast = FastReduceExtremum::for_op(&op, shape).expect("applies");
        let mut output = vec![0f32; fast.output_shape.iter().product()];
        fast.compute(input, &mut output).unwrap();
        output
    }

    #[test]
    fn matches_tract_over_every_run_of_axes() {
        // Rows long enough for lane groups and a remainder, and short ones.
        for shape in [vec![3, 37, 5], vec![2, 4, 3, 2], vec![1, 512, 40]] {
            let input = values(shape.iter().product());
            for first in 0..shape.len() {
                for last in first..shape.len() {
                    let axes: Vec<usize> = (first..=last).collect();
                    for reducer in [Reducer::Max, Reducer::Min] {
                        assert_eq!(
                            fast(reducer, &axes, &shape, &input),
                            tract_s(reducer, &axes, &shape, &input),
                            "{reducer:?} over {axes:?} of {shape:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_nan_makes_its_window_nan_and_no_other() {
        let shape = [2, 40, 3];
        let mut input = values(2 * 40 * 3);
        // Inside the first window of the rows (axis 1: a column of row block 0), and inside the
        // one row reduced whole (axis 2, row 17 of block 1).
        input[5 * 3] = f32::NAN;
        input[40 * 3 + 17 * 3 + 1] = f32::NAN;
        for reducer in [Reducer::Max, Reducer::Min] {
            let columns = fast(reducer, &[1], &shape, &input);
            assert!(columns[0].is_nan() && columns[4].is_nan(), "{columns:?}");
            assert_eq!(columns.iter().filter(|v| v.is_nan()).count(), 2);
            let rows = fast(reducer, &[2], &shape, &input);
            assert!(rows[5].is_nan() && rows[40 + 17].is_nan(), "{rows:?}");
            assert_eq!(rows.iter().filter(|v| v.is_nan()).count(), 2);
        }
    }

    #[test]
    fn only_max_and_min_over_consecutive_non_empty_axes() {
        let op = |axes: &[usize], reducer| Reduce::new(axes.into(), reducer);
        assert!(FastReduceExtremum::for_op(&op(&[0, 2], Reducer::Max), &[2, 3, 4]).is_none());
        assert!(FastReduceExtremum::for_op(&op(&[1], Reducer::Sum), &[2, 3, 4]).is_none());
        assert!(FastReduceExtremum::for_op(&op(&[1], Reducer::Max), &[2, 0, 4]).is_none());
        let global = FastReduceExtremum::for_op(&op(&[2], Reducer::Max), &[1, 512, 508]).unwrap();
        assert_eq!((global.outer, global.reduced, global.inner), (512, 508, 1));
        assert_eq!(&*global.output_shape, &[1, 512, 1]);
    }
}
