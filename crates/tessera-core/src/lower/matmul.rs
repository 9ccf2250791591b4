//! `EinSum` as a strided batched matmul.
//!
//! Every axis of a two-input einsum is classified by where it appears: in A, B and C (batch), A
//! and C (m), B and C (n), A and B (k, summed). Axes of size 1 carry no data and are dropped.
//! The axes of one role must merge into a single index with one stride in each operand holding
//! them (consecutive and in the same order); transposed operands are then just other strides
//! ([`crate::plan::MatLayout`]), so no copy is needed. An operand whose groups do not merge is
//! first transposed (a [`KernelOp::Transpose`] into a temporary; for C, after the matmul). Einsums that sum an axis present in one
//! operand only, repeat an axis, or mix dtypes are not lowered; those with quantization
//! parameters are `quantized.rs`'s.

use super::{Lowering, NodeFacts, Operand, Registry};
use crate::plan::{KernelOp, MatLayout};
use crate::{DType, Result};
use tract_onnx::prelude::TypedNode;
use tract_onnx::tract_core::axes::AxesMapping;
use tract_onnx::tract_core::ops::einsum::EinSum;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<EinSum>(einsum);
}

/// Row-major strides of a shape, in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

/// One einsum axis: its extent and where it sits in A, B and C.
#[derive(Debug, Clone, Copy)]
struct Ax {
    dim: usize,
    pos: [Option<usize>; 3],
}

/// The stride of a group of axes flattened in the given order within operand `which`, or
/// `None` when they are not laid out as one contiguous run in that order.
fn merged_stride(group: &[Ax], which: usize, operand_strides: &[usize]) -> Option<usize> {
    let mut stride = None;
    for pair in group.windows(2) {
        let outer = operand_strides[pair[0].pos[which]?];
        let inner = operand_strides[pair[1].pos[which]?];
        if outer != inner * pair[1].dim {
            return None;
        }
    }
    if let Some(last) = group.last() {
        stride = Some(operand_strides[last.pos[which]?]);
    }
    Some(stride.unwrap_or(0))
}

fn einsum(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<EinSum>() else {
        return Ok(None);
    };
    if op.q_params.is_some() || facts.inputs.len() != 2 || facts.outputs.len() != 1 {
        return Ok(None);
    }
    let dtype = facts.output(0)?.dtype;
    let mut lowering = Lowering::default();
    let mut operands = [Operand::In(0), Operand::In(1)];
    // f16 operands of an f32 product (tract accumulates attention in f32) are widened first:
    // exact, and the product runs as every f32 one.
    for (which, operand) in operands.iter_mut().enumerate() {
        let input = facts.input(which)?;
        match (input.dtype, dtype) {
            (from, to) if from == to => {}
            (DType::F16, DType::F32) => {
                let wide = lowering.temp(input.shape.clone(), dtype);
                lowering.push(
                    KernelOp::Cast {
                        from: DType::F16,
                        to: dtype,
                    },
                    vec![*operand],
                    vec![wide],
                );
                *operand = wide;
            }
            _ => return Ok(None),
        }
    }
    let shapes = [
        facts.input(0)?.shape.clone(),
        facts.input(1)?.shape.clone(),
        facts.output(0)?.shape.clone(),
    ];
    let product = Product {
        axes: &op.axes,
        shapes,
        dtype,
        operands: [operands[0], operands[1], Operand::Out(0)],
    };
    Ok(product.lower(&mut lowering)?.then_some(lowering))
}

/// A two-operand einsum to lower as one matmul: its axes (inputs 0 and 1, output 0 of
/// `axes`), the operands' shapes and where they live, all of `dtype`.
pub(super) struct Product<'a> {
    pub axes: &'a AxesMapping,
    pub shapes: [Vec<usize>; 3],
    pub dtype: DType,
    pub operands: [Operand; 3],
}

