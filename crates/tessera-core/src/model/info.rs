//! What a model declares, read straight from its ONNX proto: inputs and outputs with
//! their (possibly symbolic) dims, opset, and which operators it uses.

use super::quantization::Quantization;
use crate::{DType, Error, Result, dtype::onnx_type_name};
use std::collections::{BTreeMap, HashSet};
use tract_onnx::pb::{self, tensor_shape_proto::dimension::Value as DimValue, type_proto};

/// One dimension as the model declares it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Dim {
    /// A fixed size.
    Fixed(usize),
    /// A named symbolic size (`batch`, `sequence_length`...).
    Symbol(String),
    /// Left open without a name.
    Unknown,
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbol(s) => f.write_str(s),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// A declared graph input or output.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IoInfo {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Declared dims; `None` when the model declares no shape at all.
    pub dims: Option<Vec<Dim>>,
}

impl IoInfo {
    /// `float32[batch, 3, 224, 224]`.
    pub fn signature(&self) -> String {
        match &self.dims {
            Some(dims) => {
                let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
                format!("{}[{}]", self.dtype, dims.join(", "))
            }
            None => format!("{}[any shape]", self.dtype),
        }
    }
}

/// Everything Tessera reports about a model before running it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelInfo {
    /// Inputs a caller must feed (initializers listed as inputs are excluded).
    pub inputs: Vec<IoInfo>,
    /// Outputs the model produces.
    pub outputs: Vec<IoInfo>,
    /// Default-domain opset version.
    pub opset: i64,
    /// Producer name and version, when recorded.
    pub producer: String,
    /// Count of nodes per op type, subgraphs included.
    pub op_histogram: BTreeMap<String, usize>,
    /// Whether the model holds quantized ops (QDQ pairs, QLinear*, *Integer, onnxruntime's
    /// com.microsoft quantization ops).
    pub quantized: bool,
    /// Its quantization formats and quantized operators, when it is quantized.
    pub quantization: Option<Quantization>,
}

/// Every node of a graph and its subgraphs, depth first.
pub(crate) fn walk_nodes<'a>(graph: &'a pb::GraphProto, visit: &mut dyn FnMut(&'a pb::NodeProto)) {
    for node in &graph.node {
        visit(node);
        for attribute in &node.attribute {
            for sub in attribute.g.iter().chain(attribute.graphs.iter()) {
                walk_nodes(sub, visit);
            }
        }
    }
}

/// The key an op is registered under: tract-onnx looks ops up by type alone, whatever the domain.
pub(crate) fn op_key(node: &pb::NodeProto) -> String {
    node.op_type.clone()
}

fn io_info(value: &pb::ValueInfoProto) -> Result<IoInfo> {
    let tensor_type = match value.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(type_proto::Value::TensorType(t)) => t,
        None => {
            return Err(Error::UnsupportedDtype {
                dtype: "sequence/map/optional".into(),
                context: format!("graph input or output '{}'", value.name),
            });
        }
    };
    let dtype =
        DType::from_onnx_code(tensor_type.elem_type).map_err(|dtype| Error::UnsupportedDtype {
            dtype,
            context: format!("graph input or output '{}'", value.name),
        })?;
    let dims = tensor_type.shape.as_ref().map(|shape| {
        shape
            .dim
            .iter()
            .map(|d| match &d.value {
                Some(DimValue::DimValue(v)) if *v >= 0 => Dim::Fixed(*v as usize),
                Some(DimValue::DimParam(p)) if !p.is_empty() && p != "?" => Dim::Symbol(p.clone()),
                _ => Dim::Unknown,
            })
            .collect()
    });
    Ok(IoInfo {
        name: value.name.clone(),
        dtype,
        dims,
    })
}

/// Rejects tensors of element types Tessera does not hold (float8, int4, bfloat16...), naming one.
fn check_dtypes(graph: &pb::GraphProto) -> Result<()> {
    let unsupported = |code: i32| code != 0 && code != 8 && DType::from_onnx_code(code).is_err();
    for init in &graph.initializer {
        if unsupported(init.data_type) {
            return Err(Error::UnsupportedDtype {
                dtype: onnx_type_name(init.data_type).into(),
                context: format!("initializer '{}'", init.name),
            });
        }
    }
    let mut found = None;
    walk_nodes(graph, &mut |node| {
        if found.is_some() {
            return;
        }
        for attribute in &node.attribute {
            let cast_to =
                (attribute.name == "to" && node.op_type == "Cast").then_some(attribute.i as i32);
            let tensor_types = attribute
                .t
                .iter()
                .chain(&attribute.tensors)
                .map(|t| t.data_type);
            for code in cast_to.into_iter().chain(tensor_types) {
                if unsupported(code) {
                    found = Some(Error::UnsupportedDtype {
                        dtype: onnx_type_name(code).into(),
                        context: format!("{} node '{}'", node.op_type, node.name),
                    });
                }
            }
        }
    });
    found.map_or(Ok(()), Err)
}

