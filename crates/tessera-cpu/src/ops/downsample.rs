//! Every `stride`-th slice along one axis, from `modulo` (tract's `Downsample`, which its
//! optimizer puts before a strided 1×1 convolution so that the product reads a dense input), for
//! f32, replacing tract's in cpu plans: tract copies through a strided ndarray view element by
//! element, one thread, ~1.6 ns a value (ResNet-50's four pairs of them, rows then columns:
//! 2.3 ms of a 74 ms run on one Xeon thread). Here whole runs along the axes after it are copied,
//! and along the last axis a stride of 2 takes the even values a vector at a time.

use crate::parallel::par_chunks_mut;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::Downsample;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastDownsample {
    pub axis: usize,
    pub stride: usize,
    pub modulo: usize,
}

impl FastDownsample {
    /// The fast version of `op` on an input of `shape`: forward strides, from inside the axis.
    pub fn for_op(op: &Downsample, shape: &[usize]) -> Option<FastDownsample> {
        let stride = usize::try_from(op.stride).ok().filter(|&s| s >= 1)?;
        (op.axis < shape.len() && op.modulo < shape[op.axis]).then_some(FastDownsample {
            axis: op.axis,
            stride,
            modulo: op.modulo,
        })
    }

    /// The output's shape for an input of `shape`.
    fn output_shape(&self, shape: &[usize]) -> TractResult<Vec<usize>> {
        ensure!(
            self.axis < shape.len() && self.modulo < shape[self.axis],
            "downsample: axis {} from {} does not fit an input of shape {shape:?}",
            self.axis,
            self.modulo
        );
        let mut shape = shape.to_vec();
        shape[self.axis] = (shape[self.axis] - self.modulo).div_ceil(self.stride);
        Ok(shape)
    }

    /// Downsamples `input` (of `shape`) into `output`.
    pub fn compute(&self, input: &[f32], shape: &[usize], output: &mut [f32]) -> TractResult<()> {
        let kept = self.output_shape(shape)?[self.axis];
        let len = shape[self.axis];
        let inner: usize = shape[self.axis + 1..].iter().product();
        let (in_block, out_block) = (len * inner, kept * inner);
        ensure!(
            input.len() == shape.iter().product::<usize>()
                && output.len() == input.len() / in_block.max(1) * out_block,
            "downsample: the tensors do not have their shapes' sizes"
        );
        if output.is_empty() {
            return Ok(());
        }
        par_chunks_mut(output, out_block, output.len(), |first, blocks| {
            for (b, out) in blocks.chunks_exact_mut(out_block).enumerate() {
                let source = &input[(first + b) * in_block..][..in_block];
                if inner == 1 {
                    let source = &source[self.modulo..];
                    if self.stride == 2 {
                        crate::simd::take_even(&source[..(2 * kept - 1)], out);
                    } else {
                        for (o, v) in out.iter_mut().zip(source.iter().step_by(self.stride)) {
                            *o = *v;
                        }
                    }
                } else {
                    for (i, run) in out.chunks_exact_mut(inner).enumerate() {
                        let at = (self.modulo + i * self.stride) * inner;
                        run.copy_from_slice(&source[at..][..inner]);
                    }
                }
            }
            Ok(())
        })
    }
}

impl Op for FastDownsample {
    fn name(&self) -> StaticName {
        "FastDownsample".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "axis:{} stride:{} modulo:{}",
            self.axis, self.stride, self.modulo
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for FastDownsample {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let Some(input) = inputs.first() else {
            bail!("downsample takes one input");
        };
        let output_shape = self.output_shape(input.shape())?;
        super::eval_f32(inputs, Some(&output_shape), |input, shape, output| {
            self.compute(input, shape, output)
        })
    }
}

impl TypedOp for FastDownsample {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let Some(shape) = inputs.first().and_then(|input| input.shape.as_concrete()) else {
            bail!("downsample: one input of a known shape expected");
        };
        Ok(tvec!(f32::fact(self.output_shape(shape)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, index by index: output `[.., i, ..]` is input `[.., modulo + i·stride, ..]`.
    fn reference(
        values: &[f32],
        shape: &[usize],
        axis: usize,
        stride: usize,
        modulo: usize,
    ) -> Vec<f32> {
        let inner: usize = shape[axis + 1..].iter().product();
        let len = shape[axis];
        let kept = (len - modulo).div_ceil(stride);
        let outer = values.len() / (len * inner);
        let mut out = vec![];
        for o in 0..outer {
            for i in 0..kept {
                for j in 0..inner {
                    out.push(values[(o * len + modulo + i * stride) * inner + j]);
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_definition_on_every_axis_stride_and_modulo() {
        let shape = [2, 5, 7, 9];
        let values: Vec<f32> = (0..shape.iter().product::<usize>())
            .map(|i| i as f32 * 0.5 - 3.0)
            .collect();
        // 34 values along the last axis: take_even's vector blocks and its tail.
        for shape in [&shape[..], &[3, 34][..]] {
            let values = &values[..shape.iter().product::<usize>()];
            for axis in 0..shape.len() {
                for stride in 1..=4 {
                    for modulo in 0..shape[axis].min(3) {
                        let op = Downsample::new(axis, stride as isize, modulo);
                        let fast = FastDownsample::for_op(&op, shape).unwrap();
                        let want = reference(values, shape, axis, stride, modulo);
                        let mut got = vec![f32::NAN; want.len()];
                        fast.compute(values, shape, &mut got).unwrap();
                        assert_eq!(
                            got, want,
                            "{shape:?} axis {axis} stride {stride} modulo {modulo}"
                        );
                        let kept = fast.output_shape(shape).unwrap().iter().product::<usize>();
                        assert_eq!(kept, want.len());
                    }
                }
            }
        }
    }

    #[test]
    fn backward_strides_and_wrong_sizes_stay_out() {
        assert!(FastDownsample::for_op(&Downsample::new(1, -2, 0), &[1, 4]).is_none());
        assert!(FastDownsample::for_op(&Downsample::new(1, 2, 4), &[1, 4]).is_none());
        let fast = FastDownsample::for_op(&Downsample::new(1, 2, 0), &[1, 4]).unwrap();
        assert!(fast.compute(&[0.0; 3], &[1, 4], &mut [0.0; 2]).is_err());
    }
}
