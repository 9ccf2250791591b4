//! Max and sum / average pooling (`pool.wgsl`), one thread per output element.

use super::conv::window_params;
use super::{Dispatch, Grid, Kernel, Operand, StepIo, no_kernel, shader};
use tessera_core::plan::KernelOp;
use tessera_core::{DType, Result};

const POOL: &str = include_str!("../../../../shaders/wgsl/pool.wgsl");

pub(super) fn encode(op: &KernelOp, _io: &StepIo) -> Result<Kernel> {
    let (dtype, window, channels, is_max, flags) = match op {
        KernelOp::MaxPool {
            dtype,
            window,
            channels,
        } => (dtype, window, *channels, true, 0),
        KernelOp::SumPool {
            dtype,
            window,
            channels,
            normalize,
            count_include_pad,
        } => (
            dtype,
            window,
            *channels,
            false,
            u32::from(*normalize) | (u32::from(*count_include_pad) << 1),
        ),
        _ => return Err(no_kernel(op)),
    };
    // Like the reference: float pooling only (f16 computes in f32 words).
    if !matches!(dtype, DType::F32 | DType::F16) {
        return Err(no_kernel(op));
    }
    let Some(p) = window_params(window, channels, channels, (1, 1), flags)? else {
        return Err(no_kernel(op));
    };
    let total = p[0] as usize;
    if total == 0 {
        return Ok(Kernel::default());
    }
    Ok(Kernel::single(Dispatch {
        shader: shader("pool.wgsl", POOL, vec![("MAX", is_max.to_string())]),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(total),
    }))
}
