//! The window geometry and the two-pass reduction shared by Tessera's 2-D pools (MaxPool,
//! AveragePool) on f32 channels-first planes.
//!
//! tract visits each output window through an offset table, one element at a time (and its
//! average pool walks channels innermost, a cache miss per element: Inception-v2's pools took 14
//! of its ~100 ms per run). Here each `(batch, channel)` plane is reduced in two passes of
//! contiguous, vectorizable loops: first every output row's window rows are folded into one
//! row of the input's width, then that row is folded across the window's columns.

use crate::parallel::par_chunks_mut;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::{PaddingSpec, PoolSpec};
use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

/// The geometry of one spatial axis: output size, stride, dilation, padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Axis {
    pub input: usize,
    pub output: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    pub pad_before: usize,
    /// Where the padded input ends, when a window may run past it (ONNX `ceil_mode` with explicit
    /// pads): taps beyond it do not count in an average that includes padding.
    pub padded_end: Option<usize>,
}

impl Axis {
    /// Output positions `lo..hi` whose tap `k` reads inside the input.
    pub fn valid(&self, k: usize) -> (usize, usize) {
        taps_inside_range(
            self.output,
            self.input,
            (self.stride, self.dilation, self.pad_before),
            k,
        )
    }

    /// The input index tap `k` of output `lo` reads (`lo` from [`Axis::valid`], so inside).
    fn first_input(&self, lo: usize, k: usize) -> usize {
        lo * self.stride + k * self.dilation - self.pad_before
    }

    /// The padded extent the windows of a row read: up to the last output's last tap.
    pub fn reach(&self) -> usize {
        (self.output.max(1) - 1) * self.stride + (self.kernel - 1) * self.dilation + 1
    }

    /// The width of a row padded on both sides so that every window lies inside it.
    pub fn padded_width(&self) -> usize {
        self.reach().max(self.pad_before + self.input)
    }

    /// For each output position, how many taps read inside the input.
    pub fn taps_inside(&self) -> Vec<usize> {
        let mut count = vec![0; self.output];
        for k in 0..self.kernel {
            let (lo, hi) = self.valid(k);
            count[lo..hi].iter_mut().for_each(|c| *c += 1);
        }
        count
    }

    /// For each output position, how many taps read inside the padded input: the whole kernel,
    /// except for windows that run past a `ceil_mode` end.
    pub fn taps_inside_padding(&self) -> Vec<usize> {
        (0..self.output)
            .map(|o| match self.padded_end {
                None => self.kernel,
                Some(end) => (0..self.kernel)
                    .filter(|k| o * self.stride + k * self.dilation < end)
                    .count(),
            })
            .collect()
    }
}

/// Positions `lo..hi` of `0..count` whose tap `k`, at `p · stride + k · dilation - pad_before`,
/// falls inside `0..limit`: the outputs whose window's tap reads inside the input (pools,
/// convolutions), or the inputs whose tap lands inside the output (transposed convolutions).
pub fn taps_inside_range(
    count: usize,
    limit: usize,
    (stride, dilation, pad_before): (usize, usize, usize),
    k: usize,
) -> (usize, usize) {
    let offset = (k * dilation) as isize - pad_before as isize;
    let lo = if offset >= 0 {
        0
    } else {
        ((-offset) as usize).div_ceil(stride)
    };
    let last = limit as isize - 1 - offset;
    let hi = if last < 0 {
        0
    } else {
        (last as usize / stride + 1).min(count)
    };
    (lo.min(hi), hi)
}

/// A 2-D pooling window over channels-first planes of a concrete shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Window2d {
    pub rows: Axis,
    pub cols: Axis,
    /// Output shape: the input's with the two spatial axes pooled.
    pub output_shape: TVec<usize>,
}

/// How a pool folds values: max or sum.
pub trait Fold {
    /// The value of an empty window.
    const EMPTY: f32;
    /// Folds one value into the accumulator (a select or an add: LLVM vectorizes both).
    fn op(acc: f32, value: f32) -> f32;
}

