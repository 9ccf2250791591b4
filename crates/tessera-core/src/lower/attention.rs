//! Attention for GPU plans: tract's `Sdpa` (what tract-onnx builds from ONNX `Attention`,
//! `MultiHeadAttention` and `GroupQueryAttention`) taken apart into the ops GPU kernels run.
//!
//! On cpu tract runs `Sdpa` as one fused kernel. A GPU plan has no such kernel, so before
//! tract declutters the graph, each `Sdpa` becomes tract's own decomposition of it (two
//! batched matrix products around a softmax, grouped-query heads as a broadcast axis, a causal
//! mask folded into a constant), and the `ScaledMaskedSoftmax` that decomposition uses becomes a
//! product by the scale, the mask (added, or selected by where it is false) and a softmax.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::logic::Iff;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};
use tract_transformers::ops::scaled_masked_softmax::ScaledMaskedSoftmax;
use tract_transformers::ops::sdpa::Sdpa;

/// Rewrites every `Sdpa` and `ScaledMaskedSoftmax` of `model` into ops a GPU plan lowers.
/// A [`crate::model::specialize::BeforeDeclutter`] pass.
pub fn take_apart(model: &mut TypedModel, _source: &crate::model::Model) -> TractResult<()> {
    while let Some(id) = model.nodes().iter().position(|n| n.op_is::<Sdpa>()) {
        let node = model.node(id);
        let Some(op) = node.op_as::<Sdpa>() else {
            break;
        };
        let Some(patch) = op.patch_sdpa(model, node)? else {
            tract_onnx::tract_hir::internal::bail!(
                "tract could not take apart SDPA node '{}'",
                node.name
            );
        };
        patch.apply(model)?;
        model.compact()?;
    }
    while let Some(id) = model
        .nodes()
        .iter()
        .position(|n| n.op_is::<ScaledMaskedSoftmax>())
    {
        let patch = masked_softmax(model, model.node(id))?;
        patch.apply(model)?;
        model.compact()?;
    }
    Ok(())
}

/// `softmax(x · scale + mask)` over the last axis; a boolean mask selects `-inf` where it is
/// false instead (and, after the softmax, zero where `post_softmax_mask`).
fn masked_softmax(model: &TypedModel, node: &TypedNode) -> TractResult<TypedModelPatch> {
    let Some(op) = node.op_as::<ScaledMaskedSoftmax>() else {
        tract_onnx::tract_hir::internal::bail!("node '{}' is not a ScaledMaskedSoftmax", node.name);
    };
    let mut patch = TypedModelPatch::new(format!("masked softmax {}", node.name));
    let x = patch.tap_model(model, node.inputs[0])?;
    let mask = patch.tap_model(model, node.inputs[1])?;
    let fact = model.outlet_fact(node.inputs[0])?.clone();
    let dt = fact.datum_type;
    let name = &node.name;
    let scale = patch.add_const(
        format!("{name}.scale"),
        op.scale.cast_to_dt(dt)?.into_owned(),
    )?;
    let scaled = wire_with_rank_broadcast(
        format!("{name}.scaled"),
        &mut patch,
        math::mul(),
        &[x, scale],
    )?[0];
    let boolean = model.outlet_fact(node.inputs[1])?.datum_type == bool::datum_type();
    let pre_softmax = if boolean {
        let fill = patch.add_const(
            format!("{name}.fill"),
            tensor0(f32::NEG_INFINITY).cast_to_dt(dt)?.into_owned(),
        )?;
        patch.wire_node(format!("{name}.masked"), Iff, &[mask, scaled, fill])?[0]
    } else {
        wire_with_rank_broadcast(
            format!("{name}.masked"),
            &mut patch,
            math::add(),
            &[scaled, mask],
        )?[0]
    };
    let mut output = patch.wire_node(
        format!("{name}.softmax"),
        Softmax::new(tvec![fact.rank() - 1], None, SoftmaxKind::Softmax),
        &[pre_softmax],
    )?[0];
    if op.post_softmax_mask && boolean {
        let zero = patch.add_const(
            format!("{name}.zero"),
            tensor0(0f32).cast_to_dt(dt)?.into_owned(),
        )?;
        output = patch.wire_node(format!("{name}.post_mask"), Iff, &[mask, output, zero])?[0];
    }
    patch.shunt_outside(model, node.id.into(), output)?;
    Ok(patch)
}
