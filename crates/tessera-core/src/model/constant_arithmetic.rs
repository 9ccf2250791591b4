//! Constant f32 additions, subtractions and products folded by a strided loop, inside constant
//! propagation (`PropConst`, the first declutter pass: tract's, as [`super::prop_const`] runs it).
//!
//! Folding a batch normalization or a per-channel scale into a convolution multiplies its whole
//! kernel by a per-channel constant. tract 0.23.9 evaluates such a broadcast through ndarray's
//! `Zip`, one element at a time through its index arithmetic (light_inception_v2: 97 of its 245 ms
//! of load). [`FoldConstants`] runs `PropConst` and folds these nodes itself as soon as their
//! operands are constants: the same IEEE operation on the same pairs, only where `PropConst`
//! would fold them, so the graph comes out the same.

use anyhow::Context;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::math::{Add, Mul, Sub};
use tract_onnx::tract_core::optim::{
    CONST_FOLD_MEM_BUDGET, Optimizer, OptimizerSession, TypedPass,
};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Arithmetic {
    Add,
    Sub,
    Mul,
}

impl Arithmetic {
    fn of(op: &TypedBinOp) -> Option<Arithmetic> {
        if op.1.is_some() {
            return None; // a quantized output type
        }
        if op.0.is::<Add>() {
            Some(Arithmetic::Add)
        } else if op.0.is::<Sub>() {
            Some(Arithmetic::Sub)
        } else if op.0.is::<Mul>() {
            Some(Arithmetic::Mul)
        } else {
            None
        }
    }

    #[inline(always)]
    fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            Arithmetic::Add => a + b,
            Arithmetic::Sub => a - b,
            Arithmetic::Mul => a * b,
        }
    }
}

/// tract's `PropConst` with constant f32 arithmetic folded here first: the nodes checked are the
/// readers of each constant `PropConst` (or this pass) has just made, and, after each reset,
/// every node.
#[derive(Clone, Debug)]
pub struct FoldConstants {
    prop_const: Box<dyn TypedPass>,
    /// Nodes to try, last first.
    candidates: Vec<usize>,
    /// Set by a reset: every node is a candidate.
    from_scratch: bool,
}

impl FoldConstants {
    /// Puts itself in place of `optimizer`'s first pass, tract's `PropConst` (as in
    /// `Optimizer::declutter()`), and runs it; false, and `optimizer` unchanged, without one.
    pub fn wrapping(optimizer: &mut Optimizer) -> bool {
        // tract's pass is replaced by Tessera's copy, which sizes a fold before computing it.
        super::optimizer::replace_pass(optimizer, "PropConst", |_| {
            Box::new(FoldConstants {
                prop_const: Box::new(super::prop_const::PropConst::default()),
                candidates: vec![],
                from_scratch: true,
            })
        })
    }

    fn readers(model: &TypedModel, patch: &TypedModelPatch) -> Vec<usize> {
        let shunted = patch.shunts.keys();
        shunted
            .flat_map(|outlet| model.outlet_successors(*outlet))
            .map(|inlet| inlet.node)
            .collect()
    }
}

impl TypedPass for FoldConstants {
    fn reset(&mut self) -> TractResult<()> {
        self.candidates.clear();
        self.from_scratch = true;
        self.prop_const.reset()
    }

    fn next(
        &mut self,
        session: &mut OptimizerSession,
        model: &TypedModel,
    ) -> TractResult<Option<TypedModelPatch>> {
        if self.from_scratch {
            self.from_scratch = false;
            self.candidates = (0..model.nodes.len()).rev().collect();
        }
        while let Some(id) = self.candidates.pop() {
            let Some(node) = model.nodes.get(id) else {
                continue;
            };
            if let Some(patch) = fold_arithmetic(model, node)? {
                self.candidates.extend(Self::readers(model, &patch));
                return Ok(Some(patch));
            }
        }
        let patch = self.prop_const.next(session, model)?;
        if let Some(patch) = &patch {
            self.candidates = Self::readers(model, patch);
        }
        Ok(patch)
    }
}

/// The constant replacing `node` when it is foldable constant arithmetic.
fn fold_arithmetic(model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
    let Some(arithmetic) = node.op_as::<TypedBinOp>().and_then(Arithmetic::of) else {
        return Ok(None);
    };
    let Some((a, b)) = foldable_operands(model, node)? else {
        return Ok(None);
    };
    let folded = fold(arithmetic, &a, &b)?;
    let mut patch = TypedModelPatch::default();
    let exotic_fact = node.outputs[0].fact.exotic_fact.clone();
    let constant = Const::new_with_opt_exotic_fact(folded.into_arc_tensor(), exotic_fact)?;
    let wire = patch.wire_node(&node.name, constant, &[])?[0];
    patch.shunt_outside(model, node.id.into(), wire)?;
    Ok(Some(patch))
}