impl Window2d {
    /// The window of `spec` on an input of `shape`, when it applies: channels first, two spatial
    /// axes, no batch-less layout surprises.
    pub fn new(spec: &PoolSpec, shape: &[usize]) -> Option<Window2d> {
        if !matches!(spec.data_format, DataFormat::NCHW | DataFormat::CHW)
            || spec.kernel_shape.len() != 2
        {
            return None;
        }
        let spatial = &shape[shape.len().checked_sub(2)?..];
        let computed = spec.computed_padding(spatial);
        let (strides, dilations) = (spec.strides(), spec.dilations());
        let ceil_mode_after = match &spec.padding {
            PaddingSpec::ExplicitOnnxPool(_, after, true) => Some(after.clone()),
            _ => None,
        };
        let axis = |i: usize| Axis {
            input: spatial[i],
            output: computed[i].convoluted,
            kernel: spec.kernel_shape[i],
            stride: strides[i].max(1),
            dilation: dilations[i].max(1),
            pad_before: computed[i].pad_before,
            padded_end: ceil_mode_after
                .as_ref()
                .map(|after| computed[i].pad_before + spatial[i] + after[i]),
        };
        let mut output_shape: TVec<usize> = shape.into();
        let rank = output_shape.len();
        output_shape[rank - 2] = computed[0].convoluted;
        output_shape[rank - 1] = computed[1].convoluted;
        Some(Window2d {
            rows: axis(0),
            cols: axis(1),
            output_shape,
        })
    }

    /// Folds every window of `input` (planes of `rows.input × cols.input`) into `output`, one
    /// plane per row of tract's thread pool; then `finish(plane_output)` per plane.
    pub fn reduce<F: Fold>(
        &self,
        input: &[f32],
        output: &mut [f32],
        finish: impl Fn(&mut [f32]) + Sync,
    ) -> TractResult<()> {
        let (r, c) = (self.rows, self.cols);
        let (in_plane, out_plane) = (r.input * c.input, r.output * c.output);
        if out_plane == 0 || output.is_empty() {
            return Ok(());
        }
        ensure!(
            input.len() / in_plane.max(1) == output.len() / out_plane,
            "pool planes differ"
        );
        let work = input.len() * r.kernel * c.kernel / (r.stride * c.stride).max(1);
        par_chunks_mut(output, out_plane, work, |first_plane, planes| {
            crate::simd::widest(
                #[inline(always)]
                || {
                    // Narrow planes are folded several at a time, each padded whole (their
                    // padding stays EMPTY from group to group); the others one at a time, their
                    // rows folded into `rows.output × cols.input`.
                    let narrow = c.padded_width() <= NARROW_ROWS;
                    let padded_plane = r.padded_width() * c.padded_width();
                    let group = if narrow {
                        (GROUP_VALUES / padded_plane.max(1))
                            .min(planes.len() / out_plane)
                            .max(1)
                    } else {
                        1
                    };
                    // The column pass's rows, then its folds (see `fold_columns`).
                    let mut column_pass = if narrow {
                        vec![F::EMPTY; 2 * group * padded_plane]
                    } else {
                        vec![F::EMPTY; 2 * r.output * c.padded_width()]
                    };
                    let mut plane_scratch = if narrow {
                        vec![F::EMPTY; group * padded_plane]
                    } else {
                        vec![F::EMPTY; r.output * c.input]
                    };
                    for (g, outs) in planes.chunks_mut(group * out_plane).enumerate() {
                        let first = first_plane + g * group;
                        let count = outs.len() / out_plane;
                        let inputs = &input[first * in_plane..][..count * in_plane];
                        if narrow {
                            fold_padded_planes::<F>(
                                self,
                                inputs,
                                &mut plane_scratch,
                                &mut column_pass,
                                outs,
                            );
                        } else {
                            fold_plane::<F>(
                                self,
                                inputs,
                                &mut plane_scratch,
                                &mut column_pass,
                                outs,
                            );
                        }
                        outs.chunks_mut(out_plane).for_each(&finish);
                    }
                },
            );
            Ok(())
        })
    }
}

/// Rows at most this wide (padded) are folded by [`fold_padded_planes`]: their windows at the
/// borders, one tap at a time, cost more than padding the whole plane (Inception's 14×14 and
/// 7×7 pools).
const NARROW_ROWS: usize = 32;

/// Values of padded planes [`fold_padded_planes`] folds at a time (8 KiB): with its two passes'
/// outputs, the group stays in L1.
const GROUP_VALUES: usize = 2048;

