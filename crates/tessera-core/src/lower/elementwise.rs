//! Element-wise ops: tract's `TypedBinOp` and `ElementWiseOp` mini-ops, `Cast`, `Iff` (select),
//! (de)quantization, lookup tables, the LSTM epilogue, and identities (which become views).

use super::{Lowering, NodeFacts, Registry};
use crate::Result;
use crate::model::quant_barrier::QuantBarrier;
use crate::plan::shapes::padded;
use crate::plan::{BinaryOp, KernelOp, UnaryOp};
use tract_onnx::prelude::TypedNode;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::cast::Cast;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::identity::Identity;
use tract_onnx::tract_core::ops::lstm_cell::LstmEpilogue;
use tract_onnx::tract_core::ops::quant::{
    DequantizeLinearF32, LookupTable, QuantizeLinearI8, QuantizeLinearU8,
};
use tract_onnx::tract_core::ops::{logic, math, nn};

pub(super) fn register(registry: &mut Registry) {
    registry.add::<TypedBinOp>(binary);
    registry.add::<ElementWiseOp>(unary);
    registry.add::<ElementWiseOp>(quantize);
    registry.add::<Cast>(cast);
    registry.add::<logic::Iff>(select);
    registry.add::<DequantizeLinearF32>(dequantize);
    registry.add::<LstmEpilogue>(lstm_epilogue);
    registry.add::<QuantBarrier>(identity);
    registry.add::<Identity>(identity);
}

fn identity(_: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let (input, output) = (facts.input(0)?, facts.output(0)?);
    Ok((input.shape == output.shape && input.dtype == output.dtype).then(Lowering::view))
}

/// The kernel op of a binary mini-op, and whether its operands are swapped (`SubF` is `b - a`).
fn binary_op(
    mini: &dyn tract_onnx::tract_core::ops::binary::BinMiniOp,
) -> Option<(BinaryOp, bool)> {
    macro_rules! table {
        ($($ty:ty => $op:expr),* $(,)?) => {
            $(if mini.downcast_ref::<$ty>().is_some() { return Some(($op, false)); })*
        };
    }
    table!(
        math::Add => BinaryOp::Add, math::Sub => BinaryOp::Sub, math::Mul => BinaryOp::Mul,
        math::Div => BinaryOp::Div, math::Rem => BinaryOp::Rem, math::Pow => BinaryOp::Pow,
        math::Min => BinaryOp::Min, math::Max => BinaryOp::Max,
        math::ShiftLeft => BinaryOp::ShiftLeft, math::ShiftRight => BinaryOp::ShiftRight,
        logic::And => BinaryOp::And, logic::Or => BinaryOp::Or, logic::Xor => BinaryOp::Xor,
        logic::BitAnd => BinaryOp::BitAnd, logic::BitOr => BinaryOp::BitOr, logic::BitXor => BinaryOp::BitXor,
        logic::CompEq => BinaryOp::Eq, logic::CompNE => BinaryOp::Ne,
        logic::CompLT => BinaryOp::Lt, logic::CompLTE => BinaryOp::Le,
        logic::CompGT => BinaryOp::Gt, logic::CompGTE => BinaryOp::Ge,
    );
    mini.downcast_ref::<math::SubF>()
        .map(|_| (BinaryOp::Sub, true))
}

fn binary(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<TypedBinOp>() else {
        return Ok(None);
    };
    let Some((kernel, swapped)) = binary_op(op.0.as_ref()) else {
        return Ok(None);
    };
    let (a, b, out) = (facts.input(0)?, facts.input(1)?, facts.output(0)?);
    // Mixed operand types and quantized outputs need more than one kernel: not lowered.
    if a.dtype != b.dtype || op.1.is_some() {
        return Ok(None);
    }
    let rank = out.shape.len();
    let (first, second) = if swapped { (1, 0) } else { (0, 1) };
    let op = KernelOp::Binary {
        op: kernel,
        dtype: a.dtype,
        a_shape: padded(&facts.input(first)?.shape, rank),
        b_shape: padded(&facts.input(second)?.shape, rank),
        out_shape: out.shape.clone(),
    };
    Ok(Some(Lowering::step_on(op, vec![first, second], 1)))
}

