//! The loss operators `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss`.
//!
//! Specs: <https://onnx.ai/onnx/operators/onnx__NegativeLogLikelihoodLoss.html> and
//! <https://onnx.ai/onnx/operators/onnx__SoftmaxCrossEntropyLoss.html>.
//!
//! Supported: scores of any float type and rank >= 2 (classes on axis 1), integer targets
//! (int32 or int64) of the scores' rank minus one, the optional per-class `weight` input, the
//! `reduction` attribute (`none`, `sum`, `mean`), the `ignore_index` attribute, and for
//! `SoftmaxCrossEntropyLoss` the optional second output (the log-probabilities).
//!
//! Both expand to typed tract ops: `LogSoftmax` (cross entropy only), `GatherElements` on the
//! class axis, `Gather` of the weights, `Iff` masking of ignored targets and sum reductions.
//! A target outside `[0, C)` that is not `ignore_index` is an error in tract's gather.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_core;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;
use tract_onnx::tract_hir::ops::nn::Reducer;

/// How the per-element losses are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Reduction {
    None,
    Sum,
    Mean,
}

fn parse_reduction(node: &NodeProto) -> TractResult<Reduction> {
    match node.get_attr_opt::<&str>("reduction")?.unwrap_or("mean") {
        "none" => Ok(Reduction::None),
        "sum" => Ok(Reduction::Sum),
        "mean" => Ok(Reduction::Mean),
        other => bail!("{}: unsupported reduction '{other}'", node.op_type),
    }
}

fn has_input(node: &NodeProto, ix: usize) -> bool {
    node.input.get(ix).is_some_and(|s| !s.is_empty())
}

/// Builds `NegativeLogLikelihoodLoss`.
pub fn nll_loss(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    ensure!(
        node.input.len() >= 2 && has_input(node, 0) && has_input(node, 1),
        "NegativeLogLikelihoodLoss needs its input and target"
    );
    let op = Loss {
        softmax: false,
        reduction: parse_reduction(node)?,
        ignore_index: node.get_attr_opt::<i64>("ignore_index")?,
        weighted: has_input(node, 2),
        log_prob_output: false,
    };
    Ok((expand(op), vec![]))
}

/// Builds `SoftmaxCrossEntropyLoss`.
pub fn softmax_cross_entropy_loss(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    ensure!(
        node.input.len() >= 2 && has_input(node, 0) && has_input(node, 1),
        "SoftmaxCrossEntropyLoss needs its scores and labels"
    );
    ensure!(
        node.output.first().is_some_and(|s| !s.is_empty()),
        "SoftmaxCrossEntropyLoss: the loss output must be named"
    );
    let op = Loss {
        softmax: true,
        reduction: parse_reduction(node)?,
        ignore_index: node.get_attr_opt::<i64>("ignore_index")?,
        weighted: has_input(node, 2),
        log_prob_output: node.output.get(1).is_some_and(|s| !s.is_empty()),
    };
    Ok((expand(op), vec![]))
}

/// Both losses: cross entropy is the likelihood loss of the log-softmax of its scores.
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct Loss {
    softmax: bool,
    reduction: Reduction,
    ignore_index: Option<i64>,
    weighted: bool,
    log_prob_output: bool,
}

impl Expansion for Loss {
    fn name(&self) -> StaticName {
        if self.softmax {
            "SoftmaxCrossEntropyLoss".into()
        } else {
            "NegativeLogLikelihoodLoss".into()
        }
    }

    fn nboutputs(&self) -> TractResult<usize> {
        Ok(1 + self.log_prob_output as usize)
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2 + self.weighted as usize)?;
        check_output_arity(outputs, 1 + self.log_prob_output as usize)?;
        s.equals(&inputs[0].datum_type, &outputs[0].datum_type)?;
        s.equals(&inputs[1].rank, inputs[0].rank.bex() - 1)?;
        if self.weighted {
            s.equals(&inputs[2].datum_type, &inputs[0].datum_type)?;
            s.equals(&inputs[2].rank, 1)?;
            s.equals(&inputs[2].shape[0], &inputs[0].shape[1])?;
        }
        if self.reduction == Reduction::None {
            s.equals(&outputs[0].shape, &inputs[1].shape)?;
        } else {
            s.equals(&outputs[0].rank, 0)?;
        }
        if self.log_prob_output {
            s.equals(&inputs[0].datum_type, &outputs[1].datum_type)?;
            s.equals(&inputs[0].shape, &outputs[1].shape)?;
        }
        Ok(())
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let fact = model.outlet_fact(inputs[0])?.clone();
        ensure!(
            fact.datum_type.is_float(),
            "{}: scores must be floats",
            self.name()
        );
        ensure!(
            fact.rank() >= 2,
            "{}: scores must have rank >= 2",
            self.name()
        );
        let target_fact = model.outlet_fact(inputs[1])?.clone();
        ensure!(
            target_fact.datum_type.is_integer(),
            "{}: targets must be integers, got {:?}",
            self.name(),
            target_fact.datum_type
        );
        ensure!(
            target_fact.rank() + 1 == fact.rank(),
            "{}: targets must have the scores' rank minus one",
            self.name()
        );
        let log_prob = if self.softmax {
            model.wire_node(
                format!("{prefix}.log_softmax"),
                tract_core::ops::nn::Softmax::new(
                    tvec!(1),
                    None,
                    tract_core::ops::nn::SoftmaxKind::LogSoftmax,
                ),
                &[inputs[0]],
            )?[0]
        } else {
            inputs[0]
        };
        let weight = self.weighted.then(|| inputs[2]);
        let loss = wire_nll(
            prefix,
            model,
            log_prob,
            inputs[1],
            weight,
            self.reduction,
            self.ignore_index,
        )?;
        let mut outputs = tvec!(loss);
        if self.log_prob_output {
            outputs.push(log_prob);
        }
        Ok(outputs)
    }
}