/// Folds the windows of `planes` (one or more planes, one after the other) into `out`, read in
/// place when no window needs padding, else after copying each inside its plane of `padded`
/// (`rows.padded_width() × cols.padded_width()` a plane, [`Fold::EMPTY`] around it), so that every window lies inside its padded plane: both
/// passes then run over all the padded planes read as one long row, with no border case and no
/// loop per row or plane (Inception's 576 planes of 14×14, pooled a plane and an output row at a
/// time, were 12× onnxruntime's time); `column_pass` (twice the padded planes' size) holds every
/// padded row's fold over the window's rows, then their folds across columns, and output row
/// `oy` takes padded row `oy · stride`'s. Folds whose window spans two rows or planes are never
/// read.
#[inline(always)]
fn fold_padded_planes<F: Fold>(
    window: &Window2d,
    planes: &[f32],
    padded: &mut [f32],
    column_pass: &mut [f32],
    out: &mut [f32],
) {
    let (r, c) = (window.rows, window.cols);
    let width = c.padded_width();
    let padded_plane = r.padded_width() * width;
    let count = out.len() / (r.output * c.output).max(1);
    // Planes whose windows need no padding (3×3 stride-2 pools of 27 or 13 rows) are read in
    // place; copying them first was a quarter of such a pool's time.
    let unpadded =
        r.pad_before == 0 && c.pad_before == 0 && r.padded_width() == r.input && width == c.input;
    let padded: &[f32] = if unpadded {
        &planes[..count * padded_plane]
    } else {
        let padded = &mut padded[..count * padded_plane];
        for (plane, padded) in planes
            .chunks_exact(r.input * c.input)
            .zip(padded.chunks_exact_mut(padded_plane))
        {
            for (y, row) in plane.chunks_exact(c.input).enumerate() {
                crate::simd::copy_short(
                    &mut padded[(r.pad_before + y) * width + c.pad_before..][..c.input],
                    row,
                );
            }
        }
        padded
    };
    // Every window ends inside its plane (`padded_width` ≥ `reach` on both axes), so past the
    // last plane's last window nothing is read.
    let (row_span, column_span) = (
        (r.kernel - 1) * r.dilation * width,
        (c.kernel - 1) * c.dilation,
    );
    let (folded, folds) = column_pass.split_at_mut(column_pass.len() / 2);
    let folded = &mut folded[..padded.len().saturating_sub(row_span)];
    let row_taps = Taps {
        first: 0,
        step: r.dilation * width,
        count: r.kernel,
    };
    fold_rows::<F>(folded, padded, row_taps);
    let folds = &mut folds[..folded.len().saturating_sub(column_span)];
    let column_taps = Taps {
        first: 0,
        step: c.dilation,
        count: c.kernel,
    };
    fold_rows::<F>(folds, folded, column_taps);
    for (p, out) in out.chunks_exact_mut(r.output * c.output).enumerate() {
        for (oy, out_row) in out.chunks_exact_mut(c.output).enumerate() {
            take_strided(
                out_row,
                &folds[p * padded_plane + oy * r.stride * width..],
                c.stride,
            );
        }
    }
}

