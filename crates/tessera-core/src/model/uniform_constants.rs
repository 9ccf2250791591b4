//! `ConstantOfShape` of a constant shape, built once as a constant before tract analyses the
//! graph.
//!
//! tract 0.23.9 evaluates such a node through an ad hoc plan while it infers facts, wires it
//! again as a broadcast when it types the graph, and copies the result on the way: a model whose
//! weights are `ConstantOfShape` outputs (the model zoo's "light" models) built its 574 MB of
//! weights three to four times over (light_vgg19: 2.0 s to plan, onnxruntime 0.54 s). Filled
//! here once per plan, on the plan's own copy of the graph, the tensor is dropped with that copy
//! once the backend has packed it.

use super::preflight::{FoldedValues, bytes_of, max_tensor_bytes};
use std::sync::Arc;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::ops::konst::Const;

/// Replaces every `ConstantOfShape` whose shape is a constant by a constant holding its value.
/// Shapes Tessera's checks would refuse (negative or too large, alone or beside the values
/// `folded` holds) are left for them to name.
pub fn materialize(graph: &mut InferenceModel, folded: &mut FoldedValues) -> TractResult<()> {
    for id in 0..graph.nodes().len() {
        let node = graph.node(id);
        if node.op.name() != "ConstantOfShape" || node.inputs.len() != 1 || node.outputs.len() != 1
        {
            continue;
        }
        let shape_outlet = node.inputs[0];
        let Some(shape) = graph.node(shape_outlet.node).op_as::<Const>() else {
            continue;
        };
        let Some(dims) = dims(shape.val()) else {
            continue;
        };
        // The fill value, from the node itself: its value for a shape of one element.
        let Some(unit) = node
            .op
            .eval_out_of_plan(tvec![tensor1(&[1i64]).into_tvalue()])?
            .and_then(|mut outputs| outputs.pop())
        else {
            continue;
        };
        let fill = unit.into_tensor().into_shape(&[])?;
        let bytes = bytes_of(fill.datum_type().size_of(), dims.iter().map(|&d| d as u64));
        if bytes > max_tensor_bytes() || !folded.fit(bytes) {
            continue;
        }
        folded.hold(bytes);
        let value = Arc::new(fill.broadcast_scalar_to_shape(&dims)?);
        let node = graph.node_mut(id);
        node.op = Box::new(Const::new(value.clone())?);
        node.inputs.clear();
        node.outputs[0].fact = InferenceFact::dt_shape(value.datum_type(), value.shape());
        node.outputs[0].fact.value = value.into();
        let successors =
            &mut graph.node_mut(shape_outlet.node).outputs[shape_outlet.slot].successors;
        successors.retain(|inlet| inlet.node != id);
    }
    Ok(())
}

/// A shape tensor's dims, if it is a rank-1 integer tensor of non-negative values.
fn dims(shape: &Tensor) -> Option<Vec<usize>> {
    if shape.rank() != 1 {
        return None;
    }
    let values = shape.cast_to::<i64>().ok()?;
    let values = values.try_as_plain_ram().ok()?;
    let values = values.as_slice::<i64>().ok()?;
    values.iter().map(|&d| usize::try_from(d).ok()).collect()
}

#[cfg(test)]
mod tests {
    use crate::model::Model;
    use crate::tensor::Tensor;
    use tract_onnx::pb;
    use tract_onnx::prelude::*;

    /// `y = x + ConstantOfShape(shape)` with `value` as the fill (ONNX's default, 0.0, without).
    fn model(shape: &[i64], value: Option<f32>) -> Model {
        let info = |name: &str| crate::model::test_models::value_info(name, 1, shape);
        let attribute = value.map(|v| pb::AttributeProto {
            name: "value".into(),
            r#type: pb::attribute_proto::AttributeType::Tensor as i32,
            t: Some(pb::TensorProto {
                dims: vec![1],
                data_type: 1,
                float_data: vec![v],
                ..Default::default()
            }),
            ..Default::default()
        });
        let node = |op: &str, inputs: &[&str], output: &str, attribute: Vec<pb::AttributeProto>| {
            pb::NodeProto {
                op_type: op.into(),
                name: output.into(),
                input: inputs.iter().map(|s| s.to_string()).collect(),
                output: vec![output.into()],
                attribute,
                ..Default::default()
            }
        };
        let graph = pb::GraphProto {
            name: "g".into(),
            node: vec![
                node(
                    "ConstantOfShape",
                    &["shape"],
                    "filled",
                    attribute.into_iter().collect(),
                ),
                node("Add", &["x", "filled"], "y", vec![]),
            ],
            initializer: vec![pb::TensorProto {
                name: "shape".into(),
                dims: vec![shape.len() as i64],
                data_type: 7,
                int64_data: shape.to_vec(),
                ..Default::default()
            }],
            input: vec![info("x")],
            output: vec![info("y")],
            ..Default::default()
        };
        crate::model::test_models::from_graph(graph)
    }

    fn run(model: &Model, x: &Tensor) -> Vec<f32> {
        let typed = model.lower_with(std::slice::from_ref(x), &[false]).unwrap();
        let plan = typed.into_runnable().unwrap();
        let x = crate::tract_bridge::to_tract(x).unwrap();
        let out = plan.run(tvec![x.into_tvalue()]).unwrap();
        let out = crate::tract_bridge::from_tract(&out[0]).unwrap();
        out.as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn a_constant_shape_is_filled_once_with_the_node_value() {
        let values: Vec<f32> = (0..6).map(|i| i as f32 * 0.5 - 1.0).collect();
        let x = Tensor::from_vec(vec![2, 3], values.clone()).unwrap();
        let mut graph = model(&[2, 3], Some(1.5)).graph().clone();
        super::materialize(&mut graph, &mut Default::default()).unwrap();
        assert!(
            graph
                .nodes()
                .iter()
                .all(|n| n.op.name() != "ConstantOfShape")
        );
        let expected: Vec<f32> = values.iter().map(|v| v + 1.5).collect();
        assert_eq!(run(&model(&[2, 3], Some(1.5)), &x), expected);
        // Without a `value` attribute ONNX fills with 0.0.
        assert_eq!(run(&model(&[2, 3], None), &x), values);
    }

    #[test]
    fn a_negative_shape_is_left_for_the_checks_to_refuse() {
        let mut graph = model(&[2, -3], Some(1.0)).graph().clone();
        super::materialize(&mut graph, &mut Default::default()).unwrap();
        assert!(
            graph
                .nodes()
                .iter()
                .any(|n| n.op.name() == "ConstantOfShape")
        );
    }
}
