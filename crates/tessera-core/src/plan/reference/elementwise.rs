//! Element-wise kernels: unary and binary functions, select, casts, (de)quantization, lookup
//! tables and the LSTM epilogue.

use super::{Arg, Real, broadcast_map, by_dtype, by_float, fail, from_ints, ints};
use crate::plan::{BinaryOp, UnaryOp};
use crate::{DType, Element, Result, TensorData};
use half::f16;

fn erf(x: f64) -> f64 {
    libm::erf(x)
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// A unary function of a float, computed in f64.
fn float_fn(op: UnaryOp) -> Option<fn(f64, f64) -> f64> {
    // The second argument carries the op's parameter where it has one.
    Some(match op {
        UnaryOp::Abs => |x, _| x.abs(),
        UnaryOp::Neg => |x, _| -x,
        UnaryOp::Sign => |x, _| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        },
        UnaryOp::Exp => |x, _| x.exp(),
        UnaryOp::Ln => |x, _| x.ln(),
        UnaryOp::Sqrt => |x, _| x.sqrt(),
        UnaryOp::Rsqrt => |x, _| 1.0 / x.sqrt(),
        UnaryOp::Recip => |x, _| 1.0 / x,
        UnaryOp::Square => |x, _| x * x,
        UnaryOp::Sigmoid => |x, _| sigmoid(x),
        UnaryOp::Tanh => |x, _| x.tanh(),
        UnaryOp::Erf => |x, _| erf(x),
        UnaryOp::Silu => |x, _| x * sigmoid(x),
        UnaryOp::GeluExact => |x, _| 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
        UnaryOp::GeluTanh { .. } => |x, power| {
            let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powf(power));
            0.5 * x * (1.0 + inner.tanh())
        },
        UnaryOp::HardSwish => |x, _| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        UnaryOp::Sin => |x, _| x.sin(),
        UnaryOp::Cos => |x, _| x.cos(),
        UnaryOp::Tan => |x, _| x.tan(),
        UnaryOp::Asin => |x, _| x.asin(),
        UnaryOp::Acos => |x, _| x.acos(),
        UnaryOp::Atan => |x, _| x.atan(),
        UnaryOp::Sinh => |x, _| x.sinh(),
        UnaryOp::Cosh => |x, _| x.cosh(),
        UnaryOp::Asinh => |x, _| x.asinh(),
        UnaryOp::Acosh => |x, _| x.acosh(),
        UnaryOp::Atanh => |x, _| x.atanh(),
        UnaryOp::Floor => |x, _| x.floor(),
        UnaryOp::Ceil => |x, _| x.ceil(),
        UnaryOp::Round => |x, _| x.round(),
        UnaryOp::RoundHalfToEven => |x, _| x.round_ties_even(),
        UnaryOp::LeakyRelu { .. } => |x, alpha| if x >= 0.0 { x } else { alpha * x },
        UnaryOp::PowConst { .. } => |x, e| x.powf(e),
        UnaryOp::Not | UnaryOp::BitNot | UnaryOp::IsNan | UnaryOp::IsInf { .. } => return None,
    })
}

