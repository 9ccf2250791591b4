//! Convolution (im2col, then one matrix product per batch entry and group) and transposed
//! convolution (one matrix product, then col2im: scatter-add into the output).

use super::matmul::view;
use super::{Arg, Real, by_float, fail, from_ints, ints, map_indices, strides};
use crate::plan::{MatLayout, Window};
use crate::{DType, Result, TensorData};
use ndarray::{Array2, ArrayView2};

/// Element strides of a `N, C, spatial...` (or `N, spatial..., C`) tensor of a window.
pub(super) struct Geometry {
    pub batch: usize,
    pub channel: usize,
    /// Stride of each spatial axis.
    pub spatial: Vec<usize>,
    /// Stride of the spatial axes flattened (they are always one contiguous run).
    pub flat_spatial: usize,
}

pub(super) fn geometry(window: &Window, channels: usize, spatial: &[usize]) -> Geometry {
    let size: usize = spatial.iter().product();
    if window.channels_last {
        Geometry {
            batch: size * channels,
            channel: 1,
            spatial: strides(spatial).iter().map(|s| s * channels).collect(),
            flat_spatial: channels,
        }
    } else {
        Geometry {
            batch: size * channels,
            channel: size,
            spatial: strides(spatial),
            flat_spatial: 1,
        }
    }
}

/// For every (kernel tap, output position) pair, row-major over `kernel` then `output`, the
/// input position it reads as an offset with `input_strides`, or `None` in the padding.
pub(super) fn taps(window: &Window, input_strides: &[usize]) -> Vec<Option<usize>> {
    let rank = window.input.len();
    let kernel_positions = map_indices(&window.kernel, &strides(&window.kernel), 0);
    let output_positions = map_indices(&window.output, &strides(&window.output), 0);
    let unflatten = |mut flat: usize, shape: &[usize]| {
        let mut coord = vec![0; shape.len()];
        for axis in (0..shape.len()).rev() {
            coord[axis] = flat % shape[axis].max(1);
            flat /= shape[axis].max(1);
        }
        coord
    };
    let mut out = Vec::with_capacity(kernel_positions.len() * output_positions.len());
    for &t in &kernel_positions {
        let tap = unflatten(t, &window.kernel);
        for &p in &output_positions {
            let pos = unflatten(p, &window.output);
            let mut offset = Some(0usize);
            for axis in 0..rank {
                let at = (pos[axis] * window.strides[axis] + tap[axis] * window.dilations[axis])
                    .checked_sub(window.pads_before[axis])
                    .filter(|&at| at < window.input[axis]);
                offset = match (offset, at) {
                    (Some(o), Some(at)) => Some(o + at * input_strides[axis]),
                    _ => None,
                };
            }
            out.push(offset);
        }
    }
    out
}

/// The bias of output channel `o` (a bias of one value applies to every channel).
fn bias_of<T: Real>(bias: &[T], o: usize) -> T {
    match bias {
        [] => T::ZERO,
        [b] => *b,
        many => many[o],
    }
}

fn read_bias<T: Real>(args: &[Arg], out_channels: usize) -> Result<Vec<T>> {
    let Some(bias) = args.get(2) else {
        return Ok(vec![]);
    };
    let values = T::read(bias.data)?.into_owned();
    if values.len() != out_channels && values.len() != 1 {
        return Err(fail(format!(
            "bias has {} values for {out_channels} output channels",
            values.len()
        )));
    }
    Ok(values)
}

fn check_groups(in_channels: usize, out_channels: usize, group: usize) -> Result<(usize, usize)> {
    if group == 0 || !in_channels.is_multiple_of(group) || !out_channels.is_multiple_of(group) {
        return Err(fail(format!(
            "{in_channels} -> {out_channels} channels do not split in {group} groups"
        )));
    }
    Ok((in_channels / group, out_channels / group))
}

pub(super) fn conv(
    args: &[Arg],
    window: &Window,
    in_channels: usize,
    out_channels: usize,
    group: usize,
    (_, out_dtype): (&[usize], DType),
) -> Result<TensorData> {
    let (Some(x), Some(w)) = (args.first(), args.get(1)) else {
        return Err(fail("Conv takes x and weights"));
    };
    let geometry = (window, in_channels, out_channels, group);
    if x.dtype() == DType::I32 {
        // Integer convolutions (quantized ones, zero points already subtracted) accumulate in
        // i64 and wrap to i32 like the device's words.
        let wide = |arg: &Arg| -> Result<Vec<i64>> {
            Ok(ints(arg.data)
                .ok_or_else(|| fail("not integers"))?
                .into_iter()
                .map(|v| v as i64)
                .collect())
        };
        let bias = match args.get(2) {
            Some(b) => wide(b)?,
            None => vec![],
        };
        let out = conv_in(&wide(x)?, &wide(w)?, &bias, geometry, 0i64)?;
        let out: Vec<i128> = out.into_iter().map(i128::from).collect();
        return from_ints(&out, out_dtype);
    }
    by_float!(x.dtype(), "Conv", T => {
        let (xs, ws) = (T::read(x.data)?, T::read(w.data)?);
        let bias = read_bias::<T>(args, out_channels)?;
        T::write(conv_in(&xs, &ws, &bias, geometry, T::ZERO)?, out_dtype)
    })
}

