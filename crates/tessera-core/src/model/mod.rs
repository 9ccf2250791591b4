//! Loading an ONNX model through `tract-onnx`, and lowering it to tract's decluttered typed
//! graph for the concrete inputs of a run.
//!
//! The model's life: ONNX bytes → proto → [`ModelInfo`] (declared interface, checked dtypes and
//! ops) → tract inference graph (kept) → per input signature: facts set from the real inputs,
//! some inputs folded in as constants ([`specialize`]) → decluttered typed graph, which each
//! backend turns into its own plan.

pub mod concat_products;
pub mod constant_arithmetic;
pub mod constant_facts;
pub mod dequantized_constants;
pub mod index_check;
pub mod info;
pub mod inputs;
pub mod optimizer;
pub mod preflight;
pub mod prop_const;
pub mod quant_barrier;
pub mod quantization;
pub mod specialize;
pub mod typing;
pub mod uniform_constants;

#[cfg(test)]
pub(crate) mod test_models {
    use super::Model;
    use prost::Message;
    use tract_onnx::pb;

    /// A model of this graph alone, at ONNX opset 17.
    pub fn from_graph(graph: pb::GraphProto) -> Model {
        let proto = pb::ModelProto {
            ir_version: 8,
            opset_import: vec![pb::OperatorSetIdProto {
                domain: String::new(),
                version: 17,
            }],
            graph: Some(graph),
            ..Default::default()
        };
        Model::from_bytes(&proto.encode_to_vec()).unwrap()
    }

