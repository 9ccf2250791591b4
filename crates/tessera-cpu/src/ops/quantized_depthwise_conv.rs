//! Quantized depthwise 2-D convolution ([ONNX `QLinearConv`] with one input and one output
//! channel per group, u8 or i8 in and out), replacing tract's in cpu plans. tract runs every
//! quantized convolution as im2col + an integer matrix product per group, which for a depthwise
//! one is a product of one row per channel plus the zero-point corrections as separate ops:
//! PaddleOCR v4's recognizer in the QOperator format spent 74 of its 95 ms per run in its 14
//! depthwise convolutions (1.8 ms as floats).
//!
//! Here the accumulation is integer arithmetic done exactly in f32, on
//! [`FastDepthwiseConv`]'s loops: each input value enters as `x − x_zero` and each weight as
//! `w − w_zero`, both integers of magnitude ≤ 255, so every product and every partial sum of a
//! window is an integer below 2²⁴ as long as `taps × max|x − x_zero| × max|w − w_zero|` is (checked
//! when the op is made), and f32 holds those exactly. Then, as onnxruntime does (MLAS's
//! requantization): the i32 sum plus the i32 bias, times `x_scale · w_scale / y_scale` in f32,
//! saturated, rounded half to even, plus `y_zero`.
//!
//! [ONNX `QLinearConv`]: https://onnx.ai/onnx/operators/onnx__QLinearConv.html

use super::depthwise_conv::{FastDepthwiseConv, Padded, convolve_plane};
use super::quantize_linear::{Quantized, bounds, round_saturated};
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::Conv;

/// Integers of magnitude below this are exact in f32.
const EXACT_IN_F32: u64 = 1 << 24;

#[derive(Debug, Clone, PartialEq)]
pub struct FastQuantizedDepthwiseConv {
    pub depthwise: FastDepthwiseConv,
    /// `w − w_zero` per channel and tap (`[channels, kh·kw]`).
    pub kernel: Vec<f32>,
    /// Added to each channel's integer sum (one value per channel).
    pub bias: Vec<i32>,
    /// `x_scale · w_scale / y_scale` per channel.
    pub multiplier: Vec<f32>,
    pub input_zero: i32,
    pub output_zero: i32,
    /// u8 or i8, each.
    pub input: DatumType,
    pub output: DatumType,
}

impl Eq for FastQuantizedDepthwiseConv {}

/// A constant input's values as i32 or f32, or `None` when the input is computed at run time.
fn constant<T: Datum + Copy>(model: &TypedModel, node: &TypedNode, slot: usize) -> Option<Vec<T>> {
    let fact = model.outlet_fact(*node.inputs.get(slot)?).ok()?;
    let value = fact.konst.as_ref()?.cast_to::<T>().ok()?;
    Some(
        value
            .try_as_plain_ram()
            .ok()?
            .as_slice::<T>()
            .ok()?
            .to_vec(),
    )
}

/// One value per channel from `values`: the value itself for a scalar, else exactly `channels`.
fn per_channel<T: Copy>(values: Vec<T>, channels: usize) -> Option<Vec<T>> {
    match values.len() {
        1 => Some(vec![values[0]; channels]),
        n if n == channels => Some(values),
        _ => None,
    }
}

/// The plain integer type behind a (possibly quantized) u8 or i8 datum type.
fn eight_bit(dt: DatumType) -> Option<DatumType> {
    let plain = dt.unquantized();
    [u8::datum_type(), i8::datum_type()]
        .contains(&plain)
        .then_some(plain)
}