/// The node's two constant f32 operands, when `PropConst` would fold the node: each operand is
/// read by this node alone or is within tract's folding allowance, and the result is no larger
/// than the operands or the allowance.
fn foldable_operands(
    model: &TypedModel,
    node: &TypedNode,
) -> TractResult<Option<(Arc<Tensor>, Arc<Tensor>)>> {
    let facts = model.node_input_facts(node.id)?;
    let [a, b] = &facts[..] else {
        return Ok(None);
    };
    // A constant's fact may not hold its value yet (`PropConst` sets it, then folds readers).
    let value = |slot: usize, fact: &TypedFact| {
        fact.konst.clone().or_else(|| {
            let producer = model.node(node.inputs[slot].node);
            producer.op_as::<Const>().map(|c| c.val().clone())
        })
    };
    let (Some(a_value), Some(b_value)) = (value(0, a), value(1, b)) else {
        return Ok(None);
    };
    let output = &node.outputs[0].fact;
    if [a.datum_type, b.datum_type, output.datum_type] != [DatumType::F32; 3]
        || !a_value.is_plain_ram()
        || !b_value.is_plain_ram()
    {
        return Ok(None);
    }
    let bytes = |t: &Tensor| (t.len() * size_of::<f32>()) as u64;
    let within_allowance = node
        .inputs
        .iter()
        .zip([&a_value, &b_value])
        .all(|(outlet, value)| {
            model.outlet_successors(*outlet).len() == 1 || bytes(value) <= CONST_FOLD_MEM_BUDGET
        });
    let Some(shape) = output.shape.as_concrete() else {
        return Ok(None);
    };
    let output_bytes = shape.iter().product::<usize>() as u64 * size_of::<f32>() as u64;
    let input_bytes = bytes(&a_value) + bytes(&b_value);
    if !within_allowance || output_bytes > input_bytes.max(CONST_FOLD_MEM_BUDGET) {
        return Ok(None);
    }
    Ok(Some((a_value, b_value)))
}

/// `a ∘ b` with numpy broadcasting.
fn fold(arithmetic: Arithmetic, a: &Tensor, b: &Tensor) -> TractResult<Tensor> {
    let shape = tract_onnx::tract_core::broadcast::multi_broadcast(&[a.shape(), b.shape()])?;
    let a_values = a.try_as_plain_ram()?;
    let b_values = b.try_as_plain_ram()?;
    let (a_values, b_values) = (a_values.as_slice::<f32>()?, b_values.as_slice::<f32>()?);
    let mut out = vec![0f32; shape.iter().product()];
    let axes = coalesced_axes(&shape, a.shape(), b.shape());
    let mut index = vec![0usize; axes.len()];
    let (mut a_at, mut b_at) = (0usize, 0usize);
    let &(inner, a_step, b_step) = axes.last().unwrap_or(&(1, 0, 0));
    fn operand(values: &[f32], at: usize, step: usize, inner: usize) -> TractResult<&[f32]> {
        let len = if step == 0 {
            1
        } else {
            inner.saturating_sub(1) * step + 1
        };
        values
            .get(at..at + len)
            .context("a broadcast operand is shorter than its shape")
    }
    for row in out.chunks_exact_mut(inner.max(1)) {
        let a_row = operand(a_values, a_at, a_step, inner)?;
        let b_row = operand(b_values, b_at, b_step, inner)?;
        match (a_step, b_step) {
            (1, 1) => {
                for ((o, &x), &y) in row.iter_mut().zip(a_row).zip(b_row) {
                    *o = arithmetic.apply(x, y);
                }
            }
            (1, 0) => {
                for (o, &x) in row.iter_mut().zip(a_row) {
                    *o = arithmetic.apply(x, b_row[0]);
                }
            }
            (0, 1) => {
                for (o, &y) in row.iter_mut().zip(b_row) {
                    *o = arithmetic.apply(a_row[0], y);
                }
            }
            (0, 0) => row.fill(arithmetic.apply(a_row[0], b_row[0])),
            // `coalesced_axes` walks the innermost axis by 0 or 1 element per step.
            steps => anyhow::bail!("no innermost walk by {steps:?} elements"),
        }
        // Next row: odometer over the outer axes, moving each operand by its strides.
        for axis in (0..axes.len() - 1).rev() {
            let (len, a_stride, b_stride) = axes[axis];
            index[axis] += 1;
            a_at += a_stride;
            b_at += b_stride;
            if index[axis] < len {
                break;
            }
            index[axis] = 0;
            a_at -= a_stride * len;
            b_at -= b_stride * len;
        }
    }
    Ok(tract_ndarray::ArrayD::from_shape_vec(&*shape, out)?.into_tensor())
}

