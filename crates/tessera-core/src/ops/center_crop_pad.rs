//! `CenterCropPad`: crops or zero-pads chosen axes to a target size, keeping the centre.
//!
//! Spec: <https://onnx.ai/onnx/operators/onnx__CenterCropPad.html>.
//!
//! Supported: any element type with a zero; the `axes` attribute (negative values count from
//! the end; default every axis); the `shape` input must be a constant (or foldable) int32 or
//! int64 vector with one non-negative size per selected axis.
//!
//! Expands to a tract `Slice` per cropped axis and one constant `Pad` for the padded ones.
//! As in the reference, a crop starts at `(in - out) / 2` and a pad puts `(out - in) / 2`
//! zeros before the data (both rounded down).

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::tract_core;
use tract_onnx::tract_hir::internal::*;

/// Builds `CenterCropPad`.
pub fn center_crop_pad(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let axes: Option<Vec<i64>> = node.get_attr_opt_vec("axes")?;
    Ok((expand(CenterCropPad { axes }), vec![]))
}

#[derive(Debug, Clone, Hash, PartialEq, Eq)]
struct CenterCropPad {
    axes: Option<Vec<i64>>,
}

impl CenterCropPad {
    /// The selected axes, resolved against `rank`.
    fn axes(&self, rank: usize) -> TractResult<Vec<usize>> {
        let Some(axes) = &self.axes else {
            return Ok((0..rank).collect());
        };
        let mut resolved = Vec::with_capacity(axes.len());
        for &axis in axes {
            let r = rank as i64;
            ensure!(
                (-r..r).contains(&axis),
                "CenterCropPad: axis {axis} out of range for rank {rank}"
            );
            let axis = if axis < 0 { axis + r } else { axis } as usize;
            ensure!(
                !resolved.contains(&axis),
                "CenterCropPad: axis {axis} appears twice"
            );
            resolved.push(axis);
        }
        Ok(resolved)
    }

    /// The output size of every axis, given the input shape and the `shape` input.
    fn output_shape(&self, input: &[TDim], target: &Tensor) -> TractResult<TVec<TDim>> {
        let target = target.cast_to::<i64>()?;
        let target = target.try_as_plain_ram()?;
        let target = target.as_slice::<i64>()?;
        let axes = self.axes(input.len())?;
        ensure!(
            target.len() == axes.len(),
            "CenterCropPad: shape has {} values for {} axes",
            target.len(),
            axes.len()
        );
        let mut shape: TVec<TDim> = input.into();
        for (&axis, &size) in axes.iter().zip(target) {
            ensure!(size >= 0, "CenterCropPad: negative target size {size}");
            shape[axis] = size.to_dim();
        }
        Ok(shape)
    }
}

impl Expansion for CenterCropPad {
    fn name(&self) -> StaticName {
        "CenterCropPad".into()
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
        s.equals(&outputs[0].rank, &inputs[0].rank)?;
        s.equals(&inputs[1].rank, 1)?;
        s.given(&inputs[0].shape, move |s, shape| {
            s.given(&inputs[1].value, move |s, target| {
                let out = self.output_shape(&shape, &target)?;
                s.equals(&outputs[0].shape, ShapeFactoid::from(out))
            })
        })?;
        Ok(())
    }

    fn wire(
        &self,
        prefix: &str,
        model: &mut TypedModel,
        inputs: &[OutletId],
    ) -> TractResult<TVec<OutletId>> {
        let fact = model.outlet_fact(inputs[0])?.clone();
        let target = model
            .outlet_fact(inputs[1])?
            .konst
            .clone()
            .context("CenterCropPad: shape expected to be a constant")?;
        let input_shape: TVec<TDim> = fact.shape.iter().cloned().collect();
        let output_shape = self.output_shape(&input_shape, &target)?;
        let mut wire = inputs[0];
        let mut pads = vec![(0usize, 0usize); fact.rank()];
        for axis in 0..fact.rank() {
            if input_shape[axis] == output_shape[axis] {
                continue;
            }
            let input = input_shape[axis]
                .to_i64()
                .context("CenterCropPad: input dims must be known")?;
            let output = output_shape[axis].to_i64()?;
            if output < input {
                let start = (input - output) / 2;
                wire = model.wire_node(
                    format!("{prefix}.crop.{axis}"),
                    tract_core::ops::array::Slice::new(axis, start, start + output),
                    &[wire],
                )?[0];
            } else {
                let before = (output - input) / 2;
                pads[axis] = (before as usize, (output - input - before) as usize);
            }
        }
        if pads.iter().any(|&(b, a)| b > 0 || a > 0) {
            let zero = Tensor::zero_dt(fact.datum_type, &[])?;
            wire = model.wire_node(
                format!("{prefix}.pad"),
                tract_core::ops::array::Pad {
                    pads,
                    mode: tract_core::ops::array::PadMode::Constant(zero.into_arc_tensor()),
                },
                &[wire],
            )?[0];
        }
        Ok(tvec!(wire))
    }
}
