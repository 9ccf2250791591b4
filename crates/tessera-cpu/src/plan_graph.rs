//! Small queries over tract's optimized plan, shared by Tessera's passes on it.

use tessera_core::tract_onnx::prelude::*;

/// The node that alone reads `node`'s single output, when that output is not also a model output:
/// the condition for fusing the two.
pub fn only_reader(model: &TypedModel, node: usize) -> TractResult<Option<usize>> {
    if model.output_outlets()?.contains(&OutletId::new(node, 0)) {
        return Ok(None);
    }
    Ok(model.single_succ(node)?.map(|succ| succ.id))
}

/// The value of `outlet` when the plan knows it (a constant, or folded from constants).
pub fn constant(model: &TypedModel, outlet: OutletId) -> Option<Arc<Tensor>> {
    model.outlet_fact(outlet).ok()?.konst.clone()
}

/// Whether the plan knows the value of `outlet`.
pub fn is_constant(model: &TypedModel, outlet: OutletId) -> bool {
    model.outlet_fact(outlet).is_ok_and(|f| f.konst.is_some())
}
