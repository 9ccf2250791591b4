//! 2-D max pooling ([ONNX `MaxPool`]) for f32 in channels-first layout, replacing tract's
//! `MaxPool` in cpu plans: tract visits each window through a precomputed offset table with a
//! bounds check per element (a 3×3 pool took 12× onnxruntime's time on GoogLeNet); this one
//! runs, per output row and kernel tap, one tight loop over the output columns whose input
//! column is inside the image, one `(batch, channel)` plane per row of tract's thread pool.
//! Padding never wins a max (ONNX); a window with no input element gives `f32::MIN`, as tract.
//!
//! [ONNX `MaxPool`]: https://onnx.ai/onnx/operators/onnx__MaxPool.html

use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::MaxPool;
use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;
use tract_linalg::multithread::par_chunks_mut;

/// The geometry of one spatial axis: output size, stride, dilation, padding before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Axis {
    pub input: usize,
    pub output: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    pub pad_before: usize,
}

impl Axis {
    /// Output positions `lo..hi` whose tap `k` reads inside the input.
    fn valid(&self, k: usize) -> (usize, usize) {
        let offset = (k * self.dilation) as isize - self.pad_before as isize;
        // o * stride + offset in 0..input
        let lo = if offset >= 0 {
            0
        } else {
            ((-offset) as usize).div_ceil(self.stride)
        };
        let last = self.input as isize - 1 - offset;
        let hi = if last < 0 {
            0
        } else {
            (last as usize / self.stride + 1).min(self.output)
        };
        (lo.min(hi), hi)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastMaxPool {
    pub rows: Axis,
    pub cols: Axis,
    /// Output shape (input shape with the spatial axes pooled).
    pub output_shape: TVec<usize>,
}

impl FastMaxPool {
    /// The fast version of `op` on an input of `shape`, when it applies: f32, channels first,
    /// two spatial axes, concrete shape, no index output.
    pub fn for_op(op: &MaxPool, shape: &[usize]) -> Option<FastMaxPool> {
        let spec = &op.pool_spec;
        if op.with_index_outputs.is_some()
            || !matches!(spec.data_format, DataFormat::NCHW | DataFormat::CHW)
            || spec.kernel_shape.len() != 2
        {
            return None;
        }
        let spatial = &shape[shape.len().checked_sub(2)?..];
        let computed = spec.computed_padding(spatial);
        let (strides, dilations) = (spec.strides(), spec.dilations());
        let axis = |i: usize| Axis {
            input: spatial[i],
            output: computed[i].convoluted,
            kernel: spec.kernel_shape[i],
            stride: strides[i].max(1),
            dilation: dilations[i].max(1),
            pad_before: computed[i].pad_before,
        };
        let mut output_shape: TVec<usize> = shape.into();
        let rank = output_shape.len();
        output_shape[rank - 2] = computed[0].convoluted;
        output_shape[rank - 1] = computed[1].convoluted;
        Some(FastMaxPool {
            rows: axis(0),
            cols: axis(1),
            output_shape,
        })
    }

    /// Pools `input` (planes of `rows.input × cols.input`) into `output`: each input row is
    /// first reduced across the window's columns (once, however many windows share it), then
    /// each output row is the max of its window's reduced rows (contiguous, vectorized).
    pub fn compute(&self, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        let (r, c) = (self.rows, self.cols);
        let (in_plane, out_plane) = (r.input * c.input, r.output * c.output);
        if out_plane == 0 || output.is_empty() {
            return Ok(());
        }
        ensure!(
            input.len() / in_plane.max(1) == output.len() / out_plane,
            "MaxPool planes differ"
        );
        let col_taps: Vec<(usize, usize, usize)> = (0..c.kernel)
            .map(|k| {
                let (lo, hi) = c.valid(k);
                (
                    lo,
                    hi,
                    (lo * c.stride + k * c.dilation).saturating_sub(c.pad_before),
                )
            })
            .collect();
        let work = input.len() * r.kernel * c.kernel / (r.stride * c.stride).max(1);
        par_chunks_mut(output, out_plane, work, |first_plane, planes| {
            let mut reduced = vec![f32::MIN; r.input * c.output];
            for (p, out) in planes.chunks_mut(out_plane).enumerate() {
                let plane = &input[(first_plane + p) * in_plane..][..in_plane];
                for (src, dst) in plane
                    .chunks_exact(c.input)
                    .zip(reduced.chunks_exact_mut(c.output))
                {
                    dst.fill(f32::MIN);
                    for &(lo, hi, first) in &col_taps {
                        max_strided(&mut dst[lo..hi], &src[first..], c.stride);
                    }
                }
                out.fill(f32::MIN);
                for ky in 0..r.kernel {
                    let (row_lo, row_hi) = r.valid(ky);
                    if row_lo >= row_hi {
                        continue;
                    }
                    let first_row = row_lo * r.stride + ky * r.dilation - r.pad_before;
                    if r.stride == 1 {
                        // Consecutive output rows read consecutive reduced rows: one block.
                        let n = (row_hi - row_lo) * c.output;
                        let src = &reduced[first_row * c.output..][..n];
                        max_strided(&mut out[row_lo * c.output..][..n], src, 1);
                        continue;
                    }
                    for oy in row_lo..row_hi {
                        let iy = first_row + (oy - row_lo) * r.stride;
                        let src = &reduced[iy * c.output..][..c.output];
                        max_strided(&mut out[oy * c.output..][..c.output], src, 1);
                    }
                }
            }
            Ok(())
        })
    }
}

/// `dst[i] = max(dst[i], src[i * stride])`.
fn max_strided(dst: &mut [f32], src: &[f32], stride: usize) {
    // A select, not a conditional store: LLVM vectorizes it.
    let larger = |d: &mut f32, s: f32| *d = if s > *d { s } else { *d };
    match stride {
        1 => dst.iter_mut().zip(src).for_each(|(d, &s)| larger(d, s)),
        2 => {
            let pairs = src.chunks_exact(2);
            let last = pairs.remainder().first().copied();
            let n = pairs.len();
            dst.iter_mut()
                .zip(pairs)
                .for_each(|(d, pair)| larger(d, pair[0]));
            if let (Some(d), Some(s)) = (dst.get_mut(n), last) {
                larger(d, s);
            }
        }
        _ => dst
            .iter_mut()
            .zip(src.iter().step_by(stride))
            .for_each(|(d, &s)| larger(d, s)),
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
        super::eval_f32(inputs, Some(&self.output_shape), |input, _, output| {
            self.compute(input, output)
        })
    }
}

impl TypedOp for FastMaxPool {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&*self.output_shape)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every window element by element: the definition.
    fn reference(op: &FastMaxPool, input: &[f32]) -> Vec<f32> {
        let (r, c) = (op.rows, op.cols);
        let planes = input.len() / (r.input * c.input);
        let mut out = vec![];
        for p in 0..planes {
            for oy in 0..r.output {
                for ox in 0..c.output {
                    let mut m = f32::MIN;
                    for ky in 0..r.kernel {
                        for kx in 0..c.kernel {
                            let iy =
                                (oy * r.stride + ky * r.dilation) as isize - r.pad_before as isize;
                            let ix =
                                (ox * c.stride + kx * c.dilation) as isize - c.pad_before as isize;
                            if (0..r.input as isize).contains(&iy)
                                && (0..c.input as isize).contains(&ix)
                            {
                                m = m.max(
                                    input[p * r.input * c.input
                                        + iy as usize * c.input
                                        + ix as usize],
                                );
                            }
                        }
                    }
                    out.push(m);
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_definition_over_strides_dilations_and_padding() {
        for (input, kernel, stride, dilation, pad) in [
            (9, 3, 1, 1, 1),
            (9, 3, 2, 1, 0),
            (10, 3, 2, 1, 1),
            (7, 2, 2, 1, 0),
            (8, 3, 3, 2, 2),
            (5, 5, 1, 1, 2),
            (4, 3, 2, 1, 2),
        ] {
            let output = (input + 2 * pad - (kernel - 1) * dilation - 1) / stride + 1;
            let axis = Axis {
                input,
                output,
                kernel,
                stride,
                dilation,
                pad_before: pad,
            };
            let cols = Axis {
                input: input + 1,
                output: (input + 1 + 2 * pad - (kernel - 1) * dilation - 1) / stride + 1,
                ..axis
            };
            let op = FastMaxPool {
                rows: axis,
                cols,
                output_shape: tvec![2, 3, axis.output, cols.output],
            };
            let data: Vec<f32> = (0..6 * input * (input + 1))
                .map(|i| ((i * 53 % 97) as f32) - 40.0)
                .collect();
            let mut out = vec![0f32; 6 * axis.output * cols.output];
            op.compute(&data, &mut out).unwrap();
            assert_eq!(
                out,
                reference(&op, &data),
                "input {input} kernel {kernel} stride {stride} dilation {dilation} pad {pad}"
            );
        }
    }
}