/// The names tract can resolve while parsing `graph`: its inputs, initializers and node outputs,
/// and the names its nodes (and their subgraphs' nodes) read, which tract wires in from the
/// enclosing graph.
fn visible_names<'a>(graph: &'a pb::GraphProto, names: &mut HashSet<&'a str>) {
    names.extend(graph.input.iter().map(|i| i.name.as_str()));
    names.extend(graph.initializer.iter().map(|i| i.name.as_str()));
    read_names(graph, names);
    for node in &graph.node {
        names.extend(node.output.iter().map(String::as_str));
    }
    // An empty name is an omitted optional output or input: it names no tensor.
    names.remove("");
}

fn read_names<'a>(graph: &'a pb::GraphProto, names: &mut HashSet<&'a str>) {
    for node in &graph.node {
        names.extend(node.input.iter().map(String::as_str));
        for attribute in &node.attribute {
            for sub in attribute.g.iter().chain(attribute.graphs.iter()) {
                read_names(sub, names);
            }
        }
    }
}

/// Rejects graphs (subgraphs included) whose outputs name a tensor tract cannot resolve while
/// parsing that graph (it would index a missing key): an empty name, one nothing defines, or, in
/// a subgraph, a value of the enclosing graph that no node of the subgraph reads.
fn check_outputs_defined(graph: &pb::GraphProto) -> Result<()> {
    let mut visible = HashSet::new();
    visible_names(graph, &mut visible);
    if let Some(output) = graph
        .output
        .iter()
        .find(|o| !visible.contains(o.name.as_str()))
    {
        return Err(Error::InvalidModel(format!(
            "graph '{}' declares output '{}', which no node, initializer or input of that graph produces",
            graph.name, output.name
        )));
    }
    for node in &graph.node {
        for attribute in &node.attribute {
            for sub in attribute.g.iter().chain(attribute.graphs.iter()) {
                check_outputs_defined(sub)?;
            }
        }
    }
    Ok(())
}

impl ModelInfo {
    /// Reads the declared interface of a model proto, checks its element types and that its
    /// outputs are defined.
    pub fn from_proto(proto: &pb::ModelProto) -> Result<ModelInfo> {
        let graph = proto
            .graph
            .as_ref()
            .ok_or_else(|| Error::InvalidModel("the model has no graph".into()))?;
        check_dtypes(graph)?;
        check_outputs_defined(graph)?;
        let initializers: HashSet<&str> =
            graph.initializer.iter().map(|i| i.name.as_str()).collect();
        let inputs = graph
            .input
            .iter()
            .filter(|i| !initializers.contains(i.name.as_str()))
            .map(io_info)
            .collect::<Result<Vec<_>>>()?;
        let outputs = graph
            .output
            .iter()
            .map(io_info)
            .collect::<Result<Vec<_>>>()?;
        let opset = proto
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
            .map_or(0, |o| o.version);
        let mut op_histogram = BTreeMap::new();
        walk_nodes(graph, &mut |node| {
            *op_histogram.entry(op_key(node)).or_insert(0) += 1
        });
        let quantization = Quantization::of(graph);
        let producer = format!("{} {}", proto.producer_name, proto.producer_version)
            .trim()
            .to_string();
        Ok(ModelInfo {
            inputs,
            outputs,
            opset,
            producer,
            op_histogram,
            quantized: quantization.is_some(),
            quantization,
        })
    }

    /// The names of the inputs a caller feeds, in order.
    pub fn input_names(&self) -> Vec<String> {
        self.inputs.iter().map(|i| i.name.clone()).collect()
    }

    /// The names of the outputs, in order.
    pub fn output_names(&self) -> Vec<String> {
        self.outputs.iter().map(|o| o.name.clone()).collect()
    }

    /// Index of the input with this name.
    pub fn input_index(&self, name: &str) -> Option<usize> {
        self.inputs.iter().position(|i| i.name == name)
    }
}
