//! Integer products and run-time quantization: tract's `EinSum` and `Conv` with quantization
//! parameters (ONNX MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv) and tract-onnx's
//! `DynamicQuantizeLinearU8`.
//!
//! The 8-bit operands are widened to i32 and their zero points subtracted before the product,
//! which then runs as any i32 product (exact, no zero-point compensation terms). The i32
//! accumulator gets the bias and, for an 8-bit output, is requantized as tract does it:
//! `round_half_even(acc · (a_scale · b_scale / c_scale)) + c_zero_point`, saturated to the
//! output type (the rounded value and the zero point are added in f32, exact below 2^24 and
//! saturated either way above).

use super::matmul::Product;
use super::{Lowering, NodeFacts, Operand, Registry, konst_values};
use crate::plan::shapes::padded;
use crate::plan::{BinaryOp, KernelOp, ReduceOp, UnaryOp};
use crate::{DType, Result};
use tract_onnx::prelude::{TypedNode, tensor0};
use tract_onnx::tract_core::axes::AxesMapping;
use tract_onnx::tract_core::ops::cnn::Conv;
use tract_onnx::tract_core::ops::cnn::conv::KernelFormat;
use tract_onnx::tract_core::ops::einsum::EinSum;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<EinSum>(quantized_einsum);
    registry.add::<Conv>(quantized_conv);
    // tract-onnx keeps this op's type private: it is found by name.
    registry.add_named("DynamicQuantizeLinearU8", dynamic_quantize_linear);
}

/// An operand of an einsum: input `k`, or the output.
#[derive(Debug, Clone, Copy)]
enum InOut {
    In(usize),
    Out,
}

/// A tensor operand with the shape it broadcasts with (padded to the rank it combines at).
type Broadcast = (Operand, Vec<usize>);

fn is_8_bit(dtype: DType) -> bool {
    matches!(dtype, DType::U8 | DType::I8)
}

/// The shape of quantization parameter `slot` of an einsum broadcast against `target` (an
/// operand of `target_rank`): its extents at the target's positions of its axes, 1 elsewhere.
/// `None` when an axis of more than one element is not the target's, or the parameter's axes
/// are not in the target's order (a broadcast, not a transpose).
fn param_shape(
    axes: &AxesMapping,
    slot: usize,
    target: InOut,
    target_rank: usize,
    shape: &[usize],
) -> Option<Vec<usize>> {
    let mut out = vec![1; target_rank];
    let mut placed = vec![];
    for axis in axes.iter_all_axes() {
        let at = match axis.inputs.get(slot)?.as_slice() {
            [] => continue,
            [q] => *q,
            _ => return None,
        };
        let dim = *shape.get(at)?;
        if dim == 1 {
            continue;
        }
        let positions = match target {
            InOut::In(i) => axis.inputs.get(i)?,
            InOut::Out => axis.outputs.first()?,
        };
        let [p] = positions.as_slice() else {
            return None;
        };
        *out.get_mut(*p)? = dim;
        placed.push((at, *p));
    }
    placed.sort_unstable();
    placed.windows(2).all(|w| w[0].1 < w[1].1).then_some(out)
}

/// Input `slot` (of `facts`) under `shape`, its broadcast shape: the input itself when that is
/// its shape, else a view of it (same elements, other axes).
fn broadcast_input(
    lowering: &mut Lowering,
    facts: &NodeFacts,
    slot: usize,
    shape: Vec<usize>,
) -> Result<Broadcast> {
    let input = facts.input(slot)?;
    if input.shape == shape {
        return Ok((Operand::In(slot), shape));
    }
    let view = lowering.temp(shape.clone(), input.dtype);
    lowering.aliases.push((view, Operand::In(slot)));
    Ok((view, shape))
}

/// Element-wise max of two shapes of one rank.
fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    a.iter().zip(b).map(|(&x, &y)| x.max(y)).collect()
}

