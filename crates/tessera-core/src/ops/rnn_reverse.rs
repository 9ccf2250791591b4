//! `LSTM`, `GRU` and `RNN` with `direction = "reverse"`, rewritten as a forward pass over the
//! time-reversed sequence.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__LSTM.html> (`direction`). tract-onnx 0.23.9 reads
//! the number of directions from W's shape and never the attribute, so a reverse-only layer ran
//! forward and answered wrong without a word. Here the node's `X` is reversed along its time axis
//! (`Slice` with step -1), the node runs forward, and its `Y` is reversed back; `Y_h` and `Y_c`
//! (the state after the last step processed, the first in time) need nothing. Bidirectional
//! layers are right in tract and are left alone. A `sequence_lens` input, which tract accepts
//! only when every length is the full sequence, keeps its meaning.
//! Needs opset 10 or more (Slice with steps); older models get an error naming the node.

use crate::error::UnsupportedOp;
use tract_onnx::pb::{self, AttributeProto, GraphProto, NodeProto, TensorProto};

const RECURRENT: &[&str] = &["LSTM", "GRU", "RNN"];

/// Rewrites every reverse-direction recurrent node of `graph` (subgraphs included); returns the
/// ones that cannot be rewritten, with the reason.
pub fn lower(graph: &mut GraphProto, opset: i64) -> Vec<UnsupportedOp> {
    let mut refused = vec![];
    lower_graph(graph, opset, &mut refused);
    refused
}

fn is_reverse(node: &NodeProto) -> bool {
    (node.domain.is_empty() || node.domain == "ai.onnx")
        && RECURRENT.contains(&node.op_type.as_str())
        && node
            .attribute
            .iter()
            .any(|a| a.name == "direction" && a.s == b"reverse")
}

fn lower_graph(graph: &mut GraphProto, opset: i64, refused: &mut Vec<UnsupportedOp>) {
    let nodes = std::mem::take(&mut graph.node);
    for mut node in nodes {
        for attribute in &mut node.attribute {
            for sub in attribute.g.iter_mut().chain(attribute.graphs.iter_mut()) {
                lower_graph(sub, opset, refused);
            }
        }
        if !is_reverse(&node) {
            graph.node.push(node);
            continue;
        }
        if opset < 10 {
            refused.push(UnsupportedOp {
                op_type: node.op_type.clone(),
                first_node: node.name.clone(),
                count: 1,
                reason: Some("direction = reverse needs opset 10 or more here".into()),
            });
            graph.node.push(node);
            continue;
        }
        graph.node.extend(rewrite(node));
    }
}

fn constant_i64(name: &str, value: i64) -> NodeProto {
    NodeProto {
        name: name.into(),
        op_type: "Constant".into(),
        output: vec![name.into()],
        attribute: vec![AttributeProto {
            name: "value".into(),
            r#type: pb::attribute_proto::AttributeType::Tensor as i32,
            t: Some(TensorProto {
                dims: vec![1],
                data_type: 7, // INT64
                int64_data: vec![value],
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// `Slice(input, [-1], [i64::MIN], [axis], [-1])`: `input` reversed along `axis`.
fn reversed(prefix: &str, input: &str, output: &str, axis: i64) -> Vec<NodeProto> {
    let names = ["start", "end", "axis", "step"].map(|n| format!("{prefix}/{n}"));
    vec![
        constant_i64(&names[0], -1),
        constant_i64(&names[1], i64::MIN),
        constant_i64(&names[2], axis),
        constant_i64(&names[3], -1),
        NodeProto {
            name: format!("{prefix}/slice"),
            op_type: "Slice".into(),
            input: std::iter::once(input.to_string())
                .chain(names.iter().cloned())
                .collect(),
            output: vec![output.into()],
            ..Default::default()
        },
    ]
}

fn rewrite(mut node: NodeProto) -> Vec<NodeProto> {
    let base = if node.name.is_empty() {
        node.output.first().cloned().unwrap_or_default()
    } else {
        node.name.clone()
    };
    let prefix = format!("{base}/tessera_reverse");
    let batch_first = node
        .attribute
        .iter()
        .any(|a| a.name == "layout" && a.i == 1);
    let time_axis = if batch_first { 1 } else { 0 };
    for attribute in &mut node.attribute {
        if attribute.name == "direction" {
            attribute.s = b"forward".to_vec();
        }
    }
    let mut nodes = vec![];
    let x = format!("{prefix}/x");
    nodes.extend(reversed(
        &format!("{prefix}/x"),
        &node.input[0],
        &x,
        time_axis,
    ));
    node.input[0] = x;
    let y = node.output.first().filter(|y| !y.is_empty()).cloned();
    if y.is_some() {
        node.output[0] = format!("{prefix}/y");
    }
    let y_reversed = y.map(|y| {
        reversed(
            &format!("{prefix}/y"),
            &format!("{prefix}/y"),
            &y,
            time_axis,
        )
    });
    nodes.push(node);
    nodes.extend(y_reversed.into_iter().flatten());
    nodes
}
