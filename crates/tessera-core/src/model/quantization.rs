//! How a model is quantized, in the terms of onnxruntime's quantizer (QDQ, QOperator, dynamic),
//! read from the graph's structure before anything runs.

use super::info::walk_nodes;
use std::collections::{BTreeSet, HashMap, HashSet};
use tract_onnx::pb;

/// A quantization format, as onnxruntime's quantization tools name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum QuantFormat {
    /// Float operators between `DequantizeLinear` and `QuantizeLinear` nodes (static
    /// quantization, `QuantFormat.QDQ`).
    #[serde(rename = "qdq")]
    Qdq,
    /// Operators on quantized tensors: `QLinearConv`, `QLinearMatMul`, and the `com.microsoft`
    /// `QLinear*` and `QGemm` (static quantization, `QuantFormat.QOperator`).
    #[serde(rename = "qoperator")]
    QOperator,
    /// Activations quantized at run time: `DynamicQuantizeLinear` → `MatMulInteger` /
    /// `ConvInteger`, and the `com.microsoft` `MatMulIntegerToFloat`, `DynamicQuantizeMatMul`,
    /// `DynamicQuantizeLSTM` (`quantize_dynamic`).
    #[serde(rename = "dynamic")]
    Dynamic,
}

impl std::fmt::Display for QuantFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuantFormat::Qdq => "QDQ",
            QuantFormat::QOperator => "QOperator",
            QuantFormat::Dynamic => "dynamic",
        })
    }
}

/// How a backend computes a quantized operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuantizedExecution {
    /// In integers: 8-bit operands, 32-bit sums (integer matmul kernels).
    Integer,
    /// In integers where the backend judges them faster by the operator's shape or operands,
    /// else dequantized around the float kernel (the cpu's quantized convolutions: narrow k×k
    /// ones, whose integer im2col costs more than Tessera's float convolution, stay float; on
    /// x86-64 without VNNI, strided ones, and products of two computed operands).
    IntegerWherePaying,
    /// Operands dequantized to float, the float kernel, the result quantized again where the
    /// operator's output is quantized.
    Dequantized,
    /// An element-wise conversion between float and integer (run-time quantization).
    ElementWise,
}

impl std::fmt::Display for QuantizedExecution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            QuantizedExecution::Integer => "integer kernels",
            QuantizedExecution::IntegerWherePaying => {
                "integer kernels where they pay (the rest: float)"
            }
            QuantizedExecution::Dequantized => "dequantized, float kernels",
            QuantizedExecution::ElementWise => "element-wise quantization",
        })
    }
}

/// The quantized operators of each format other than QDQ, which is a pattern of standard ones.
const FORMAT_OPS: &[(&str, QuantFormat)] = &[
    ("QLinearConv", QuantFormat::QOperator),
    ("QLinearMatMul", QuantFormat::QOperator),
    ("QLinearAdd", QuantFormat::QOperator),
    ("QLinearMul", QuantFormat::QOperator),
    ("QLinearSigmoid", QuantFormat::QOperator),
    ("QLinearLeakyRelu", QuantFormat::QOperator),
    ("QLinearSoftmax", QuantFormat::QOperator),
    ("QLinearConcat", QuantFormat::QOperator),
    ("QLinearGlobalAveragePool", QuantFormat::QOperator),
    ("QLinearAveragePool", QuantFormat::QOperator),
    ("QGemm", QuantFormat::QOperator),
    ("DynamicQuantizeLinear", QuantFormat::Dynamic),
    ("MatMulInteger", QuantFormat::Dynamic),
    ("ConvInteger", QuantFormat::Dynamic),
    ("MatMulIntegerToFloat", QuantFormat::Dynamic),
    ("DynamicQuantizeMatMul", QuantFormat::Dynamic),
    ("DynamicQuantizeLSTM", QuantFormat::Dynamic),
];

/// The quantization found in a model.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Quantization {
    /// The formats present; a model may mix them (a QOperator model keeps QDQ around operators
    /// that have no quantized form).
    pub formats: Vec<QuantFormat>,
    /// The quantized operator types present (`QuantizeLinear`/`DequantizeLinear` included),
    /// subgraphs included.
    pub ops: Vec<String>,
    /// Those of them that are onnxruntime's `com.microsoft` contrib operators.
    pub contrib_ops: Vec<String>,
    /// The float operator types that run between dequantize and quantize steps (QDQ format).
    pub qdq_ops: Vec<String>,
}

impl Quantization {
    /// The operator types whose execution differs by backend: the quantized ones other than
    /// `QuantizeLinear`/`DequantizeLinear` (element-wise on every backend), then the float
    /// operators of QDQ patterns.
    pub fn computing_ops(&self) -> Vec<&str> {
        self.ops
            .iter()
            .filter(|op| !matches!(op.as_str(), "QuantizeLinear" | "DequantizeLinear"))
            .chain(&self.qdq_ops)
            .map(String::as_str)
            .collect()
    }

    /// Reads the quantization of `graph` and its subgraphs; `None` when nothing is quantized.
    pub fn of(graph: &pb::GraphProto) -> Option<Quantization> {
        let mut formats = BTreeSet::new();
        let mut ops = BTreeSet::new();
        let mut contrib_ops = BTreeSet::new();
        walk_nodes(graph, &mut |node| {
            let op = node.op_type.as_str();
            let format = FORMAT_OPS.iter().find(|(name, _)| *name == op);
            if let Some((_, format)) = format {
                formats.insert(*format);
            }
            if format.is_some() || op == "QuantizeLinear" || op == "DequantizeLinear" {
                ops.insert(op.to_string());
                if node.domain == "com.microsoft" {
                    contrib_ops.insert(op.to_string());
                }
            }
        });
        let qdq_ops = qdq_float_ops(graph);
        if !qdq_ops.is_empty() {
            formats.insert(QuantFormat::Qdq);
        }
        if ops.is_empty() {
            return None;
        }
        Some(Quantization {
            formats: formats.into_iter().collect(),
            ops: ops.into_iter().collect(),
            contrib_ops: contrib_ops.into_iter().collect(),
            qdq_ops: qdq_ops.into_iter().collect(),
        })
    }
}

