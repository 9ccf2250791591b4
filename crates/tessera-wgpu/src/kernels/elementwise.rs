//! Element-wise kernels: Unary, Binary (`unary.wgsl`, `binary.wgsl`), and the casts and
//! quantization ops.

use super::{Dispatch, Grid, Kernel, Operand, StepIo, no_kernel, params, shader, strides, word};
use crate::repr;
use tessera_core::plan::{BinaryOp, KernelOp, UnaryOp};
use tessera_core::{DType, Result};

const UNARY: &str = include_str!("../../../../shaders/wgsl/unary.wgsl");
const BINARY: &str = include_str!("../../../../shaders/wgsl/binary.wgsl");

pub(super) fn encode(op: &KernelOp, io: &StepIo) -> Result<Kernel> {
    match op {
        KernelOp::Unary {
            op: unary_op,
            dtype,
            out_dtype,
        } => unary(op, *unary_op, *dtype, *out_dtype, io),
        KernelOp::Binary {
            op: binary_op,
            dtype,
            a_shape,
            b_shape,
            out_shape,
        } => binary(op, *binary_op, *dtype, a_shape, b_shape, out_shape),
        _ => Err(no_kernel(op)),
    }
}

/// The WGSL expression of a unary op on `v` (a value of word `w`), or `None` without a kernel.
fn unary_expr(op: UnaryOp, w: &str) -> Option<&'static str> {
    let float = w == "f32";
    let signed = w == "i32";
    Some(match op {
        UnaryOp::Abs if w == "u32" => "v",
        UnaryOp::Abs => "abs(v)",
        UnaryOp::Neg if float || signed => "-v",
        UnaryOp::Sign if float || signed => "sign(v)",
        UnaryOp::Sign => "select(0u, 1u, v > 0u)",
        UnaryOp::Not => "select(1u, 0u, v != 0u)",
        UnaryOp::BitNot if !float => "~v",
        _ if !float => return None,
        UnaryOp::Exp => "exp(v)",
        UnaryOp::Ln => "log(v)",
        UnaryOp::Sqrt => "sqrt(v)",
        UnaryOp::Rsqrt => "inverseSqrt(v)",
        UnaryOp::Recip => "1.0 / v",
        UnaryOp::Square => "v * v",
        UnaryOp::Sigmoid => "sigmoid_f32(v)",
        UnaryOp::Tanh => "tanh_f32(v)",
        UnaryOp::Erf => "erf_f32(v)",
        UnaryOp::Silu => "v * sigmoid_f32(v)",
        UnaryOp::GeluExact => "0.5 * v * (1.0 + erf_f32(v * 0.70710678118654752))",
        UnaryOp::HardSwish => "v * clamp(v + 3.0, 0.0, 6.0) / 6.0",
        UnaryOp::Sin => "sin(v)",
        UnaryOp::Cos => "cos(v)",
        UnaryOp::Tan => "tan(v)",
        UnaryOp::Asin => "asin(v)",
        UnaryOp::Acos => "acos(v)",
        UnaryOp::Atan => "atan(v)",
        UnaryOp::Sinh => "sinh(v)",
        UnaryOp::Cosh => "cosh(v)",
        UnaryOp::Asinh => "asinh(v)",
        UnaryOp::Acosh => "acosh(v)",
        UnaryOp::Atanh => "atanh(v)",
        UnaryOp::Floor => "floor(v)",
        UnaryOp::Ceil => "ceil(v)",
        UnaryOp::Round => "round_half_away_f32(v)",
        // WGSL's round() rounds half to even.
        UnaryOp::RoundHalfToEven => "round(v)",
        UnaryOp::LeakyRelu { .. } => "select(param_f32(1u) * v, v, v >= 0.0)",
        UnaryOp::PowConst { .. } => "pow_f32(v, param_f32(1u))",
        UnaryOp::IsNan => "is_nan_f32(v)",
        UnaryOp::IsInf { .. } => "is_inf_f32(v)",
        _ => return None,
    })
}