/// `out = a op b` with broadcasting; `out` is a new temporary unless given.
fn binary(
    lowering: &mut Lowering,
    op: BinaryOp,
    dtype: DType,
    (a, a_shape): Broadcast,
    (b, b_shape): Broadcast,
    out: Option<Operand>,
) -> Broadcast {
    let out_shape = broadcast_shape(&a_shape, &b_shape);
    let out = out.unwrap_or_else(|| lowering.temp(out_shape.clone(), dtype));
    let kernel = KernelOp::Binary {
        op,
        dtype,
        a_shape,
        b_shape,
        out_shape: out_shape.clone(),
    };
    lowering.push(kernel, vec![a, b], vec![out]);
    (out, out_shape)
}

/// `to` of `x` (shape `shape`), in a new temporary.
fn cast(lowering: &mut Lowering, x: Operand, shape: &[usize], from: DType, to: DType) -> Operand {
    if from == to {
        return x;
    }
    let out = lowering.temp(shape.to_vec(), to);
    lowering.push(KernelOp::Cast { from, to }, vec![x], vec![out]);
    out
}

/// `x - zero_point` in i32 (x of `dtype` and `shape`; the zero point broadcast as given).
fn centred(
    lowering: &mut Lowering,
    (x, shape): (Operand, &[usize]),
    dtype: DType,
    (zero_point, zp_shape, zp_dtype): (Operand, Vec<usize>, DType),
) -> Operand {
    let wide = cast(lowering, x, shape, dtype, DType::I32);
    let zero_point = cast(lowering, zero_point, &zp_shape, zp_dtype, DType::I32);
    binary(
        lowering,
        BinaryOp::Sub,
        DType::I32,
        (wide, shape.to_vec()),
        (zero_point, zp_shape),
        None,
    )
    .0
}

/// `round_half_even(x)` in f32, in a new temporary.
fn round_half_even(lowering: &mut Lowering, (x, shape): Broadcast) -> Broadcast {
    let out = lowering.temp(shape.clone(), DType::F32);
    let kernel = KernelOp::Unary {
        op: UnaryOp::RoundHalfToEven,
        dtype: DType::F32,
        out_dtype: DType::F32,
    };
    lowering.push(kernel, vec![x], vec![out]);
    (out, shape)
}

/// `lowering` finished with the 8-bit result of its i32 accumulator (`acc`, shaped `shape`) in
/// output 0: `round_half_even(acc · (a_scale · b_scale / c_scale)) + zero_point`, saturated to
/// `to`. `slots` are the node inputs holding a_scale, b_scale, c_scale and the zero point, and
/// `view` gives each one broadcast against the output (`None`: it does not broadcast); `None`
/// unless they all do and the scales are f32.
fn requantize(
    mut lowering: Lowering,
    facts: &NodeFacts,
    (acc, shape): (Operand, &[usize]),
    slots: [usize; 4],
    to: DType,
    mut view: impl FnMut(&mut Lowering, usize) -> Result<Option<Broadcast>>,
) -> Result<Option<Lowering>> {
    let [a_slot, b_slot, c_slot, zp_slot] = slots;
    for slot in [a_slot, b_slot, c_slot] {
        if facts.input(slot)?.dtype != DType::F32 {
            return Ok(None);
        }
    }
    let (Some(a_scale), Some(b_scale), Some(c_scale), Some((zero_point, zp_shape))) = (
        view(&mut lowering, a_slot)?,
        view(&mut lowering, b_slot)?,
        view(&mut lowering, c_slot)?,
        view(&mut lowering, zp_slot)?,
    ) else {
        return Ok(None);
    };
    let zp_dtype = facts.input(zp_slot)?.dtype;
    let acc = cast(&mut lowering, acc, shape, DType::I32, DType::F32);
    let ab = binary(
        &mut lowering,
        BinaryOp::Mul,
        DType::F32,
        a_scale,
        b_scale,
        None,
    );
    let abc = binary(&mut lowering, BinaryOp::Div, DType::F32, ab, c_scale, None);
    let scaled = binary(
        &mut lowering,
        BinaryOp::Mul,
        DType::F32,
        (acc, shape.to_vec()),
        abc,
        None,
    );
    let rounded = round_half_even(&mut lowering, scaled);
    let zero_point = cast(&mut lowering, zero_point, &zp_shape, zp_dtype, DType::F32);
    let shifted = binary(
        &mut lowering,
        BinaryOp::Add,
        DType::F32,
        rounded,
        (zero_point, zp_shape),
        None,
    );
    let kernel = KernelOp::Cast {
        from: DType::F32,
        to,
    };
    lowering.push(kernel, vec![shifted.0], vec![Operand::Out(0)]);
    Ok(Some(lowering))
}

