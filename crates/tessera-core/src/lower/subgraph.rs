//! Copying a nested graph (a loop's body, an `If`'s branch) into the graph around it, for the
//! GPU passes that take control flow apart (`scan.rs`, `branches.rs`).

use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::format_err;
use tract_onnx::tract_core::ops::source::TypedSource;

/// Copies `body` into `patch` with its input k wired to `inputs[k]`, each node named
/// `prefix.name`; the copies of its outputs, in order.
pub(super) fn inline_body(
    patch: &mut TypedModelPatch,
    body: &TypedModel,
    inputs: &[OutletId],
    prefix: &str,
) -> TractResult<Vec<OutletId>> {
    let body_inputs = body.input_outlets()?;
    if body_inputs.len() != inputs.len() {
        return Err(format_err!(
            "'{prefix}': {} body inputs, {} values",
            body_inputs.len(),
            inputs.len()
        ));
    }
    let mut wires: HashMap<OutletId, OutletId> = body_inputs
        .iter()
        .copied()
        .zip(inputs.iter().copied())
        .collect();
    for id in body.eval_order()? {
        let node = body.node(id);
        if node.op_is::<TypedSource>() {
            continue;
        }
        let node_inputs = node
            .inputs
            .iter()
            .map(|o| {
                wires
                    .get(o)
                    .copied()
                    .ok_or_else(|| format_err!("'{prefix}': body wire {o:?}"))
            })
            .collect::<TractResult<TVec<_>>>()?;
        let outputs = patch.wire_node(
            format!("{prefix}.{}", node.name),
            node.op.clone(),
            &node_inputs,
        )?;
        for (slot, &outlet) in outputs.iter().enumerate() {
            wires.insert(OutletId::new(id, slot), outlet);
        }
    }
    body.output_outlets()?
        .iter()
        .map(|o| {
            wires
                .get(o)
                .copied()
                .ok_or_else(|| format_err!("'{prefix}': body output {o:?}"))
        })
        .collect()
}
