//! ONNX `Resize` — tract-onnx-opl's op (every mode), and tract-core's (the common modes, what
//! the former declutters into) — as one [`KernelOp::Resample`] step per resized axis.
//!
//! tract resizes axis after axis from a per-axis plan: for each output position, the input
//! positions it reads and their weights. The plan is built here with tract's own functions
//! (coordinate transforms, linear and cubic weights, antialiasing, `exclude_outside`), so a GPU
//! reads the same taps as the cpu; only the kernel that applies it is Tessera's. f32 only.

use super::{Lowering, NodeFacts, Operand, Registry, konst_values};
use crate::plan::KernelOp;
use crate::{DType, Result};
use std::sync::Arc;
use tract_onnx::prelude::{Tensor as TractTensor, TypedNode};
use tract_onnx::tract_core::ops::nn::resize::{
    self as core_resize, AxisPlan, Interpolator, cubic_weights, linear_weights, plan_axis,
    window_size,
};
use tract_onnx_opl::resize::{self as onnx_resize, AspectRatio, CoordTransform, Nearest};

pub(super) fn register(registry: &mut Registry) {
    registry.add::<core_resize::Resize>(core_op);
    registry.add::<onnx_resize::Resize>(onnx_op);
}

fn konst(facts: &NodeFacts, slot: Option<usize>) -> Option<Arc<TractTensor>> {
    facts.inputs.get(slot?)?.konst.clone()
}

/// tract-core's `Resize`: every axis, `scales` over the whole rank or the output's ratios.
fn core_op(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<core_resize::Resize>() else {
        return Ok(None);
    };
    let (input, output) = (facts.input(0)?, facts.output(0)?);
    // tract's plan of an empty axis has no position to clamp to.
    if input.dtype != DType::F32
        || input.shape.len() != output.shape.len()
        || input.shape.contains(&0)
    {
        return Ok(None);
    }
    let rank = input.shape.len();
    let scales =
        konst_values::<f32>(&konst(facts, op.optional_scales_input)).filter(|s| s.len() == rank);
    let mut axes = vec![];
    for axis in 0..rank {
        let (len_in, len_out) = (input.shape[axis], output.shape[axis]);
        let scale = match &scales {
            Some(s) => s[axis],
            None => len_out as f32 / len_in as f32,
        };
        if len_in == len_out && scale == 1.0 {
            continue;
        }
        axes.push((axis, op.plan_axis(scale, len_in, len_out), 0.0));
    }
    Ok(Some(steps(&input.shape, axes)))
}

/// tract-onnx-opl's `Resize`: `axes`, ROIs (`tf_crop_and_resize`), antialiasing,
/// `exclude_outside`, any cubic coefficient, aspect-ratio policies, every nearest mode.
fn onnx_op(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<onnx_resize::Resize>() else {
        return Ok(None);
    };
    let (input, output) = (facts.input(0)?, facts.output(0)?);
    let rank = input.shape.len();
    if input.dtype != DType::F32 || output.shape.len() != rank || input.shape.contains(&0) {
        return Ok(None);
    }
    let Ok(resized) = op.resized_axes(rank) else {
        return Ok(None);
    };
    // Per-axis scale, as tract's op resolves it.
    let mut scale = vec![1.0f32; rank];
    if let Some(s) = konst_values::<f32>(&konst(facts, op.optional_scales_input))
        .filter(|s| s.len() == resized.len())
    {
        for (&axis, s) in resized.iter().zip(s) {
            scale[axis] = s;
        }
    } else if op.keep_aspect_ratio_policy != AspectRatio::Stretch {
        let Some(sizes) = konst_values::<i64>(&konst(facts, op.optional_sizes_input)) else {
            return Ok(None);
        };
        let ratios = resized
            .iter()
            .zip(&sizes)
            .map(|(&axis, &size)| size as f32 / input.shape[axis] as f32);
        let pick = if op.keep_aspect_ratio_policy == AspectRatio::NotLarger {
            ratios.reduce(f32::min)
        } else {
            ratios.reduce(f32::max)
        };
        let Some(pick) = pick else {
            return Ok(None);
        };
        for &axis in &resized {
            scale[axis] = pick;
        }
    } else {
        for &axis in &resized {
            scale[axis] = output.shape[axis] as f32 / input.shape[axis] as f32;
        }
    }
    let tf_crop = op.coord_transformer == CoordTransform::TfCropAndResize;
    let mut roi = vec![(0.0f32, 1.0f32); rank];
    if tf_crop {
        let Some(r) = konst_values::<f32>(&konst(facts, op.optional_roi_input))
            .filter(|r| r.len() == 2 * resized.len())
        else {
            return Ok(None);
        };
        for (i, &axis) in resized.iter().enumerate() {
            roi[axis] = (r[i], r[i + resized.len()]);
        }
    }
    let mut axes = vec![];
    for axis in 0..rank {
        let (len_in, len_out) = (input.shape[axis], output.shape[axis]);
        if len_in == len_out && scale[axis] == 1.0 && !tf_crop {
            continue;
        }
        let plan = onnx_axis_plan(op, scale[axis], len_in, len_out, roi[axis]);
        axes.push((axis, plan, op.extrapolation_value()));
    }
    Ok(Some(steps(&input.shape, axes)))
}

