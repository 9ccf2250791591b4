//! Per-tensor [ONNX `QuantizeLinear`] (f32 → u8/i8) and `DequantizeLinear` (u8/i8/i32 → f32) in
//! loops LLVM vectorizes, replacing tract's element-wise versions in optimized cpu plans: tract's
//! rounds each element through a bit-twiddling function with branches, about 4 ns per element,
//! and the activation QuantizeLinear of a QDQ model took 13.5 of ppocr_mobile_cls_qdq_int8's 18.6
//! ms per run.
//!
//! The arithmetic is tract's, bit for bit: `x * multiplier` (tract keeps `1 / scale`), rounded
//! half to even, plus the zero point, saturated; NaN gives the zero point. One difference, a
//! fix: ±inf saturates (tract's integer overflow turned +inf into 0).
//!
//! [ONNX `QuantizeLinear`]: https://onnx.ai/onnx/operators/onnx__QuantizeLinear.html

use crate::parallel::par_chunks_mut;
use crate::plan_graph::only_reader;
use tessera_core::model::index_check::IndexCheck;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::array::Gather;
use tessera_core::tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tessera_core::tract_onnx::tract_core::ops::quant::{
    DequantizeLinearF32, QuantizeLinearI8, QuantizeLinearU8,
};

/// Adding 1.5 × 2²³ to an f32 of magnitude below 2²² rounds it to an integer, half to even (the
/// default rounding mode), held in the sum's low mantissa bits.
const ROUNDER: f32 = 12_582_912.0;

/// `v` clamped to `low..=high`, NaN to 0: written as compare-and-selects, which compile to
/// single min/max instructions (`f32::max`'s NaN rules take several more).
#[inline(always)]
fn saturate(v: f32, low: f32, high: f32) -> f32 {
    let v = if v < low { low } else { v };
    let v = if v > high { high } else { v };
    #[allow(clippy::eq_op)] // NaN is the one value not equal to itself
    if v == v { v } else { 0.0 }
}

/// The saturation bounds, for type `T` with `zero_point`, of a value before the zero point is
/// added.
pub(super) fn bounds<T: Quantized>(zero_point: i32) -> (f32, f32) {
    ((T::MIN - zero_point) as f32, (T::MAX - zero_point) as f32)
}

/// `v` saturated to `bounds` (from [`bounds`]) and rounded half to even: saturated before
/// rounding, the same as after since the bounds are integers, and then small enough for
/// ROUNDER, whose sum holds the rounded integer in its low bits (a float → int cast would
/// saturate per element and keep the loop scalar). onnxruntime's requantization (MLAS) does the
/// same.
#[inline(always)]
pub(super) fn round_saturated(v: f32, (low, high): (f32, f32)) -> i32 {
    (saturate(v, low, high) + ROUNDER).to_bits() as i32 - ROUNDER.to_bits() as i32
}

/// An integer type a QuantizeLinear writes.
pub(super) trait Quantized: Datum + Copy {
    const MIN: i32;
    const MAX: i32;
    fn from_i32(v: i32) -> Self;
}

impl Quantized for u8 {
    const MIN: i32 = u8::MIN as i32;
    const MAX: i32 = u8::MAX as i32;
    fn from_i32(v: i32) -> u8 {
        v as u8
    }
}

impl Quantized for i8 {
    const MIN: i32 = i8::MIN as i32;
    const MAX: i32 = i8::MAX as i32;
    fn from_i32(v: i32) -> i8 {
        v as i8
    }
}

/// An op with one input whose output is u8 or i8, computed by a generic `eval_as`.
trait EightBitOutput {
    fn output_type(&self) -> DatumType;

    fn eval_as<T: Quantized + tract_num_traits::Zero>(&self, input: &TValue)
    -> TractResult<Tensor>;

    /// The eval of such an op, at its output type.
    fn eval_eight_bit(&self, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let output = if self.output_type() == u8::datum_type() {
            self.eval_as::<u8>(&input)?
        } else {
            self.eval_as::<i8>(&input)?
        };
        Ok(tvec!(output.into_tvalue()))
    }
}

/// `QuantizeLinear` with one scale and zero point for the whole tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct FastQuantizeLinear {
    /// What x is multiplied by: 1 / scale, as tract holds it.
    pub multiplier: f32,
    pub zero_point: i32,
    /// u8 or i8.
    pub output: DatumType,
}

impl Eq for FastQuantizeLinear {}

impl FastQuantizeLinear {
    /// The fast version of tract's element-wise quantize, if `op` is one.
    pub fn for_op(op: &ElementWiseOp) -> Option<FastQuantizeLinear> {
        if let Some(q) = op.0.downcast_ref::<QuantizeLinearU8>() {
            Some(FastQuantizeLinear {
                multiplier: q.scale,
                zero_point: q.zero_point as i32,
                output: u8::datum_type(),
            })
        } else {
            op.0.downcast_ref::<QuantizeLinearI8>()
                .map(|q| FastQuantizeLinear {
                    multiplier: q.scale,
                    zero_point: q.zero_point as i32,
                    output: i8::datum_type(),
                })
        }
    }

