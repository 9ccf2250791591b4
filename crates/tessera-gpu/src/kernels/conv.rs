//! Convolution: with a GEMM library, channels-first convolutions as im2col (`im2col`, skipped
//! for 1x1 kernels that read x as it is) + one strided-batched GEMM per image over the groups +
//! `bias`; otherwise (and channels-last) `conv`, each thread a block of outputs. Transposed
//! convolution: `conv_transpose`, one thread per output element. Pooling (`pool.rs`) shares
//! their window parameters.

use super::{
    Dispatch, Gemm, GemmMatrix, Grid, Kernel, Launch, Operand, StepIo, Target, no_kernel, params,
    shader, u32_param, word,
};
use tessera_core::plan::{KernelOp, Window};
use tessera_core::{DType, Error, Result};

/// Spatial axes the shaders loop over; fewer are padded with unit axes in front.
const SPATIAL_AXES: usize = 3;

/// The parameters `conv`, `conv_transpose` and `pool` share:
/// `[total, channels, in_per_group, out_per_group, kernel_size, channels_last,
/// output_spatial_size, x_batch_stride, x_channel_stride, extra]`, then per axis d, h, w:
/// `[input, output, kernel, stride, dilation, pad_before, x_stride, pad_after]`. `channels` is the
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
        window.pads_after.len(),
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
        p.extend([1, 1, 1, 1, 1, 0, 0, 0]);
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
            window.pads_after[axis],
        ])?);
    }
    Ok(Some(p))
}

/// Output channels per thread of the direct `conv` kernel, the largest that divides a group's.
const OUTPUT_CHANNEL_BLOCKS: [usize; 4] = [8, 4, 2, 1];