/// Wires the negative log-likelihood of `log_prob` (`[N, C, d...]`) at `target` (`[N, d...]`).
fn wire_nll(
    prefix: &str,
    model: &mut TypedModel,
    log_prob: OutletId,
    target: OutletId,
    weight: Option<OutletId>,
    reduction: Reduction,
    ignore_index: Option<i64>,
) -> TractResult<OutletId> {
    let dt = model.outlet_fact(log_prob)?.datum_type;
    let rank = model.outlet_fact(target)?.rank();
    let mut target = target;
    if model.outlet_fact(target)?.datum_type != i64::datum_type() {
        target = model.wire_node(
            format!("{prefix}.target_i64"),
            tract_core::ops::cast::cast(i64::datum_type()),
            &[target],
        )?[0];
    }
    let zero_f = model.add_const(
        format!("{prefix}.zero"),
        Tensor::zero_dt(dt, &[])?.broadcast_into_rank(rank)?,
    )?;
    // Ignored targets read class 0 and are masked out afterwards.
    let mask = if let Some(ii) = ignore_index {
        let ii = model.add_const(
            format!("{prefix}.ignore_index"),
            tensor0(ii).broadcast_into_rank(rank)?,
        )?;
        let zero_i = model.add_const(
            format!("{prefix}.zero_index"),
            tensor0(0i64).broadcast_into_rank(rank)?,
        )?;
        let mask = model.wire_node(
            format!("{prefix}.kept"),
            TypedBinOp(tract_core::ops::logic::comp_ne(), None),
            &[target, ii],
        )?[0];
        target = model.wire_node(
            format!("{prefix}.safe_target"),
            tract_core::ops::logic::Iff,
            &[mask, target, zero_i],
        )?[0];
        Some(mask)
    } else {
        None
    };
    let index = model.wire_node(format!("{prefix}.index"), AxisOp::Add(1), &[target])?[0];
    let picked = model.wire_node(
        format!("{prefix}.pick"),
        tract_core::ops::array::GatherElements::new(1),
        &[log_prob, index],
    )?[0];
    let picked = model.wire_node(format!("{prefix}.squeeze"), AxisOp::Rm(1), &[picked])?[0];
    let mut loss = model.wire_node(format!("{prefix}.neg"), math::neg(), &[picked])?[0];
    // Per-element weights; `None` means every kept element weighs one.
    let mut weights = None;
    if let Some(weight) = weight {
        let w = model.wire_node(
            format!("{prefix}.weights"),
            tract_core::ops::array::Gather::new(0),
            &[weight, target],
        )?[0];
        weights = Some(w);
    }
    if let Some(mask) = mask {
        let w = match weights {
            Some(w) => w,
            None => model.add_const(
                format!("{prefix}.one"),
                tensor0(1f64)
                    .cast_to_dt(dt)?
                    .into_owned()
                    .broadcast_into_rank(rank)?,
            )?,
        };
        weights = Some(
            model.wire_node(
                format!("{prefix}.masked_weights"),
                tract_core::ops::logic::Iff,
                &[mask, w, zero_f],
            )?[0],
        );
    }
    if let Some(w) = weights {
        loss = model.wire_node(format!("{prefix}.weighted"), math::mul(), &[loss, w])?[0];
    }
    let axes: TVec<usize> = (0..rank).collect();
    let reduced = match reduction {
        Reduction::None => return Ok(loss),
        Reduction::Sum => Reducer::Sum.wire(axes, &format!("{prefix}.sum"), model, loss)?,
        Reduction::Mean => match weights {
            None => Reducer::Mean.wire(axes, &format!("{prefix}.mean"), model, loss)?,
            Some(w) => {
                let num = Reducer::Sum.wire(axes.clone(), &format!("{prefix}.sum"), model, loss)?;
                let den = Reducer::Sum.wire(axes, &format!("{prefix}.weight_sum"), model, w)?;
                model.wire_node(format!("{prefix}.mean"), math::div(), &[num, den])?[0]
            }
        },
    };
    let mut wire = reduced;
    for i in 0..rank {
        wire = model.wire_node(format!("{prefix}.scalar.{i}"), AxisOp::Rm(0), &[wire])?[0];
    }
    Ok(wire)
}
