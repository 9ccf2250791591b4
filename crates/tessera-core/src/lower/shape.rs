//! Data movement: tract's `AxisOp` (views, or a transpose for `Move`), `Slice`, `Downsample`,
//! `TypedConcat`, `Gather`, `Pad`, `MultiBroadcastTo`, `NearestUpsample`, `Tile` and
//! `FiniteReshape`;
//! and the indexing ops `GatherElements`, `GatherNd`, `ScatterElements`, `ScatterNd`, `Trilu`
//! and `OneHot`.
//!
//! Anything that keeps the bytes in order (reshapes, adding or removing unit axes, moving a unit
//! axis, a slice covering the whole axis) becomes a view, never a copy.

use super::{Lowering, NodeFacts, Operand, Registry};
use crate::plan::shapes::padded;
use crate::plan::{KernelOp, PadMode, ScatterReduction};
use crate::{DType, Result};
use tract_onnx::prelude::{TypedNode, tensor1};
use tract_onnx::tract_core::internal::DimLike;
use tract_onnx::tract_core::ops::Downsample;
use tract_onnx::tract_core::ops::array::{
    FiniteReshape, Gather, GatherElements, GatherNd, MultiBroadcastTo, OneHot, Pad,
    PadMode as TractPadMode, ScatterElements, ScatterNd, ScatterReduction as TractScatterReduction,
    Slice, Tile, Trilu, TypedConcat,
};
use tract_onnx::tract_core::ops::change_axes::AxisOp;
use tract_onnx::tract_core::ops::nn::NearestUpsample;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<AxisOp>(axis_op);
    registry.add::<FiniteReshape>(same_bytes);
    registry.add::<Slice>(slice);
    registry.add::<Downsample>(downsample);
    registry.add::<TypedConcat>(concat);
    registry.add::<Gather>(gather);
    registry.add::<Pad>(pad);
    registry.add::<MultiBroadcastTo>(broadcast);
    registry.add::<NearestUpsample>(upsample);
    registry.add::<Tile>(tile);
    registry.add::<GatherElements>(gather_elements);
    registry.add::<GatherNd>(gather_nd);
    registry.add::<ScatterNd>(scatter_nd);
    registry.add::<ScatterElements>(scatter_elements);
    registry.add::<Trilu>(trilu);
    registry.add::<OneHot>(one_hot);
    registry.add::<crate::model::index_check::IndexCheck>(index_check);
}

/// An index check in front of an indexing op is a view on the device: the session checks the
/// indices that come from the host before uploading them ([`crate::plan::Plan::check_host_indices`]).
fn index_check(_: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let (input, output) = (facts.input(0)?, facts.output(0)?);
    Ok((input.shape == output.shape && input.dtype == output.dtype).then(Lowering::view))
}

/// The permutation `Move(from, to)` applies: output axis `i` is input axis `perm[i]`.
pub fn move_perm(rank: usize, from: usize, to: usize) -> Option<Vec<usize>> {
    if from >= rank || to >= rank {
        return None;
    }
    let mut perm: Vec<usize> = (0..rank).collect();
    let axis = perm.remove(from);
    perm.insert(to, axis);
    Some(perm)
}

/// Whether permuting `shape` by `perm` keeps every element at its offset (only unit axes move).
pub fn is_view_perm(shape: &[usize], perm: &[usize]) -> bool {
    let moved: Vec<usize> = perm
        .iter()
        .copied()
        .filter(|&p| shape.get(p).copied().unwrap_or(1) != 1)
        .collect();
    moved.windows(2).all(|w| w[0] < w[1])
}

fn same_bytes(_: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let (x, out) = (facts.input(0)?, facts.output(0)?);
    let same = x.dtype == out.dtype
        && x.shape.iter().product::<usize>() == out.shape.iter().product::<usize>();
    Ok(same.then(Lowering::view))
}

fn axis_op(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<AxisOp>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    match op {
        AxisOp::Add(_) | AxisOp::Rm(_) | AxisOp::Reshape(..) => same_bytes(node, facts),
        AxisOp::Move(from, to) => {
            let Some(perm) = move_perm(x.shape.len(), *from, *to) else {
                return Ok(None);
            };
            if is_view_perm(&x.shape, &perm) {
                return Ok(Some(Lowering::view()));
            }
            let kernel = KernelOp::Transpose {
                dtype: x.dtype,
                input_shape: x.shape.clone(),
                perm,
            };
            Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
        }
    }
}

