//! Feeds tract's element-wise kernels tensors whose strides are the natural ones for their shape.
//!
//! tract's `Tensor::insert_axis` gives a new size-1 axis the stride of the axis after it, so a
//! tensor whose rank was raised (a BatchNorm scale made `[1, C, 1, 1]`; a pooled plane given its
//! batch axis back) can carry strides such as `[1, 1, 1, 1]` where `[C, 1, 1, 1]` is natural. The
//! bytes are laid out the same either way — a size-1 axis is never stepped along — but tract's
//! binary element-wise ops (`OptBinChain`, `OptBinByScalar`, `OptBinUnicast`) take their SIMD path
//! only for natural strides and otherwise fall back to a generic per-element broadcast, about 20×
//! slower: DenseNet-121's BatchNorm + ReLU chains took 161 of its 308 ms per run.
//!
//! So a cpu plan, once optimized, gets (1) its constants rebuilt with natural strides, once, and
//! (2) those element-wise ops wrapped in [`NaturalStrides`], which fixes the strides of its inputs
//! before each run (metadata only; a tensor another op still holds is copied first).

use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::binary::{
    OptBinByScalar, OptBinChain, OptBinUnicast,
};
use tessera_core::tract_onnx::tract_core::ops::konst::Const;

/// Whether `tensor`'s strides are the natural (row-major) ones for its shape.
fn has_natural_strides(tensor: &Tensor) -> bool {
    tensor.strides() == &*Tensor::natural_strides(tensor.shape())
}

/// Whether `tensor` differs from natural strides only on size-1 axes, which no index steps
/// along: then its elements already sit in row-major order and only the strides need fixing.
fn only_unit_axes_differ(tensor: &Tensor) -> bool {
    let natural = Tensor::natural_strides(tensor.shape());
    tensor.len() == tensor.shape().iter().product::<usize>()
        && tensor
            .shape()
            .iter()
            .zip(tensor.strides().iter().zip(natural.iter()))
            .all(|(&dim, (stride, natural))| dim == 1 || stride == natural)
}

/// `tensor` with natural strides; only for one whose size-1 axes alone were off (no element
/// moves).
fn naturalized(mut tensor: Tensor) -> TractResult<Tensor> {
    let shape = tensor.shape().to_vec();
    // tract recomputes the strides only when the shape changes: two reshapes.
    tensor.set_shape(&[tensor.len()])?;
    tensor.set_shape(&shape)?;
    Ok(tensor)
}

/// Whether `tensor` is one to give natural strides: off only on its size-1 axes.
fn needs_natural_strides(tensor: &Tensor) -> bool {
    !has_natural_strides(tensor) && only_unit_axes_differ(tensor)
}

/// `value` with natural strides, if only its size-1 axes were off; otherwise unchanged.
fn naturalize_value(value: TValue) -> TractResult<TValue> {
    if !needs_natural_strides(&value) {
        return Ok(value);
    }
    Ok(naturalized(value.into_tensor())?.into_tvalue())
}

/// A tract element-wise op whose fast path needs natural strides, fed inputs that have them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NaturalStrides {
    pub inner: Box<dyn TypedOp>,
}

impl NaturalStrides {
    /// Whether `op` is one of tract's ops that take their SIMD path only on natural strides.
    fn needed_by(op: &dyn TypedOp) -> bool {
        op.is::<OptBinChain>() || op.is::<OptBinByScalar>() || op.is::<OptBinUnicast>()
    }
}

impl Op for NaturalStrides {
    /// The wrapped op's name: profiles and diagnostics show what actually computes.
    fn name(&self) -> StaticName {
        self.inner.name()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        let mut info = self.inner.info()?;
        info.push("inputs given natural strides first".into());
        Ok(info)
    }

    op_as_typed_op!();
}

impl EvalOp for NaturalStrides {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let inputs = inputs
            .into_iter()
            .map(naturalize_value)
            .collect::<TractResult<TVec<_>>>()?;
        self.inner.eval(ctx, inputs)
    }

    fn forwards_input(&self) -> Option<usize> {
        self.inner.forwards_input()
    }
}

impl TypedOp for NaturalStrides {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.inner.output_facts(inputs)
    }

    fn cost(&self, inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        self.inner.cost(inputs)
    }

    as_op!();
}

