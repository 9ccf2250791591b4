//! QDQ convolutions and matrix products as integer products, as onnxruntime fuses them: in a
//! model quantized in the QDQ format, `DequantizeLinear(x_q)` and `DequantizeLinear(w_q)` (a
//! constant) feed a float `Conv` or `MatMul` whose only reader is a `QuantizeLinear`. That is
//! QLinearConv / QLinearMatMul written out, and the cpu backend runs it as one: tract's quantized
//! convolution or matrix product over `x_q` and `w_q` (8-bit operands, 32-bit sums: VNNI on this
//! kind of x86, dot products on arm64), or Tessera's exact depthwise one
//! ([`super::quantized_depthwise_conv`]). Otherwise each product ran in f32 between a dequantize
//! and a quantize, no faster than the float model.
//!
//! The pass runs on the typed graph before tract declutters it. tract has already folded each
//! weight's dequantization into a float constant; the file's scales and zero points (kept by the
//! core, [`DequantizedConstants`]) give the integers back, exactly or not at all.
//! Products of two computed operands (attention's) stay float: tract's integer version of those
//! corrects the zero points with separate element-wise ops, slower than the float product.
//! On x86-64 without VNNI, where tract's integer kernel is slower than f32 (see
//! [`super::integer_products_pay`]), quantized products run on Tessera's AVX2 kernels instead:
//! unit-stride convolutions on the tap kernel, products by constant weights on
//! [`super::quantized_matmul`]'s; the rest as f32 sums of their centred integers.

use super::quantize_linear::FastRequantize;
use super::quantized_conv_in_f32::{CentredF32, reach_from_zero};
use crate::plan_graph::constant as konst;
use tessera_core::model::dequantized_constants::DequantizedConstants;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cast::Cast;
use tessera_core::tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat, PaddingSpec, PoolSpec};
use tessera_core::tract_onnx::tract_core::ops::einsum::EinSum;
use tessera_core::tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;
use tessera_core::tract_onnx::tract_core::ops::quant::{
    DequantizeLinearF32, QuantizeLinearI8, QuantizeLinearU8,
};
use tessera_core::{DType, Model};

/// The fewest output channels for which a k×k convolution runs as tract's integer one: magika's
/// (512 channels) is faster so, mtcnn's (10 to 128) slower.
const MIN_IM2COL_CHANNELS: usize = 256;

/// A computed 8-bit tensor and the parameters it is dequantized with.
struct Activation {
    quantized: OutletId,
    scale: f32,
    zero: i32,
}

/// A constant integer tensor and its per-tensor (one value) or per-channel dequantization.
struct QuantizedConstant {
    values: Arc<Tensor>,
    scales: Vec<f32>,
    zeros: Vec<i32>,
    /// The axis the parameters run along, when there are several.
    axis: Option<usize>,
}

/// Where a product's output is quantized, and how.
struct Requantization {
    /// The QuantizeLinear node, whose output the integer product takes over.
    node: usize,
    scale: f32,
    zero: i32,
    datum_type: DatumType,
}

fn is_8_bit(dt: DatumType) -> bool {
    dt == u8::datum_type() || dt == i8::datum_type()
}

/// `outlet` as a per-tensor dequantization of a computed 8-bit tensor.
fn activation(model: &TypedModel, outlet: OutletId) -> Option<Activation> {
    let node = model.node(outlet.node);
    let dequantize = node.op_as::<DequantizeLinearF32>()?;
    let input = model.outlet_fact(node.inputs[0]).ok()?;
    (is_8_bit(input.datum_type) && input.konst.is_none()).then_some(Activation {
        quantized: node.inputs[0],
        scale: dequantize.scale,
        zero: dequantize.zero_point,
    })
}

/// A constant's values as `T`.
fn values<T: Datum + Copy>(tensor: &Tensor) -> Option<Vec<T>> {
    let cast = tensor.cast_to::<T>().ok()?;
    Some(cast.try_as_plain_ram().ok()?.as_slice::<T>().ok()?.to_vec())
}

/// `outlet` as a constant that tract folded from the dequantization of an integer one, with the
/// integers recovered (exactly, or not at all) from its values and the file's parameters.
fn quantized_constant(
    model: &TypedModel,
    constants: &DequantizedConstants,
    outlet: OutletId,
) -> Option<QuantizedConstant> {
    let node = model.node(outlet.node);
    let float = konst(model, outlet)?;
    // tract names a folded output after its node and slot.
    let dequantization = constants.get(node.name.strip_suffix(".0")?)?;
    let shape = float.shape();
    let integers = dequantization.integers(&values::<f32>(&float)?, shape)?;
    let values = match dequantization.dtype {
        DType::U8 => tensor1(&integers.iter().map(|&q| q as u8).collect::<Vec<_>>()),
        DType::I8 => tensor1(&integers.iter().map(|&q| q as i8).collect::<Vec<_>>()),
        DType::I32 => tensor1(&integers),
        _ => return None,
    };
    let several = dequantization.scales.len() > 1;
    Some(QuantizedConstant {
        values: values.into_shape(shape).ok()?.into_arc_tensor(),
        scales: dequantization.scales.clone(),
        zeros: dequantization.zeros.clone(),
        axis: several.then_some(dequantization.axis),
    })
}

/// The QuantizeLinear that alone reads `node`'s output. Its scale comes exact from a
/// DequantizeLinear reading it with the same zero point (tract keeps `1 / scale` in the
/// quantize), else as the inverse of that.
fn requantization(model: &TypedModel, node: usize) -> Option<Requantization> {
    let output = OutletId::new(node, 0);
    if model.output_outlets().ok()?.contains(&output) {
        return None;
    }
    let quantize = model.single_succ(node).ok()??;
    let op = quantize.op_as::<ElementWiseOp>()?;
    let (multiplier, zero, datum_type) = if let Some(q) = op.0.downcast_ref::<QuantizeLinearU8>() {
        (q.scale, q.zero_point as i32, u8::datum_type())
    } else {
        let q = op.0.downcast_ref::<QuantizeLinearI8>()?;
        (q.scale, q.zero_point as i32, i8::datum_type())
    };
    let scale = quantize.outputs[0]
        .successors
        .iter()
        .filter_map(|inlet| model.node(inlet.node).op_as::<DequantizeLinearF32>())
        .find(|dq| dq.zero_point == zero && dq.scale.recip() == multiplier)
        .map_or(multiplier.recip(), |dq| dq.scale);
    Some(Requantization {
        node: quantize.id,
        scale,
        zero,
        datum_type,
    })
}

/// A conv's bias as i32 values quantized with `scale × weight scale` per channel (what
/// onnxruntime's quantizer writes), or zero when the conv has none.
fn quantized_bias(
    model: &TypedModel,
    constants: &DequantizedConstants,
    mut outlet: OutletId,
    input_scale: f32,
    weights: &QuantizedConstant,
) -> Option<Tensor> {
    // tract-onnx casts the bias to the input's type and drops its unit axes.
    while let Some(node) =
        Some(model.node(outlet.node)).filter(|n| n.op_is::<Cast>() || n.op_is::<AxisOp>())
    {
        outlet = node.inputs[0];
    }
    if let Some(zero) = konst(model, outlet).filter(|k| k.len() == 1) {
        return (values::<f32>(&zero)? == [0.0]).then(|| tensor0(0i32));
    }
    let bias = quantized_constant(model, constants, outlet)?;
    if bias.values.datum_type() != i32::datum_type() || bias.zeros.iter().any(|&z| z != 0) {
        return None;
    }
    let channels = bias.values.len();
    let nth = |v: &[f32], c: usize| v[if v.len() == 1 { 0 } else { c }];
    let consistent = (0..channels).all(|c| {
        let want = input_scale * nth(&weights.scales, c);
        (nth(&bias.scales, c) - want).abs() <= 1e-6 * want.abs()
    });
    consistent.then(|| (*bias.values).clone().into_shape(&[channels]).ok())?
}

