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

use super::graph_rewrite::{
    Initializers, NodeBuilder, attribute, float, float_attribute, input, int, int_attribute, ints,
    required, rewrite_graph,
};
use crate::error::UnsupportedOp;
use tract_onnx::pb::{GraphProto, NodeProto};

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
    rewrite_graph(graph, &mut |node, initializers| {
        (node.domain == DOMAIN && OPERATORS.contains(&node.op_type.as_str())).then(|| {
            let mut b = NodeBuilder::new(node);
            rewrite(&mut b, node, opset, initializers).map(|()| b.nodes)
        })
    })
}

/// ONNX `TensorProto.DataType.FLOAT`.
const FLOAT: i64 = 1;

/// The dequantize and quantize steps of the rewrites.
trait QuantizeSteps {
    fn dequantize(
        &mut self,
        x: &str,
        scale: &str,
        zero_point: Option<&str>,
        axis: Option<i64>,
    ) -> String;
    fn dequantize_computed(&mut self, x: &str, scale: &str, zero_point: Option<&str>) -> String;
    fn quantize_into(&mut self, value: &str, scale: &str, zero_point: Option<&str>, output: &str);
}

impl QuantizeSteps for NodeBuilder {
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
}

/// Writes the standard nodes for one `com.microsoft` node into `out`.
fn rewrite(
    out: &mut NodeBuilder,
    node: &NodeProto,
    opset: i64,
    initializers: &Initializers,
) -> Result<(), String> {
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
            let a = out.dequantize(a, a_scale, input(node, 2), None);
            let b = out.dequantize(b, b_scale, input(node, 5), None);
            let op = if node.op_type == "QLinearAdd" {
                "Add"
            } else {
                "Mul"
            };
            let c = out.one(op, &[&a, &b], vec![]);
            out.quantize_into(&c, c_scale, input(node, 7), &output);
        }
        "QLinearSigmoid" => quantized_unary(out, node, &output, |out, x| {
            Ok(out.one("Sigmoid", &[x], vec![]))
        })?,
        "QLinearLeakyRelu" => quantized_unary(out, node, &output, |out, x| {
            let alpha = float_attribute(node, "alpha", 0.01);
            Ok(out.one("LeakyRelu", &[x], vec![float("alpha", alpha)]))
        })?,
        "QLinearSoftmax" => {
            required(node, 4, "y_zero_point")?;
            let node_opset = attribute(node, "opset")
                .map(|a| a.i)
                .ok_or("the opset attribute is required")?;
            let axis = int_attribute(node, "axis", if node_opset < 13 { 1 } else { -1 });
            quantized_unary(out, node, &output, |out, x| {
                if node_opset < 13 {
                    // Softmax-1/11: the tensor flattened to 2-D at `axis`, normalised per row.
                    let shape = out.one("Shape", &[x], vec![]);
                    let flat = out.one("Flatten", &[x], vec![int("axis", axis)]);
                    let y = out.one("Softmax", &[&flat], vec![int("axis", 1)]);
                    Ok(out.one("Reshape", &[&y, &shape], vec![]))
                } else if opset >= 13 || axis == -1 {
                    // The last axis means the same under both definitions.
                    Ok(out.one("Softmax", &[x], vec![int("axis", axis)]))
                } else {
                    Err(format!(
                        "a softmax over axis {axis} alone needs the model's opset to be 13 \
                             or more (it is {opset})"
                    ))
                }
            })?;
        }
        "QLinearConcat" => {
            let y_scale = required(node, 0, "Y_scale")?;
            let y_zero_point = required(node, 1, "Y_zero_point")?;
            let axis = attribute(node, "axis")
                .map(|a| a.i)
                .ok_or("the axis attribute is required")?;
            let triples = node.input.len().saturating_sub(2);
            if triples == 0 || !triples.is_multiple_of(3) {
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
                parts.push(out.dequantize(x, x_scale, input(node, i + 2), None));
            }
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let y = out.one("Concat", &parts, vec![int("axis", axis)]);
            out.quantize_into(&y, y_scale, Some(y_zero_point), &output);
        }
        "QLinearGlobalAveragePool" | "QLinearAveragePool" => {
            if int_attribute(node, "channels_last", 0) != 0 {
                return Err("channels_last = 1 (NHWC) is not supported".into());
            }
            quantized_unary(out, node, &output, |out, x| {
                Ok(if node.op_type == "QLinearGlobalAveragePool" {
                    out.one("GlobalAveragePool", &[x], vec![])
                } else {
                    let attributes = node
                        .attribute
                        .iter()
                        .filter(|a| a.name != "channels_last")
                        .cloned()
                        .collect();
                    out.one("AveragePool", &[x], attributes)
                })
            })?;
        }
        "QGemm" => {
            let a = required(node, 0, "A")?;
            let a_scale = required(node, 1, "a_scale")?;
            let b = required(node, 3, "B")?;
            let b_scale = required(node, 4, "b_scale")?;
            let trans_a = int_attribute(node, "transA", 0);
            let trans_b = int_attribute(node, "transB", 0);
            let alpha = float_attribute(node, "alpha", 1.0);
            let a = out.dequantize(a, a_scale, input(node, 2), None);
            // A per-column b_scale runs along B's N axis: 1 as stored, 0 when transposed.
            let b = out.dequantize(
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
                let scale = out.one("Mul", &[a_scale, b_scale], vec![]);
                let c = out.one("Cast", &[c], vec![int("to", FLOAT)]);
                gemm_inputs.push(out.one("Mul", &[&c, &scale], vec![]));
                attributes.push(float("beta", alpha));
            }
            let inputs: Vec<&str> = gemm_inputs.iter().map(String::as_str).collect();
            match input(node, 7) {
                Some(y_scale) => {
                    let y = out.one("Gemm", &inputs, attributes);
                    out.quantize_into(&y, y_scale, input(node, 8), &output);
                }
                None => out.add_to("Gemm", &inputs, attributes, &[output]),
            }
        }
        "MatMulIntegerToFloat" => {
            let a = required(node, 0, "A")?;
            let b = required(node, 1, "B")?;
            let a_scale = required(node, 2, "a_scale")?;
            let b_scale = required(node, 3, "b_scale")?;
            let a = out.dequantize_computed(a, a_scale, input(node, 4));
            let b = out.dequantize_computed(b, b_scale, input(node, 5));
            matmul_bias_into(out, &a, &b, input(node, 6), &output);
        }
        "DynamicQuantizeMatMul" => {
            let a = required(node, 0, "A")?;
            let b = required(node, 1, "B")?;
            let b_scale = required(node, 2, "b_scale")?;
            let quantized = out.add("DynamicQuantizeLinear", &[a], vec![], 3);
            let a = out.dequantize_computed(&quantized[0], &quantized[1], Some(&quantized[2]));
            let b = out.dequantize_computed(b, b_scale, input(node, 3));
            matmul_bias_into(out, &a, &b, input(node, 4), &output);
        }
        "DynamicQuantizeLSTM" => lstm(out, node, initializers)?,
        other => return Err(format!("{other} is not rewritten")),
    }
    Ok(())
}

