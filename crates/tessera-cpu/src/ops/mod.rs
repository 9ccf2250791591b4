//! Tessera's own cpu ops: where tract's kernel for an op is the limit, a cpu plan swaps it for
//! one of these before tract optimizes the plan (GPU plans keep tract's op, which they lower
//! themselves). One file per op.

mod avg_pool;
mod lrn;
mod max_pool;
mod pool_2d;

use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::{MaxPool, SumPool};

pub use avg_pool::FastAvgPool;
pub use lrn::FastLrn;
pub use max_pool::FastMaxPool;

/// The eval of every op here: `compute` reads the f32 input as one contiguous slice (copied only
/// when it is not) and writes an output of `output_shape`, which becomes the result tensor
/// without a second copy.
fn eval_f32(
    inputs: TVec<TValue>,
    output_shape: Option<&[usize]>,
    compute: impl FnOnce(&[f32], &[usize], &mut [f32]) -> TractResult<()>,
) -> TractResult<TVec<TValue>> {
    use tessera_core::tract_onnx::tract_core::internal::*;
    let input = args_1!(inputs);
    let input = input.to_plain_array_view::<f32>()?;
    let input = input.as_standard_layout();
    let shape = input.shape().to_vec();
    let values = input
        .as_slice()
        .context("the op's f32 input is not contiguous")?;
    let output_shape = output_shape.map_or_else(|| shape.clone(), <[usize]>::to_vec);
    let mut output = vec![0f32; output_shape.iter().product()];
    compute(values, &shape, &mut output)?;
    Ok(tvec!(
        tract_ndarray::Array::from_shape_vec(output_shape, output)?.into_tvalue()
    ))
}

/// Replaces, in place, the ops of `model` that have a faster cpu version here.
pub fn use_cpu_ops(model: &mut TypedModel) -> TractResult<()> {
    for id in 0..model.nodes().len() {
        let node = model.node(id);
        let f32_input = node
            .inputs
            .first()
            .and_then(|i| model.outlet_fact(*i).ok())
            .is_some_and(|f| f.datum_type == f32::datum_type());
        if !f32_input {
            continue;
        }
        if let Some(lrn) = node.op_as::<tract_onnx_opl::lrn::Lrn>() {
            let fast = FastLrn::from_tract(lrn);
            model.node_mut(id).op = Box::new(fast);
            continue;
        }
        let Some(shape) = model
            .outlet_fact(node.inputs[0])?
            .shape
            .as_concrete()
            .map(|s| s.to_vec())
        else {
            continue;
        };
        if let Some(fast) = node
            .op_as::<MaxPool>()
            .and_then(|pool| FastMaxPool::for_op(pool, &shape))
        {
            model.node_mut(id).op = Box::new(fast);
        } else if let Some(fast) = node
            .op_as::<SumPool>()
            .and_then(|pool| FastAvgPool::for_op(pool, &shape))
        {
            model.node_mut(id).op = Box::new(fast);
        }
    }
    Ok(())
}