fn unary_op(
    mini: &dyn tract_onnx::tract_core::ops::element_wise::ElementWiseMiniOp,
) -> Option<UnaryOp> {
    macro_rules! table {
        ($($ty:ty => $op:expr),* $(,)?) => {
            $(if mini.downcast_ref::<$ty>().is_some() { return Some($op); })*
        };
    }
    table!(
        math::Abs => UnaryOp::Abs, math::Neg => UnaryOp::Neg, math::Sign => UnaryOp::Sign,
        math::Exp => UnaryOp::Exp, math::Ln => UnaryOp::Ln, math::Sqrt => UnaryOp::Sqrt,
        math::Rsqrt => UnaryOp::Rsqrt, math::Recip => UnaryOp::Recip, math::Square => UnaryOp::Square,
        math::Tanh => UnaryOp::Tanh, math::Erf => UnaryOp::Erf,
        math::Sin => UnaryOp::Sin, math::Cos => UnaryOp::Cos, math::Tan => UnaryOp::Tan,
        math::Asin => UnaryOp::Asin, math::Acos => UnaryOp::Acos, math::Atan => UnaryOp::Atan,
        math::Sinh => UnaryOp::Sinh, math::Cosh => UnaryOp::Cosh, math::Asinh => UnaryOp::Asinh,
        math::Acosh => UnaryOp::Acosh, math::Atanh => UnaryOp::Atanh,
        math::Floor => UnaryOp::Floor, math::Ceil => UnaryOp::Ceil, math::Round => UnaryOp::Round,
        math::RoundHalfToEven => UnaryOp::RoundHalfToEven, math::IsNan => UnaryOp::IsNan,
        nn::Sigmoid => UnaryOp::Sigmoid, nn::Silu => UnaryOp::Silu, nn::GeluExact => UnaryOp::GeluExact,
        nn::HardSwish => UnaryOp::HardSwish, logic::Not => UnaryOp::Not, logic::BitNot => UnaryOp::BitNot,
    );
    if let Some(op) = mini.downcast_ref::<nn::LeakyRelu>() {
        return Some(UnaryOp::LeakyRelu { alpha: op.alpha });
    }
    if let Some(op) = mini.downcast_ref::<nn::GeluApproximate>() {
        return Some(UnaryOp::GeluTanh {
            square: op.fast_impl,
        });
    }
    if let Some(op) = mini.downcast_ref::<math::PowConst>() {
        return Some(UnaryOp::PowConst {
            exponent: op.exponent,
        });
    }
    if let Some(op) = mini.downcast_ref::<math::IsInf>() {
        return Some(UnaryOp::IsInf {
            detect_positive: op.detect_positive,
            detect_negative: op.detect_negative,
        });
    }
    None
}

fn unary(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<ElementWiseOp>() else {
        return Ok(None);
    };
    let Some(kernel) = unary_op(op.0.as_ref()) else {
        return Ok(None);
    };
    let op = KernelOp::Unary {
        op: kernel,
        dtype: facts.input(0)?.dtype,
        out_dtype: facts.output(0)?.dtype,
    };
    Ok(Some(Lowering::step_on(op, vec![0], 1)))
}

fn quantize(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<ElementWiseOp>() else {
        return Ok(None);
    };
    let out = facts.output(0)?.dtype;
    let kernel = if let Some(q) = op.0.downcast_ref::<QuantizeLinearU8>() {
        KernelOp::Quantize {
            inv_scale: q.scale,
            zero_point: q.zero_point.into(),
            to: out,
        }
    } else if let Some(q) = op.0.downcast_ref::<QuantizeLinearI8>() {
        KernelOp::Quantize {
            inv_scale: q.scale,
            zero_point: q.zero_point.into(),
            to: out,
        }
    } else if let Some(lut) = op.0.downcast_ref::<LookupTable>() {
        let table = lut.table.table().to_vec();
        if table.len() != 256 {
            return Ok(None);
        }
        KernelOp::LookupTable { table, dtype: out }
    } else {
        return Ok(None);
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn dequantize(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<DequantizeLinearF32>() else {
        return Ok(None);
    };
    let kernel = KernelOp::Dequantize {
        scale: op.scale,
        zero_point: op.zero_point,
        from: facts.input(0)?.dtype,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn cast(_: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let (from, to) = (facts.input(0)?.dtype, facts.output(0)?.dtype);
    if from == to {
        return Ok(Some(Lowering::view()));
    }
    Ok(Some(Lowering::step_on(
        KernelOp::Cast { from, to },
        vec![0],
        1,
    )))
}

fn select(_: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let out = &facts.output(0)?.shape;
    let rank = out.len();
    if facts.input(1)?.dtype != facts.input(2)?.dtype {
        return Ok(None);
    }
    let op = KernelOp::Select {
        cond_shape: padded(&facts.input(0)?.shape, rank),
        a_shape: padded(&facts.input(1)?.shape, rank),
        b_shape: padded(&facts.input(2)?.shape, rank),
        out_shape: out.clone(),
    };
    Ok(Some(Lowering::step(op, facts)))
}

fn lstm_epilogue(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<LstmEpilogue>() else {
        return Ok(None);
    };
    let op = KernelOp::LstmEpilogue {
        dtype: facts.input(0)?.dtype,
        hidden: op.hidden,
    };
    Ok(Some(Lowering::step(op, facts)))
}
