//! The `com.microsoft` quantization operators that onnxruntime's quantizer and graph optimizer
//! write, rewritten into standard ONNX operators before tract parses the graph.
//!
//! Spec: <https://github.com/microsoft/onnxruntime/blob/main/docs/ContribOperators.md> (the
//! schemas of onnxruntime 1.32). Each operator becomes what its definition computes, in ONNX
//! terms: the quantized operands dequantized (`(x - zero_point) * scale`), the float operator,
//! and a `QuantizeLinear` (round half to even, saturate) where the output is quantized. tract then
//! folds constant weights and fuses element-wise DequantizeLinear → op → QuantizeLinear chains
//! into lookup tables as it does for QDQ models, and every backend runs the standard operators it
//! already has: nothing here is backend-specific.
//!
//! | operator | becomes |
//! | --- | --- |
//! | `QLinearAdd`, `QLinearMul` | DQ, DQ → `Add` / `Mul` → Q |
//! | `QLinearSigmoid`, `QLinearLeakyRelu` | DQ → `Sigmoid` / `LeakyRelu` → Q |
//! | `QLinearSoftmax` | DQ → `Softmax` (opset < 13: flattened at `axis`) → Q |
//! | `QLinearConcat` | DQ of each input → `Concat` → Q |
//! | `QLinearGlobalAveragePool`, `QLinearAveragePool` | DQ → the float pool → Q (NCHW only) |
//! | `QGemm` | DQ(A), DQ(B per column) → `Gemm` with the int32 bias scaled by `a_scale·b_scale` → Q, or float |
//! | `MatMulIntegerToFloat` | dequantized A and B (scales may be computed) → `MatMul` → + bias |
//! | `DynamicQuantizeMatMul` | `DynamicQuantizeLinear`(A) → as `MatMulIntegerToFloat` |
//! | `DynamicQuantizeLSTM` | W, R dequantized and transposed to ONNX's layout → `LSTM` |
//!
//! Where onnxruntime's kernels compute in integers (QGemm, MatMulIntegerToFloat), the float sums
//! here part from them by float rounding only; a quantized output can then differ by one step
//! where the value lands on a rounding tie. `DynamicQuantizeLSTM` runs the LSTM on the dequantized
//! weights in float: onnxruntime also quantizes the activations at every step, so its outputs
//! carry that extra error and Tessera's sit closer to the float model's.
//! Not rewritten (reported with the reason): NHWC pooling (`channels_last = 1`, which only
//! onnxruntime's in-memory layout transformer writes) and scales that are not constants where a
//! `DequantizeLinear` needs one.

use crate::error::UnsupportedOp;
use tract_onnx::pb::{self, AttributeProto, GraphProto, NodeProto, TensorProto};

const DOMAIN: &str = "com.microsoft";

/// The operators this module rewrites.
pub const OPERATORS: &[&str] = &[
    "QLinearAdd",
    "QLinearMul",
    "QLinearSigmoid",
    "QLinearLeakyRelu",
    "QLinearSoftmax",
    "QLinearConcat",
    "QLinearGlobalAveragePool",
    "QLinearAveragePool",
    "QGemm",
    "MatMulIntegerToFloat",
    "DynamicQuantizeMatMul",
    "DynamicQuantizeLSTM",
];

/// Rewrites every `com.microsoft` quantization node of `graph` (subgraphs included) into
/// standard operators. `opset` is the model's default-domain opset, which decides the meaning of
/// `Softmax`. Nodes that cannot be rewritten stay in place and are returned with the reason.
pub fn lower(graph: &mut GraphProto, opset: i64) -> Vec<UnsupportedOp> {
    let mut refused: Vec<UnsupportedOp> = vec![];
    lower_graph(graph, opset, &mut refused);
    refused
}