    /// The saturation bounds of `x * multiplier` for type `T`, before the zero point is added.
    fn bounds<T: Quantized>(&self) -> (f32, f32) {
        bounds::<T>(self.zero_point)
    }

    /// The quantized level of `x` (`bounds` from [`Self::bounds`]).
    #[inline(always)]
    fn level(&self, x: f32, bounds: (f32, f32)) -> i32 {
        round_saturated(x * self.multiplier, bounds) + self.zero_point
    }

    /// `ys` = `xs` quantized, on the calling thread: inlined into vectorized callers (the
    /// element-wise chain a quantization is folded into).
    #[inline(always)]
    pub(super) fn quantize_values<T: Quantized>(&self, xs: &[f32], ys: &mut [T]) {
        let bounds = self.bounds::<T>();
        for (y, &x) in ys.iter_mut().zip(xs) {
            *y = T::from_i32(self.level(x, bounds));
        }
    }

    fn quantize<T: Quantized + Send>(&self, xs: &[f32], ys: &mut [T]) -> TractResult<()> {
        let len = ys.len().min(xs.len());
        par_chunks_mut(&mut ys[..len], 1, len, |start, ys| {
            let xs = &xs[start..][..ys.len()];
            crate::simd::widest(
                #[inline(always)]
                || self.quantize_values(xs, ys),
            );
            Ok(())
        })
    }
}

impl EightBitOutput for FastQuantizeLinear {
    fn output_type(&self) -> DatumType {
        self.output
    }

    fn eval_as<T: Quantized + tract_num_traits::Zero>(
        &self,
        input: &TValue,
    ) -> TractResult<Tensor> {
        let plain = input.try_as_plain_ram()?;
        let mut output = Tensor::zero::<T>(input.shape())?;
        self.quantize(
            plain.as_slice::<f32>()?,
            output.try_as_plain_ram_mut()?.as_slice_mut::<T>()?,
        )?;
        Ok(output)
    }
}

impl Op for FastQuantizeLinear {
    fn name(&self) -> StaticName {
        "FastQuantizeLinear".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastQuantizeLinear {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.eval_eight_bit(inputs)
    }
}

impl TypedOp for FastQuantizeLinear {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(self.output.fact(inputs[0].shape.clone())))
    }
}

/// `DequantizeLinear` with one scale and zero point for the whole tensor: `(x - zero) * scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct FastDequantizeLinear {
    pub scale: f32,
    pub zero_point: i32,
}

impl Eq for FastDequantizeLinear {}

impl FastDequantizeLinear {
    pub fn for_op(op: &DequantizeLinearF32) -> FastDequantizeLinear {
        FastDequantizeLinear {
            scale: op.scale,
            zero_point: op.zero_point,
        }
    }

    fn dequantize<T: Datum + Copy + Into<i32>>(&self, input: &TValue) -> TractResult<Tensor> {
        let plain = input.try_as_plain_ram()?;
        // SAFETY: f32 has no invalid bit patterns, and every value is written just below (the
        // output has the input's shape).
        let mut output = unsafe { Tensor::uninitialized::<f32>(input.shape())? };
        let mut ys = output.try_as_plain_ram_mut()?;
        let (ys, xs) = (ys.as_slice_mut::<f32>()?, plain.as_slice::<T>()?);
        ensure!(
            ys.len() == xs.len(),
            "DequantizeLinear: output of another size"
        );
        // One thread: a convert and a multiply per value cost less than splitting them (split,
        // ppocrv4_rec QOperator's took 1.1 ms at 2 threads instead of 0.8).
        crate::simd::widest(
            #[inline(always)]
            || self.dequantize_values(xs, ys),
        );
        Ok(output)
    }

    /// `ys[i] = (xs[i] - zero) · scale` (as long as the shorter of the two).
    #[inline(always)]
    pub fn dequantize_values<T: Copy + Into<i32>>(&self, xs: &[T], ys: &mut [f32]) {
        let (scale, zero_point) = (self.scale, self.zero_point);
        for (y, &x) in ys.iter_mut().zip(xs) {
            *y = (x.into() - zero_point) as f32 * scale;
        }
    }
}

impl Op for FastDequantizeLinear {
    fn name(&self) -> StaticName {
        "FastDequantizeLinear".into()
    }

    op_as_typed_op!();
}

