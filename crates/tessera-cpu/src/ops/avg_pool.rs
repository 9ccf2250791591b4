//! 2-D average pooling ([ONNX `AveragePool`], tract's normalized `SumPool`) for f32 in
//! channels-first layout, replacing tract's in cpu plans: tract's walks the channels innermost
//! for every window, a cache miss per element (Inception-v2's pools: 14 ms per run against
//! onnxruntime's 0.5). The window passes are [`pool_2d`](super::pool_2d)'s; each sum is then
//! scaled by the reciprocal of its window's size: the taps inside the input, or with
//! `count_include_pad` those inside the padded input, as tract computes them.
//!
//! [ONNX `AveragePool`]: https://onnx.ai/onnx/operators/onnx__AveragePool.html

use super::pool_2d::{Fold, Window2d};
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::SumPool;

#[derive(Debug, Clone, PartialEq)]
pub struct FastAvgPool {
    pub window: Window2d,
    /// What each output position of a plane is multiplied by, `1 / taps` as tract computes it;
    /// `None` for a sum (tract's un-normalized `SumPool`). Derived once, from the window.
    scale: Option<Vec<f32>>,
}

impl Eq for FastAvgPool {}

pub(super) struct Sum;

impl Fold for Sum {
    const EMPTY: f32 = 0.0;

    fn op(acc: f32, value: f32) -> f32 {
        acc + value
    }
}

impl FastAvgPool {
    /// The fast version of `op` on an input of `shape`, when it applies: f32, channels first,
    /// two spatial axes, concrete shape.
    pub fn for_op(op: &SumPool, shape: &[usize]) -> Option<FastAvgPool> {
        Window2d::new(&op.pool_spec, shape)
            .map(|window| FastAvgPool::new(window, op.count_include_pad, op.normalize))
    }

    /// An average over `window` (a sum unless `normalize`), counting the padding or not.
    pub fn new(window: Window2d, count_include_pad: bool, normalize: bool) -> FastAvgPool {
        let (rows, cols) = (&window.rows, &window.cols);
        let (row_taps, col_taps) = if count_include_pad {
            (rows.taps_inside_padding(), cols.taps_inside_padding())
        } else {
            (rows.taps_inside(), cols.taps_inside())
        };
        let scale = normalize.then(|| {
            row_taps
                .iter()
                .flat_map(|&r| col_taps.iter().map(move |&c| ((r * c) as f32).recip()))
                .collect()
        });
        FastAvgPool { window, scale }
    }

    /// What each output position of a plane is multiplied by; `None` for a sum.
    #[cfg(target_arch = "x86_64")]
    pub fn scale(&self) -> Option<&[f32]> {
        self.scale.as_deref()
    }

    pub fn compute(&self, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        match &self.scale {
            None => self.window.reduce::<Sum>(input, output, |_| {}),
            Some(scale) => self.window.reduce::<Sum>(input, output, |plane| {
                plane.iter_mut().zip(scale).for_each(|(v, s)| *v *= s)
            }),
        }
    }
}

impl Op for FastAvgPool {
    fn name(&self) -> StaticName {
        "FastAvgPool".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastAvgPool {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        // `Window2d::reduce` writes every output value.
        super::eval_f32_starting(
            super::OutputStart::Unset,
            inputs,
            Some(&self.window.output_shape),
            |input, _, output| self.compute(input, output),
        )
    }
}

impl TypedOp for FastAvgPool {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&*self.window.output_shape)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::pool_2d::tests::{GEOMETRIES, data, reference, window};
    use super::*;

    /// Sums may associate differently from the definition's order: compared to 1e-5 relative.
    fn assert_close(got: &[f32], expected: &[f32], what: &str) {
        assert_eq!(got.len(), expected.len(), "{what}");
        for (i, (g, e)) in got.iter().zip(expected).enumerate() {
            assert!(
                (g - e).abs() <= 1e-5 * e.abs().max(1.0),
                "{what}: [{i}] {g} vs {e}"
            );
        }
    }

    #[test]
    fn matches_the_definition_with_and_without_padding_counted() {
        for geometry in GEOMETRIES {
            for count_include_pad in [false, true] {
                let op = FastAvgPool::new(window(geometry), count_include_pad, true);
                let input = data(&op.window);
                let mut out = vec![0f32; op.window.output_shape.iter().product()];
                op.compute(&input, &mut out).unwrap();
                let kernel = op.window.rows.kernel * op.window.cols.kernel;
                let expected = reference(
                    &op.window,
                    &input,
                    0.0,
                    |a, b| a + b,
                    |sum, inside, _| sum / if count_include_pad { kernel } else { inside } as f32,
                );
                assert_close(
                    &out,
                    &expected,
                    &format!("{geometry:?} count_include_pad {count_include_pad}"),
                );
            }
        }
    }

    #[test]
    fn a_ceil_mode_window_counts_only_the_padding_it_covers() {
        // One row of 4, kernel 3, stride 2, one pad before, none after, ceil mode: the last
        // window covers input 3 and two positions past the padded end.
        let mut window = window((4, 3, 2, 1, 1));
        for axis in [&mut window.rows, &mut window.cols] {
            *axis = super::super::pool_2d::Axis {
                input: 4,
                output: 3,
                padded_end: Some(5),
                ..*axis
            };
        }
        window.output_shape = tvec![1, 1, 3, 3];
        let op = FastAvgPool::new(window, true, true);
        let input: Vec<f32> = (1..=16).map(|v| v as f32).collect();
        let mut out = vec![0f32; 9];
        op.compute(&input, &mut out).unwrap();
        // Bottom-right window: input (3, 3) alone, over 1 × 1 counted taps.
        assert_eq!(out[8], 16.0);
        // Top-left: inputs (0..2, 0..2) = 1 + 2 + 5 + 6 over the 3 × 3 padded window.
        assert!((out[0] - 14.0 / 9.0).abs() < 1e-6, "{}", out[0]);
    }
}
