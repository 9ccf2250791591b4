//! `ConstantOfShape`: a tensor of the given shape filled with one value.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__ConstantOfShape.html>.
//!
//! tract-onnx 0.23.9 fills with a float64 0 when the `value` attribute is absent; the spec says
//! float32 0, and a float64 output turns every op downstream float64 too. This parser keeps
//! tract's op and gives it the spec's default. A constant shape is filled once before analysis
//! ([`crate::model::uniform_constants`]).

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::array::ConstantOfShape;

/// Builds `ConstantOfShape`.
pub fn constant_of_shape(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let value = match node.get_attr_opt("value")? {
        Some(value) => ctx.load_tensor(value)?,
        None => tensor0(0f32),
    };
    if value.len() != 1 {
        bail!(
            "ConstantOfShape's value holds {} values, not one",
            value.len()
        );
    }
    let scalar = value.into_shape(&[])?.into_arc_tensor();
    Ok((expand(ConstantOfShape::new(scalar)), vec![]))
}
