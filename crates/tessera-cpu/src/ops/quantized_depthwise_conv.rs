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
use super::quantize_linear::{FastRequantize, Quantized, bounds, round_saturated};
use crate::plan_graph::only_reader;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cast::Cast;
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
    /// The input's zero point; `None`: the op's second input, known at run time (a ConvInteger
    /// after a DynamicQuantizeLinear).
    pub input_zero: Option<i32>,
    /// u8 or i8.
    pub input: DatumType,
    pub output: Output,
}

impl Eq for FastQuantizedDepthwiseConv {}

/// What a quantized convolution makes of its integer sums.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// QLinearConv: requantized to u8 or i8 (`datum_type`), `multiplier` = `x_scale · w_scale /
    /// y_scale` per channel.
    Requantized {
        multiplier: Vec<f32>,
        zero: i32,
        datum_type: DatumType,
    },
    /// ConvInteger: the i32 sums themselves.
    Sums,
}

/// A constant input's values as i32 or f32, or `None` when the input is computed at run time.
/// Before tract's declutter a constant may still sit behind a cast (tract-onnx casts
/// QLinearConv's bias to i32): read through it.
pub(super) fn constant<T: Datum + Copy>(
    model: &TypedModel,
    node: &TypedNode,
    slot: usize,
) -> Option<Vec<T>> {
    let outlet = *node.inputs.get(slot)?;
    let fact = model.outlet_fact(outlet).ok()?;
    let cast_constant;
    let konst = match &fact.konst {
        Some(konst) => konst.as_ref(),
        None => {
            let producer = model.node(outlet.node);
            let cast = producer.op_as::<Cast>()?;
            let source = model.outlet_fact(*producer.inputs.first()?).ok()?;
            cast_constant = source
                .konst
                .as_ref()?
                .cast_to_dt(cast.to)
                .ok()?
                .into_owned();
            &cast_constant
        }
    };
    Some(
        konst
            .cast_to::<T>()
            .ok()?
            .try_as_plain_ram()
            .ok()?
            .as_slice::<T>()
            .ok()?
            .to_vec(),
    )
}

