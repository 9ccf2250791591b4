//! `EinSum` forms that are not one matrix product (a sum over axes, a transpose, a diagonal or a
//! trace, a product of three operands...): each operand's repeated axes taken down to their
//! diagonal (a gather), its axes put in one common order (a transpose) with unit axes where it
//! lacks one (a view), the operands multiplied with broadcasting, and the axes the output lacks
//! summed. The product space is bounded ([`MAX_PRODUCT`]): contractions that large are matrix
//! products, which `matmul.rs` takes first.

use super::{Lowering, NodeFacts, Operand, Registry};
use crate::plan::{BinaryOp, KernelOp, ReduceOp};
use crate::{DType, Result};
use tract_onnx::prelude::{TypedNode, tensor1};
use tract_onnx::tract_core::ops::einsum::EinSum;

/// Most elements of the broadcast product of the operands.
const MAX_PRODUCT: usize = 1 << 26;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<EinSum>(einsum_by_broadcast);
}

fn einsum_by_broadcast(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<EinSum>() else {
        return Ok(None);
    };
    let out = facts.output(0)?;
    let dtype = out.dtype;
    if op.q_params.is_some()
        || facts.outputs.len() != 1
        || !dtype.is_float()
        || facts.inputs.iter().any(|f| f.dtype != dtype)
    {
        return Ok(None);
    }
    let axes: Vec<_> = op.axes.iter_all_axes().collect();
    // The space: the output's axes in its order, then the summed ones.
    let mut in_output = vec![None; out.shape.len()];
    for (a, axis) in axes.iter().enumerate() {
        match axis.outputs.first().map(|l| l.as_slice()) {
            None | Some([]) => {}
            Some(&[p]) if p < in_output.len() => in_output[p] = Some(a),
            Some(_) => return Ok(None),
        }
    }
    let Some(mut space) = in_output.into_iter().collect::<Option<Vec<usize>>>() else {
        return Ok(None);
    };
    let kept = space.len();
    let summed: Vec<usize> = (0..axes.len()).filter(|a| !space.contains(a)).collect();
    space.extend(summed);
    let mut dims = vec![1; space.len()];
    for (s, &a) in space.iter().enumerate() {
        for (k, positions) in axes[a].inputs.iter().enumerate() {
            for &p in positions {
                let Some(&d) = facts.input(k)?.shape.get(p) else {
                    return Ok(None);
                };
                dims[s] = dims[s].max(d);
            }
        }
    }
    if dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .is_none_or(|n| n > MAX_PRODUCT)
    {
        return Ok(None);
    }

    let mut lowering = Lowering::default();
    let mut product: Option<(Operand, Vec<usize>)> = None;
    for k in 0..facts.inputs.len() {
        let shape = facts.input(k)?.shape.clone();
        // Where each of the operand's axes goes in the space.
        let mut at = Vec::with_capacity(shape.len());
        for p in 0..shape.len() {
            let axis = space
                .iter()
                .position(|&a| axes[a].inputs.get(k).is_some_and(|l| l.contains(&p)));
            let Some(s) = axis else {
                return Ok(None);
            };
            at.push(s);
        }
        let Some((operand, full)) =
            in_space_order(&mut lowering, Operand::In(k), shape, at, &space, dtype)
        else {
            return Ok(None);
        };
        product = Some(match product {
            None => (operand, full),
            Some((so_far, so_far_shape)) => {
                let out_shape: Vec<usize> = (so_far_shape.iter().zip(&full))
                    .map(|(&a, &b)| a.max(b))
                    .collect();
                let multiplied = lowering.temp(out_shape.clone(), dtype);
                let mul = KernelOp::Binary {
                    op: BinaryOp::Mul,
                    dtype,
                    a_shape: so_far_shape,
                    b_shape: full,
                    out_shape: out_shape.clone(),
                };
                lowering.push(mul, vec![so_far, operand], vec![multiplied]);
                (multiplied, out_shape)
            }
        });
    }
    let Some((result, shape)) = product else {
        return Ok(None);
    };
    let result = if shape.len() > kept {
        let summed = lowering.temp(
            shape[..kept]
                .iter()
                .copied()
                .chain(std::iter::repeat_n(1, shape.len() - kept))
                .collect(),
            dtype,
        );
        let sum = KernelOp::Reduce {
            op: ReduceOp::Sum,
            dtype,
            input_shape: shape,
            axes: (kept..space.len()).collect(),
        };
        lowering.push(sum, vec![result], vec![summed]);
        summed
    } else {
        result
    };
    lowering.aliases.push((Operand::Out(0), result));
    Ok(Some(lowering))
}

/// `operand` (of `shape`, its axes at space positions `at`) as a tensor over the whole space:
/// transposed into space order, repeated axes taken down to their diagonal, unit axes where it
/// has none. Returns the operand and its shape over the space.
fn in_space_order(
    lowering: &mut Lowering,
    mut operand: Operand,
    mut shape: Vec<usize>,
    mut at: Vec<usize>,
    space: &[usize],
    dtype: DType,
) -> Option<(Operand, Vec<usize>)> {
    let mut perm: Vec<usize> = (0..shape.len()).collect();
    perm.sort_by_key(|&p| at[p]);
    if perm.iter().enumerate().any(|(i, &p)| i != p) {
        let permuted: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let transposed = lowering.temp(permuted.clone(), dtype);
        let transpose = KernelOp::Transpose {
            dtype,
            input_shape: shape,
            perm: perm.clone(),
        };
        lowering.push(transpose, vec![operand], vec![transposed]);
        at = perm.iter().map(|&p| at[p]).collect();
        (operand, shape) = (transposed, permuted);
    }
    // A run of one axis repeated `run` times (now adjacent): its diagonal, gathered from the run
    // merged into one axis of d^run (positions i · (1 + d + … + d^(run-1))).
    let mut p = 0;
    while p < at.len() {
        let run = at[p..].iter().take_while(|&&s| s == at[p]).count();
        if run > 1 {
            let d = shape[p];
            if shape[p..p + run].iter().any(|&e| e != d) {
                return None;
            }
            let merged: Vec<usize> = (shape[..p].iter().copied())
                .chain([d.checked_pow(run as u32)?])
                .chain(shape[p + run..].iter().copied())
                .collect();
            let view = lowering.temp(merged.clone(), dtype);
            lowering.aliases.push((view, operand));
            let step: usize = (0..run as u32).map(|e| d.pow(e)).sum();
            let positions: Vec<i64> = (0..d).map(|i| (i * step) as i64).collect();
            let indices = lowering.constant(tensor1(&positions));
            let diagonal: Vec<usize> = (shape[..p].iter().copied())
                .chain([d])
                .chain(shape[p + run..].iter().copied())
                .collect();
            let gathered = lowering.temp(diagonal.clone(), dtype);
            let gather = KernelOp::Gather {
                dtype,
                data_shape: merged,
                indices_shape: vec![d],
                index_dtype: DType::I64,
                axis: p,
            };
            lowering.push(gather, vec![view, indices], vec![gathered]);
            at.drain(p + 1..p + run);
            (operand, shape) = (gathered, diagonal);
        }
        p += 1;
    }
    let full: Vec<usize> = (0..space.len())
        .map(|s| at.iter().position(|&x| x == s).map_or(1, |q| shape[q]))
        .collect();
    if full != shape {
        let view = lowering.temp(full.clone(), dtype);
        lowering.aliases.push((view, operand));
        operand = view;
    }
    Some((operand, full))
}
