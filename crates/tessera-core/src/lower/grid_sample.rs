//! ONNX `GridSample` (tract-core's op) as one [`KernelOp::GridSample`] step: f32, 2 or 3
//! spatial axes (bicubic on 2).

use super::{Lowering, NodeFacts, Registry};
use crate::plan::{GridPadding, GridSampleMode, KernelOp};
use crate::{DType, Result};
use tract_onnx::prelude::TypedNode;
use tract_onnx::tract_core::ops::nn::grid_sample::{GridSample, InterpolationMode, PaddingMode};

pub(super) fn register(registry: &mut Registry) {
    registry.add::<GridSample>(grid_sample);
}

fn grid_sample(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<GridSample>() else {
        return Ok(None);
    };
    let (x, grid) = (facts.input(0)?, facts.input(1)?);
    let k = x.shape.len().saturating_sub(2);
    let mode = match op.mode {
        InterpolationMode::Nearest => GridSampleMode::Nearest,
        InterpolationMode::Bilinear => GridSampleMode::Bilinear,
        InterpolationMode::Bicubic if k == 2 => GridSampleMode::Bicubic,
        InterpolationMode::Bicubic => return Ok(None),
    };
    if x.dtype != DType::F32 || grid.dtype != DType::F32 || !(2..=3).contains(&k) {
        return Ok(None);
    }
    let padding = match op.padding_mode {
        PaddingMode::Zeros => GridPadding::Zeros,
        PaddingMode::Border => GridPadding::Border,
        PaddingMode::Reflection => GridPadding::Reflection,
    };
    let op = KernelOp::GridSample {
        input_shape: x.shape.clone(),
        grid_shape: grid.shape.clone(),
        mode,
        padding,
        align_corners: op.align_corners,
    };
    Ok(Some(Lowering::step(op, facts)))
}