/// Folds one plane's windows into `out`, through `folded_rows` (`rows.output × cols.input`) and
/// `column_pass` (twice `rows.output × cols.padded_width()`).
#[inline(always)]
fn fold_plane<F: Fold>(
    window: &Window2d,
    plane: &[f32],
    folded_rows: &mut [f32],
    column_pass: &mut [f32],
    out: &mut [f32],
) {
    let (r, c) = (window.rows, window.cols);
    // Output rows whose taps all read inside the input.
    let ylo = (0..r.kernel).map(|ky| r.valid(ky).0).max().unwrap_or(0);
    let yhi = (0..r.kernel)
        .map(|ky| r.valid(ky).1)
        .min()
        .unwrap_or(0)
        .max(ylo);
    let tap_step = r.dilation * c.input;
    if r.stride == 1 && ylo < yhi {
        // Each tap's rows of the interior are one block: one pass over all of them.
        let n = (yhi - ylo) * c.input;
        let first = r.first_input(ylo, 0) * c.input;
        let taps = Taps {
            first,
            step: tap_step,
            count: r.kernel,
        };
        fold_rows::<F>(&mut folded_rows[ylo * c.input..][..n], plane, taps);
    }
    for (oy, dst) in folded_rows.chunks_exact_mut(c.input).enumerate() {
        if r.stride > 1 || !(ylo..yhi).contains(&oy) {
            // The taps of this row that read inside the input: `ky` in `k0..k1`.
            let inside = |ky: &usize| r.valid(*ky).0 <= oy && oy < r.valid(*ky).1;
            let k0 = (0..r.kernel).find(inside).unwrap_or(r.kernel);
            let k1 = (k0..r.kernel).find(|ky| !inside(ky)).unwrap_or(r.kernel);
            let first = if k0 < k1 {
                r.first_input(oy, k0) * c.input
            } else {
                0
            };
            let taps = Taps {
                first,
                step: tap_step,
                count: k1 - k0,
            };
            fold_rows::<F>(dst, plane, taps);
        }
    }
    fold_columns::<F>(&c, folded_rows, column_pass, out);
}

/// The values a [`fold_rows`] folds into each output: `src[first + j · step + i]` for `j` in
/// `0..count` (a window's rows, or its columns).
#[derive(Clone, Copy)]
struct Taps {
    first: usize,
    step: usize,
    count: usize,
}

const LANES: usize = 16;

/// `dst[i]` = fold over the taps of `src[tap + i]`, out of place (folding into memory one tap at
/// a time spent short rows in loop overhead, and LLVM made a max into a masked store): 2 or 3
/// taps in one loop over the values, more one vector of each tap at a time.
#[inline(always)]
fn fold_rows<F: Fold>(dst: &mut [f32], src: &[f32], taps: Taps) {
    let len = dst.len();
    if taps.count == 0 {
        return dst.fill(F::EMPTY);
    }
    // Every tap's values lie in `src` (the one bounds check `fold_lanes` relies on).
    let src = &src[..taps.first + (taps.count - 1) * taps.step + len];
    if len < LANES {
        for (i, d) in dst.iter_mut().enumerate() {
            *d = (0..taps.count)
                .map(|j| src[taps.first + j * taps.step + i])
                .fold(F::EMPTY, F::op);
        }
        return;
    }
    // Windows of 2 or 3 taps (most pools) as one vectorized loop over the values: looping over
    // so few taps inside each vector spent the time on the loop, and a fixed count unrolled
    // there made LLVM vectorize across vectors with scatters. Folded from `EMPTY` like the
    // others, so that NaN and -inf give the same values. Two arms written out: one generic over
    // an array of N taps indexed per value ran slower (128 × 55 × 55 pool 0.164 -> 0.215 ms).
    // The whole vectors first, then the last values as one vector ending at the end (it may
    // overlap the one before): a row of 111 left 15 values to LLVM's scalar loop, which took
    // longer than the rest of the row.
    let whole = len - len % LANES;
    let tap = |j: usize| &src[taps.first + j * taps.step..][..whole];
    match taps.count {
        2 => {
            for ((d, &a), &b) in dst[..whole].iter_mut().zip(tap(0)).zip(tap(1)) {
                *d = F::op(F::op(F::EMPTY, a), b);
            }
        }
        3 => {
            for (((d, &a), &b), &c) in dst[..whole].iter_mut().zip(tap(0)).zip(tap(1)).zip(tap(2)) {
                *d = F::op(F::op(F::op(F::EMPTY, a), b), c);
            }
        }
        _ => {
            for at in (0..whole).step_by(LANES) {
                fold_lanes::<F>(&mut dst[at..][..LANES], src, taps, at);
            }
        }
    }
    if whole < len {
        fold_lanes::<F>(&mut dst[len - LANES..], src, taps, len - LANES);
    }
}

/// One vector of [`fold_rows`]: `dst[i]` for `i` in `at..at + LANES`; `src` holds every tap's
/// values up to `at + LANES`.
#[inline(always)]
fn fold_lanes<F: Fold>(dst: &mut [f32], src: &[f32], taps: Taps, at: usize) {
    let mut acc = [F::EMPTY; LANES];
    for j in 0..taps.count {
        let start = taps.first + j * taps.step + at;
        // SAFETY: `fold_rows` cut `src` to end at the last tap's value for its last output, and
        // `at + LANES` is at most that output's index plus one.
        let values = unsafe { src.get_unchecked(start..start + LANES) };
        acc.iter_mut()
            .zip(values)
            .for_each(|(a, &v)| *a = F::op(*a, v));
    }
    dst.copy_from_slice(&acc);
}

