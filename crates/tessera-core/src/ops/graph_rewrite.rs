//! Rewriting ONNX nodes into other standard nodes before tract parses the graph: the walk over a
//! graph and its subgraphs, the bookkeeping of nodes that cannot be rewritten, and a builder for
//! the replacement nodes. Used by [`super::microsoft_quant`] and [`super::rnn_reverse`].

use crate::error::UnsupportedOp;
use tract_onnx::pb::{self, AttributeProto, GraphProto, NodeProto, TensorProto};

/// What [`rewrite_graph`] asks of each node: `Some(Ok(nodes))` to replace it, `Some(Err(reason))`
/// to keep and report it, `None` to keep it.
pub type Rewrite<'a> =
    dyn FnMut(&NodeProto, &Initializers) -> Option<Result<Vec<NodeProto>, String>> + 'a;

/// Replaces, in `graph` and every subgraph, each node for which `rewrite` returns
/// `Some(Ok(nodes))` by those nodes. `Some(Err(reason))` keeps the node and reports it; `None`
/// keeps it silently. `rewrite` also sees the dims of the graph's initializers.
pub fn rewrite_graph(graph: &mut GraphProto, rewrite: &mut Rewrite<'_>) -> Vec<UnsupportedOp> {
    let mut refused = vec![];
    walk(graph, rewrite, &mut refused);
    refused
}

/// The dims of a graph's initializers, by name.
pub struct Initializers(Vec<(String, Vec<i64>)>);

impl Initializers {
    pub fn dims(&self, name: &str) -> Option<&[i64]> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, d)| d.as_slice())
    }
}

fn walk(graph: &mut GraphProto, rewrite: &mut Rewrite<'_>, refused: &mut Vec<UnsupportedOp>) {
    let initializers = Initializers(
        graph
            .initializer
            .iter()
            .map(|t| (t.name.clone(), t.dims.clone()))
            .collect(),
    );
    for mut node in std::mem::take(&mut graph.node) {
        for attribute in &mut node.attribute {
            for sub in attribute.g.iter_mut().chain(attribute.graphs.iter_mut()) {
                walk(sub, rewrite, refused);
            }
        }
        match rewrite(&node, &initializers) {
            None => graph.node.push(node),
            Some(Ok(nodes)) => graph.node.extend(nodes),
            Some(Err(reason)) => {
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

/// The `i`th input of a node, `None` when absent or left empty (an omitted optional input).
pub fn input(node: &NodeProto, i: usize) -> Option<&str> {
    node.input
        .get(i)
        .map(String::as_str)
        .filter(|s| !s.is_empty())
}

pub fn required<'n>(node: &'n NodeProto, i: usize, what: &str) -> Result<&'n str, String> {
    input(node, i).ok_or_else(|| format!("input {i} ({what}) is required"))
}

pub fn attribute<'n>(node: &'n NodeProto, name: &str) -> Option<&'n AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}

pub fn int_attribute(node: &NodeProto, name: &str, default: i64) -> i64 {
    attribute(node, name).map(|a| a.i).unwrap_or(default)
}

pub fn float_attribute(node: &NodeProto, name: &str, default: f32) -> f32 {
    attribute(node, name).map(|a| a.f).unwrap_or(default)
}

pub fn int(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Int as i32,
        i: value,
        ..Default::default()
    }
}

pub fn float(name: &str, value: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Float as i32,
        f: value,
        ..Default::default()
    }
}

pub fn ints(name: &str, values: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: pb::attribute_proto::AttributeType::Ints as i32,
        ints: values.to_vec(),
        ..Default::default()
    }
}

/// The nodes that replace one node, named after it (`NAME/tessera/…`) so that errors point at
/// the node the model holds.
pub struct NodeBuilder {
    prefix: String,
    pub nodes: Vec<NodeProto>,
}

impl NodeBuilder {
    pub fn new(replaced: &NodeProto) -> NodeBuilder {
        let base = if replaced.name.is_empty() {
            replaced.output.first().cloned().unwrap_or_default()
        } else {
            replaced.name.clone()
        };
        NodeBuilder {
            prefix: format!("{base}/tessera"),
            nodes: vec![],
        }
    }

    /// A value name under the replaced node's, for values the caller wires by hand.
    pub fn value_name(&self, what: &str) -> String {
        format!("{}/{what}", self.prefix)
    }

    /// Adds a node with fresh output names; returns them.
    pub fn add(
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
    pub fn add_to(
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

    /// Adds a node with one fresh output; returns its name.
    pub fn one(&mut self, op: &str, inputs: &[&str], attributes: Vec<AttributeProto>) -> String {
        self.add(op, inputs, attributes, 1).remove(0)
    }

    /// A 1-D int64 `Constant`.
    pub fn constant_i64(&mut self, values: &[i64]) -> String {
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
}
