//! tract's declutter and codegen passes, run by Tessera's own loop.
//!
//! The loop is tract 0.23.9's `OptimizerSession::optimize`; only the patch application differs.
//! tract's `ModelPatch::apply` compares each node a patch adds with every node of the graph
//! (dead ones included, constants byte by byte) looking for a duplicate, then adds the node
//! whatever it found: every patch pays a scan of the whole graph, and a graph takes patches in
//! proportion to its nodes (ppocr_mobile_cls: a third of its load time). [`apply`] is tract's
//! application without that search, so the graphs come out the same.

use super::concat_products::SplitOnlyDroppedConcats;
use super::constant_arithmetic::FoldConstants;
use super::constant_facts::PropagateUniformTdim;
use anyhow::Context;
use std::collections::{HashMap, HashSet};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::model::{STAGE_OPTIMIZED, SpecialOps, TRACT_STAGE};
use tract_onnx::tract_core::optim::{Optimizer, OptimizerSession, TypedPass};

/// tract's declutter passes (`TypedModel::declutter`), constant f32 arithmetic folded first
/// by a faster loop ([`super::constant_arithmetic`]), constants' facts not rebuilt by
/// `PropagateUniformTdim` ([`super::constant_facts`]); with `keep_axes` (the cpu backend's
/// declutter), without `ChangeAxes` and with products split over a concatenation only where it
/// then goes away ([`super::concat_products`]: inception_v2 5% faster at 1 and 2 threads).
///
/// `ChangeAxes` moves reshapes and transposes through the graph and drops unit axes. It is the
/// costliest declutter pass: after each patch it searches again from an empty record of what it
/// explored, a failed search can walk the whole graph, copying each constant it meets
/// (ppocrv4_det 32 of 75 ms of load, densenet121 86 of 200). The cpu backend's kernels did not
/// need it: on the 20 shared models, one thread, its plans without it ran within ±1.5% of those
/// with it (magika 12% faster, silero_vad_v5 3 µs slower), so the cpu backend keeps the axes.
pub fn declutter(model: &mut TypedModel, keep_axes: bool) -> TractResult<()> {
    let mut optimizer = Optimizer::declutter();
    FoldConstants::wrapping(&mut optimizer);
    PropagateUniformTdim::replacing(&mut optimizer);
    if keep_axes {
        optimizer
            .passes
            .retain(|pass| !format!("{pass:?}").starts_with("ChangeAxes"));
        SplitOnlyDroppedConcats::wrapping(&mut optimizer);
    }
    optimize(&optimizer, model)
}

/// Puts `with(pass)` in place of `optimizer`'s pass whose name starts with `name`; false, and
/// `optimizer` unchanged, without one.
pub fn replace_pass(
    optimizer: &mut Optimizer,
    name: &str,
    with: impl FnOnce(Box<dyn TypedPass>) -> Box<dyn TypedPass>,
) -> bool {
    let Some(at) = optimizer
        .passes
        .iter()
        .position(|pass| format!("{pass:?}").starts_with(name))
    else {
        return false;
    };
    let pass = optimizer.passes.remove(at);
    optimizer.passes.insert(at, with(pass));
    true
}

/// tract's codegen passes (`TypedModel::optimize`): its optimized kernels for each op.
pub fn codegen(model: &mut TypedModel) -> TractResult<()> {
    optimize(&Optimizer::codegen(), model)?;
    model.properties.insert(
        TRACT_STAGE.to_string(),
        rctensor0(STAGE_OPTIMIZED.to_string()),
    );
    Ok(())
}

/// Runs every pass, each until it has nothing left to patch, until a round patches nothing.
fn optimize(optimizer: &Optimizer, model: &mut TypedModel) -> TractResult<()> {
    let _proof_cache = model.symbols.proof_cache_session();
    model.compact()?;
    model.check_names()?;
    // Passes get tract's session too: Scan optimizes its body through it.
    let mut session = optimizer.session();
    let mut run = Run::default();
    loop {
        let patched_before = run.patched;
        for pass in optimizer.passes.clone().iter_mut() {
            loop {
                let patched = run.patched;
                run.pass(pass.as_mut(), &mut session, model)
                    .with_context(|| format!("running pass {pass:?}"))?;
                if run.patched == patched {
                    break;
                }
                model.compact()?;
            }
            model.compact()?;
        }
        if run.patched == patched_before {
            return Ok(());
        }
        model.compact()?;
    }
}

#[derive(Default)]
struct Run {
    patched: usize,
    /// Patches that must not be applied twice (a pass's guard against undoing its own work).
    seen: HashSet<String>,
}