impl FastDequantizeLinear {
    /// 32-bit integers dequantized where they lie (f32 has their size): no output to allocate
    /// and fault in (an integer product's sums, 1.3 M values per run in minilm's dynamic s8
    /// variant), and no copy when this op alone holds them.
    fn dequantize_i32_in_place(&self, input: TValue) -> TractResult<Tensor> {
        let mut tensor = input.into_tensor();
        let (scale, zero_point) = (self.scale, self.zero_point);
        {
            let mut ram = tensor.try_as_plain_ram_mut()?;
            let values = ram.as_slice_mut::<i32>()?;
            crate::simd::widest(
                #[inline(always)]
                || {
                    for v in values.iter_mut() {
                        let real = v.wrapping_sub(zero_point) as f32 * scale;
                        *v = real.to_bits() as i32;
                    }
                },
            );
        }
        // SAFETY: every value now holds the bits of an f32, which has i32's size and alignment.
        unsafe { tensor.set_datum_type(f32::datum_type()) };
        Ok(tensor)
    }
}

impl EvalOp for FastDequantizeLinear {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let output = match input.datum_type() {
            DatumType::U8 => self.dequantize::<u8>(&input)?,
            DatumType::I8 => self.dequantize::<i8>(&input)?,
            DatumType::I32 => self.dequantize_i32_in_place(input)?,
            dt => bail!("DequantizeLinear of {dt:?}"),
        };
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for FastDequantizeLinear {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(inputs[0].shape.clone())))
    }
}

/// A QuantizeLinear whose only reader is a DequantizeLinear, in one pass over f32: the value the
/// pair computes (`(q - zero) * scale`, q as the quantize rounds it), without the integer tensor
/// between them. A QDQ model has such a pair after nearly every op.
#[derive(Debug, Clone, PartialEq)]
pub struct FastQuantizeDequantize {
    pub quantize: FastQuantizeLinear,
    pub dequantize: FastDequantizeLinear,
}

impl Eq for FastQuantizeDequantize {}

impl FastQuantizeDequantize {
    /// The saturation bounds of the quantize's type (see [`bounds`]).
    pub fn bounds(&self) -> (f32, f32) {
        if self.quantize.output == u8::datum_type() {
            self.quantize.bounds::<u8>()
        } else {
            self.quantize.bounds::<i8>()
        }
    }

    /// Each value through the pair, in place, on the calling thread: inlined into vectorized
    /// callers (this op's tasks, the element-wise chain a pair is folded into). `bounds` from
    /// [`Self::bounds`].
    #[inline(always)]
    pub fn round_trip_values(&self, values: &mut [f32], bounds: (f32, f32)) {
        let (zero_point, scale) = (self.dequantize.zero_point, self.dequantize.scale);
        for value in values.iter_mut() {
            *value = (self.quantize.level(*value, bounds) - zero_point) as f32 * scale;
        }
    }

    fn round_trip(&self, values: &mut [f32]) -> TractResult<()> {
        let bounds = self.bounds();
        let len = values.len();
        par_chunks_mut(values, 1, len, |_, values| {
            crate::simd::widest(
                #[inline(always)]
                || self.round_trip_values(values, bounds),
            );
            Ok(())
        })
    }
}

impl Op for FastQuantizeDequantize {
    fn name(&self) -> StaticName {
        "FastQuantizeDequantize".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastQuantizeDequantize {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        // In place: the input's tensor itself when this op holds the only reference (as tract's
        // element-wise ops do), else a copy of it.
        let mut tensor = args_1!(inputs).into_tensor();
        let mut plain = tensor.try_as_plain_ram_mut()?;
        let values = plain.as_slice_mut::<f32>()?;
        self.round_trip(values)?;
        Ok(tvec!(tensor.into_tvalue()))
    }
}

impl TypedOp for FastQuantizeDequantize {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(inputs[0].shape.clone())))
    }
}

/// Replaces every quantize → dequantize pair (the quantize's only reader, neither a model
/// output) with one [`FastQuantizeDequantize`]. Returns how many.
pub fn fuse_quantize_dequantize(model: &mut TypedModel) -> TractResult<usize> {
    let mut pairs = vec![];
    for node in model.nodes() {
        let Some(quantize) = node.op_as::<FastQuantizeLinear>() else {
            continue;
        };
        let Some(reader) = only_reader(model, node.id)? else {
            continue;
        };
        if let Some(dequantize) = model.node(reader).op_as::<FastDequantizeLinear>() {
            let fused = FastQuantizeDequantize {
                quantize: quantize.clone(),
                dequantize: dequantize.clone(),
            };
            pairs.push((node.id, reader, fused));
        }
    }
    let count = pairs.len();
    for (quantize, dequantize, fused) in pairs {
        let mut patch = TypedModelPatch::new("quantize-dequantize pair");
        let input = patch.tap_model(model, model.node(quantize).inputs[0])?;
        let name = model.node(dequantize).name.clone();
        let wire = patch.wire_node(name, fused, &[input])?;
        patch.shunt_outside(model, OutletId::new(dequantize, 0), wire[0])?;
        patch.apply(model)?;
    }
    if count > 0 {
        model.compact()?;
    }
    Ok(count)
}

