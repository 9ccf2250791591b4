//! Lowering a [`Model`] for the concrete inputs of one run.
//!
//! Input facts (dtype and shape) always come from the real tensors, never from the model's
//! annotations. Some models need an input's *value* at plan time (a Reshape shape, Slice starts,
//! Resize scales, an `If` condition computed from a sample rate...): such inputs are folded into
//! the graph as constants, and the plan is cached under their values as well as the shapes.

use super::Model;
use crate::error::{catch_panic, chain_message};
use crate::tract_bridge::{datum_type, to_tract};
use crate::{DType, Error, Result, Tensor};
use std::sync::Arc;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::ops::konst::Const;

/// Inputs with at most this many elements are folded when a plan needs their values,
/// unless they are floating point (floats fold only up to [`MAX_FOLDED_FLOATS`]).
const MAX_FOLDED_INTEGERS: usize = 1024;
/// Small float inputs (Resize scales, Clip bounds, Range limits) may be folded too.
const MAX_FOLDED_FLOATS: usize = 8;

/// Which inputs of a run are folded in as constants.
pub type Folding = Vec<bool>;

/// Identifies a plan: input shapes and dtypes, plus the values of folded inputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlanKey(Vec<(DType, Vec<usize>, Option<Vec<u8>>)>);

impl PlanKey {
    /// The key for these inputs under this folding.
    pub fn new(inputs: &[Tensor], folding: &[bool]) -> PlanKey {
        let entries = inputs.iter().zip(folding);
        PlanKey(
            entries
                .map(|(t, &fold)| key_entry(t.dtype(), t.shape(), fold.then_some(t)))
                .collect(),
        )
    }

    /// The key from each input's dtype, shape and, where it is on the host, the tensor (inputs
    /// elsewhere, e.g. on a device, have no values to read): `None` when a folded input has no
    /// host tensor. Finds a cached plan without copying any input.
    pub fn from_signatures<'a>(
        inputs: impl Iterator<Item = (DType, &'a [usize], Option<&'a Tensor>)>,
        folding: &[bool],
    ) -> Option<PlanKey> {
        let entries = inputs.zip(folding);
        entries
            .map(|((dtype, shape, host), &fold)| match (fold, host) {
                (true, None) => None,
                (fold, host) => Some(key_entry(dtype, shape, host.filter(|_| fold))),
            })
            .collect::<Option<_>>()
            .map(PlanKey)
    }
}

/// One input's part of a [`PlanKey`]: its values only when folded.
fn key_entry(
    dtype: DType,
    shape: &[usize],
    folded: Option<&Tensor>,
) -> (DType, Vec<usize>, Option<Vec<u8>>) {
    (
        dtype,
        shape.to_vec(),
        folded.map(|t| t.data().to_le_bytes()),
    )
}

/// A backend's pass over the typed graph before tract declutters it, given the model.
pub type BeforeDeclutter = fn(&mut TypedModel, &Model) -> TractResult<()>;

/// What a backend adds to, or leaves out of, the lowering of a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lowering {
    /// Its own pass over the typed graph before tract declutters it.
    pub before_declutter: Option<BeforeDeclutter>,
    /// Leave tract's `ChangeAxes` pass out of declutter ([`super::optimizer::declutter`]).
    pub keep_axes: bool,
    /// Which inputs may be folded in.
    pub folds: Folds,
}

/// Which inputs a lowering may fold in as constants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Folds {
    /// None, then the small shape-like ones, then all (a plan then computes from the values
    /// of the large ones when it is made, again for each new value).
    #[default]
    Any,
    /// Only small shape-like inputs (at most 1024 integers or 8 floats: `MAX_FOLDED_INTEGERS`,
    /// `MAX_FOLDED_FLOATS`).
    Small,
    /// Small ones, leaving at least one input to run: a plan of steps, not a model computed
    /// when the plan is made.
    SmallLeavingAnInput,
}

