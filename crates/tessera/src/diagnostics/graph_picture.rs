//! The placement picture (`tessera inspect MODEL --backend B --graph out.svg|out.html`): the
//! plan's steps as boxes coloured by where they run, host↔device copies as red dashed edges
//! labelled with their bytes, unsupported steps outlined in red, and a legend.
//!
//! This file holds what the picture shows; `picture_drawing.rs` draws it (with `layout-rs`, in
//! builds with the `pictures` feature). Linear chains of steps on one device (each step the only reader of the one before) are drawn as one box, so
//! a 900-step network stays a picture rather than a wall. Every box carries `data-steps`
//! (how many plan steps it stands for); the HTML page shows the step count in
//! `#step-count`, so a test can check the picture against the model.

use std::collections::HashMap;
use tessera_core::plan::{Placement, Plan, Role};

/// Where one step runs, as the picture colours it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StepPlace {
    /// On the backend's device (or on the cpu for the cpu backend).
    Backend,
    /// On the host because the GPU backend lacks it (`--allow-fallback`).
    HostFallback,
    /// The backend lacks it and fallback is off: the reason the model is refused.
    Unsupported,
}

/// What the picture shows: a plan, where each step runs, and the copies.
#[derive(Debug, Clone)]
pub struct PlacementPicture {
    pub model: String,
    /// `cpu`, `wgpu`...
    pub backend: String,
    /// The device (adapter, or cpu model) that runs it.
    pub device: String,
    /// Nodes of the ONNX graph (subgraphs included).
    pub onnx_nodes: usize,
    pub plan: std::sync::Arc<Plan>,
    /// One per step.
    pub places: Vec<StepPlace>,
    /// Per step: why it is on the host (fallback or unsupported).
    pub reasons: Vec<Option<String>>,
    /// Copies between host and device (none on cpu).
    pub placement: Option<Placement>,
    /// ONNX op type of each tract node name, where known.
    pub onnx_ops: HashMap<String, String>,
}

/// One box: a chain of steps on one device.
pub(super) struct Group {
    pub(super) steps: Vec<usize>,
    pub(super) place: StepPlace,
}

/// More chains than this are drawn as segments of consecutive steps instead.
const MAX_BOXES: usize = 60;

impl PlacementPicture {
    /// How many boxes the picture draws for the plan's steps.
    pub fn boxes(&self) -> usize {
        self.groups().0.len()
    }

    /// Chains of steps on one place, each step the only consumer of the previous one's output
    /// and reading nothing else computed. Returns the groups and each step's group.
    pub(super) fn groups(&self) -> (Vec<Group>, Vec<usize>) {
        let plan = &self.plan;
        let producer = self.producers();
        let mut consumers: Vec<usize> = vec![0; plan.steps.len()];
        for step in &plan.steps {
            let mut seen = vec![];
            for &input in &step.inputs {
                if let Some(&p) = producer.get(&root(plan, input))
                    && !seen.contains(&p)
                {
                    seen.push(p);
                    consumers[p] += 1;
                }
            }
        }
        let is_output: Vec<bool> = plan
            .steps
            .iter()
            .map(|s| {
                s.outputs
                    .iter()
                    .any(|&o| matches!(plan.value(o).map(|v| v.role), Ok(Role::Output(_))))
            })
            .collect();
        let mut groups: Vec<Group> = vec![];
        let mut group_of = vec![0usize; plan.steps.len()];
        for (ix, step) in plan.steps.iter().enumerate() {
            let computed: Vec<usize> = step
                .inputs
                .iter()
                .filter_map(|&i| producer.get(&root(plan, i)).copied())
                .collect();
            let place = self.places[ix];
            let joins = match computed.as_slice() {
                [p] => {
                    let g = group_of[*p];
                    consumers[*p] == 1
                        && !is_output[*p]
                        && groups[g].place == place
                        && groups[g].steps.last() == Some(p)
                        && place != StepPlace::Unsupported
                        && !self.copied_before(ix)
                }
                _ => false,
            };
            if joins {
                let g = group_of[computed[0]];
                groups[g].steps.push(ix);
                group_of[ix] = g;
            } else {
                group_of[ix] = groups.len();
                groups.push(Group {
                    steps: vec![ix],
                    place,
                });
            }
        }
        if groups.len() <= MAX_BOXES {
            return (groups, group_of);
        }
        // Still too many boxes for layout-rs (minutes past ~100): runs of consecutive steps in
        // execution order on one place, each box a segment; a change of place always starts
        // a new box, so every host/device boundary stays visible.
        let target = plan.steps.len().div_ceil(MAX_BOXES / 2).max(1);
        let mut groups: Vec<Group> = vec![];
        for (ix, &place) in self.places.iter().enumerate() {
            let extend = groups.last().is_some_and(|g| {
                g.place == place
                    && g.steps.len() < target
                    && place != StepPlace::Unsupported
                    && !self.copied_before(ix)
            });
            if extend {
                if let Some(g) = groups.last_mut() {
                    g.steps.push(ix);
                }
            } else {
                groups.push(Group {
                    steps: vec![ix],
                    place,
                });
            }
            group_of[ix] = groups.len() - 1;
        }
        (groups, group_of)
    }

    /// The step that produces each buffer owner.
    pub(super) fn producers(&self) -> HashMap<usize, usize> {
        let mut producer = HashMap::new();
        for (ix, step) in self.plan.steps.iter().enumerate() {
            for &out in &step.outputs {
                producer.insert(root(&self.plan, out), ix);
            }
        }
        producer
    }

    pub(super) fn copied_before(&self, step: usize) -> bool {
        self.placement.as_ref().is_some_and(|p| {
            p.fallback_transfers
                .iter()
                .chain(&p.io_transfers)
                .any(|t| t.before_step == step)
        })
    }
}

/// The buffer owner of a value, as an index.
pub(super) fn root(plan: &Plan, id: tessera_core::plan::ValueId) -> usize {
    plan.root(id).map(|r| r.0).unwrap_or(id.0)
}

/// The ONNX op type of a tract node: its own name, or the ONNX node it was derived from
/// (`relu.low` comes from `relu`).
pub fn onnx_op<'a>(ops: &'a HashMap<String, String>, node: &str) -> Option<&'a String> {
    let mut name = node;
    loop {
        if let Some(op) = ops.get(name) {
            return Some(op);
        }
        name = &name[..name.rfind('.')?];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_nodes_find_their_onnx_op() {
        let ops: HashMap<String, String> = [("relu".to_string(), "Relu".to_string())].into();
        assert_eq!(onnx_op(&ops, "relu.low").map(String::as_str), Some("Relu"));
        assert_eq!(onnx_op(&ops, "relu").map(String::as_str), Some("Relu"));
        assert_eq!(onnx_op(&ops, "other.low"), None);
    }
}
