//! `ReverseSequence`: reverses the first `sequence_lens[b]` steps of every batch entry.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__ReverseSequence.html>.
//!
//! Supported: any element type, rank >= 2, the `batch_axis` and `time_axis` attributes (0 or
//! 1, distinct), `sequence_lens` of int32/int64. The time axis must have a known length.
//!
//! Expands to typed tract ops: for time step `t` and batch entry `b` the source step is
//! `len[b] - 1 - t` when `t < len[b]`, else `t` (`Iff` over broadcast comparisons); the
//! index tensor is broadcast to the input's shape and fed to `GatherElements` on the time
//! axis.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_core;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;

/// Builds `ReverseSequence`.
pub fn reverse_sequence(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let batch_axis = node.get_attr_opt::<i64>("batch_axis")?.unwrap_or(1);
    let time_axis = node.get_attr_opt::<i64>("time_axis")?.unwrap_or(0);
    ensure!(
        matches!((batch_axis, time_axis), (0, 1) | (1, 0)),
        "ReverseSequence: batch_axis and time_axis must be 0 and 1 in some order, got {batch_axis} and {time_axis}"
    );
    Ok((
        expand(ReverseSequence {
            batch_axis: batch_axis as usize,
            time_axis: time_axis as usize,
        }),
        vec![],
    ))
}

#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct ReverseSequence {
    batch_axis: usize,
    time_axis: usize,
}

impl Expansion for ReverseSequence {
    fn name(&self) -> StaticName {
        "ReverseSequence".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 2)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].shape, &inputs[0].shape)?;
        s.equals(&inputs[1].rank, 1)?;
        s.equals(&inputs[1].shape[0], &inputs[0].shape[self.batch_axis])?;
        Ok(())
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let fact = model.outlet_fact(inputs[0])?.clone();
        let rank = fact.rank();
        ensure!(rank >= 2, "ReverseSequence: input must have rank >= 2");
        let steps = fact.shape[self.time_axis]
            .to_usize()
            .context("ReverseSequence: the time axis must have a known length")?;
        let mut t_shape = vec![1usize; rank];
        t_shape[self.time_axis] = steps;
        let t = tract_ndarray::ArrayD::from_shape_vec(t_shape, (0..steps as i64).collect())?;
        let t = model.add_const(format!("{prefix}.steps"), t.into_tensor())?;
        let mut lens = inputs[1];
        if model.outlet_fact(lens)?.datum_type != i64::datum_type() {
            lens = model.wire_node(
                format!("{prefix}.lens_i64"),
                tract_core::ops::cast::cast(i64::datum_type()),
                &[lens],
            )?[0];
        }
        for axis in (0..rank).filter(|&a| a != self.batch_axis) {
            lens = model.wire_node(
                format!("{prefix}.lens_axis.{axis}"),
                AxisOp::Add(axis),
                &[lens],
            )?[0];
        }
        let one = model.add_const(
            format!("{prefix}.one"),
            tensor0(1i64).broadcast_into_rank(rank)?,
        )?;
        let inside = model.wire_node(
            format!("{prefix}.inside"),
            TypedBinOp(tract_core::ops::logic::comp_lt(), None),
            &[t, lens],
        )?[0];
        let last = model.wire_node(format!("{prefix}.last"), math::sub(), &[lens, one])?[0];
        let reversed = model.wire_node(format!("{prefix}.reversed"), math::sub(), &[last, t])?[0];
        let source = model.wire_node(
            format!("{prefix}.source"),
            tract_core::ops::logic::Iff,
            &[inside, reversed, t],
        )?[0];
        let source = model.wire_node(
            format!("{prefix}.source_full"),
            tract_core::ops::array::MultiBroadcastTo::new(fact.shape.clone()),
            &[source],
        )?[0];
        model.wire_node(
            prefix,
            tract_core::ops::array::GatherElements::new(self.time_axis),
            &[inputs[0], source],
        )
    }
}
