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

use super::graph_rewrite::{NodeBuilder, rewrite_graph};
use crate::error::UnsupportedOp;
use tract_onnx::pb::{GraphProto, NodeProto};

const RECURRENT: &[&str] = &["LSTM", "GRU", "RNN"];

/// Rewrites every reverse-direction recurrent node of `graph` (subgraphs included); returns the
/// ones that cannot be rewritten, with the reason.
pub fn lower(graph: &mut GraphProto, opset: i64) -> Vec<UnsupportedOp> {
    rewrite_graph(graph, &mut |node, _| {
        is_reverse(node).then(|| {
            if opset < 10 {
                return Err("direction = reverse needs opset 10 or more here".into());
            }
            Ok(rewrite(node))
        })
    })
}

fn is_reverse(node: &NodeProto) -> bool {
    (node.domain.is_empty() || node.domain == "ai.onnx")
        && RECURRENT.contains(&node.op_type.as_str())
        && node
            .attribute
            .iter()
            .any(|a| a.name == "direction" && a.s == b"reverse")
}

/// `Slice(input, [-1], [i64::MIN], [axis], [-1])`: `input` reversed along `axis`, into `output`.
fn reverse_into(out: &mut NodeBuilder, input: &str, output: &str, axis: i64) {
    let bounds = [-1, i64::MIN, axis, -1].map(|v| out.constant_i64(&[v]));
    let inputs: Vec<&str> = std::iter::once(input)
        .chain(bounds.iter().map(String::as_str))
        .collect();
    out.add_to("Slice", &inputs, vec![], &[output.to_string()]);
}

fn rewrite(node: &NodeProto) -> Vec<NodeProto> {
    let mut out = NodeBuilder::new(node);
    let mut forward = node.clone();
    for attribute in &mut forward.attribute {
        if attribute.name == "direction" {
            attribute.s = b"forward".to_vec();
        }
    }
    let batch_first = node
        .attribute
        .iter()
        .any(|a| a.name == "layout" && a.i == 1);
    let time_axis = if batch_first { 1 } else { 0 };
    let x = out.value_name("x_reversed");
    reverse_into(&mut out, &node.input[0], &x, time_axis);
    forward.input[0] = x;
    let y = node.output.first().filter(|y| !y.is_empty()).cloned();
    let reversed_y = y.as_ref().map(|_| out.value_name("y_reversed"));
    if let Some(reversed_y) = &reversed_y {
        forward.output[0] = reversed_y.clone();
    }
    out.nodes.push(forward);
    if let (Some(y), Some(reversed_y)) = (y, reversed_y) {
        reverse_into(&mut out, &reversed_y, &y, time_axis);
    }
    out.nodes
}
