//! Keeps the flatten before a product with a constant weight on the activation.
//!
//! tract's EinSum declutter folds a reshape that merges axes of one operand (the `Flatten`
//! between a CNN's last pooling and its first fully connected layer) into the product by
//! splitting the matching axis of the other operand instead. On a constant weight that split is a
//! reshape that constant folding computes by copying the weight (it is shared with the model,
//! so tract deep-clones it), and codegen merges the axes back: a second copy (zfnet512: twice
//! 302 MB, a third of its load). The products run the flattened activation as well, so the cpu
//! plan gives such a reshape its codegen form (`IntoShape`) before declutter, where that rule
//! does not look.

use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::ops::change_axes::{AxisOp, IntoShape};
use tessera_core::tract_onnx::tract_core::ops::einsum::EinSum;

/// Turns each axis-merging reshape of `model` (typed, not yet decluttered) that only feeds
/// products with a constant operand into `IntoShape`. Returns how many.
pub fn keep_flatten_on_activation(model: &mut TypedModel) -> TractResult<usize> {
    let mut count = 0;
    for id in 0..model.nodes().len() {
        let node = model.node(id);
        let Some(reshape @ AxisOp::Reshape(_, from, to)) = node.op_as::<AxisOp>() else {
            continue;
        };
        let merges_axes = to.len() == 1 && from.len() > 1;
        let readers = &node.outputs[0].successors;
        if !merges_axes
            || readers.is_empty()
            || !readers
                .iter()
                .all(|inlet| product_with_constant(model, inlet))
            || model.output_outlets()?.contains(&OutletId::new(id, 0))
        {
            continue;
        }
        let fact = &node.outputs[0].fact;
        let Some(shape) = fact
            .shape
            .as_concrete()
            .filter(|_| fact.exotic_fact.is_none())
        else {
            continue;
        };
        // What tract's codegen makes of the reshape (`AxisOp::codegen`), made earlier.
        let mapping = {
            let (inputs, outputs) = model.node_facts(id)?;
            reshape.axes_mapping(&inputs, &outputs)?
        };
        let into_shape = IntoShape {
            mapping,
            len: shape.iter().product(),
            strides: Tensor::natural_strides(shape),
            dims: shape.into(),
        };
        model.node_mut(id).op = Box::new(into_shape);
        count += 1;
    }
    Ok(count)
}

/// Whether `inlet` is an operand of a two-operand product (a float EinSum, or a quantized one's
/// data operands) whose other operand is a constant.
fn product_with_constant(model: &TypedModel, inlet: &InletId) -> bool {
    let reader = model.node(inlet.node);
    if !reader.op_is::<EinSum>() || inlet.slot > 1 {
        return false;
    }
    reader
        .inputs
        .get(1 - inlet.slot)
        .is_some_and(|&other| crate::plan_graph::is_constant(model, other))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::model::optimizer;

    /// x [1, 2, 3, 3] → flatten → product with `other` ([4, 18]; `None`: a second input).
    fn flatten_then_product(other: Option<Tensor>) -> TractResult<TypedModel> {
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([1, 2, 3, 3]))?;
        let other = match other {
            Some(weight) => model.add_const("weight", weight)?,
            None => model.add_source("y", f32::fact([4, 18]))?,
        };
        let from = tvec![2.to_dim(), 3.to_dim(), 3.to_dim()];
        let flat = model.wire_node(
            "flatten",
            AxisOp::Reshape(1, from, tvec![18.to_dim()]),
            &[x],
        )?;
        let product = EinSum::new("ak,nk->an".parse()?, f32::datum_type());
        let output = model.wire_node("product", product, &[flat[0], other])?;
        model.select_output_outlets(&output)?;
        Ok(model)
    }

    fn constant_shapes(model: &TypedModel) -> Vec<Vec<usize>> {
        model
            .nodes()
            .iter()
            .filter_map(|n| n.outputs[0].fact.konst.as_ref())
            .map(|k| k.shape().to_vec())
            .collect()
    }

    #[test]
    fn the_weight_keeps_its_shape_and_the_product_its_value() -> TractResult<()> {
        // A CNN's head: the weight is a constant.
        let values: Vec<f32> = (0..72).map(|i| (i % 7) as f32 - 3.0).collect();
        let original = flatten_then_product(Some(Tensor::from_shape(&[4, 18], &values)?))?;
        let input: Vec<f32> = (0..18).map(|i| i as f32 * 0.5 - 4.0).collect();
        let input = Tensor::from_shape(&[1, 2, 3, 3], &input)?;
        let expected = original
            .clone()
            .into_runnable()?
            .run(tvec![input.clone().into()])?;

        // What tract does alone: the weight is split to [4, 2, 3, 3] (a copy of it).
        let mut tracts = original.clone();
        optimizer::declutter(&mut tracts, true)?;
        assert!(constant_shapes(&tracts).contains(&vec![4, 2, 3, 3]));

        let mut kept = original;
        assert_eq!(keep_flatten_on_activation(&mut kept)?, 1);
        optimizer::declutter(&mut kept, true)?;
        assert_eq!(constant_shapes(&kept), vec![vec![4, 18]]);
        optimizer::codegen(&mut kept)?;
        let outputs = kept.into_runnable()?.run(tvec![input.into()])?;
        // Halves times small integers: exact in any order of summation, so equal.
        let values = |t: &TValue| -> TractResult<Vec<f32>> {
            Ok(t.try_as_plain_ram()?.as_slice::<f32>()?.to_vec())
        };
        assert_eq!(values(&outputs[0])?, values(&expected[0])?);
        Ok(())
    }

    #[test]
    fn a_product_of_two_computed_operands_keeps_tracts_folding() -> TractResult<()> {
        let mut model = flatten_then_product(None)?;
        let flat = model.node_id_by_name("flatten")?;
        assert_eq!(keep_flatten_on_activation(&mut model)?, 0);
        assert!(model.node(flat).op_is::<AxisOp>());
        Ok(())
    }
}