impl Product<'_> {
    /// Appends the product's steps to `lowering`; `false` (nothing appended) when its axes do
    /// not make a matmul.
    pub fn lower(self, lowering: &mut Lowering) -> Result<bool> {
        let Product {
            axes,
            shapes,
            dtype,
            mut operands,
        } = self;
        let (mut batch, mut m, mut n, mut k) = (vec![], vec![], vec![], vec![]);
        for axis in axes.iter_all_axes() {
            let lists = [
                axis.inputs.first(),
                axis.inputs.get(1),
                axis.outputs.first(),
            ];
            let mut pos = [None; 3];
            for (slot, list) in lists.iter().enumerate() {
                match list.map(|l| l.as_slice()) {
                    None | Some([]) => {}
                    Some([p]) => pos[slot] = Some(*p),
                    Some(_) => return Ok(false),
                }
            }
            let dims: Vec<usize> = (0..3)
                .filter_map(|s| pos[s].map(|p| shapes[s][p]))
                .collect();
            let dim = dims.iter().copied().max().unwrap_or(1);
            // Broadcasting (a 1 against a larger extent) is only meaningful on batch axes.
            let broadcast = dims.iter().any(|&d| d != dim);
            if dim == 1 {
                continue;
            }
            let ax = Ax { dim, pos };
            match pos.map(|p| p.is_some()) {
                [true, true, true] => batch.push(ax),
                _ if broadcast => return Ok(false),
                [true, false, true] => m.push(ax),
                [false, true, true] => n.push(ax),
                [true, true, false] => k.push(ax),
                _ => return Ok(false),
            }
        }
        let by = |which: usize| move |a: &Ax| a.pos[which].unwrap_or(0);
        batch.sort_by_key(by(2));
        m.sort_by_key(by(2));
        n.sort_by_key(by(2));
        k.sort_by_key(by(0));
        let original = shapes.clone();
        let mut shapes = shapes;
        let sources = [operands[0], operands[1]];
        let destination = operands[2];
        let mut steps = vec![];
        let mut temps = vec![];
        // An operand whose groups do not merge is transposed to [other axes, batch, rows, cols].
        let mut transposes = vec![];
        for which in 0..3 {
            let (rows, cols) = match which {
                0 => (m.clone(), k.clone()),
                1 => (k.clone(), n.clone()),
                _ => (m.clone(), n.clone()),
            };
            let s = strides(&shapes[which]);
            if merged_stride(&rows, which, &s).is_some()
                && merged_stride(&cols, which, &s).is_some()
            {
                continue;
            }
            let grouped: Vec<usize> = batch
                .iter()
                .chain(&rows)
                .chain(&cols)
                .filter_map(|a| a.pos[which])
                .collect();
            let mut perm: Vec<usize> = (0..shapes[which].len())
                .filter(|p| !grouped.contains(p))
                .collect();
            perm.extend(grouped);
            let new_shape: Vec<usize> = perm.iter().map(|&p| shapes[which][p]).collect();
            let new_pos = |old: usize| perm.iter().position(|&p| p == old);
            for ax in batch
                .iter_mut()
                .chain(m.iter_mut())
                .chain(n.iter_mut())
                .chain(k.iter_mut())
            {
                ax.pos[which] = ax.pos[which].and_then(new_pos);
            }
            let temp = Operand::Temp(lowering.temps.len() + temps.len());
            temps.push((new_shape.clone(), dtype));
            transposes.push((which, temp, perm, new_shape.clone()));
            operands[which] = temp;
            shapes[which] = new_shape;
        }
        let all_strides = [
            strides(&shapes[0]),
            strides(&shapes[1]),
            strides(&shapes[2]),
        ];
        let product = |group: &[Ax]| group.iter().map(|a| a.dim).product::<usize>();
        let layout = |which: usize, rows: &[Ax], cols: &[Ax]| -> Option<MatLayout> {
            let s = &all_strides[which];
            Some(MatLayout {
                offset: 0,
                batch_strides: batch
                    .iter()
                    .map(|a| {
                        a.pos[which]
                            .filter(|&p| shapes[which][p] != 1)
                            .map(|p| s[p])
                            .unwrap_or(0)
                    })
                    .collect(),
                row_stride: merged_stride(rows, which, s)?,
                col_stride: merged_stride(cols, which, s)?,
            })
        };
        let (Some(a), Some(b), Some(c)) = (layout(0, &m, &k), layout(1, &k, &n), layout(2, &m, &n))
        else {
            return Ok(false);
        };
        let matmul = KernelOp::MatMul {
            dtype,
            out_shape: shapes[2].clone(),
            batch: batch.iter().map(|a| a.dim).collect(),
            m: product(&m),
            k: product(&k),
            n: product(&n),
            a,
            b,
            c,
        };
        let mut after = None;
        for (which, temp, perm, new_shape) in transposes {
            if which == 2 {
                // C was computed in canonical order: permute back into the output.
                let mut back = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    back[p] = i;
                }
                let op = KernelOp::Transpose {
                    dtype,
                    input_shape: new_shape,
                    perm: back,
                };
                after = Some((op, vec![temp], vec![destination]));
            } else {
                steps.push((
                    KernelOp::Transpose {
                        dtype,
                        input_shape: original[which].clone(),
                        perm,
                    },
                    vec![sources[which]],
                    vec![temp],
                ));
            }
        }
        steps.push((matmul, vec![operands[0], operands[1]], vec![operands[2]]));
        steps.extend(after);
        lowering.temps.extend(temps);
        lowering.steps.extend(steps);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_strides() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(strides(&[]), Vec::<usize>::new());
    }

    #[test]
    fn merging_groups() {
        // A = [b=3, a=4, k=5]: (b, a, k) merge with stride 1; (k, a) do not.
        let s = strides(&[3, 4, 5]);
        let ax = |dim, p| Ax {
            dim,
            pos: [Some(p), None, None],
        };
        assert_eq!(
            merged_stride(&[ax(3, 0), ax(4, 1), ax(5, 2)], 0, &s),
            Some(1)
        );
        assert_eq!(merged_stride(&[ax(5, 2), ax(4, 1)], 0, &s), None);
        assert_eq!(merged_stride(&[], 0, &s), Some(0));
    }
}
