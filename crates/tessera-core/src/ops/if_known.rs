//! [`If`](https://onnx.ai/onnx/operators/onnx__If.html) whose condition is known when the plan is
//! built (often once inputs are folded: silero-vad branches on its sample rate).
//!
//! tract-onnx's `If` analyses and converts *both* branches; a branch that is never taken may not
//! even be well-typed for the actual inputs (silero_vad_v5's 8 kHz branch fails to analyse at
//! 16 kHz). This `If` analyses only the taken branch when the condition is a known constant and
//! inlines that branch into the typed graph; with an unknown condition it behaves as tract's.
//! The taken branch is analysed by Tessera's analysis with its own nodes' checks
//! ([`preflight`]), as the main graph is: tract's would run its ops on values they panic on.

use crate::model::preflight::{self, Preflight};
use tract_onnx::model::{ParseResult, ParsingContext};
use tract_onnx::pb::{GraphProto, NodeProto};
use tract_onnx::tract_hir::internal::*;

/// Builds the op from an ONNX `If` node.
pub fn parse(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let then_proto: &GraphProto = node.get_attr("then_branch")?;
    let else_proto: &GraphProto = node.get_attr("else_branch")?;
    let ParseResult {
        model: then_body,
        unresolved_inputs: then_inputs,
        ..
    } = ctx.parse_graph(then_proto)?;
    let ParseResult {
        model: else_body,
        unresolved_inputs: else_inputs,
        ..
    } = ctx.parse_graph(else_proto)?;
    let mut outer: Vec<String> = then_inputs.iter().chain(&else_inputs).cloned().collect();
    outer.sort();
    outer.dedup();
    // Outer input 0 is the condition; branch input k reads outer input mapping[k].
    let mapping = |names: &[String]| -> Vec<usize> {
        names
            .iter()
            .map(|n| outer.iter().position(|o| o == n).map_or(0, |p| p + 1))
            .collect()
    };
    let checks = |proto: &GraphProto, body: &InferenceModel, outer: &[String]| {
        Preflight::of_parsed(proto, body, outer.len()).map_err(|e| anyhow!(e))
    };
    let then_preflight = checks(then_proto, &then_body, &then_inputs)?;
    let else_preflight = checks(else_proto, &else_body, &else_inputs)?;
    let then_branch = Branch {
        body: then_body,
        inputs: mapping(&then_inputs),
        preflight: then_preflight,
    };
    let else_branch = Branch {
        body: else_body,
        inputs: mapping(&else_inputs),
        preflight: else_preflight,
    };
    let inner = tract_onnx::ops::logic::If::new(
        then_branch.body.clone(),
        then_branch.inputs.clone(),
        else_branch.body.clone(),
        else_branch.inputs.clone(),
    );
    Ok((
        Box::new(IfKnown {
            inner,
            then_branch,
            else_branch,
        }),
        outer,
    ))
}

#[derive(Debug, Clone)]
struct Branch {
    body: InferenceModel,
    /// For each body input, the index of the outer input it reads.
    inputs: Vec<usize>,
    /// Tessera's checks of the body's nodes, run as the taken branch is analysed.
    preflight: Preflight,
}

#[derive(Debug, Clone)]
struct IfKnown {
    /// tract's `If`, used whenever the condition is unknown.
    inner: tract_onnx::ops::logic::If,
    then_branch: Branch,
    else_branch: Branch,
}

impl PartialEq for IfKnown {
    fn eq(&self, _: &Self) -> bool {
        false
    }
}
impl Eq for IfKnown {}

fn known_condition(fact: &InferenceFact) -> Option<bool> {
    fact.value
        .concretize()
        .and_then(|t| t.cast_to_scalar::<bool>().ok())
}

impl IfKnown {
    fn taken(&self, condition: bool) -> &Branch {
        if condition {
            &self.then_branch
        } else {
            &self.else_branch
        }
    }
}

impl Op for IfKnown {
    fn name(&self) -> StaticName {
        "If".into()
    }

    not_a_typed_op!();
}

impl EvalOp for IfKnown {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.inner.eval(ctx, inputs)
    }
}

impl InferenceOp for IfKnown {
    fn infer_facts(
        &mut self,
        inputs: TVec<&InferenceFact>,
        outputs: TVec<&InferenceFact>,
        observed: TVec<&InferenceFact>,
    ) -> TractResult<(
        TVec<InferenceFact>,
        TVec<InferenceFact>,
        TVec<InferenceFact>,
    )> {
        let Some(condition) = known_condition(inputs[0]) else {
            return self.inner.infer_facts(inputs, outputs, observed);
        };
        let mut inputs: TVec<InferenceFact> = inputs.into_iter().cloned().collect();
        let mut outputs: TVec<InferenceFact> = outputs.into_iter().cloned().collect();
        let branch = if condition {
            &mut self.then_branch
        } else {
            &mut self.else_branch
        };
        loop {
            let mut changed = false;
            for (body_ix, &outer_ix) in branch.inputs.iter().enumerate() {
                changed |= branch
                    .body
                    .input_fact_mut(body_ix)?
                    .unify_with_mut(&mut inputs[outer_ix])?;
            }
            for (ix, output) in outputs.iter_mut().enumerate() {
                changed |= branch.body.output_fact_mut(ix)?.unify_with_mut(output)?;
            }
            // A branch counts its own folded values.
            let mut folded = preflight::FoldedValues::default();
            changed |= preflight::analyse(&mut branch.body, &branch.preflight, &mut folded)?;
            if !changed {
                return Ok((inputs, outputs, observed.into_iter().cloned().collect()));
            }
        }
    }

    fn nboutputs(&self) -> TractResult<usize> {
        self.inner.nboutputs()
    }

    fn to_typed(
        &self,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let Some(condition) = known_condition(source.outlet_fact(node.inputs[0])?) else {
            return self.inner.to_typed(source, node, target, mapping);
        };
        let branch = self.taken(condition);
        // Analysed by `infer_facts` (Tessera's analysis, with the branch's checks).
        let body = crate::model::typing::into_typed(branch.body.clone())?;
        // Inline the taken branch: its inputs are the outer wires, its nodes are wired in order.
        let mut wires: HashMap<OutletId, OutletId> = HashMap::new();
        for (body_ix, &outer_ix) in branch.inputs.iter().enumerate() {
            wires.insert(
                body.input_outlets()?[body_ix],
                mapping[&node.inputs[outer_ix]],
            );
        }
        for id in body.eval_order()? {
            let body_node = body.node(id);
            if body.input_outlets()?.iter().any(|o| o.node == id) {
                continue;
            }
            let inputs: TVec<OutletId> = body_node.inputs.iter().map(|o| wires[o]).collect();
            let outs = target.wire_node(
                format!("{}.{}", node.name, body_node.name),
                body_node.op.clone(),
                &inputs,
            )?;
            for (slot, out) in outs.into_iter().enumerate() {
                wires.insert(OutletId::new(id, slot), out);
            }
        }
        body.output_outlets()?
            .iter()
            .map(|o| wires.get(o).copied().context("branch output not wired"))
            .collect()
    }

    as_op!();
}
