//! Pooling: tract's `MaxPool` (without index outputs) and `SumPool` (sum or average).

use super::conv::window;
use super::{Lowering, NodeFacts, Registry};
use crate::Result;
use crate::plan::KernelOp;
use tract_onnx::prelude::TypedNode;
use tract_onnx::tract_core::ops::cnn::{MaxPool, SumPool};

pub(super) fn register(registry: &mut Registry) {
    registry.add::<MaxPool>(max_pool);
    registry.add::<SumPool>(sum_pool);
}

fn max_pool(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<MaxPool>() else {
        return Ok(None);
    };
    if op.with_index_outputs.is_some() {
        return Ok(None);
    }
    let (x, out) = (facts.input(0)?, facts.output(0)?);
    let Some((window, channels)) = window(&op.pool_spec, &x.shape, &out.shape) else {
        return Ok(None);
    };
    Ok(Some(Lowering::step_on(
        KernelOp::MaxPool {
            dtype: x.dtype,
            window,
            channels,
        },
        vec![0],
        1,
    )))
}

fn sum_pool(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<SumPool>() else {
        return Ok(None);
    };
    let (x, out) = (facts.input(0)?, facts.output(0)?);
    let Some((window, channels)) = window(&op.pool_spec, &x.shape, &out.shape) else {
        return Ok(None);
    };
    let kernel = KernelOp::SumPool {
        dtype: x.dtype,
        window,
        channels,
        normalize: op.normalize,
        count_include_pad: op.count_include_pad,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}