fn lower_graph(graph: &mut GraphProto, opset: i64, refused: &mut Vec<UnsupportedOp>) {
    let initializer_dims: Vec<(String, Vec<i64>)> = graph
        .initializer
        .iter()
        .map(|t| (t.name.clone(), t.dims.clone()))
        .collect();
    let nodes = std::mem::take(&mut graph.node);
    for mut node in nodes {
        for attribute in &mut node.attribute {
            for sub in attribute.g.iter_mut().chain(attribute.graphs.iter_mut()) {
                lower_graph(sub, opset, refused);
            }
        }
        if node.domain != DOMAIN || !OPERATORS.contains(&node.op_type.as_str()) {
            graph.node.push(node);
            continue;
        }
        let mut out = Rewrite::new(&node, &initializer_dims);
        match out.rewrite(&node, opset) {
            Ok(()) => graph.node.extend(out.nodes),
            Err(reason) => {
                match refused.iter_mut().find(|r| r.op_type == node.op_type) {
                    Some(r) => r.count += 1,
                    None => refused.push(UnsupportedOp {
                        op_type: node.op_type.clone(),
                        first_node: node.name.clone(),
                        count: 1,
                        reason: Some(reason),
                    }),
                }
                graph.node.push(node);
            }
        }
    }
}

/// The standard nodes that replace one `com.microsoft` node.
struct Rewrite<'a> {
    prefix: String,
    nodes: Vec<NodeProto>,
    initializer_dims: &'a [(String, Vec<i64>)],
}

/// The `i`th input of a node, `None` when absent or left empty (an omitted optional input).
fn input(node: &NodeProto, i: usize) -> Option<&str> {
    node.input
        .get(i)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

fn required<'n>(node: &'n NodeProto, i: usize, what: &str) -> Result<&'n str, String> {
    input(node, i).ok_or_else(|| format!("input {i} ({what}) is required"))
}

fn attribute<'n>(node: &'n NodeProto, name: &str) -> Option<&'n AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}

fn int_attribute(node: &NodeProto, name: &str, default: i64) -> i64 {
    attribute(node, name).map(|a| a.i).unwrap_or(default)
}

fn float_attribute(node: &NodeProto, name: &str, default: f32) -> f32 {
    attribute(node, name).map(|a| a.f).unwrap_or(default)
}

fn int(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Int as i32,
        i: value,
        ..Default::default()
    }
}

fn float(name: &str, value: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Float as i32,
        f: value,
        ..Default::default()
    }
}

fn ints(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Ints as i32,
        ints: values.to_vec(),
        ..Default::default()
    }
}

/// ONNX `TensorProto.DataType.FLOAT`.
const FLOAT: i64 = 1;

impl<'a> Rewrite<'a> {
    fn new(node: &NodeProto, initializer_dims: &'a [(String, Vec<i64>)]) -> Rewrite<'a> {
        let base = if node.name.is_empty() {
            node.output.first().cloned().unwrap_or_default()
        } else {
            node.name.clone()
        };
        Rewrite {
            prefix: format!("{base}/tessera"),
            nodes: vec![],
            initializer_dims,
        }
    }

    /// Adds a node with fresh output names; returns them.
    fn add(
        &mut self,
        op: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
        outputs: usize,
    ) -> Vec<String> {
        let index = self.nodes.len();
        let names: Vec<String> = (0..outputs)
            .map(|o| format!("{}/{index}_{op}:{o}", self.prefix))
            .collect();
        self.add_to(op, inputs, attributes, &names);
        names
    }

    /// Adds a node writing the given outputs (the replaced node's own, for the last one).
    fn add_to(
        &mut self,
        op: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
        outputs: &[String],
    ) {
        let index = self.nodes.len();
        self.nodes.push(NodeProto {
            name: format!("{}/{index}_{op}", self.prefix),
            op_type: op.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: outputs.to_vec(),
            attribute: attributes,
            ..Default::default()
        });
    }

    fn one(&mut self, op: &str, inputs: &[&str], attributes: Vec<AttributeProto>) -> String {
        self.add(op, inputs, attributes, 1).remove(0)
    }

    /// `DequantizeLinear(x, scale, zero_point)`: scale and zero point must be constants.
    fn dequantize(
        &mut self,
        x: &str,
        scale: &str,
        zero_point: Option<&str>,
        axis: Option<i64>,
    ) -> String {
        let mut inputs = vec![x, scale];
        inputs.extend(zero_point);
        let attributes = axis.map(|a| vec![int("axis", a)]).unwrap_or_default();
        self.one("DequantizeLinear", &inputs, attributes)
    }

    /// `(float(x) - float(zero_point)) * scale` with numpy broadcasting: for scales computed at
    /// run time, and per-column scales of a batched matrix.
    fn dequantize_computed(&mut self, x: &str, scale: &str, zero_point: Option<&str>) -> String {
        let mut value = self.one("Cast", &[x], vec![int("to", FLOAT)]);
        if let Some(zero_point) = zero_point {
            let zero_point = self.one("Cast", &[zero_point], vec![int("to", FLOAT)]);
            value = self.one("Sub", &[&value, &zero_point], vec![]);
        }
        self.one("Mul", &[&value, scale], vec![])
    }

    /// `QuantizeLinear(value, scale, zero_point)` into the replaced node's output.
    fn quantize_into(&mut self, value: &str, scale: &str, zero_point: Option<&str>, output: &str) {
        let mut inputs = vec![value, scale];
        inputs.extend(zero_point);
        self.add_to("QuantizeLinear", &inputs, vec![], &[output.to_string()]);
    }

    fn constant_i64(&mut self, values: &[i64]) -> String {
        let tensor = TensorProto {
            dims: vec![values.len() as i64],
            data_type: 7, // INT64
            int64_data: values.to_vec(),
            ..Default::default()
        };
        let value = AttributeProto {
            name: "value".into(),
            r#type: pb::attribute_proto::AttributeType::Tensor as i32,
            t: Some(tensor),
            ..Default::default()
        };
        self.one("Constant", &[], vec![value])
    }

    fn initializer_dims(&self, name: &str) -> Option<&[i64]> {
        self.initializer_dims
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.as_slice())
    }