/// The single-input operators: X, X_scale, X_zero_point dequantized, `op` in float, quantized
/// with Y_scale, Y_zero_point (inputs 0 to 4) into `output`.
fn quantized_unary(
    out: &mut NodeBuilder,
    node: &NodeProto,
    output: &str,
    op: impl FnOnce(&mut NodeBuilder, &str) -> Result<String, String>,
) -> Result<(), String> {
    let x = required(node, 0, "X")?;
    let x_scale = required(node, 1, "X_scale")?;
    let y_scale = required(node, 3, "Y_scale")?;
    let x = out.dequantize(x, x_scale, input(node, 2), None);
    let y = op(out, &x)?;
    out.quantize_into(&y, y_scale, input(node, 4), output);
    Ok(())
}

fn matmul_bias_into(builder: &mut NodeBuilder, a: &str, b: &str, bias: Option<&str>, output: &str) {
    match bias {
        Some(bias) => {
            let y = builder.one("MatMul", &[a, b], vec![]);
            builder.add_to("Add", &[&y, bias], vec![], &[output.to_string()]);
        }
        None => builder.add_to("MatMul", &[a, b], vec![], &[output.to_string()]),
    }
}

/// `DynamicQuantizeLSTM`: W `[D, I, 4H]` and R `[D, H, 4H]` with scales and zero points of
/// shape `[D]` or `[D, 4H]` become ONNX `LSTM`'s float `[D, 4H, I]` and `[D, 4H, H]`.
fn lstm(
    out: &mut NodeBuilder,
    node: &NodeProto,
    initializers: &Initializers,
) -> Result<(), String> {
    let x = required(node, 0, "X")?;
    let mut weights = vec![];
    for (what, index, scale, zero_point) in [("W", 1, 8, 9), ("R", 2, 10, 11)] {
        let value = required(node, index, what)?;
        let scale = required(node, scale, "scale")?;
        let zero_point = required(node, zero_point, "zero point")?;
        let dims = initializers.dims(scale).ok_or_else(|| {
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
        let shape = out.constant_i64(&shape);
        let scale = out.one("Reshape", &[scale, &shape], vec![]);
        let zero_point = out.one("Reshape", &[zero_point, &shape], vec![]);
        let value = out.dequantize_computed(value, &scale, Some(&zero_point));
        weights.push(out.one("Transpose", &[&value], vec![ints("perm", &[0, 2, 1])]));
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
    out.add_to("LSTM", &inputs, attributes, &outputs);
    Ok(())
}