/// A decluttered typed graph for one input signature.
#[derive(Debug)]
pub struct Lowered {
    /// tract's decluttered typed model; its inputs are the non-folded inputs, in order.
    pub typed: TypedModel,
    /// Which inputs were folded in.
    pub folding: Folding,
}

impl Lowered {
    /// The inputs still fed at run time (the non-folded ones), in order.
    pub fn runtime_inputs<'a>(&self, inputs: &'a [Tensor]) -> impl Iterator<Item = &'a Tensor> {
        inputs
            .iter()
            .zip(self.folding.clone())
            .filter(|(_, folded)| !folded)
            .map(|(t, _)| t)
    }
}

fn foldable(tensor: &Tensor) -> bool {
    let limit = if tensor.dtype().is_float() {
        MAX_FOLDED_FLOATS
    } else {
        MAX_FOLDED_INTEGERS
    };
    tensor.len() <= limit
}

impl Model {
    /// Lowers for these inputs (in model order), folding in as few inputs as works:
    /// `preferred` first (what worked for an earlier run), then none, then the small
    /// shape-like inputs, then all of them (shape-like first for models with an `If`).
    pub fn lower(&self, inputs: &[Tensor], preferred: Option<&[bool]>) -> Result<Lowered> {
        self.lower_for(inputs, preferred, Lowering::default())
    }

    /// [`Model::lower`] with a backend's own pass on the typed graph before tract declutters it
    /// (the cpu backend turns QDQ products into integer ones there, while each weight's
    /// dequantization is still explicit).
    pub fn lower_for(
        &self,
        inputs: &[Tensor],
        preferred: Option<&[bool]>,
        lowering: Lowering,
    ) -> Result<Lowered> {
        self.lower_then_for(inputs, preferred, lowering, |_| Ok(()))
            .map(|(lowered, ())| lowered)
    }

    /// Like [`Model::lower`], but a folding only counts as working when `then` also succeeds on
    /// the lowered graph (a GPU plan needs every shape concrete: a TopK whose `k` is a runtime
    /// input lowers, but only plans once `k` is folded in).
    pub fn lower_then<T>(
        &self,
        inputs: &[Tensor],
        preferred: Option<&[bool]>,
        then: impl Fn(&TypedModel) -> Result<T>,
    ) -> Result<(Lowered, T)> {
        self.lower_then_for(inputs, preferred, Lowering::default(), then)
    }

    /// [`Model::lower_then`] with a backend's own pass on the typed graph before tract
    /// declutters it.
    pub fn lower_then_for<T>(
        &self,
        inputs: &[Tensor],
        preferred: Option<&[bool]>,
        lowering: Lowering,
        then: impl Fn(&TypedModel) -> Result<T>,
    ) -> Result<(Lowered, T)> {
        let none = vec![false; inputs.len()];
        let shape_like: Folding = inputs.iter().map(foldable).collect();
        let all = vec![true; inputs.len()];
        // With an `If`, fold the small inputs first: a condition that becomes constant lets the
        // taken branch be inlined and optimized, where tract would otherwise re-plan the branch
        // on every run (silero_vad_op18_ifless: 10x slower).
        let order = if self.info().op_histogram.contains_key("If") {
            [shape_like, none, all]
        } else {
            [none, shape_like, all]
        };
        let mut ladder: Vec<Folding> = preferred.map(<[bool]>::to_vec).into_iter().collect();
        for candidate in order {
            if !ladder.contains(&candidate) {
                ladder.push(candidate);
            }
        }
        let folds_all = |f: &Folding| !f.is_empty() && f.iter().all(|&folded| folded);
        let small = |f: &Folding| {
            f.iter()
                .zip(inputs)
                .all(|(&folded, t)| !folded || foldable(t))
        };
        match lowering.folds {
            Folds::Any => {}
            Folds::Small => ladder.retain(small),
            Folds::SmallLeavingAnInput => ladder.retain(|f| small(f) && !folds_all(f)),
        }
        let mut errors = vec![];
        for folding in ladder {
            match self
                .lower_with_pass(inputs, &folding, lowering)
                .and_then(|typed| then(&typed).map(|made| (typed, made)))
            {
                Ok((typed, made)) => return Ok((Lowered { typed, folding }, made)),
                Err(e) => {
                    tracing::debug!(?folding, error = %e, "lowering failed");
                    errors.push((folding, e));
                }
            }
        }
        Err(first_with_folded_reasons(errors))
    }

