//! `If` with a condition computed at run time, for GPU plans: both branches run and the
//! condition selects each output (tract's `Iff`, a [`crate::plan::KernelOp::Select`] step).
//!
//! ONNX branches have no side effects, so running both gives the taken branch's outputs; it
//! costs the other branch's work, which a GPU plan (fixed steps, no host round trip to read the
//! condition) accepts. An `If` whose condition is known when the plan is made has already been
//! inlined (`ops/if_known.rs`). Branches whose outputs differ in shape or type, or a condition
//! of more than one element, stay an `If` (a GPU plan then names it).

use super::subgraph::inline_body;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::format_err;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::logic::{IfThenElse, Iff};

/// Rewrites every `If` of `model` with a run-time condition as both branches and a select per
/// output, where it can (see the module's text). A
/// [`crate::model::specialize::BeforeDeclutter`] pass.
pub fn run_both(model: &mut TypedModel, _source: &crate::model::Model) -> TractResult<()> {
    // Branches may hold `If`s of their own: inlined ones are found on the next round.
    loop {
        let branches: Vec<usize> = model
            .nodes()
            .iter()
            .filter(|n| n.op_is::<IfThenElse>())
            .map(|n| n.id)
            .collect();
        let mut changed = false;
        for id in branches {
            if let Some(patch) = both(model, model.node(id))? {
                patch.apply(model)?;
                changed = true;
            }
        }
        if !changed {
            return Ok(());
        }
        // Drops the replaced `If`s, which the next round would find again.
        model.compact()?;
    }
}

/// Copies `body` into `patch`, its input k wired to `outer[mapping[k]]`; its outputs.
fn inline(
    patch: &mut TypedModelPatch,
    body: &TypedModel,
    mapping: &[usize],
    outer: &[OutletId],
    prefix: &str,
) -> TractResult<Vec<OutletId>> {
    let inputs = mapping
        .iter()
        .map(|&m| {
            outer
                .get(m)
                .copied()
                .ok_or_else(|| format_err!("'{prefix}': no outer value {m}"))
        })
        .collect::<TractResult<Vec<_>>>()?;
    inline_body(patch, body, &inputs, prefix)
}

fn both(model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
    let Some(op) = node.op_as::<IfThenElse>() else {
        return Ok(None);
    };
    let Some(&condition) = node.inputs.first() else {
        return Ok(None);
    };
    let fact = model.outlet_fact(condition)?;
    if fact.datum_type != bool::datum_type() || fact.shape.volume() != 1.to_dim() {
        return Ok(None);
    }
    let mut patch = TypedModelPatch::new(format!("both branches of {}", node.name));
    let taps = patch.taps(model, &node.inputs)?;
    let then_outputs = inline(
        &mut patch,
        &op.then_body,
        &op.then_input_mapping,
        &taps,
        &format!("{}.then", node.name),
    )?;
    let else_outputs = inline(
        &mut patch,
        &op.else_body,
        &op.else_input_mapping,
        &taps,
        &format!("{}.else", node.name),
    )?;
    if then_outputs.len() != node.outputs.len() || else_outputs.len() != node.outputs.len() {
        return Ok(None);
    }
    for (slot, (&then, &otherwise)) in then_outputs.iter().zip(&else_outputs).enumerate() {
        let (a, b) = (
            patch.outlet_fact(then)?.clone(),
            patch.outlet_fact(otherwise)?,
        );
        if a.datum_type != b.datum_type || a.shape != b.shape || fact.rank() > a.rank() {
            return Ok(None);
        }
        // The condition's one element broadcasts over the output (unit axes added in front).
        let selected = wire_with_rank_broadcast(
            format!("{}.select{slot}", node.name),
            &mut patch,
            Iff,
            &[taps[0], then, otherwise],
        )?[0];
        if patch.outlet_fact(selected)?.shape != a.shape {
            return Ok(None);
        }
        patch.shunt_outside(model, OutletId::new(node.id, slot), selected)?;
    }
    Ok(Some(patch))
}
