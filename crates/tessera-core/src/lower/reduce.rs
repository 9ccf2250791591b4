//! Reductions and normalizations: tract's `Reduce`, `Softmax`, `RmsNorm`, `Topk`, and ONNX
//! `LRN`.

use super::{Lowering, NodeFacts, Registry};
use crate::Result;
use crate::plan::{KernelOp, ReduceOp};
use tract_onnx::prelude::TypedNode;
use tract_onnx::tract_core::ops::array::Topk;
use tract_onnx::tract_core::ops::nn::{Reduce, Reducer, RmsNorm, Softmax, SoftmaxKind};
use tract_onnx_opl::lrn::Lrn;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<Reduce>(reduce);
    registry.add::<Softmax>(softmax);
    registry.add::<RmsNorm>(rms_norm);
    registry.add::<Lrn>(lrn);
    registry.add::<Topk>(top_k);
}

fn reduce(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Reduce>() else {
        return Ok(None);
    };
    let reducer = match op.reducer {
        Reducer::Sum => ReduceOp::Sum,
        Reducer::Prod => ReduceOp::Prod,
        Reducer::Max => ReduceOp::Max,
        Reducer::Min => ReduceOp::Min,
        Reducer::MeanOfSquares => ReduceOp::MeanOfSquares,
        Reducer::ArgMax(last) => ReduceOp::ArgMax { last },
        Reducer::ArgMin(last) => ReduceOp::ArgMin { last },
        Reducer::All => ReduceOp::All,
        Reducer::Any => ReduceOp::Any,
    };
    let x = facts.input(0)?;
    let mut axes = op.axes.to_vec();
    axes.sort_unstable();
    axes.dedup();
    let kernel = KernelOp::Reduce {
        op: reducer,
        dtype: x.dtype,
        input_shape: x.shape.clone(),
        axes,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn softmax(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Softmax>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    if op.quant_output_dt.is_some() || !x.dtype.is_float() {
        return Ok(None);
    }
    let mut axes = op.axes.to_vec();
    axes.sort_unstable();
    let kernel = KernelOp::Softmax {
        dtype: x.dtype,
        shape: x.shape.clone(),
        axes,
        log: matches!(op.kind, SoftmaxKind::LogSoftmax),
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn rms_norm(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<RmsNorm>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    let Ok(eps) = op.eps.cast_to_scalar::<f32>() else {
        return Ok(None);
    };
    if !x.dtype.is_float() {
        return Ok(None);
    }
    let kernel = KernelOp::RmsNorm {
        dtype: x.dtype,
        shape: x.shape.clone(),
        axis: op.axis,
        eps,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn lrn(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Lrn>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    let kernel = KernelOp::Lrn {
        dtype: x.dtype,
        shape: x.shape.clone(),
        alpha: op.alpha,
        beta: op.beta,
        bias: op.bias,
        size: op.size,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

/// TopK with `k` known from the output's shape (plans have concrete shapes): only the data is
/// read.
fn top_k(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Topk>() else {
        return Ok(None);
    };
    let (x, values) = (facts.input(0)?, facts.output(0)?);
    let Some(&k) = values.shape.get(op.axis) else {
        return Ok(None);
    };
    let kernel = KernelOp::TopK {
        dtype: x.dtype,
        input_shape: x.shape.clone(),
        axis: op.axis,
        k,
        largest: op.largest,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 2)))
}