impl Run {
    fn pass(
        &mut self,
        pass: &mut dyn TypedPass,
        session: &mut OptimizerSession,
        model: &mut TypedModel,
    ) -> TractResult<()> {
        pass.reset()?;
        while let Some(mut patch) = pass.next(session, model)? {
            if let Some(watchdog) = patch.dont_apply_twice.take()
                && !self.seen.insert(watchdog)
            {
                continue;
            }
            let context = patch
                .context
                .iter()
                .rev()
                .cloned()
                .collect::<Vec<_>>()
                .join(" >> ");
            apply(patch, model).with_context(|| format!("applying patch {context}"))?;
            self.patched += 1;
        }
        pass.run_direct(model)?;
        Ok(())
    }
}

/// tract's `ModelPatch::apply` without its duplicate search: the patch's nodes are added to
/// `target`, wired to the taps, and the outlets it replaces are shunted to their replacements;
/// nodes left without readers become dummies for the next compaction.
fn apply(patch: TypedModelPatch, target: &mut TypedModel) -> TractResult<()> {
    let TypedModelPatch {
        model: patch,
        taps: mut mapping,
        shunts,
        obliterate,
        inputs: replaced_inputs,
        ..
    } = patch;
    let mut new_inputs: HashMap<usize, TVec<OutletId>> = HashMap::new();
    let mut model_inputs = target.input_outlets()?.to_vec();
    let mut new_nodes = Vec::new();
    for node in patch.nodes {
        let is_source = <TypedModel as SpecialOps<_, _>>::is_source(&node.op);
        if is_source && mapping.contains_key(&OutletId::new(node.id, 0)) {
            continue; // a tap: already mapped to the target's outlet
        }
        let facts = node.outputs.into_iter().map(|output| output.fact).collect();
        let added = target.add_node(node.name, node.op, facts)?;
        new_nodes.push(added);
        for slot in 0..target.node(added).outputs.len() {
            mapping.insert(OutletId::new(node.id, slot), OutletId::new(added, slot));
        }
        new_inputs.insert(added, node.inputs.into_iter().collect());
        if is_source {
            // A new source replaces one of the model's inputs.
            let replaced = replaced_inputs.get(&node.id).copied();
            for input in model_inputs.iter_mut() {
                if Some(input.node) == replaced {
                    input.node = added;
                }
            }
        }
    }
    let mapped = |mapping: &HashMap<OutletId, OutletId>, outlet: &OutletId| {
        mapping
            .get(outlet)
            .copied()
            .with_context(|| format!("patch outlet {outlet:?} is wired to nothing"))
    };
    let mut shunts: Vec<_> = shunts.into_iter().collect();
    shunts.sort();
    for (outlet, by) in &shunts {
        let by = mapped(&mapping, by)?;
        let successors = target
            .nodes
            .get(outlet.node)
            .and_then(|node| node.outputs.get(outlet.slot))
            .with_context(|| format!("a patch replaces {outlet:?}, which the graph lacks"))?
            .successors
            .clone();
        for successor in successors {
            target.add_edge(by, successor)?;
        }
        for output in target.outputs.iter_mut() {
            if output == outlet {
                *output = by;
            }
        }
        if let Some(label) = target.outlet_labels.remove(outlet) {
            target.set_outlet_label(by, label)?;
        }
    }
    let mut new_inputs: Vec<_> = new_inputs.into_iter().collect();
    new_inputs.sort_by_key(|(node, _)| *node);
    for (node, inputs) in &new_inputs {
        for (slot, input) in inputs.iter().enumerate() {
            target.add_edge(mapped(&mapping, input)?, InletId::new(*node, slot))?;
        }
    }
    for node in obliterate {
        target.node_mut(node).op = target.create_dummy();
    }
    target.set_input_outlets(&model_inputs)?;
    let mut maybe_garbage: HashSet<usize> = shunts.iter().map(|(outlet, _)| outlet.node).collect();
    while let Some(&maybe) = maybe_garbage.iter().next() {
        maybe_garbage.remove(&maybe);
        let unread = target
            .node(maybe)
            .outputs
            .iter()
            .all(|o| o.successors.is_empty());
        if unread
            && !target.outputs.iter().any(|output| output.node == maybe)
            && !target.inputs.iter().any(|input| input.node == maybe)
        {
            let dummy = target.create_dummy();
            let node = target.node_mut(maybe);
            node.op = dummy;
            node.name = format!("Dummy-node-{maybe}");
            node.outputs.clear(); // drops the facts, constants included
            let inputs = std::mem::take(&mut node.inputs);
            for input in inputs {
                let output = target
                    .node_mut(input.node)
                    .outputs
                    .get_mut(input.slot)
                    .with_context(|| format!("{input:?} feeds a node but is no output"))?;
                output.successors.retain(|s| s.node != maybe);
                maybe_garbage.insert(input.node);
            }
        }
    }
    for &node in &new_nodes {
        let name = &target.nodes[node].name;
        let unique = if let Some((prefix, _)) = name.split_once('#') {
            Some(target.unique_name(prefix).into_owned())
        } else if target
            .nodes
            .iter()
            .any(|other| other.id != node && other.name == *name)
        {
            Some(target.unique_name(name).into_owned())
        } else {
            None
        };
        if let Some(unique) = unique {
            target.nodes[node].name = unique;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::pb;

    /// Each node's name, op, inputs and output facts: what the graph computes, and how.
    fn structure(model: &TypedModel) -> Vec<String> {
        model
            .nodes
            .iter()
            .map(|n| format!("{} {:?} {:?} {:?}", n.name, n.op, n.inputs, n.outputs))
            .collect()
    }

    fn floats(name: &str, dims: &[i64], seed: f32) -> pb::TensorProto {
        let len = dims.iter().product::<i64>() as usize;
        pb::TensorProto {
            name: name.into(),
            dims: dims.to_vec(),
            data_type: 1,
            float_data: (0..len).map(|i| ((i as f32 + seed) * 0.37).sin()).collect(),
            ..Default::default()
        }
    }

    fn float_value(name: &str) -> pb::ValueInfoProto {
        use pb::type_proto::{Tensor, Value};
        pb::ValueInfoProto {
            name: name.into(),
            r#type: Some(pb::TypeProto {
                value: Some(Value::TensorType(Tensor {
                    elem_type: 1,
                    shape: None,
                })),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Patterns declutter rewrites: a batch normalization and a per-channel scale folded into
    /// the convolution before it, a flattening reshape, a matrix product and a bias, with the
    /// same constant used twice.
    fn typed() -> TypedModel {
        use crate::model::test_models::node;
        let graph = pb::GraphProto {
            name: "g".into(),
            node: vec![
                node("Conv", &["x", "w", "b"], "conv"),
                node(
                    "BatchNormalization",
                    &["conv", "gamma", "beta", "mean", "var"],
                    "bn",
                ),
                node("Mul", &["bn", "scale"], "scaled"),
                node("Relu", &["scaled"], "relu"),
                node("Reshape", &["relu", "flat"], "flat_out"),
                node("MatMul", &["flat_out", "fc"], "fc_out"),
                node("Add", &["fc_out", "fc_bias"], "sum"),
                node("Add", &["sum", "fc_bias"], "y"),
            ],
            initializer: vec![
                floats("w", &[4, 3, 3, 3], 0.0),
                floats("b", &[4], 1.0),
                floats("gamma", &[4], 2.0),
                floats("beta", &[4], 3.0),
                floats("mean", &[4], 4.0),
                pb::TensorProto {
                    float_data: vec![0.5, 1.0, 1.5, 2.0],
                    ..floats("var", &[4], 0.0)
                },
                floats("scale", &[4, 1, 1], 5.0),
                pb::TensorProto {
                    name: "flat".into(),
                    dims: vec![2],
                    data_type: 7,
                    int64_data: vec![1, -1],
                    ..Default::default()
                },
                floats("fc", &[144, 5], 6.0),
                floats("fc_bias", &[5], 7.0),
            ],
            input: vec![float_value("x")],
            output: vec![float_value("y")],
            ..Default::default()
        };
        let model = crate::model::test_models::from_graph(graph);
        let mut graph = model.graph().clone();
        graph
            .set_input_fact(0, f32::fact([1, 3, 8, 8]).into())
            .unwrap();
        graph.into_typed().unwrap()
    }

    #[test]
    fn declutter_matches_tracts_own() {
        let typed = typed();
        let mut ours = typed.clone();
        let mut tracts = typed.clone();
        declutter(&mut ours, false).unwrap();
        tracts.declutter().unwrap();
        assert_eq!(structure(&ours), structure(&tracts));
        assert!(
            ours.nodes.len() < typed.nodes.len(),
            "declutter changed nothing"
        );
    }

    /// Keeping the axes is tract's declutter without its `ChangeAxes` pass, and on this graph
    /// that pass changes something.
    #[test]
    fn keeping_the_axes_is_tracts_declutter_without_change_axes() {
        let typed = typed();
        let mut ours = typed.clone();
        declutter(&mut ours, true).unwrap();
        let mut without = Optimizer::declutter();
        let passes = without.passes.len();
        without
            .passes
            .retain(|pass| !format!("{pass:?}").starts_with("ChangeAxes"));
        assert_eq!(without.passes.len(), passes - 1);
        let mut tracts = typed.clone();
        without.optimize(&mut tracts).unwrap();
        assert_eq!(structure(&ours), structure(&tracts));
        let mut all_passes = typed.clone();
        declutter(&mut all_passes, false).unwrap();
        assert_ne!(structure(&ours), structure(&all_passes));
    }

    #[test]
    fn codegen_matches_tracts_own() {
        let mut ours = typed();
        ours.declutter().unwrap();
        let decluttered = structure(&ours);
        let mut tracts = ours.clone();
        codegen(&mut ours).unwrap();
        tracts.optimize().unwrap();
        assert_eq!(structure(&ours), structure(&tracts));
        assert_ne!(structure(&ours), decluttered, "codegen changed nothing");
        assert_eq!(
            ours.properties.get(TRACT_STAGE),
            tracts.properties.get(TRACT_STAGE)
        );
    }
}
