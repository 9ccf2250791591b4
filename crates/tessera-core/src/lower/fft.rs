//! tract's `Fft` (from ONNX `DFT`) as one [`KernelOp::Dft`] step: f32 complex pairs.

use super::{Lowering, NodeFacts, Registry};
use crate::plan::KernelOp;
use crate::{DType, Result};
use tract_onnx::prelude::TypedNode;
use tract_onnx::tract_core::ops::fft::Fft;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<Fft>(fft);
}

fn fft(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Fft>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    if x.dtype != DType::F32 || crate::plan::shapes::dft_geometry(&x.shape, op.axis).is_none() {
        return Ok(None);
    }
    let op = KernelOp::Dft {
        input_shape: x.shape.clone(),
        axis: op.axis,
        inverse: op.inverse,
    };
    Ok(Some(Lowering::step(op, facts)))
}
