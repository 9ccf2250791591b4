//! Constants' facts without rescanning their values.
//!
//! tract 0.23.9 tests a constant's every value for uniformity each time it builds the
//! constant's fact (`TypedFact::try_from`), and compares a new constant with every other one,
//! value by value, to share equal ones. Both loops stop at the first difference, so weights of
//! a trained model cost nothing; a model whose weights are uniform (a `ConstantOfShape`, as in
//! the model zoo's "light" models) had them scanned five times per plan, by loops that do not
//! vectorize (light_vgg19: 44% of load and first run, 548 MB a scan). Here f32 values are
//! compared by vectorized loops, and the declutter pass that refreshes facts skips constants.

use std::sync::Arc;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::optim::{Optimizer, OptimizerSession, TypedPass};

/// Values compared per step: a vectorized block, with an early exit between blocks.
const BLOCK: usize = 1024;

/// tract's `add_const` on a typed graph: an equal constant already there is shared, otherwise a
/// node is added with the fact `TypedFact::try_from` would give.
pub fn add_const(
    model: &mut TypedModel,
    name: String,
    value: Arc<Tensor>,
) -> TractResult<OutletId> {
    for node in &model.nodes {
        if node.op_is::<Const>()
            && let Some(other) = node.outputs.first().and_then(|o| o.fact.konst.as_ref())
            && equal(other, &value)
        {
            return Ok(node.id.into());
        }
    }
    let fact = fact_of(value.clone())?;
    let name = model.unique_name(name).into_owned();
    let op = match &fact.exotic_fact {
        Some(exotic) => Const::new_with_exotic_fact(value, exotic.clone())?,
        None => Const::new(value)?,
    };
    model.add_node(name, op, tvec!(fact)).map(OutletId::from)
}

/// `TypedFact::try_from(value)`, its uniformity tested by [`uniform_value`].
pub fn fact_of(value: Arc<Tensor>) -> TractResult<TypedFact> {
    let Some(uniform) = uniform_value(&value) else {
        return TypedFact::try_from(value);
    };
    // As tract's: a `uniform_tdim` only for one-element values, none here.
    let mut fact = TypedFact::dt_shape(value.datum_type(), value.shape());
    fact.exotic_fact = value.exotic_fact()?;
    fact.uniform = uniform.map(Arc::new);
    fact.konst = Some(value);
    Ok(fact)
}

/// For an f32 tensor of two or more values in memory: `Some(its value as a scalar)` when all
/// are equal (IEEE: no NaN, -0 equals 0), `Some(None)` when not, as tract's `as_uniform`. `None`
/// for any other tensor, left to tract.
fn uniform_value(value: &Tensor) -> Option<Option<Tensor>> {
    let values = f32_values(value)?;
    let (&first, rest) = values.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let uniform = rest.chunks(BLOCK).all(|block| {
        block
            .iter()
            .map(|&v| usize::from(v == first))
            .sum::<usize>()
            == block.len()
    });
    Some(uniform.then(|| tensor0(first)))
}

/// tract's equality of tensors (`Tensor::eq`: same type, shape and values, NaN equal to NaN),
/// f32 values compared by blocks.
fn equal(a: &Tensor, b: &Tensor) -> bool {
    if a.datum_type() != b.datum_type() || a.shape() != b.shape() {
        return false;
    }
    let (Some(a_values), Some(b_values)) = (f32_values(a), f32_values(b)) else {
        return a == b;
    };
    a_values
        .chunks(BLOCK)
        .zip(b_values.chunks(BLOCK))
        .all(|(a, b)| {
            // `|` and `&`, not `||` and `&&`: no branch per value, so the loop vectorizes.
            let same = |(x, y): (&f32, &f32)| usize::from((x == y) | (x.is_nan() & y.is_nan()));
            a.iter().zip(b).map(same).sum::<usize>() == a.len()
        })
}

/// The values of an f32 tensor held in memory.
fn f32_values(value: &Tensor) -> Option<&[f32]> {
    if value.datum_type() != f32::datum_type() {
        return None;
    }
    value.try_as_plain_ram().ok()?.as_slice::<f32>().ok()
}

/// tract's `PropagateUniformTdim` pass, constants' facts not rebuilt: only a one-element
/// constant has a `uniform_tdim`, so a larger one's is `None` without looking at its values.
/// For the other nodes, as tract's: their `output_facts` again, until no annotation changes.
#[derive(Clone, Debug, Default)]
pub struct PropagateUniformTdim;

impl PropagateUniformTdim {
    /// Puts itself in place of `optimizer`'s pass of that name; false, and `optimizer`
    /// unchanged, without one.
    pub fn replacing(optimizer: &mut Optimizer) -> bool {
        super::optimizer::replace_pass(optimizer, "PropagateUniformTdim", |_| {
            Box::new(PropagateUniformTdim)
        })
    }
}

impl TypedPass for PropagateUniformTdim {
    fn reset(&mut self) -> TractResult<()> {
        Ok(())
    }

    fn next(
        &mut self,
        _session: &mut OptimizerSession,
        _model: &TypedModel,
    ) -> TractResult<Option<TypedModelPatch>> {
        Ok(None)
    }