fn unary(
    kernel_op: &KernelOp,
    op: UnaryOp,
    dtype: DType,
    out_dtype: DType,
    io: &StepIo,
) -> Result<Kernel> {
    let (input, output) = (word(dtype)?, word(out_dtype)?);
    let expr = unary_expr(op, input).ok_or_else(|| no_kernel(kernel_op))?;
    let extra = match op {
        UnaryOp::LeakyRelu { alpha } => alpha.to_bits(),
        UnaryOp::PowConst { exponent } => exponent.to_bits(),
        UnaryOp::IsInf {
            detect_positive,
            detect_negative,
        } => u32::from(detect_positive) | (u32::from(detect_negative) << 1),
        _ => 0,
    };
    let n = io.outputs.first().map_or(0, |v| v.len());
    let mut p = params([n])?;
    p.push(extra);
    Ok(Kernel::single(Dispatch {
        shader: shader(
            "unary.wgsl",
            UNARY,
            vec![
                ("IN", input.into()),
                ("OUT", output.into()),
                ("EXPR", expr.into()),
                ("WRAP", repr::wrap(out_dtype).into()),
            ],
        ),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

/// The WGSL expression of `a op b` for operands of word `w`, or `None` without a kernel.
fn binary_expr(op: BinaryOp, w: &str) -> Option<&'static str> {
    let float = w == "f32";
    Some(match op {
        BinaryOp::Add => "a + b",
        BinaryOp::Sub => "a - b",
        BinaryOp::Mul => "a * b",
        BinaryOp::Div => "a / b",
        BinaryOp::Rem => "a % b",
        BinaryOp::Pow if float => "pow_f32(a, b)",
        BinaryOp::Pow if w == "i32" => "pow_i32(a, b)",
        BinaryOp::Pow => "pow_u32(a, b)",
        BinaryOp::Min => "min(a, b)",
        BinaryOp::Max => "max(a, b)",
        BinaryOp::And if !float => "flag(a != 0u && b != 0u)",
        BinaryOp::Or if !float => "flag(a != 0u || b != 0u)",
        BinaryOp::Xor if !float => "flag((a != 0u) != (b != 0u))",
        BinaryOp::BitAnd if !float => "a & b",
        BinaryOp::BitOr if !float => "a | b",
        BinaryOp::BitXor if !float => "a ^ b",
        BinaryOp::ShiftLeft if !float => "a << u32(b)",
        BinaryOp::ShiftRight if !float => "a >> u32(b)",
        BinaryOp::Eq => "flag(a == b)",
        BinaryOp::Ne => "flag(a != b)",
        BinaryOp::Lt => "flag(a < b)",
        BinaryOp::Le => "flag(a <= b)",
        BinaryOp::Gt => "flag(a > b)",
        BinaryOp::Ge => "flag(a >= b)",
        _ => return None,
    })
}

fn binary(
    kernel_op: &KernelOp,
    op: BinaryOp,
    dtype: DType,
    a_shape: &[usize],
    b_shape: &[usize],
    out_shape: &[usize],
) -> Result<Kernel> {
    let w = word(dtype)?;
    let expr = binary_expr(op, w).ok_or_else(|| no_kernel(kernel_op))?;
    let (out_word, wrap) = if op.is_comparison() {
        ("u32", "")
    } else {
        (w, repr::wrap(dtype))
    };
    let n: usize = out_shape.iter().product();
    let rank = out_shape.len();
    let mut p = params([n, rank])?;
    p.extend(params(out_shape.iter().copied())?);
    p.extend(params(strides(a_shape, true))?);
    p.extend(params(strides(b_shape, true))?);
    Ok(Kernel::single(Dispatch {
        shader: shader(
            "binary.wgsl",
            BINARY,
            vec![
                ("A", w.into()),
                ("OUT", out_word.into()),
                ("EXPR", expr.into()),
                ("WRAP", wrap.into()),
            ],
        ),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Input(1), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}