/// The convolution of `xs` by `ws` (+ `bias`) in `T`, `zero` its zero.
fn conv_in<T: ndarray::LinalgScalar>(
    xs: &[T],
    ws: &[T],
    bias: &[T],
    (window, in_channels, out_channels, group): (&Window, usize, usize, usize),
    zero: T,
) -> Result<Vec<T>> {
    let (ig, og) = check_groups(in_channels, out_channels, group)?;
    if bias.len() > 1 && bias.len() != out_channels {
        return Err(fail(format!(
            "bias has {} values for {out_channels} output channels",
            bias.len()
        )));
    }
    let gin = geometry(window, in_channels, &window.input);
    let gout = geometry(window, out_channels, &window.output);
    let taps = taps(window, &gin.spatial);
    let out_positions = map_indices(&window.output, &gout.spatial, 0);
    let (kernel, positions) = (window.kernel.iter().product::<usize>(), out_positions.len());
    let mut out = vec![zero; window.batch * gout.batch];
    let w_layout = MatLayout {
        offset: 0,
        batch_strides: vec![],
        row_stride: ig * kernel,
        col_stride: 1,
    };
    let read = |data: &[T], i: usize| {
        data.get(i)
            .copied()
            .ok_or_else(|| fail("conv input out of range"))
    };
    for n in 0..window.batch {
        for g in 0..group {
            // im2col: row (ci, tap), column output position.
            let mut col = Vec::with_capacity(ig * kernel * positions);
            for ci in 0..ig {
                let base = n * gin.batch + (g * ig + ci) * gin.channel;
                for t in &taps {
                    col.push(match t {
                        Some(o) => read(xs, base + o)?,
                        None => zero,
                    });
                }
            }
            let col = ArrayView2::from_shape((ig * kernel, positions), &col)
                .map_err(|e| fail(format!("im2col: {e}")))?;
            let wg = view(ws, g * og * ig * kernel, (og, ig * kernel), &w_layout)?;
            let mut result = Array2::<T>::zeros((og, positions));
            ndarray::linalg::general_mat_mul(T::one(), &wg, &col, zero, &mut result);
            for o in 0..og {
                let channel = g * og + o;
                let base = n * gout.batch + channel * gout.channel;
                let b = match bias {
                    [] => zero,
                    [b] => *b,
                    many => read(many, channel)?,
                };
                for (p, &offset) in out_positions.iter().enumerate() {
                    let slot = out
                        .get_mut(base + offset)
                        .ok_or_else(|| fail("conv output out of range"))?;
                    *slot = result[(o, p)] + b;
                }
            }
        }
    }
    Ok(out)
}

pub(super) fn conv_transpose(
    args: &[Arg],
    window: &Window,
    in_channels: usize,
    out_channels: usize,
    group: usize,
    (_, out_dtype): (&[usize], DType),
) -> Result<TensorData> {
    let (Some(x), Some(w)) = (args.first(), args.get(1)) else {
        return Err(fail("ConvTranspose takes x and weights"));
    };
    let (ig, og) = check_groups(in_channels, out_channels, group)?;
    let kernel: usize = window.kernel.iter().product();
    if w.shape.iter().product::<usize>() != out_channels * ig * kernel {
        return Err(fail(format!(
            "weights {:?} for {in_channels} -> {out_channels} channels",
            w.shape
        )));
    }
    by_float!(x.dtype(), "ConvTranspose", T => {
        let (xs, ws) = (T::read(x.data)?, T::read(w.data)?);
        let bias = read_bias::<T>(args, out_channels)?;
        let gin = geometry(window, in_channels, &window.input);
        let gout = geometry(window, out_channels, &window.output);
        let inputs: usize = window.input.iter().product();
        // Where input position p, kernel tap t lands in the output: the same geometry as a
        // convolution read backwards (output position = input position * stride + tap *
        // dilation - pad before).
        let backwards = Window {
            input: window.output.clone(),
            output: window.input.clone(),
            ..window.clone()
        };
        let targets = taps(&backwards, &gout.spatial);
        let mut out = vec![T::ZERO; window.batch * gout.batch];
        let w_layout = MatLayout { offset: 0, batch_strides: vec![], row_stride: 1, col_stride: kernel };
        let x_layout = MatLayout { offset: 0, batch_strides: vec![], row_stride: gin.channel, col_stride: gin.flat_spatial };
        for n in 0..window.batch {
            for g in 0..group {
                let xg = view(&xs, n * gin.batch + g * ig * gin.channel, (ig, inputs), &x_layout)?;
                for o in 0..og {
                    let channel = g * og + o;
                    // w[channel, ci, tap] as a (tap, ci) matrix.
                    let wo = view(&ws, channel * ig * kernel, (kernel, ig), &w_layout)?;
                    // cols[tap, p] = sum_ci w[channel, ci, tap] x[ci, p]
                    let mut cols = Array2::<T>::zeros((kernel, inputs));
                    ndarray::linalg::general_mat_mul(T::ONE, &wo, &xg, T::ZERO, &mut cols);
                    let base = n * gout.batch + channel * gout.channel;
                    for t in 0..kernel {
                        let targets = &targets[t * inputs..(t + 1) * inputs];
                        for (&v, target) in cols.row(t).iter().zip(targets) {
                            if let Some(offset) = target {
                                out[base + offset] += v;
                            }
                        }
                    }
                }
            }
        }
        for n in 0..window.batch {
            for channel in 0..out_channels {
                let base = n * gout.batch + channel * gout.channel;
                let b = bias_of(&bias, channel);
                for offset in map_indices(&window.output, &gout.spatial, 0) {
                    out[base + offset] += b;
                }
            }
        }
        T::write(out, out_dtype)
    })
}