/// Integer sums, as i32 or exactly in f32.
trait Sum: Copy {
    fn as_f32(self) -> f32;
}

impl Sum for i32 {
    #[inline(always)]
    fn as_f32(self) -> f32 {
        self as f32
    }
}

impl Sum for f32 {
    #[inline(always)]
    fn as_f32(self) -> f32 {
        self
    }
}

/// Integer sums (i32, or integers held exactly in f32) requantized to u8 or i8 as onnxruntime does (MLAS): `round(sum × multiplier) + zero`,
/// saturated, ties to even, the multiplier per channel along `axis` (one for all when it has one
/// value). What follows the integer products that QDQ convolutions and matrix products become
/// ([`super::qdq_products`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FastRequantize {
    pub multiplier: Vec<f32>,
    pub axis: usize,
    pub zero: i32,
    /// u8 or i8.
    pub output: DatumType,
}

impl Eq for FastRequantize {}

impl FastRequantize {
    /// `sums` (of `shape`) requantized into `ys`.
    fn requantize<S: Sum, T: Quantized>(
        &self,
        sums: &[S],
        shape: &[usize],
        ys: &mut [T],
    ) -> TractResult<()> {
        let channels = self.multiplier.len();
        let inner: usize = shape.get(self.axis + 1..).map_or(1, |s| s.iter().product());
        ensure!(
            channels == 1 || shape.get(self.axis) == Some(&channels),
            "requantization: {channels} multipliers for axis {} of {shape:?}",
            self.axis
        );
        let (bounds, zero) = (bounds::<T>(self.zero), self.zero);
        #[inline(always)]
        fn level<S: Sum, T: Quantized>(
            sum: S,
            multiplier: f32,
            bounds: (f32, f32),
            zero: i32,
        ) -> T {
            T::from_i32(round_saturated(sum.as_f32() * multiplier, bounds) + zero)
        }
        crate::simd::widest(
            #[inline(always)]
            || {
                if channels > 1 && inner == 1 {
                    // Channels innermost (a matrix product's columns): rows of all of them.
                    for (ys, sums) in ys.chunks_mut(channels).zip(sums.chunks(channels)) {
                        for ((y, &sum), &multiplier) in
                            ys.iter_mut().zip(sums).zip(&self.multiplier)
                        {
                            *y = level(sum, multiplier, bounds, zero);
                        }
                    }
                } else {
                    // Planes of one channel each (or one multiplier for all).
                    let block = if channels == 1 {
                        sums.len().max(1)
                    } else {
                        inner
                    };
                    for (ix, (ys, sums)) in ys.chunks_mut(block).zip(sums.chunks(block)).enumerate()
                    {
                        let multiplier = self.multiplier[ix % channels];
                        for (y, &sum) in ys.iter_mut().zip(sums) {
                            *y = level(sum, multiplier, bounds, zero);
                        }
                    }
                }
            },
        );
        Ok(())
    }
}

impl EightBitOutput for FastRequantize {
    fn output_type(&self) -> DatumType {
        self.output
    }

    fn eval_as<T: Quantized + tract_num_traits::Zero>(
        &self,
        input: &TValue,
    ) -> TractResult<Tensor> {
        let plain = input.try_as_plain_ram()?;
        let mut output = Tensor::zero::<T>(input.shape())?;
        let mut ys = output.try_as_plain_ram_mut()?;
        let ys = ys.as_slice_mut::<T>()?;
        if input.datum_type() == f32::datum_type() {
            self.requantize(plain.as_slice::<f32>()?, input.shape(), ys)?;
        } else {
            self.requantize(plain.as_slice::<i32>()?, input.shape(), ys)?;
        }
        Ok(output)
    }
}

impl Op for FastRequantize {
    fn name(&self) -> StaticName {
        "FastRequantize".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastRequantize {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        self.eval_eight_bit(inputs)
    }
}

impl TypedOp for FastRequantize {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!([i32::datum_type(), f32::datum_type()].contains(&inputs[0].datum_type));
        Ok(tvec!(self.output.fact(inputs[0].shape.clone())))
    }
}

/// ONNX `DynamicQuantizeLinear` (f32 → u8 with the scale and zero point of the input's range), in
/// place of tract's, whose range fold and per-element division and rounding stayed scalar: 31 of
/// the 145 ms of PaddleOCR v4's recognizer quantized dynamically. Computed as the ONNX reference
/// does: the range widened to hold 0, `scale = (max − min) / 255` (`1 / 255` for an all-zero
/// input), `zero = round(clamp(−min / scale))`, `y = clamp(round(x / scale) + zero)`, ties to even;
/// NaN inputs are left out of the range and give the zero point.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastDynamicQuantizeLinear;

