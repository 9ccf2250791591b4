//! Quantized convolutions of few output channels (ConvInteger, QLinearConv) as float ones whose
//! sums are exact integers. tract runs every quantized k×k convolution through its integer
//! im2col (a generic gather, one value at a time) and the sums of the gathered windows for the
//! zero points: on mtcnn_pnet in onnxruntime's dynamic u8 format 2.7 of 4.1 ms per run, where the
//! float model's convolutions take ~1 ms. Only a wide product amortizes that gather
//! ([`super::qdq_products`] keeps convolutions of 256 channels or more integer).
//!
//! Here the input enters as `x − x_zero` and each weight as `w − w_zero`, both integers, so every
//! partial sum of an output is an integer bounded by `|bias| + Σ |w − w_zero| · max|x − x_zero|`
//! over its channel's weights: below 2²⁴ (checked per channel when the rewrite is made), f32 holds
//! every one exactly, whatever the order of the sums. The convolution then runs as Tessera's float
//! one. Its sums are the ConvInteger's output (as floats when a cast to f32 is all that reads
//! them), or requantized as onnxruntime does for a QLinearConv ([`FastRequantize`]).
//!
//! Where the VNNI kernel runs a quantized convolution (`quantized_tap_products`, x86-64) it
//! takes it first; this is the path for the rest: strided ones, weights whose centred values
//! leave i8 (dynamic u8 ones), CPUs without VNNI (arm64 boards).

use super::quantize_linear::FastRequantize;
use super::quantized_depthwise_conv::{constant, per_channel};
use crate::plan_graph::only_reader;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cast::{Cast, cast};
use tessera_core::tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat};

/// Integers of magnitude below this are exact in f32.
const EXACT_IN_F32: i64 = 1 << 24;

/// The fewest output channels for which tract's integer convolution is faster (magika's 512;
/// mtcnn's 10 to 128 ran 1.5–2× slower as integers than as floats).
const MIN_INTEGER_CHANNELS: usize = 256;

/// `x − x_zero` as f32, for the 8-bit `x` (input 0) and its zero point (input 1, a scalar known
/// at run time: a DynamicQuantizeLinear's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CentredF32;

fn centre<T: Copy + Into<i32>>(x: &[T], zero: i32, out: &mut [f32]) {
    for (y, &v) in out.iter_mut().zip(x) {
        *y = (v.into() - zero) as f32;
    }
}

impl Op for CentredF32 {
    fn name(&self) -> StaticName {
        "CentredF32".into()
    }

    op_as_typed_op!();
}

impl EvalOp for CentredF32 {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, zero) = args_2!(inputs);
        let zero = zero.cast_to_scalar::<i32>()?;
        let mut output = Tensor::zero::<f32>(x.shape())?;
        let mut ram = output.try_as_plain_ram_mut()?;
        let out = ram.as_slice_mut::<f32>()?;
        let plain = x.try_as_plain_ram()?;
        match x.datum_type() {
            DatumType::U8 => centre(plain.as_slice::<u8>()?, zero, out),
            DatumType::I8 => centre(plain.as_slice::<i8>()?, zero, out),
            other => bail!("centring {other:?}, not 8-bit integers"),
        }
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for CentredF32 {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 2 && inputs[1].shape.volume().is_one());
        Ok(tvec!(f32::fact(inputs[0].shape.clone())))
    }
}

/// How far a u8 (else i8) value can be from its zero point: from the zero point when it is a
/// known constant, the type's whole range otherwise.
pub(super) fn reach_from_zero(dt: DatumType, zero: Option<i32>) -> i64 {
    let (low, high) = if dt == u8::datum_type() {
        (0i64, 255i64)
    } else {
        (-128, 127)
    };
    match zero {
        Some(zero) => (zero as i64 - low).abs().max((high - zero as i64).abs()),
        None => high - low,
    }
}

fn is_plain_8_bit(dt: DatumType) -> bool {
    dt == u8::datum_type() || dt == i8::datum_type()
}

/// A quantized convolution of one group over a computed 8-bit input with one zero point, with
/// constant 8-bit OIHW weights, bias and output parameters: what both rewrites of this module's
/// kind read from the node.
pub(super) struct QuantizedConv {
    pub conv: Conv,
    pub channels: usize,
    /// The input's type (u8 or i8) and its zero point when it is a constant.
    pub input: DatumType,
    pub input_zero: Option<i32>,
    /// `w − w_zero`, one row of `C · kh · kw` per output channel.
    pub centred: Vec<i32>,
    pub bias: Vec<i32>,
    /// How the sums become the output: `None` for a ConvInteger's i32 sums.
    pub requantize: Option<FastRequantize>,
}