pub(super) fn unary(op: UnaryOp, x: Arg, out_dtype: DType) -> Result<TensorData> {
    let dtype = x.dtype();
    let param = match op {
        UnaryOp::LeakyRelu { alpha } => alpha as f64,
        UnaryOp::PowConst { exponent } => exponent as f64,
        UnaryOp::GeluTanh { square } => {
            if square {
                2.0
            } else {
                3.0
            }
        }
        _ => 0.0,
    };
    if dtype.is_float() {
        return by_float!(dtype, "this unary op", T => {
            let values = T::read(x.data)?;
            match op {
                UnaryOp::IsNan => Ok(TensorData::Bool(values.iter().map(|v| v.is_nan()).collect())),
                UnaryOp::IsInf { detect_positive, detect_negative } => Ok(TensorData::Bool(
                    values
                        .iter()
                        .map(|v| {
                            let v = v.to_f64();
                            (detect_positive && v == f64::INFINITY)
                                || (detect_negative && v == f64::NEG_INFINITY)
                        })
                        .collect(),
                )),
                _ => {
                    let f = float_fn(op).ok_or_else(|| fail(format!("{op:?} on {dtype}")))?;
                    let out: Vec<T> = values.iter().map(|&v| v.map64(|v| f(v, param))).collect();
                    T::write(out, out_dtype)
                }
            }
        });
    }
    let values = ints(x.data).ok_or_else(|| fail(format!("{op:?} on {dtype}")))?;
    let out: Vec<i128> = match op {
        UnaryOp::Abs => values.iter().map(|x| x.abs()).collect(),
        UnaryOp::Neg => values.iter().map(|x| -x).collect(),
        UnaryOp::Sign => values.iter().map(|x| x.signum()).collect(),
        UnaryOp::Square => values.iter().map(|x| x.wrapping_mul(*x)).collect(),
        UnaryOp::Not if dtype == DType::Bool => {
            values.iter().map(|&x| i128::from(x == 0)).collect()
        }
        UnaryOp::BitNot if dtype != DType::Bool => values.iter().map(|x| !x).collect(),
        // Floor, ceil and rounding leave integers as they are.
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::RoundHalfToEven => values,
        UnaryOp::IsNan | UnaryOp::IsInf { .. } => {
            return Ok(TensorData::Bool(vec![false; values.len()]));
        }
        other => return Err(fail(format!("{other:?} is not implemented for {dtype}"))),
    };
    from_ints(&out, out_dtype)
}

fn float_binary<T: Real>(op: BinaryOp, a: T, b: T) -> Option<T> {
    Some(match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Rem => a % b,
        BinaryOp::Pow => T::from_f64(a.to_f64().powf(b.to_f64())),
        // NaN propagates.
        BinaryOp::Min => {
            if a.is_nan() || b.is_nan() {
                T::from_f64(f64::NAN)
            } else if b < a {
                b
            } else {
                a
            }
        }
        BinaryOp::Max => {
            if a.is_nan() || b.is_nan() {
                T::from_f64(f64::NAN)
            } else if b > a {
                b
            } else {
                a
            }
        }
        _ => return None,
    })
}

fn compare<T: PartialOrd + PartialEq>(op: BinaryOp, a: T, b: T) -> bool {
    match op {
        BinaryOp::Eq => a == b,
        BinaryOp::Ne => a != b,
        BinaryOp::Lt => a < b,
        BinaryOp::Le => a <= b,
        BinaryOp::Gt => a > b,
        _ => a >= b,
    }
}

fn int_binary(op: BinaryOp, a: i128, b: i128, bits: u32) -> Result<i128> {
    let shift = |b: i128| {
        u32::try_from(b)
            .ok()
            .filter(|&s| s < bits)
            .ok_or_else(|| fail(format!("shift by {b} out of range")))
    };
    Ok(match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div => a
            .checked_div(b)
            .ok_or_else(|| fail("integer division by zero"))?,
        BinaryOp::Rem => a
            .checked_rem(b)
            .ok_or_else(|| fail("integer remainder by zero"))?,
        BinaryOp::Pow => {
            let e = u32::try_from(b).map_err(|_| fail(format!("integer power {b}")))?;
            a.wrapping_pow(e)
        }
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::And => i128::from(a != 0 && b != 0),
        BinaryOp::Or => i128::from(a != 0 || b != 0),
        BinaryOp::Xor => i128::from((a != 0) != (b != 0)),
        BinaryOp::BitAnd => a & b,
        BinaryOp::BitOr => a | b,
        BinaryOp::BitXor => a ^ b,
        BinaryOp::ShiftLeft => a << shift(b)?,
        BinaryOp::ShiftRight => a >> shift(b)?,
        cmp => i128::from(compare(cmp, a, b)),
    })
}

