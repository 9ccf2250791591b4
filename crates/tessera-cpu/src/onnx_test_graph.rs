//! ONNX graphs written in tests: initializers, nodes, attributes and typed values, encoded as a
//! model file's bytes.

use prost::Message;
use tessera_core::tract_onnx::pb::{
    self, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    ValueInfoProto,
};

pub fn initializer(name: &str, dims: &[i64], data_type: i32, raw: Vec<u8>) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type,
        raw_data: raw,
        ..Default::default()
    }
}

pub fn f32s(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    initializer(
        name,
        dims,
        1,
        values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
}

pub fn i32s(name: &str, dims: &[i64], values: &[i32]) -> TensorProto {
    initializer(
        name,
        dims,
        6,
        values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
}

pub fn i8s(name: &str, dims: &[i64], values: &[i8]) -> TensorProto {
    initializer(name, dims, 3, values.iter().map(|&v| v as u8).collect())
}

pub fn u8s(name: &str, dims: &[i64], values: &[u8]) -> TensorProto {
    initializer(name, dims, 2, values.to_vec())
}

pub fn node(op: &str, inputs: &[&str], output: &str, attributes: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: format!("{output}_node"),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        attribute: attributes,
        ..Default::default()
    }
}

pub fn ints(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: values.to_vec(),
        r#type: pb::attribute_proto::AttributeType::Ints as i32,
        ..Default::default()
    }
}

pub fn int(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i: value,
        r#type: pb::attribute_proto::AttributeType::Int as i32,
        ..Default::default()
    }
}

pub fn value(name: &str, dims: &[i64]) -> ValueInfoProto {
    use pb::tensor_shape_proto::{Dimension, dimension::Value};
    use pb::type_proto::{Tensor as TensorType, Value as TypeValue};
    let dim = dims.iter().map(|&d| Dimension {
        value: Some(Value::DimValue(d)),
        ..Default::default()
    });
    ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(TypeValue::TensorType(TensorType {
                elem_type: 1,
                shape: Some(pb::TensorShapeProto { dim: dim.collect() }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// An opset-13 model of `nodes`, encoded.
pub fn model_bytes(
    node: Vec<NodeProto>,
    initializer: Vec<TensorProto>,
    input: Vec<ValueInfoProto>,
    output: Vec<ValueInfoProto>,
) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        graph: Some(GraphProto {
            name: "test".into(),
            node,
            initializer,
            input,
            output,
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}
