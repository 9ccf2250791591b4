//! [ONNX `Softmax`] over short trailing rows (f32, fewer than 16 values each: a detector's two or
//! four classes per position), replacing tract's `Softmax` there. tract calls three vector kernels
//! per row (max, exp-sum, scale), each sized for long rows: on mtcnn_pnet's 4,125 rows of 2 the
//! calls were a third of the model's run natively (0.33 of 1.0 ms) and 0.55 ms in browsers. Here
//! each row is one short loop; rows are the pool's tasks.
//!
//! [ONNX `Softmax`]: https://onnx.ai/onnx/operators/onnx__Softmax.html

use crate::parallel::par_chunks_mut;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

/// Rows at least this long stay with tract, whose kernels vectorize along them.
const LONGEST_SHORT_ROW: usize = 15;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastShortSoftmax {
    /// Values per row: the product of the softmax axes, which are the trailing ones.
    pub row_len: usize,
}

impl FastShortSoftmax {
    /// The fast version of `op` on an f32 input of `shape`, when it applies: a plain softmax
    /// (not log, not quantized) over trailing axes whose rows are short.
    pub fn for_op(op: &Softmax, shape: &[usize]) -> Option<FastShortSoftmax> {
        if op.kind != SoftmaxKind::Softmax || op.quant_output_dt.is_some() || op.axes.is_empty() {
            return None;
        }
        let mut axes = op.axes.to_vec();
        axes.sort_unstable();
        let first = shape.len().checked_sub(axes.len())?;
        let trailing = axes.iter().enumerate().all(|(i, &a)| a == first + i);
        let row_len: usize = shape[first..].iter().product();
        (trailing && (1..=LONGEST_SHORT_ROW).contains(&row_len))
            .then_some(FastShortSoftmax { row_len })
    }

    /// Each row of `data` (a whole number of rows) replaced by its softmax.
    pub fn compute_in_place(&self, data: &mut [f32]) -> TractResult<()> {
        let n = self.row_len;
        ensure!(
            n > 0 && data.len().is_multiple_of(n),
            "softmax rows of {n} do not tile {} values",
            data.len()
        );
        // A few dozen operations per row: tasks of many rows.
        let work = data.len() * 16;
        par_chunks_mut(data, n, work, |_, rows| {
            for row in rows.chunks_exact_mut(n) {
                let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0.0;
                for x in row.iter_mut() {
                    *x = (*x - max).exp();
                    sum += *x;
                }
                let scale = sum.recip();
                row.iter_mut().for_each(|x| *x *= scale);
            }
            Ok(())
        })
    }
}

impl Op for FastShortSoftmax {
    fn name(&self) -> StaticName {
        "FastShortSoftmax".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastShortSoftmax {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        // In place, as tract's softmax: the input is copied only when another op still reads it.
        let mut output = args_1!(inputs).into_tensor();
        self.compute_in_place(output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?)?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastShortSoftmax {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(inputs[0].without_value()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn softmax(axes: &[usize]) -> Softmax {
        Softmax::new(axes.into(), None, SoftmaxKind::Softmax)
    }

    /// The definition, in f64: exp(x - max) / sum over the row.
    fn reference(input: &[f32], n: usize) -> Vec<f32> {
        input
            .chunks(n)
            .flat_map(|row| {
                let max = row.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
                let exps: Vec<f64> = row.iter().map(|&x| (x as f64 - max).exp()).collect();
                let sum: f64 = exps.iter().sum();
                exps.into_iter().map(move |e| (e / sum) as f32)
            })
            .collect()
    }

    #[test]
    fn short_trailing_rows_only() {
        let pnet = [1, 55, 75, 2];
        assert_eq!(
            FastShortSoftmax::for_op(&softmax(&[3]), &pnet).map(|s| s.row_len),
            Some(2)
        );
        assert_eq!(
            FastShortSoftmax::for_op(&softmax(&[2, 3]), &[1, 4, 3, 5]).map(|s| s.row_len),
            Some(15)
        );
        // Long rows, a leading axis, log-softmax: tract's.
        assert!(FastShortSoftmax::for_op(&softmax(&[1]), &[1, 16]).is_none());
        assert!(FastShortSoftmax::for_op(&softmax(&[1]), &[1, 2, 55, 75]).is_none());
        let log = Softmax::new(tvec![3], None, SoftmaxKind::LogSoftmax);
        assert!(FastShortSoftmax::for_op(&log, &pnet).is_none());
    }

    #[test]
    fn matches_the_definition_on_rows_of_every_short_length() {
        for n in 1..=LONGEST_SHORT_ROW {
            // Large and negative values: the row's max is taken out before exp.
            let input: Vec<f32> = (0..n * 37)
                .map(|i| ((i * 7919) % 97) as f32 * 1.7 - 60.0)
                .collect();
            let op = FastShortSoftmax { row_len: n };
            let mut output = input.clone();
            op.compute_in_place(&mut output).unwrap();
            for (got, want) in output.iter().zip(reference(&input, n)) {
                assert!(
                    (got - want).abs() <= 1e-6 + 1e-5 * want.abs(),
                    "n {n}: {got} vs {want}"
                );
            }
            for row in output.chunks(n) {
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
        }
        let op = FastShortSoftmax { row_len: 3 };
        assert!(
            op.compute_in_place(&mut [0.0; 7]).is_err(),
            "not a whole number of rows"
        );
    }
}
