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