/// One value per channel from `values`: the value itself for a scalar, else exactly `channels`.
pub(super) fn per_channel<T: Copy>(values: Vec<T>, channels: usize) -> Option<Vec<T>> {
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
    /// quantized depthwise convolution (what [`FastDepthwiseConv::for_geometry`] accepts) with
    /// 8-bit input, 8-bit or i32 output, every input constant but the data and the input's zero
    /// point, and sums exact in f32.
    pub fn for_node(model: &TypedModel, node: &TypedNode) -> Option<FastQuantizedDepthwiseConv> {
        let conv = node.op_as::<Conv>()?;
        let output_type = conv.q_params?.unquantized();
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
        let input_zero = match constant::<i32>(model, node, 3) {
            Some(zero) => Some(*zero.first().filter(|_| zero.len() == 1)?),
            None if model
                .outlet_fact(node.inputs[3])
                .ok()?
                .shape
                .volume()
                .is_one() =>
            {
                None
            }
            None => return None,
        };
        let weight_zero = per_channel(constant::<i32>(model, node, 5)?, channels)?;
        if weights.len() != channels * taps {
            return None;
        }
        let kernel: Vec<i32> = weights
            .chunks_exact(taps)
            .zip(&weight_zero)
            .flat_map(|(row, &zero)| row.iter().map(move |&w| w - zero))
            .collect();
        let (low, high) = eight_bit_range(input);
        // An input zero point known only at run time lies in the input type's range.
        let input_reach = match input_zero {
            Some(zero) => (zero - low).abs().max((high - zero).abs()),
            None => high - low,
        } as u64;
        let weight_reach = kernel.iter().map(|w| w.unsigned_abs() as u64).max()?;
        if taps as u64 * input_reach * weight_reach >= EXACT_IN_F32 {
            return None;
        }
        let output = if output_type == i32::datum_type() {
            // tract scales an i32 output too; ConvInteger's scales are all 1 (as ONNX lowers it).
            let ones = |slot| {
                constant::<f32>(model, node, slot).is_some_and(|v| v.iter().all(|&s| s == 1.0))
            };
            let output_zero = constant::<i32>(model, node, 7)?;
            if !(ones(4) && ones(6) && ones(8) && output_zero.iter().all(|&z| z == 0)) {
                return None;
            }
            Output::Sums
        } else {
            let datum_type = eight_bit(output_type)?;
            let [input_scale] = constant::<f32>(model, node, 4)?[..] else {
                return None;
            };
            let weight_scale = per_channel(constant::<f32>(model, node, 6)?, channels)?;
            let [zero] = constant::<i32>(model, node, 7)?[..] else {
                return None;
            };
            let [output_scale] = constant::<f32>(model, node, 8)?[..] else {
                return None;
            };
            let multiplier = weight_scale
                .iter()
                .map(|&w| input_scale * w / output_scale)
                .collect();
            Output::Requantized {
                multiplier,
                zero,
                datum_type,
            }
        };
        Some(FastQuantizedDepthwiseConv {
            depthwise,
            kernel: kernel.into_iter().map(|w| w as f32).collect(),
            bias,
            input_zero,
            input,
            output,
        })
    }

    /// The convolution of `input` (planes as [`FastDepthwiseConv::compute`] reads them, zero
    /// point `input_zero`) into `output`, each plane's sums (without the bias) finished by
    /// `finish(channel, sums, output plane)`.
    fn convolve<I: Quantized + Into<i32> + Sync, O: Send>(
        &self,
        input: &[I],
        input_zero: i32,
        output: &mut [O],
        finish: impl Fn(usize, &[f32], &mut [O]) + Sync,
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
        let (low, high) = eight_bit_range(I::datum_type());
        ensure!(
            (low..=high).contains(&input_zero),
            "input zero point {input_zero} is outside the input type's range"
        );
        let taps = r.kernel * c.kernel;
        let padded = Padded::new(window);
        let scratch_len = padded.scratch_len();
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
                    |x| (x.into() - input_zero) as f32,
                    &self.kernel[channel * taps..][..taps],
                    0.0,
                    scratch,
                    sums,
                );
                finish(channel, sums, out);
            },
        )
    }

    /// QLinearConv: the sums plus the bias, requantized as onnxruntime does.
    pub(super) fn requantize<I: Quantized + Into<i32> + Sync, O: Quantized>(
        &self,
        input: &[I],
        input_zero: i32,
        (multiplier, zero): (&[f32], i32),
        output: &mut [O],
    ) -> TractResult<()> {
        let bounds = bounds::<O>(zero);
        self.convolve(
            input,
            input_zero,
            output,
            #[inline(always)]
            |channel, sums, out| {
                let (bias, multiplier) = (self.bias[channel], multiplier[channel]);
                for (y, &sum) in out.iter_mut().zip(sums) {
                    // SAFETY: `sum` is an integer below 2²⁴ in magnitude (checked when the op
                    // was made), so in i32's range; `as` would saturate and keep the loop scalar.
                    let sum: i32 = unsafe { sum.to_int_unchecked() };
                    let level = round_saturated((sum + bias) as f32 * multiplier, bounds);
                    *y = O::from_i32(level + zero);
                }
            },
        )
    }

    /// ConvInteger: the sums plus the bias.
    pub(super) fn sums<I: Quantized + Into<i32> + Sync>(
        &self,
        input: &[I],
        input_zero: i32,
        output: &mut [i32],
    ) -> TractResult<()> {
        self.convolve(
            input,
            input_zero,
            output,
            #[inline(always)]
            |channel, sums, out| {
                let bias = self.bias[channel];
                for (y, &sum) in out.iter_mut().zip(sums) {
                    // SAFETY: as in `requantize`.
                    *y = unsafe { sum.to_int_unchecked::<i32>() } + bias;
                }
            },
        )
    }

    fn eval_as<I: Quantized + Into<i32> + Sync>(
        &self,
        input: &TValue,
        input_zero: i32,
    ) -> TractResult<Tensor> {
        let shape = &self.depthwise.window.output_shape;
        let plain = input.try_as_plain_ram()?;
        let xs = plain.as_slice::<I>()?;
        match &self.output {
            Output::Sums => {
                let mut output = Tensor::zero::<i32>(shape)?;
                self.sums(
                    xs,
                    input_zero,
                    output.try_as_plain_ram_mut()?.as_slice_mut()?,
                )?;
                Ok(output)
            }
            Output::Requantized {
                multiplier,
                zero,
                datum_type,
            } => {
                let parameters = (&multiplier[..], *zero);
                if *datum_type == u8::datum_type() {
                    self.requantized::<I, u8>(xs, input_zero, parameters)
                } else {
                    self.requantized::<I, i8>(xs, input_zero, parameters)
                }
            }
        }
    }

    /// [`Self::requantize`] into a new tensor of `O`.
    fn requantized<I: Quantized + Into<i32> + Sync, O: Quantized + tract_num_traits::Zero>(
        &self,
        input: &[I],
        input_zero: i32,
        parameters: (&[f32], i32),
    ) -> TractResult<Tensor> {
        let mut output = Tensor::zero::<O>(&self.depthwise.window.output_shape)?;
        let mut ys = output.try_as_plain_ram_mut()?;
        self.requantize(input, input_zero, parameters, ys.as_slice_mut::<O>()?)?;
        Ok(output)
    }

    fn output_type(&self) -> DatumType {
        match &self.output {
            Output::Sums => i32::datum_type(),
            Output::Requantized { datum_type, .. } => *datum_type,
        }
    }
}

