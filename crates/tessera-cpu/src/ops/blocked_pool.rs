//! 2-D max and average pooling ([ONNX `MaxPool`], [`AveragePool`]) over the channels-blocked
//! layout of [`crate::blocked_layout`]: each window's taps are folded 16 channels at a time, one
//! vector per tap, whatever the stride (channels-first pools fold strided rows value by value).
//! As the channels-first pools ([`FastMaxPool`](super::FastMaxPool),
//! [`FastAvgPool`](super::FastAvgPool)): padding never wins a max and a window with no input
//! element gives `f32::MIN`; an average divides by the taps tract counts.
//!
//! [ONNX `MaxPool`]: https://onnx.ai/onnx/operators/onnx__MaxPool.html
//! [`AveragePool`]: https://onnx.ai/onnx/operators/onnx__AveragePool.html

use super::pool_2d::Window2d;
use crate::blocked_layout::BLOCK;
use crate::parallel;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;

#[derive(Debug, Clone, PartialEq)]
pub struct BlockedPool {
    /// The pool's channels-first geometry (its output shape channels-first).
    pub window: Window2d,
    pub fold: PoolFold,
}

/// What a [`BlockedPool`] computes.
#[derive(Debug, Clone, PartialEq)]
pub enum PoolFold {
    Max,
    /// A sum, each output position then multiplied by its value here, when there is one (an
    /// average's `1 / taps`, per position of a plane).
    Sum(Option<Arc<[f32]>>),
}

// The scales are reciprocals of tap counts, never NaN.
impl Eq for BlockedPool {}

impl BlockedPool {
    pub fn max(window: Window2d) -> BlockedPool {
        BlockedPool {
            window,
            fold: PoolFold::Max,
        }
    }

    /// An average (a sum unless `normalize`), counting the padding or not: tract's `SumPool`.
    pub fn average(window: Window2d, count_include_pad: bool, normalize: bool) -> BlockedPool {
        let scale = super::FastAvgPool::new(window.clone(), count_include_pad, normalize)
            .scale()
            .map(Arc::from);
        BlockedPool {
            window,
            fold: PoolFold::Sum(scale),
        }
    }

    pub fn output_shape(&self) -> TVec<usize> {
        crate::blocked_layout::blocked_shape(&self.window.output_shape)
    }

    /// `output` = the pool of `input`, both blocked. A window with no input element gives
    /// `f32::MIN`, as the channels-first pool.
    pub fn compute(&self, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let out_shape = self.output_shape();
        let planes = out_shape[0] * out_shape[1];
        ensure!(
            input.len() == planes * r.input * c.input * BLOCK
                && output.len() == planes * r.output * c.output * BLOCK,
            "blocked pool on {} values into {}",
            input.len(),
            output.len()
        );
        let plane_out = r.output * c.output * BLOCK;
        let work = output.len() * r.kernel * c.kernel;
        parallel::par_chunks_mut(output, plane_out, work, |first_plane, block| {
            for (p, out) in block.chunks_exact_mut(plane_out).enumerate() {
                let plane = first_plane + p;
                let x = &input[plane * r.input * c.input * BLOCK..][..r.input * c.input * BLOCK];
                crate::simd::widest(
                    #[inline(always)]
                    || match &self.fold {
                        PoolFold::Max => pool_plane::<true>(&self.window, x, out, None),
                        PoolFold::Sum(scale) => {
                            pool_plane::<false>(&self.window, x, out, scale.as_deref())
                        }
                    },
                );
            }
            Ok(())
        })
    }
}