/// A parameter as a constant: a scalar when it is one value for all (per tensor, or the zero
/// points of symmetric per-channel weights), else one value per channel. tract corrects
/// per-channel zero points with separate element-wise ops, which made per-channel products slower
/// than float ones.
fn parameter<T: Datum + Copy + PartialEq>(values: &[T]) -> Tensor {
    if values.iter().all(|v| *v == values[0]) {
        tensor0(values[0])
    } else {
        tensor1(values)
    }
}

/// The integer version of a QDQ convolution at `node`, or `None` when it is not one.
fn integer_conv(
    model: &TypedModel,
    constants: &DequantizedConstants,
    node: &TypedNode,
    integer_pays: bool,
) -> Option<TypedModelPatch> {
    let conv = node.op_as::<Conv>()?;
    if conv.q_params.is_some() || conv.kernel_fmt != KernelFormat::OIHW || node.inputs.len() != 3 {
        return None;
    }
    // Which integer convolutions pay: depthwise ones (Tessera's own op), unit-stride ones where
    // Tessera's tap kernel runs them (AVX-512 VNNI or AVX2), and, where tract's integer
    // products pay (`integer_pays`), pointwise ones (a matrix product for tract) and, through
    // tract's integer im2col — a generic gather whose cost only a wide product amortizes —
    // those with many output channels. Narrower ones stay float, on Tessera's convolution:
    // mtcnn's (10 to 128 channels) ran 1.5-2x slower as tract's integer ones. Where tract's do
    // not pay, only those the tap kernel takes and runs faster than the float product by their
    // input's shape too: what it leaves would go to tract's slow integer kernel.
    let pool = &conv.pool_spec;
    let depthwise =
        conv.group > 1 && conv.group == pool.input_channels && conv.group == pool.output_channels;
    let pointwise = pool.kernel_shape.iter().all(|&k| k == 1)
        && pool
            .strides
            .as_ref()
            .is_none_or(|s| s.iter().all(|&s| s == 1));
    let wide = pool.output_channels >= MIN_IM2COL_CHANNELS;
    let on_tap_kernel = super::quantized_conv_runs_on_tap_products(conv);
    let integer = if integer_pays {
        pointwise || wide || on_tap_kernel
    } else {
        let input = model.outlet_fact(node.inputs[0]).ok()?;
        input
            .shape
            .as_concrete()
            .is_some_and(|shape| super::tap_products_pay_over_float(conv, shape))
    };
    if !(depthwise || (conv.group == 1 && integer)) {
        return None;
    }
    let x = activation(model, node.inputs[0])?;
    let weights = quantized_constant(model, constants, node.inputs[1])?;
    if !is_8_bit(weights.values.datum_type()) || !matches!(weights.axis, None | Some(0)) {
        return None;
    }
    let bias = quantized_bias(model, constants, node.inputs[2], x.scale, &weights)?;
    let y = requantization(model, node.id)?;
    let op = Conv {
        q_params: Some(i32::datum_type()),
        ..conv.clone()
    };
    // NCHW: channels are axis 1 of the output.
    wire_integer_product(model, &node.name, Box::new(op), &x, &weights, bias, &y, 1)
}

/// An integer 2-D convolution (a QDQ one made integer above, a QLinearConv, a ConvInteger) whose
/// input is one column wide (`[n, c, h, 1]`) under a kernel one column wide, as the same
/// convolution in 1-D over the rows. A k×1 convolution is how a 1-D one exported through
/// TensorFlow or JAX looks (magika's), and tract's integer im2col copies such an input one value
/// at a time (one column per row: magika's 256×512 input, 5 taps, 1.7 ms per run), while in 1-D
/// it copies a row of taps at once (0.71 ms).
fn integer_conv_in_one_d(model: &TypedModel, node: &TypedNode) -> Option<TypedModelPatch> {
    let conv = node.op_as::<Conv>()?;
    if conv.q_params.is_none() || conv.kernel_fmt != KernelFormat::OIHW {
        return None;
    }
    let pool_spec = over_rows_only(model, node, conv)?;
    let mut patch = TypedModelPatch::new("integer convolution in 1-D");
    let mut inputs = patch.taps(model, &node.inputs).ok()?;
    // The input's and the kernel's (OIHW) last axis, of size 1.
    for ix in [0, 1] {
        inputs[ix] = patch
            .wire_node(
                format!("{}.one_d.{ix}", node.name),
                AxisOp::Rm(3),
                &[inputs[ix]],
            )
            .ok()?[0];
    }
    let op = Conv {
        pool_spec,
        ..conv.clone()
    };
    let sums = patch
        .wire_node(format!("{}.one_d", node.name), op, &inputs)
        .ok()?;
    let wire = patch
        .wire_node(format!("{}.two_d", node.name), AxisOp::Add(3), &sums)
        .ok()?;
    patch.shunt_outside(model, node.id.into(), wire[0]).ok()?;
    Some(patch)
}

/// The 1-D version of `conv`'s geometry when its input and kernel are one column wide.
fn over_rows_only(model: &TypedModel, node: &TypedNode, conv: &Conv) -> Option<PoolSpec> {
    let pool = &conv.pool_spec;
    let input = model.outlet_fact(node.inputs[0]).ok()?;
    let unit_column = input.rank() == 4 && input.shape[3].to_usize().ok()? == 1;
    let dilated = pool
        .dilations
        .as_ref()
        .is_some_and(|d| d.len() != 2 || d[1] != 1);
    if !unit_column
        || pool.data_format != DataFormat::NCHW
        || pool.kernel_shape.len() != 2
        || pool.kernel_shape[1] != 1
        || dilated
    {
        return None;
    }
    let rows = |v: &TVec<usize>| -> Option<TVec<usize>> { (v.len() == 2).then(|| tvec![v[0]]) };
    let padding = match &pool.padding {
        PaddingSpec::Valid => PaddingSpec::Valid,
        PaddingSpec::Explicit(before, after)
            if before.get(1) == Some(&0) && after.get(1) == Some(&0) =>
        {
            PaddingSpec::Explicit(rows(before)?, rows(after)?)
        }
        // A kernel one column wide pads no columns: same padding is the rows' alone.
        PaddingSpec::SameUpper => PaddingSpec::SameUpper,
        PaddingSpec::SameLower => PaddingSpec::SameLower,
        _ => return None,
    };
    Some(PoolSpec {
        data_format: DataFormat::NCHW,
        kernel_shape: tvec![pool.kernel_shape[0]],
        padding,
        dilations: pool.dilations.as_ref().and_then(rows),
        strides: pool.strides.as_ref().and_then(rows),
        input_channels: pool.input_channels,
        output_channels: pool.output_channels,
    })
}

