//! Element-wise kernels: Unary, Binary (`unary`, `binary`), Select (`select`),
//! Cast (`cast`), and Quantize, Dequantize, LookupTable (`quantize`).
//!
//! The `EXPR` defines are written in WGSL's spelling (see [`super`]).

use super::{
    Dispatch, Grid, Kernel, Operand, StepIo, collapse_axes, no_kernel, output_len, params, shader,
    strides, word,
};
use crate::repr;
use tessera_core::plan::{BinaryOp, KernelOp, UnaryOp};
use tessera_core::{DType, Error, Result};

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
        KernelOp::Select {
            cond_shape,
            a_shape,
            b_shape,
            out_shape,
        } => select(io, cond_shape, a_shape, b_shape, out_shape),
        KernelOp::Cast { from, to } => cast(*from, *to, io),
        KernelOp::Quantize {
            inv_scale,
            zero_point,
            to,
        } => quantize(op, *inv_scale, *zero_point, *to, io),
        KernelOp::Dequantize {
            scale,
            zero_point,
            from,
        } => dequantize(op, *scale, *zero_point, *from, io),
        KernelOp::LookupTable { table, dtype } => lookup(op, table, *dtype, io),
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
        // Logical ops take bools (u32 words); `v != 0u` does not type-check on other words.
        UnaryOp::Not if w == "u32" => "select(1u, 0u, v != 0u)",
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
        // sqrt(2 / pi) = 0.7978845608028654.
        UnaryOp::GeluTanh { square: false } => {
            "0.5 * v * (1.0 + tanh_f32(0.7978845608028654 * (v + 0.044715 * v * v * v)))"
        }
        UnaryOp::GeluTanh { square: true } => {
            "0.5 * v * (1.0 + tanh_f32(0.7978845608028654 * (v + 0.044715 * v * v)))"
        }
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
            "unary",
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
        // WGSL's `%` on floats truncates like C's fmodf; C has no `%` on floats.
        BinaryOp::Rem if float => "fmod_f32(a, b)",
        BinaryOp::Rem => "a % b",
        BinaryOp::Pow if float => "pow_f32(a, b)",
        BinaryOp::Pow if w == "i32" => "pow_i32(a, b)",
        BinaryOp::Pow => "pow_u32(a, b)",
        BinaryOp::Min => "min(a, b)",
        BinaryOp::Max => "max(a, b)",
        // Logical ops take bools (u32 words); `a != 0u` does not type-check on i32 words.
        BinaryOp::And if w == "u32" => "flag(a != 0u && b != 0u)",
        BinaryOp::Or if w == "u32" => "flag(a != 0u || b != 0u)",
        BinaryOp::Xor if w == "u32" => "flag((a != 0u) != (b != 0u))",
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
    // The plan's shape check (`plan::shapes`) holds both operands at the output's rank.
    let (shape, operand_strides) =
        collapse_axes(out_shape, &[strides(a_shape, true), strides(b_shape, true)]);
    let mut p = params([n, shape.len()])?;
    p.extend(params(shape)?);
    for s in operand_strides {
        p.extend(params(s)?);
    }
    Ok(Kernel::single(Dispatch {
        shader: shader(
            "binary",
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

/// `out = cond ? a : b`. Only bits move, so every dtype shares one `u32` pipeline.
fn select(
    io: &StepIo,
    cond_shape: &[usize],
    a_shape: &[usize],
    b_shape: &[usize],
    out_shape: &[usize],
) -> Result<Kernel> {
    if let Some(out) = io.outputs.first() {
        word(out.dtype)?;
    }
    let n: usize = out_shape.iter().product();
    let rank = out_shape.len();
    let mut operand_strides = vec![];
    for shape in [cond_shape, a_shape, b_shape] {
        if shape.len() != rank {
            return Err(Error::Internal(format!(
                "Select: operand shape {shape:?} does not have the output's rank {rank}"
            )));
        }
        operand_strides.push(strides(shape, true));
    }
    let (shape, operand_strides) = collapse_axes(out_shape, &operand_strides);
    let mut p = params([n, shape.len()])?;
    p.extend(params(shape)?);
    for s in operand_strides {
        p.extend(params(s)?);
    }
    Ok(Kernel::single(Dispatch {
        shader: shader("select", vec![]),
        params: p,
        bindings: vec![
            Operand::Input(0),
            Operand::Input(1),
            Operand::Input(2),
            Operand::Output(0),
        ],
        grid: Grid::Threads(n),
    }))
}

/// The WGSL expression (on `v`, a word of `from`) converting to `to`, following the reference:
/// floats to integers truncate toward zero and saturate at the target's range (NaN gives 0),
/// anything to bool is `!= 0`, integers to integers wrap to the target's width. f16 is held as
/// f32, so float-to-float is a copy (the rounding to f16 happens on read-back), and i64 (u64) is
/// held as i32 (u32), so casts to them saturate (from floats) or reinterpret at 32 bits.
fn cast_expr(from: DType, to: DType) -> Result<String> {
    let (source, target) = (word(from)?, word(to)?);
    if from == to {
        return Ok("v".into());
    }
    Ok(match (source, to) {
        ("f32", DType::F32 | DType::F16) => "v".into(),
        ("f32", DType::Bool) => "f32_to_bool(v)".into(),
        ("f32", DType::I32 | DType::I64) => "f32_to_i32(v)".into(),
        ("f32", DType::I16) => "f32_to_narrow_i32(v, -32768.0, 32767.0)".into(),
        ("f32", DType::I8) => "f32_to_narrow_i32(v, -128.0, 127.0)".into(),
        ("f32", DType::U32 | DType::U64) => "f32_to_u32(v)".into(),
        ("f32", DType::U16) => "f32_to_narrow_u32(v, 65535.0)".into(),
        ("f32", DType::U8) => "f32_to_narrow_u32(v, 255.0)".into(),
        (_, DType::F32 | DType::F16) => "f32(v)".into(),
        (_, DType::Bool) => "select(0u, 1u, v != 0)".into(),
        // Integer to integer: reinterpret the 32 bits, then wrap to the target's width.
        _ => format!("{}(bitcast<{target}>(v))", repr::wrap(to)),
    })
}

fn cast(from: DType, to: DType, io: &StepIo) -> Result<Kernel> {
    let (source, target) = (word(from)?, word(to)?);
    let expr = cast_expr(from, to)?;
    let n = output_len(io);
    Ok(Kernel::single(Dispatch {
        shader: shader(
            "cast",
            vec![
                ("IN", source.into()),
                ("OUT", target.into()),
                ("EXPR", expr),
            ],
        ),
        params: params([n])?,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

/// One `quantize` dispatch: `y = EXPR(x)` over the output's elements, with `extra`
/// parameters after the element count.
fn quantize_dispatch(
    io: &StepIo,
    input: &str,
    output: &str,
    expr: &str,
    extra: Vec<u32>,
) -> Result<Kernel> {
    let n = output_len(io);
    let mut p = params([n])?;
    p.extend(extra);
    Ok(Kernel::single(Dispatch {
        shader: shader(
            "quantize",
            vec![
                ("IN", input.into()),
                ("OUT", output.into()),
                ("EXPR", expr.into()),
            ],
        ),
        params: p,
        bindings: vec![Operand::Input(0), Operand::Output(0)],
        grid: Grid::Threads(n),
    }))
}

/// The input's dtype, which must be `expected`.
fn input_dtype(op: &KernelOp, io: &StepIo, expected: &[DType]) -> Result<DType> {
    match io.inputs.first() {
        Some(x) if expected.contains(&x.dtype) => Ok(x.dtype),
        _ => Err(no_kernel(op)),
    }
}

fn quantize(
    op: &KernelOp,
    inv_scale: f32,
    zero_point: i32,
    to: DType,
    io: &StepIo,
) -> Result<Kernel> {
    input_dtype(op, io, &[DType::F32])?;
    let (lo, hi): (i32, i32) = match to {
        DType::U8 => (0, 255),
        DType::I8 => (-128, 127),
        _ => return Err(no_kernel(op)),
    };
    // Both targets' words hold the same bits as the i32 result, so the shader writes u32.
    let extra = vec![
        inv_scale.to_bits(),
        zero_point.cast_unsigned(),
        lo.cast_unsigned(),
        hi.cast_unsigned(),
    ];
    quantize_dispatch(io, "f32", "u32", "quantize(v)", extra)
}

fn dequantize(
    op: &KernelOp,
    scale: f32,
    zero_point: i32,
    from: DType,
    io: &StepIo,
) -> Result<Kernel> {
    if !matches!(from, DType::U8 | DType::I8 | DType::I32) {
        return Err(no_kernel(op));
    }
    input_dtype(op, io, &[from])?;
    // A u8 word (0..=255) reads the same as an i32, so every input binds as i32.
    let extra = vec![scale.to_bits(), zero_point.cast_unsigned()];
    quantize_dispatch(io, "i32", "f32", "dequantize(v)", extra)
}

fn lookup(op: &KernelOp, table: &[u8], dtype: DType, io: &StepIo) -> Result<Kernel> {
    input_dtype(op, io, &[DType::U8, DType::I8])?;
    if table.len() != 256 {
        return Err(Error::Internal(format!(
            "LookupTable: the table has {} entries, not 256",
            table.len()
        )));
    }
    // The table goes in params as the output's words: i8 entries sign-extended.
    let entries: Vec<u32> = match dtype {
        DType::U8 => table.iter().map(|&b| u32::from(b)).collect(),
        DType::I8 => table
            .iter()
            .map(|&b| i32::from(b.cast_signed()).cast_unsigned())
            .collect(),
        _ => return Err(no_kernel(op)),
    };
    // An i8 input word is sign-extended; its low byte is the table index either way.
    quantize_dispatch(io, "u32", "u32", "lookup(v)", entries)
}