impl FastDynamicQuantizeLinear {
    /// Whether `op` is tract's version.
    pub fn replaces(op: &dyn TypedOp) -> bool {
        op.name() == "DynamicQuantizeLinearU8"
    }

    /// The input's range widened to hold 0: `(min, max)`.
    #[inline(always)]
    fn range(xs: &[f32]) -> (f32, f32) {
        // Lane-wise minimums and maximums (compare-selects, which vectorize; a float min/max
        // fold does not), then across the lanes.
        const LANES: usize = 16;
        let (mut low, mut high) = ([0f32; LANES], [0f32; LANES]);
        let mut chunks = xs.chunks_exact(LANES);
        for chunk in &mut chunks {
            for lane in 0..LANES {
                let v = chunk[lane];
                low[lane] = if v < low[lane] { v } else { low[lane] };
                high[lane] = if v > high[lane] { v } else { high[lane] };
            }
        }
        let fold = |(lo, hi): (f32, f32), &v: &f32| {
            (if v < lo { v } else { lo }, if v > hi { v } else { hi })
        };
        let lanes = low
            .iter()
            .zip(&high)
            .fold((0f32, 0f32), |acc, (&lo, &hi)| fold(fold(acc, &lo), &hi));
        chunks.remainder().iter().fold(lanes, fold)
    }

    /// `(scale, zero point)` for the range `(min, max)`.
    fn parameters((min, max): (f32, f32)) -> (f32, u8) {
        let span = if max == min { 1.0 } else { max - min };
        let scale = span / u8::MAX as f32;
        let zero = (-min / scale).clamp(0.0, u8::MAX as f32).round_ties_even();
        (scale, zero as u8)
    }

    fn quantize(xs: &[f32], scale: f32, zero: u8, ys: &mut [u8]) {
        let (zero, bounds) = (zero as i32, bounds::<u8>(zero as i32));
        crate::simd::widest(
            #[inline(always)]
            || {
                for (y, &x) in ys.iter_mut().zip(xs) {
                    *y = (round_saturated(x / scale, bounds) + zero) as u8;
                }
            },
        );
    }
}

impl Op for FastDynamicQuantizeLinear {
    fn name(&self) -> StaticName {
        "FastDynamicQuantizeLinear".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastDynamicQuantizeLinear {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let plain = input.try_as_plain_ram()?;
        let xs = plain.as_slice::<f32>()?;
        let range = crate::simd::widest(
            #[inline(always)]
            || Self::range(xs),
        );
        let (scale, zero) = Self::parameters(range);
        let mut output = Tensor::zero::<u8>(input.shape())?;
        Self::quantize(
            xs,
            scale,
            zero,
            output.try_as_plain_ram_mut()?.as_slice_mut::<u8>()?,
        );
        Ok(tvec!(
            output.into_tvalue(),
            tensor0(scale).into_tvalue(),
            tensor0(zero).into_tvalue()
        ))
    }
}

impl TypedOp for FastDynamicQuantizeLinear {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs[0].datum_type == f32::datum_type());
        Ok(tvec!(
            u8::fact(inputs[0].shape.clone()),
            f32::fact([0usize; 0]),
            u8::fact([0usize; 0])
        ))
    }
}