/// Wires into `patch` tract's integer product `op` (an i32 output: scales 1, output zero point 0,
/// so its sums are exact) over `input` and the constants of `weights` and `bias`, then Tessera's
/// requantization of the sums, along `channel_axis` of the output, onto the QuantizeLinear `y`.
#[allow(clippy::too_many_arguments)]
fn wire_integer_product(
    model: &TypedModel,
    name: &str,
    op: Box<dyn TypedOp>,
    x: &Activation,
    weights: &QuantizedConstant,
    bias: Tensor,
    y: &Requantization,
    channel_axis: usize,
) -> Option<TypedModelPatch> {
    let mut patch = TypedModelPatch::new("QDQ product as an integer one");
    let mut inputs = vec![patch.tap_model(model, x.quantized).ok()?];
    let constants = [
        (*weights.values).clone(),
        bias,
        tensor0(x.zero),
        tensor0(1f32),
        parameter(&weights.zeros),
        tensor0(1f32),
        tensor0(0i32),
        tensor0(1f32),
    ];
    for (ix, constant) in constants.into_iter().enumerate() {
        inputs.push(patch.add_const(format!("{name}.q{ix}"), constant).ok()?);
    }
    let sums = patch
        .wire_node(format!("{name}.integer"), op, &inputs)
        .ok()?;
    // onnxruntime's output scale: x_scale · w_scale / y_scale, in f32, in that order.
    let multiplier = weights
        .scales
        .iter()
        .map(|&w| x.scale * w / y.scale)
        .collect();
    let requantize = FastRequantize {
        multiplier,
        axis: channel_axis,
        zero: y.zero,
        output: y.datum_type,
    };
    let wire = patch
        .wire_node(format!("{name}.requantized"), requantize, &sums)
        .ok()?;
    patch
        .shunt_outside(model, OutletId::new(y.node, 0), wire[0])
        .ok()?;
    Some(patch)
}

/// The integer version of a QDQ matrix product at `node` (a computed left operand times a
/// constant `[k, n]` right one, per tensor or per column), or `None` when it is not one.
fn integer_matmul(
    model: &TypedModel,
    constants: &DequantizedConstants,
    node: &TypedNode,
    integer_pays: bool,
) -> Option<TypedModelPatch> {
    let einsum = node.op_as::<EinSum>()?;
    if einsum.q_params.is_some() || node.inputs.len() != 2 {
        return None;
    }
    let a = activation(model, node.inputs[0])?;
    let b = quantized_constant(model, constants, node.inputs[1])?;
    if !is_8_bit(b.values.datum_type()) || b.values.rank() != 2 {
        return None;
    }
    // tract-onnx writes a MatMul as `…mk,kn->…mn`.
    let (specs, outputs) = einsum.axes.to_strs();
    let [a_spec, b_spec] = &specs[..] else {
        return None;
    };
    let [c_spec] = &outputs[..] else {
        return None;
    };
    if b_spec != "kn" || !a_spec.ends_with("mk") || !c_spec.ends_with("mn") {
        return None;
    }
    // tract's inputs: a, b, bias, a0, a_scale, b0, b_scale, c0, c_scale. The scales are 1 (the
    // requantization is Tessera's); b's zero points run along `n` unless they are all one value.
    let zeros_per_column = match b.axis {
        None => "",
        Some(1) if parameter(&b.zeros).rank() == 1 => "n",
        Some(1) => "",
        Some(_) => return None,
    };
    let y = requantization(model, node.id)?;
    if !integer_pays {
        return avx2_integer_matmul(model, node, &a, &b, &y, (a_spec, b_spec, c_spec));
    }
    let axes = format!("{a_spec},kn,,,,{zeros_per_column},,,->{c_spec}")
        .parse()
        .ok()?;
    let op = EinSum {
        axes,
        operating_dt: i32::datum_type(),
        q_params: Some(i32::datum_type()),
    };
    let columns = c_spec.len() - 1;
    let bias = tensor0(0i32);
    wire_integer_product(model, &node.name, Box::new(op), &a, &b, bias, &y, columns)
}

/// [`integer_matmul`] where tract's integer products do not pay: the integer sums on Tessera's
/// AVX2 kernel, then onnxruntime's requantization, per column along the output's last axis.
fn avx2_integer_matmul(
    model: &TypedModel,
    node: &TypedNode,
    a: &Activation,
    b: &QuantizedConstant,
    y: &Requantization,
    specs: (&str, &str, &str),
) -> Option<TypedModelPatch> {
    let zeros = match b.axis {
        None => vec![b.zeros[0]; b.values.shape()[1]],
        Some(_) => b.zeros.clone(),
    };
    let centred = centred_columns(&values::<i32>(&b.values)?, &zeros, b.values.shape()[1])?;
    let mut patch = TypedModelPatch::new("QDQ matrix product as integer sums on AVX2");
    let input = patch.tap_model(model, a.quantized).ok()?;
    let sums = avx2_sums(
        model,
        &mut patch,
        &node.name,
        (input, a.quantized),
        Ok(a.zero),
        &centred,
        b.values.shape(),
        specs,
    )?;
    let multiplier = b.scales.iter().map(|&w| a.scale * w / y.scale).collect();
    let requantize = FastRequantize {
        multiplier,
        axis: specs.2.len() - 1,
        zero: y.zero,
        output: y.datum_type,
    };
    let wire = patch
        .wire_node(format!("{}.requantized", node.name), requantize, &[sums])
        .ok()?;
    patch
        .shunt_outside(model, OutletId::new(y.node, 0), wire[0])
        .ok()?;
    Some(patch)
}

/// The constant `[k, n]` matrix behind `outlet`, seen through the unit axes tract-onnx adds to
/// broadcast a QLinearMatMul's or MatMulInteger's weights to the other operand's rank, and its
/// shape: `outlet`'s last two axes, every other one of length 1.
fn matrix_constant(model: &TypedModel, outlet: OutletId) -> Option<(Arc<Tensor>, [usize; 2])> {
    let shape = model
        .outlet_fact(outlet)
        .ok()?
        .shape
        .as_concrete()?
        .to_vec();
    let [outer @ .., k, n] = &shape[..] else {
        return None;
    };
    if outer.iter().any(|&d| d != 1) {
        return None;
    }
    let mut at = outlet;
    loop {
        if let Some(constant) = konst(model, at) {
            return (constant.len() == k * n).then_some((constant, [*k, *n]));
        }
        let node = model.node(at.node);
        match node.op_as::<AxisOp>()? {
            AxisOp::Add(_) | AxisOp::Rm(_) => at = *node.inputs.first()?,
            _ => return None,
        }
    }
}

/// `values` (rows of `columns`) minus each column's zero point: `zeros` has one per column.
fn centred_columns(values: &[i32], zeros: &[i32], columns: usize) -> Option<Vec<i32>> {
    (columns > 0 && zeros.len() == columns && values.len().is_multiple_of(columns)).then(|| {
        values
            .iter()
            .zip(zeros.iter().cycle())
            .map(|(&v, &z)| v - z)
            .collect()
    })
}

