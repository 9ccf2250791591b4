//! Integer matrix products whose constant operand has a zero point: onnxruntime's dynamic
//! quantization with u8 weights (`MatMulInteger`, and `ConvInteger` 1×1 convolutions, which tract
//! runs as matrix products). tract corrects `Σ_k (a − a0)(b − b0)` for `b0` with the sums of `a`
//! over `k`, computed by casting all of `a` to i32 and reducing it with its generic ops, and then
//! two element-wise passes over the whole output: 4 of ppocr_mobile_cls' 6 ms per run in its
//! dynamic u8 variant, where the same products with i8 weights (`b0 = 0`) took 1.6 ms in all.
//!
//! Here tract's product runs with `b0 = 0` (u8 weights become `b − 128`, exactly), and the zero
//! point enters as one term per row of the output, `z · Σ_k (a − a0)` with `z` = `b0` (minus 128
//! for u8), computed by reading `a` once and subtracted from the product in place
//! ([`WeightZeroPointCorrection`]).

use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::einsum::EinSum;

/// Subtracts `factor · Σ_k (a − a_zero)` from the integer product (input 0), where `a` (input 1,
/// 8-bit) is the product's operand summed along `k_axis` and `a_zero` (input 2) its zero point, a
/// scalar. The product has `a`'s axes with `b`'s columns in place of `k`, so both read as
/// `[outer, ·, inner]`: one term per `(outer, inner)`, subtracted across the columns, in place.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WeightZeroPointCorrection {
    pub k_axis: usize,
    pub factor: i32,
}

/// Sums of `a` (as `[outer, k, inner]`) over `k`, into `sums` (`[outer, inner]`, zeroed).
fn sums_over_k<T: Copy + Into<i32>>(a: &[T], k: usize, inner: usize, sums: &mut [i32]) {
    if inner == 1 {
        for (sum, row) in sums.iter_mut().zip(a.chunks_exact(k.max(1))) {
            *sum = row.iter().map(|&v| v.into()).sum();
        }
        return;
    }
    for (sums, block) in sums
        .chunks_exact_mut(inner)
        .zip(a.chunks_exact((k * inner).max(1)))
    {
        for row in block.chunks_exact(inner) {
            for (sum, &v) in sums.iter_mut().zip(row) {
                *sum += v.into();
            }
        }
    }
}

/// `product` (`[outer, columns, inner]`) minus `terms` (`[outer, inner]`) across the columns.
fn subtract_across_columns(product: &mut [i32], terms: &[i32], inner: usize) {
    if inner == 1 {
        let columns = product.len() / terms.len().max(1);
        for (row, &term) in product.chunks_exact_mut(columns.max(1)).zip(terms) {
            row.iter_mut().for_each(|v| *v -= term);
        }
        return;
    }
    let columns = product.len() / terms.len().max(1);
    for (block, terms) in product
        .chunks_exact_mut((columns * inner).max(1))
        .zip(terms.chunks_exact(inner))
    {
        for row in block.chunks_exact_mut(inner) {
            for (v, &term) in row.iter_mut().zip(terms) {
                *v -= term;
            }
        }
    }
}

impl Op for WeightZeroPointCorrection {
    fn name(&self) -> StaticName {
        "WeightZeroPointCorrection".into()
    }

    op_as_typed_op!();
}

impl EvalOp for WeightZeroPointCorrection {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (product, a, a_zero) = args_3!(inputs);
        let a_zero = a_zero.cast_to_scalar::<i32>()?;
        let (a_shape, c_shape) = (a.shape(), product.shape());
        ensure!(
            self.k_axis < a_shape.len()
                && a_shape.len() == c_shape.len()
                && a_shape[..self.k_axis] == c_shape[..self.k_axis]
                && a_shape[self.k_axis + 1..] == c_shape[self.k_axis + 1..],
            "a weight zero point correction over {a_shape:?} for a product of {c_shape:?}"
        );
        let k = a_shape[self.k_axis];
        let inner: usize = a_shape[self.k_axis + 1..].iter().product();
        let outer: usize = a_shape[..self.k_axis].iter().product();
        let mut terms = vec![0i32; outer * inner];
        let plain = a.try_as_plain_ram()?;
        match a.datum_type() {
            DatumType::U8 => sums_over_k(plain.as_slice::<u8>()?, k, inner, &mut terms),
            DatumType::I8 => sums_over_k(plain.as_slice::<i8>()?, k, inner, &mut terms),
            other => bail!("a weight zero point correction over {other:?}, not 8-bit integers"),
        }
        let offset = k as i32 * a_zero;
        for term in terms.iter_mut() {
            *term = self.factor * (*term - offset);
        }
        // In place when this op holds the only reference to the product.
        let mut product = product.into_tensor();
        let mut ram = product.try_as_plain_ram_mut()?;
        subtract_across_columns(ram.as_slice_mut::<i32>()?, &terms, inner);
        Ok(tvec!(product.into_tvalue()))
    }
}

