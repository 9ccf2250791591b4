//! tract 0.23.9's constant propagation (`PropConst`, the first declutter pass), with a fold's
//! size checked from the node's output facts before the node is evaluated.
//!
//! tract evaluates a node whose inputs are all constants, and only then drops the result when
//! it is larger than its inputs and the allowance ([`CONST_FOLD_MEM_BUDGET`]); the pass resumes
//! from the same place after each patch, so such a node is evaluated again and again. A QDQ
//! model's int8 embedding tables, dequantized to f32 (four times their size), were built and
//! thrown away on each call: 35% of loading minilm_l3's QDQ variant (383 against
//! onnxruntime's 75 ms). Here a node whose declared numeric outputs already exceed the
//! allowance is passed over unevaluated; every other decision is tract's, so the graph comes
//! out the same.

use anyhow::Context;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::Slice;
use tract_onnx::tract_core::ops::dummy::Dummy;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::source::TypedSource;
use tract_onnx::tract_core::optim::{CONST_FOLD_MEM_BUDGET, OptimizerSession, TypedPass};
use tract_onnx::tract_core::tract_data::TooEarly;

/// tract's `PropConst`; the position it resumes from.
#[derive(Clone, Debug, Default)]
pub struct PropConst(usize);

/// Bytes of these facts, when all are numbers of a concrete shape.
fn declared_bytes<'a>(facts: impl IntoIterator<Item = &'a TypedFact>) -> Option<u64> {
    facts.into_iter().try_fold(0u64, |sum, fact| {
        let bytes = fact
            .datum_type
            .is_number()
            .then(|| fact.mem_size().as_i64())??;
        sum.checked_add(u64::try_from(bytes).ok()?)
    })
}

/// Bytes of an evaluation's results.
fn result_bytes(values: &[TValue]) -> u64 {
    values
        .iter()
        .map(|t| (t.datum_type().size_of() * t.volume()) as u64)
        .sum()
}

impl TypedPass for PropConst {
    fn reset(&mut self) -> TractResult<()> {
        self.0 = 0;
        Ok(())
    }

