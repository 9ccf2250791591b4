//! `tessera run --check-finite`: run node by node and stop at the first node whose output
//! holds NaN or ±Inf, naming it with its op type and its inputs' value ranges.
//!
//! cpu: tract's optimized plan, the one `run` uses, evaluated one node at a time
//! ([`tessera_cpu::CpuSession::first_non_finite`]). GPU backends: the plan run with every
//! step's output read back as it ran ([`Session::trace`]), walked in step order. Either way the
//! check costs time (every output is scanned, and on a GPU read back), so it is off by default.

use super::graph_picture::onnx_op;
use crate::{Result, Session, Tensor};
use std::collections::HashMap;
use std::fmt;
use tessera_core::TensorData;
use tessera_core::plan::Trace;

/// What one tensor holds: its finite range and how many values are not finite.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ValueRange {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
    /// Smallest and largest finite value (`None` when there is none, or for non-numbers).
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub nan: usize,
    pub pos_inf: usize,
    pub neg_inf: usize,
}

impl ValueRange {
    /// The range of a tensor's values.
    pub fn of(name: &str, tensor: &Tensor) -> ValueRange {
        let (mut nan, mut pos_inf, mut neg_inf) = (0, 0, 0);
        let (mut min, mut max): (Option<f64>, Option<f64>) = (None, None);
        let mut see = |v: f64| {
            if v.is_nan() {
                nan += 1;
            } else if v == f64::INFINITY {
                pos_inf += 1;
            } else if v == f64::NEG_INFINITY {
                neg_inf += 1;
            } else {
                min = Some(min.map_or(v, |m| m.min(v)));
                max = Some(max.map_or(v, |m| m.max(v)));
            }
        };
        match tensor.data() {
            TensorData::F32(v) => v.iter().for_each(|&x| see(x.into())),
            TensorData::F16(v) => v.iter().for_each(|&x| see(x.to_f64())),
            TensorData::Bool(_) => {}
            other => other.to_f64_vec().into_iter().for_each(&mut see),
        }
        ValueRange {
            name: name.to_string(),
            dtype: tensor.dtype().to_string(),
            shape: tensor.shape().to_vec(),
            min,
            max,
            nan,
            pos_inf,
            neg_inf,
        }
    }

    /// Whether every value is finite.
    pub fn is_finite(&self) -> bool {
        self.nan + self.pos_inf + self.neg_inf == 0
    }
}

impl fmt::Display for ValueRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}' {}{:?}: ", self.name, self.dtype, self.shape)?;
        match (self.min, self.max) {
            (Some(lo), Some(hi)) => write!(f, "finite values in [{lo:e}, {hi:e}]")?,
            _ => write!(f, "no finite value")?,
        }
        let bad: Vec<String> = [
            (self.nan, "NaN"),
            (self.pos_inf, "+Inf"),
            (self.neg_inf, "-Inf"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if !bad.is_empty() {
            write!(f, ", {}", bad.join(", "))?;
        }
        Ok(())
    }
}

/// The first node whose output is not finite.
#[derive(Debug, Clone, serde::Serialize)]
pub struct NonFinite {
    pub backend: String,
    /// Its position in the order the backend ran the nodes (plan steps on a GPU backend).
    pub index: usize,
    /// The node's name (tract's: the ONNX node's, or derived from it like `relu.low`).
    pub node: String,
    /// The ONNX op type of the node it comes from, when the model file says.
    pub onnx_op: Option<String>,
    /// What the backend ran: tract's op on cpu, the plan's kernel on a GPU backend.
    pub op: String,
    pub inputs: Vec<ValueRange>,
    pub outputs: Vec<ValueRange>,
}

impl fmt::Display for NonFinite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "first non-finite output on {}: node '{}' (op {}{}, #{} in run order)",
            self.backend,
            self.node,
            self.onnx_op.as_deref().unwrap_or(&self.op),
            if self.onnx_op.is_some() {
                format!("; {} ran it as {}", self.backend, self.op)
            } else {
                String::new()
            },
            self.index
        )?;
        for input in &self.inputs {
            writeln!(f, "  input  {input}")?;
        }
        for output in &self.outputs {
            writeln!(f, "  output {output}")?;
        }
        Ok(())
    }
}

/// The outcome of a checked run.
#[derive(Debug, Clone, serde::Serialize)]
pub enum FiniteCheck {
    /// Every output of every node is finite.
    AllFinite,
    /// A runtime input already holds NaN or Inf.
    Input(ValueRange),
    NonFinite(NonFinite),
}