pub(super) fn binary(
    op: BinaryOp,
    a: Arg,
    b: Arg,
    a_shape: &[usize],
    b_shape: &[usize],
    out_shape: &[usize],
) -> Result<TensorData> {
    let dtype = a.dtype();
    if b.dtype() != dtype {
        return Err(fail(format!("operands are {dtype} and {}", b.dtype())));
    }
    let ai = broadcast_map(a_shape, out_shape)?;
    let bi = broadcast_map(b_shape, out_shape)?;
    if dtype.is_float() {
        return by_float!(dtype, "binary ops", T => {
            let (x, y) = (T::read(a.data)?, T::read(b.data)?);
            if op.is_comparison() {
                return Ok(TensorData::Bool(
                    ai.iter().zip(&bi).map(|(&i, &j)| compare(op, x[i], y[j])).collect(),
                ));
            }
            let out = ai
                .iter()
                .zip(&bi)
                .map(|(&i, &j)| float_binary(op, x[i], y[j]))
                .collect::<Option<Vec<T>>>()
                .ok_or_else(|| fail(format!("{op:?} is not implemented for {dtype}")))?;
            T::write(out, dtype)
        });
    }
    let (x, y) = (
        ints(a.data).ok_or_else(|| fail("not integers"))?,
        ints(b.data).ok_or_else(|| fail("not integers"))?,
    );
    let bits = (dtype.size_of() * 8) as u32;
    let out = ai
        .iter()
        .zip(&bi)
        .map(|(&i, &j)| int_binary(op, x[i], y[j], bits))
        .collect::<Result<Vec<i128>>>()?;
    from_ints(
        &out,
        if op.is_comparison() {
            DType::Bool
        } else {
            dtype
        },
    )
}

pub(super) fn select(
    cond: Arg,
    a: Arg,
    b: Arg,
    cond_shape: &[usize],
    a_shape: &[usize],
    b_shape: &[usize],
    out_shape: &[usize],
) -> Result<TensorData> {
    let TensorData::Bool(c) = cond.data else {
        return Err(fail(format!("condition is {}, not bool", cond.dtype())));
    };
    let ci = broadcast_map(cond_shape, out_shape)?;
    let ai = broadcast_map(a_shape, out_shape)?;
    let bi = broadcast_map(b_shape, out_shape)?;
    by_dtype!(a.dtype(), T => {
        let (x, y) = (
            <T as Element>::slice(a.data).ok_or_else(|| fail("data does not match its dtype"))?,
            <T as Element>::slice(b.data)
                .ok_or_else(|| fail(format!("operands are {} and {}", a.dtype(), b.dtype())))?,
        );
        let out: Vec<T> = (0..ci.len())
            .map(|i| if c[ci[i]] { x[ai[i]] } else { y[bi[i]] })
            .collect();
        Ok(<T as Element>::wrap(out))
    })
}

/// Converts between any two types: floats to integers truncate toward zero (saturating),
/// anything to bool is `!= 0`.
pub(super) fn cast(data: &TensorData, to: DType) -> Result<TensorData> {
    let from = data.dtype();
    if from == to {
        return Ok(data.clone());
    }
    if from.is_float() {
        let values: Vec<f64> = data.to_f64_vec();
        macro_rules! floats_to {
            ($($variant:ident => $t:ty),*) => {
                match to {
                    $(DType::$variant => TensorData::$variant(values.iter().map(|&x| x as $t).collect()),)*
                    DType::F16 => TensorData::F16(values.iter().map(|&x| f16::from_f64(x)).collect()),
                    DType::Bool => TensorData::Bool(values.iter().map(|&x| x != 0.0).collect()),
                }
            };
        }
        return Ok(
            floats_to!(F32 => f32, F64 => f64, I8 => i8, I16 => i16, I32 => i32,
            I64 => i64, U8 => u8, U16 => u16, U32 => u32, U64 => u64),
        );
    }
    let values = ints(data).ok_or_else(|| fail(format!("cannot cast {from}")))?;
    Ok(match to {
        DType::F32 => TensorData::F32(values.iter().map(|&x| x as f32).collect()),
        DType::F64 => TensorData::F64(values.iter().map(|&x| x as f64).collect()),
        DType::F16 => TensorData::F16(values.iter().map(|&x| f16::from_f64(x as f64)).collect()),
        other => from_ints(&values, other)?,
    })
}

