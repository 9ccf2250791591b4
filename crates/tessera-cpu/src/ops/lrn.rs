//! LRN (local response normalization across channels, [ONNX `LRN`]) for f32, replacing tract's
//! `Lrn` in cpu plans: tract computes each element through a dynamic-rank index per channel of
//! its window (over half the run time of GoogLeNet-style models); this one sums whole channel
//! planes, vectorizably, one `(batch, channel)` plane per row of tract's thread pool.
//!
//! `y = x / (bias + alpha / size * Σ x²)^beta`, the sum over channels
//! `c - (size - 1) / 2 ..= c + ceil((size - 1) / 2)` clipped to the tensor, added in channel
//! order as tract and the ONNX reference do.
//!
//! [ONNX `LRN`]: https://onnx.ai/onnx/operators/onnx__LRN.html

use crate::parallel::par_chunks_mut;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;

#[derive(Debug, Clone, PartialEq)]
pub struct FastLrn {
    pub alpha: f32,
    pub beta: f32,
    pub bias: f32,
    pub size: usize,
}

impl Eq for FastLrn {}

impl FastLrn {
    pub fn from_tract(op: &tract_onnx_opl::lrn::Lrn) -> FastLrn {
        FastLrn {
            alpha: op.alpha,
            beta: op.beta,
            bias: op.bias,
            size: op.size,
        }
    }

    /// Normalizes `input` (`[batch, channels, inner…]`, f32, contiguous) into `output`.
    pub fn compute(&self, input: &[f32], shape: &[usize], output: &mut [f32]) -> TractResult<()> {
        ensure!(
            shape.len() >= 2,
            "LRN needs an input of rank 2 or more, got {shape:?}"
        );
        let channels = shape[1];
        let plane: usize = shape[2..].iter().product();
        if plane == 0 || channels == 0 || input.is_empty() {
            return Ok(());
        }
        let before = (self.size.max(1) - 1) / 2;
        let after = (self.size.max(1) - 1).div_ceil(2);
        let scale = self.alpha / self.size.max(1) as f32;
        let (bias, beta) = (self.bias, self.beta);
        par_chunks_mut(
            output,
            plane,
            input.len() * self.size.max(1),
            |first_row, rows| {
                // The loops compiled for the CPU's widest vectors (square roots included).
                crate::simd::widest(
                    #[inline(always)]
                    || {
                        let mut sum = vec![0f32; plane];
                        for (r, out) in rows.chunks_mut(plane).enumerate() {
                            let row = first_row + r;
                            let (batch, c) = (row / channels, row % channels);
                            let batch_base = batch * channels * plane;
                            sum.fill(0.0);
                            for c2 in c.saturating_sub(before)..=(c + after).min(channels - 1) {
                                let x = &input[batch_base + c2 * plane..][..plane];
                                for (s, &v) in sum.iter_mut().zip(x) {
                                    *s += v * v;
                                }
                            }
                            let x = &input[batch_base + c * plane..][..plane];
                            if beta == 0.75 {
                                // base^0.75 = sqrt(base) * sqrt(sqrt(base)): square roots
                                // vectorize, powf does not.
                                for ((o, &v), &s) in out.iter_mut().zip(x).zip(&sum) {
                                    let root = (bias + scale * s).sqrt();
                                    *o = v / (root * root.sqrt());
                                }
                            } else {
                                for ((o, &v), &s) in out.iter_mut().zip(x).zip(&sum) {
                                    *o = v / (bias + scale * s).powf(beta);
                                }
                            }
                        }
                    },
                );
                Ok(())
            },
        )
    }
}

impl Op for FastLrn {
    fn name(&self) -> StaticName {
        "FastLrn".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastLrn {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        super::eval_f32(inputs, None, |input, shape, output| {
            self.compute(input, shape, output)
        })
    }
}

impl TypedOp for FastLrn {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(inputs[0].without_value()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tract's own `Lrn`, element by element: the definition both follow.
    fn reference(op: &FastLrn, input: &[f32], shape: &[usize]) -> Vec<f32> {
        let (channels, plane) = (shape[1], shape[2..].iter().product::<usize>());
        (0..input.len())
            .map(|i| {
                let (batch, c, p) = (i / (channels * plane), (i / plane) % channels, i % plane);
                let lo = c.saturating_sub((op.size - 1) / 2);
                let hi = (c + (op.size - 1).div_ceil(2)).min(channels - 1);
                let sum: f32 = (lo..=hi)
                    .map(|c2| input[(batch * channels + c2) * plane + p].powi(2))
                    .sum();
                input[i] / (op.bias + op.alpha / op.size as f32 * sum).powf(op.beta)
            })
            .collect()
    }

    #[test]
    fn matches_the_definition_for_odd_even_and_wide_windows() {
        let shape = [2, 7, 3, 5];
        let input: Vec<f32> = (0..2 * 7 * 15)
            .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.3)
            .collect();
        for (size, beta) in [(5, 0.75), (4, 0.75), (3, 0.5), (1, 0.75), (11, 0.9)] {
            let op = FastLrn {
                alpha: 0.02,
                beta,
                bias: 1.5,
                size,
            };
            let mut out = vec![0f32; input.len()];
            op.compute(&input, &shape, &mut out).unwrap();
            let want = reference(&op, &input, &shape);
            for (i, (a, b)) in out.iter().zip(&want).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-6 * b.abs().max(1.0),
                    "size {size} beta {beta} at {i}: {a} vs {b}"
                );
            }
        }
    }
}
