//! Running tract's optimized plan one node at a time, to look at each node: the time it took
//! (`tessera bench --html`) or whether its outputs are finite (`tessera run --check-finite`).
//! Both run the same plan as [`CpuSession::run`], through tract's `run_plan_with_eval` hook
//! (what tract's own command-line profiler uses).

use crate::CpuSession;
use std::collections::HashMap;
use std::time::Duration;
// `std::time::Instant` where it exists; `performance.now()` in browsers and Node.js.
use tessera_core::error::{catch_panic, chain_message};
use tessera_core::plan::StepPlacement;
use tessera_core::tract_bridge::from_tract;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::ops::source::TypedSource;
use tessera_core::{Error, Result, Tensor};
use web_time::Instant;

/// The time one node of the optimized plan took, summed over the profiled runs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NodeTime {
    /// tract's node name (the ONNX node's, or derived from it).
    pub node: String,
    /// tract's op (optimized ops: `OptMatMul`, `Conv`, `OptBinByScalar`...).
    pub op: String,
    pub total: Duration,
    pub runs: u32,
}

/// The first node whose output holds NaN or ±Inf, with its inputs and outputs.
#[derive(Debug, Clone)]
pub struct NonFiniteNode {
    /// Position in tract's evaluation order.
    pub index: usize,
    pub node: String,
    pub op: String,
    /// The tract outlets its inputs come from (node name, `.k` for outputs after the first).
    pub input_names: Vec<String>,
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
}

impl CpuSession {
    /// Where each node of the optimized plan for these inputs runs (all on the cpu), in
    /// evaluation order (constants and model inputs left out).
    pub fn placement(&self, inputs: &[Tensor]) -> Result<Vec<StepPlacement>> {
        let (plan, _) = self.plan_for(inputs)?;
        let model = plan.runnable.model();
        let nodes = (plan.runnable.order_without_consts().iter())
            .map(|&id| model.node(id))
            .filter(|node| !node.op_is::<TypedSource>())
            .map(|node| StepPlacement {
                node: node.name.clone(),
                op: node.op().name().to_string(),
                runs_on: "cpu".into(),
                why: None,
                outputs: (node.outputs.iter())
                    .map(|o| {
                        let dims: Vec<String> =
                            o.fact.shape.iter().map(|d| d.to_string()).collect();
                        let dtype = format!("{:?}", o.fact.datum_type).to_lowercase();
                        format!("{dtype}[{}]", dims.join(", "))
                    })
                    .collect(),
            })
            .collect();
        Ok(nodes)
    }

    /// Runs the plan `runs` times, timing every node. Nodes run one after another, each on the
    /// executor the session's runs use for this plan (its pool once the thread calibration chose
    /// it), so node times add up to the run and show which ops gain from more threads.
    pub fn profile(&self, inputs: Vec<Tensor>, runs: u32) -> Result<Vec<NodeTime>> {
        let (plan, _) = self.plan_for(&inputs)?;
        let executor = self.executor_for(&plan)?;
        let values = self.runtime_inputs(inputs)?;
        let mut times: HashMap<usize, NodeTime> = HashMap::new();
        for _ in 0..runs {
            let mut state = plan.runnable.spawn().map_err(run_error)?;
            catch_panic("profiling the model", || {
                crate::run_on(executor.clone(), || {
                    state
                        .run_plan_with_eval(values.clone(), |ctx, op_state, node, node_inputs| {
                            let start = Instant::now();
                            let out = tessera_core::tract_onnx::tract_core::plan::eval(
                                ctx,
                                op_state,
                                node,
                                node_inputs,
                            );
                            let elapsed = start.elapsed();
                            let entry = times.entry(node.id).or_insert_with(|| NodeTime {
                                node: node.name.clone(),
                                op: node.op().name().to_string(),
                                total: Duration::ZERO,
                                runs: 0,
                            });
                            entry.total += elapsed;
                            entry.runs += 1;
                            out
                        })
                        .map(drop)
                        .map_err(run_error)
                })
            })?;
        }
        let mut times: Vec<NodeTime> = times.into_values().collect();
        times.sort_by_key(|t| std::cmp::Reverse(t.total));
        Ok(times)
    }

