//! Convolutions: tract's `Conv` and `Deconv` (ONNX ConvTranspose), float only, OIHW weights.
//!
//! Geometry is resolved here for the concrete input: explicit padding per side (tract's
//! `SAME_UPPER`/`SAME_LOWER`/`VALID` included), strides, dilations, output extents.

use super::{Lowering, NodeFacts, Registry};
use crate::Result;
use crate::plan::{KernelOp, Window};
use tract_onnx::prelude::TypedNode;
use tract_onnx::tract_core::ops::cnn::conv::KernelFormat;
use tract_onnx::tract_core::ops::cnn::{Conv, Deconv, PoolSpec};

pub(super) fn register(registry: &mut Registry) {
    registry.add::<Conv>(conv);
    registry.add::<Deconv>(deconv);
}

/// The window of a pool spec over a concrete input shape, with the channel count; `None` when
/// the layout does not parse.
pub(super) fn window(
    spec: &PoolSpec,
    input: &[usize],
    output: &[usize],
) -> Option<(Window, usize)> {
    let format = spec.data_format;
    let shape = format.shape(input.to_vec()).ok()?;
    let out = format.shape(output.to_vec()).ok()?;
    let hw: Vec<usize> = shape.hw_dims().to_vec();
    let padding = spec.computed_padding(&hw);
    Some((
        Window {
            batch: shape.n().copied().unwrap_or(1),
            batch_axis: format.has_n(),
            channels_last: format.c_is_last(),
            input: hw,
            output: out.hw_dims().to_vec(),
            kernel: spec.kernel_shape.to_vec(),
            strides: spec.strides().to_vec(),
            dilations: spec.dilations().to_vec(),
            pads_before: padding.iter().map(|p| p.pad_before).collect(),
            pads_after: padding.iter().map(|p| p.pad_after).collect(),
        },
        *shape.c(),
    ))
}

fn conv(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Conv>() else {
        return Ok(None);
    };
    if op.q_params.is_some() || op.kernel_fmt != KernelFormat::OIHW || facts.inputs.len() != 3 {
        return Ok(None);
    }
    let (x, out) = (facts.input(0)?, facts.output(0)?);
    if !x.dtype.is_float() {
        return Ok(None);
    }
    let Some((window, in_channels)) = window(&op.pool_spec, &x.shape, &out.shape) else {
        return Ok(None);
    };
    let out_channels = facts.input(1)?.shape.first().copied().unwrap_or(0);
    let kernel = KernelOp::Conv {
        dtype: x.dtype,
        window,
        in_channels,
        out_channels,
        group: op.group,
        has_bias: true,
    };
    Ok(Some(Lowering::step(kernel, facts)))
}

fn deconv(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Deconv>() else {
        return Ok(None);
    };
    if op.kernel_format != KernelFormat::OIHW || facts.inputs.len() != 3 {
        return Ok(None);
    }
    let (x, out) = (facts.input(0)?, facts.output(0)?);
    if !x.dtype.is_float() {
        return Ok(None);
    }
    let Some((mut window, in_channels)) = window(&op.pool_spec, &x.shape, &out.shape) else {
        return Ok(None);
    };
    let spec = &op.pool_spec;
    let Ok(padding) = spec.padding.compute_for_deconv(
        &window.input,
        &spec.kernel_shape,
        &spec.dilations(),
        &spec.strides(),
        &op.adjustments,
    ) else {
        return Ok(None);
    };
    window.pads_before = padding.iter().map(|p| p.pad_before).collect();
    window.pads_after = padding.iter().map(|p| p.pad_after).collect();
    let Ok(out_shape) = spec.data_format.shape(out.shape.clone()) else {
        return Ok(None);
    };
    let kernel = KernelOp::ConvTranspose {
        dtype: x.dtype,
        window,
        in_channels,
        out_channels: *out_shape.c(),
        group: op.group,
        adjustments: op.adjustments.to_vec(),
        has_bias: true,
    };
    Ok(Some(Lowering::step(kernel, facts)))
}