    fn run_direct(&mut self, model: &mut TypedModel) -> TractResult<bool> {
        let order = model.eval_order()?;
        let mut any_changed = false;
        loop {
            let mut changed = false;
            for &id in &order {
                let node = model.node(id);
                let fresh: TVec<Option<TDim>> =
                    if node.op_as::<Const>().is_some_and(|k| k.val().len() != 1) {
                        tvec![None]
                    } else {
                        let Some(op) = node.op.as_typed() else {
                            continue;
                        };
                        let inputs = node
                            .inputs
                            .iter()
                            .map(|i| model.outlet_fact(*i).cloned())
                            .collect::<TractResult<TVec<_>>>()?;
                        let Ok(facts) = op.output_facts(&inputs.iter().collect::<TVec<_>>()) else {
                            continue;
                        };
                        facts.into_iter().map(|fact| fact.uniform_tdim).collect()
                    };
                let outputs = &mut model.node_mut(id).outputs;
                for (output, uniform_tdim) in outputs.iter_mut().zip(fresh) {
                    let output = &mut output.fact;
                    if output.uniform_tdim != uniform_tdim {
                        output.uniform_tdim = uniform_tdim;
                        changed = true;
                    }
                }
            }
            if !changed {
                return Ok(any_changed);
            }
            any_changed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::math::add;

    /// Tensors whose facts and equalities tract decides by its own loops.
    fn samples() -> Vec<Arc<Tensor>> {
        let nan = f32::NAN;
        let long_uniform = vec![0.25f32; 3 * BLOCK + 7];
        let mut late_difference = long_uniform.clone();
        late_difference[3 * BLOCK + 6] = 0.5;
        vec![
            tensor1(&long_uniform),
            tensor1(&late_difference),
            tensor1(&vec![0.25f32; 7 * BLOCK])
                .into_shape(&[7, BLOCK])
                .unwrap(),
            tensor1(&[nan, nan]),
            tensor1(&[nan]),
            tensor1(&[0.0f32, -0.0]),
            tensor1(&[-0.0f32, 0.0, 0.0]),
            tensor1(&[1.0f32, 1.0, nan]),
            tensor1(&[2.0f32]),
            tensor0(3.0f32),
            Tensor::zero::<f32>(&[0]).unwrap(),
            tensor1(&[5i64, 5, 5]),
            tensor1(&[5i64]),
            tensor1(&[true, true]),
        ]
        .into_iter()
        .map(Arc::new)
        .collect()
    }

    #[test]
    fn facts_are_tracts() {
        for value in samples() {
            let ours = fact_of(value.clone()).unwrap();
            let tracts = TypedFact::try_from(value.clone()).unwrap();
            assert_eq!(format!("{ours:?}"), format!("{tracts:?}"), "{value:?}");
            assert_eq!(ours.uniform, tracts.uniform, "{value:?}");
            assert_eq!(ours.uniform_tdim, tracts.uniform_tdim, "{value:?}");
            assert_eq!(ours.shape, tracts.shape, "{value:?}");
            assert_eq!(ours.konst, tracts.konst, "{value:?}");
            assert!(ours.exotic_fact.is_none() && tracts.exotic_fact.is_none());
        }
    }

    #[test]
    fn equality_is_tracts() {
        let samples = samples();
        for a in &samples {
            for b in &samples {
                assert_eq!(equal(a, b), a == b, "{a:?} == {b:?}");
            }
        }
    }

    #[test]
    fn equal_constants_are_shared_and_others_added() {
        let mut model = TypedModel::default();
        let mut ids = vec![];
        for value in samples().into_iter().chain(samples()) {
            ids.push(add_const(&mut model, "k".into(), value).unwrap());
        }
        let (first, second) = ids.split_at(ids.len() / 2);
        assert_eq!(first, second);
        let distinct: std::collections::HashSet<_> = first.iter().collect();
        // NaN equals NaN to tract, so every sample is its own constant.
        assert_eq!(distinct.len(), first.len());
        assert!(model.nodes.iter().all(|n| n.name.starts_with('k')));
    }

    /// tract's pass and this one leave the same `uniform_tdim` on every wire.
    #[test]
    fn propagation_annotates_as_tracts() {
        let mut model = TypedModel::default();
        let x = model.add_source("x", i64::fact([3])).unwrap();
        let mut wire = x;
        for (ix, value) in samples().into_iter().enumerate() {
            let k = add_const(&mut model, format!("k{ix}"), value.clone()).unwrap();
            if value.datum_type() == i64::datum_type() && value.len() == 1 {
                wire = model
                    .wire_node(format!("add{ix}"), add(), &[wire, k])
                    .unwrap()[0];
            }
        }
        model.select_output_outlets(&[wire]).unwrap();
        // Stale annotations, as a shunt can leave them, for both passes to refresh.
        for node in model.nodes.iter_mut() {
            node.outputs[0].fact.uniform_tdim = Some(TDim::Val(9));
        }
        let mut tracts_model = model.clone();
        let mut tracts = Optimizer::declutter()
            .passes
            .into_iter()
            .find(|pass| format!("{pass:?}") == "PropagateUniformTdim")
            .unwrap();
        assert!(tracts.run_direct(&mut tracts_model).unwrap());
        assert!(PropagateUniformTdim.run_direct(&mut model).unwrap());
        let annotations = |model: &TypedModel| {
            model
                .nodes
                .iter()
                .map(|n| n.outputs[0].fact.uniform_tdim.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(annotations(&model), annotations(&tracts_model));
        assert!(annotations(&model).contains(&Some(TDim::Val(5))));
        assert!(annotations(&model).contains(&None));
    }

    #[test]
    fn replaces_tracts_pass_in_declutter() {
        let mut optimizer = Optimizer::declutter();
        let count = optimizer.passes.len();
        assert!(PropagateUniformTdim::replacing(&mut optimizer));
        assert_eq!(optimizer.passes.len(), count);
        let mut codegen = Optimizer::codegen();
        assert!(!PropagateUniformTdim::replacing(&mut codegen));
    }
}