/// Moves the gathers that read the dequantization of a constant table (an int8 embedding) ahead
/// of it: `Gather(DequantizeLinear(table), indices)` becomes
/// `DequantizeLinear(Gather(table, indices))`, the same values since a per-tensor dequantization is
/// element-wise; the index checks in front of them read the table's shape from the table itself.
/// tract does not fold the dequantization of a constant: minilm's QDQ file dequantized its whole
/// 30522 × 384 vocabulary on every run (20 of 33 ms) to gather 128 rows of it. Returns how many
/// gathers moved.
pub fn gather_before_dequantize(model: &mut TypedModel) -> TractResult<usize> {
    let outputs = model.output_outlets()?.to_vec();
    let mut tables = vec![];
    for node in model.nodes() {
        let Some(dequantize) = node.op_as::<DequantizeLinearF32>() else {
            continue;
        };
        let values = OutletId::new(node.id, 0);
        if model.outlet_fact(node.inputs[0])?.konst.is_none() || outputs.contains(&values) {
            continue;
        }
        let readers = &node.outputs[0].successors;
        let gathers: Vec<usize> = readers
            .iter()
            .filter(|inlet| inlet.slot == 0 && model.node(inlet.node).op_is::<Gather>())
            .map(|inlet| inlet.node)
            .collect();
        let checks: Vec<usize> = readers
            .iter()
            .filter(|inlet| inlet.slot == 1 && model.node(inlet.node).op_is::<IndexCheck>())
            .map(|inlet| inlet.node)
            .collect();
        if !gathers.is_empty() && gathers.len() + checks.len() == readers.len() {
            tables.push((node.id, dequantize.clone(), gathers, checks));
        }
    }
    let mut moved = 0;
    for (dequantize_id, dequantize, gathers, checks) in tables {
        let table = model.node(dequantize_id).inputs[0];
        for check in checks {
            model.add_edge(table, InletId::new(check, 1))?;
        }
        for gather_id in gathers {
            let Some(gather) = model.node(gather_id).op_as::<Gather>() else {
                continue;
            };
            let gather = Gather {
                output_type: None,
                ..gather.clone()
            };
            let mut patch = TypedModelPatch::new("gather before dequantize");
            let table = patch.tap_model(model, table)?;
            let indices = patch.tap_model(model, model.node(gather_id).inputs[1])?;
            let name = model.node(gather_id).name.clone();
            let rows = patch.wire_node(format!("{name}.quantized"), gather, &[table, indices])?;
            let values =
                patch.wire_node(format!("{name}.dequantized"), dequantize.clone(), &rows)?;
            patch.shunt_outside(model, OutletId::new(gather_id, 0), values[0])?;
            patch.apply(model)?;
            moved += 1;
        }
    }
    if moved > 0 {
        model.compact()?;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::tract_onnx::tract_core::ops::quant::{
        quantize_linear_f32_i8, quantize_linear_f32_u8,
    };

    /// Values around every rounding tie and past both ends of the range, NaN included.
    fn inputs() -> Vec<f32> {
        let mut xs: Vec<f32> = (-700..700).map(|i| i as f32 * 0.25).collect();
        xs.extend([f32::NAN, -0.0, 1e6, -1e6, 0.5, 1.5, 2.5, -0.5, -1.5]);
        xs
    }

    #[test]
    fn quantizes_exactly_as_tract_on_finite_values() {
        let xs = inputs();
        for (multiplier, zero_point) in [(1.0f32, 0i32), (2.0, 3), (0.5, 128), (1.0 / 0.37, 17)] {
            let op = FastQuantizeLinear {
                multiplier,
                zero_point,
                output: u8::datum_type(),
            };
            let mut got = vec![0u8; xs.len()];
            op.quantize(&xs, &mut got).unwrap();
            let expected: Vec<u8> = xs
                .iter()
                .map(|&x| quantize_linear_f32_u8(x, multiplier, zero_point))
                .collect();
            assert_eq!(
                got, expected,
                "u8, multiplier {multiplier} zero point {zero_point}"
            );

            let zero_point = zero_point - 128;
            let op = FastQuantizeLinear {
                zero_point,
                output: i8::datum_type(),
                ..op
            };
            let mut got = vec![0i8; xs.len()];
            op.quantize(&xs, &mut got).unwrap();
            let expected: Vec<i8> = xs
                .iter()
                .map(|&x| quantize_linear_f32_i8(x, multiplier, zero_point))
                .collect();
            assert_eq!(
                got, expected,
                "i8, multiplier {multiplier} zero point {zero_point}"
            );
        }
    }

    #[test]
    fn infinities_saturate() {
        let op = FastQuantizeLinear {
            multiplier: 1.0,
            zero_point: 10,
            output: u8::datum_type(),
        };
        let mut got = vec![0u8; 2];
        op.quantize(&[f32::INFINITY, f32::NEG_INFINITY], &mut got)
            .unwrap();
        assert_eq!(got, [255, 0]);
    }

    #[test]
    fn a_quantize_dequantize_pair_computes_what_the_two_ops_do() {
        let xs = inputs();
        for output in [u8::datum_type(), i8::datum_type()] {
            let zero_point = if output == u8::datum_type() { 7 } else { -5 };
            let quantize = FastQuantizeLinear {
                multiplier: 1.0 / 0.37,
                zero_point,
                output,
            };
            let dequantize = FastDequantizeLinear {
                scale: 0.37,
                zero_point,
            };
            let input = tract_ndarray::Array1::from_vec(xs.clone()).into_tvalue();
            let quantized = quantize
                .eval(&EvalContext::out_of_plan(), tvec!(input.clone()))
                .unwrap();
            let expected = dequantize
                .eval(&EvalContext::out_of_plan(), quantized)
                .unwrap();
            let pair = FastQuantizeDequantize {
                quantize,
                dequantize,
            };
            let got = pair
                .eval(&EvalContext::out_of_plan(), tvec!(input))
                .unwrap();
            let values = |t: &TValue| -> Vec<f32> {
                t.to_plain_array_view::<f32>()
                    .unwrap()
                    .iter()
                    .copied()
                    .collect()
            };
            assert_eq!(values(&got[0]), values(&expected[0]), "{output:?}");
        }
    }

    #[test]
    fn dequantizes_as_the_definition() {
        let op = FastDequantizeLinear {
            scale: 0.5,
            zero_point: 3,
        };
        let input = tensor1(&[0u8, 3, 4, 255]).into_tvalue();
        let out = op.dequantize::<u8>(&input).unwrap();
        let out: Vec<f32> = out
            .to_plain_array_view::<f32>()
            .unwrap()
            .iter()
            .copied()
            .collect();
        assert_eq!(out, [-1.5, 0.0, 0.5, 126.0]);
    }

    #[test]
    fn integers_cast_to_f32_convert_where_they_lie_as_tract_s_cast() {
        use tessera_core::tract_onnx::tract_core::ops::cast::cast;
        // Past 2²⁴ f32 rounds (to even), and both ends of i32.
        let values = [
            i32::MIN,
            i32::MAX,
            16_777_217,
            -16_777_219,
            0,
            -1,
            123_456_789,
        ];
        let mut model = TypedModel::default();
        let sums = model.add_source("sums", i32::fact([values.len()])).unwrap();
        let floats = model
            .wire_node("cast", cast(f32::datum_type()), &[sums])
            .unwrap();
        model.select_output_outlets(&floats).unwrap();
        let run = |model: TypedModel| {
            let outputs = model
                .into_runnable()
                .unwrap()
                .run(tvec!(tensor1(&values).into_tvalue()))
                .unwrap();
            let plain = outputs[0].try_as_plain_ram().unwrap();
            let bits: Vec<u32> = plain
                .as_slice::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect();
            bits
        };
        let mut fast = model.clone();
        crate::ops::use_cpu_ops_in_plan(&mut fast).unwrap();
        assert!(
            fast.nodes()
                .iter()
                .any(|n| n.op_is::<FastDequantizeLinear>())
        );
        let expected: Vec<u32> = values.iter().map(|&v| (v as f32).to_bits()).collect();
        assert_eq!(run(model), expected);
        assert_eq!(run(fast), expected);
    }

    /// `Gather(DequantizeLinear(int8 table), indices)`, its indices checked as every lowered
    /// model's are.
    fn embedding() -> TypedModel {
        let mut model = TypedModel::default();
        let indices = model.add_source("indices", i64::fact([2, 3])).unwrap();
        let table: Vec<i8> = (0..5 * 4).map(|i| (i * 13 % 256) as i8).collect();
        let table = tract_ndarray::Array2::from_shape_vec((5, 4), table).unwrap();
        let table = model.add_const("table", table.into_tensor()).unwrap();
        let values = model
            .wire_node("dequantize", DequantizeLinearF32::new(0.25, -3), &[table])
            .unwrap();
        let rows = model
            .wire_node("gather", Gather::new(0), &[values[0], indices])
            .unwrap();
        model.select_output_outlets(&rows).unwrap();
        tessera_core::model::index_check::guard_indices(&mut model).unwrap();
        model
    }

    #[test]
    fn a_gather_from_a_dequantized_table_gathers_first_with_the_same_values() {
        let run = |model: TypedModel, indices: &[i64]| {
            let indices = tract_ndarray::Array2::from_shape_vec((2, 3), indices.to_vec()).unwrap();
            model
                .into_runnable()
                .unwrap()
                .run(tvec!(indices.into_tvalue()))
                .map(|out| out[0].clone().into_tensor())
        };
        let mut moved = embedding();
        assert_eq!(gather_before_dequantize(&mut moved).unwrap(), 1);
        let gather = moved.nodes().iter().find(|n| n.op_is::<Gather>()).unwrap();
        assert_eq!(
            moved.outlet_fact(gather.id.into()).unwrap().datum_type,
            i8::datum_type()
        );
        let indices = [4, 0, -1, 2, 2, 1];
        let want = run(embedding(), &indices).unwrap();
        assert_eq!(run(moved.clone(), &indices).unwrap(), want);
        assert_eq!(want.shape(), &[2, 3, 4]);
        // The index check still reads the table's shape.
        let error = run(moved, &[0, 1, 5, 0, 0, 0]).unwrap_err();
        assert!(
            format!("{error:?}").contains("index 5 is out of range for an axis of 5"),
            "{error:?}"
        );
    }

    fn dynamic_quantize(xs: &[f32]) -> (Vec<u8>, f32, u8) {
        let input = tract_ndarray::Array1::from_vec(xs.to_vec()).into_tvalue();
        let out = FastDynamicQuantizeLinear
            .eval(&EvalContext::out_of_plan(), tvec!(input))
            .unwrap();
        let values = out[0]
            .try_as_plain_ram()
            .unwrap()
            .as_slice::<u8>()
            .unwrap()
            .to_vec();
        let scale = out[1]
            .try_as_plain_ram()
            .unwrap()
            .as_slice::<f32>()
            .unwrap()[0];
        let zero = out[2].try_as_plain_ram().unwrap().as_slice::<u8>().unwrap()[0];
        (values, scale, zero)
    }

    #[test]
    fn dynamic_quantization_matches_the_onnx_examples() {
        // The three examples of the ONNX operator's documentation.
        let cases: [(&[f32], f32, u8, &[u8]); 3] = [
            (
                &[0., 2., -3., -2.5, 1.34, 0.5],
                0.019_607_844,
                153,
                &[153, 255, 0, 26, 221, 179],
            ),
            (
                &[-1., -2.1, -1.3, -2.5, -3.34, -4.],
                0.015_686_275,
                255,
                &[191, 121, 172, 96, 42, 0],
            ),
            (
                &[1., 2.1, 1.3, 2.5, 3.34, 4., 1.5, 2.6, 3.9, 4., 3., 2.345],
                0.015_686_275,
                0,
                &[64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149],
            ),
        ];
        for (xs, scale, zero, ys) in cases {
            let (values, got_scale, got_zero) = dynamic_quantize(xs);
            assert!((got_scale - scale).abs() < 1e-8, "{got_scale} vs {scale}");
            assert_eq!((values.as_slice(), got_zero), (ys, zero));
        }
    }

    #[test]
    fn dynamic_quantization_matches_its_definition_on_long_inputs() {
        // Longer than the lanes, ties included (x / scale landing on n + 0.5), a NaN, and the
        // range's ends past the lanes' first block; then an all-zero input.
        let mut xs: Vec<f32> = (0..1000)
            .map(|i| ((i * 37 % 101) as f32 - 40.0) * 0.173)
            .collect();
        xs[3] = f32::NAN;
        xs[997] = -9.5;
        xs[998] = 21.25;
        let (min, max) = xs
            .iter()
            .filter(|x| !x.is_nan())
            .fold((0f32, 0f32), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let scale = (max - min) / 255.0;
        let zero = (-min / scale).clamp(0.0, 255.0).round_ties_even();
        let want: Vec<u8> = xs
            .iter()
            .map(|&x| {
                let q = if x.is_nan() {
                    0.0
                } else {
                    (x / scale).round_ties_even()
                };
                (q + zero).clamp(0.0, 255.0) as u8
            })
            .collect();
        assert_eq!(dynamic_quantize(&xs), (want, scale, zero as u8));
        assert_eq!(dynamic_quantize(&[0.0; 40]), (vec![0; 40], 1.0 / 255.0, 0));
    }

    /// The definition: each sum times its channel's multiplier, rounded half to even, plus the
    /// zero point, saturated.
    fn requantized(op: &FastRequantize, sums: &[i32], shape: &[usize]) -> Vec<i32> {
        let inner: usize = shape[op.axis + 1..].iter().product();
        let (low, high) = if op.output == u8::datum_type() {
            (0, 255)
        } else {
            (-128, 127)
        };
        sums.iter()
            .enumerate()
            .map(|(ix, &sum)| {
                let channels = op.multiplier.len();
                let m = op.multiplier[if channels == 1 {
                    0
                } else {
                    ix / inner % channels
                }];
                ((sum as f32 * m).round_ties_even() as i32 + op.zero).clamp(low, high)
            })
            .collect()
    }

    #[test]
    fn requantization_matches_its_definition_along_every_layout() {
        // Sums at exact ties (× 0.5), both signs, past both ends of u8 and i8.
        let sums: Vec<i32> = (0..2 * 3 * 20).map(|i| (i * 97 % 1201) - 600).collect();
        for (multiplier, axis, shape) in [
            (vec![0.5], 0, vec![2, 3, 20]),
            (vec![0.5, 0.013, 0.25], 1, vec![2, 3, 20]),
            (vec![0.5, 0.013, 0.25, 1.0 / 3.0, 0.75], 2, vec![4, 6, 5]),
        ] {
            for (output, zero) in [(u8::datum_type(), 128), (i8::datum_type(), -3)] {
                let op = FastRequantize {
                    multiplier: multiplier.clone(),
                    axis,
                    zero,
                    output,
                };
                let input = tract_ndarray::Array::from_shape_vec(shape.clone(), sums.clone())
                    .unwrap()
                    .into_tvalue();
                let out = op
                    .eval(&EvalContext::out_of_plan(), tvec!(input))
                    .unwrap()
                    .remove(0)
                    .cast_to::<i32>()
                    .unwrap()
                    .into_owned();
                let got = out
                    .try_as_plain_ram()
                    .unwrap()
                    .as_slice::<i32>()
                    .unwrap()
                    .to_vec();
                assert_eq!(got, requantized(&op, &sums, &shape), "{op:?}");
            }
        }
    }
}
