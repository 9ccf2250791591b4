//! Depthwise 2-D convolution ([ONNX `Conv`] with one input and one output channel per group) for
//! f32 in channels-first layout, replacing tract's `DepthWise` in cpu plans. tract walks every
//! output point's taps through an offset table (ShuffleNet's 3×3 depthwise convolutions took 6.2
//! of its 23.6 ms per run; onnxruntime's convolutions, all of them, 4.5 ms). Here each
//! `(batch, channel)` plane is copied once with its padding made explicit, then every output
//! row gets each kernel row's taps summed in registers across the row: contiguous (or
//! constant-stride) multiply-adds that LLVM vectorizes, at AVX2's width where the CPU has it.
//! The window geometry is [`pool_2d`](super::pool_2d)'s.
//!
//! [ONNX `Conv`]: https://onnx.ai/onnx/operators/onnx__Conv.html

use super::pool_2d::{Axis, Window2d};
use crate::parallel::par_chunks_mut;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastDepthwiseConv {
    pub window: Window2d,
    pub channels: usize,
}

impl FastDepthwiseConv {
    /// The fast version of `conv` on an input of `shape`, when it applies: float (not quantized),
    /// channels first, two spatial axes, one input and one output channel per group, the kernel
    /// as ONNX lays it out (`[C, 1, kh, kw]`).
    pub fn for_op(conv: &Conv, shape: &[usize]) -> Option<FastDepthwiseConv> {
        if conv.q_params.is_some() {
            return None;
        }
        Self::for_geometry(conv, shape)
    }

    /// [`Self::for_op`]'s conditions but the first: the geometry, float or quantized.
    pub fn for_geometry(conv: &Conv, shape: &[usize]) -> Option<FastDepthwiseConv> {
        let channels = conv.input_channels();
        if conv.kernel_fmt != KernelFormat::OIHW
            || conv.group != channels
            || conv.output_channels() != channels
            || channels < 2
        {
            return None;
        }
        let window = Window2d::new(&conv.pool_spec, shape)?;
        let shape_channels = shape.len().checked_sub(3).map(|axis| shape[axis]);
        (shape_channels == Some(channels)).then_some(FastDepthwiseConv { window, channels })
    }

    /// `output` = the convolution of `input` (planes of `rows.input × cols.input`, channel
    /// `p % channels` for plane `p`) with `kernel` (`[channels, kh·kw]`), plus `bias` (one value,
    /// or one per channel).
    pub fn compute(
        &self,
        input: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let taps = r.kernel * c.kernel;
        let (in_plane, out_plane) = (r.input * c.input, r.output * c.output);
        if out_plane == 0 || output.is_empty() {
            return Ok(());
        }
        ensure!(
            kernel.len() == self.channels * taps,
            "depthwise kernel has {} values, expected {}",
            kernel.len(),
            self.channels * taps
        );
        ensure!(
            bias.len() == 1 || bias.len() == self.channels,
            "depthwise bias has {} values for {} channels",
            bias.len(),
            self.channels
        );
        ensure!(
            input.len() == output.len() / out_plane * in_plane,
            "depthwise input and output planes differ"
        );
        let padded = Padded::new(&self.window);
        self.for_each_plane(
            output,
            0,
            #[inline(always)]
            |plane, scratch, out| {
                let channel = plane % self.channels;
                convolve_plane(
                    &padded,
                    &input[plane * in_plane..][..in_plane],
                    |x| x,
                    &kernel[channel * taps..][..taps],
                    bias[if bias.len() == 1 { 0 } else { channel }],
                    scratch,
                    out,
                );
            },
        )
    }

    /// Runs `body(plane, scratch, output plane)` for every output plane (`(batch, channel)`, in
    /// order), on the pool, at the widest vectors. `scratch` holds what [`convolve_plane`] needs
    /// and `extra` more values after it.
    pub(super) fn for_each_plane<O: Send>(
        &self,
        output: &mut [O],
        extra: usize,
        body: impl Fn(usize, &mut [f32], &mut [O]) + Sync,
    ) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let (taps, out_plane) = (r.kernel * c.kernel, r.output * c.output);
        if out_plane == 0 {
            return Ok(());
        }
        let scratch_len = Padded::new(&self.window).scratch_len() + extra;
        par_chunks_mut(
            output,
            out_plane,
            output.len() * taps,
            |first_plane, planes| {
                let mut scratch = vec![0f32; scratch_len];
                crate::simd::widest(
                    #[inline(always)]
                    || {
                        for (p, out) in planes.chunks_mut(out_plane).enumerate() {
                            body(first_plane + p, &mut scratch, out);
                        }
                    },
                );
                Ok(())
            },
        )
    }
}

/// A plane copied with its padding made explicit (zeros), as wide and as high as the windows
/// read: then no tap needs a bounds check, and with unit strides a tap is one multiply-add over
/// the whole plane (see [`convolve_plane`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Padded {
    rows: Axis,
    cols: Axis,
    /// Rows and columns of the padded plane.
    height: usize,
    width: usize,
}