/// Whether input `ix` is a constant of zeros only (a bias not worth a step).
fn known_zero(facts: &NodeFacts, ix: usize) -> bool {
    facts
        .inputs
        .get(ix)
        .and_then(|f| konst_values::<f64>(&f.konst))
        .is_some_and(|values| values.iter().all(|&x| x == 0.0))
}

/// Quantized einsum inputs: a, b, bias, a0, a_scale, b0, b_scale, c0, c_scale.
fn quantized_einsum(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<EinSum>() else {
        return Ok(None);
    };
    if op.q_params.is_none() || facts.inputs.len() != 9 || facts.outputs.len() != 1 {
        return Ok(None);
    }
    let out = facts.output(0)?;
    let to = out.dtype;
    if !matches!(to, DType::I32 | DType::U8 | DType::I8) {
        return Ok(None);
    }
    let rank = out.shape.len();
    let mut lowering = Lowering::default();
    let in_output = |lowering: &mut Lowering, slot: usize| -> Result<Option<Broadcast>> {
        let shape = &facts.input(slot)?.shape;
        match param_shape(&op.axes, slot, InOut::Out, rank, shape) {
            Some(s) => broadcast_input(lowering, facts, slot, s).map(Some),
            None => Ok(None),
        }
    };
    let mut operands = [Operand::In(0), Operand::In(1)];
    for (which, zp_slot) in [(0, 3), (1, 5)] {
        let (x, zp) = (facts.input(which)?, facts.input(zp_slot)?);
        let Some(zp_shape) = param_shape(
            &op.axes,
            zp_slot,
            InOut::In(which),
            x.shape.len(),
            &zp.shape,
        ) else {
            return Ok(None);
        };
        if !is_8_bit(x.dtype) || !matches!(zp.dtype, DType::U8 | DType::I8 | DType::I32) {
            return Ok(None);
        }
        let zp_view = broadcast_input(&mut lowering, facts, zp_slot, zp_shape)?;
        operands[which] = centred(
            &mut lowering,
            (Operand::In(which), &x.shape),
            x.dtype,
            (zp_view.0, zp_view.1, zp.dtype),
        );
    }
    let with_bias = !known_zero(facts, 2);
    let acc = if to == DType::I32 && !with_bias {
        Operand::Out(0)
    } else {
        lowering.temp(out.shape.clone(), DType::I32)
    };
    let product = Product {
        axes: &op.axes,
        shapes: [
            facts.input(0)?.shape.clone(),
            facts.input(1)?.shape.clone(),
            out.shape.clone(),
        ],
        dtype: DType::I32,
        operands: [operands[0], operands[1], acc],
    };
    if !product.lower(&mut lowering)? {
        return Ok(None);
    }
    let mut acc = acc;
    if with_bias {
        let (Some(bias), DType::I32) = (in_output(&mut lowering, 2)?, facts.input(2)?.dtype) else {
            return Ok(None);
        };
        let into = (to == DType::I32).then_some(Operand::Out(0));
        acc = binary(
            &mut lowering,
            BinaryOp::Add,
            DType::I32,
            (acc, out.shape.clone()),
            bias,
            into,
        )
        .0;
    }
    if to == DType::I32 {
        return Ok(Some(lowering));
    }
    requantize(
        lowering,
        facts,
        (acc, &out.shape),
        [4, 6, 8, 7],
        to,
        in_output,
    )
}