impl QuantizedConv {
    pub fn of(model: &TypedModel, node: &TypedNode) -> Option<QuantizedConv> {
        let conv = node.op_as::<Conv>()?;
        let output_type = conv.q_params?.unquantized();
        let channels = conv.pool_spec.output_channels;
        if node.inputs.len() != 9 || conv.group != 1 || conv.kernel_fmt != KernelFormat::OIHW {
            return None;
        }
        let x = model.outlet_fact(node.inputs[0]).ok()?;
        let x_zero = model.outlet_fact(node.inputs[3]).ok()?;
        if x.konst.is_some() || !is_plain_8_bit(x.datum_type) || !x_zero.shape.volume().is_one() {
            return None;
        }
        let weights_fact = model.outlet_fact(node.inputs[1]).ok()?;
        if !is_plain_8_bit(weights_fact.konst.as_ref()?.datum_type()) {
            return None;
        }
        let weights = constant::<i32>(model, node, 1)?;
        let bias = per_channel(constant::<i32>(model, node, 2)?, channels)?;
        let weight_zeros = per_channel(constant::<i32>(model, node, 5)?, channels)?;
        if channels == 0 || weights.len() % channels != 0 {
            return None;
        }
        let per_output = weights.len() / channels;
        let centred: Vec<i32> = weights
            .chunks_exact(per_output)
            .zip(&weight_zeros)
            .flat_map(|(row, &zero)| row.iter().map(move |&w| w - zero))
            .collect();
        let scalar = |slot: usize| constant::<f32>(model, node, slot).filter(|v| v.len() == 1);
        let (x_scale, y_scale) = (scalar(4)?[0], scalar(8)?[0]);
        let weight_scales = per_channel(constant::<f32>(model, node, 6)?, channels)?;
        let y_zero = constant::<i32>(model, node, 7).filter(|v| v.len() == 1)?[0];
        let requantize = if output_type == i32::datum_type() {
            // A ConvInteger: the sums themselves.
            if x_scale != 1.0
                || y_scale != 1.0
                || y_zero != 0
                || weight_scales.iter().any(|&s| s != 1.0)
            {
                return None;
            }
            None
        } else if is_plain_8_bit(output_type) && !conv.pool_spec.data_format.c_is_last() {
            // onnxruntime's output scale: x_scale · w_scale / y_scale, in f32, in that order.
            let multiplier = weight_scales
                .iter()
                .map(|&w| x_scale * w / y_scale)
                .collect();
            Some(FastRequantize {
                multiplier,
                axis: 1,
                zero: y_zero,
                output: output_type,
            })
        } else {
            return None;
        };
        Some(QuantizedConv {
            conv: conv.clone(),
            channels,
            input: x.datum_type,
            input_zero: constant::<i32>(model, node, 3).map(|z| z[0]),
            centred,
            bias,
            requantize,
        })
    }

    /// Wires `sums` (the i32 or exact f32 sums standing for `node`'s output) into `patch`,
    /// requantized where the node requantizes; returns the wire and the node whose output it
    /// replaces: the node's, or that of a cast to f32 that alone reads i32 sums given as floats.
    pub fn wire_output(
        self,
        model: &TypedModel,
        node: &TypedNode,
        patch: &mut TypedModelPatch,
        sums: OutletId,
    ) -> Option<(OutletId, usize)> {
        let name = &node.name;
        let floats = patch.outlet_fact(sums).ok()?.datum_type == f32::datum_type();
        Some(match self.requantize {
            Some(requantize) => (patch.wire_node(name, requantize, &[sums]).ok()?[0], node.id),
            None if !floats => (sums, node.id),
            None => match only_reader(model, node.id).ok()? {
                // The sums as floats, for a cast to f32 that reads nothing else.
                Some(reader)
                    if model
                        .node(reader)
                        .op_as::<Cast>()
                        .is_some_and(|c| c.to == f32::datum_type()) =>
                {
                    (sums, reader)
                }
                _ => {
                    let wire = patch
                        .wire_node(name, cast(i32::datum_type()), &[sums])
                        .ok()?[0];
                    (wire, node.id)
                }
            },
        })
    }
}

