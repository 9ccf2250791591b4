//! 2-D max pooling ([ONNX `MaxPool`]) for f32 in channels-first layout, replacing tract's
//! `MaxPool` in cpu plans (a 3×3 pool took 12× onnxruntime's time on GoogLeNet); the window
//! passes are [`pool_2d`](super::pool_2d)'s. Padding never wins a max (ONNX); a window with no
//! input element gives `f32::MIN`, as tract.
//!
//! [ONNX `MaxPool`]: https://onnx.ai/onnx/operators/onnx__MaxPool.html

use super::pool_2d::{Fold, Window2d};
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::MaxPool;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastMaxPool {
    pub window: Window2d,
}

/// The fold of a max pool.
pub(super) struct Max;

impl Fold for Max {
    const EMPTY: f32 = f32::MIN;

    fn op(acc: f32, value: f32) -> f32 {
        if value > acc { value } else { acc }
    }
}

impl FastMaxPool {
    /// The fast version of `op` on an input of `shape`, when it applies: f32, channels first,
    /// two spatial axes, concrete shape, no index output.
    pub fn for_op(op: &MaxPool, shape: &[usize]) -> Option<FastMaxPool> {
        if op.with_index_outputs.is_some() {
            return None;
        }
        Window2d::new(&op.pool_spec, shape).map(|window| FastMaxPool { window })
    }

    pub fn compute(&self, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        self.window.reduce::<Max>(input, output, |_| {})
    }
}

impl Op for FastMaxPool {
    fn name(&self) -> StaticName {
        "FastMaxPool".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastMaxPool {
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

impl TypedOp for FastMaxPool {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&*self.window.output_shape)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::pool_2d::tests::{GEOMETRIES, data, reference, window};
    use super::*;

    #[test]
    fn matches_the_definition_over_strides_dilations_and_padding() {
        for geometry in GEOMETRIES {
            let op = FastMaxPool {
                window: window(geometry),
            };
            let input = data(&op.window);
            let mut out = vec![0f32; op.window.output_shape.iter().product()];
            op.compute(&input, &mut out).unwrap();
            let expected = reference(&op.window, &input, f32::MIN, f32::max, |m, _, _| m);
            assert_eq!(out, expected, "{geometry:?}");
        }
    }
}
