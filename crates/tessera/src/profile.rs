//! Where a run's time goes, node by node and per op type (`tessera bench --html`, and
//! `session.profile()` in browsers).
//!
//! cpu: tract's optimized plan timed node by node (`run_plan_with_eval`, like tract's own
//! profiler). wgpu (natively): each plan step submitted and waited for on its own (wall clock:
//! includes one submission's overhead per step, so the sum is larger than a batched run).

use crate::{Error, Result, Session, Tensor};
use std::collections::BTreeMap;

/// Time spent in one op type, per run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OpTime {
    pub op: String,
    pub ms_per_run: f64,
    /// How many nodes (steps) of this op type.
    pub nodes: usize,
}

/// One node's time per run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NodeTime {
    pub node: String,
    pub op: String,
    pub ms_per_run: f64,
}

/// Where a run's time goes.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Profile {
    /// How it was measured.
    pub method: String,
    pub runs: u32,
    /// Slowest op type first.
    pub per_op: Vec<OpTime>,
    /// Slowest node first.
    pub per_node: Vec<NodeTime>,
}

impl Profile {
    /// The sum of every node's time, per run.
    pub fn total_ms(&self) -> f64 {
        self.per_op.iter().map(|o| o.ms_per_run).sum()
    }

    fn from_nodes(method: String, runs: u32, nodes: Vec<NodeTime>) -> Profile {
        let mut per_op: BTreeMap<String, OpTime> = BTreeMap::new();
        for n in &nodes {
            let entry = per_op.entry(n.op.clone()).or_insert_with(|| OpTime {
                op: n.op.clone(),
                ms_per_run: 0.0,
                nodes: 0,
            });
            entry.ms_per_run += n.ms_per_run;
            entry.nodes += 1;
        }
        let mut per_op: Vec<OpTime> = per_op.into_values().collect();
        per_op.sort_by(|a, b| b.ms_per_run.total_cmp(&a.ms_per_run));
        let mut per_node = nodes;
        per_node.sort_by(|a, b| b.ms_per_run.total_cmp(&a.ms_per_run));
        Profile {
            method,
            runs,
            per_op,
            per_node,
        }
    }
}

/// Profiles `runs` runs of `session` on `inputs`.
pub fn profile(session: &Session, inputs: Vec<(String, Tensor)>, runs: u32) -> Result<Profile> {
    let runs = runs.max(1);
    let ordered = tessera_core::model::inputs::order_inputs(session.info(), inputs)?;
    let per_run = |d: std::time::Duration| d.as_secs_f64() * 1e3 / runs as f64;
    #[cfg(all(feature = "wgpu", not(target_arch = "wasm32")))]
    if let Some(wgpu) = session.wgpu() {
        let (plan, times) = wgpu.profile(&ordered, runs)?;
        let nodes = plan
            .steps
            .iter()
            .zip(times)
            .map(|(step, t)| NodeTime {
                node: step.node.clone(),
                op: step.op.name(),
                ms_per_run: per_run(t),
            })
            .collect();
        return Ok(Profile::from_nodes(
            format!(
                "wgpu: each of the plan's steps submitted and waited for on its own (wall clock, \
                 includes a submission's overhead per step; no timestamp queries), {runs} run(s)"
            ),
            runs,
            nodes,
        ));
    }
    #[cfg(feature = "cpu")]
    if let Some(cpu) = session.cpu() {
        let nodes = cpu
            .profile(ordered, runs)?
            .into_iter()
            .map(|n| NodeTime {
                node: n.node,
                op: n.op,
                ms_per_run: per_run(n.total),
            })
            .collect();
        return Ok(Profile::from_nodes(
            format!("cpu: tract's optimized plan timed node by node on one thread, {runs} run(s)"),
            runs,
            nodes,
        ));
    }
    #[allow(unreachable_code)]
    {
        drop(ordered);
        let why = if cfg!(target_arch = "wasm32") {
            "profiles run on the cpu backend in browsers (WebGPU steps cannot be waited for one \
             by one there)"
        } else {
            "no profiler for this backend"
        };
        Err(Error::Run {
            backend: session.backend().to_string(),
            message: why.into(),
        })
    }
}