pub(super) fn encode(op: &KernelOp, io: &StepIo, target: &Target) -> Result<Kernel> {
    let (name, dtype, window, in_channels, out_channels, group, has_bias) = match op {
        KernelOp::Conv {
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
        } => (
            "conv",
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
            "conv_transpose",
            dtype,
            window,
            in_channels,
            out_channels,
            group,
            has_bias,
        ),
        _ => return Err(no_kernel(op)),
    };
    // Like the reference: float convolutions (f16 computes in f32 words), and i32 ones
    // (quantized convolutions) where the direct kernel takes them.
    let integer = *dtype == DType::I32 && name == "conv";
    if !matches!(dtype, DType::F32 | DType::F16) && !integer {
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
    if target.gemm
        && name == "conv"
        && !integer
        && !window.channels_last
        && let Some(kernel) = im2col_gemm(window, in_channels, out_channels, group, bias_mode)?
    {
        return Ok(kernel);
    }
    let groups = (in_channels / group, out_channels / group);
    let Some(mut p) = window_params(window, in_channels, out_channels, groups, bias_mode)? else {
        return Err(no_kernel(op));
    };
    let total = p[0] as usize;
    if total == 0 {
        return Ok(Kernel::default());
    }
    u32_param(io.inputs.first().map_or(0, |x| x.len()))?;
    let mut defines = vec![];
    let mut threads = total;
    if name == "conv" {
        // A thread computes `block` channels of one group times 4 positions along the last
        // spatial axis: more channels, fewer reads per product (`conv.wgsl`).
        let block = OUTPUT_CHANNEL_BLOCKS
            .into_iter()
            .find(|b| groups.1.is_multiple_of(*b))
            .unwrap_or(1);
        let out_w = window.output.last().copied().unwrap_or(1);
        threads = total / out_w / block * out_w.div_ceil(4);
        p[0] = u32_param(threads)?;
        defines.push(("OCB", format!("{block}u")));
        defines.push(("T", word(*dtype)?.to_string()));
    }
    Ok(Kernel::single(Dispatch {
        shader: shader(name, defines),
        params: p,
        bindings: vec![
            Operand::Input(0),
            Operand::Input(1),
            bias,
            Operand::Output(0),
        ],
        grid: Grid::Threads(threads),
    }))
}

/// A channels-first convolution as GEMMs: per image, the columns `[C * taps, P]` (`P` output
/// positions) are built in scratch (or are x itself for a 1x1, stride-1, unpadded kernel), then
/// for each group `out[g] (O/G x P) = W[g] (O/G x C/G*taps) · columns[g]`, then the bias is added.
/// `None` for more than 3 spatial axes or sizes past 32-bit indexing.
fn im2col_gemm(
    window: &Window,
    in_channels: usize,
    out_channels: usize,
    group: usize,
    bias_mode: u32,
) -> Result<Option<Kernel>> {
    let rank = window.input.len();
    if rank > SPATIAL_AXES || window.kernel.len() != rank || window.output.len() != rank {
        return Ok(None);
    }
    let taps: usize = window.kernel.iter().product();
    let positions: usize = window.output.iter().product();
    let in_spatial: usize = window.input.iter().product();
    let batch = window.batch;
    let rows_per_group = in_channels / group * taps;
    let column_words = in_channels * taps * positions;
    if batch == 0 || positions == 0 || out_channels == 0 {
        return Ok(Some(Kernel::default()));
    }
    let Ok(total) = u32::try_from(batch * column_words) else {
        return Ok(None);
    };
    let pointwise = window.kernel.iter().all(|&k| k == 1)
        && window.strides.iter().all(|&s| s == 1)
        && window
            .pads_before
            .iter()
            .chain(&window.pads_after)
            .all(|&p| p == 0);
    let mut launches: Vec<Launch> = vec![];
    let mut scratch_words = 0;
    if !pointwise {
        let mut p = vec![total, u32_param(rank)?, u32_param(in_channels)?];
        p.extend(params([positions, taps])?);
        for list in [
            &window.input,
            &window.output,
            &window.kernel,
            &window.strides,
            &window.dilations,
            &window.pads_before,
        ] {
            p.extend(params(list.iter().copied())?);
        }
        launches.push(Launch::Kernel(Dispatch {
            shader: shader("im2col", vec![]),
            params: p,
            bindings: vec![Operand::Input(0), Operand::Scratch { start: 0 }],
            grid: Grid::Threads(total as usize),
        }));
        scratch_words = batch * column_words;
    }
    let per_group_out = out_channels / group;
    for image in 0..batch {
        let columns = if pointwise {
            GemmMatrix {
                operand: Operand::Input(0),
                offset: image * in_channels * in_spatial,
                batch_stride: rows_per_group * positions,
                row_stride: positions,
                col_stride: 1,
            }
        } else {
            GemmMatrix {
                operand: Operand::Scratch { start: 0 },
                offset: image * column_words,
                batch_stride: rows_per_group * positions,
                row_stride: positions,
                col_stride: 1,
            }
        };
        let gemm = Gemm {
            m: per_group_out,
            n: positions,
            k: rows_per_group,
            batch: group,
            a: GemmMatrix {
                operand: Operand::Input(1),
                offset: 0,
                batch_stride: per_group_out * rows_per_group,
                row_stride: rows_per_group,
                col_stride: 1,
            },
            b: columns,
            c: GemmMatrix {
                operand: Operand::Output(0),
                offset: image * out_channels * positions,
                batch_stride: per_group_out * positions,
                row_stride: positions,
                col_stride: 1,
            },
        };
        if !gemm.check() {
            return Ok(None);
        }
        launches.push(Launch::Gemm(gemm));
    }
    if bias_mode != 0 {
        let outputs = batch * out_channels * positions;
        launches.push(Launch::Kernel(Dispatch {
            shader: shader("bias", vec![]),
            params: params([
                outputs,
                positions,
                out_channels,
                usize::from(bias_mode == 2),
            ])?,
            bindings: vec![Operand::Input(2), Operand::Output(0)],
            grid: Grid::Threads(outputs),
        }));
    }
    Ok(Some(Kernel {
        launches,
        scratch_words,
    }))
}