/// The float operators of a QDQ pattern: those reading a `DequantizeLinear` output whose own
/// output a `QuantizeLinear` reads, or reading a dequantized initializer (quantized weights).
/// Searched graph by graph, subgraphs included.
fn qdq_float_ops(graph: &pb::GraphProto) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut graphs = vec![graph];
    while let Some(graph) = graphs.pop() {
        let initializers: HashSet<&str> =
            graph.initializer.iter().map(|i| i.name.as_str()).collect();
        let mut producer: HashMap<&str, &pb::NodeProto> = HashMap::new();
        let mut quantized_names: HashSet<&str> = HashSet::new();
        for node in &graph.node {
            for output in &node.output {
                producer.insert(output.as_str(), node);
            }
            if node.op_type == "QuantizeLinear" {
                quantized_names.extend(node.input.first().map(String::as_str));
            }
        }
        let dequantized = |name: &str| {
            producer
                .get(name)
                .filter(|p| p.op_type == "DequantizeLinear")
                .map(|p| p.input.first().map(String::as_str))
        };
        for node in &graph.node {
            for attribute in &node.attribute {
                graphs.extend(attribute.g.iter().chain(attribute.graphs.iter()));
            }
            if matches!(node.op_type.as_str(), "QuantizeLinear" | "DequantizeLinear") {
                continue;
            }
            let reads_weights = node.input.iter().any(|i| {
                dequantized(i).is_some_and(|data| data.is_some_and(|d| initializers.contains(d)))
            });
            let between = node.input.iter().any(|i| dequantized(i).is_some())
                && node
                    .output
                    .iter()
                    .any(|o| quantized_names.contains(o.as_str()));
            if reads_weights || between {
                found.insert(node.op_type.clone());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(op: &str, domain: &str, inputs: &[&str], outputs: &[&str]) -> pb::NodeProto {
        pb::NodeProto {
            op_type: op.into(),
            domain: domain.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn graph(nodes: Vec<pb::NodeProto>, initializers: &[&str]) -> pb::GraphProto {
        pb::GraphProto {
            node: nodes,
            initializer: initializers
                .iter()
                .map(|name| pb::TensorProto {
                    name: name.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn every_contrib_op_the_core_rewrites_has_a_format() {
        for op in crate::ops::microsoft_quant::OPERATORS {
            assert!(FORMAT_OPS.iter().any(|(name, _)| name == op), "{op}");
        }
    }

    #[test]
    fn float_graph_is_not_quantized() {
        let g = graph(vec![node("Conv", "", &["x", "w"], &["y"])], &["w"]);
        assert_eq!(Quantization::of(&g), None);
    }

    #[test]
    fn qdq_pattern_names_the_float_ops_between() {
        let g = graph(
            vec![
                node("DequantizeLinear", "", &["xq", "s", "z"], &["x"]),
                node("DequantizeLinear", "", &["wq", "s", "z"], &["w"]),
                node("Conv", "", &["x", "w"], &["y"]),
                node("QuantizeLinear", "", &["y", "s", "z"], &["yq"]),
                node("DequantizeLinear", "", &["yq", "s", "z"], &["y2"]),
                node("Relu", "", &["y2"], &["out"]),
            ],
            &["wq", "s", "z"],
        );
        let q = Quantization::of(&g).unwrap();
        assert_eq!(q.formats, vec![QuantFormat::Qdq]);
        // Relu reads a dequantized activation but nothing quantizes its output: not between.
        assert_eq!(q.qdq_ops, vec!["Conv".to_string()]);
        assert!(q.contrib_ops.is_empty());
    }

    #[test]
    fn qoperator_with_contrib_ops_and_no_qdq() {
        let g = graph(
            vec![
                node("QuantizeLinear", "", &["x", "s", "z"], &["xq"]),
                node("QLinearConv", "", &["xq", "s", "z", "wq"], &["yq"]),
                node(
                    "QLinearAdd",
                    "com.microsoft",
                    &["yq", "s", "z", "yq"],
                    &["aq"],
                ),
                node("DequantizeLinear", "", &["aq", "s", "z"], &["a"]),
                node("Softmax", "", &["a"], &["out"]),
            ],
            &["wq", "s", "z"],
        );
        let q = Quantization::of(&g).unwrap();
        assert_eq!(q.formats, vec![QuantFormat::QOperator]);
        assert_eq!(q.contrib_ops, vec!["QLinearAdd".to_string()]);
        assert!(q.qdq_ops.is_empty());
    }

    #[test]
    fn dynamic_inside_a_subgraph() {
        let body = graph(
            vec![
                node("DynamicQuantizeLinear", "", &["x"], &["xq", "s", "z"]),
                node("MatMulInteger", "", &["xq", "wq", "z"], &["y"]),
            ],
            &["wq"],
        );
        let mut outer = node("If", "", &["c"], &["out"]);
        outer.attribute.push(pb::AttributeProto {
            name: "then_branch".into(),
            g: Some(body),
            ..Default::default()
        });
        let q = Quantization::of(&graph(vec![outer], &[])).unwrap();
        assert_eq!(q.formats, vec![QuantFormat::Dynamic]);
        assert_eq!(q.ops, vec!["DynamicQuantizeLinear", "MatMulInteger"]);
    }
}