    /// A node of one output, named after it, without attributes.
    pub fn node(op: &str, inputs: &[&str], output: &str) -> pb::NodeProto {
        pb::NodeProto {
            op_type: op.into(),
            name: output.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.into()],
            ..Default::default()
        }
    }

    /// A graph input or output of ONNX element type `elem_type` with these dims (-1: a dim of
    /// unknown size).
    pub fn value_info(name: &str, elem_type: i32, dims: &[i64]) -> pb::ValueInfoProto {
        use pb::tensor_shape_proto::{Dimension, dimension::Value};
        use pb::type_proto::{Tensor, Value as TypeValue};
        let dim = |d: i64| Dimension {
            value: (d >= 0).then_some(Value::DimValue(d)),
            ..Default::default()
        };
        pb::ValueInfoProto {
            name: name.into(),
            r#type: Some(pb::TypeProto {
                value: Some(TypeValue::TensorType(Tensor {
                    elem_type,
                    shape: Some(pb::TensorShapeProto {
                        dim: dims.iter().map(|&d| dim(d)).collect(),
                    }),
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

use crate::error::{UnsupportedOp, catch_panic, chain_message};
use crate::{Error, Result};
use info::{ModelInfo, op_key, walk_nodes};
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tract_onnx::pb;
use tract_onnx::prelude::InferenceModel;

/// A loaded ONNX model, ready to be lowered for any backend.
#[derive(Debug, Clone)]
pub struct Model {
    info: ModelInfo,
    graph: InferenceModel,
    dequantized: dequantized_constants::DequantizedConstants,
    preflight: preflight::Preflight,
    source: Option<PathBuf>,
}

impl Model {
    /// Loads a model file. The file is memory-mapped only while it is decoded: the map is
    /// released before tract builds its tensors, so the weights are never resident three times
    /// (file pages, protobuf, tensors). Tensors stored as external data are read from the
    /// model's folder.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        // SAFETY: the map is read-only and dropped right after decoding; a file truncated
        // underneath us is the one hazard, as with every mmap-based loader.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        let proto = decode(&map);
        drop(map);
        let mut model = Model::from_proto_in_dir(proto?, path.parent())?;
        model.source = Some(path.to_path_buf());
        Ok(model)
    }

    /// Loads a model from bytes held in memory (no external data).
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        Model::from_proto_in_dir(decode(bytes)?, None)
    }

    /// Reads a model's declared interface without preparing it, with the op types that
    /// Tessera cannot run (empty when it can run them all).
    pub fn inspect(path: impl AsRef<Path>) -> Result<(ModelInfo, Vec<UnsupportedOp>)> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let mut proto = decode(&bytes)?;
        let info = ModelInfo::from_proto(&proto)?;
        let onnx = crate::ops::onnx();
        let unsupported = match proto.graph.as_mut() {
            Some(graph) => supported_after_rewrites(graph, info.opset, &onnx),
            None => vec![],
        };
        Ok((info, unsupported))
    }

    fn from_proto_in_dir(mut proto: pb::ModelProto, dir: Option<&Path>) -> Result<Model> {
        let info = ModelInfo::from_proto(&proto)?;
        let onnx = crate::ops::onnx();
        let unsupported = match proto.graph.as_mut() {
            Some(graph) => {
                forget_symbolic_annotations(graph, true);
                supported_after_rewrites(graph, info.opset, &onnx)
            }
            None => vec![],
        };
        let proto_graph = proto
            .graph
            .as_ref()
            .ok_or_else(|| Error::InvalidModel("the model has no graph".into()))?;
        if !unsupported.is_empty() {
            return Err(Error::UnsupportedOps {
                backend: None,
                ops: unsupported,
            });
        }
        preflight::check_before_parsing(proto_graph).map_err(Error::InvalidModel)?;
        let dir = dir.map(|d| d.to_string_lossy().into_owned());
        let graph = catch_panic("parsing the model", || {
            let parsed = onnx
                .parse(&proto, dir.as_deref())
                .map_err(|e| Error::InvalidModel(chain_message(&e)))?;
            if !parsed.unresolved_inputs.is_empty() {
                return Err(Error::InvalidModel(format!(
                    "these node inputs are produced by no node and are no graph input: {}",
                    parsed.unresolved_inputs.join(", ")
                )));
            }
            Ok(parsed.model)
        })?;
        let preflight =
            preflight::Preflight::of_parsed(proto_graph, &graph, 0).map_err(Error::InvalidModel)?;
        let dequantized = dequantized_constants::DequantizedConstants::of(proto_graph);
        Ok(Model {
            info,
            graph,
            dequantized,
            preflight,
            source: None,
        })
    }

    /// The declared interface of the model.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The file the model came from, if any.
    pub fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// How each constant of a QDQ model was dequantized, by DequantizeLinear node.
    pub fn dequantized_constants(&self) -> &dequantized_constants::DequantizedConstants {
        &self.dequantized
    }

    pub(crate) fn graph(&self) -> &InferenceModel {
        &self.graph
    }

    pub(crate) fn preflight(&self) -> &preflight::Preflight {
        &self.preflight
    }
}

/// Symbolic dims in shape annotations (`batch`, `p2o.DynamicDimension.3`...) are often stale or
/// inconsistent across exporters; the real input shapes decide. Named dims of every annotation
/// except the top-level inputs become unknown (fixed sizes and dtypes stay), so tract infers them.
fn forget_symbolic_annotations(graph: &mut pb::GraphProto, top_level: bool) {
    use pb::tensor_shape_proto::dimension::Value;
    let inputs = if top_level {
        &mut [][..]
    } else {
        &mut graph.input[..]
    };
    let annotations = inputs
        .iter_mut()
        .chain(graph.output.iter_mut())
        .chain(graph.value_info.iter_mut());
    for value in annotations {
        if let Some(pb::type_proto::Value::TensorType(tensor)) =
            value.r#type.as_mut().and_then(|t| t.value.as_mut())
            && let Some(shape) = tensor.shape.as_mut()
        {
            for dim in &mut shape.dim {
                if matches!(dim.value, Some(Value::DimParam(_))) {
                    dim.value = None;
                }
            }
        }
    }
    for node in &mut graph.node {
        for attribute in &mut node.attribute {
            for sub in attribute.g.iter_mut().chain(attribute.graphs.iter_mut()) {
                forget_symbolic_annotations(sub, false);
            }
        }
    }
}

fn decode(bytes: &[u8]) -> Result<pb::ModelProto> {
    let proto = pb::ModelProto::decode(bytes)
        .map_err(|e| Error::InvalidModel(format!("cannot decode the protobuf: {e}")))?;
    if proto.graph.is_none() {
        return Err(Error::InvalidModel("the protobuf holds no graph".into()));
    }
    Ok(proto)
}

/// Rewrites what the core lowers to standard ops before parsing (onnxruntime's `com.microsoft`
/// quantization ops, reverse-direction recurrent layers), then lists what tract still cannot parse: the ops a rewrite
/// refused, with its reason, and every op type with no parser.
fn supported_after_rewrites(
    graph: &mut pb::GraphProto,
    opset: i64,
    onnx: &tract_onnx::Onnx,
) -> Vec<UnsupportedOp> {
    let mut unsupported = crate::ops::microsoft_quant::lower(graph, opset);
    unsupported.extend(crate::ops::rnn_reverse::lower(graph, opset));
    for op in unsupported_ops(graph, &|key| onnx.op_register.0.contains_key(key)) {
        if !unsupported.iter().any(|u| u.op_type == op.op_type) {
            unsupported.push(op);
        }
    }
    unsupported
}

/// Every op type of a graph (subgraphs included) that `is_supported` rejects, with a count.
pub fn unsupported_ops(
    graph: &pb::GraphProto,
    is_supported: &dyn Fn(&str) -> bool,
) -> Vec<UnsupportedOp> {
    let mut found: BTreeMap<String, UnsupportedOp> = BTreeMap::new();
    walk_nodes(graph, &mut |node| {
        let key = op_key(node);
        if !is_supported(&key) {
            found
                .entry(key.clone())
                .or_insert_with(|| UnsupportedOp {
                    op_type: key,
                    first_node: node.name.clone(),
                    count: 0,
                    reason: None,
                })
                .count += 1;
        }
    });
    found.into_values().collect()
}
