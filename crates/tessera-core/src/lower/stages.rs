//! Shapes that depend on values computed at run time (`NonZero`, `NonMaxSuppression`, a `TopK`
//! whose `k` is computed), on GPUs: a model runs in stages.
//!
//! A device plan needs every shape when it is made, but how many elements `NonZero` finds (or
//! boxes `NonMaxSuppression` selects) is known only once its inputs are computed. [`split`]
//! cuts the graph there: the **first stage** is everything whose shapes are known, plus each
//! such op written as a *counted* op ([`CountedNonZero`], [`CountedNonMaxSuppression`]): its
//! result laid out exactly as the op's own, at the front of a buffer sized for the largest
//! possible result, and beside it the number of entries. A run computes the first stage on the
//! device, reads back only the counts (one device word each, listed in the placement report),
//! and runs the **rest**, planned for those counts ([`Stages::rest_for`]; a session caches one
//! plan per count), on the first stage's outputs without leaving the device. The rest may hold
//! data-dependent ops of its own: it is split again the same way. A `TopK` whose `k` is computed
//! is cut the same way with no op of its own: `k` is its count, and the `TopK` runs in the rest.

use super::{Lowering, NodeFacts, Registry};
use crate::plan::KernelOp;
use crate::{DType, Error, Result};
use std::collections::{HashMap, HashSet};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::Topk;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::source::TypedSource;
use tract_onnx::tract_hir::internal::*;
use tract_onnx_opl::non_max_suppression::{BoxRepr, NonMaxSuppression};
use tract_onnx_opl::non_zero::NonZero;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<CountedNonZero>(counted_non_zero);
    registry.add::<CountedNonMaxSuppression>(counted_non_max_suppression);
}

/// ONNX `NonZero` with a shape known in advance: output 0 is `[rank, n]` (`n` the input's
/// element count) holding the coordinates of the `count` non-zero elements as `NonZero` lays
/// them out (`[rank, count]`, row-major) in its first `rank · count` entries, the rest zero;
/// output 1 is `count`. Only GPU plans' first stages hold it ([`split`]).
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct CountedNonZero;

impl Op for CountedNonZero {
    fn name(&self) -> StaticName {
        "CountedNonZero".into()
    }

    op_as_typed_op!();
}

impl EvalOp for CountedNonZero {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let bound = input.len();
        let rank = input.rank();
        let op = NonZero {
            count: SymbolScope::default().sym("count"),
        };
        let found = (op.eval_out_of_plan(tvec!(input))?)
            .and_then(|mut outputs| outputs.pop())
            .context("NonZero gave no output")?;
        padded_with_count(found, [rank, bound], 1)
    }
}

/// An op's `found` result (i64) at the front of a zeroed buffer of `padded` shape, and its count
/// (its extent along `count_axis`).
fn padded_with_count(
    found: TValue,
    padded: [usize; 2],
    count_axis: usize,
) -> TractResult<TVec<TValue>> {
    let count = found.shape().get(count_axis).copied().unwrap_or(0);
    let found = found.try_as_plain_ram()?;
    let found = found.as_slice::<i64>()?;
    let mut buffer = vec![0i64; padded[0] * padded[1]];
    buffer
        .get_mut(..found.len())
        .context("a result larger than its padded buffer")?
        .copy_from_slice(found);
    Ok(tvec!(
        tensor1(&buffer).into_shape(&padded)?.into_tvalue(),
        tensor0(count as i64).into_tvalue()
    ))
}

impl TypedOp for CountedNonZero {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let input = inputs.first().context("NonZero has no input")?;
        let bound = input.shape.volume();
        Ok(tvec!(
            i64::fact([input.rank().to_dim(), bound]),
            i64::fact([0usize; 0])
        ))
    }

    as_op!();
}