impl FastQuantizedDepthwiseConv {
    /// The fast version of `node` (a tract `Conv`) on an input of `shape`, when it applies: a
    /// quantized depthwise convolution (what [`FastDepthwiseConv::for_geometry`] accepts) with 8-bit
    /// input and output, every input but the data constant, and sums exact in f32.
    pub fn for_node(model: &TypedModel, node: &TypedNode) -> Option<FastQuantizedDepthwiseConv> {
        let conv = node.op_as::<Conv>()?;
        let output = eight_bit(conv.q_params?)?;
        if node.inputs.len() != 9 {
            return None;
        }
        let input_fact = model.outlet_fact(node.inputs[0]).ok()?;
        if input_fact.datum_type != input_fact.datum_type.unquantized() {
            return None;
        }
        let input = eight_bit(input_fact.datum_type)?;
        let shape = input_fact.shape.as_concrete()?;
        let depthwise = FastDepthwiseConv::for_geometry(conv, shape)?;
        let channels = depthwise.channels;
        let taps = depthwise.window.rows.kernel * depthwise.window.cols.kernel;
        let weights = constant::<i32>(model, node, 1)?;
        let bias = per_channel(constant::<i32>(model, node, 2)?, channels)?;
        let [input_zero] = constant::<i32>(model, node, 3)?[..] else {
            return None;
        };
        let [input_scale] = constant::<f32>(model, node, 4)?[..] else {
            return None;
        };
        let weight_zero = per_channel(constant::<i32>(model, node, 5)?, channels)?;
        let weight_scale = per_channel(constant::<f32>(model, node, 6)?, channels)?;
        let [output_zero] = constant::<i32>(model, node, 7)?[..] else {
            return None;
        };
        let [output_scale] = constant::<f32>(model, node, 8)?[..] else {
            return None;
        };
        if weights.len() != channels * taps {
            return None;
        }
        let kernel: Vec<i32> = weights
            .chunks_exact(taps)
            .zip(&weight_zero)
            .flat_map(|(row, &zero)| row.iter().map(move |&w| w - zero))
            .collect();
        let (low, high) = if input == u8::datum_type() {
            (u8::MIN as i32, u8::MAX as i32)
        } else {
            (i8::MIN as i32, i8::MAX as i32)
        };
        let input_reach = (input_zero - low).abs().max((high - input_zero).abs()) as u64;
        let weight_reach = kernel.iter().map(|w| w.unsigned_abs() as u64).max()?;
        if taps as u64 * input_reach * weight_reach >= EXACT_IN_F32 {
            return None;
        }
        let multiplier = weight_scale
            .iter()
            .map(|&w| input_scale * w / output_scale)
            .collect();
        Some(FastQuantizedDepthwiseConv {
            depthwise,
            kernel: kernel.into_iter().map(|w| w as f32).collect(),
            bias,
            multiplier,
            input_zero,
            output_zero,
            input,
            output,
        })
    }

    /// The convolution of `input` (planes as [`FastDepthwiseConv::compute`] reads them) into
    /// `output`.
    pub(super) fn compute<I: Quantized + Into<i32> + Sync, O: Quantized>(
        &self,
        input: &[I],
        output: &mut [O],
    ) -> TractResult<()> {
        let window = &self.depthwise.window;
        let (r, c) = (window.rows, window.cols);
        let (in_plane, out_plane) = (r.input * c.input, r.output * c.output);
        if out_plane == 0 || output.is_empty() {
            return Ok(());
        }
        ensure!(
            input.len() == output.len() / out_plane * in_plane,
            "quantized depthwise input and output planes differ"
        );
        let taps = r.kernel * c.kernel;
        let padded = Padded::new(window);
        let scratch_len = padded.scratch_len();
        let bounds = bounds::<O>(self.output_zero);
        self.depthwise.for_each_plane(
            output,
            out_plane,
            #[inline(always)]
            |plane, scratch, out| {
                let channel = plane % self.depthwise.channels;
                let (scratch, sums) = scratch.split_at_mut(scratch_len);
                convolve_plane(
                    &padded,
                    &input[plane * in_plane..][..in_plane],
                    |x| (x.into() - self.input_zero) as f32,
                    &self.kernel[channel * taps..][..taps],
                    0.0,
                    scratch,
                    sums,
                );
                let (bias, multiplier) = (self.bias[channel], self.multiplier[channel]);
                for (y, &sum) in out.iter_mut().zip(&*sums) {
                    let level = round_saturated((sum as i32 + bias) as f32 * multiplier, bounds);
                    *y = O::from_i32(level + self.output_zero);
                }
            },
        )
    }

    fn eval_as<I: Quantized + Into<i32> + Sync, O: Quantized + tract_num_traits::Zero>(
        &self,
        input: &TValue,
    ) -> TractResult<Tensor> {
        let mut output = Tensor::zero::<O>(&self.depthwise.window.output_shape)?;
        self.compute::<I, O>(
            input.try_as_plain_ram()?.as_slice::<I>()?,
            output.try_as_plain_ram_mut()?.as_slice_mut::<O>()?,
        )?;
        Ok(output)
    }
}

impl Op for FastQuantizedDepthwiseConv {
    fn name(&self) -> StaticName {
        "FastQuantizedDepthwiseConv".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastQuantizedDepthwiseConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let u8_in = self.input == u8::datum_type();
        let u8_out = self.output == u8::datum_type();
        let output = match (u8_in, u8_out) {
            (true, true) => self.eval_as::<u8, u8>(&input)?,
            (true, false) => self.eval_as::<u8, i8>(&input)?,
            (false, true) => self.eval_as::<i8, u8>(&input)?,
            (false, false) => self.eval_as::<i8, i8>(&input)?,
        };
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastQuantizedDepthwiseConv {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(
            inputs.len() == 1,
            "a quantized depthwise convolution takes its input alone"
        );
        Ok(tvec!(
            self.output.fact(&*self.depthwise.window.output_shape)
        ))
    }

    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let taps = self.depthwise.window.rows.kernel * self.depthwise.window.cols.kernel;
        let points: usize = self.depthwise.window.output_shape.iter().product();
        Ok(tvec!((
            Cost::FMA(f32::datum_type()),
            (points * taps).into()
        )))
    }
}