/// Quantized convolution inputs: x, kernel (OIHW), bias (i32, one per output channel or one),
/// x0, x_scale, k0, k_scale, y0, y_scale; zero points and scales are one value, or (k0,
/// k_scale) one per output channel.
fn quantized_conv(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Conv>() else {
        return Ok(None);
    };
    if op.q_params.is_none() || op.kernel_fmt != KernelFormat::OIHW || facts.inputs.len() != 9 {
        return Ok(None);
    }
    let (x, w, out) = (facts.input(0)?, facts.input(1)?, facts.output(0)?);
    let to = out.dtype;
    if !is_8_bit(x.dtype)
        || !is_8_bit(w.dtype)
        || !matches!(to, DType::I32 | DType::U8 | DType::I8)
        || facts.input(2)?.dtype != DType::I32
    {
        return Ok(None);
    }
    let Some((window, in_channels)) = super::conv::window(&op.pool_spec, &x.shape, &out.shape)
    else {
        return Ok(None);
    };
    let out_channels = w.shape.first().copied().unwrap_or(0);
    let channel_axis = if window.channels_last {
        out.shape.len().saturating_sub(1)
    } else {
        usize::from(window.batch_axis)
    };
    // A parameter of one value broadcasts over `rank` axes; one per output channel lies along
    // `channels` (when it may).
    let mut lowering = Lowering::default();
    let param = |lowering: &mut Lowering,
                 slot: usize,
                 rank: usize,
                 channels: Option<usize>|
     -> Result<Option<Broadcast>> {
        let len: usize = facts.input(slot)?.shape.iter().product();
        let mut shape = vec![1; rank];
        if len != 1 {
            match channels {
                Some(axis) if len == out_channels && axis < rank => shape[axis] = len,
                _ => return Ok(None),
            }
        }
        broadcast_input(lowering, facts, slot, shape).map(Some)
    };
    let (x_rank, w_rank, y_rank) = (x.shape.len(), w.shape.len(), out.shape.len());
    let (Some(x0), Some(k0)) = (
        param(&mut lowering, 3, x_rank, None)?,
        param(&mut lowering, 5, w_rank, Some(0))?,
    ) else {
        return Ok(None);
    };
    let xc = centred(
        &mut lowering,
        (Operand::In(0), &x.shape),
        x.dtype,
        (x0.0, x0.1, facts.input(3)?.dtype),
    );
    let wc = centred(
        &mut lowering,
        (Operand::In(1), &w.shape),
        w.dtype,
        (k0.0, k0.1, facts.input(5)?.dtype),
    );
    let acc = if to == DType::I32 {
        Operand::Out(0)
    } else {
        lowering.temp(out.shape.clone(), DType::I32)
    };
    let kernel = KernelOp::Conv {
        dtype: DType::I32,
        window,
        in_channels,
        out_channels,
        group: op.group,
        has_bias: true,
    };
    lowering.push(kernel, vec![xc, wc, Operand::In(2)], vec![acc]);
    if to == DType::I32 {
        return Ok(Some(lowering));
    }
    // tract combines the kernel's scale first: k_scale · x_scale / y_scale; only the kernel's
    // scale may be one per output channel.
    requantize(
        lowering,
        facts,
        (acc, &out.shape),
        [6, 4, 8, 7],
        to,
        |lowering, slot| param(lowering, slot, y_rank, (slot == 6).then_some(channel_axis)),
    )
}