/// Runs `inputs` on `session` node by node and stops at the first non-finite output.
pub fn check_finite(session: &Session, inputs: Vec<(String, Tensor)>) -> Result<FiniteCheck> {
    for (name, tensor) in &inputs {
        let range = ValueRange::of(name, tensor);
        if !range.is_finite() {
            return Ok(FiniteCheck::Input(range));
        }
    }
    let onnx_ops = session
        .model()
        .source()
        .map(super::onnx_op_types)
        .unwrap_or_default();
    let backend = session.backend().to_string();
    let found = match session.trace(inputs.clone())? {
        Some(trace) => first_in_trace(&trace, &backend)?,
        None => cpu_first_non_finite(session, inputs, &backend)?,
    };
    Ok(match found {
        Some(mut found) => {
            found.onnx_op = onnx_op(&onnx_ops, &found.node).cloned();
            FiniteCheck::NonFinite(found)
        }
        None => FiniteCheck::AllFinite,
    })
}

#[cfg(not(feature = "cpu"))]
fn cpu_first_non_finite(
    session: &Session,
    _: Vec<(String, Tensor)>,
    _: &str,
) -> Result<Option<NonFinite>> {
    Err(crate::Error::Internal(format!(
        "--check-finite has no way to look inside the {} backend",
        session.backend()
    )))
}

/// tract's optimized plan, node by node.
#[cfg(feature = "cpu")]
fn cpu_first_non_finite(
    session: &Session,
    inputs: Vec<(String, Tensor)>,
    backend: &str,
) -> Result<Option<NonFinite>> {
    Ok(match session.cpu() {
        Some(cpu) => {
            let ordered = tessera_core::model::inputs::order_inputs(session.info(), inputs)?;
            cpu.first_non_finite(ordered)?.map(|node| {
                let inputs = node
                    .inputs
                    .iter()
                    .zip(&node.input_names)
                    .map(|(t, name)| ValueRange::of(name, t))
                    .collect();
                let outputs = node
                    .outputs
                    .iter()
                    .enumerate()
                    .map(|(k, t)| {
                        let name = if k == 0 {
                            node.node.clone()
                        } else {
                            format!("{}.{k}", node.node)
                        };
                        ValueRange::of(&name, t)
                    })
                    .collect();
                NonFinite {
                    backend: backend.to_string(),
                    index: node.index,
                    onnx_op: None,
                    op: node.op,
                    inputs,
                    outputs,
                    node: node.node,
                }
            })
        }
        None => {
            return Err(crate::Error::Internal(format!(
                "--check-finite has no way to look inside the {} backend",
                session.backend()
            )));
        }
    })
}

/// The first step of a traced GPU run with a non-finite output.
fn first_in_trace(trace: &Trace, backend: &str) -> Result<Option<NonFinite>> {
    let plan = &trace.plan;
    let runtime: HashMap<usize, &Tensor> = plan
        .inputs
        .iter()
        .zip(&trace.inputs)
        .map(|(id, t)| (id.0, t))
        .collect();
    for (index, step) in plan.steps.iter().enumerate() {
        let mut outputs = vec![];
        for &id in &step.outputs {
            if let Some(tensor) = trace.values.get(&id) {
                let name = plan.value(id).map(|v| v.name.clone()).unwrap_or_default();
                outputs.push(ValueRange::of(&name, tensor));
            }
        }
        if outputs.iter().all(ValueRange::is_finite) {
            continue;
        }
        let mut inputs = vec![];
        for &id in &step.inputs {
            let name = plan.value(id).map(|v| v.name.clone()).unwrap_or_default();
            let root = plan.root(id)?;
            let constant;
            let tensor = if let Some(t) = trace.values.get(&root) {
                Some(t)
            } else if let Some(t) = runtime.get(&root.0) {
                Some(*t)
            } else if let Some(c) = plan.constants.iter().find(|c| c.value == root) {
                constant = c.data.to_tensor()?;
                Some(&constant)
            } else {
                None
            };
            if let Some(tensor) = tensor {
                inputs.push(ValueRange::of(&name, tensor));
            }
        }
        return Ok(Some(NonFinite {
            backend: backend.to_string(),
            index,
            node: step.node.clone(),
            onnx_op: None,
            op: step.op.name(),
            inputs,
            outputs,
        }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_count_what_is_not_finite() {
        let t =
            Tensor::from_vec(vec![5], vec![1.0f32, -3.0, f32::NAN, f32::INFINITY, 2.0]).unwrap();
        let r = ValueRange::of("x", &t);
        assert_eq!((r.min, r.max), (Some(-3.0), Some(2.0)));
        assert_eq!((r.nan, r.pos_inf, r.neg_inf), (1, 1, 0));
        assert!(!r.is_finite());
        assert!(r.to_string().contains("1 NaN, 1 +Inf"), "{r}");
    }
}