    fn rewrite(&mut self, node: &NodeProto, opset: i64) -> Result<(), String> {
        let output = node
            .output
            .first()
            .filter(|o| !o.is_empty())
            .cloned()
            .ok_or("the node has no output")?;
        match node.op_type.as_str() {
            "QLinearAdd" | "QLinearMul" => {
                let a = required(node, 0, "A")?;
                let a_scale = required(node, 1, "A_scale")?;
                let b = required(node, 3, "B")?;
                let b_scale = required(node, 4, "B_scale")?;
                let c_scale = required(node, 6, "C_scale")?;
                let a = self.dequantize(a, a_scale, input(node, 2), None);
                let b = self.dequantize(b, b_scale, input(node, 5), None);
                let op = if node.op_type == "QLinearAdd" {
                    "Add"
                } else {
                    "Mul"
                };
                let c = self.one(op, &[&a, &b], vec![]);
                self.quantize_into(&c, c_scale, input(node, 7), &output);
            }
            "QLinearSigmoid" | "QLinearLeakyRelu" => {
                let x = required(node, 0, "X")?;
                let x_scale = required(node, 1, "X_scale")?;
                let y_scale = required(node, 3, "Y_scale")?;
                let x = self.dequantize(x, x_scale, input(node, 2), None);
                let y = if node.op_type == "QLinearSigmoid" {
                    self.one("Sigmoid", &[&x], vec![])
                } else {
                    let alpha = float_attribute(node, "alpha", 0.01);
                    self.one("LeakyRelu", &[&x], vec![float("alpha", alpha)])
                };
                self.quantize_into(&y, y_scale, input(node, 4), &output);
            }
            "QLinearSoftmax" => {
                let x = required(node, 0, "X")?;
                let x_scale = required(node, 1, "X_scale")?;
                let y_scale = required(node, 3, "y_scale")?;
                let y_zero_point = required(node, 4, "y_zero_point")?;
                let node_opset = attribute(node, "opset")
                    .map(|a| a.i)
                    .ok_or("the opset attribute is required")?;
                let axis = int_attribute(node, "axis", if node_opset < 13 { 1 } else { -1 });
                let x = self.dequantize(x, x_scale, input(node, 2), None);
                let y = if node_opset < 13 {
                    // Softmax-1/11: the tensor flattened to 2-D at `axis`, normalised per row.
                    let shape = self.one("Shape", &[&x], vec![]);
                    let flat = self.one("Flatten", &[&x], vec![int("axis", axis)]);
                    let y = self.one("Softmax", &[&flat], vec![int("axis", 1)]);
                    self.one("Reshape", &[&y, &shape], vec![])
                } else if opset >= 13 || axis == -1 {
                    // The last axis means the same under both definitions.
                    self.one("Softmax", &[&x], vec![int("axis", axis)])
                } else {
                    return Err(format!(
                        "a softmax over axis {axis} alone needs the model's opset to be 13 or \
                         more (it is {opset})"
                    ));
                };
                self.quantize_into(&y, y_scale, Some(y_zero_point), &output);
            }
            "QLinearConcat" => {
                let y_scale = required(node, 0, "Y_scale")?;
                let y_zero_point = required(node, 1, "Y_zero_point")?;
                let axis = attribute(node, "axis")
                    .map(|a| a.i)
                    .ok_or("the axis attribute is required")?;
                let triples = node.input.len().saturating_sub(2);
                if triples == 0 || triples % 3 != 0 {
                    return Err(format!(
                        "expected (X, X_scale, X_zero_point) triples after Y_scale and \
                         Y_zero_point, got {triples} more inputs"
                    ));
                }
                let mut parts = vec![];
                for t in 0..triples / 3 {
                    let i = 2 + 3 * t;
                    let x = required(node, i, "X")?;
                    let x_scale = required(node, i + 1, "X_scale")?;
                    parts.push(self.dequantize(x, x_scale, input(node, i + 2), None));
                }
                let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
                let y = self.one("Concat", &parts, vec![int("axis", axis)]);
                self.quantize_into(&y, y_scale, Some(y_zero_point), &output);
            }
            "QLinearGlobalAveragePool" | "QLinearAveragePool" => {
                if int_attribute(node, "channels_last", 0) != 0 {
                    return Err("channels_last = 1 (NHWC) is not supported".into());
                }
                let x = required(node, 0, "X")?;
                let x_scale = required(node, 1, "x_scale")?;
                let y_scale = required(node, 3, "y_scale")?;
                let x = self.dequantize(x, x_scale, input(node, 2), None);
                let y = if node.op_type == "QLinearGlobalAveragePool" {
                    self.one("GlobalAveragePool", &[&x], vec![])
                } else {
                    let attributes = node
                        .attribute
                        .iter()
                        .filter(|a| a.name != "channels_last")
                        .cloned()
                        .collect();
                    self.one("AveragePool", &[&x], attributes)
                };
                self.quantize_into(&y, y_scale, input(node, 4), &output);
            }
            "QGemm" => {
                let a = required(node, 0, "A")?;
                let a_scale = required(node, 1, "a_scale")?;
                let b = required(node, 3, "B")?;
                let b_scale = required(node, 4, "b_scale")?;
                let trans_a = int_attribute(node, "transA", 0);
                let trans_b = int_attribute(node, "transB", 0);
                let alpha = float_attribute(node, "alpha", 1.0);
                let a = self.dequantize(a, a_scale, input(node, 2), None);
                // A per-column b_scale runs along B's N axis: 1 as stored, 0 when transposed.
                let b = self.dequantize(
                    b,
                    b_scale,
                    input(node, 5),
                    Some(if trans_b != 0 { 0 } else { 1 }),
                );
                let mut gemm_inputs = vec![a, b];
                let mut attributes = vec![
                    int("transA", trans_a),
                    int("transB", trans_b),
                    float("alpha", alpha),
                ];
                if let Some(c) = input(node, 6) {
                    // The int32 bias is quantized with scale alpha·a_scale·b_scale and added
                    // before the product's scaling: in float, beta = alpha.
                    let scale = self.one("Mul", &[a_scale, b_scale], vec![]);
                    let c = self.one("Cast", &[c], vec![int("to", FLOAT)]);
                    gemm_inputs.push(self.one("Mul", &[&c, &scale], vec![]));
                    attributes.push(float("beta", alpha));
                }
                let inputs: Vec<&str> = gemm_inputs.iter().map(String::as_str).collect();
                match input(node, 7) {
                    Some(y_scale) => {
                        let y = self.one("Gemm", &inputs, attributes);
                        self.quantize_into(&y, y_scale, input(node, 8), &output);
                    }
                    None => self.add_to("Gemm", &inputs, attributes, &[output]),
                }
            }
            "MatMulIntegerToFloat" => {
                let a = required(node, 0, "A")?;
                let b = required(node, 1, "B")?;
                let a_scale = required(node, 2, "a_scale")?;
                let b_scale = required(node, 3, "b_scale")?;
                let a = self.dequantize_computed(a, a_scale, input(node, 4));
                let b = self.dequantize_computed(b, b_scale, input(node, 5));
                self.matmul_bias_into(&a, &b, input(node, 6), &output);
            }
            "DynamicQuantizeMatMul" => {
                let a = required(node, 0, "A")?;
                let b = required(node, 1, "B")?;
                let b_scale = required(node, 2, "b_scale")?;
                let quantized = self.add("DynamicQuantizeLinear", &[a], vec![], 3);
                let a = self.dequantize_computed(&quantized[0], &quantized[1], Some(&quantized[2]));
                let b = self.dequantize_computed(b, b_scale, input(node, 3));
                self.matmul_bias_into(&a, &b, input(node, 4), &output);
            }
            "DynamicQuantizeLSTM" => self.lstm(node)?,
            other => return Err(format!("{other} is not rewritten")),
        }
        Ok(())
    }