/// ONNX `NonMaxSuppression` (tract's semantics: `max_output_boxes_per_class` 0 selects without
/// limit) with a shape known in advance: output 0 is `[batches · classes · boxes, 3]` holding the
/// `count` selected `(batch, class, box)` rows first, the rest zero; output 1 is `count`.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct CountedNonMaxSuppression {
    pub center_point_box: bool,
    pub has_score_threshold: bool,
}

impl Op for CountedNonMaxSuppression {
    fn name(&self) -> StaticName {
        "CountedNonMaxSuppression".into()
    }

    op_as_typed_op!();
}

impl EvalOp for CountedNonMaxSuppression {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let bound = inputs
            .get(1)
            .context("NonMaxSuppression has no scores")?
            .len();
        let center_point_box = if self.center_point_box {
            BoxRepr::CenterWidthHeight
        } else {
            BoxRepr::TwoPoints
        };
        let op = NonMaxSuppression {
            center_point_box,
            num_selected_indices_symbol: SymbolScope::default().sym("count"),
            has_score_threshold: self.has_score_threshold,
        };
        let found = (op.eval_out_of_plan(inputs)?)
            .and_then(|mut outputs| outputs.pop())
            .context("NonMaxSuppression gave no output")?;
        padded_with_count(found, [bound, 3], 0)
    }
}

impl TypedOp for CountedNonMaxSuppression {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let scores = inputs.get(1).context("NonMaxSuppression has no scores")?;
        Ok(tvec!(
            i64::fact([scores.shape.volume(), 3.to_dim()]),
            i64::fact([0usize; 0])
        ))
    }

    as_op!();
}

/// The scalar arguments gathered into one f32 `[3]` (a kernel binds few tensors): the count
/// cast, the IoU threshold, the score threshold (0 when absent).
fn counted_non_max_suppression(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    use super::Operand::{In, Out};
    let Some(op) = node.op_as::<CountedNonMaxSuppression>() else {
        return Ok(None);
    };
    let (boxes, scores) = (facts.input(0)?, facts.input(1)?);
    let [batches, classes, count] = scores.shape[..] else {
        return Ok(None);
    };
    let arguments = 4 + usize::from(op.has_score_threshold);
    let one_each = (2..arguments).all(|ix| facts.inputs.get(ix).is_some_and(|f| f.shape == [1]));
    let floats =
        (3..arguments).all(|ix| facts.inputs.get(ix).is_some_and(|f| f.dtype == DType::F32));
    if boxes.shape != [batches, count, 4]
        || boxes.dtype != DType::F32
        || scores.dtype != DType::F32
        || !one_each
        || !floats
    {
        return Ok(None);
    }
    let mut lowering = Lowering::default();
    let max_output = lowering.temp(vec![1], DType::F32);
    let cast = KernelOp::Cast {
        from: facts.input(2)?.dtype,
        to: DType::F32,
    };
    lowering.push(cast, vec![In(2)], vec![max_output]);
    let score_threshold = if op.has_score_threshold {
        In(4)
    } else {
        lowering.constant(tensor1(&[0f32]))
    };
    let gathered = lowering.temp(vec![3], DType::F32);
    let concat = KernelOp::Concat {
        dtype: DType::F32,
        axis: 0,
        input_shapes: vec![vec![1]; 3],
    };
    lowering.push(
        concat,
        vec![max_output, In(3), score_threshold],
        vec![gathered],
    );
    let work = lowering.temp(vec![count.max(1)], DType::U32);
    let kernel = KernelOp::NonMaxSuppression {
        dtype: DType::F32,
        batches,
        classes,
        boxes: count,
        center_point_box: op.center_point_box,
        has_score_threshold: op.has_score_threshold,
    };
    lowering.push(
        kernel,
        vec![In(0), In(1), gathered],
        vec![Out(0), Out(1), work],
    );
    Ok(Some(lowering))
}

