//! Works around a tract 0.23.9 decluttering bug on quantized (QDQ) models.
//!
//! tract folds `DequantizeLinear → op → QuantizeLinear` chains into a 256-entry lookup table when
//! every op in between looks element-wise. It judges that by the op's axes mapping, which for
//! `Softmax` maps each axis to itself, so a quantized softmax became a per-element table and
//! `ppocr_mobile_cls_qdq_int8` answered [1, 1] instead of [0.44, 0.55]. A barrier op (an identity
//! whose axes are not tracked) in front of each softmax stops the chain walk there; the softmax
//! then runs in f32, as onnxruntime does.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::nn::Softmax;

/// An identity that tract cannot see through, so quantized chains are not fused across it.
#[derive(Debug, Clone, Default, Hash, PartialEq, Eq)]
pub struct QuantBarrier;

impl Op for QuantBarrier {
    fn name(&self) -> StaticName {
        "QuantBarrier".into()
    }

    op_as_typed_op!();
}

impl EvalOp for QuantBarrier {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        Ok(inputs)
    }
}

impl TypedOp for QuantBarrier {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(inputs[0].without_value()))
    }

    as_op!();
}

/// Puts a barrier in front of every softmax of a model that dequantizes anything.
pub fn guard_quantized_softmax(model: &mut TypedModel) -> TractResult<()> {
    let quantized = model
        .nodes()
        .iter()
        .any(|n| n.op.name().contains("Dequantize"));
    if !quantized {
        return Ok(());
    }
    let softmaxes: Vec<usize> = model
        .nodes()
        .iter()
        .filter(|n| n.op_is::<Softmax>())
        .map(|n| n.id)
        .collect();
    for id in softmaxes {
        let node = model.node(id).clone();
        let mut patch = TypedModelPatch::default();
        let input = patch.tap_model(model, node.inputs[0])?;
        let guarded = patch.wire_node(
            format!("{}.quant_barrier", node.name),
            QuantBarrier,
            &[input],
        )?[0];
        let output = patch.wire_node(&node.name, node.op.clone(), &[guarded])?[0];
        patch.shunt_outside(model, OutletId::new(id, 0), output)?;
        patch.apply(model)?;
    }
    Ok(())
}
