//! Loops for GPU plans: tract's `Scan` (ONNX `Scan`, and the loops tract-onnx builds for
//! `LSTM`, `GRU` and `RNN`) unrolled into the graph before tract declutters it.
//!
//! A GPU plan has concrete shapes, so a loop's iteration count is known when the plan is made:
//! each iteration becomes a copy of the body, wired to a slice of each scanned input, the whole
//! of each full input and the previous iteration's state (the first iteration: the initial
//! state given to the loop); scanned outputs are the iterations' values concatenated, last
//! values those of the final iteration. Every run starts from the loop's state inputs, as ONNX
//! defines it. Loops that skip iterations, scan a partial last chunk, scan backwards by more
//! than one element, or would unroll to more than [`MAX_UNROLLED_NODES`] body nodes stay
//! loops (a GPU plan then names them).

use super::subgraph::inline_body;
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::{DimLike, format_err};
use tract_onnx::tract_core::ops::array::{Slice, TypedConcat};
use tract_onnx::tract_core::ops::scan::{InputMapping, Scan};

/// At most this many body nodes in all the iterations of one loop.
pub const MAX_UNROLLED_NODES: usize = 50_000;

/// Unrolls every loop of `model` that it can (see the module's text). A
/// [`crate::model::specialize::BeforeDeclutter`] pass.
pub fn unroll_loops(model: &mut TypedModel, _source: &crate::model::Model) -> TractResult<()> {
    let loops: Vec<usize> = model
        .nodes()
        .iter()
        .filter(|n| n.op_is::<Scan>())
        .map(|n| n.id)
        .collect();
    let mut changed = false;
    for id in loops {
        if let Some(patch) = unrolled(model, model.node(id))? {
            patch.apply(model)?;
            changed = true;
        }
    }
    // Only a graph that changed is compacted: most have no loop, and this runs per plan.
    if changed {
        model.compact()?;
    }
    Ok(())
}

/// The iteration count of a loop whose scanned inputs all split into whole chunks, or `None`.
fn iterations(op: &Scan, facts: &[&TypedFact]) -> Option<usize> {
    let mut count = None;
    for (slot, mapping) in op.input_mapping.iter().enumerate() {
        let InputMapping::Scan(info) = mapping else {
            continue;
        };
        let len = facts.get(slot)?.shape.get(info.axis)?.to_usize().ok()?;
        let chunk = info.chunk.unsigned_abs();
        if chunk == 0 || len % chunk != 0 || count.is_some_and(|c| c != len / chunk) {
            return None;
        }
        count = Some(len / chunk);
    }
    count.filter(|&c| c > 0)
}

fn unrolled(model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
    let Some(op) = node.op_as::<Scan>() else {
        return Ok(None);
    };
    let facts = model.node_input_facts(node.id)?;
    let Some(iters) = iterations(op, &facts) else {
        return Ok(None);
    };
    let body = &op.body;
    let body_nodes = body.nodes().len();
    if op.skip != 0 || iters.saturating_mul(body_nodes) > MAX_UNROLLED_NODES {
        return Ok(None);
    }
    // Backward scanned outputs are written one element per iteration, from the end.
    for mapping in &op.output_mapping {
        if let Some((_, info)) = mapping.scan
            && info.chunk < 0
            && info.chunk != -1
        {
            return Ok(None);
        }
    }
    let mut patch = TypedModelPatch::new(format!("unroll loop {}", node.name));
    let taps = patch.taps(model, &node.inputs)?;
    let mut states: Vec<OutletId> = op
        .input_mapping
        .iter()
        .zip(&taps)
        .filter(|(m, _)| m.is_state())
        .map(|(_, &t)| t)
        .collect();
    let mut scanned: HashMap<usize, Vec<OutletId>> = HashMap::new();
    let mut last_values: HashMap<usize, OutletId> = HashMap::new();
    for i in 0..iters {
        let mut next_state = states.iter();
        let mut iteration_inputs = vec![];
        for (slot, mapping) in op.input_mapping.iter().enumerate() {
            let outer = *taps
                .get(slot)
                .ok_or_else(|| format_err!("loop '{}': no input {slot}", node.name))?;
            iteration_inputs.push(match mapping {
                InputMapping::Full => outer,
                InputMapping::State => *next_state
                    .next()
                    .ok_or_else(|| format_err!("loop '{}': a state without a value", node.name))?,
                InputMapping::Scan(info) => {
                    let len = facts
                        .get(slot)
                        .and_then(|f| f.shape.get(info.axis))
                        .ok_or_else(|| format_err!("loop '{}': no scanned axis", node.name))?
                        .to_usize()?;
                    let chunk = info.chunk.unsigned_abs();
                    // Backward, iteration i reads the i-th chunk from the end, in order.
                    let start = if info.chunk > 0 {
                        i * chunk
                    } else {
                        len - (i + 1) * chunk
                    };
                    patch.wire_node(
                        format!("{}.{i}.scan{slot}", node.name),
                        Slice::new(info.axis, start, start + chunk),
                        &[outer],
                    )?[0]
                }
            });
        }
        let outputs = inline_body(
            &mut patch,
            body,
            &iteration_inputs,
            &format!("{}.{i}", node.name),
        )?;
        let mut new_states = vec![];
        for (ix, mapping) in op.output_mapping.iter().enumerate() {
            let value = *outputs
                .get(ix)
                .ok_or_else(|| format_err!("loop '{}': body output {ix}", node.name))?;
            if let Some((slot, _)) = mapping.scan {
                scanned.entry(slot).or_default().push(value);
            }
            if let Some(slot) = mapping.last_value_slot
                && i + 1 == iters
            {
                last_values.insert(slot, value);
            }
            if mapping.state {
                new_states.push(value);
            }
        }
        states = new_states;
    }
    for mapping in &op.output_mapping {
        if let Some((slot, info)) = mapping.scan {
            let mut parts = scanned.remove(&slot).unwrap_or_default();
            if info.chunk < 0 {
                parts.reverse();
            }
            let joined = patch.wire_node(
                format!("{}.scan_output{slot}", node.name),
                TypedConcat::new(info.axis),
                &parts,
            )?[0];
            let expected = model.outlet_fact(OutletId::new(node.id, slot))?;
            if patch.outlet_fact(joined)?.shape != expected.shape {
                return Ok(None);
            }
            patch.shunt_outside(model, OutletId::new(node.id, slot), joined)?;
        }
    }
    for (slot, value) in last_values {
        patch.shunt_outside(model, OutletId::new(node.id, slot), value)?;
    }
    Ok(Some(patch))
}
