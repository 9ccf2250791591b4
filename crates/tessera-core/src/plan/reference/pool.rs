//! Max and sum / average pooling, one window at a time.

use super::conv::{geometry, taps};
use super::{Arg, Real, by_float, fail, map_indices};
use crate::plan::Window;
use crate::{Result, TensorData};

/// Runs `f(values in the window)` for every output element; `None` stands for a padded tap.
fn pool<T: Real>(
    x: &[T],
    window: &Window,
    channels: usize,
    f: impl Fn(&mut dyn Iterator<Item = Option<T>>, usize) -> T,
) -> Vec<T> {
    let gin = geometry(window, channels, &window.input);
    let gout = geometry(window, channels, &window.output);
    let taps = taps(window, &gin.spatial);
    let out_positions = map_indices(&window.output, &gout.spatial, 0);
    let positions = out_positions.len();
    let kernel: usize = window.kernel.iter().product();
    let mut out = vec![T::ZERO; window.batch * gout.batch];
    for n in 0..window.batch {
        for c in 0..channels {
            let (xb, ob) = (
                n * gin.batch + c * gin.channel,
                n * gout.batch + c * gout.channel,
            );
            for (p, &offset) in out_positions.iter().enumerate() {
                let mut values = (0..kernel).map(|t| taps[t * positions + p].map(|o| x[xb + o]));
                out[ob + offset] = f(&mut values, p);
            }
        }
    }
    out
}

pub(super) fn max_pool(x: Arg, window: &Window, channels: usize) -> Result<TensorData> {
    by_float!(x.dtype(), "MaxPool", T => {
        let xs = T::read(x.data)?;
        // `!(v > b)` on purpose: it keeps the current best when `v` is NaN.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let out = pool(&xs, window, channels, |values, _| {
            let mut best: Option<T> = None;
            for v in values.flatten() {
                best = Some(match best {
                    Some(b) if !(v > b) => b,
                    _ => v,
                });
            }
            // A window entirely in the padding: no tap, so the lowest value.
            best.unwrap_or(T::from_f64(f64::NEG_INFINITY))
        });
        T::write(out, x.dtype())
    })
}

pub(super) fn sum_pool(
    x: Arg,
    window: &Window,
    channels: usize,
    normalize: bool,
    count_include_pad: bool,
) -> Result<TensorData> {
    let kernel: usize = window.kernel.iter().product();
    if kernel == 0 {
        return Err(fail("empty pooling window"));
    }
    let in_padded = taps_in_padded_input(window);
    by_float!(x.dtype(), "SumPool", T => {
        let xs = T::read(x.data)?;
        let out = pool(&xs, window, channels, |values, p| {
            let (mut sum, mut real) = (T::ZERO, 0usize);
            for v in values.flatten() {
                sum += v;
                real += 1;
            }
            if !normalize {
                sum
            } else if count_include_pad {
                // Padding counts, but not the overhang of a ceil-mode window past it (ONNX).
                sum / T::from_f64(in_padded[p].max(1) as f64)
            } else {
                sum / T::from_f64(real.max(1) as f64)
            }
        });
        T::write(out, x.dtype())
    })
}

/// Per output position (row-major over the output's spatial axes): how many kernel taps fall
/// inside the padded input.
fn taps_in_padded_input(window: &Window) -> Vec<usize> {
    // Per axis, per output coordinate: taps whose position is before the end of the padding.
    let per_axis: Vec<Vec<usize>> = (0..window.output.len())
        .map(|axis| {
            let end = window.input[axis] + window.pads_before[axis] + window.pads_after[axis];
            (0..window.output[axis])
                .map(|o| {
                    (0..window.kernel[axis])
                        .filter(|t| o * window.strides[axis] + t * window.dilations[axis] < end)
                        .count()
                })
                .collect()
        })
        .collect();
    let mut counts = vec![1usize];
    for axis in per_axis {
        counts = counts
            .iter()
            .flat_map(|&c| axis.iter().map(move |&a| c * a))
            .collect();
    }
    counts
}