/// Rebuilds `model`'s constants with natural strides and wraps the element-wise ops that need
/// them in [`NaturalStrides`]. Run on an optimized plan: nothing fuses across the wrapper.
/// Returns (constants rebuilt, ops wrapped).
pub fn naturalize(model: &mut TypedModel) -> TractResult<(usize, usize)> {
    let (mut constants, mut wrapped) = (0, 0);
    for id in 0..model.nodes().len() {
        let op = &model.node(id).op;
        if let Some(konst) = op.downcast_ref::<Const>() {
            let tensor = konst.val();
            if konst.exotic_fact().is_some() || !needs_natural_strides(tensor) {
                continue;
            }
            let tensor = Arc::new(naturalized(tensor.as_ref().clone())?);
            model.node_mut(id).op = Box::new(Const::new(tensor.clone())?);
            let outlet = OutletId::new(id, 0);
            let fact = model.outlet_fact(outlet)?.clone();
            if fact.konst.is_some() {
                model.set_outlet_fact(
                    outlet,
                    TypedFact {
                        konst: Some(tensor),
                        ..fact
                    },
                )?;
            }
            constants += 1;
        } else if NaturalStrides::needed_by(op.as_ref()) {
            let inner = op.clone();
            model.node_mut(id).op = Box::new(NaturalStrides { inner });
            wrapped += 1;
        }
    }
    Ok((constants, wrapped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::tract_onnx::tract_core::ops::math::{add, mul};

    /// `values` shaped `[1, n, 1]` through `insert_axis`, as tract's rank fixes do.
    fn raised(values: &[f32]) -> Tensor {
        let mut tensor = tensor1(values);
        tensor.insert_axis(1).unwrap();
        tensor.insert_axis(0).unwrap();
        tensor
    }

    fn values(tensor: &Tensor) -> Vec<f32> {
        tensor
            .to_plain_array_view::<f32>()
            .unwrap()
            .iter()
            .copied()
            .collect()
    }

    #[test]
    fn a_raised_rank_tensor_gets_natural_strides_and_keeps_its_values() {
        let tensor = raised(&[1., 2., 3.]);
        assert_eq!(tensor.shape(), &[1, 3, 1]);
        assert!(
            !has_natural_strides(&tensor),
            "insert_axis left {:?}",
            tensor.strides()
        );
        assert!(only_unit_axes_differ(&tensor));

        let fixed = naturalized(tensor.clone()).unwrap();
        assert!(has_natural_strides(&fixed));
        assert_eq!(fixed.shape(), tensor.shape());
        assert_eq!(values(&fixed), values(&tensor));
    }

    #[test]
    fn constants_are_rebuilt_once_and_element_wise_ops_wrapped() {
        // y = x * scale + 0.5 per channel, as a BatchNorm becomes; the scale's rank raised.
        let (channels, plane) = (3, 32);
        let mut model = TypedModel::default();
        let x = model
            .add_source("x", f32::fact([1, channels, plane]))
            .unwrap();
        let scale = model.add_const("scale", raised(&[1., 2., 3.])).unwrap();
        let shift = model
            .add_const("shift", tensor3(&[[[0.5f32], [0.5], [0.5]]]))
            .unwrap();
        let scaled = model.wire_node("scaled", mul(), &[x, scale]).unwrap();
        let shifted = model
            .wire_node("shifted", add(), &[scaled[0], shift])
            .unwrap();
        model.select_output_outlets(&shifted).unwrap();
        let mut model = model.into_optimized().unwrap();

        let (constants, wrapped) = naturalize(&mut model).unwrap();
        let ops: Vec<_> = model.nodes().iter().map(|n| n.op.name()).collect();
        assert!(constants >= 1, "the raised scale is rebuilt: {ops:?}");
        assert!(wrapped >= 1, "the element-wise op is wrapped: {ops:?}");
        for node in model.nodes() {
            if let Some(konst) = node.op_as::<Const>() {
                assert!(has_natural_strides(konst.val()), "{}", node.name);
            }
        }
        assert_eq!(
            naturalize(&mut model).unwrap().0,
            0,
            "nothing left to rebuild"
        );

        // The wrapped plan computes the definition, also from an input with odd strides.
        let x: Vec<f32> = (0..channels * plane).map(|i| i as f32).collect();
        let mut input = tract_ndarray::Array2::from_shape_vec((channels, plane), x.clone())
            .unwrap()
            .into_tensor();
        input.insert_axis(0).unwrap();
        assert!(!has_natural_strides(&input));
        let outputs = model
            .into_runnable()
            .unwrap()
            .run(tvec!(input.into_tvalue()))
            .unwrap();
        let expected: Vec<f32> = x
            .iter()
            .enumerate()
            .map(|(i, v)| v * (1 + i / plane) as f32 + 0.5)
            .collect();
        assert_eq!(values(&outputs[0]), expected);
    }
}
