//! Lets tract fuse a by-scalar element-wise op (ReLU's `max(x, 0)`, a clip bound, a scale) into
//! the matrix product of a convolution that ends in a reshape.
//!
//! tract fuses such an op into the `OptMatMul` before it only when it is the product's direct
//! successor; a convolution computed through im2col ends in an `IntoShape` of its product (to
//! put the channels back), so the ReLU after every 3×3 convolution ran as a pass of its own over
//! the output (SqueezeNet: 7% of its time). An element-wise op with a scalar operand commutes
//! with a reshape, so this pass moves it above the reshape and asks the product to fuse it.

use crate::plan_graph::only_reader;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::ops::binary::OptBinByScalar;
use tessera_core::tract_onnx::tract_core::ops::change_axes::{AxisOp, IntoShape};
use tessera_core::tract_onnx::tract_core::ops::matmul::optimized::OptMatMul;

/// A product → reshape → by-scalar op chain, each the only reader of the one before.
struct Candidate {
    product: usize,
    reshape: usize,
    op: usize,
    /// The op's scalar operand.
    scalar: Arc<Tensor>,
}

fn candidates(model: &TypedModel) -> TractResult<Vec<Candidate>> {
    let mut found = vec![];
    for node in model.nodes() {
        if !node.op_is::<OptMatMul>() {
            continue;
        }
        let Some(reshape) = only_reader(model, node.id)? else {
            continue;
        };
        let reshape_node = model.node(reshape);
        if !(reshape_node.op_is::<IntoShape>() || reshape_node.op_is::<AxisOp>()) {
            continue;
        }
        let Some(op) = only_reader(model, reshape)? else {
            continue;
        };
        let op_node = model.node(op);
        if !op_node.op_is::<OptBinByScalar>()
            || op_node.inputs.len() != 2
            || op_node.inputs[0].node != reshape
        {
            continue;
        }
        let scalar = model.outlet_fact(op_node.inputs[1])?.konst.clone();
        if let Some(scalar) = scalar.filter(|k| k.len() == 1) {
            found.push(Candidate {
                product: node.id,
                reshape,
                op,
                scalar,
            });
        }
    }
    Ok(found)
}

/// Moves each by-scalar op found above its reshape and fuses it into the product. Returns how
/// many were fused.
pub fn fuse_through_reshapes(model: &mut TypedModel) -> TractResult<usize> {
    let found = candidates(model)?;
    for c in &found {
        let mut patch = TypedModelPatch::new("element-wise op above the reshape");
        let product = patch.tap_model(model, OutletId::new(c.product, 0))?;
        let op_node = model.node(c.op);
        let rank = model.outlet_fact(OutletId::new(c.product, 0))?.rank();
        let scalar = c.scalar.as_ref().clone().into_shape(&vec![1; rank])?;
        let scalar = patch.add_const(format!("{}.scalar", op_node.name), scalar)?;
        let moved = patch.wire_node(
            format!("{}.before_reshape", op_node.name),
            op_node.op.clone(),
            &[product, scalar],
        )?;
        let reshape = model.node(c.reshape);
        let reshaped = patch.wire_node(&reshape.name, reshape.op.clone(), &moved)?;
        patch.shunt_outside(model, OutletId::new(c.op, 0), reshaped[0])?;
        patch.apply(model)?;
    }
    let mut fused = 0;
    for c in &found {
        let node = model.node(c.product);
        if let Some(patch) = node.op.fuse(model, node)? {
            patch.apply(model)?;
            fused += 1;
        }
    }
    if !found.is_empty() {
        model.compact()?;
    }
    Ok(fused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::tract_onnx::tract_core::ops::cnn::{
        Conv, KernelFormat, PaddingSpec, PoolSpec,
    };
    use tessera_core::tract_onnx::tract_core::ops::math::max;
    use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

    /// relu(conv3x3(x)): tract computes the convolution as im2col + a product + a reshape.
    fn conv_relu() -> TypedModel {
        let (ic, oc, h, w) = (3, 8, 12, 10);
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([1, ic, h, w])).unwrap();
        let kernel: Vec<f32> = (0..oc * ic * 9)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0)
            .collect();
        let kernel = tract_ndarray::Array4::from_shape_vec((oc, ic, 3, 3), kernel).unwrap();
        let kernel = model.add_const("kernel", kernel.into_tensor()).unwrap();
        let bias = model.add_const("bias", tensor0(0.25f32)).unwrap();
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: DataFormat::NCHW,
                kernel_shape: tvec![3, 3],
                padding: PaddingSpec::Valid,
                dilations: None,
                strides: None,
                input_channels: ic,
                output_channels: oc,
            },
            kernel_fmt: KernelFormat::OIHW,
            group: 1,
            q_params: None,
        };
        let y = model.wire_node("conv", conv, &[x, kernel, bias]).unwrap();
        let zero = model.add_const("zero", tensor4(&[[[[0f32]]]])).unwrap();
        let relu = model.wire_node("relu", max(), &[y[0], zero]).unwrap();
        model.select_output_outlets(&relu).unwrap();
        model.into_optimized().unwrap()
    }

    fn run(model: TypedModel) -> Vec<f32> {
        let x: Vec<f32> = (0..3 * 12 * 10).map(|i| (i % 13) as f32 - 6.0).collect();
        let x = tract_ndarray::Array4::from_shape_vec((1, 3, 12, 10), x).unwrap();
        let out = model
            .into_runnable()
            .unwrap()
            .run(tvec!(x.into_tensor().into_tvalue()))
            .unwrap();
        out[0]
            .to_plain_array_view::<f32>()
            .unwrap()
            .iter()
            .copied()
            .collect()
    }

    #[test]
    fn a_relu_after_a_reshaped_product_is_fused_into_it_with_the_same_result() {
        let plain = conv_relu();
        let by_scalar = |m: &TypedModel| {
            m.nodes()
                .iter()
                .filter(|n| n.op_is::<OptBinByScalar>())
                .count()
        };
        assert_eq!(
            by_scalar(&plain),
            1,
            "tract leaves the ReLU unfused after the reshape"
        );

        let mut fused = plain.clone();
        assert_eq!(fuse_through_reshapes(&mut fused).unwrap(), 1);
        assert_eq!(by_scalar(&fused), 0, "the ReLU is inside the product now");

        let (expected, got) = (run(plain), run(fused));
        assert!(expected.contains(&0.0) && expected.iter().any(|v| *v > 0.0));
        assert_eq!(got, expected);
    }
}