fn slice_step(
    facts: &NodeFacts,
    axis: usize,
    start: usize,
    end: usize,
    step: usize,
) -> Result<Option<Lowering>> {
    let x = facts.input(0)?;
    let Some(&dim) = x.shape.get(axis) else {
        return Ok(None);
    };
    if start > end || end > dim || step == 0 {
        return Ok(None);
    }
    if start == 0 && end == dim && step == 1 {
        return Ok(Some(Lowering::view()));
    }
    let kernel = KernelOp::Slice {
        dtype: x.dtype,
        input_shape: x.shape.clone(),
        axis,
        start,
        end,
        step,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn slice(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Slice>() else {
        return Ok(None);
    };
    let (Ok(start), Ok(end)) = (op.start.to_usize(), op.end.to_usize()) else {
        return Ok(None);
    };
    slice_step(facts, op.axis, start, end, 1)
}

fn downsample(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Downsample>() else {
        return Ok(None);
    };
    let Some(&dim) = facts.input(0)?.shape.get(op.axis) else {
        return Ok(None);
    };
    if op.modulo > dim || op.stride == 0 {
        return Ok(None);
    }
    if op.stride > 0 {
        return slice_step(facts, op.axis, op.modulo, dim, op.stride.unsigned_abs());
    }
    // A negative stride walks the axis backwards from its last element (tract rejects a
    // modulo there): a gather of those positions.
    if op.modulo != 0 {
        return Ok(None);
    }
    let positions: Vec<i64> = (0..dim)
        .rev()
        .step_by(op.stride.unsigned_abs())
        .map(|i| i as i64)
        .collect();
    let x = facts.input(0)?;
    let mut lowering = Lowering::default();
    let indices_shape = vec![positions.len()];
    let indices = lowering.constant(tensor1(&positions));
    let kernel = KernelOp::Gather {
        dtype: x.dtype,
        data_shape: x.shape.clone(),
        indices_shape,
        index_dtype: DType::I64,
        axis: op.axis,
    };
    lowering.push(kernel, vec![Operand::In(0), indices], vec![Operand::Out(0)]);
    Ok(Some(lowering))
}

fn tile(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Tile>() else {
        return Ok(None);
    };
    let Ok(multipliers) = op
        .multipliers
        .iter()
        .map(|m| m.to_usize())
        .collect::<Result<Vec<usize>, _>>()
    else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    if multipliers.iter().all(|&m| m == 1) {
        return Ok(Some(Lowering::view()));
    }
    let kernel = KernelOp::Tile {
        dtype: x.dtype,
        input_shape: x.shape.clone(),
        multipliers,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn concat(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<TypedConcat>() else {
        return Ok(None);
    };
    let kernel = KernelOp::Concat {
        dtype: facts.output(0)?.dtype,
        axis: op.axis,
        input_shapes: facts.inputs.iter().map(|f| f.shape.clone()).collect(),
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn gather(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Gather>() else {
        return Ok(None);
    };
    let (data, indices) = (facts.input(0)?, facts.input(1)?);
    if op.output_type.is_some() || facts.inputs.len() != 2 {
        return Ok(None);
    }
    let kernel = KernelOp::Gather {
        dtype: data.dtype,
        data_shape: data.shape.clone(),
        indices_shape: indices.shape.clone(),
        index_dtype: indices.dtype,
        axis: op.axis,
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn gather_elements(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<GatherElements>() else {
        return Ok(None);
    };
    let (data, indices) = (facts.input(0)?, facts.input(1)?);
    if facts.inputs.len() != 2 || data.shape.len() != indices.shape.len() {
        return Ok(None);
    }
    let kernel = KernelOp::GatherElements {
        dtype: data.dtype,
        data_shape: data.shape.clone(),
        indices_shape: indices.shape.clone(),
        index_dtype: indices.dtype,
        axis: op.axis,
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn gather_nd(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<GatherNd>() else {
        return Ok(None);
    };
    if facts.inputs.len() != 2 {
        return Ok(None);
    }
    let (data, indices) = (facts.input(0)?, facts.input(1)?);
    let kernel = KernelOp::GatherNd {
        dtype: data.dtype,
        data_shape: data.shape.clone(),
        indices_shape: indices.shape.clone(),
        index_dtype: indices.dtype,
        batch_dims: op.batch_dims,
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn scatter_elements(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<ScatterElements>() else {
        return Ok(None);
    };
    if facts.inputs.len() != 3 {
        return Ok(None);
    }
    let (data, indices, updates) = (facts.input(0)?, facts.input(1)?, facts.input(2)?);
    if data.shape.len() != indices.shape.len()
        || indices.shape != updates.shape
        || data.dtype != updates.dtype
    {
        return Ok(None);
    }
    let reduction = scatter_reduction(&op.reduction);
    let kernel = KernelOp::ScatterElements {
        dtype: data.dtype,
        data_shape: data.shape.clone(),
        indices_shape: indices.shape.clone(),
        index_dtype: indices.dtype,
        axis: op.axis,
        reduction,
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn scatter_nd(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<ScatterNd>() else {
        return Ok(None);
    };
    if facts.inputs.len() != 3 {
        return Ok(None);
    }
    let (data, indices, updates) = (facts.input(0)?, facts.input(1)?, facts.input(2)?);
    if data.dtype != updates.dtype {
        return Ok(None);
    }
    let kernel = KernelOp::ScatterNd {
        dtype: data.dtype,
        data_shape: data.shape.clone(),
        indices_shape: indices.shape.clone(),
        index_dtype: indices.dtype,
        reduction: scatter_reduction(&op.reduction),
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn scatter_reduction(reduction: &TractScatterReduction) -> ScatterReduction {
    match reduction {
        TractScatterReduction::None => ScatterReduction::None,
        TractScatterReduction::Add => ScatterReduction::Add,
        TractScatterReduction::Mul => ScatterReduction::Mul,
        TractScatterReduction::Max => ScatterReduction::Max,
        TractScatterReduction::Min => ScatterReduction::Min,
    }
}

fn trilu(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Trilu>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    if facts.inputs.len() != 2 || x.shape.len() < 2 {
        return Ok(None);
    }
    let kernel = KernelOp::Trilu {
        dtype: x.dtype,
        shape: x.shape.clone(),
        upper: op.upper,
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn one_hot(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<OneHot>() else {
        return Ok(None);
    };
    let (Ok(off), Ok(on)) = (
        op.off.cast_to_scalar::<f64>(),
        op.on.cast_to_scalar::<f64>(),
    ) else {
        return Ok(None);
    };
    let indices = facts.input(0)?;
    let kernel = KernelOp::OneHot {
        dtype: facts.output(0)?.dtype,
        indices_shape: indices.shape.clone(),
        index_dtype: indices.dtype,
        axis: op.axis,
        depth: op.dim,
        off,
        on,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn pad(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Pad>() else {
        return Ok(None);
    };
    let mode = match &op.mode {
        TractPadMode::Constant(value) => match value.cast_to_scalar::<f64>() {
            Ok(v) => PadMode::Constant(v),
            Err(_) => return Ok(None),
        },
        TractPadMode::Reflect => PadMode::Reflect,
        TractPadMode::Edge => PadMode::Edge,
    };
    let x = facts.input(0)?;
    let kernel = KernelOp::Pad {
        dtype: x.dtype,
        input_shape: x.shape.clone(),
        pads: op.pads.clone(),
        mode,
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn broadcast(_: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let (x, out) = (facts.input(0)?, facts.output(0)?);
    if x.shape.iter().product::<usize>() == out.shape.iter().product::<usize>() {
        return Ok(Some(Lowering::view()));
    }
    let kernel = KernelOp::Broadcast {
        dtype: x.dtype,
        input_shape: padded(&x.shape, out.shape.len()),
        output_shape: out.shape.clone(),
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

fn upsample(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<NearestUpsample>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    let kernel = KernelOp::Upsample {
        dtype: x.dtype,
        input_shape: x.shape.clone(),
        scales: op.scales.to_vec(),
    };
    Ok(Some(Lowering::step_on(kernel, vec![0], 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves() {
        assert_eq!(move_perm(4, 3, 1), Some(vec![0, 3, 1, 2]));
        assert_eq!(move_perm(5, 1, 2), Some(vec![0, 2, 1, 3, 4]));
        assert_eq!(move_perm(2, 2, 0), None);
        // NHWC -> NCHW with C = 3 moves data; with C = 1 it does not.
        assert!(!is_view_perm(&[1, 4, 4, 3], &[0, 3, 1, 2]));
        assert!(is_view_perm(&[1, 4, 4, 1], &[0, 3, 1, 2]));
    }
}