/// tract-onnx-opl's plan of one axis (its own function is private to it).
fn onnx_axis_plan(
    op: &onnx_resize::Resize,
    scale: f32,
    len_in: usize,
    len_out: usize,
    roi: (f32, f32),
) -> AxisPlan {
    let window = window_size(&op.interpolator, op.antialias, scale);
    let coord = |x: usize| -> Option<f32> {
        match &op.coord_transformer {
            CoordTransform::Plain(t) => Some(t.transform(x, scale, len_in, len_out)),
            CoordTransform::TfCropAndResize => {
                let last = len_in as f32 - 1.0;
                let span = last * (roi.1 - roi.0);
                let width = scale * len_in as f32;
                let offset = if width == 1.0 {
                    span / 2.0
                } else {
                    x as f32 * span / (width - 1.0)
                };
                let x = offset + roi.0 * last;
                (x >= 0.0 && x <= last).then_some(x)
            }
        }
    };
    let (exclude, antialias, a) = (op.exclude_outside, op.antialias, op.cubic_coeff_a());
    match op.interpolator {
        Interpolator::Linear => plan_axis(len_in, len_out, window, exclude, coord, |r, w| {
            linear_weights(r, scale, antialias, w)
        }),
        Interpolator::Cubic => plan_axis(len_in, len_out, window, exclude, coord, |r, w| {
            cubic_weights(r, scale, a, antialias, w)
        }),
        Interpolator::Nearest => plan_axis(len_in, len_out, window, exclude, coord, |r, w| {
            let right = r == 1.0
                || match op.nearest {
                    Nearest::Floor => false,
                    Nearest::Ceil => true,
                    Nearest::RoundPreferFloor => r > 0.5,
                    Nearest::RoundPreferCeil => r >= 0.5,
                };
            w[0] = !right as u8 as f32;
            w[1] = right as u8 as f32;
        }),
    }
}

/// One `Resample` step per planned axis, through temporaries; none (a view) when no axis
/// changes.
fn steps(input_shape: &[usize], axes: Vec<(usize, AxisPlan, f32)>) -> Lowering {
    if axes.is_empty() {
        return Lowering::view();
    }
    let mut lowering = Lowering::default();
    let mut shape = input_shape.to_vec();
    let mut from = Operand::In(0);
    let count = axes.len();
    for (ix, (axis, plan, extrapolation)) in axes.into_iter().enumerate() {
        let bias: Vec<f32> = plan
            .extrapolated
            .iter()
            .map(|&e| if e { extrapolation } else { 0.0 })
            .collect();
        let mut weights = plan.weights;
        for (taps, &e) in weights.chunks_mut(plan.window).zip(&plan.extrapolated) {
            if e {
                taps.fill(0.0);
            }
        }
        let op = KernelOp::Resample {
            input_shape: shape.clone(),
            axis,
            window: plan.window,
            indices: plan.indices.iter().map(|&i| i as u32).collect(),
            weights,
            bias,
        };
        shape[axis] = plan.extrapolated.len();
        let to = if ix + 1 == count {
            Operand::Out(0)
        } else {
            lowering.temps.push((shape.clone(), DType::F32));
            Operand::Temp(lowering.temps.len() - 1)
        };
        lowering.steps.push((op, vec![from], vec![to]));
        from = to;
    }
    lowering
}
