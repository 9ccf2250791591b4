//! Running one plan step on the host: what a GPU backend does with the steps it places on the
//! host when fallback is allowed.
//!
//! Lowered steps run in the reference interpreter ([`super::reference`]); steps that were not
//! lowered ([`KernelOp::Opaque`]) run tract's own op, evaluated alone on its inputs.

use super::{KernelOp, Plan};
use crate::error::{catch_panic, chain_message};
use crate::tract_bridge::{from_tract, to_tract};
use crate::{Error, Result, Tensor};
use tract_onnx::prelude::*;

/// Runs step `index` of `plan` on `inputs` (shaped as the plan's values); `typed` is the model
/// the plan was built from (opaque steps run its node).
pub fn run_step(
    plan: &Plan,
    typed: &TypedModel,
    index: usize,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>> {
    let step = plan
        .steps
        .get(index)
        .ok_or_else(|| Error::Internal(format!("the plan has no step {index}")))?;
    let KernelOp::Opaque { tract_op } = &step.op else {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        return super::reference::execute_step(plan, index, &refs);
    };
    let fail = |message: String| Error::Run {
        backend: "host".into(),
        message: format!("step '{}' ({tract_op}): {message}", step.node),
    };
    let node = typed
        .node_by_name(&step.node)
        .map_err(|e| fail(chain_message(&e)))?;
    let values: TVec<TValue> = inputs
        .iter()
        .map(|t| to_tract(t).map(TValue::from))
        .collect::<Result<_>>()?;
    let outputs = catch_panic("running a host step", || {
        node.op
            .eval_out_of_plan(values)
            .map_err(|e| fail(chain_message(&e)))?
            .ok_or_else(|| fail("the op keeps state between runs and cannot run alone".into()))
    })?;
    let results: Vec<Tensor> = outputs
        .iter()
        .map(|t| from_tract(t))
        .collect::<Result<_>>()?;
    if results.len() != step.outputs.len() {
        return Err(fail(format!(
            "made {} outputs, the plan has {}",
            results.len(),
            step.outputs.len()
        )));
    }
    // tract's shapes may carry unit axes the plan folded away: take the plan's shapes.
    results
        .into_iter()
        .zip(&step.outputs)
        .map(|(tensor, &id)| {
            let value = plan.value(id)?;
            Tensor::new(value.shape.clone(), tensor.into_parts().1)
        })
        .collect()
}