impl TypedOp for WeightZeroPointCorrection {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 3 && inputs[0].datum_type == i32::datum_type());
        Ok(tvec!(inputs[0].without_value()))
    }

    fn cost(&self, inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let volume = inputs[0].shape.volume() + inputs[1].shape.volume();
        Ok(tvec!((Cost::FMA(i32::datum_type()), volume)))
    }
}

fn is_plain_8_bit(dt: DatumType) -> bool {
    dt == u8::datum_type() || dt == i8::datum_type()
}

/// The value of a constant scalar input of `node`.
fn scalar<T: Datum + Copy>(model: &TypedModel, node: &TypedNode, slot: usize) -> Option<T> {
    let konst = model.outlet_fact(node.inputs[slot]).ok()?.konst.clone()?;
    (konst.len() == 1).then(|| konst.cast_to_scalar::<T>().ok())?
}

/// The rewrite of `node`, when it is an integer product (i32 sums: scales 1, output zero point
/// 0) of an 8-bit computed `a` with one zero point, and an 8-bit constant `b` with one nonzero
/// zero point (after the shift of u8 to i8), whose output axes are `a`'s with `k` in place of
/// `b`'s column axis (`…mk,kn->…mn`, a 1×1 convolution's `NIHW,OI->NOHW`).
fn row_term_patch(model: &TypedModel, node: &TypedNode) -> Option<TypedModelPatch> {
    let einsum = node.op_as::<EinSum>()?;
    if einsum.q_params != Some(i32::datum_type()) || node.inputs.len() != 9 {
        return None;
    }
    let a = model.outlet_fact(node.inputs[0]).ok()?;
    let b = model.outlet_fact(node.inputs[1]).ok()?.konst.clone()?;
    let a_zero = model.outlet_fact(node.inputs[3]).ok()?;
    if a.konst.is_some()
        || !is_plain_8_bit(a.datum_type)
        || !is_plain_8_bit(b.datum_type())
        || !a_zero.shape.volume().is_one()
    {
        return None;
    }
    if [4, 6, 8]
        .iter()
        .any(|&slot| scalar::<f32>(model, node, slot) != Some(1.0))
        || scalar::<i32>(model, node, 7) != Some(0)
    {
        return None;
    }
    let b_zeros = model.outlet_fact(node.inputs[5]).ok()?.konst.clone()?;
    let b_zeros = b_zeros.cast_to::<i32>().ok()?;
    let b_zeros = b_zeros
        .try_as_plain_ram()
        .ok()?
        .as_slice::<i32>()
        .ok()?
        .to_vec();
    let b_zero = *b_zeros.first()?;
    if b_zeros.iter().any(|&z| z != b_zero) {
        return None;
    }
    let (weights, factor) = if b.datum_type() == u8::datum_type() {
        let shifted = b.cast_to::<i32>().ok()?;
        let shifted = shifted.try_as_plain_ram().ok()?;
        let shifted: Vec<i8> = shifted
            .as_slice::<i32>()
            .ok()?
            .iter()
            .map(|&v| (v - 128) as i8)
            .collect();
        (Tensor::from_shape(b.shape(), &shifted).ok()?, b_zero - 128)
    } else {
        ((*b).clone(), b_zero)
    };
    if factor == 0 {
        return None;
    }
    // The summed axis `k` (in a and b, not in the output) and b's column axis `n`.
    let (specs, outputs) = einsum.axes.to_strs();
    let (a_spec, b_spec, c_spec) = (specs.first()?, specs.get(1)?, outputs.first()?);
    let k: Vec<char> = a_spec
        .chars()
        .filter(|&c| b_spec.contains(c) && !c_spec.contains(c))
        .collect();
    let n: Vec<char> = b_spec
        .chars()
        .filter(|&c| c_spec.contains(c) && !a_spec.contains(c))
        .collect();
    let ([k], [n]) = (&k[..], &n[..]) else {
        return None;
    };
    // b's other axes are broadcast ones.
    let others_unit = b_spec
        .chars()
        .zip(b.shape())
        .all(|(c, &size)| c == *k || c == *n || size == 1);
    if !others_unit || a_spec.replace(*k, &n.to_string()) != *c_spec {
        return None;
    }
    let k_axis = a_spec.chars().position(|c| c == *k)?;
    // The term, `factor · Σ_k (a − a0)` (each difference at most 255), stays an i32.
    let k_size = b_spec
        .chars()
        .position(|c| c == *k)
        .map(|ix| b.shape()[ix])?;
    if k_size as i64 * 255 * (factor as i64).abs() > i32::MAX as i64 {
        return None;
    }

    let name = &node.name;
    let mut patch = TypedModelPatch::new("weight zero point as a row term");
    let mut inputs = patch.taps(model, &node.inputs).ok()?;
    inputs[1] = patch
        .add_const(format!("{name}.weights_i8"), weights)
        .ok()?;
    let zeros = Tensor::zero::<i32>(&b_zeros_shape(model, node)?).ok()?;
    inputs[5] = patch
        .add_const(format!("{name}.zero_weight_zero"), zeros)
        .ok()?;
    let product = patch
        .wire_node(format!("{name}.no_weight_zero"), einsum.clone(), &inputs)
        .ok()?[0];
    let corrected = patch
        .wire_node(
            name,
            WeightZeroPointCorrection { k_axis, factor },
            &[product, inputs[0], inputs[3]],
        )
        .ok()?[0];
    patch.shunt_outside(model, node.id.into(), corrected).ok()?;
    Some(patch)
}