    /// Lowers with exactly this folding.
    pub fn lower_with(&self, inputs: &[Tensor], folding: &[bool]) -> Result<TypedModel> {
        self.lower_with_pass(inputs, folding, Lowering::default())
    }

    /// Lowers with exactly this folding and `lowering` (its `folds` unused): an error of its
    /// pass is the lowering's, where [`Model::lower_for`] would try the next folding (a test of
    /// a pass needs that).
    pub fn lower_with_pass(
        &self,
        inputs: &[Tensor],
        folding: &[bool],
        lowering: Lowering,
    ) -> Result<TypedModel> {
        catch_panic("lowering the model", || {
            self.try_lower(inputs, folding, lowering)
                .map_err(|e| Error::Prepare {
                    backend: "tract".into(),
                    message: chain_message(&e),
                })
        })
    }

    fn try_lower(
        &self,
        inputs: &[Tensor],
        folding: &[bool],
        lowering: Lowering,
    ) -> TractResult<TypedModel> {
        let mut graph = self.graph().clone();
        let mut folded = super::preflight::FoldedValues::default();
        super::uniform_constants::materialize(&mut graph, &mut folded)?;
        anyhow::ensure!(
            graph.inputs.len() == inputs.len(),
            "model has {} inputs, {} given",
            graph.inputs.len(),
            inputs.len()
        );
        let sources: Vec<OutletId> = graph.inputs.clone();
        for (ix, tensor) in inputs.iter().enumerate() {
            let fact = InferenceFact::dt_shape(datum_type(tensor.dtype()), tensor.shape());
            graph.set_input_fact(ix, fact)?;
        }
        // Trust the real inputs over the model's output annotations (which may be stale).
        for ix in 0..graph.outputs.len() {
            let fact = InferenceFact {
                datum_type: graph.output_fact(ix)?.datum_type,
                ..Default::default()
            };
            graph.set_output_fact(ix, fact)?;
        }
        for ((outlet, tensor), &fold) in sources.iter().zip(inputs).zip(folding) {
            if fold {
                let value = Arc::new(to_tract(tensor)?);
                let node = graph.node_mut(outlet.node);
                node.op = Box::new(tract_onnx::tract_hir::ops::konst::Const::new(
                    value.clone(),
                )?);
                node.outputs[0].fact = InferenceFact::from(value.into_tensor());
            }
        }
        // Checked once every folded input is a constant (OneHot's indices need its depth).
        for ((outlet, tensor), &fold) in sources.iter().zip(inputs).zip(folding) {
            if fold {
                check_folded_value(&graph, *outlet, tensor)?;
            }
        }
        // The same values held by the model's own constants (initializers): tract folds them too.
        check_constant_values(&graph)?;
        graph
            .inputs
            .retain(|outlet| !folding[sources.iter().position(|s| s == outlet).unwrap_or(0)]);
        super::preflight::analyse(&mut graph, self.preflight(), &mut folded)?;
        let mut typed = super::typing::into_typed(graph)?;
        super::quant_barrier::guard_quantized_softmax(&mut typed)?;
        if let Some(pass) = lowering.before_declutter {
            pass(&mut typed, self)?;
        }
        super::optimizer::declutter(&mut typed, lowering.keep_axes)?;
        super::index_check::guard_indices(&mut typed)?;
        Ok(typed)
    }
}