/// The column pass: each row of `folded` (`cols.input` wide) folded across the window's columns
/// into a row of `out` (`cols.output` wide).
///
/// The rows are first copied between [`Fold::EMPTY`] columns as wide as the padding (a padding
/// value never changes a fold), so that every window lies inside its row: no output at the
/// borders is special (computing those one tap at a time took half of a 14×14 pool's time).
/// Then every tap of the window is folded over the whole padded plane read as one long row
/// (`folds[j]` = fold of `padded[j + k · dilation]`): long, out-of-place vector loops, where
/// rows of 7 to 111 values spent their time in loop prologues and epilogues. Output `o` of a
/// row is `folds[o · stride]` from the row's start: a copy, or for stride 2 the even values
/// ([`crate::simd::take_even`]). Folds whose window spans two rows are never read.
#[inline(always)]
fn fold_columns<F: Fold>(cols: &Axis, folded: &[f32], column_pass: &mut [f32], out: &mut [f32]) {
    if cols.dilation == 1 && cols.input == cols.stride * cols.output {
        return fold_flat_columns::<F>(cols, folded, column_pass, out);
    }
    let width = cols.padded_width();
    let rows = out.len() / cols.output.max(1);
    let len = rows * width;
    let (padded, folds) = column_pass.split_at_mut(column_pass.len() / 2);
    let (padded, folds) = (&mut padded[..len], &mut folds[..len]);
    let padded: &[f32] = if width == cols.input && len == rows * width && cols.pad_before == 0 {
        &folded[..len]
    } else {
        for (dst, row) in padded
            .chunks_exact_mut(width)
            .zip(folded.chunks_exact(cols.input))
        {
            dst[..cols.pad_before].fill(F::EMPTY);
            dst[cols.pad_before..][..cols.input].copy_from_slice(row);
            dst[cols.pad_before + cols.input..].fill(F::EMPTY);
        }
        padded
    };
    let span = (cols.kernel - 1) * cols.dilation;
    if padded.len() <= span {
        return;
    }
    let taps = Taps {
        first: 0,
        step: cols.dilation,
        count: cols.kernel,
    };
    fold_rows::<F>(&mut folds[..padded.len() - span], padded, taps);
    for (row, out_row) in out.chunks_exact_mut(cols.output).enumerate() {
        take_strided(out_row, &folds[row * width..], cols.stride);
    }
}

/// [`fold_columns`] where the input is `stride` times as wide as the output (same-padded pools:
/// 14 → 14, 112 → 56): output `o` of the whole plane, read as one long row, takes its taps from
/// `o · stride + k - pad` as within a row, so one pass over the unpadded plane makes every output
/// whose window lies inside its row, and only the few at the borders are redone row by row
/// (padding 112-wide rows first cost a 3×3 pool a quarter more).
#[inline(always)]
fn fold_flat_columns<F: Fold>(
    cols: &Axis,
    folded: &[f32],
    column_pass: &mut [f32],
    out: &mut [f32],
) {
    let span = (cols.kernel - 1) * cols.dilation;
    if folded.len() <= span {
        return;
    }
    let folds = &mut column_pass[..folded.len() - span];
    let taps = Taps {
        first: 0,
        step: cols.dilation,
        count: cols.kernel,
    };
    fold_rows::<F>(folds, folded, taps);
    let plane = Axis {
        input: folded.len(),
        output: out.len(),
        ..*cols
    };
    let first = plane.valid(0).0;
    let end = plane.valid(cols.kernel - 1).1.max(first);
    take_strided(
        &mut out[first..end],
        &folds[plane.first_input(first, 0)..],
        cols.stride,
    );
    let (lo, hi) = (
        cols.valid(0).0,
        cols.valid(cols.kernel - 1).1.max(cols.valid(0).0),
    );
    for (row_folded, out_row) in folded
        .chunks_exact(cols.input)
        .zip(out.chunks_exact_mut(cols.output))
    {
        for ox in (0..lo).chain(hi..cols.output) {
            out_row[ox] = (0..cols.kernel)
                .filter_map(|k| {
                    let ix = (ox * cols.stride + k * cols.dilation).checked_sub(cols.pad_before)?;
                    row_folded.get(ix).copied()
                })
                .fold(F::EMPTY, F::op);
        }
    }
}