    fn matmul_bias_into(&mut self, a: &str, b: &str, bias: Option<&str>, output: &str) {
        match bias {
            Some(bias) => {
                let y = self.one("MatMul", &[a, b], vec![]);
                self.add_to("Add", &[&y, bias], vec![], &[output.to_string()]);
            }
            None => self.add_to("MatMul", &[a, b], vec![], &[output.to_string()]),
        }
    }

    /// `DynamicQuantizeLSTM`: W `[D, I, 4H]` and R `[D, H, 4H]` with scales and zero points of
    /// shape `[D]` or `[D, 4H]` become ONNX `LSTM`'s float `[D, 4H, I]` and `[D, 4H, H]`.
    fn lstm(&mut self, node: &NodeProto) -> Result<(), String> {
        let x = required(node, 0, "X")?;
        let mut weights = vec![];
        for (what, index, scale, zero_point) in [("W", 1, 8, 9), ("R", 2, 10, 11)] {
            let value = required(node, index, what)?;
            let scale = required(node, scale, "scale")?;
            let zero_point = required(node, zero_point, "zero point")?;
            let dims = self.initializer_dims(scale).ok_or_else(|| {
                format!(
                    "the {what} scale '{scale}' must be an initializer (its shape decides its axis)"
                )
            })?;
            // Broadcast along [D, ·, 4H]: [D] → [D, 1, 1], [D, 4H] → [D, 1, 4H].
            let shape = match *dims {
                [d] => vec![d, 1, 1],
                [d, n] => vec![d, 1, n],
                _ => {
                    return Err(format!(
                        "the {what} scale must have shape [D] or [D, 4H], got {dims:?}"
                    ));
                }
            };
            let shape = self.constant_i64(&shape);
            let scale = self.one("Reshape", &[scale, &shape], vec![]);
            let zero_point = self.one("Reshape", &[zero_point, &shape], vec![]);
            let value = self.dequantize_computed(value, &scale, Some(&zero_point));
            weights.push(self.one("Transpose", &[&value], vec![ints("perm", &[0, 2, 1])]));
        }
        let mut inputs: Vec<&str> = vec![x, &weights[0], &weights[1]];
        inputs.extend((3..8).map(|i| input(node, i).unwrap_or("")));
        while inputs.last() == Some(&"") {
            inputs.pop();
        }
        let attributes = node
            .attribute
            .iter()
            .filter(|a| {
                matches!(
                    a.name.as_str(),
                    "activation_alpha"
                        | "activation_beta"
                        | "activations"
                        | "clip"
                        | "direction"
                        | "hidden_size"
                        | "input_forget"
                )
            })
            .cloned()
            .collect();
        let outputs = node.output.clone();
        self.add_to("LSTM", &inputs, attributes, &outputs);
        Ok(())
    }
}