/// Replaces every quantized depthwise convolution that [`FastQuantizedDepthwiseConv::for_node`]
/// accepts, reading its data input alone. Returns how many.
pub fn use_quantized_depthwise(model: &mut TypedModel) -> TractResult<usize> {
    let found: Vec<(usize, FastQuantizedDepthwiseConv)> = model
        .nodes()
        .iter()
        .filter_map(|node| Some((node.id, FastQuantizedDepthwiseConv::for_node(model, node)?)))
        .collect();
    let count = found.len();
    for (id, fast) in found {
        let mut patch = TypedModelPatch::new("quantized depthwise convolution");
        let input = patch.tap_model(model, model.node(id).inputs[0])?;
        let wire = patch.wire_node(model.node(id).name.clone(), fast, &[input])?;
        patch.shunt_outside(model, OutletId::new(id, 0), wire[0])?;
        patch.apply(model)?;
    }
    if count > 0 {
        model.compact()?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::super::pool_2d::Window2d;
    use super::super::pool_2d::tests::{GEOMETRIES, taps_inside_window, window};
    use super::*;
    use tessera_core::tract_onnx::tract_core::ops::cnn::{KernelFormat, PaddingSpec, PoolSpec};
    use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

    /// Integers in `low..=high` with no pattern a loop could lean on.
    fn levels(count: usize, low: i32, high: i32) -> Vec<i32> {
        (0..count)
            .map(|i| low + (i * 97 + i / 7 * 31) as i32 % (high - low + 1))
            .collect()
    }

    /// The definition, in integers: per output point the i32 sum of `(x − x_zero)(w − w_zero)`
    /// over the taps inside the input, plus the bias; then onnxruntime's requantization.
    fn reference<I: Quantized + Into<i32>, O: Quantized>(
        op: &FastQuantizedDepthwiseConv,
        input: &[I],
    ) -> Vec<i32> {
        let window = &op.depthwise.window;
        let centred: Vec<f32> = input
            .iter()
            .map(|&x| (x.into() - op.input_zero) as f32)
            .collect();
        let (r, c) = (window.rows, window.cols);
        let (planes, taps) = (input.len() / (r.input * c.input), r.kernel * c.kernel);
        let mut out = vec![];
        for p in 0..planes {
            let ch = p % op.depthwise.channels;
            for oy in 0..r.output {
                for ox in 0..c.output {
                    let sum: i32 = taps_inside_window(window, &centred, p, (oy, ox))
                        .iter()
                        .map(|&(tap, x)| x as i32 * op.kernel[ch * taps + tap] as i32)
                        .sum();
                    let scaled = (sum + op.bias[ch]) as f32 * op.multiplier[ch];
                    let level = scaled.round_ties_even() as i32 + op.output_zero;
                    out.push(level.clamp(O::MIN, O::MAX));
                }
            }
        }
        out
    }

    fn check<I: Quantized + Into<i32> + Sync, O: Quantized + Into<i32> + Copy>(
        input_zero: i32,
        output_zero: i32,
    ) {
        let mut windows: Vec<Window2d> = GEOMETRIES.into_iter().map(window).collect();
        windows.push(window((12, 5, 1, 1, 2)));
        windows.push(window((9, 3, 1, 2, 2)));
        for window in windows {
            let taps = window.rows.kernel * window.cols.kernel;
            let op = FastQuantizedDepthwiseConv {
                depthwise: FastDepthwiseConv {
                    window: window.clone(),
                    channels: 3,
                },
                kernel: levels(3 * taps, -127, 127)
                    .iter()
                    .map(|&w| w as f32)
                    .collect(),
                bias: vec![-700, 0, 1234],
                // Per channel, one of them making ties (sums × 0.5).
                multiplier: vec![0.0123, 0.5, 0.0007],
                input_zero,
                output_zero,
                input: I::datum_type(),
                output: O::datum_type(),
            };
            let count = 6 * window.rows.input * window.cols.input;
            let input: Vec<I> = levels(count, I::MIN, I::MAX)
                .into_iter()
                .map(I::from_i32)
                .collect();
            let mut out = vec![O::from_i32(0); window.output_shape.iter().product()];
            op.compute(&input, &mut out).unwrap();
            let got: Vec<i32> = out.iter().map(|&y| y.into()).collect();
            assert_eq!(
                got,
                reference::<I, O>(&op, &input),
                "{:?} × {:?}",
                window.rows,
                window.cols
            );
        }
    }

    #[test]
    fn matches_the_integer_definition_exactly() {
        check::<u8, u8>(128, 3);
        check::<u8, i8>(17, -5);
        check::<i8, u8>(-3, 250);
        check::<i8, i8>(0, 0);
    }

    /// A tract quantized depthwise convolution of `size`² taps, one weight as far from its zero
    /// point as it goes, in a model.
    fn quantized_depthwise(size: usize) -> TypedModel {
        let (channels, side) = (3, 24);
        let mut model = TypedModel::default();
        let x = model
            .add_source("x", u8::fact([1, channels, side, side]))
            .unwrap();
        // One weight at the end of the range (what decides exactness), the rest small so that
        // few outputs saturate.
        let weights: Vec<i8> = levels(channels * size * size, -3, 3)
            .iter()
            .enumerate()
            .map(|(i, &w)| if i == 0 { -128 } else { w as i8 })
            .collect();
        let weights =
            tract_ndarray::Array4::from_shape_vec((channels, 1, size, size), weights).unwrap();
        let mut inputs = vec![x, model.add_const("w", weights.into_tensor()).unwrap()];
        for (name, value) in [
            ("bias", tensor1(&[5i32, -5, 0])),
            ("x_zero", tensor0(0i32)),
            ("x_scale", tensor0(0.02f32)),
            ("w_zero", tensor0(0i32)),
            ("w_scale", tensor1(&[0.01f32, 0.02, 0.03])),
            ("y_zero", tensor0(128i32)),
            ("y_scale", tensor0(0.5f32)),
        ] {
            inputs.push(model.add_const(name, value).unwrap());
        }
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: DataFormat::NCHW,
                kernel_shape: tvec![size, size],
                padding: PaddingSpec::Valid,
                dilations: None,
                strides: None,
                input_channels: channels,
                output_channels: channels,
            },
            kernel_fmt: KernelFormat::OIHW,
            group: channels,
            q_params: Some(u8::datum_type()),
        };
        let y = model.wire_node("conv", conv, &inputs).unwrap();
        model.select_output_outlets(&y).unwrap();
        model
    }

    #[test]
    fn a_model_s_quantized_depthwise_convolution_is_replaced_when_its_sums_are_exact() {
        // 16² taps × 255 × 128 < 2²⁴; 23² taps × 255 × 128 is not.
        let run = |model: TypedModel| -> Vec<i32> {
            let x: Vec<u8> = levels(3 * 24 * 24, 0, 255)
                .iter()
                .map(|&v| v as u8)
                .collect();
            let x = tract_ndarray::Array4::from_shape_vec((1, 3, 24, 24), x).unwrap();
            let out = model
                .into_runnable()
                .unwrap()
                .run(tvec!(x.into_tvalue()))
                .unwrap();
            let out = out[0].cast_to::<i32>().unwrap();
            out.try_as_plain_ram()
                .unwrap()
                .as_slice::<i32>()
                .unwrap()
                .to_vec()
        };
        let mut exact = quantized_depthwise(16);
        let tract_s = run(quantized_depthwise(16).into_optimized().unwrap());
        assert_eq!(use_quantized_depthwise(&mut exact).unwrap(), 1);
        let ours = run(exact.clone());
        // tract requantizes in fixed point, onnxruntime (and Tessera) in f32: a tie may round
        // the other way.
        assert_eq!(ours.len(), tract_s.len());
        for (i, (a, b)) in ours.iter().zip(&tract_s).enumerate() {
            assert!((a - b).abs() <= 1, "element {i}: {a}, tract {b}");
        }
        let unsaturated = ours.iter().filter(|&&y| y > 0 && y < 255).count();
        assert!(
            unsaturated > ours.len() / 2,
            "{unsaturated} of {}",
            ours.len()
        );
        let op = exact
            .nodes()
            .iter()
            .find_map(|n| n.op_as::<FastQuantizedDepthwiseConv>())
            .unwrap();
        assert_eq!(op.bias, [5, -5, 0]);
        assert_eq!(
            op.multiplier,
            [0.02 * 0.01 / 0.5, 0.02 * 0.02 / 0.5, 0.02 * 0.03 / 0.5]
        );
        assert_eq!((op.input_zero, op.output_zero), (0, 128));
        assert_eq!(op.kernel[0], -128.0);
        let mut inexact = quantized_depthwise(23);
        assert_eq!(use_quantized_depthwise(&mut inexact).unwrap(), 0);
    }
}