/// `out[i] = src[i · stride]`.
#[inline(always)]
fn take_strided(out: &mut [f32], src: &[f32], stride: usize) {
    match stride {
        1 => crate::simd::copy_short(out, src),
        2 => crate::simd::take_even(&src[..(2 * out.len()).saturating_sub(1)], out),
        _ => out
            .iter_mut()
            .zip(src.iter().step_by(stride))
            .for_each(|(o, v)| *o = *v),
    }
}

#[cfg(test)]
pub mod tests {
    use super::super::max_pool::Max;
    use super::*;

    /// The windows the tests pool over: (input, kernel, stride, dilation, pad).
    pub const GEOMETRIES: [(usize, usize, usize, usize, usize); 12] = [
        (9, 3, 1, 1, 1),
        (9, 3, 2, 1, 0),
        (10, 3, 2, 1, 1),
        (7, 2, 2, 1, 0),
        (8, 3, 3, 2, 2),
        (5, 5, 1, 1, 2),
        (4, 3, 2, 1, 2),
        (111, 3, 2, 1, 0),
        (13, 3, 2, 1, 1),
        (40, 3, 1, 1, 1),
        (63, 3, 2, 1, 1),
        (27, 3, 2, 1, 0),
    ];

    /// A square-ish window for one entry of [`GEOMETRIES`] (columns one wider than rows), over
    /// 2 × 3 planes.
    pub fn window(
        (input, kernel, stride, dilation, pad): (usize, usize, usize, usize, usize),
    ) -> Window2d {
        let axis = |input: usize| Axis {
            input,
            output: (input + 2 * pad - (kernel - 1) * dilation - 1) / stride + 1,
            kernel,
            stride,
            dilation,
            pad_before: pad,
            padded_end: None,
        };
        let (rows, cols) = (axis(input), axis(input + 1));
        Window2d {
            rows,
            cols,
            output_shape: tvec![2, 3, rows.output, cols.output],
        }
    }

    /// Input values with both signs and no ties in a pattern.
    pub fn data(window: &Window2d) -> Vec<f32> {
        (0..6 * window.rows.input * window.cols.input)
            .map(|i| ((i * 53 % 97) as f32) - 40.0)
            .collect()
    }

    /// The taps of output `(oy, ox)` that read inside plane `p` of `input`, as (tap index
    /// `ky · kw + kx`, value): a window element by element, the definition.
    pub fn taps_inside_window(
        window: &Window2d,
        input: &[f32],
        p: usize,
        (oy, ox): (usize, usize),
    ) -> Vec<(usize, f32)> {
        let (r, c) = (window.rows, window.cols);
        let mut taps = vec![];
        for ky in 0..r.kernel {
            for kx in 0..c.kernel {
                let iy = (oy * r.stride + ky * r.dilation) as isize - r.pad_before as isize;
                let ix = (ox * c.stride + kx * c.dilation) as isize - c.pad_before as isize;
                if (0..r.input as isize).contains(&iy) && (0..c.input as isize).contains(&ix) {
                    let value = input[p * r.input * c.input + iy as usize * c.input + ix as usize];
                    taps.push((ky * c.kernel + kx, value));
                }
            }
        }
        taps
    }

    /// Every window by [`taps_inside_window`]: `fold` over the taps inside the input, then
    /// `finish(folded, taps inside)`.
    pub fn reference(
        window: &Window2d,
        input: &[f32],
        empty: f32,
        fold: impl Fn(f32, f32) -> f32,
        finish: impl Fn(f32, usize, (usize, usize)) -> f32,
    ) -> Vec<f32> {
        let (r, c) = (window.rows, window.cols);
        let planes = input.len() / (r.input * c.input);
        let mut out = vec![];
        for p in 0..planes {
            for oy in 0..r.output {
                for ox in 0..c.output {
                    let taps = taps_inside_window(window, input, p, (oy, ox));
                    let acc = taps.iter().fold(empty, |acc, &(_, value)| fold(acc, value));
                    out.push(finish(acc, taps.len(), (oy, ox)));
                }
            }
        }
        out
    }