/// The i32 sums of a computed 8-bit operand (`input`: its wire in `patch` and its outlet in
/// `model`), centred on `zero` (a constant, or a computed scalar's outlet in `model`), times
/// constant `centred` weights of `shape` `[k, n]`, wired into `patch` on Tessera's AVX2 kernel;
/// `None` where it does not run or the einsum `specs` (a's, the weights', the output's) are not
/// rows × `…kn` → the same rows × `n`.
#[allow(clippy::too_many_arguments)]
fn avx2_sums(
    model: &TypedModel,
    patch: &mut TypedModelPatch,
    name: &str,
    (input, outlet): (OutletId, OutletId),
    zero: Result<i32, OutletId>,
    centred: &[i32],
    shape: &[usize],
    (a_spec, b_spec, c_spec): (&str, &str, &str),
) -> Option<OutletId> {
    let [depth, columns] = *shape else {
        return None;
    };
    let (rows_a, k) = a_spec.split_at(a_spec.len().checked_sub(1)?);
    let (rows_c, n) = c_spec.split_at(c_spec.len().checked_sub(1)?);
    // Weights of rank above 2 have unit outer axes (see `matrix_constant`).
    if rows_a != rows_c || !b_spec.ends_with(&format!("{k}{n}")) || rows_a.contains(k) {
        return None;
    }
    let fact = model.outlet_fact(outlet).ok()?;
    let op = super::quantized_matmul_on_avx2(centred, depth, columns, fact.datum_type, zero.ok())?;
    let mut inputs = vec![input];
    if let Err(zero) = zero {
        inputs.push(patch.tap_model(model, zero).ok()?);
    }
    Some(patch.wire_node(format!("{name}.sums"), op, &inputs).ok()?[0])
}

/// Whether `outlet` is computed at run time: not a constant, nor one seen through axis changes
/// (tract-onnx broadcasts a QLinearMatMul's weights to the other operand's rank that way).
fn computed(model: &TypedModel, mut outlet: OutletId) -> bool {
    loop {
        let node = model.node(outlet.node);
        if crate::plan_graph::is_constant(model, outlet)
            || node.op_is::<tessera_core::tract_onnx::tract_core::ops::konst::Const>()
        {
            return false;
        }
        match node.inputs.first() {
            Some(&input) if node.op_is::<AxisOp>() => outlet = input,
            _ => return true,
        }
    }
}

/// A quantized matrix product (QLinearMatMul, MatMulInteger: tract's `EinSum` with quantization
/// parameters) as f32 sums of its centred operands, then onnxruntime's requantization (or, for
/// 32-bit outputs, the sums as integers). Products of 8-bit integers are exact in f32, and so
/// are their sums below 2²⁴. Where tract's integer products do not pay, a product by constant
/// weights runs as exact integer sums on Tessera's AVX2 kernel instead ([`avx2_matmul_sums`]).
///
/// Where tract's integer products pay (`integer_pays`), only products of two computed operands
/// (attention's) are taken, and only when `k × reach(a) × reach(b)` keeps every sum below 2²⁴
/// (checked), so that the float product is exact: tract's integer version of those corrects the
/// zero points with separate element-wise ops and reductions over the whole output (11 of
/// minilm's 17 ms in the QOperator format). Elsewhere ([`super::integer_products_pay`]) every
/// one is, with sums past 2²⁴ carrying f32's rounding (at most a relative 2⁻²⁴ per term: a
/// requantized output moves a step only next to a tie); zero points may then be computed
/// (DynamicQuantizeLinear's, one value), and per-column weight zero points are folded into the
/// weights.
fn float_sums_matmul(
    model: &TypedModel,
    node: &TypedNode,
    integer_pays: bool,
) -> Option<TypedModelPatch> {
    let einsum = node.op_as::<EinSum>()?;
    let output = einsum.q_params?.unquantized();
    let output_is_i32 = output == i32::datum_type() && !integer_pays;
    if !(is_8_bit(output) || output_is_i32) || node.inputs.len() != 9 {
        return None;
    }
    let operand = |slot: usize| {
        let fact = model.outlet_fact(node.inputs[slot]).ok()?;
        let taken =
            is_8_bit(fact.datum_type) && (!integer_pays || computed(model, node.inputs[slot]));
        taken.then_some(fact.datum_type)
    };
    let (a_type, b_type) = (operand(0)?, operand(1)?);
    let scalar = |slot: usize| konst(model, node.inputs[slot]).filter(|k| k.len() == 1);
    let int = |slot: usize| values::<i32>(&*scalar(slot)?)?.first().copied();
    let float = |slot: usize| values::<f32>(&*scalar(slot)?)?.first().copied();
    if int(2)? != 0 {
        return None;
    }
    let (a_scale, b_scale, y_zero, y_scale) = (float(4)?, float(6)?, int(7)?, float(8)?);
    if output_is_i32 && (a_scale, b_scale, y_zero, y_scale) != (1.0, 1.0, 0, 1.0) {
        return None;
    }
    // The summed axis: in both operands, not in the output.
    let (specs, outputs) = einsum.axes.to_strs();
    let (a_spec, b_spec, c_spec) = (specs.first()?, specs.get(1)?, outputs.first()?);
    if integer_pays {
        let k_axis = a_spec
            .chars()
            .position(|c| b_spec.contains(c) && !c_spec.contains(c))?;
        let k = model.outlet_fact(node.inputs[0]).ok()?.shape[k_axis]
            .to_usize()
            .ok()? as u64;
        let reach = |dt: DatumType, zero: i32| reach_from_zero(dt, Some(zero)) as u64;
        if k * reach(a_type, int(3)?) * reach(b_type, int(5)?) >= 1 << 24 {
            return None;
        }
    }
    let name = &node.name;
    // Where tract's integer products do not pay, Tessera's AVX2 kernel's exact integer sums,
    // else f32 sums.
    let on_avx2 = (!integer_pays)
        .then(|| {
            let mut patch =
                TypedModelPatch::new("quantized matrix product as integer sums on AVX2");
            let specs = (a_spec.as_str(), b_spec.as_str(), c_spec.as_str());
            let sums = avx2_matmul_sums(model, node, &mut patch, int(3), specs)?;
            Some((patch, sums))
        })
        .flatten();
    let (mut patch, sums, integer) = match on_avx2 {
        Some((patch, sums)) => (patch, sums, true),
        None => {
            let mut patch = TypedModelPatch::new("quantized matrix product as f32 sums");
            let sums = f32_sums(model, node, &mut patch, (a_spec, b_spec, c_spec))?;
            (patch, sums, false)
        }
    };
    let wire = match (output_is_i32, integer) {
        (true, true) => sums,
        (true, false) => patch
            .wire_node(format!("{name}.integers"), Cast::new(output), &[sums])
            .ok()?[0],
        (false, _) => {
            let requantize = FastRequantize {
                multiplier: vec![a_scale * b_scale / y_scale],
                axis: 0,
                zero: y_zero,
                output,
            };
            patch
                .wire_node(format!("{name}.requantized"), requantize, &[sums])
                .ok()?[0]
        }
    };
    patch.shunt_outside(model, node.id.into(), wire).ok()?;
    Some(patch)
}

/// The sums of the quantized matrix product at `node` (tract's `EinSum` with quantization
/// parameters, its a's zero point `a_zero` when a constant) on Tessera's AVX2 kernel, wired into
/// `patch`: where its right operand is a constant matrix and its left one computed.
fn avx2_matmul_sums(
    model: &TypedModel,
    node: &TypedNode,
    patch: &mut TypedModelPatch,
    a_zero: Option<i32>,
    specs: (&str, &str, &str),
) -> Option<OutletId> {
    let (weights, shape) = matrix_constant(model, node.inputs[1])?;
    let zeros = values::<i32>(&*konst(model, node.inputs[5])?)?;
    let zeros = if zeros.len() == 1 {
        vec![zeros[0]; shape[1]]
    } else {
        zeros
    };
    let centred = centred_columns(&values::<i32>(&weights)?, &zeros, shape[1])?;
    let input = node.inputs[0];
    let zero_is_scalar = model
        .outlet_fact(node.inputs[3])
        .ok()?
        .shape
        .volume()
        .is_one();
    if konst(model, input).is_some() || !zero_is_scalar {
        return None;
    }
    let tapped = patch.tap_model(model, input).ok()?;
    let zero = a_zero.ok_or(node.inputs[3]);
    avx2_sums(
        model,
        patch,
        &node.name,
        (tapped, input),
        zero,
        &centred,
        &shape,
        specs,
    )
}