/// [`check_folded_value`] for the graph's constants that feed a checked slot (only those are
/// converted: weights are not).
fn check_constant_values(graph: &InferenceModel) -> TractResult<()> {
    for node in graph.nodes() {
        let Some(konst) = node.op_as::<Const>() else {
            continue;
        };
        let checked = node
            .outputs
            .iter()
            .flat_map(|o| &o.successors)
            .any(|inlet| {
                matches!(
                    (&*graph.node(inlet.node).op.name(), inlet.slot),
                    ("StridedSlice" | "Slice", 4)
                        | ("Range", 2)
                        | ("STFT" | "Stft", 1 | 3)
                        | ("OneHot", 0 | 1)
                )
            });
        if !checked {
            continue;
        }
        if let Ok(tensor) = crate::tract_bridge::from_tract(konst.val()) {
            check_folded_value(graph, OutletId::new(node.id, 0), &tensor)?;
        }
    }
    Ok(())
}

/// Values that tract divides by or indexes with while it infers shapes, checked before an input
/// holding them is folded in (tract panics on them: a division by zero, an index out of range).
/// A session planned at load with zero inputs, or a user's invalid value, gets an error instead.
fn check_folded_value(
    graph: &InferenceModel,
    outlet: OutletId,
    tensor: &Tensor,
) -> TractResult<()> {
    let values = tensor.data().to_f64_vec();
    let node = graph.node(outlet.node);
    for output in &node.outputs {
        for inlet in &output.successors {
            let user = graph.node(inlet.node);
            let op = user.op.name();
            let bad: Option<String> = match (&*op, inlet.slot) {
                // ONNX Slice: data, starts, ends, axes, steps.
                ("StridedSlice" | "Slice", 4) => {
                    values.contains(&0.0).then(|| "a step of 0".into())
                }
                // Range: start, limit, delta.
                ("Range", 2) => values.contains(&0.0).then(|| "a delta of 0".into()),
                // STFT: signal, frame_step, window, frame_length.
                ("STFT" | "Stft", 1 | 3) => values
                    .contains(&0.0)
                    .then(|| "a frame step or length of 0".into()),
                // OneHot: indices, depth, values.
                ("OneHot", 1) => values
                    .iter()
                    .any(|&d| d < 1.0)
                    .then(|| "a depth below 1".into()),
                // tract evaluates a OneHot of constant indices while typing the graph, unchecked.
                ("OneHot", 0) => {
                    user.inputs
                        .get(1)
                        .and_then(|o| graph.node(o.node).op_as::<Const>())
                        .and_then(|c| c.val().cast_to_scalar::<f64>().ok())
                        .and_then(|depth| {
                            values.iter().find(|&&v| v < -depth || v >= depth).map(|v| {
                                format!("index {v} is out of range for a depth of {depth}")
                            })
                        })
                }
                _ => None,
            };
            if let Some(bad) = bad {
                anyhow::bail!(
                    "input '{}' gives {op} node '{}' {bad}",
                    node.name,
                    user.name
                );
            }
        }
    }
    Ok(())
}

/// The first lowering's error, with the other reasons the attempts that folded input values in
/// gave, where they differ: an unfolded attempt may only say "shape input is variable" where
/// the folded one says why the values cannot be used (a tensor too large to make).
fn first_with_folded_reasons(errors: Vec<(Folding, Error)>) -> Error {
    let mut errors = errors.into_iter();
    let Some((_, first)) = errors.next() else {
        return Error::Internal("no lowering attempted".into());
    };
    let Error::Prepare { backend, message } = first else {
        return first;
    };
    let mut reasons = vec![];
    for (folding, error) in errors {
        if let Error::Prepare { message: other, .. } = error
            && folding.iter().any(|&folded| folded)
            && other != message
            && !reasons.contains(&other)
        {
            reasons.push(other);
        }
    }
    let message = if reasons.is_empty() {
        message
    } else {
        format!(
            "{message}; with the inputs' values folded in: {}",
            reasons.join("; ")
        )
    };
    Error::Prepare { backend, message }
}