/// A quantized convolution's input zero point: `constant`, or else its second input (known at
/// run time, a DynamicQuantizeLinear's), one value.
pub(super) fn input_zero_point(constant: Option<i32>, inputs: &[TValue]) -> TractResult<i32> {
    match (constant, inputs.get(1)) {
        (Some(zero), None) => Ok(zero),
        (None, Some(zero)) => {
            ensure!(
                zero.len() == 1,
                "a quantized convolution's input zero point is one value"
            );
            zero.cast_to_scalar::<i32>()
        }
        _ => bail!("a quantized convolution got {} inputs", inputs.len()),
    }
}

/// The values of u8 or i8.
fn eight_bit_range(dt: DatumType) -> (i32, i32) {
    if dt == u8::datum_type() {
        (u8::MIN as i32, u8::MAX as i32)
    } else {
        (i8::MIN as i32, i8::MAX as i32)
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
        let input_zero = input_zero_point(self.input_zero, &inputs)?;
        let output = if self.input == u8::datum_type() {
            self.eval_as::<u8>(&inputs[0], input_zero)?
        } else {
            self.eval_as::<i8>(&inputs[0], input_zero)?
        };
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastQuantizedDepthwiseConv {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let zero_inputs = usize::from(self.input_zero.is_none());
        ensure!(
            inputs.len() == 1 + zero_inputs,
            "a quantized depthwise convolution takes its input (and its zero point when it is \
             computed)"
        );
        Ok(tvec!(
            self.output_type()
                .fact(&*self.depthwise.window.output_shape)
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
/// accepts, reading its data input (and the input's zero point when it is computed). Returns how
/// many.
pub fn use_quantized_depthwise(model: &mut TypedModel) -> TractResult<usize> {
    let found: Vec<(usize, FastQuantizedDepthwiseConv)> = model
        .nodes()
        .iter()
        .filter_map(|node| Some((node.id, FastQuantizedDepthwiseConv::for_node(model, node)?)))
        .collect();
    let count = found.len();
    for (id, mut fast) in found {
        let mut patch = TypedModelPatch::new("quantized depthwise convolution");
        let node = model.node(id);
        let mut inputs = vec![patch.tap_model(model, node.inputs[0])?];
        if fast.input_zero.is_none() {
            inputs.push(patch.tap_model(model, node.inputs[3])?);
        }
        // Sums requantized by the op alone reading them (a QDQ convolution made integer): the
        // requantization is done on each plane as it is computed.
        let mut output = OutletId::new(id, 0);
        if let (Output::Sums, Some(reader)) = (&fast.output, only_reader(model, id)?)
            && let Some(requantize) = model.node(reader).op_as::<FastRequantize>()
            && requantize.axis == 1
            && let Some(multiplier) =
                per_channel(requantize.multiplier.clone(), fast.depthwise.channels)
        {
            fast.output = Output::Requantized {
                multiplier,
                zero: requantize.zero,
                datum_type: requantize.output,
            };
            output = OutletId::new(reader, 0);
        }
        let wire = patch.wire_node(node.name.clone(), fast, &inputs)?;
        patch.shunt_outside(model, output, wire[0])?;
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
    /// over the taps inside the input, plus the bias; then, given `(multiplier per channel, zero,
    /// saturation range)`, onnxruntime's requantization.
    fn reference<I: Quantized + Into<i32>>(
        op: &FastQuantizedDepthwiseConv,
        input: &[I],
        input_zero: i32,
        requantize: Option<(&[f32], i32, (i32, i32))>,
    ) -> Vec<i32> {
        let window = &op.depthwise.window;
        let centred: Vec<f32> = input
            .iter()
            .map(|&x| (x.into() - input_zero) as f32)
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
                        .sum::<i32>()
                        + op.bias[ch];
                    out.push(match requantize {
                        None => sum,
                        Some((multiplier, zero, (low, high))) => {
                            let scaled = sum as f32 * multiplier[ch];
                            (scaled.round_ties_even() as i32 + zero).clamp(low, high)
                        }
                    });
                }
            }
        }
        out
    }

    /// Every geometry of the pools' tests and two more, 3 channels, 2 batches.
    fn ops<I: Quantized>(output: Output) -> Vec<FastQuantizedDepthwiseConv> {
        let mut windows: Vec<Window2d> = GEOMETRIES.into_iter().map(window).collect();
        windows.push(window((12, 5, 1, 1, 2)));
        windows.push(window((9, 3, 1, 2, 2)));
        windows
            .into_iter()
            .map(|window| {
                let taps = window.rows.kernel * window.cols.kernel;
                FastQuantizedDepthwiseConv {
                    depthwise: FastDepthwiseConv {
                        window,
                        channels: 3,
                    },
                    kernel: levels(3 * taps, -127, 127)
                        .iter()
                        .map(|&w| w as f32)
                        .collect(),
                    bias: vec![-700, 0, 1234],
                    input_zero: None,
                    input: I::datum_type(),
                    output: output.clone(),
                }
            })
            .collect()
    }

    fn input_for<I: Quantized>(op: &FastQuantizedDepthwiseConv) -> Vec<I> {
        let count = 6 * op.depthwise.window.rows.input * op.depthwise.window.cols.input;
        levels(count, I::MIN, I::MAX)
            .into_iter()
            .map(I::from_i32)
            .collect()
    }

    fn check<I: Quantized + Into<i32> + Sync, O: Quantized + Into<i32> + Copy>(
        input_zero: i32,
        zero: i32,
    ) {
        // Per channel, one of them making ties (sums × 0.5).
        let multiplier = vec![0.0123, 0.5, 0.0007];
        let output = Output::Requantized {
            multiplier: multiplier.clone(),
            zero,
            datum_type: O::datum_type(),
        };
        for op in ops::<I>(output) {
            let input = input_for::<I>(&op);
            let mut out = vec![O::from_i32(0); op.depthwise.window.output_shape.iter().product()];
            op.requantize(&input, input_zero, (&multiplier, zero), &mut out)
                .unwrap();
            let got: Vec<i32> = out.iter().map(|&y| y.into()).collect();
            let range = (O::MIN, O::MAX);
            let want = reference(&op, &input, input_zero, Some((&multiplier, zero, range)));
            assert_eq!(got, want, "{:?}", op.depthwise.window);
        }
    }

    #[test]
    fn matches_the_integer_definition_exactly() {
        check::<u8, u8>(128, 3);
        check::<u8, i8>(17, -5);
        check::<i8, u8>(-3, 250);
        check::<i8, i8>(0, 0);
    }

    #[test]
    fn integer_sums_match_the_definition_exactly() {
        for op in ops::<u8>(Output::Sums) {
            let input = input_for::<u8>(&op);
            for input_zero in [0, 77, 255] {
                let mut out = vec![0i32; op.depthwise.window.output_shape.iter().product()];
                op.sums(&input, input_zero, &mut out).unwrap();
                let want = reference(&op, &input, input_zero, None);
                assert_eq!(out, want, "{:?}", op.depthwise.window);
            }
            let mut out = vec![0i32; op.depthwise.window.output_shape.iter().product()];
            let error = op.sums(&input, 256, &mut out).unwrap_err();
            assert!(error.to_string().contains("outside the input type's range"));
        }
    }

    /// A tract quantized depthwise convolution of `size`² taps, one weight as far from its zero
    /// point as it goes, in a model: a QLinearConv to u8, or (`sums`) a ConvInteger whose input
    /// zero point is the model's second input.
    fn quantized_depthwise(size: usize, sums: bool) -> TypedModel {
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
        inputs.push(model.add_const("bias", tensor1(&[5i32, -5, 0])).unwrap());
        inputs.push(if sums {
            model.add_source("x_zero", i32::fact([0usize; 0])).unwrap()
        } else {
            model.add_const("x_zero", tensor0(0i32)).unwrap()
        });
        // A ConvInteger's scales are 1 and its output zero point 0.
        let scaled = [
            ("x_scale", tensor0(0.02f32)),
            ("w_zero", tensor0(0i32)),
            ("w_scale", tensor1(&[0.01f32, 0.02, 0.03])),
            ("y_zero", tensor0(128i32)),
            ("y_scale", tensor0(0.5f32)),
        ];
        let plain = [
            ("x_scale", tensor0(1f32)),
            ("w_zero", tensor0(0i32)),
            ("w_scale", tensor0(1f32)),
            ("y_zero", tensor0(0i32)),
            ("y_scale", tensor0(1f32)),
        ];
        for (name, value) in if sums { plain } else { scaled } {
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
            q_params: Some(if sums {
                i32::datum_type()
            } else {
                u8::datum_type()
            }),
        };
        let y = model.wire_node("conv", conv, &inputs).unwrap();
        model.select_output_outlets(&y).unwrap();
        model
    }

    /// The model's output for a fixed input (and input zero point 100 where it is an input).
    fn run(model: TypedModel) -> Vec<i32> {
        let x: Vec<u8> = levels(3 * 24 * 24, 0, 255)
            .iter()
            .map(|&v| v as u8)
            .collect();
        let mut inputs = tvec!(
            tract_ndarray::Array4::from_shape_vec((1, 3, 24, 24), x)
                .unwrap()
                .into_tvalue()
        );
        if model.inputs.len() == 2 {
            inputs.push(tensor0(100i32).into_tvalue());
        }
        let out = model.into_runnable().unwrap().run(inputs).unwrap();
        let out = out[0].cast_to::<i32>().unwrap();
        out.try_as_plain_ram()
            .unwrap()
            .as_slice::<i32>()
            .unwrap()
            .to_vec()
    }

    #[test]
    fn a_model_s_quantized_depthwise_convolution_is_replaced_when_its_sums_are_exact() {
        // 16² taps × 255 × 128 < 2²⁴; 23² taps × 255 × 128 is not.
        let mut exact = quantized_depthwise(16, false);
        let tract_s = run(quantized_depthwise(16, false).into_optimized().unwrap());
        assert_eq!(use_quantized_depthwise(&mut exact).unwrap(), 1);
        let op = exact
            .nodes()
            .iter()
            .find_map(|n| n.op_as::<FastQuantizedDepthwiseConv>())
            .unwrap();
        assert_eq!(op.bias, [5, -5, 0]);
        let Output::Requantized {
            multiplier, zero, ..
        } = &op.output
        else {
            panic!("{:?}", op.output);
        };
        assert_eq!(
            multiplier,
            &[0.02 * 0.01 / 0.5, 0.02 * 0.02 / 0.5, 0.02 * 0.03 / 0.5]
        );
        assert_eq!((op.input_zero, *zero), (Some(0), 128));
        assert_eq!(op.kernel[0], -128.0);
        let ours = run(exact);
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
        let mut inexact = quantized_depthwise(23, false);
        assert_eq!(use_quantized_depthwise(&mut inexact).unwrap(), 0);
    }

    #[test]
    fn a_conv_integer_with_a_computed_zero_point_gives_tract_s_sums() {
        let mut ours = quantized_depthwise(5, true);
        assert_eq!(use_quantized_depthwise(&mut ours).unwrap(), 1);
        let op = ours
            .nodes()
            .iter()
            .find_map(|n| n.op_as::<FastQuantizedDepthwiseConv>())
            .unwrap();
        assert_eq!((op.input_zero, &op.output), (None, &Output::Sums));
        let want = run(quantized_depthwise(5, true).into_optimized().unwrap());
        assert_eq!(run(ours), want);
    }
}