/// One blocked plane's windows: maxed (`MAX`) or summed, sums times `scale` per position.
#[inline(always)]
fn pool_plane<const MAX: bool>(
    window: &Window2d,
    x: &[f32],
    out: &mut [f32],
    scale: Option<&[f32]>,
) {
    let (r, c) = (window.rows, window.cols);
    for oy in 0..r.output {
        for ox in 0..c.output {
            let mut acc = [if MAX { f32::MIN } else { 0.0 }; BLOCK];
            for ky in 0..r.kernel {
                let Some(iy) = (oy * r.stride + ky * r.dilation)
                    .checked_sub(r.pad_before)
                    .filter(|&i| i < r.input)
                else {
                    continue;
                };
                for kx in 0..c.kernel {
                    let Some(ix) = (ox * c.stride + kx * c.dilation)
                        .checked_sub(c.pad_before)
                        .filter(|&i| i < c.input)
                    else {
                        continue;
                    };
                    let v = &x[(iy * c.input + ix) * BLOCK..][..BLOCK];
                    for (a, &v) in acc.iter_mut().zip(v) {
                        *a = if !MAX {
                            *a + v
                        } else if v > *a {
                            v
                        } else {
                            *a
                        };
                    }
                }
            }
            if let Some(scale) = scale {
                let s = scale[oy * c.output + ox];
                acc.iter_mut().for_each(|a| *a *= s);
            }
            out[(oy * c.output + ox) * BLOCK..][..BLOCK].copy_from_slice(&acc);
        }
    }
}

impl Op for BlockedPool {
    fn name(&self) -> StaticName {
        match self.fold {
            PoolFold::Max => "BlockedMaxPool".into(),
            PoolFold::Sum(_) => "BlockedAvgPool".into(),
        }
    }

    op_as_typed_op!();
}

impl EvalOp for BlockedPool {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        super::eval_f32_starting(
            super::OutputStart::Unset,
            inputs,
            Some(&self.output_shape()),
            |input, _, output| self.compute(input, output),
        )
    }
}

impl TypedOp for BlockedPool {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&*self.output_shape())))
    }
}

#[cfg(test)]
mod tests {
    use super::super::pool_2d::tests::{GEOMETRIES, window};
    use super::super::{FastAvgPool, FastMaxPool};
    use super::*;
    use crate::blocked_layout::blocked_values;
    use tract_linalg::multithread::{Executor, multithread_tract_scope};

    #[test]
    fn matches_the_channels_first_pools_over_strides_dilations_and_padding() {
        for geometry in GEOMETRIES {
            // 2 blocks of channels.
            let mut window = window(geometry);
            window.output_shape[0] = 1;
            window.output_shape[1] = 2 * BLOCK;
            let (r, c) = (window.rows, window.cols);
            let nchw = [1, 2 * BLOCK, r.input, c.input];
            let x: Vec<f32> = (0..nchw.iter().product())
                .map(|i| ((i * 53 % 97) as f32) - 40.0)
                .collect();
            let out_len: usize = window.output_shape.iter().product();
            let out_nchw = [1, 2 * BLOCK, r.output, c.output];
            for include_pad in [false, true] {
                let mut max = vec![0.0; out_len];
                FastMaxPool {
                    window: window.clone(),
                }
                .compute(&x, &mut max)
                .unwrap();
                let mut avg = vec![0.0; out_len];
                FastAvgPool::new(window.clone(), include_pad, true)
                    .compute(&x, &mut avg)
                    .unwrap();
                let cases = [
                    (BlockedPool::max(window.clone()), max),
                    (BlockedPool::average(window.clone(), include_pad, true), avg),
                ];
                for (pool, want) in cases {
                    let want = blocked_values(&want, &out_nchw);
                    for threads in [1, 2] {
                        let mut got = vec![f32::NAN; out_len];
                        let input = blocked_values(&x, &nchw);
                        multithread_tract_scope(Executor::multithread(threads), || {
                            pool.compute(&input, &mut got)
                        })
                        .unwrap();
                        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                            // Sums in another order than the two-pass channels-first pool's.
                            assert!(
                                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                                "{geometry:?}, {:?}, value {i}: {g} against {w}",
                                pool.fold
                            );
                        }
                    }
                }
            }
        }
    }
}