/// ONNX `DynamicQuantizeLinear` (tract-onnx's op, u8): the range `[min(x, 0), max(x, 0)]` as
/// reductions, `scale = (max - min) / 255`, `zero_point = saturate(round_half_even(-min /
/// scale))`, `y = saturate(round_half_even(x / scale) + zero_point)`. Outputs: y, scale and
/// zero point (scalars: views of one-element temporaries).
fn dynamic_quantize_linear(_node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let x = facts.input(0)?;
    if facts.inputs.len() != 1 || facts.outputs.len() != 3 || x.dtype != DType::F32 {
        return Ok(None);
    }
    let rank = x.shape.len();
    let one = vec![1; rank];
    let mut lowering = Lowering::default();
    let reduce = |lowering: &mut Lowering, op: ReduceOp| {
        let out = lowering.temp(one.clone(), DType::F32);
        let kernel = KernelOp::Reduce {
            op,
            dtype: DType::F32,
            input_shape: x.shape.clone(),
            axes: (0..rank).collect(),
        };
        lowering.push(kernel, vec![Operand::In(0)], vec![out]);
        (out, one.clone())
    };
    let (max, min) = (
        reduce(&mut lowering, ReduceOp::Max),
        reduce(&mut lowering, ReduceOp::Min),
    );
    let zero = (lowering.constant(tensor0(0f32)), padded(&[], rank));
    let levels = (lowering.constant(tensor0(255f32)), padded(&[], rank));
    let high = binary(
        &mut lowering,
        BinaryOp::Max,
        DType::F32,
        max,
        zero.clone(),
        None,
    );
    let low = binary(
        &mut lowering,
        BinaryOp::Min,
        DType::F32,
        min,
        zero.clone(),
        None,
    );
    let range = binary(
        &mut lowering,
        BinaryOp::Sub,
        DType::F32,
        high,
        low.clone(),
        None,
    );
    let scale = binary(
        &mut lowering,
        BinaryOp::Div,
        DType::F32,
        range,
        levels,
        None,
    );
    let minus_low = binary(&mut lowering, BinaryOp::Sub, DType::F32, zero, low, None);
    let zp_real = binary(
        &mut lowering,
        BinaryOp::Div,
        DType::F32,
        minus_low,
        scale.clone(),
        None,
    );
    let zp_rounded = round_half_even(&mut lowering, zp_real);
    // Casting to u8 saturates to 0..=255 (and takes NaN, from an all-zero x, to 0).
    let zero_point = cast(&mut lowering, zp_rounded.0, &one, DType::F32, DType::U8);
    let zp_real = cast(&mut lowering, zero_point, &one, DType::U8, DType::F32);
    let divided = binary(
        &mut lowering,
        BinaryOp::Div,
        DType::F32,
        (Operand::In(0), x.shape.clone()),
        scale.clone(),
        None,
    );
    let rounded = round_half_even(&mut lowering, divided);
    let shifted = binary(
        &mut lowering,
        BinaryOp::Add,
        DType::F32,
        rounded,
        (zp_real, one),
        None,
    );
    lowering.push(
        KernelOp::Cast {
            from: DType::F32,
            to: DType::U8,
        },
        vec![shifted.0],
        vec![Operand::Out(0)],
    );
    lowering.aliases.push((Operand::Out(1), scale.0));
    lowering.aliases.push((Operand::Out(2), zero_point));
    Ok(Some(lowering))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_broadcast_in_their_operand() {
        // A [m, k] x B [k, n] -> C [m, n]; a0 one per row (m), b0 one per column (n).
        let axes: AxesMapping = "mk,kn,,m,,n,,,->mn".parse().unwrap();
        assert_eq!(
            param_shape(&axes, 3, InOut::In(0), 2, &[4]),
            Some(vec![4, 1])
        );
        assert_eq!(param_shape(&axes, 5, InOut::Out, 2, &[3]), Some(vec![1, 3]));
        // The row zero point of A does not live in B.
        assert_eq!(param_shape(&axes, 3, InOut::In(1), 2, &[4]), None);
        // One value broadcasts anywhere.
        assert_eq!(
            param_shape(&axes, 3, InOut::In(1), 2, &[1]),
            Some(vec![1, 1])
        );
    }
}