/// The f32 sums of the quantized matrix product at `node` (`specs`: its einsum's), its operands
/// centred, wired into `patch`.
fn f32_sums(
    model: &TypedModel,
    node: &TypedNode,
    patch: &mut TypedModelPatch,
    (a_spec, b_spec, c_spec): (&String, &String, &String),
) -> Option<OutletId> {
    let name = &node.name;
    let mut centred = vec![];
    for (slot, zero_slot) in [(0, 3), (1, 5)] {
        let operand = node.inputs[slot];
        let zero = node.inputs[zero_slot];
        let wire = if let Some(constant) = konst(model, operand) {
            // Constant (weights): centred here, once, with any zero points along the columns.
            let zeros = konst(model, zero)?;
            let spec = if slot == 0 { a_spec } else { b_spec };
            let centred = centred_constant(&constant, &zeros, spec, c_spec, slot)?;
            patch
                .add_const(format!("{name}.centred{slot}"), centred)
                .ok()?
        } else {
            centred_activation(model, patch, operand, zero, &format!("{name}.{slot}"))?
        };
        centred.push(wire);
    }
    let float = EinSum {
        axes: format!("{a_spec},{b_spec}->{c_spec}").parse().ok()?,
        operating_dt: f32::datum_type(),
        q_params: None,
    };
    Some(
        patch
            .wire_node(format!("{name}.sums"), float, &centred)
            .ok()?[0],
    )
}

/// A computed 8-bit operand minus its zero point (one value: a constant, or DynamicQuantizeLinear's
/// computed one), as f32, wired into `patch`.
fn centred_activation(
    model: &TypedModel,
    patch: &mut TypedModelPatch,
    operand: OutletId,
    zero: OutletId,
    name: &str,
) -> Option<OutletId> {
    if !model.outlet_fact(zero).ok()?.shape.volume().is_one() {
        return None;
    }
    if let Some(zero) = konst(model, zero) {
        let input = patch.tap_model(model, operand).ok()?;
        let centre = DequantizeLinearF32::new(1.0, values::<i32>(&zero)?[0]);
        return Some(
            patch
                .wire_node(format!("{name}.centred"), centre, &[input])
                .ok()?[0],
        );
    }
    let inputs = [
        patch.tap_model(model, operand).ok()?,
        patch.tap_model(model, zero).ok()?,
    ];
    Some(
        patch
            .wire_node(format!("{name}.centred"), CentredF32, &inputs)
            .ok()?[0],
    )
}

/// A constant 8-bit operand of a quantized matrix product (`spec`: its axes), minus its zero
/// points (one value, or one per column `n` of the second operand), as f32.
fn centred_constant(
    operand: &Tensor,
    zeros: &Tensor,
    spec: &str,
    c_spec: &str,
    slot: usize,
) -> Option<Tensor> {
    let ints = values::<i32>(operand)?;
    let zeros = values::<i32>(zeros)?;
    let centred: Vec<f32> = if zeros.len() == 1 {
        ints.iter().map(|&v| (v - zeros[0]) as f32).collect()
    } else {
        // Per column: only the second operand's last axis, an output axis.
        let last = spec.chars().last()?;
        let columns = *operand.shape().last()?;
        if slot != 1 || !c_spec.contains(last) || zeros.len() != columns {
            return None;
        }
        ints.iter()
            .enumerate()
            .map(|(i, &v)| (v - zeros[i % columns]) as f32)
            .collect()
    };
    Tensor::from_shape(operand.shape(), &centred).ok()
}

/// Turns every QDQ convolution and matrix product of `model` (a typed graph not yet decluttered,
/// lowered from `source`) that this module recognizes into an integer one, and every quantized
/// product of two computed operands into its exact f32 form. Where tract's integer products do
/// not pay ([`super::integer_products_pay`]), QDQ products stay f32 instead, and the other
/// formats' quantized products become f32 sums: QLinearMatMul and MatMulInteger
/// ([`float_sums_matmul`]), QLinearConv and ConvInteger ([`super::quantized_conv_in_f32`]).
/// Where they pay, the quantized convolutions Tessera's VNNI kernel cannot take become exact f32
/// ones when narrow ([`super::quantized_conv_in_f32`]). Both here, before tract's declutter makes
/// the 1×1 ones integer matrix products. Returns how many.
pub fn integer_products(model: &mut TypedModel, source: &Model) -> TractResult<usize> {
    integer_products_where(model, source, super::integer_products_pay())
}