fn counted_non_zero(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    if node.op_as::<CountedNonZero>().is_none() {
        return Ok(None);
    }
    let input = facts.input(0)?;
    let kernel = KernelOp::NonZero {
        dtype: input.dtype,
        input_shape: input.shape.clone(),
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

/// A count the first stage reads back: which node it counts, and what it stands for.
#[derive(Debug, Clone)]
pub struct Count {
    /// The data-dependent node (`NonZero`, `NonMaxSuppression`, `TopK`).
    pub node: String,
    /// tract's op name.
    pub op: String,
    /// The largest count possible (the size of the padded buffer).
    pub bound: usize,
    /// The first stage's output holding the count (an i64 scalar; a `TopK`'s `k`).
    pub output: usize,
    /// The first stage's output holding the padded result, whose first `width · count`
    /// entries are the op's result (`None` for a `TopK`, which runs in the rest: its count is
    /// its `k`).
    pub padded: Option<usize>,
    /// The result's extent besides the count: `NonZero`'s is `[width, count]` (width = the
    /// input's rank), `NonMaxSuppression`'s `[count, width]` (width = 3).
    pub width: usize,
    /// Whether the count is the result's first axis (`NonMaxSuppression`).
    pub count_first: bool,
    symbol: Symbol,
}

impl Count {
    /// `value` as a count of this op: at most its bound (a `TopK`'s `k` computed from data may
    /// not be).
    pub fn check(&self, value: i64) -> Result<usize> {
        usize::try_from(value)
            .ok()
            .filter(|&n| n <= self.bound)
            .ok_or_else(|| Error::Run {
                backend: "plan".into(),
                message: format!(
                    "'{}' ({}): a count of {value}, where at most {} is possible",
                    self.node, self.op, self.bound
                ),
            })
    }

    /// The op's result shape for `count` entries.
    pub fn result_shape(&self, count: usize) -> Vec<usize> {
        if self.count_first {
            vec![count, self.width]
        } else {
            vec![self.width, count]
        }
    }
}

/// A model cut at its data-dependent ops (see the module doc).
#[derive(Debug)]
pub struct Stages {
    /// The first stage: every shape concrete; its inputs are the model's.
    pub first: TypedModel,
    /// The counts among the first stage's outputs.
    pub counts: Vec<Count>,
    /// How many of the first stage's outputs the rest takes, in order, as its inputs (the
    /// values it reads, then the padded results; the counts come after).
    pub passed: usize,
    /// The rest of the model, its shapes in terms of the counts; its outputs are the model's.
    rest: TypedModel,
}

impl Stages {
    /// The rest of the model planned for these counts (one per [`Stages::counts`]), decluttered:
    /// shapes concrete up to the next data-dependent op, if any.
    pub fn rest_for(&self, counts: &[usize]) -> Result<TypedModel> {
        if counts.len() != self.counts.len() {
            return Err(Error::Internal(format!(
                "{} counts for {} data-dependent ops",
                counts.len(),
                self.counts.len()
            )));
        }
        let mut subs = HashMap::new();
        for (count, &value) in self.counts.iter().zip(counts) {
            count.check(i64::try_from(value).unwrap_or(i64::MAX))?;
            subs.insert(count.symbol.clone(), TDim::Val(value as i64));
        }
        // tract's passes on the graph made concrete: the same last net as lowering's (the staged
        // tests fail if it ever catches).
        crate::error::catch_panic("planning the rest of a staged model", || {
            let mut rest = self.rest.set_symbols(&subs).map_err(tract_error)?;
            crate::model::optimizer::declutter(&mut rest, false).map_err(tract_error)?;
            Ok(rest)
        })
    }
}

fn tract_error(e: TractError) -> Error {
    Error::Prepare {
        backend: "plan".into(),
        message: crate::error::chain_message(&e),
    }
}

/// Cuts `model` (decluttered, its inputs concrete) at the data-dependent ops whose inputs have
/// known shapes; `None` when it has none (then it plans whole, or it holds a data-dependent op
/// no stage can count and planning says which).
pub fn split(model: &TypedModel) -> Result<Option<Stages>> {
    split_graph(model).map_err(tract_error)
}

fn split_graph(model: &TypedModel) -> TractResult<Option<Stages>> {
    let order = model.eval_order()?;
    let mut known: HashSet<usize> = HashSet::new();
    let mut counted: Vec<usize> = vec![];
    // TopKs whose k is computed: they run in the rest, planned for k's value.
    let mut sized: Vec<(usize, Symbol)> = vec![];
    for &id in &order {
        let node = model.node(id);
        if !node.inputs.iter().all(|i| known.contains(&i.node)) {
            continue;
        }
        if node.op_is::<NonZero>() || node.op_is::<NonMaxSuppression>() {
            counted.push(id);
        } else if node.outputs.iter().all(|o| o.fact.shape.is_concrete()) {
            known.insert(id);
        } else if let Some(op) = node.op_as::<Topk>()
            && let TDim::Sym(k) = &op.fallback_k
        {
            sized.push((id, k.clone()));
        }
    }
    if counted.is_empty() && sized.is_empty() {
        return Ok(None);
    }
    let is_const = |id: usize| model.node(id).op_is::<Const>();
    // Known values the rest reads; constants among them are copied into it instead.
    let mut crossing: Vec<OutletId> = vec![];
    let mut constants_read: HashSet<usize> = HashSet::new();
    let rest_nodes: Vec<usize> = (order.iter().copied())
        .filter(|id| !known.contains(id) && !counted.contains(id))
        .collect();
    let read_by_rest = rest_nodes
        .iter()
        .flat_map(|&id| model.node(id).inputs.iter().copied());
    for outlet in read_by_rest.chain(model.outputs.iter().copied()) {
        if !known.contains(&outlet.node) {
            continue;
        }
        if is_const(outlet.node) {
            constants_read.insert(outlet.node);
        } else if !crossing.contains(&outlet) {
            crossing.push(outlet);
        }
    }

    // The first stage: the model's inputs in order, the known nodes, the counted ops.
    let mut first = TypedModel {
        symbols: model.symbols.clone(),
        ..TypedModel::default()
    };
    let mut in_first: HashMap<OutletId, OutletId> = HashMap::new();
    for &input in &model.inputs {
        let node = model.node(input.node);
        let source = first.add_source(&node.name, model.outlet_fact(input)?.clone())?;
        in_first.insert(input, source);
    }
    for &id in &order {
        let node = model.node(id);
        if !known.contains(&id) || node.op_is::<TypedSource>() {
            continue;
        }
        let inputs = mapped(&in_first, &node.inputs)?;
        let outputs = first.wire_node(&node.name, node.op.clone(), &inputs)?;
        for (slot, outlet) in outputs.into_iter().enumerate() {
            in_first.insert(OutletId::new(id, slot), outlet);
        }
    }
    let mut first_outputs = mapped(&in_first, &crossing)?.into_vec();
    let mut padded = vec![];
    let mut counts = vec![];
    for (k, &id) in counted.iter().enumerate() {
        let node = model.node(id);
        let inputs = mapped(&in_first, &node.inputs)?;
        let input_fact = |ix: usize| -> TractResult<&TypedFact> {
            let outlet = inputs
                .get(ix)
                .with_context(|| format!("'{}' has no input {ix}", node.name))?;
            first.outlet_fact(*outlet)
        };
        let (op, symbol, width, count_first, bound): (Box<dyn TypedOp>, _, _, _, _) =
            if let Some(op) = node.op_as::<NonZero>() {
                let x = input_fact(0)?;
                let bound = x.shape.volume().to_usize()?;
                (
                    Box::new(CountedNonZero),
                    op.count.clone(),
                    x.rank(),
                    false,
                    bound,
                )
            } else if let Some(op) = node.op_as::<NonMaxSuppression>() {
                // scores: [batches, classes, boxes]; each class selects each box at most once.
                let bound = input_fact(1)?.shape.volume().to_usize()?;
                let counted = CountedNonMaxSuppression {
                    center_point_box: op.center_point_box == BoxRepr::CenterWidthHeight,
                    has_score_threshold: op.has_score_threshold,
                };
                let symbol = op.num_selected_indices_symbol.clone();
                (Box::new(counted), symbol, 3, true, bound)
            } else {
                bail!("'{}' is not an op a stage counts", node.name);
            };
        let outputs = first.wire_node(&node.name, op, &inputs)?;
        counts.push(Count {
            node: node.name.clone(),
            op: node.op.name().to_string(),
            bound,
            output: crossing.len() + counted.len() + k,
            padded: Some(crossing.len() + k),
            width,
            count_first,
            symbol,
        });
        let [result, count] = outputs[..] else {
            bail!("'{}' counted: {} outputs, not 2", node.name, outputs.len());
        };
        padded.push(result);
        first_outputs.push(count);
    }
    for (id, symbol) in sized {
        let node = model.node(id);
        let (Some(op), Some(&[x, k])) = (node.op_as::<Topk>(), node.inputs.get(..2)) else {
            bail!("'{}' is not a TopK of two inputs", node.name);
        };
        let output = (crossing.iter().position(|&o| o == k))
            .with_context(|| format!("the k of '{}' is not passed on", node.name))?;
        let axis = model.outlet_fact(x)?.shape.get(op.axis).cloned();
        counts.push(Count {
            node: node.name.clone(),
            op: node.op.name().to_string(),
            bound: axis
                .with_context(|| format!("'{}' has no axis {}", node.name, op.axis))?
                .to_usize()?,
            output,
            padded: None,
            width: 0,
            count_first: false,
            symbol,
        });
    }
    // Outputs: crossing values, then the padded results, then the counts.
    first_outputs.splice(crossing.len()..crossing.len(), padded);
    first.select_output_outlets(&first_outputs)?;

    // The rest: a source per crossing value and per counted result, then the other nodes.
    let mut rest = TypedModel {
        symbols: model.symbols.clone(),
        ..TypedModel::default()
    };
    let mut in_rest: HashMap<OutletId, OutletId> = HashMap::new();
    let outlet_name = |outlet: OutletId| {
        let name = &model.node(outlet.node).name;
        if outlet.slot == 0 {
            name.clone()
        } else {
            format!("{name}.{}", outlet.slot)
        }
    };
    for &outlet in &crossing {
        let source = rest.add_source(outlet_name(outlet), model.outlet_fact(outlet)?.clone())?;
        in_rest.insert(outlet, source);
    }
    for &id in &counted {
        let outlet = OutletId::new(id, 0);
        let source = rest.add_source(outlet_name(outlet), model.outlet_fact(outlet)?.clone())?;
        in_rest.insert(outlet, source);
    }
    let passed = crossing.len() + counted.len();
    for &id in &order {
        let node = model.node(id);
        if !constants_read.contains(&id) && (known.contains(&id) || counted.contains(&id)) {
            continue;
        }
        let inputs = mapped(&in_rest, &node.inputs)?;
        let outputs = rest.wire_node(&node.name, node.op.clone(), &inputs)?;
        for (slot, outlet) in outputs.into_iter().enumerate() {
            in_rest.insert(OutletId::new(id, slot), outlet);
        }
    }
    let outputs = mapped(&in_rest, &model.outputs)?;
    rest.select_output_outlets(&outputs)?;
    Ok(Some(Stages {
        first,
        counts,
        passed,
        rest,
    }))
}

/// Where `outlets` of the model are in a stage being built.
fn mapped(map: &HashMap<OutletId, OutletId>, outlets: &[OutletId]) -> TractResult<TVec<OutletId>> {
    (outlets.iter())
        .map(|o| {
            map.get(o)
                .copied()
                .with_context(|| format!("{o:?} has no place in the stage"))
        })
        .collect()
}