    /// Runs the plan node by node and stops at the first node whose output holds NaN or ±Inf
    /// (`None`: every output of every node is finite).
    pub fn first_non_finite(&self, inputs: Vec<Tensor>) -> Result<Option<NonFiniteNode>> {
        let (plan, _) = self.plan_for(&inputs)?;
        let values = self.runtime_inputs(inputs)?;
        let mut state = plan.runnable.spawn().map_err(run_error)?;
        let model = plan.runnable.model();
        let mut found: Option<(usize, &TypedNode, TVec<TValue>, TVec<TValue>)> = None;
        let mut index = 0usize;
        let outcome = catch_panic("running the model node by node", || {
            Ok(
                state.run_plan_with_eval(values, |ctx, op_state, node, node_inputs| {
                    let kept = node_inputs.clone();
                    let outputs = tessera_core::tract_onnx::tract_core::plan::eval(
                        ctx,
                        op_state,
                        node,
                        node_inputs,
                    )?;
                    index += 1;
                    if found.is_none() && outputs.iter().any(|t| !all_finite(t)) {
                        found = Some((index - 1, model.node(node.id), kept, outputs.clone()));
                        // Stop here: the error below ends the run, later nodes never run.
                        return Err(TractError::msg(STOPPED));
                    }
                    Ok(outputs)
                }),
            )
        })?;
        match (outcome, found) {
            (_, Some((index, node, inputs, outputs))) => {
                let convert = |values: &TVec<TValue>| -> Result<Vec<Tensor>> {
                    values.iter().map(|v| from_tract(v)).collect()
                };
                let outlet_name = |o: &OutletId| {
                    let name = &model.node(o.node).name;
                    if o.slot == 0 {
                        name.clone()
                    } else {
                        format!("{name}.{}", o.slot)
                    }
                };
                Ok(Some(NonFiniteNode {
                    index,
                    node: node.name.clone(),
                    op: node.op().name().to_string(),
                    input_names: node.inputs.iter().map(outlet_name).collect(),
                    inputs: convert(&inputs)?,
                    outputs: convert(&outputs)?,
                }))
            }
            (Ok(_), None) => Ok(None),
            (Err(e), None) => Err(run_error(e)),
        }
    }

    /// The inputs tract runs on (inputs folded into the plan left out).
    fn runtime_inputs(&self, inputs: Vec<Tensor>) -> Result<TVec<TValue>> {
        let (_, folding) = self.plan_for(&inputs)?;
        inputs
            .into_iter()
            .zip(&folding)
            .filter(|(_, folded)| !**folded)
            .map(|(t, _)| tessera_core::tract_bridge::into_tract(t).map(TValue::from))
            .collect()
    }
}

const STOPPED: &str = "stopped at the first non-finite output";

fn run_error(e: impl Into<TractError>) -> Error {
    Error::Run {
        backend: "cpu".into(),
        message: chain_message(&e.into()),
    }
}

/// Whether a float tensor holds only finite values (other dtypes always do).
fn all_finite(t: &Tensor_) -> bool {
    // Packed operands of the optimized plan (pre-packed weights) are not plain arrays: they
    // hold no model value to check.
    if !t.datum_type().is_float() || t.as_plain_ram().is_none() {
        return true;
    }
    match t.cast_to::<f64>() {
        Ok(wide) => match wide.to_plain_array_view::<f64>() {
            Ok(view) => view.iter().all(|v| v.is_finite()),
            Err(_) => true,
        },
        Err(_) => true,
    }
}

/// tract's tensor (Tessera's is `Tensor`).
type Tensor_ = tessera_core::tract_onnx::prelude::Tensor;