/// [`integer_products`], with QDQ products made tract's integer ones only when `integer_pays`
/// (depthwise convolutions, on Tessera's own op, and exact f32 products either way).
fn integer_products_where(
    model: &mut TypedModel,
    source: &Model,
    integer_pays: bool,
) -> TractResult<usize> {
    let constants = source.dequantized_constants();
    let quantized = model.nodes().iter().any(|n| {
        n.op_is::<DequantizeLinearF32>()
            || n.op_as::<EinSum>().is_some_and(|e| e.q_params.is_some())
            || n.op_as::<Conv>().is_some_and(|c| c.q_params.is_some())
    });
    if !quantized {
        return Ok(0);
    }
    // One at a time: a product's quantized input may be the output of the one before, which
    // its patch must read from the integer product that replaced it.
    let mut count = 0;
    for id in 0..model.nodes().len() {
        let node = model.node(id);
        let patch = integer_conv(model, constants, node, integer_pays)
            .or_else(|| integer_matmul(model, constants, node, integer_pays))
            .or_else(|| float_sums_matmul(model, node, integer_pays));
        if let Some(patch) = patch {
            patch.apply(model)?;
            count += 1;
        }
    }
    // Before tract's declutter makes the 1×1 ones matrix products for its own integer kernel:
    // first Tessera's tap kernel (k×1 ones included: it reads a column-wide input as one row),
    // then, for tract, the rest of those in 1-D (whose weights it no longer sees as constants),
    // then exact float sums for the rest it decides on (where integers pay, the narrow ones:
    // u8 weights, whose centred values leave i8, or strides).
    super::quantized_convs_on_tap_products(model)?;
    for id in 0..model.nodes().len() {
        if let Some(patch) = integer_conv_in_one_d(model, model.node(id)) {
            patch.apply(model)?;
        }
    }
    count += super::quantized_conv_in_f32::quantized_convs_in_f32_where(model, integer_pays)?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::onnx_test_graph::*;
    use crate::{CpuOptions, CpuSession};
    use tessera_core::tract_onnx::pb::{NodeProto, TensorProto};

    const X_SCALE: f32 = 0.0625;
    const Y_SCALE: f32 = 0.4;
    const W_SCALES: [f32; 3] = [0.011, 0.02, 0.0037];
    const W2_SCALES: [f32; 3] = [0.013, 0.0021, 0.04];

    /// The convolution's kernel side and padding: pointwise, one of those that run as integers
    /// whatever their width (a k×k one needs `MIN_IM2COL_CHANNELS` output channels).
    const KERNEL: usize = 1;
    const PAD: i32 = 0;

    fn conv_weights() -> Vec<i8> {
        (0..3 * 2 * KERNEL as i32 * KERNEL as i32)
            .map(|i: i32| (i * 53 % 255 - 127) as i8)
            .collect()
    }

    fn matmul_weights() -> Vec<i8> {
        (0..4 * 3)
            .map(|i: i32| (i * 29 % 200 - 100) as i8)
            .collect()
    }

    /// QDQ as onnxruntime's quantizer writes it: x → Q → DQ → Conv (weights per channel,
    /// an i32 bias) → Q → DQ → y; x2 → Q → DQ → MatMul (weights per column) → Q → DQ → y2; and a
    /// QLinearMatMul of two computed operands, x3 × x4 → DQ → y3.
    fn qdq_model() -> Vec<u8> {
        let weight_scales: Vec<f32> = W_SCALES.to_vec();
        let bias_scales: Vec<f32> = W_SCALES.iter().map(|w| X_SCALE * w).collect();
        let initializers = vec![
            f32s("sx", &[], &[X_SCALE]),
            u8s("zx", &[], &[100]),
            i8s("w", &[3, 2, KERNEL as i64, KERNEL as i64], &conv_weights()),
            f32s("sw", &[3], &weight_scales),
            i8s("zw", &[3], &[0, 0, 0]),
            i32s("b", &[3], &[-300, 25, 4000]),
            f32s("sb", &[3], &bias_scales),
            i32s("zb", &[3], &[0, 0, 0]),
            f32s("sy", &[], &[Y_SCALE]),
            u8s("zy", &[], &[128]),
            i8s("w2", &[4, 3], &matmul_weights()),
            f32s("sw2", &[3], &W2_SCALES),
            i8s("zw2", &[3], &[0, 0, 0]),
        ];
        let nodes = vec![
            node("QuantizeLinear", &["x", "sx", "zx"], "xq", vec![]),
            node("DequantizeLinear", &["xq", "sx", "zx"], "xd", vec![]),
            node(
                "DequantizeLinear",
                &["w", "sw", "zw"],
                "wd",
                vec![int("axis", 0)],
            ),
            node(
                "DequantizeLinear",
                &["b", "sb", "zb"],
                "bd",
                vec![int("axis", 0)],
            ),
            node(
                "Conv",
                &["xd", "wd", "bd"],
                "c",
                vec![ints("pads", &[PAD as i64; 4])],
            ),
            node("QuantizeLinear", &["c", "sy", "zy"], "cq", vec![]),
            node("DequantizeLinear", &["cq", "sy", "zy"], "y", vec![]),
            node("QuantizeLinear", &["x2", "sx", "zx"], "x2q", vec![]),
            node("DequantizeLinear", &["x2q", "sx", "zx"], "x2d", vec![]),
            node(
                "DequantizeLinear",
                &["w2", "sw2", "zw2"],
                "w2d",
                vec![int("axis", 1)],
            ),
            node("MatMul", &["x2d", "w2d"], "m", vec![]),
            node("QuantizeLinear", &["m", "sy", "zy"], "mq", vec![]),
            node("DequantizeLinear", &["mq", "sy", "zy"], "y2", vec![]),
            node("QuantizeLinear", &["x3", "sx", "zx"], "x3q", vec![]),
            node("QuantizeLinear", &["x4", "sx", "zx"], "x4q", vec![]),
            node(
                "QLinearMatMul",
                &["x3q", "sx", "zx", "x4q", "sx", "zx", "sy", "zy"],
                "pq",
                vec![],
            ),
            node("DequantizeLinear", &["pq", "sy", "zy"], "y3", vec![]),
        ];
        let inputs = vec![
            value("x", &[1, 2, 5, 5]),
            value("x2", &[2, 4]),
            value("x3", &[2, 4]),
            value("x4", &[4, 3]),
        ];
        let outputs = vec![
            value("y", &[1, 3, 5, 5]),
            value("y2", &[2, 3]),
            value("y3", &[2, 3]),
        ];
        model_bytes(nodes, initializers, inputs, outputs)
    }

    /// Inputs on the quantization grid (levels − 100, times a power of two): quantizing them is
    /// exact in any arithmetic.
    fn levels(count: usize, seed: usize) -> Vec<u8> {
        (0..count).map(|i| ((i * 89 + seed) % 256) as u8).collect()
    }

    fn on_grid(levels: &[u8]) -> Vec<f32> {
        levels
            .iter()
            .map(|&q| (q as i32 - 100) as f32 * X_SCALE)
            .collect()
    }

    /// onnxruntime's requantization of an i32 sum (`x_scale · w_scale` to `y_scale`), then the
    /// DequantizeLinear after it.
    fn requantized(sum: i32, weight_scale: f32) -> f32 {
        let multiplier = X_SCALE * weight_scale / Y_SCALE;
        let q = ((sum as f32 * multiplier).round_ties_even() as i32 + 128).clamp(0, 255);
        (q - 128) as f32 * Y_SCALE
    }

    fn counting_pass(typed: &mut TypedModel, model: &Model) -> TractResult<()> {
        let count = integer_products_where(typed, model, true)?;
        // Where Tessera's VNNI kernel does not take the integer convolution, it is rewritten
        // once more, into exact f32 sums.
        let expected = if super::super::quantized_tap_products::available() {
            3
        } else {
            4
        };
        ensure!(
            count == expected,
            "{count} products rewritten, expected {expected}"
        );
        Ok(())
    }

    /// Where tract's integer products do not pay, the product of two computed operands is
    /// rewritten (exact in f32), the convolution made integer for Tessera's tap kernel where
    /// that pays (VNNI; on AVX2 this 1×1 one over 25 positions is too small to), and the product
    /// with constant weights integer on Tessera's AVX2 kernel where it runs (else it stays f32).
    fn float_pass(typed: &mut TypedModel, model: &Model) -> TractResult<()> {
        use super::super::quantized_tap_products::TapIsa;
        let count = integer_products_where(typed, model, false)?;
        let on_avx2 = super::super::quantized_matmul::available();
        let expected = 1 + usize::from(TapIsa::best() == Some(TapIsa::Vnni)) + usize::from(on_avx2);
        ensure!(
            count == expected,
            "{count} products rewritten, expected {expected}"
        );
        ensure!(integer_sums_on_avx2(typed) == usize::from(on_avx2));
        Ok(())
    }

    /// How many products run on Tessera's AVX2 integer matrix product.
    fn integer_sums_on_avx2(typed: &TypedModel) -> usize {
        typed
            .nodes()
            .iter()
            .filter(|n| n.op.name() == "FastQuantizedMatMul")
            .count()
    }

    #[test]
    fn qdq_products_run_as_integer_ones_with_onnxruntime_s_arithmetic() {
        qdq_model_against_integer_sums(counting_pass, 0.0);
    }

    #[test]
    fn qdq_products_left_in_f32_stay_within_a_quantization_step() {
        qdq_model_against_integer_sums(float_pass, Y_SCALE);
    }

    /// Runs the QDQ model lowered with `pass` and compares its outputs with onnxruntime's integer
    /// arithmetic, to `tolerance` (0: exactly).
    fn qdq_model_against_integer_sums(
        pass: fn(&mut TypedModel, &Model) -> TractResult<()>,
        tolerance: f32,
    ) {
        let close = |got: &[f32], want: &[f32]| {
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(want).enumerate() {
                assert!(
                    (g - w).abs() <= tolerance,
                    "[{i}] {g} vs {w} (tolerance {tolerance})"
                );
            }
        };
        let model = Model::from_bytes(&qdq_model()).unwrap();
        let (xq, x2q, x3q, x4q) = (levels(50, 7), levels(8, 3), levels(8, 11), levels(12, 5));
        let x = tessera_core::Tensor::from_vec(vec![1, 2, 5, 5], on_grid(&xq)).unwrap();
        let x2 = tessera_core::Tensor::from_vec(vec![2, 4], on_grid(&x2q)).unwrap();
        let x3 = tessera_core::Tensor::from_vec(vec![2, 4], on_grid(&x3q)).unwrap();
        let x4 = tessera_core::Tensor::from_vec(vec![4, 3], on_grid(&x4q)).unwrap();
        let inputs = vec![x, x2, x3, x4];
        // No input folded: each product's operand stays computed, as in a session's plan.
        model
            .lower_with_pass(
                &inputs,
                &[false; 4],
                tessera_core::model::specialize::Lowering {
                    before_declutter: Some(pass),
                    keep_axes: true,
                    ..Default::default()
                },
            )
            .expect("every product recognized");
        let session = CpuSession::new(Arc::new(model), &CpuOptions { threads: Some(1) }).unwrap();
        let outputs = session.run(inputs).unwrap();

        let centred = |q: u8| q as i32 - 100;
        let (weights, bias) = (conv_weights(), [-300, 25, 4000]);
        let mut want = vec![];
        for o in 0..3 {
            for oy in 0..5i32 {
                for ox in 0..5i32 {
                    let mut sum = bias[o];
                    for i in 0..2 {
                        for ky in 0..KERNEL as i32 {
                            for kx in 0..KERNEL as i32 {
                                let (iy, ix) = (oy + ky - PAD, ox + kx - PAD);
                                if (0..5).contains(&iy) && (0..5).contains(&ix) {
                                    let x = centred(xq[(i * 25) + (iy * 5 + ix) as usize]);
                                    let tap = (ky * KERNEL as i32 + kx) as usize;
                                    let w = weights[(o * 2 + i) * KERNEL * KERNEL + tap];
                                    sum += x * w as i32;
                                }
                            }
                        }
                    }
                    want.push(requantized(sum, W_SCALES[o]));
                }
            }
        }
        close(outputs[0].as_slice::<f32>().unwrap(), &want);

        let weights = matmul_weights();
        let want: Vec<f32> = (0..2)
            .flat_map(|r| (0..3).map(move |c| (r, c)))
            .map(|(r, c)| {
                let sum = (0..4)
                    .map(|k| centred(x2q[r * 4 + k]) * weights[k * 3 + c] as i32)
                    .sum();
                requantized(sum, W2_SCALES[c])
            })
            .collect();
        close(outputs[1].as_slice::<f32>().unwrap(), &want);

        let want: Vec<f32> = (0..2)
            .flat_map(|r| (0..3).map(move |c| (r, c)))
            .map(|(r, c)| {
                let sum = (0..4)
                    .map(|k| centred(x3q[r * 4 + k]) * centred(x4q[k * 3 + c]))
                    .sum();
                requantized(sum, X_SCALE)
            })
            .collect();
        close(outputs[2].as_slice::<f32>().unwrap(), &want);
    }

    /// `DynamicQuantizeLinear(x)` into the integer product `product` (`MatMulInteger`,
    /// `ConvInteger`) of weights `w` with zero points `wz`, its i32 sums cast to float: the
    /// dynamic quantization onnxruntime's quantizer writes.
    fn dynamic_product_model(
        product: &str,
        initializers: Vec<TensorProto>,
        x: &[i64],
        y: &[i64],
    ) -> Vec<u8> {
        model_bytes(
            vec![
                NodeProto {
                    op_type: "DynamicQuantizeLinear".into(),
                    name: "dql".into(),
                    input: vec!["x".into()],
                    output: vec!["xq".into(), "xs".into(), "xz".into()],
                    ..Default::default()
                },
                node(product, &["xq", "w", "xz", "wz"], "sums", vec![]),
                node("Cast", &["sums"], "y", vec![int("to", 1)]),
            ],
            initializers,
            vec![value("x", x)],
            vec![value("y", y)],
        )
    }

    /// A MatMulInteger with i8 weights and per-column weight zero points.
    fn dynamic_matmul_model() -> Vec<u8> {
        let weights: Vec<i8> = (0..40 * 3)
            .map(|i: i32| (i * 37 % 251 - 125) as i8)
            .collect();
        let initializers = vec![i8s("w", &[40, 3], &weights), i8s("wz", &[3], &[3, -7, 0])];
        dynamic_product_model("MatMulInteger", initializers, &[2, 40], &[2, 3])
    }

    fn no_integer_pass(typed: &mut TypedModel, model: &Model) -> TractResult<()> {
        integer_products_where(typed, model, true).map(|_| ())
    }

    /// The MatMulInteger rewritten: on Tessera's AVX2 kernel where it runs, else as f32 sums.
    fn float_sums_pass(typed: &mut TypedModel, model: &Model) -> TractResult<()> {
        let count = integer_products_where(typed, model, false)?;
        ensure!(count == 1, "{count} products rewritten, expected 1");
        let on_avx2 = super::super::quantized_matmul::available();
        ensure!(integer_sums_on_avx2(typed) == usize::from(on_avx2));
        Ok(())
    }

    /// The outputs of `model` lowered with `pass` before declutter, run as that lowered graph
    /// (each op's own evaluation): what the pass's rewrite computes, not what a session's own
    /// passes would make of the model.
    fn lowered_outputs(
        model: &[u8],
        input: tessera_core::Tensor,
        pass: fn(&mut TypedModel, &Model) -> TractResult<()>,
    ) -> Vec<f32> {
        let model = Model::from_bytes(model).unwrap();
        let tract_input = tessera_core::tract_bridge::to_tract(&input).unwrap();
        let lowering = tessera_core::model::specialize::Lowering {
            before_declutter: Some(pass),
            keep_axes: true,
            ..Default::default()
        };
        // The input not folded: the products run on it, not on a constant.
        let lowered = model
            .lower_with_pass(&[input], &[false], lowering)
            .expect("lowered");
        let outputs = lowered
            .into_runnable()
            .unwrap()
            .run(tvec!(tract_input.into_tvalue()))
            .unwrap();
        let plain = outputs[0].try_as_plain_ram().unwrap();
        plain.as_slice::<f32>().unwrap().to_vec()
    }

    fn dynamic_matmul_outputs(pass: fn(&mut TypedModel, &Model) -> TractResult<()>) -> Vec<f32> {
        let values: Vec<f32> = (0..80)
            .map(|i| ((i * 53 % 97) as f32 - 40.0) * 0.37)
            .collect();
        let input = tessera_core::Tensor::from_vec(vec![2, 40], values).unwrap();
        lowered_outputs(&dynamic_matmul_model(), input, pass)
    }

    #[test]
    fn a_dynamic_matrix_product_on_avx2_or_in_f32_sums_is_the_integer_one() {
        let integer = dynamic_matmul_outputs(no_integer_pass);
        let float_sums = dynamic_matmul_outputs(float_sums_pass);
        assert_eq!(integer.len(), 6);
        assert!(integer.iter().any(|&v| v.abs() > 1000.0), "{integer:?}");
        assert_eq!(float_sums, integer);
    }

    /// A 1×1 ConvInteger with u8 weights and a weight zero point (onnxruntime's dynamic u8
    /// format): centred, the weights leave i8, so Tessera's VNNI kernel cannot take it (AVX2's
    /// can), and tract would run it as an integer matrix product.
    fn dynamic_pointwise_conv_model() -> Vec<u8> {
        // Weights 1 and 2 are 130 and 129 below the zero point.
        let weights = levels(6 * 5, 1);
        let initializers = vec![u8s("w", &[6, 5, 1, 1], &weights), u8s("wz", &[], &[131])];
        dynamic_product_model("ConvInteger", initializers, &[1, 5, 4, 3], &[1, 6, 4, 3])
    }

    fn dynamic_pointwise_conv_outputs(
        pass: fn(&mut TypedModel, &Model) -> TractResult<()>,
    ) -> Vec<f32> {
        let values: Vec<f32> = (0..60)
            .map(|i| ((i * 53 % 97) as f32 - 30.0) * 0.21)
            .collect();
        let input = tessera_core::Tensor::from_vec(vec![1, 5, 4, 3], values).unwrap();
        lowered_outputs(&dynamic_pointwise_conv_model(), input, pass)
    }

    fn tract_s_integer_product(_: &mut TypedModel, _: &Model) -> TractResult<()> {
        Ok(())
    }

    /// VNNI's kernel cannot hold the weights, so the convolution becomes exact f32 sums (a
    /// rewrite counted); AVX2's tap kernel holds them and takes it (not counted).
    fn exact_float_conv_pass(typed: &mut TypedModel, model: &Model) -> TractResult<()> {
        use super::super::quantized_tap_products::TapIsa;
        let count = integer_products_where(typed, model, true)?;
        let expected = usize::from(TapIsa::best() != Some(TapIsa::Avx2));
        ensure!(
            count == expected,
            "{count} products rewritten, expected {expected}"
        );
        ensure!(
            !typed
                .nodes()
                .iter()
                .any(|n| n.op_as::<Conv>().is_some_and(|c| c.q_params.is_some())),
            "a quantized convolution is left"
        );
        Ok(())
    }

    #[test]
    fn a_pointwise_conv_integer_with_u8_weights_runs_as_exact_float_sums() {
        let integer = dynamic_pointwise_conv_outputs(tract_s_integer_product);
        let float_sums = dynamic_pointwise_conv_outputs(exact_float_conv_pass);
        assert_eq!(integer.len(), 6 * 4 * 3);
        assert!(integer.iter().any(|&v| v.abs() > 1000.0), "{integer:?}");
        assert_eq!(float_sums, integer);
    }

    const COLUMN_CONV_ROWS: usize = 6;

    /// A 3×1 QDQ convolution over a `[1, 2, 6, 1]` input, wide enough to run as tract's integer
    /// one (a 1-D convolution as TensorFlow and JAX export it).
    fn column_conv_model(weights: &[i8], bias: &[i32], w_scale: f32) -> Vec<u8> {
        let out = bias.len() as i64;
        let initializers = vec![
            f32s("sx", &[], &[X_SCALE]),
            u8s("zx", &[], &[100]),
            i8s("w", &[out, 2, 3, 1], weights),
            f32s("sw", &[], &[w_scale]),
            i8s("zw", &[], &[0]),
            i32s("b", &[out], bias),
            f32s("sb", &[], &[X_SCALE * w_scale]),
            i32s("zb", &[], &[0]),
            f32s("sy", &[], &[Y_SCALE]),
            u8s("zy", &[], &[128]),
        ];
        let nodes = vec![
            node("QuantizeLinear", &["x", "sx", "zx"], "xq", vec![]),
            node("DequantizeLinear", &["xq", "sx", "zx"], "xd", vec![]),
            node("DequantizeLinear", &["w", "sw", "zw"], "wd", vec![]),
            node("DequantizeLinear", &["b", "sb", "zb"], "bd", vec![]),
            node(
                "Conv",
                &["xd", "wd", "bd"],
                "c",
                vec![ints("pads", &[1, 0, 1, 0])],
            ),
            node("QuantizeLinear", &["c", "sy", "zy"], "cq", vec![]),
            node("DequantizeLinear", &["cq", "sy", "zy"], "y", vec![]),
        ];
        let rows = COLUMN_CONV_ROWS as i64;
        let input = vec![value("x", &[1, 2, rows, 1])];
        model_bytes(
            nodes,
            initializers,
            input,
            vec![value("y", &[1, out, rows, 1])],
        )
    }

    /// Where Tessera's tap kernel runs (x86-64 with AVX2 or VNNI) it takes the convolution as
    /// it is (a column-wide input is one row to it); elsewhere the convolution is run in 1-D.
    fn one_d_pass(typed: &mut TypedModel, model: &Model) -> TractResult<()> {
        let count = integer_products_where(typed, model, true)?;
        ensure!(count == 1, "{count} products rewritten, expected 1");
        if super::super::quantized_tap_products::available() {
            ensure!(
                typed
                    .nodes()
                    .iter()
                    .any(|n| n.op().name() == "FastQuantizedConv"),
                "the convolution is not on the tap kernel"
            );
        } else {
            ensure!(
                typed.nodes().iter().any(|n| n.name.ends_with(".one_d")),
                "the convolution was not run in 1-D"
            );
        }
        Ok(())
    }

    #[test]
    fn a_convolution_one_column_wide_runs_on_the_tap_kernel_or_in_one_d_with_the_same_sums() {
        let out = MIN_IM2COL_CHANNELS;
        let weights: Vec<i8> = (0..out * 2 * 3)
            .map(|i| ((i * 53 % 255) as i32 - 127) as i8)
            .collect();
        let bias: Vec<i32> = (0..out as i32).map(|o| o * 7 - 900).collect();
        let w_scale = 0.011;
        let model = Model::from_bytes(&column_conv_model(&weights, &bias, w_scale)).unwrap();
        let xq = levels(2 * COLUMN_CONV_ROWS, 7);
        let x = tessera_core::Tensor::from_vec(vec![1, 2, COLUMN_CONV_ROWS, 1], on_grid(&xq));
        let inputs = vec![x.unwrap()];
        let lowering = tessera_core::model::specialize::Lowering {
            before_declutter: Some(one_d_pass),
            keep_axes: true,
            ..Default::default()
        };
        model
            .lower_with_pass(&inputs, &[false], lowering)
            .expect("run in 1-D");
        let session = CpuSession::new(Arc::new(model), &CpuOptions { threads: Some(1) }).unwrap();
        let outputs = session.run(inputs).unwrap();

        let centred = |q: u8| q as i32 - 100;
        let mut want = vec![];
        for o in 0..out {
            for oy in 0..COLUMN_CONV_ROWS as i32 {
                let mut sum = bias[o];
                for i in 0..2 {
                    for ky in 0..3i32 {
                        let iy = oy + ky - 1;
                        if (0..COLUMN_CONV_ROWS as i32).contains(&iy) {
                            let x = centred(xq[i * COLUMN_CONV_ROWS + iy as usize]);
                            sum += x * weights[(o * 2 + i) * 3 + ky as usize] as i32;
                        }
                    }
                }
                want.push(requantized(sum, w_scale));
            }
        }
        assert_eq!(outputs[0].shape(), &[1, out, COLUMN_CONV_ROWS, 1]);
        assert_eq!(outputs[0].as_slice::<f32>().unwrap(), &want[..]);
    }
}