/// The rewrite of `node` as a float convolution. Where `integer_pays`, only of a [`QuantizedConv`]
/// of fewer than [`MIN_INTEGER_CHANNELS`] outputs whose every channel's sums stay below 2²⁴
/// (exact); otherwise of every [`QuantizedConv`], sums past 2²⁴ carrying f32's rounding (at most
/// a relative 2⁻²⁴ per term: a requantized output moves a step only next to a tie).
fn float_patch(
    model: &TypedModel,
    node: &TypedNode,
    integer_pays: bool,
) -> Option<TypedModelPatch> {
    let q = QuantizedConv::of(model, node)?;
    if integer_pays && q.channels >= MIN_INTEGER_CHANNELS {
        return None;
    }
    let per_output = q.centred.len() / q.channels;
    let x_reach = reach_from_zero(q.input, q.input_zero);
    let exact = q
        .centred
        .chunks_exact(per_output)
        .zip(&q.bias)
        .all(|(row, &bias)| {
            let reach: i64 = row.iter().map(|&w| (w as i64).abs()).sum::<i64>() * x_reach;
            (bias as i64).abs() + reach < EXACT_IN_F32
        });
    if integer_pays && !exact {
        return None;
    }
    let weights_fact = model.outlet_fact(node.inputs[1]).ok()?;
    let name = &node.name;
    let mut patch = TypedModelPatch::new("quantized convolution as an exact float one");
    let x = patch.tap_model(model, node.inputs[0]).ok()?;
    let x_zero = patch.tap_model(model, node.inputs[3]).ok()?;
    let x = patch
        .wire_node(format!("{name}.centred"), CentredF32, &[x, x_zero])
        .ok()?[0];
    let kernel_shape = weights_fact.shape.as_concrete()?.to_vec();
    let kernel: Vec<f32> = q.centred.iter().map(|&w| w as f32).collect();
    let kernel = patch
        .add_const(
            format!("{name}.kernel_f32"),
            Tensor::from_shape(&kernel_shape, &kernel).ok()?,
        )
        .ok()?;
    let bias: Vec<f32> = q.bias.iter().map(|&b| b as f32).collect();
    let bias = patch
        .add_const(format!("{name}.bias_f32"), tensor1(&bias))
        .ok()?;
    let float = Conv {
        q_params: None,
        ..q.conv.clone()
    };
    let sums = patch
        .wire_node(format!("{name}.f32"), float, &[x, kernel, bias])
        .ok()?[0];
    let (output, replaced) = q.wire_output(model, node, &mut patch, sums)?;
    patch
        .shunt_outside(model, OutletId::new(replaced, 0), output)
        .ok()?;
    Some(patch)
}

/// Rewrites every quantized convolution [`float_patch`] accepts as a float one: where tract's
/// integer products pay ([`super::integer_products_pay`]), the narrow ones with exact sums;
/// elsewhere all of them. Returns how many.
pub fn quantized_convs_in_f32(model: &mut TypedModel) -> TractResult<usize> {
    quantized_convs_in_f32_where(model, super::integer_products_pay())
}

