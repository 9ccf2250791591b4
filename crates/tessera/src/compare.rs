//! Running the same inputs on several backends, comparing every output, and — when they part —
//! finding the first step whose output diverges.
//!
//! The search needs a GPU backend's [`Trace`] (every step's output read back as it ran) and
//! the host reference interpreter run over the same plan
//! ([`tessera_core::plan::reference::execute_traced`]): steps are walked in order and the first
//! whose output is out of tolerance is named. Its inputs agreed (every earlier step did), so
//! that step's kernel is where the difference starts.

use crate::check::{OutputCheck, Tolerance, compare};
use crate::{Backend, Result, Session, Tensor};
use std::path::Path;
use tessera_core::plan::{Trace, reference};

/// One backend's run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BackendRun {
    pub backend: String,
    /// The device it ran on (GPU backends).
    pub device: Option<String>,
    /// Why it did not run, when it did not.
    pub error: Option<String>,
    /// Each output against the baseline's (empty for the baseline itself).
    pub outputs: Vec<OutputCheck>,
    /// For a backend that disagrees with the baseline: where it parts from the reference.
    pub divergence: Option<Divergence>,
}

impl BackendRun {
    /// Whether every output is within tolerance of the baseline's.
    pub fn agrees(&self) -> bool {
        self.error.is_none() && self.outputs.iter().all(|o| o.passed)
    }
}

/// Where a GPU backend's run first parts from the host reference of the same plan.
#[derive(Debug, Clone, serde::Serialize)]
pub enum Divergence {
    /// The first step whose output is out of tolerance (its inputs all agreed).
    Step {
        index: usize,
        node: String,
        op: String,
        value: String,
        check: OutputCheck,
    },
    /// Every step agrees with the reference: the difference is between the plan and the
    /// baseline backend (or within tolerance only step by step).
    NoStep { steps: usize },
    /// The search could not run (say why).
    Unavailable(String),
}

/// The comparison of several backends on one input set.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Comparison {
    /// The first backend: the others are compared with it.
    pub baseline: BackendRun,
    pub others: Vec<BackendRun>,
}

impl Comparison {
    /// Whether every backend ran and agrees with the baseline.
    pub fn agrees(&self) -> bool {
        self.baseline.error.is_none() && self.others.iter().all(BackendRun::agrees)
    }
}

fn open(model: &Path, backend: Backend, allow_fallback: bool) -> Result<Session> {
    Session::builder()
        .backend(backend)
        .allow_fallback(allow_fallback)
        .load(model)
}

/// Runs `inputs` on every backend in `backends` (the first is the baseline) and compares.
pub fn compare_backends(
    model: &Path,
    backends: &[Backend],
    inputs: Vec<(String, Tensor)>,
    tol: Tolerance,
) -> Result<Comparison> {
    let mut runs = vec![];
    let mut baseline_outputs: Option<Vec<(String, Tensor)>> = None;
    for (ix, &backend) in backends.iter().enumerate() {
        let mut run = BackendRun {
            backend: backend.to_string(),
            device: None,
            error: None,
            outputs: vec![],
            divergence: None,
        };
        let session = match open(model, backend, false) {
            Ok(s) => s,
            Err(e) => {
                run.error = Some(e.to_string());
                runs.push(run);
                continue;
            }
        };
        run.device = session.device_name();
        let outputs = match session.run(inputs.clone()) {
            Ok(o) => o,
            Err(e) => {
                run.error = Some(e.to_string());
                runs.push(run);
                continue;
            }
        };
        if ix == 0 {
            baseline_outputs = Some(outputs);
        } else if let Some(expected) = &baseline_outputs {
            run.outputs = outputs
                .iter()
                .zip(expected)
                .map(|((name, actual), (_, want))| compare(name, actual, want, tol))
                .collect();
            if !run.agrees() {
                run.divergence = Some(bisect(&session, inputs.clone(), tol));
            }
        }
        runs.push(run);
    }
    let mut runs = runs.into_iter();
    let baseline = runs
        .next()
        .ok_or_else(|| crate::Error::InputMismatch("no backend to compare".into()))?;
    Ok(Comparison {
        baseline,
        others: runs.collect(),
    })
}

/// Walks the steps of `session`'s plan against the host reference of the same plan.
fn bisect(session: &Session, inputs: Vec<(String, Tensor)>, tol: Tolerance) -> Divergence {
    let trace = match session.trace(inputs) {
        Ok(Some(trace)) => trace,
        Ok(None) => {
            return Divergence::Unavailable(format!(
                "the {} backend runs tract's own graph; compare it against a GPU backend's plan instead",
                session.backend()
            ));
        }
        Err(e) => return Divergence::Unavailable(format!("tracing the run failed: {e}")),
    };
    first_divergence(&trace, tol)
}

/// The first step of `trace` whose output is out of tolerance of the reference interpreter.
pub fn first_divergence(trace: &Trace, tol: Tolerance) -> Divergence {
    let reference = match reference::execute_traced(&trace.plan, &trace.inputs) {
        Ok(values) => values,
        Err(e) => {
            return Divergence::Unavailable(format!(
                "the host reference could not run the plan: {e}"
            ));
        }
    };
    let plan = &trace.plan;
    for (index, step) in plan.steps.iter().enumerate() {
        for &id in &step.outputs {
            let (Some(actual), Some(Some(expected))) = (trace.values.get(&id), reference.get(id.0))
            else {
                continue;
            };
            let name = plan.value(id).map(|v| v.name.clone()).unwrap_or_default();
            let check = compare(&name, actual, expected, tol);
            if !check.passed {
                return Divergence::Step {
                    index,
                    node: step.node.clone(),
                    op: step.op.name(),
                    value: name,
                    check,
                };
            }
        }
    }
    Divergence::NoStep {
        steps: plan.steps.len(),
    }
}
