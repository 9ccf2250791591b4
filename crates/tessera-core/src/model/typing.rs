//! The typed graph of an inference graph that [`super::preflight::analyse`] has analysed.
//!
//! tract's `into_typed` analyses the graph twice more before translating it: once as it starts
//! and once after its incorporation passes, which change nothing in tract 0.23.9 (no op
//! implements `incorporate`). After Tessera's own analysis both find nothing new and cost a
//! whole pass of every node's inference rules each (ppocr_mobile_cls: a fifth of its load).
//! [`into_typed`] is tract-hir 0.23.9's translation without those two analyses.

use anyhow::Context;
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::model::translator::Translate;
use tract_onnx::tract_hir::infer::{Factoid, InferenceOp};
use tract_onnx::tract_hir::internal::{EvalContext, InferenceNode, SpecialOps, format_err};

/// `graph`, analysed already, as a typed graph.
pub fn into_typed(graph: InferenceModel) -> TractResult<TypedModel> {
    let graph = graph.into_compact()?;
    ToTyped.translate_model(&graph)
}

/// tract-hir 0.23.9's `ToTypedTranslator`: a node whose outputs inference knows (and that keeps
/// no state) becomes constants, any other node its op's typed form.
#[derive(Debug)]
struct ToTyped;

impl Translate<InferenceFact, Box<dyn InferenceOp>, TypedFact, Box<dyn TypedOp>> for ToTyped {
    fn translate_node(
        &self,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let facts = source.node_output_facts(node.id)?;
        if !InferenceModel::is_source(&node.op)
            && node.op.state(&EvalContext::out_of_plan())?.is_none()
            && facts.iter().all(|f| f.value.is_concrete())
        {
            return facts
                .iter()
                .enumerate()
                .map(|(ix, fact)| {
                    let value = fact.value.concretize().ok_or_else(|| {
                        format_err!("node '{}': output {ix} has no value", node.name)
                    })?;
                    super::constant_facts::add_const(target, format!("{}.{ix}", node.name), value)
                })
                .collect();
        }
        let outputs = node.op.to_typed(source, node, target, mapping)?;
        for output in &outputs {
            target.outlet_fact(*output)?.consistent().with_context(|| {
                format!(
                    "checking the fact of {output:?} after translating {:?}",
                    node.op
                )
            })?;
        }
        Ok(outputs)
    }
}