    fn next(
        &mut self,
        _session: &mut OptimizerSession,
        model: &TypedModel,
    ) -> TractResult<Option<TypedModelPatch>> {
        for node in &model.nodes[self.0..] {
            if let Some(konst) = node.op_as::<Const>()
                && node.outputs[0].fact.konst.is_none()
            {
                self.0 = node.id;
                let mut patch = TypedModelPatch::default();
                let wire = patch.add_const(&node.name, konst.val().clone())?;
                patch.shunt_outside(model, node.id.into(), wire)?;
                return Ok(Some(patch));
            }
            let inputs = model.node_input_facts(node.id)?;
            if node.op_is::<Const>()
                || node.op_is::<Dummy>()
                || node.op_is::<TypedSource>()
                || !inputs.iter().zip(&node.inputs).all(|(fact, outlet)| {
                    fact.konst.is_some()
                        && (model.node(outlet.node).outputs[outlet.slot]
                            .successors
                            .len()
                            == 1
                            || node.op_is::<Slice>()
                            || (fact.datum_type.is_number()
                                && fact
                                    .mem_size()
                                    .as_i64()
                                    .is_some_and(|m| m as u64 <= CONST_FOLD_MEM_BUDGET)))
                })
            {
                continue;
            }
            let input_mem: u64 = inputs
                .iter()
                .map(|f| f.mem_size().as_i64().unwrap_or(i64::MAX) as u64)
                .sum();
            // The one change: a result tract would drop for its size is not computed.
            let allowance = input_mem.max(CONST_FOLD_MEM_BUDGET);
            if declared_bytes(node.outputs.iter().map(|o| &o.fact)).is_some_and(|b| b > allowance) {
                continue;
            }
            let values = inputs
                .iter()
                .map(|f| f.konst.clone().map(|k| k.into_tvalue()))
                .collect::<Option<TVec<TValue>>>();
            let Some(values) = values else { continue };
            match node.op.eval_out_of_plan(values) {
                Ok(None) => (),
                Ok(Some(mut res)) => {
                    self.0 = node.id;
                    if result_bytes(&res) > allowance {
                        continue;
                    }
                    let mut node = node;
                    loop {
                        let Some(succ) = model.single_succ(node.id)? else {
                            break;
                        };
                        if succ.inputs.len() > 1 {
                            break;
                        }
                        // As above, before evaluating.
                        if declared_bytes(succ.outputs.iter().map(|o| &o.fact))
                            .is_some_and(|b| b > allowance)
                        {
                            break;
                        }
                        let Ok(Some(succ_res)) = succ.op.eval_out_of_plan(res.clone()) else {
                            break;
                        };
                        if result_bytes(&succ_res) > allowance {
                            break;
                        }
                        res = succ_res;
                        node = succ;
                    }
                    let mut patch = TypedModelPatch::default();
                    for (ix, output) in res.into_iter().enumerate() {
                        let exotic_fact = model
                            .outlet_fact(OutletId::new(node.id, ix))?
                            .exotic_fact
                            .clone();
                        let name = if ix > 0 {
                            format!("{}.{ix}", node.name)
                        } else {
                            node.name.clone()
                        };
                        let value = output.into_arc_tensor();
                        let wire = match exotic_fact {
                            // Its fact built without tract's scalar scan of the values.
                            None => super::constant_facts::add_const(&mut patch, name, value)?,
                            Some(exotic) => {
                                let op = Const::new_with_exotic_fact(value, exotic)?;
                                patch.wire_node(name, op, &[])?[0]
                            }
                        };
                        patch.shunt_outside(model, (node.id, ix).into(), wire)?;
                    }
                    self.0 = node.id;
                    return Ok(Some(patch));
                }
                Err(e) => {
                    if !e.root_cause().is::<TooEarly>() {
                        Err(e).with_context(|| format!("Eager eval {node} during optimisation"))?;
                    }
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tract_onnx::tract_core::internal::*;

    /// Its scalar input spread to `len` values, counting its evaluations.
    #[derive(Debug, Clone)]
    struct Spread {
        len: usize,
        evaluations: Arc<AtomicUsize>,
    }

    impl PartialEq for Spread {
        fn eq(&self, other: &Spread) -> bool {
            self.len == other.len
        }
    }

    impl Eq for Spread {}

    impl Op for Spread {
        fn name(&self) -> StaticName {
            "Spread".into()
        }
        op_as_typed_op!();
    }

    impl EvalOp for Spread {
        op_out_of_plan!();

        fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
            self.evaluations.fetch_add(1, Ordering::SeqCst);
            let value = *inputs[0]
                .try_as_plain_ram()?
                .as_slice::<f32>()?
                .first()
                .unwrap();
            Ok(tvec!(tensor1(&vec![value; self.len]).into_tvalue()))
        }
    }

    impl TypedOp for Spread {
        fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
            Ok(tvec!(f32::fact([self.len])))
        }
        as_op!();
    }

    /// A constant spread to `len` values, a model output, decluttered as Tessera does.
    fn decluttered(len: usize) -> (TypedModel, usize) {
        let evaluations = Arc::new(AtomicUsize::new(0));
        let mut model = TypedModel::default();
        // A constant whose fact does not hold its value yet, as the typed graph of a loaded
        // model has them: the pass gives it its value, then comes to its reader.
        let konst = Const::new(tensor1(&[1.5f32]).into_arc_tensor()).unwrap();
        let one = model.add_node("one", konst, tvec!(f32::fact([1]))).unwrap();
        let one = OutletId::new(one, 0);
        let spread = Spread {
            len,
            evaluations: evaluations.clone(),
        };
        let out = model.wire_node("spread", spread, &[one]).unwrap();
        model.select_output_outlets(&out).unwrap();
        crate::model::optimizer::declutter(&mut model, true).unwrap();
        (model, evaluations.load(Ordering::SeqCst))
    }

    #[test]
    fn a_fold_larger_than_its_allowance_is_never_computed() {
        // 8 MiB of f32 from 4 bytes: past the 4 MiB allowance, so tract would drop the result.
        let (model, evaluations) = decluttered(2 << 20);
        assert_eq!(evaluations, 0);
        assert!(model.nodes.iter().any(|n| n.op_is::<Spread>()));
    }

    #[test]
    fn a_fold_within_its_allowance_is_still_made() {
        let (model, evaluations) = decluttered(64);
        assert!(evaluations >= 1);
        assert!(!model.nodes.iter().any(|n| n.op_is::<Spread>()));
        let output = model.output_outlets().unwrap()[0];
        let konst = model.outlet_fact(output).unwrap().konst.clone().unwrap();
        let values = konst.try_as_plain_ram().unwrap();
        assert_eq!(values.as_slice::<f32>().unwrap(), &[1.5; 64]);
    }
}
