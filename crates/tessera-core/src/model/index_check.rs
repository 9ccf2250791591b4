//! Index checks in front of tract's indexing ops.
//!
//! tract 0.23.9 indexes arrays with the values of `Gather`, `GatherElements`,
//! `ScatterElements`, `OneHot`, `GatherND` and (with a reduction) `ScatterND` indices without a
//! range check: an index outside its
//! axis panics (natively caught, but a trap of the whole module in the browser build, where
//! panics abort). ONNX makes such indices an error (OneHot: a row of `off`, which tract does not
//! do either), so Tessera checks them first and fails with an error naming the node:
//!
//! - constant indices (known once the graph is decluttered) are checked while lowering;
//! - the others get an [`IndexCheck`] node in front of the op: an identity on the indices that
//!   fails when one is out of range. GPU plans lower it to a view; their sessions check the
//!   indices that come from the host before uploading them ([`crate::plan::Plan::check_host_indices`]).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::array::{
    Gather, GatherElements, GatherNd, OneHot, ScatterElements, ScatterNd,
};

/// What an index addresses.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub enum IndexRange {
    /// Axis `axis` of the data (the check node's second input); negative indices count from the end.
    DataAxis(usize),
    /// `0..depth`, negative indices counting from the end (OneHot).
    Depth(usize),
    /// GatherND / ScatterND: the last axis of the indices addresses data axes `batch_dims..`; no
    /// negatives (tract does not wrap them).
    Nd { batch_dims: usize },
}

/// An identity on an index tensor that fails, naming the node, when an index is out of range.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct IndexCheck {
    /// The node whose indices these are, and its op (for the message).
    pub node: String,
    pub op: String,
    pub range: IndexRange,
}

impl IndexCheck {
    /// Checks `indices` against the data shape (when the range needs it).
    pub fn check(&self, indices: &Tensor, data_shape: Option<&[usize]>) -> TractResult<()> {
        let values = indices.cast_to::<i64>()?;
        let values = values.try_as_plain_ram()?;
        let values = values.as_slice::<i64>()?;
        let shape_of = |axis: usize| -> TractResult<usize> {
            data_shape
                .and_then(|s| s.get(axis).copied())
                .ok_or_else(|| format_err!("'{}' ({}): no data axis {axis}", self.node, self.op))
        };
        match &self.range {
            IndexRange::DataAxis(axis) => {
                check_all(values, shape_of(*axis)? as i64, true, &self.node, &self.op)
            }
            IndexRange::Depth(depth) => {
                check_all(values, *depth as i64, true, &self.node, &self.op)
            }
            IndexRange::Nd { batch_dims } => {
                let n = indices.shape().last().copied().unwrap_or(0);
                for j in 0..n {
                    let len = shape_of(batch_dims + j)? as i64;
                    let column: Vec<i64> = values.iter().skip(j).step_by(n).copied().collect();
                    check_all(&column, len, false, &self.node, &self.op)?;
                }
                Ok(())
            }
        }
    }
}

fn check_all(values: &[i64], len: i64, negative: bool, node: &str, op: &str) -> TractResult<()> {
    let low = if negative { -len } else { 0 };
    if let Some(bad) = values.iter().find(|&&v| v < low || v >= len) {
        bail!(
            "node '{node}' ({op}): index {bad} is out of range for an axis of {len} (valid: {low}..{len})"
        );
    }
    Ok(())
}

impl Op for IndexCheck {
    fn name(&self) -> StaticName {
        "IndexCheck".into()
    }

    op_as_typed_op!();
}

impl EvalOp for IndexCheck {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, mut inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let data_shape = inputs.get(1).map(|d| d.shape().to_vec());
        self.check(&inputs[0], data_shape.as_deref())?;
        inputs.truncate(1);
        Ok(inputs)
    }
}

impl TypedOp for IndexCheck {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(inputs[0].without_value()))
    }

    as_op!();
}

/// The index input of an indexing node, and the range its values must be in.
fn indexing(node: &TypedNode) -> Option<(usize, IndexRange)> {
    if let Some(op) = node.op_as::<Gather>() {
        Some((1, IndexRange::DataAxis(op.axis)))
    } else if let Some(op) = node.op_as::<GatherElements>() {
        Some((1, IndexRange::DataAxis(op.axis)))
    } else if let Some(op) = node.op_as::<ScatterElements>() {
        Some((1, IndexRange::DataAxis(op.axis)))
    } else if let Some(op) = node.op_as::<OneHot>() {
        Some((0, IndexRange::Depth(op.dim)))
    } else if node.op_as::<ScatterNd>().is_some() {
        Some((1, IndexRange::Nd { batch_dims: 0 }))
    } else {
        node.op_as::<GatherNd>().map(|op| {
            (
                1,
                IndexRange::Nd {
                    batch_dims: op.batch_dims,
                },
            )
        })
    }
}

/// Checks the constant indices of every indexing node now, and puts an [`IndexCheck`] in front
/// of the others.
pub fn guard_indices(model: &mut TypedModel) -> TractResult<()> {
    let targets: Vec<(usize, usize, IndexRange)> = model
        .nodes()
        .iter()
        .filter_map(|n| indexing(n).map(|(slot, range)| (n.id, slot, range)))
        .collect();
    for (id, slot, range) in targets {
        let node = model.node(id).clone();
        let Some(&indices) = node.inputs.get(slot) else {
            continue;
        };
        let check = IndexCheck {
            node: node.name.clone(),
            op: node.op.name().to_string(),
            range: range.clone(),
        };
        let data = (slot == 1).then(|| node.inputs[0]);
        let data_shape = match data {
            Some(outlet) => model
                .outlet_fact(outlet)?
                .shape
                .as_concrete()
                .map(<[usize]>::to_vec),
            None => Some(vec![]),
        };
        let fact = model.outlet_fact(indices)?;
        if let (Some(konst), Some(shape)) = (fact.konst.clone(), &data_shape) {
            check.check(&konst, Some(shape))?;
            continue;
        }
        let mut patch = TypedModelPatch::default();
        let mut inputs = patch.taps(model, &node.inputs)?;
        let mut wires = vec![inputs[slot]];
        if matches!(range, IndexRange::DataAxis(_) | IndexRange::Nd { .. }) {
            wires.push(inputs[0]);
        }
        inputs[slot] = patch.wire_node(format!("{}.index_check", node.name), check, &wires)?[0];
        let outputs = patch.wire_node(&node.name, node.op.clone(), &inputs)?;
        for (k, output) in outputs.into_iter().enumerate() {
            patch.shunt_outside(model, OutletId::new(id, k), output)?;
        }
        patch.apply(model)?;
    }
    Ok(())
}