pub(super) fn quantize(x: Arg, inv_scale: f32, zero_point: i32, to: DType) -> Result<TensorData> {
    let TensorData::F32(values) = x.data else {
        return Err(fail(format!("quantizes f32, got {}", x.dtype())));
    };
    let q = values
        .iter()
        // Saturating: a huge input clamps to the type's range instead of wrapping.
        .map(|&v| ((v * inv_scale).round_ties_even() as i32).saturating_add(zero_point));
    match to {
        DType::U8 => Ok(TensorData::U8(q.map(|v| v.clamp(0, 255) as u8).collect())),
        DType::I8 => Ok(TensorData::I8(
            q.map(|v| v.clamp(-128, 127) as i8).collect(),
        )),
        other => Err(fail(format!("cannot quantize to {other}"))),
    }
}

pub(super) fn dequantize(x: Arg, scale: f32, zero_point: i32) -> Result<TensorData> {
    let values =
        ints(x.data).ok_or_else(|| fail(format!("dequantizes integers, got {}", x.dtype())))?;
    Ok(TensorData::F32(
        values
            .iter()
            .map(|&v| (v - zero_point as i128) as f32 * scale)
            .collect(),
    ))
}

pub(super) fn lookup(x: Arg, table: &[u8], dtype: DType) -> Result<TensorData> {
    let bytes: Vec<u8> = match x.data {
        TensorData::U8(v) => v.clone(),
        TensorData::I8(v) => v.iter().map(|&b| b as u8).collect(),
        other => {
            return Err(fail(format!(
                "looks up 8-bit values, got {}",
                other.dtype()
            )));
        }
    };
    let out = bytes
        .iter()
        .map(|&b| table.get(b as usize).copied())
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| fail("the table needs 256 entries"))?;
    match dtype {
        DType::U8 => Ok(TensorData::U8(out)),
        DType::I8 => Ok(TensorData::I8(out.into_iter().map(|b| b as i8).collect())),
        other => Err(fail(format!("lookup table into {other}"))),
    }
}

/// Gates come as `[i, o, f, c]` blocks of `hidden` per row: `c' = f c + i tanh(c~)`,
/// `h' = o tanh(c')`, with sigmoid on i, o, f.
pub(super) fn lstm_epilogue(pre: Arg, c_prev: Arg, hidden: usize) -> Result<Vec<TensorData>> {
    by_float!(pre.dtype(), "LstmEpilogue", T => {
        let (p, c) = (T::read(pre.data)?, T::read(c_prev.data)?);
        if hidden == 0 || c.len() % hidden != 0 || p.len() != c.len() * 4 {
            return Err(fail("pre-activations must hold 4*hidden per state row"));
        }
        let rows = c.len() / hidden;
        let (mut h_out, mut c_out) = (Vec::with_capacity(c.len()), Vec::with_capacity(c.len()));
        for r in 0..rows {
            for j in 0..hidden {
                let gate = |g: usize| p[r * 4 * hidden + g * hidden + j].to_f64();
                let (i, o, f, cc) = (sigmoid(gate(0)), sigmoid(gate(1)), sigmoid(gate(2)), gate(3).tanh());
                let cell = f * c[r * hidden + j].to_f64() + i * cc;
                c_out.push(T::from_f64(cell));
                h_out.push(T::from_f64(o * cell.tanh()));
            }
        }
        Ok(vec![T::write(h_out, pre.dtype())?, T::write(c_out, c_prev.dtype())?])
    })
}