impl Padded {
    pub(super) fn new(window: &Window2d) -> Padded {
        let span = |a: &Axis| (a.output - 1) * a.stride + (a.kernel - 1) * a.dilation + 1;
        Padded {
            rows: window.rows,
            cols: window.cols,
            height: span(&window.rows),
            width: span(&window.cols),
        }
    }

    /// The padded plane and a zero tail: with unit strides the last tap's pass over the whole
    /// plane reads up to `(kw - 1) · dilation` values past its end.
    fn source_len(&self) -> usize {
        self.height * self.width + (self.cols.kernel - 1) * self.cols.dilation
    }

    /// The padded plane, then (unit strides) the output rows computed at the padded width.
    pub(super) fn scratch_len(&self) -> usize {
        self.source_len() + self.rows.output * self.width
    }

    fn unit_strides(&self) -> bool {
        self.rows.stride == 1 && self.cols.stride == 1
    }

    /// Writes `plane`, each element through `value`, into `padded` at its offset, zeros around
    /// it.
    #[inline(always)]
    fn fill<T: Copy>(&self, plane: &[T], value: impl Fn(T) -> f32, padded: &mut [f32]) {
        padded.fill(0.0);
        let (r, c) = (self.rows, self.cols);
        let rows = r.input.min(self.height.saturating_sub(r.pad_before));
        let cols = c.input.min(self.width.saturating_sub(c.pad_before));
        for y in 0..rows {
            let row = &mut padded[(y + r.pad_before) * self.width + c.pad_before..][..cols];
            for (dst, &x) in row.iter_mut().zip(&plane[y * c.input..][..cols]) {
                *dst = value(x);
            }
        }
    }
}

/// One plane, from its padded copy. Unit strides: each tap `(ky, kx)` adds `weight × the padded
/// plane shifted by the tap` to the output computed at the padded width, in one loop over the
/// whole plane (small planes — 7×7, 14×14 — would otherwise be many short rows); the columns
/// past the output width are dropped when copying out. Other strides: per output row, each tap
/// adds `weight × every stride-th value` of its padded input row. Input values go through
/// `value` on their way into the padded copy.
#[inline(always)]
pub(super) fn convolve_plane<T: Copy>(
    padded: &Padded,
    plane: &[T],
    value: impl Fn(T) -> f32,
    weights: &[f32],
    bias: f32,
    scratch: &mut [f32],
    out: &mut [f32],
) {
    let (r, c) = (padded.rows, padded.cols);
    let (source, wide) = scratch.split_at_mut(padded.source_len());
    padded.fill(plane, value, source);
    if padded.unit_strides() {
        let len = r.output * padded.width;
        let wide = &mut wide[..len];
        wide.fill(bias);
        for ky in 0..r.kernel {
            let taps = &weights[ky * c.kernel..][..c.kernel];
            add_kernel_row(
                wide,
                taps,
                &source[ky * r.dilation * padded.width..],
                1,
                c.dilation,
            );
        }
        for (out_row, wide_row) in out
            .chunks_exact_mut(c.output)
            .zip(wide.chunks_exact(padded.width))
        {
            out_row.copy_from_slice(&wide_row[..c.output]);
        }
        return;
    }
    out.fill(bias);
    for (oy, out_row) in out.chunks_exact_mut(c.output).enumerate() {
        for ky in 0..r.kernel {
            let row = &source[(oy * r.stride + ky * r.dilation) * padded.width..][..padded.width];
            let taps = &weights[ky * c.kernel..][..c.kernel];
            add_kernel_row(out_row, taps, row, c.stride, c.dilation);
        }
    }
}

/// One kernel row's taps: `dst[i] += Σ_k taps[k] · src[i · stride + k · dilation]`, the taps
/// added in order. The common widths and strides keep every tap's sum in a register across the
/// row (one load and store of `dst` per element, not one per tap), and vectorize.
#[inline(always)]
fn add_kernel_row(dst: &mut [f32], taps: &[f32], src: &[f32], stride: usize, dilation: usize) {
    match (taps, stride) {
        (&[a, b, c], 1) => add_taps::<3, 1>(dst, [a, b, c], src, dilation),
        (&[a, b, c], 2) => add_taps::<3, 2>(dst, [a, b, c], src, dilation),
        (&[a, b, c, d, e], 1) => add_taps::<5, 1>(dst, [a, b, c, d, e], src, dilation),
        (&[a, b, c, d, e], 2) => add_taps::<5, 2>(dst, [a, b, c, d, e], src, dilation),
        _ => {
            for (k, &weight) in taps.iter().enumerate() {
                let src = &src[k * dilation..];
                for (d, s) in dst.iter_mut().zip(src.iter().step_by(stride)) {
                    *d += weight * s;
                }
            }
        }
    }
}

