//! Max and sum / average pooling (`pool`), one thread per output element.

use super::conv::window_params;
use super::{Dispatch, Grid, Kernel, Operand, StepIo, no_kernel, shader, word};
use tessera_core::plan::KernelOp;
use tessera_core::{DType, Result};

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
    // Averages need floats (like the reference); max pooling runs on any word (the reference
    // has floats only, ONNX allows 8-bit integers too).
    let w = word(*dtype)?;
    if (w != "f32" && !is_max) || *dtype == DType::Bool {
        return Err(no_kernel(op));
    }
    let Some(mut p) = window_params(window, channels, channels, (0, 0), flags)? else {
        return Err(no_kernel(op));
    };
    p[2] = lowest(*dtype);
    let total = p[0] as usize;
    if total == 0 {
        return Ok(Kernel::default());
    }
    Ok(Kernel::single(Dispatch {
        shader: shader(
            "pool",
            vec![("T", w.to_string()), ("MAX", is_max.to_string())],
        ),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(total),
    }))
}

/// Where a max starts (what a window of padding only gives), as bits of the device word: -inf
/// for floats, the type's lowest value for integers.
fn lowest(dtype: DType) -> u32 {
    match dtype {
        DType::I8 => i8::MIN as i32 as u32,
        DType::I16 => i16::MIN as i32 as u32,
        DType::I32 | DType::I64 => i32::MIN as u32,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::Bool => 0,
        _ => f32::NEG_INFINITY.to_bits(),
    }
}