pub(super) fn quantized_convs_in_f32_where(
    model: &mut TypedModel,
    integer_pays: bool,
) -> TractResult<usize> {
    let mut count = 0;
    for id in 0..model.nodes().len() {
        if let Some(patch) = float_patch(model, model.node(id), integer_pays) {
            patch.apply(model)?;
            count += 1;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::tract_onnx::tract_core::ops::cnn::{PaddingSpec, PoolSpec};
    use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

    const CIN: usize = 5;
    const COUT: usize = 7;
    const SIDE: usize = 9;
    const X_ZERO: i32 = 100;

    /// Integers in `0..256` with no pattern a loop could lean on.
    fn levels(count: usize, seed: usize) -> Vec<u8> {
        (0..count)
            .map(|i| ((i * 89 + seed * 7) % 256) as u8)
            .collect()
    }

    fn weights(weight: u8) -> Vec<u8> {
        let count = COUT * CIN * 9;
        if weight > 0 {
            vec![weight; count]
        } else {
            levels(count, 3)
        }
    }

    /// A 3×3 convolution (padding 1, stride 2) of u8 weights with zero point 120, over a u8
    /// `[1, CIN, SIDE, SIDE]` whose zero point is the model's second input: a ConvInteger (i32
    /// sums), or (`requantized`) a QLinearConv to u8 with per-channel weight scales. `weight`:
    /// every weight that value, else varied ones.
    fn conv(requantized: bool, weight: u8) -> TypedModel {
        let mut model = TypedModel::default();
        let x = model
            .add_source("x", u8::fact([1, CIN, SIDE, SIDE]))
            .unwrap();
        let kernel =
            tract_ndarray::Array4::from_shape_vec((COUT, CIN, 3, 3), weights(weight)).unwrap();
        let mut inputs = vec![x, model.add_const("w", kernel.into_tensor()).unwrap()];
        let bias: Vec<i32> = (0..COUT as i32).map(|c| (c - 3) * 1000).collect();
        inputs.push(model.add_const("bias", tensor1(&bias)).unwrap());
        inputs.push(model.add_source("x_zero", i32::fact([0usize; 0])).unwrap());
        let scales: Vec<f32> = (0..COUT).map(|c| 0.001 * (c + 1) as f32).collect();
        let parameters = if requantized {
            [
                ("x_scale", tensor0(0.05f32)),
                ("w_zero", tensor0(120i32)),
                ("w_scale", tensor1(&scales)),
                ("y_zero", tensor0(128i32)),
                ("y_scale", tensor0(0.9f32)),
            ]
        } else {
            [
                ("x_scale", tensor0(1f32)),
                ("w_zero", tensor0(120i32)),
                ("w_scale", tensor0(1f32)),
                ("y_zero", tensor0(0i32)),
                ("y_scale", tensor0(1f32)),
            ]
        };
        for (name, value) in parameters {
            inputs.push(model.add_const(name, value).unwrap());
        }
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: DataFormat::NCHW,
                kernel_shape: tvec![3, 3],
                padding: PaddingSpec::Explicit(tvec![1, 1], tvec![1, 1]),
                dilations: None,
                strides: Some(tvec![2, 2]),
                input_channels: CIN,
                output_channels: COUT,
            },
            kernel_fmt: KernelFormat::OIHW,
            group: 1,
            q_params: Some(if requantized {
                u8::datum_type()
            } else {
                i32::datum_type()
            }),
        };
        let y = model.wire_node("conv", conv, &inputs).unwrap();
        model.select_output_outlets(&y).unwrap();
        model
    }

    fn input() -> Vec<u8> {
        levels(CIN * SIDE * SIDE, 11)
    }

    /// The ConvInteger's sums by the definition: padding reads the zero point (adds nothing).
    fn reference_sums() -> Vec<i32> {
        let (x, w) = (input(), weights(0));
        let out_side = SIDE.div_ceil(2);
        let mut sums = vec![];
        for o in 0..COUT {
            for oy in 0..out_side {
                for ox in 0..out_side {
                    let mut sum = (o as i32 - 3) * 1000;
                    for c in 0..CIN {
                        for ky in 0..3 {
                            for kx in 0..3 {
                                let (y, xx) =
                                    ((oy * 2 + ky) as isize - 1, (ox * 2 + kx) as isize - 1);
                                if y < 0 || xx < 0 || y >= SIDE as isize || xx >= SIDE as isize {
                                    continue;
                                }
                                let v = x[(c * SIDE + y as usize) * SIDE + xx as usize] as i32;
                                let k = w[((o * CIN + c) * 3 + ky) * 3 + kx] as i32;
                                sum += (v - X_ZERO) * (k - 120);
                            }
                        }
                    }
                    sums.push(sum);
                }
            }
        }
        sums
    }

    fn run(model: TypedModel) -> Vec<i32> {
        let x = Tensor::from_shape(&[1, CIN, SIDE, SIDE], &input()).unwrap();
        let out = model
            .into_optimized()
            .unwrap()
            .into_runnable()
            .unwrap()
            .run(tvec!(x.into_tvalue(), tensor0(X_ZERO).into_tvalue()))
            .unwrap();
        let out = out[0].cast_to::<i32>().unwrap();
        out.try_as_plain_ram()
            .unwrap()
            .as_slice::<i32>()
            .unwrap()
            .to_vec()
    }

    #[test]
    fn conv_integer_sums_in_f32_are_the_definition_s() {
        let mut model = conv(false, 0);
        assert_eq!(quantized_convs_in_f32_where(&mut model, true).unwrap(), 1);
        let sums = run(model);
        assert_eq!(sums, reference_sums());
        assert!(sums.iter().any(|&s| s < -10_000) && sums.iter().any(|&s| s > 10_000));
    }

    #[test]
    fn qlinear_conv_in_f32_requantizes_as_onnxruntime() {
        let mut model = conv(true, 0);
        assert_eq!(quantized_convs_in_f32_where(&mut model, true).unwrap(), 1);
        let got = run(model);
        let out_plane = SIDE.div_ceil(2).pow(2);
        let want: Vec<i32> = reference_sums()
            .iter()
            .enumerate()
            .map(|(i, &sum)| {
                let multiplier = 0.05f32 * (0.001 * (i / out_plane + 1) as f32) / 0.9;
                ((sum as f32 * multiplier).round_ties_even() as i32 + 128).clamp(0, 255)
            })
            .collect();
        assert_eq!(got, want);
        let unsaturated = got.iter().filter(|&&y| y > 0 && y < 255).count();
        assert!(
            unsaturated > got.len() / 2,
            "{unsaturated} of {}",
            got.len()
        );
    }

    #[test]
    fn sums_that_could_pass_two_to_the_24_stay_integer() {
        // Each channel: 45 weights 135 from their zero point, times 255 (the input's zero point
        // is computed, so any distance up to 255), plus the bias: 1.55e6, exact.
        let mut near = conv(false, 255);
        assert_eq!(quantized_convs_in_f32_where(&mut near, true).unwrap(), 1);
        // A ConvInteger over 5×5 windows of 64 channels, 135 per weight: 5.5e7, not exact.
        let mut model = TypedModel::default();
        let x = model.add_source("x", u8::fact([1, 64, 8, 8])).unwrap();
        let kernel = tract_ndarray::Array4::from_elem((8, 64, 5, 5), 255u8);
        let mut inputs = vec![x, model.add_const("w", kernel.into_tensor()).unwrap()];
        inputs.push(model.add_const("bias", tensor0(0i32)).unwrap());
        inputs.push(model.add_source("x_zero", i32::fact([0usize; 0])).unwrap());
        for (name, value) in [
            ("x_scale", tensor0(1f32)),
            ("w_zero", tensor0(120i32)),
            ("w_scale", tensor0(1f32)),
            ("y_zero", tensor0(0i32)),
            ("y_scale", tensor0(1f32)),
        ] {
            inputs.push(model.add_const(name, value).unwrap());
        }
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: DataFormat::NCHW,
                kernel_shape: tvec![5, 5],
                padding: PaddingSpec::Valid,
                dilations: None,
                strides: None,
                input_channels: 64,
                output_channels: 8,
            },
            kernel_fmt: KernelFormat::OIHW,
            group: 1,
            q_params: Some(i32::datum_type()),
        };
        let y = model.wire_node("conv", conv, &inputs).unwrap();
        model.select_output_outlets(&y).unwrap();
        let integer = model.clone();
        assert_eq!(quantized_convs_in_f32_where(&mut model, true).unwrap(), 0);

        // Where integer products do not pay, it runs in f32 too, its sums within f32's rounding.
        let mut float = integer.clone();
        assert_eq!(quantized_convs_in_f32_where(&mut float, false).unwrap(), 1);
        let x: Vec<u8> = levels(64 * 64, 5);
        let x = Tensor::from_shape(&[1, 64, 8, 8], &x).unwrap();
        let sums = |model: TypedModel| -> Vec<i32> {
            let inputs = tvec!(x.clone().into_tvalue(), tensor0(3i32).into_tvalue());
            let out = model
                .into_optimized()
                .unwrap()
                .into_runnable()
                .unwrap()
                .run(inputs);
            let out = out.unwrap()[0].cast_to::<i32>().unwrap().into_owned();
            out.try_as_plain_ram()
                .unwrap()
                .as_slice::<i32>()
                .unwrap()
                .to_vec()
        };
        let (want, got) = (sums(integer), sums(float));
        assert!(want.iter().any(|&s| s.abs() >= 1 << 24), "{want:?}");
        // Each of the 64 × 25 additions rounds to within half a unit of f32's 24 bits.
        let terms = 64.0 * 25.0;
        for (w, g) in want.iter().zip(&got) {
            let bound = terms * (*w as f64).abs() / (1u64 << 24) as f64;
            assert!(((w - g).abs() as f64) <= bound, "{g} vs {w}");
        }
    }
}