    #[test]
    fn every_tap_count_folds_from_empty_alike_with_nan_and_infinities() {
        // Values with NaN and infinities where a fold's order or start would show.
        let specials = [f32::NAN, f32::NEG_INFINITY, f32::INFINITY, -1.0, f32::MIN];
        let src: Vec<f32> = (0..200)
            .map(|i| {
                specials
                    .get(i * 7 % 11)
                    .copied()
                    .unwrap_or(i as f32 - 100.0)
            })
            .collect();
        for count in 1..=4 {
            for len in [3, 16, 17, 40] {
                let taps = Taps {
                    first: 5,
                    step: 9,
                    count,
                };
                let mut folded = vec![0.0; len];
                fold_rows::<Max>(&mut folded, &src, taps);
                let expected: Vec<f32> = (0..len)
                    .map(|i| {
                        (0..count)
                            .map(|j| src[taps.first + j * taps.step + i])
                            .fold(Max::EMPTY, Max::op)
                    })
                    .collect();
                // Bitwise, so that NaN compares equal to NaN.
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&folded), bits(&expected), "{count} taps, {len} values");
            }
        }
    }

    /// Narrow planes fold in groups ([`fold_padded_planes`]): over 2 × 61 planes (no group size
    /// divides them) every output value is written, equal to the definition's, on 1 and 2
    /// threads.
    #[test]
    #[cfg(not(target_family = "wasm"))]
    fn narrow_planes_folded_in_groups_match_the_definition() {
        use super::super::avg_pool::Sum;
        use super::super::max_pool::Max;
        use tract_linalg::multithread::{Executor, multithread_tract_scope};
        let narrow = GEOMETRIES
            .into_iter()
            .filter(|&g| window(g).cols.padded_width() <= NARROW_ROWS);
        for geometry in narrow {
            let one = window(geometry);
            let (r, c) = (one.rows, one.cols);
            let planes = 2 * 61;
            let window = Window2d {
                output_shape: tvec![2, 61, r.output, c.output],
                ..one
            };
            let input: Vec<f32> = (0..planes * r.input * c.input)
                .map(|i| ((i * 53 % 97) as f32) - 40.0)
                .collect();
            let max = reference(&window, &input, Max::EMPTY, f32::max, |m, _, _| m);
            let sum = reference(&window, &input, 0.0, |a, b| a + b, |s, _, _| s);
            for threads in [1, 2] {
                multithread_tract_scope(Executor::multithread(threads), || {
                    let mut out = vec![f32::NAN; max.len()];
                    window.reduce::<Max>(&input, &mut out, |_| {}).unwrap();
                    assert_eq!(out, max, "max, {geometry:?}, {threads} thread(s)");
                    let mut out = vec![f32::NAN; sum.len()];
                    window.reduce::<Sum>(&input, &mut out, |_| {}).unwrap();
                    for (i, (got, expected)) in out.iter().zip(&sum).enumerate() {
                        assert!(
                            (got - expected).abs() <= 1e-5 * expected.abs().max(1.0),
                            "sum, {geometry:?}, {threads} thread(s): [{i}] {got} vs {expected}"
                        );
                    }
                });
            }
        }
    }

    #[test]
    fn taps_inside_count_the_window_in_the_input_and_in_the_padding() {
        // Input 4, kernel 3, stride 2, one pad before and none after (padded end 5): windows
        // over input [-1, 1] and [1, 3], and ceil mode's [3, 5], two of whose taps pass the end.
        let axis = Axis {
            input: 4,
            output: 3,
            kernel: 3,
            stride: 2,
            dilation: 1,
            pad_before: 1,
            padded_end: Some(5),
        };
        assert_eq!(axis.taps_inside(), [2, 3, 1]);
        assert_eq!(axis.taps_inside_padding(), [3, 3, 1]);
        assert_eq!(
            Axis {
                padded_end: None,
                ..axis
            }
            .taps_inside_padding(),
            [3, 3, 3]
        );
    }
}