/// The broadcast's axes as (length, a's stride, b's stride), elements for the last axis and
/// whole rows of the next one for the others, with runs of axes each operand walks alike merged
/// into one: a kernel times a per-channel scale is one row per channel.
fn coalesced_axes(shape: &[usize], a: &[usize], b: &[usize]) -> Vec<(usize, usize, usize)> {
    let strides = |operand: &[usize]| -> Vec<usize> {
        // The operand's own strides, aligned right, zero where it is broadcast.
        let padded: Vec<usize> = std::iter::repeat_n(1, shape.len() - operand.len())
            .chain(operand.iter().copied())
            .collect();
        let mut strides = vec![0; shape.len()];
        let mut stride = 1;
        for axis in (0..shape.len()).rev() {
            strides[axis] = if padded[axis] == 1 { 0 } else { stride };
            stride *= padded[axis];
        }
        strides
    };
    let (a_strides, b_strides) = (strides(a), strides(b));
    // Merged (length, a stride, b stride) in elements, innermost last.
    let mut axes: Vec<(usize, usize, usize)> = Vec::new();
    for axis in 0..shape.len() {
        let (len, sa, sb) = (shape[axis], a_strides[axis], b_strides[axis]);
        if len == 1 {
            continue;
        }
        if let Some(last) = axes.last_mut()
            && last.1 == sa * len
            && last.2 == sb * len
        {
            *last = (last.0 * len, sa, sb);
            continue;
        }
        axes.push((len, sa, sb));
    }
    if axes.is_empty() {
        axes.push((1, 0, 0));
    }
    axes
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::EvalOp;
    use tract_onnx::tract_core::ops::math;

    fn values(shape: &[usize], seed: f32) -> Tensor {
        let len = shape.iter().product::<usize>();
        let data: Vec<f32> = (0..len)
            .map(|i| ((i as f32 + seed) * 0.73).sin() * 3.0)
            .collect();
        tract_ndarray::ArrayD::from_shape_vec(shape, data)
            .unwrap()
            .into_tensor()
    }

    #[test]
    fn takes_the_place_of_tracts_constant_propagation() {
        let mut optimizer = Optimizer::declutter();
        let passes = optimizer.passes.len();
        assert!(FoldConstants::wrapping(&mut optimizer));
        assert_eq!(optimizer.passes.len(), passes);
        assert!(format!("{:?}", optimizer.passes[0]).starts_with("FoldConstants"));
        let mut wrapped = optimizer;
        assert!(!FoldConstants::wrapping(&mut wrapped), "wrapped twice");
    }

    /// Bit for bit what tract's own evaluation of the op gives, for each broadcast pattern.
    #[test]
    fn folds_like_tract_evaluates() {
        let shapes: &[(&[usize], &[usize])] = &[
            (&[4, 3, 3, 3], &[4, 1, 1, 1]), // kernel × per-channel scale
            (&[4, 1, 1, 1], &[4, 3, 3, 3]),
            (&[2, 3, 4], &[2, 3, 4]),
            (&[2, 3, 4], &[1, 1, 4]),
            (&[2, 3, 4], &[1, 3, 1]),
            (&[3, 1], &[1, 5]), // both sides broadcast
            (&[1, 5], &[3, 1]),
            (&[2, 1, 4], &[1, 3, 1]),
            (&[6], &[1]),
            (&[], &[]),
            (&[2, 0, 3], &[1, 1, 3]),
            (&[5, 1, 7], &[5, 2, 1]),
        ];
        // tract's typed graphs hold binary operands at one rank.
        for &(a_shape, b_shape) in shapes {
            let (a, b) = (values(a_shape, 0.0), values(b_shape, 10.0));
            for (arithmetic, op) in [
                (Arithmetic::Add, math::add()),
                (Arithmetic::Sub, math::sub()),
                (Arithmetic::Mul, math::mul()),
            ] {
                let ours = fold(arithmetic, &a, &b).unwrap();
                let inputs = tvec![a.clone().into_tvalue(), b.clone().into_tvalue()];
                let tracts = op
                    .eval_out_of_plan(inputs)
                    .unwrap()
                    .unwrap()
                    .remove(0)
                    .into_tensor();
                assert_eq!(ours, tracts, "{arithmetic:?} {a_shape:?} {b_shape:?}");
            }
        }
    }
}
