//! tract's `ConcatThenEinsum` declutter pass, its splits kept only where the concatenation
//! then goes away.
//!
//! The pass replaces a product that sums over a concatenated axis (a 1×1 convolution reading a
//! `Concat` of branches) by one product per concatenated part and the sum of their results. That
//! saves copying the parts only if nothing else reads the concatenation; when another reader
//! keeps it (an Inception block's pool branch, a 3×3 convolution), the split only adds partial
//! products, each with a shorter depth, and full-size additions, which also keep a following
//! BatchNorm out of the product's weights.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::TypedConcat;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::optim::{Optimizer, OptimizerSession, TypedPass};

/// tract's pass, its patches passed on only when every reader of the concatenation it splits
/// over is a product the pass can split too.
#[derive(Clone, Debug)]
pub struct SplitOnlyDroppedConcats {
    tracts: Box<dyn TypedPass>,
}

impl SplitOnlyDroppedConcats {
    /// Wraps `optimizer`'s `ConcatThenEinsum` pass; false, and `optimizer` unchanged, without one.
    pub fn wrapping(optimizer: &mut Optimizer) -> bool {
        super::optimizer::replace_pass(optimizer, "ConcatThenEinsum", |tracts| {
            Box::new(SplitOnlyDroppedConcats { tracts })
        })
    }
}

impl TypedPass for SplitOnlyDroppedConcats {
    fn reset(&mut self) -> TractResult<()> {
        self.tracts.reset()
    }

    fn next(
        &mut self,
        session: &mut OptimizerSession,
        model: &TypedModel,
    ) -> TractResult<Option<TypedModelPatch>> {
        // tract's pass moves on to the next input each call: a patch passed over is not offered again.
        while let Some(patch) = self.tracts.next(session, model)? {
            if patch
                .shunts
                .keys()
                .all(|outlet| concats_dropped(model, model.node(outlet.node)))
            {
                return Ok(Some(patch));
            }
        }
        Ok(None)
    }
}

/// Whether every concatenation `product` reads is read only by products summing over its axis.
fn concats_dropped(model: &TypedModel, product: &TypedNode) -> bool {
    product.inputs.iter().all(|input| {
        let node = model.node(input.node);
        let Some(concat) = node.op_as::<TypedConcat>() else {
            return true;
        };
        node.outputs.get(input.slot).is_some_and(|output| {
            output
                .successors
                .iter()
                .all(|reader| sums_over(model.node(reader.node), reader.slot, concat.axis))
        })
    })
}

/// Whether `node` is a two-operand product that sums over `axis` of its operand `slot`.
fn sums_over(node: &TypedNode, slot: usize, axis: usize) -> bool {
    let Some(einsum) = node.op_as::<EinSum>() else {
        return false;
    };
    node.inputs.len() == 2
        && einsum.axes.iter_all_axes().any(|a| {
            a.inputs.get(slot).is_some_and(|at| at.as_slice() == [axis])
                && a.outputs.first().is_some_and(|out| out.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::math::add;

    /// `w · concat(a, b)` summed over the concatenated axis, and, with `kept`, the
    /// concatenation also read by an addition: (the graph after declutter, the output for
    /// `a` = 1..4, `b` = 5..8 as 2×2 blocks).
    fn decluttered(kept: bool) -> (TypedModel, Vec<f32>) {
        let mut model = TypedModel::default();
        let a = model.add_source("a", f32::fact([2, 2])).unwrap();
        let b = model.add_source("b", f32::fact([2, 2])).unwrap();
        let concat = model
            .wire_node("concat", TypedConcat { axis: 0 }, &[a, b])
            .unwrap()[0];
        let w = model
            .add_const("w", tensor2(&[[1f32, 2., 3., 4.], [5., 6., 7., 8.]]))
            .unwrap();
        let product = EinSum::new("mk,kn->mn".parse().unwrap(), f32::datum_type());
        let mut outputs = model
            .wire_node("product", product, &[w, concat])
            .unwrap()
            .to_vec();
        if kept {
            outputs.extend(model.wire_node("twice", add(), &[concat, concat]).unwrap());
        }
        model.select_output_outlets(&outputs).unwrap();
        super::super::optimizer::declutter(&mut model, true).unwrap();
        let inputs = tvec![
            tensor2(&[[1f32, 2.], [3., 4.]]).into_tvalue(),
            tensor2(&[[5f32, 6.], [7., 8.]]).into_tvalue(),
        ];
        let plan = TypedSimplePlan::new(model.clone()).unwrap();
        let out = plan.run(inputs).unwrap();
        let values = out[0]
            .try_as_plain_ram()
            .unwrap()
            .as_slice::<f32>()
            .unwrap()
            .to_vec();
        (model, values)
    }

    fn count(model: &TypedModel, op: &str) -> usize {
        model.nodes.iter().filter(|n| n.op.name() == op).count()
    }

    #[test]
    fn a_concatenation_read_only_by_products_is_split_away() {
        let (model, values) = decluttered(false);
        assert_eq!(count(&model, "Concat"), 0, "{model}");
        assert_eq!(count(&model, "EinSum"), 2, "{model}");
        // [1 2 3 4; 5 6 7 8] · [1 2; 3 4; 5 6; 7 8]
        assert_eq!(values, [50., 60., 114., 140.]);
    }

    #[test]
    fn a_concatenation_another_op_keeps_is_not_split() {
        let (model, values) = decluttered(true);
        assert_eq!(count(&model, "Concat"), 1, "{model}");
        assert_eq!(count(&model, "EinSum"), 1, "{model}");
        assert_eq!(values, [50., 60., 114., 140.]);
    }

    #[test]
    fn wraps_tracts_pass_in_declutter() {
        let mut optimizer = Optimizer::declutter();
        let count = optimizer.passes.len();
        assert!(SplitOnlyDroppedConcats::wrapping(&mut optimizer));
        assert_eq!(optimizer.passes.len(), count);
        assert!(!SplitOnlyDroppedConcats::wrapping(&mut optimizer));
    }
}