/// The shape of `node`'s weight zero point (input 5).
fn b_zeros_shape(model: &TypedModel, node: &TypedNode) -> Option<TVec<usize>> {
    model
        .outlet_fact(node.inputs[5])
        .ok()?
        .shape
        .as_concrete()
        .map(|s| s.into())
}

/// Moves the weight zero point of every integer product [`row_term_patch`] accepts out of tract's
/// product into a row term. Returns how many.
pub fn weight_zero_points_as_row_terms(model: &mut TypedModel) -> TractResult<usize> {
    let mut count = 0;
    for id in 0..model.nodes().len() {
        if let Some(patch) = row_term_patch(model, model.node(id)) {
            patch.apply(model)?;
            count += 1;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::tract_onnx::tract_core::ops::cnn::{
        Conv, KernelFormat, PaddingSpec, PoolSpec,
    };
    use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

    /// Integers in `0..256` with no pattern a loop could lean on.
    fn levels(count: usize, seed: usize) -> Vec<u8> {
        (0..count)
            .map(|i| ((i * 89 + seed * 7) % 256) as u8)
            .collect()
    }

    /// An integer product's inputs after `a`, `b` and the bias: the zero points (a's a model
    /// input, as after a DynamicQuantizeLinear; i32, as tract-onnx casts them), scales 1, output zero point 0.
    fn parameters(model: &mut TypedModel, b_zero: Tensor) -> Vec<OutletId> {
        let mut wires = vec![model.add_source("a_zero", i32::fact([0usize; 0])).unwrap()];
        for (name, value) in [
            ("a_scale", tensor0(1f32)),
            ("b_zero", b_zero),
            ("b_scale", tensor0(1f32)),
            ("c_zero", tensor0(0i32)),
            ("c_scale", tensor0(1f32)),
        ] {
            wires.push(model.add_const(name, value).unwrap());
        }
        wires
    }

    /// A 1×1 ConvInteger of u8 weights (zero point 131) over `[1, 40, 6, 5]`, decluttered (tract
    /// makes it a matrix product, `NIHW,OI->NOHW`).
    fn pointwise_conv_integer() -> TypedModel {
        let (cin, cout) = (40, 24);
        let mut model = TypedModel::default();
        let x = model.add_source("x", u8::fact([1, cin, 6, 5])).unwrap();
        let weights =
            tract_ndarray::Array4::from_shape_vec((cout, cin, 1, 1), levels(cout * cin, 3))
                .unwrap();
        let mut inputs = vec![x, model.add_const("w", weights.into_tensor()).unwrap()];
        inputs.push(model.add_const("bias", tensor0(0i32)).unwrap());
        inputs.extend(parameters(&mut model, tensor0(131i32)));
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: DataFormat::NCHW,
                kernel_shape: tvec![1, 1],
                padding: PaddingSpec::Valid,
                dilations: None,
                strides: None,
                input_channels: cin,
                output_channels: cout,
            },
            kernel_fmt: KernelFormat::OIHW,
            group: 1,
            q_params: Some(i32::datum_type()),
        };
        let y = model.wire_node("conv", conv, &inputs).unwrap();
        model.select_output_outlets(&y).unwrap();
        model.into_decluttered().unwrap()
    }

    /// A MatMulInteger `[3, 7, 50] × [50, 9]` with i8 weights of zero point -5 (the column axis
    /// last: `bmk,kn->bmn`).
    fn matmul_integer() -> TypedModel {
        let (k, n) = (50, 9);
        let mut model = TypedModel::default();
        let a = model.add_source("a", u8::fact([3, 7, k])).unwrap();
        let weights: Vec<i8> = levels(k * n, 5).iter().map(|&v| v as i8).collect();
        let weights = tract_ndarray::Array2::from_shape_vec((k, n), weights).unwrap();
        let mut inputs = vec![a, model.add_const("b", weights.into_tensor()).unwrap()];
        inputs.push(model.add_const("bias", tensor0(0i32)).unwrap());
        inputs.extend(parameters(&mut model, tensor0(-5i32)));
        let op = EinSum {
            axes: "bmk,kn,,,,,,,->bmn".parse().unwrap(),
            operating_dt: i32::datum_type(),
            q_params: Some(i32::datum_type()),
        };
        let y = model.wire_node("matmul", op, &inputs).unwrap();
        model.select_output_outlets(&y).unwrap();
        model.into_decluttered().unwrap()
    }

    /// The model's i32 output for fixed inputs, `a`'s zero point 77.
    fn run(model: TypedModel) -> Vec<i32> {
        let fact = model.outlet_fact(model.inputs[0]).unwrap();
        let shape: Vec<usize> = fact.shape.as_concrete().unwrap().to_vec();
        let volume = shape.iter().product();
        let a = Tensor::from_shape(&shape, &levels(volume, 11)).unwrap();
        let out = model
            .into_optimized()
            .unwrap()
            .into_runnable()
            .unwrap()
            .run(tvec!(a.into_tvalue(), tensor0(77i32).into_tvalue()))
            .unwrap();
        let out = out[0].cast_to::<i32>().unwrap();
        out.try_as_plain_ram()
            .unwrap()
            .as_slice::<i32>()
            .unwrap()
            .to_vec()
    }

    fn corrections(model: &TypedModel) -> usize {
        model
            .nodes()
            .iter()
            .filter(|n| n.op_is::<WeightZeroPointCorrection>())
            .count()
    }

    #[test]
    fn a_weight_zero_point_moved_out_of_the_product_gives_tract_s_sums() {
        for model in [pointwise_conv_integer(), matmul_integer()] {
            let want = run(model.clone());
            let mut ours = model;
            assert_eq!(weight_zero_points_as_row_terms(&mut ours).unwrap(), 1);
            assert_eq!(corrections(&ours), 1);
            let got = run(ours);
            assert_eq!(got, want);
            // Sums of both signs, far from zero: a wrong term would show.
            assert!(got.iter().any(|&v| v < -1000) && got.iter().any(|&v| v > 1000));
        }
    }

    #[test]
    fn products_without_a_weight_zero_point_are_left_to_tract() {
        // i8 weights of zero point 0, and u8 weights of zero point 128 (0 once shifted).
        let mut symmetric = matmul_integer();
        let b_zero = symmetric
            .nodes()
            .iter()
            .find(|n| n.name == "b_zero")
            .map(|n| n.id)
            .unwrap();
        symmetric.node_mut(b_zero).op = Box::new(
            tessera_core::tract_onnx::tract_core::ops::konst::Const::new(
                tensor0(0i32).into_arc_tensor(),
            )
            .unwrap(),
        );
        let _ = symmetric.refresh_output_facts();
        assert_eq!(weight_zero_points_as_row_terms(&mut symmetric).unwrap(), 0);
    }
}
