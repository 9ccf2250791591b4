//! 2-D transposed convolution ([ONNX `ConvTranspose`]) for f32, channels first, on the `gemm`
//! crate's kernels, replacing tract's `Deconv` in cpu plans.
//!
//! tract computes it as one product of the whole kernel by the input, packed again on every run,
//! then a `DeconvSum` that adds the product's rows into the output: ppocrv4_det's two 2×2,
//! stride-2 upsampling layers (24 channels at 160×160 and 320×320) took ~12 ms of its ~120.
//! Here each task (image, group, block of output channels, tile of output rows) computes one
//! product of the kernel's rows — one per output channel and tap, laid out once in the plan — by
//! the input rows whose taps land on its tile, read as they lie in memory, then adds each row in
//! where its tap lands. A task writes the bias on its own output rows first and nobody else
//! writes them.
//!
//! [ONNX `ConvTranspose`]: https://onnx.ai/onnx/operators/onnx__ConvTranspose.html

use super::gemm_common::{self as gemm, SharedOutput};
use super::pool_2d::taps_inside_range;
use crate::parallel;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::{Deconv, KernelFormat};
use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

/// Floats of one task's product at most (1 MiB): it stays in cache while its rows are added in.
const TASK_FLOATS: usize = 1 << 18;

/// One spatial axis: `input` positions spread over `output` positions, position `i`'s tap `k`
/// landing on `i · stride + k · dilation - pad_before`.
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
    /// Input positions `lo..hi` whose tap `k` lands inside the output.
    fn valid(&self, k: usize) -> (usize, usize) {
        let geometry = (self.stride, self.dilation, self.pad_before);
        taps_inside_range(self.input, self.output, geometry, k)
    }

    /// Where tap `k` of input position `i` lands (inside the output when `i` is in
    /// [`Axis::valid`]).
    fn landing(&self, i: usize, k: usize) -> usize {
        i * self.stride + k * self.dilation - self.pad_before
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastConvTranspose {
    pub rows: Axis,
    pub cols: Axis,
    pub in_channels: usize,
    pub out_channels: usize,
    pub group: usize,
    /// `[N, out_channels, rows.output, cols.output]`.
    pub output_shape: TVec<usize>,
    /// The kernel input is laid out by row ([`FastConvTranspose::kernel_by_row`]), as the plan
    /// rearranged a constant kernel once; otherwise it is tract's `[out_channels, C/group, kh, kw]`.
    pub kernel_by_row: bool,
}

impl FastConvTranspose {
    /// The fast version of `deconv` on an input of `shape` with a bias of `bias_shape`, when it
    /// applies: channels first with a batch axis, two spatial axes, tract's OIHW kernel, a bias
    /// that is one value or one per output channel.
    pub fn for_op(
        deconv: &Deconv,
        shape: &[usize],
        bias_shape: &[usize],
    ) -> Option<FastConvTranspose> {
        let spec = &deconv.pool_spec;
        let (in_channels, out_channels, group) =
            (spec.input_channels, spec.output_channels, deconv.group);
        let bias_len: usize = bias_shape.iter().product();
        if spec.data_format != DataFormat::NCHW
            || deconv.kernel_format != KernelFormat::OIHW
            || spec.kernel_shape.len() != 2
            || shape.len() != 4
            || shape[1] != in_channels
            || shape[2] == 0
            || shape[3] == 0
            || group == 0
            || in_channels % group != 0
            || out_channels % group != 0
            || bias_shape.len() > 1
            || (bias_len != 1 && bias_len != out_channels)
        {
            return None;
        }
        let (strides, dilations) = (spec.strides(), spec.dilations());
        let computed = spec
            .padding
            .compute_for_deconv(
                &shape[2..],
                &spec.kernel_shape,
                &dilations,
                &strides,
                &deconv.adjustments,
            )
            .ok()?;
        let axis = |i: usize| Axis {
            input: shape[2 + i],
            output: computed[i].deconvoluted,
            kernel: spec.kernel_shape[i],
            stride: strides[i].max(1),
            dilation: dilations[i].max(1),
            pad_before: computed[i].pad_before,
        };
        let (rows, cols) = (axis(0), axis(1));
        if rows.kernel == 0 || cols.kernel == 0 {
            return None;
        }
        Some(FastConvTranspose {
            rows,
            cols,
            in_channels,
            out_channels,
            group,
            output_shape: tvec![shape[0], out_channels, rows.output, cols.output],
            kernel_by_row: false,
        })
    }

    fn taps(&self) -> usize {
        self.rows.kernel * self.cols.kernel
    }

    /// tract's `[out_channels, C/group, kh, kw]` kernel as the products read it: for each output
    /// channel, each tap `(ky, kx)`, the weights of the group's input channels in a row.
    pub fn kernel_by_row(&self, kernel: &[f32]) -> Vec<f32> {
        let (taps, group_in) = (self.taps(), self.in_channels / self.group);
        let mut rows = vec![0f32; kernel.len()];
        for (o, weights) in kernel.chunks_exact(group_in * taps).enumerate() {
            for (i, by_tap) in weights.chunks_exact(taps).enumerate() {
                for (tap, w) in by_tap.iter().enumerate() {
                    rows[(o * taps + tap) * group_in + i] = *w;
                }
            }
        }
        rows
    }

    /// Writes every element of `output`: the bias, plus every input value times the weights of
    /// the taps that land there.
    pub fn compute(
        &self,
        input: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let (r, c) = (self.rows, self.cols);
        let (group_in, group_out) = (
            self.in_channels / self.group,
            self.out_channels / self.group,
        );
        let (in_plane, out_plane, taps) = (r.input * c.input, r.output * c.output, self.taps());
        let batch = self.output_shape[0];
        ensure!(
            input.len() == batch * self.in_channels * in_plane,
            "transposed convolution: input of {} values, expected {}",
            input.len(),
            batch * self.in_channels * in_plane
        );
        ensure!(
            kernel.len() == self.out_channels * group_in * taps,
            "transposed convolution: kernel of {} values, expected {}",
            kernel.len(),
            self.out_channels * group_in * taps
        );
        ensure!(
            bias.len() == 1 || bias.len() == self.out_channels,
            "transposed convolution: bias of {} values",
            bias.len()
        );
        ensure!(
            output.len() == batch * self.out_channels * out_plane,
            "transposed convolution: output of {} values",
            output.len()
        );
        if output.is_empty() {
            return Ok(());
        }
        // A kernel that is not a constant of the plan is laid out here, on every run.
        let laid_out;
        let by_row: &[f32] = if self.kernel_by_row {
            kernel
        } else {
            laid_out = self.kernel_by_row(kernel);
            &laid_out
        };
        // Tasks: images × groups × blocks of output channels × tiles of output rows. A tile
        // computes the products of the input rows whose taps land on its output rows (with
        // overlapping taps, the rows at a tile's edges are computed by both neighbours) and adds
        // in the taps that land on its own rows.
        let threads = parallel::threads();
        let (channels_per_block, channel_blocks) = parallel::blocks(group_out, threads, 16);
        let per_input_row = channels_per_block * taps * c.input;
        let input_rows_per_tile = (TASK_FLOATS / per_input_row.max(1)).clamp(1, r.input.max(1));
        let tile_rows = input_rows_per_tile * r.stride;
        let tiles = r.output.div_ceil(tile_rows).max(1);
        let halo = ((r.kernel - 1) * r.dilation).div_ceil(r.stride);
        let scratch_len = per_input_row * (input_rows_per_tile + halo + 1);
        let tasks = batch * self.group * channel_blocks * tiles;
        let out = SharedOutput::new(output);
        parallel::for_each(tasks, scratch_len, |scratch, task| {
            let (plane_group, rest) = (
                task / (channel_blocks * tiles),
                task % (channel_blocks * tiles),
            );
            let (b, g) = (plane_group / self.group, plane_group % self.group);
            let (block, tile) = (rest / tiles, rest % tiles);
            let first_channel = block * channels_per_block;
            let channels = channels_per_block.min(group_out - first_channel);
            let (own_lo, own_hi) = (tile * tile_rows, ((tile + 1) * tile_rows).min(r.output));
            let first_out_channel = g * group_out + first_channel;
            for channel in first_out_channel..first_out_channel + channels {
                let value = bias[if bias.len() == 1 { 0 } else { channel }];
                let plane = (b * self.out_channels + channel) * out_plane;
                // SAFETY: rows `own_lo..own_hi` of this output plane: inside `output` (sizes
                // checked above), written by this task alone (tiles own disjoint rows, tasks
                // differ in image, group, block of channels or tile).
                let owned = unsafe {
                    std::slice::from_raw_parts_mut(
                        out.at(plane + own_lo * c.output),
                        (own_hi - own_lo) * c.output,
                    )
                };
                owned.fill(value);
            }
            // Input rows with a tap landing in `own_lo..own_hi`.
            let reach = (r.kernel - 1) * r.dilation;
            let first_row = (own_lo + r.pad_before)
                .saturating_sub(reach)
                .div_ceil(r.stride);
            let end_row = ((own_hi - 1 + r.pad_before) / r.stride + 1)
                .min(r.input)
                .max(first_row);
            let input_rows = end_row - first_row;
            ensure!(
                input_rows <= input_rows_per_tile + halo + 1,
                "transposed convolution: a tile reads {input_rows} input rows"
            );
            if input_rows == 0 || channels == 0 {
                return Ok(());
            }
            // The product: rows (output channel, tap) × positions of those input rows.
            let positions = input_rows * c.input;
            let products = &mut scratch[..channels * taps * positions];
            let weights =
                &by_row[first_out_channel * taps * group_in..][..channels * taps * group_in];
            let tile_input = &input
                [(b * self.in_channels + g * group_in) * in_plane + first_row * c.input..]
                [..(group_in - 1) * in_plane + positions];
            // SAFETY: `weights` holds `channels · taps` rows of `group_in` values; `tile_input`
            // `group_in` rows of `positions` values `in_plane` apart (sliced above); `products`
            // is this task's own scratch of `channels · taps × positions`.
            unsafe {
                gemm::product(
                    (channels * taps, positions, group_in),
                    products.as_mut_ptr(),
                    (1, positions),
                    weights.as_ptr(),
                    (1, group_in),
                    tile_input.as_ptr(),
                    (1, in_plane),
                    false,
                );
            }
            for (row, values) in products.chunks_exact(positions).enumerate() {
                let (channel, tap) = (first_out_channel + row / taps, row % taps);
                let (ky, kx) = (tap / c.kernel, tap % c.kernel);
                let (x_lo, x_hi) = c.valid(kx);
                let (y_lo, y_hi) = r.valid(ky);
                if x_lo >= x_hi {
                    continue;
                }
                let plane = (b * self.out_channels + channel) * out_plane;
                let first = c.landing(x_lo, kx);
                for iy in y_lo.max(first_row)..y_hi.min(first_row + input_rows) {
                    let oy = r.landing(iy, ky);
                    if !(own_lo..own_hi).contains(&oy) {
                        continue;
                    }
                    let source = &values[(iy - first_row) * c.input..][x_lo..x_hi];
                    // SAFETY: output row `oy` of this plane, from column `first`, `stride`
                    // apart, for `x_hi - x_lo` inputs: inside the row (`valid`), and `oy` is a
                    // row this task owns.
                    unsafe {
                        let row = out.at(plane + oy * c.output + first);
                        if c.stride == 1 {
                            let row = std::slice::from_raw_parts_mut(row, source.len());
                            row.iter_mut().zip(source).for_each(|(o, v)| *o += v);
                        } else {
                            for (i, v) in source.iter().enumerate() {
                                *row.add(i * c.stride) += v;
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }
}

impl Op for FastConvTranspose {
    fn name(&self) -> StaticName {
        "FastConvTranspose".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "group {}, {}×{} stride {}×{}",
            self.group, self.rows.kernel, self.cols.kernel, self.rows.stride, self.cols.stride
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for FastConvTranspose {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        gemm::eval_input_kernel_bias(
            inputs,
            &self.output_shape,
            "a transposed convolution",
            |i, k, b, o| self.compute(i, k, b, o),
        )
    }
}

impl TypedOp for FastConvTranspose {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        gemm::input_kernel_bias_facts(inputs, &self.output_shape, "a transposed convolution")
    }

    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let inputs = self.output_shape[0] * self.in_channels * self.rows.input * self.cols.input;
        let fma = inputs * self.out_channels / self.group * self.taps();
        Ok(tvec!((Cost::FMA(f32::datum_type()), fma.into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_linalg::multithread::{Executor, multithread_tract_scope};

    /// The definition: every input value times each tap's weight, added where the tap lands.
    fn reference(op: &FastConvTranspose, input: &[f32], kernel: &[f32], bias: &[f32]) -> Vec<f32> {
        let (r, c) = (op.rows, op.cols);
        let (group_in, group_out) = (op.in_channels / op.group, op.out_channels / op.group);
        let batch = op.output_shape[0];
        let mut out = vec![0f32; op.output_shape.iter().product()];
        for b in 0..batch {
            for o in 0..op.out_channels {
                let plane = &mut out[(b * op.out_channels + o) * r.output * c.output..]
                    [..r.output * c.output];
                plane.fill(bias[if bias.len() == 1 { 0 } else { o }]);
                let g = o / group_out;
                for i in 0..group_in {
                    let channel = b * op.in_channels + g * group_in + i;
                    for iy in 0..r.input {
                        for ix in 0..c.input {
                            let x = input[(channel * r.input + iy) * c.input + ix];
                            for ky in 0..r.kernel {
                                for kx in 0..c.kernel {
                                    let oy = (iy * r.stride + ky * r.dilation) as isize
                                        - r.pad_before as isize;
                                    let ox = (ix * c.stride + kx * c.dilation) as isize
                                        - c.pad_before as isize;
                                    if oy < 0 || ox < 0 {
                                        continue;
                                    }
                                    let (oy, ox) = (oy as usize, ox as usize);
                                    if oy >= r.output || ox >= c.output {
                                        continue;
                                    }
                                    let w = kernel
                                        [((o * group_in + i) * r.kernel + ky) * c.kernel + kx];
                                    plane[oy * c.output + ox] += x * w;
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    fn axis(
        input: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        pads: (usize, usize),
        adjustment: usize,
    ) -> Axis {
        Axis {
            input,
            output: (input - 1) * stride + (kernel - 1) * dilation + 1 + adjustment
                - pads.0
                - pads.1,
            kernel,
            stride,
            dilation,
            pad_before: pads.0,
        }
    }

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104729) % 2003) as f32 / 1001.5) - 1.0)
            .collect()
    }

    #[test]
    fn matches_the_definition_over_geometries_groups_and_threads() {
        // (rows, cols, in, out, group): non-overlapping 2×2/2 (ppocrv4_det), overlapping 3×3/2
        // with padding and an output adjustment, dilated 3×2/1, stride 3 with gaps between the
        // taps, grouped, one output channel, a 1×1.
        let cases = [
            (
                axis(9, 2, 2, 1, (0, 0), 0),
                axis(7, 2, 2, 1, (0, 0), 0),
                5,
                4,
                1,
            ),
            (
                axis(6, 3, 2, 1, (1, 1), 1),
                axis(5, 3, 2, 1, (1, 0), 0),
                3,
                6,
                1,
            ),
            (
                axis(5, 3, 1, 2, (2, 1), 0),
                axis(8, 2, 1, 1, (0, 1), 0),
                4,
                2,
                2,
            ),
            (
                axis(4, 2, 3, 1, (0, 0), 2),
                axis(3, 2, 3, 1, (1, 0), 0),
                2,
                3,
                1,
            ),
            (
                axis(7, 2, 2, 1, (0, 0), 0),
                axis(6, 2, 2, 1, (0, 0), 0),
                6,
                1,
                1,
            ),
            (
                axis(5, 1, 1, 1, (0, 0), 0),
                axis(5, 1, 1, 1, (0, 0), 0),
                3,
                40,
                1,
            ),
        ];
        for (rows, cols, in_channels, out_channels, group) in cases {
            let batch = 2;
            let op = FastConvTranspose {
                rows,
                cols,
                in_channels,
                out_channels,
                group,
                output_shape: tvec![batch, out_channels, rows.output, cols.output],
                kernel_by_row: false,
            };
            let input = values(batch * in_channels * rows.input * cols.input, 1);
            let kernel = values(
                out_channels * in_channels / group * rows.kernel * cols.kernel,
                2,
            );
            for bias in [vec![0.25], values(out_channels, 3)] {
                let expected = reference(&op, &input, &kernel, &bias);
                for threads in [1, 2] {
                    let executor = match threads {
                        1 => Executor::SingleThread,
                        n => Executor::multithread(n),
                    };
                    for by_row in [false, true] {
                        let op = FastConvTranspose {
                            kernel_by_row: by_row,
                            ..op.clone()
                        };
                        let kernel = if by_row {
                            op.kernel_by_row(&kernel)
                        } else {
                            kernel.clone()
                        };
                        let mut out = vec![f32::NAN; expected.len()];
                        multithread_tract_scope(executor.clone(), || {
                            op.compute(&input, &kernel, &bias, &mut out)
                        })
                        .unwrap();
                        for (got, want) in out.iter().zip(&expected) {
                            assert!(
                                (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                                "{op:?} bias {} threads {threads}: {got} vs {want}",
                                bias.len()
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn operands_of_the_wrong_size_are_an_error() {
        let rows = axis(3, 2, 2, 1, (0, 0), 0);
        let op = FastConvTranspose {
            rows,
            cols: rows,
            in_channels: 2,
            out_channels: 3,
            group: 1,
            output_shape: tvec![1, 3, rows.output, rows.output],
            kernel_by_row: false,
        };
        let (input, kernel, bias) = (vec![0f32; 18], vec![0f32; 24], vec![0f32; 3]);
        let mut out = vec![0f32; 3 * 36];
        assert!(op.compute(&input, &kernel, &bias, &mut out).is_ok());
        assert!(op.compute(&input[..17], &kernel, &bias, &mut out).is_err());
        assert!(op.compute(&input, &kernel[..23], &bias, &mut out).is_err());
        assert!(op.compute(&input, &kernel, &bias[..2], &mut out).is_err());
        assert!(op.compute(&input, &kernel, &bias, &mut out[..10]).is_err());
    }
}