/// [`add_kernel_row`] for `K` taps at stride `S`.
#[inline(always)]
fn add_taps<const K: usize, const S: usize>(
    dst: &mut [f32],
    taps: [f32; K],
    src: &[f32],
    dilation: usize,
) {
    let Some(last) = dst.len().checked_sub(1) else {
        return;
    };
    // Every index below is at most `last · S + (K - 1) · dilation`: this slice's last.
    let src = &src[..last * S + (K - 1) * dilation + 1];
    for (i, d) in dst.iter_mut().enumerate() {
        let mut sum = *d;
        for (k, &weight) in taps.iter().enumerate() {
            // SAFETY: i ≤ last and k < K, so the index is inside `src` (sliced above).
            sum += weight * unsafe { *src.get_unchecked(i * S + k * dilation) };
        }
        *d = sum;
    }
}

impl Op for FastDepthwiseConv {
    fn name(&self) -> StaticName {
        "FastDepthwiseConv".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastDepthwiseConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (input, kernel, bias) = args_3!(inputs);
        let mut output = Tensor::zero::<f32>(&self.window.output_shape)?;
        self.compute(
            input.try_as_plain_ram()?.as_slice::<f32>()?,
            kernel.try_as_plain_ram()?.as_slice::<f32>()?,
            bias.try_as_plain_ram()?.as_slice::<f32>()?,
            output.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?,
        )?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastDepthwiseConv {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(
            inputs.len() == 3,
            "a depthwise convolution takes input, kernel and bias"
        );
        Ok(tvec!(f32::fact(&*self.window.output_shape)))
    }

    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let taps = self.window.rows.kernel * self.window.cols.kernel;
        let points: usize = self.window.output_shape.iter().product();
        Ok(tvec!((
            Cost::FMA(f32::datum_type()),
            (points * taps).into()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::pool_2d::tests::{GEOMETRIES, data, taps_inside_window, window};
    use super::*;

    /// The definition, output point by output point: bias plus the taps inside the input.
    fn reference(op: &FastDepthwiseConv, input: &[f32], kernel: &[f32], bias: &[f32]) -> Vec<f32> {
        let (r, c) = (op.window.rows, op.window.cols);
        let (planes, taps) = (input.len() / (r.input * c.input), r.kernel * c.kernel);
        let mut out = vec![];
        for p in 0..planes {
            let ch = p % op.channels;
            for oy in 0..r.output {
                for ox in 0..c.output {
                    let start = bias[if bias.len() == 1 { 0 } else { ch }];
                    let inside = taps_inside_window(&op.window, input, p, (oy, ox));
                    out.push(inside.iter().fold(start, |acc, &(tap, value)| {
                        acc + kernel[ch * taps + tap] * value
                    }));
                }
            }
        }
        out
    }

    #[test]
    fn matches_the_definition_over_strides_dilations_and_padding() {
        // `window` makes 2 batches × 3 channels; one bias per channel, then one for all. Besides
        // the pools' geometries: unit stride with dilation, and a 1-wide kernel.
        let mut windows: Vec<Window2d> = GEOMETRIES
            .into_iter()
            .chain([
                (9, 3, 1, 2, 2),
                (6, 1, 1, 1, 0),
                (11, 5, 2, 1, 2),
                (12, 5, 1, 1, 2),
            ])
            .map(window)
            .collect();
        // Rows at stride 2, columns at 1 (PaddleOCR's convolutions over text lines).
        for geometry in [(8, 3, 2, 1, 1), (9, 5, 2, 1, 2)] {
            let mut mixed = window(geometry);
            let unit = window((geometry.0 + 1, geometry.1, 1, 1, geometry.4));
            mixed.cols = unit.cols;
            mixed.output_shape[3] = unit.cols.output;
            windows.push(mixed);
        }
        for window in windows {
            let geometry = (window.rows, window.cols);
            let op = FastDepthwiseConv {
                window,
                channels: 3,
            };
            let input = data(&op.window);
            let taps = op.window.rows.kernel * op.window.cols.kernel;
            let kernel: Vec<f32> = (0..3 * taps)
                .map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0)
                .collect();
            for bias in [vec![0.5, -1.0, 2.0], vec![0.25]] {
                let mut out = vec![f32::NAN; op.window.output_shape.iter().product()];
                op.compute(&input, &kernel, &bias, &mut out).unwrap();
                let expected = reference(&op, &input, &kernel, &bias);
                for (i, (got, want)) in out.iter().zip(&expected).enumerate() {
                    assert!(
                        (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                        "{geometry:?} bias {bias:?}: element {i} is {got}, expected {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_kernel_or_bias_of_the_wrong_size_is_an_error() {
        let op = FastDepthwiseConv {
            window: window(GEOMETRIES[0]),
            channels: 3,
        };
        let input = data(&op.window);
        let mut out = vec![0.0; op.window.output_shape.iter().product()];
        assert!(op.compute(&input, &[0.0; 26], &[0.0], &mut out).is_err());
        assert!(op.compute(&input, &[0.0; 27], &[0.0; 2], &mut out).is_err());
    }
}
