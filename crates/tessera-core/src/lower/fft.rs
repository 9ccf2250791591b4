//! tract's `Fft` (from ONNX `DFT`) as one [`KernelOp::Dft`] step, and its `Stft` (from ONNX
//! `STFT`) as the frames gathered, windowed and transformed: f32 complex pairs.

use super::{Lowering, NodeFacts, Operand, Registry, konst_values};
use crate::plan::shapes::dft_geometry;
use crate::plan::{BinaryOp, KernelOp};
use crate::{DType, Result};
use tract_onnx::prelude::{TypedNode, tensor1};
use tract_onnx::tract_core::ops::fft::{Fft, Stft};

/// At most this many frame positions (8 bytes each) in an STFT's gather table.
const MAX_FRAME_POSITIONS: usize = 1 << 24;

pub(super) fn register(registry: &mut Registry) {
    registry.add::<Fft>(fft);
    registry.add::<Stft>(stft);
}

fn fft(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Fft>() else {
        return Ok(None);
    };
    let x = facts.input(0)?;
    if x.dtype != DType::F32 || dft_geometry(&x.shape, op.axis).is_none() {
        return Ok(None);
    }
    let op = KernelOp::Dft {
        input_shape: x.shape.clone(),
        axis: op.axis,
        inverse: op.inverse,
    };
    Ok(Some(Lowering::step(op, facts)))
}

/// Frames of `frame` samples every `stride` along `axis` of complex pairs `x`: a gather of
/// positions `f * stride + k` (`[frames, frame]`), which lays them out as tract's output, times
/// the window (zero-padded to the frame and centred, as tract does), then a DFT along the new
/// frame axis.
fn stft(node: &TypedNode, facts: &NodeFacts) -> Result<Option<Lowering>> {
    let Some(op) = node.op_as::<Stft>() else {
        return Ok(None);
    };
    let (x, out) = (facts.input(0)?, facts.output(0)?);
    let Some(&length) = x.shape.get(op.axis) else {
        return Ok(None);
    };
    if x.dtype != DType::F32
        || op.stride == 0
        || op.frame == 0
        || length < op.frame
        || dft_geometry(&out.shape, op.axis + 1).is_none()
    {
        return Ok(None);
    }
    let frames = (length - op.frame) / op.stride + 1;
    // The positions table is made here, on the host: refuse one past any sane output before
    // allocating it (overlapping frames can make it far larger than the signal).
    if frames
        .checked_mul(op.frame)
        .is_none_or(|n| n > MAX_FRAME_POSITIONS)
    {
        return Ok(None);
    }
    let positions: Vec<i64> = (0..frames)
        .flat_map(|f| (0..op.frame).map(move |k| (f * op.stride + k) as i64))
        .collect();
    let mut lowering = Lowering::default();
    let Ok(indices) = tensor1(&positions).into_shape(&[frames, op.frame]) else {
        return Ok(None);
    };
    let indices = lowering.constant(indices);
    let framed = lowering.temp(out.shape.clone(), DType::F32);
    let gather = KernelOp::Gather {
        dtype: DType::F32,
        data_shape: x.shape.clone(),
        indices_shape: vec![frames, op.frame],
        index_dtype: DType::I64,
        axis: op.axis,
    };
    lowering.push(gather, vec![Operand::In(0), indices], vec![framed]);
    let mut spectrum_input = framed;
    if op.window.is_some() {
        let Some(values) = konst_values::<f32>(&op.window) else {
            return Ok(None);
        };
        if values.len() > op.frame {
            return Ok(None);
        }
        let pad_left = (op.frame - values.len()) / 2;
        let mut padded = vec![0f32; op.frame];
        padded[pad_left..pad_left + values.len()].copy_from_slice(&values);
        let mut shape = vec![1; out.shape.len()];
        let Some(frame_axis) = shape.get_mut(op.axis + 1) else {
            return Ok(None);
        };
        *frame_axis = op.frame;
        let Ok(window) = tensor1(&padded).into_shape(&shape) else {
            return Ok(None);
        };
        let window = lowering.constant(window);
        let windowed = lowering.temp(out.shape.clone(), DType::F32);
        let multiply = KernelOp::Binary {
            op: BinaryOp::Mul,
            dtype: DType::F32,
            a_shape: out.shape.clone(),
            b_shape: shape,
            out_shape: out.shape.clone(),
        };
        lowering.push(multiply, vec![framed, window], vec![windowed]);
        spectrum_input = windowed;
    }
    let dft = KernelOp::Dft {
        input_shape: out.shape.clone(),
        axis: op.axis + 1,
        inverse: false,
    };
    lowering.push(dft, vec![spectrum_input], vec![Operand::Out(0)]);
    Ok(Some(lowering))
}
