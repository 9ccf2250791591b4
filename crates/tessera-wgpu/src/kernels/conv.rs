//! Convolution and transposed convolution (`conv.wgsl`, `conv_transpose.wgsl`), one thread per
//! output element; pooling (`pool.rs`) shares their window parameters.

use super::{Dispatch, Grid, Kernel, Operand, StepIo, no_kernel, params, shader, u32_param};
use tessera_core::plan::{KernelOp, Window};
use tessera_core::{DType, Error, Result};

const CONV: &str = include_str!("../../../../shaders/wgsl/conv.wgsl");
const CONV_TRANSPOSE: &str = include_str!("../../../../shaders/wgsl/conv_transpose.wgsl");

/// Spatial axes the shaders loop over; fewer are padded with unit axes in front.
const SPATIAL_AXES: usize = 3;

/// The parameters `conv.wgsl`, `conv_transpose.wgsl` and `pool.wgsl` share:
/// `[total, channels, in_per_group, out_per_group, kernel_size, channels_last,
/// output_spatial_size, x_batch_stride, x_channel_stride, extra]`, then per axis d, h, w:
/// `[input, output, kernel, stride, dilation, pad_before, x_stride]`. `channels` is the
/// output's; `in_channels` the input's. `None` when the window has more than 3 spatial axes.
pub(super) fn window_params(
    window: &Window,
    in_channels: usize,
    channels: usize,
    groups: (usize, usize),
    extra: u32,
) -> Result<Option<Vec<u32>>> {
    let rank = window.input.len();
    let lens = [
        window.output.len(),
        window.kernel.len(),
        window.strides.len(),
        window.dilations.len(),
        window.pads_before.len(),
    ];
    if rank > SPATIAL_AXES || lens.iter().any(|&l| l != rank) {
        return Ok(None);
    }
    let in_spatial: usize = window.input.iter().product();
    let out_spatial: usize = window.output.iter().product();
    let kernel_size: usize = window.kernel.iter().product();
    let total = window.batch * channels * out_spatial;
    // Element strides of x: channels innermost when channels_last.
    let (x_channel, unit) = if window.channels_last {
        (1, in_channels)
    } else {
        (in_spatial, 1)
    };
    let mut p = params([
        total,
        channels,
        groups.0,
        groups.1,
        kernel_size,
        usize::from(window.channels_last),
        out_spatial,
        in_spatial * in_channels,
        x_channel,
    ])?;
    p.push(extra);
    for _ in rank..SPATIAL_AXES {
        p.extend([1, 1, 1, 1, 1, 0, 0]);
    }
    let mut x_stride = unit * in_spatial;
    for axis in 0..rank {
        x_stride /= window.input[axis].max(1);
        p.extend(params([
            window.input[axis],
            window.output[axis],
            window.kernel[axis],
            window.strides[axis].max(1),
            window.dilations[axis],
            window.pads_before[axis],
            x_stride,
        ])?);
    }
    Ok(Some(p))
}

pub(super) fn encode(op: &KernelOp, io: &StepIo) -> Result<Kernel> {
    let (source, name, dtype, window, in_channels, out_channels, group, has_bias) = match op {
        KernelOp::Conv {
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
        } => (
            CONV,
            "conv.wgsl",
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
        ),
        KernelOp::ConvTranspose {
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
            ..
        } => (
            CONV_TRANSPOSE,
            "conv_transpose.wgsl",
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
        ),
        _ => return Err(no_kernel(op)),
    };
    // Like the reference: float convolutions only (f16 computes in f32 words).
    if !matches!(dtype, DType::F32 | DType::F16) {
        return Err(no_kernel(op));
    }
    let (in_channels, out_channels, group) = (*in_channels, *out_channels, *group);
    if group == 0 || !in_channels.is_multiple_of(group) || !out_channels.is_multiple_of(group) {
        return Err(Error::Internal(format!(
            "{} of {in_channels} -> {out_channels} channels in {group} groups",
            op.name()
        )));
    }
    // A bias of one value applies to every channel.
    let (bias_mode, bias) = match io.inputs.get(2) {
        Some(b) if *has_bias && b.len() == 1 => (1, Operand::Input(2)),
        Some(b) if *has_bias && b.len() == out_channels => (2, Operand::Input(2)),
        Some(b) if *has_bias => {
            return Err(Error::Internal(format!(
                "{} bias has {} values for {out_channels} channels",
                op.name(),
                b.len()
            )));
        }
        // Something must be bound: x again, which bias_mode 0 never reads.
        _ => (0, Operand::Input(0)),
    };
    let groups = (in_channels / group, out_channels / group);
    let Some(p) = window_params(window, in_channels, out_channels, groups, bias_mode)? else {
        return Err(no_kernel(op));
    };
    let total = p[0] as usize;
    if total == 0 {
        return Ok(Kernel::default());
    }
    u32_param(io.inputs.first().map_or(0, |x| x.len()))?;
    Ok(Kernel::single(Dispatch {
        shader: shader(name, source, vec![]),
        params: p,
        bindings: vec![
            Operand::Input(0),
            Operand::Input(1),
            bias,
            Operand::Output(0),
        ],
        grid: Grid::Threads(total),
    }))
}
