//! Quantized unit-stride convolutions (ConvInteger, QLinearConv, QDQ convolutions made integer)
//! on an AVX-512 VNNI micro-kernel, read from the input planes as [`super::tap_products`] reads
//! float ones: no im2col. tract gathers a quantized convolution's windows one value at a time
//! (magika's 5-tap convolution over 384 channels: ~0.9 ms of gathering before a 2.3 ms product),
//! and below 256 channels Tessera ran them as float convolutions with exact sums
//! ([`super::quantized_conv_in_f32`]), as fast as the float model and no faster.
//!
//! `VPDPBUSD` multiplies 4 unsigned bytes by 4 signed bytes and adds the 4 products to a 32-bit
//! lane: 64 products per instruction where a float FMA does 16. So the input is laid out once per
//! run as quads of 4 channels per position (`[C/4][H + pads][W + pads]` of 4 bytes, padded with
//! the zero point, i8 inputs shifted to u8), each tap of each quad at a fixed offset from the
//! output position, and the weights, centred on their zero points (`w − w_zero`, which must fit
//! in i8), once per plan as quads of the same 4 channels. The sums of 4 vectors of 16 positions
//! by 6 output channels stay in registers over the whole depth. Then, exactly,
//! `Σ (x − x_zero)(w − w_zero) + bias = Σ x·(w − w_zero) − x_zero·Σ (w − w_zero) + bias`.

use super::quantized_conv_in_f32::QuantizedConv;
use super::quantized_depthwise_conv::input_zero_point;
use crate::parallel;
use std::cell::RefCell;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::Conv;
use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

/// Output channels per micro-tile.
const CHANNELS: usize = 6;
/// Positions per vector (one 32-bit lane each).
const LANES: usize = 16;
/// Vectors of positions per micro-tile.
const VECTORS: usize = 4;
/// Positions per parallel task.
const TASK_POSITIONS: usize = 512;
/// Tasks a convolution is split into at least, where it has the channels for them.
const MIN_TASKS: usize = 8;

/// Whether the micro-kernel runs on this CPU.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether `conv` has a geometry this op runs (given a VNNI CPU): channels first, 1-D or 2-D,
/// one group, unit strides.
pub fn runs_geometry(conv: &Conv) -> bool {
    let spec = &conv.pool_spec;
    available()
        && conv.group == 1
        && spec.data_format == DataFormat::NCHW
        && (1..=2).contains(&spec.kernel_shape.len())
        && spec.strides().iter().all(|&s| s == 1)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FastQuantizedConv {
    /// Batch, input channels, input rows and columns (1 for a 1-D convolution).
    pub input_shape: [usize; 4],
    /// 3 for a 1-D convolution (`[n, c, l]`), 4 for a 2-D one.
    pub rank: usize,
    pub output_channels: usize,
    pub kernel: [usize; 2],
    pub dilation: [usize; 2],
    pub pad_before: [usize; 2],
    pub output_hw: [usize; 2],
    /// Centred weights in quads of 4 input channels (`i32` of 4 `i8`): blocks of [`CHANNELS`]
    /// output channels, each `depth quads × CHANNELS`, the last block padded with zeros.
    pub packed: Vec<i32>,
    /// `Σ (w − w_zero)` per output channel.
    pub weight_sums: Vec<i32>,
    pub bias: Vec<i32>,
    /// `None`: the op's second input, known at run time.
    pub input_zero: Option<i32>,
    /// u8 or i8.
    pub input: DatumType,
    /// Where each quad-tap starts from the output position ([`Self::offsets`]).
    pub offsets: Vec<usize>,
}

thread_local! {
    /// Each thread's input quads and sums, kept between runs so that no run allocates them.
    static KEPT: RefCell<(Vec<i32>, Vec<i32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// `f` with this thread's kept buffers, `quads` and `sums` long (contents left from earlier
/// runs); a nested call, should there be one, gets buffers of its own.
fn with_kept<R>(quads: usize, sums: usize, f: impl FnOnce(&mut [i32], &mut [i32]) -> R) -> R {
    let use_buffers = |(q, s): &mut (Vec<i32>, Vec<i32>)| {
        if q.len() < quads {
            q.resize(quads, 0);
        }
        if s.len() < sums {
            s.resize(sums, 0);
        }
        f(&mut q[..quads], &mut s[..sums])
    };
    KEPT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffers) => use_buffers(&mut buffers),
        Err(_) => use_buffers(&mut (Vec::new(), Vec::new())),
    })
}

impl FastQuantizedConv {
    /// The op for `q` over an input of `shape`, when the geometry runs here and every centred
    /// weight fits in i8.
    pub fn for_conv(q: &QuantizedConv, shape: &[usize]) -> Option<FastQuantizedConv> {
        if !runs_geometry(&q.conv) || !(3..=4).contains(&shape.len()) {
            return None;
        }
        let spec = &q.conv.pool_spec;
        let rank = shape.len();
        let hw = &shape[2..];
        let padding = spec.computed_padding(hw);
        let pick = |v: &[usize], ix: usize| v.get(ix).copied().unwrap_or(1);
        let dilations = spec.dilations();
        let input_shape = [shape[0], shape[1], hw[0], pick(hw, 1)];
        let kernel = [spec.kernel_shape[0], pick(&spec.kernel_shape, 1)];
        let dilation = [dilations[0], pick(&dilations, 1)];
        let pad_before = [
            padding[0].pad_before,
            padding.get(1).map_or(0, |p| p.pad_before),
        ];
        let output_hw = [
            padding[0].convoluted,
            padding.get(1).map_or(1, |p| p.convoluted),
        ];
        if input_shape[1] != spec.input_channels
            || output_hw.contains(&0)
            || kernel.contains(&0)
            || dilation.contains(&0)
        {
            return None;
        }
        let (channels, depth) = (q.channels, spec.input_channels * kernel[0] * kernel[1]);
        if q.centred.len() != channels * depth
            || q.centred.iter().any(|&w| i8::try_from(w).is_err())
        {
            return None;
        }
        // Every i32 on the way stays in range: the kernel's sums (at most 255 · 128 per product)
        // and the correction (the zero point, up to 255, times as much) plus the bias.
        let largest_bias = q.bias.iter().map(|&b| (b as i64).abs()).max().unwrap_or(0);
        if largest_bias + 2 * 255 * 128 * depth as i64 > i32::MAX as i64 {
            return None;
        }
        let mut fast = FastQuantizedConv {
            input_shape,
            rank,
            output_channels: channels,
            kernel,
            dilation,
            pad_before,
            output_hw,
            packed: pack_weights(
                &q.centred,
                channels,
                spec.input_channels,
                kernel[0] * kernel[1],
            ),
            weight_sums: q
                .centred
                .chunks_exact(depth)
                .map(|r| r.iter().sum())
                .collect(),
            bias: q.bias.clone(),
            input_zero: q.input_zero,
            input: q.input,
            offsets: vec![],
        };
        fast.offsets = fast.offsets();
        Some(fast)
    }

    /// Rows and columns of the padded input the outputs read (unit stride).
    fn padded_hw(&self) -> [usize; 2] {
        [0, 1].map(|a| self.output_hw[a] + (self.kernel[a] - 1) * self.dilation[a])
    }

    /// Where each quad-tap starts, from the output position: channel quads major, then taps.
    fn offsets(&self) -> Vec<usize> {
        let [hp, wp] = self.padded_hw();
        let quads = self.input_shape[1].div_ceil(4);
        let mut offsets = Vec::with_capacity(quads * self.kernel[0] * self.kernel[1]);
        for quad in 0..quads {
            for ky in 0..self.kernel[0] {
                for kx in 0..self.kernel[1] {
                    offsets
                        .push(quad * hp * wp + ky * self.dilation[0] * wp + kx * self.dilation[1]);
                }
            }
        }
        offsets
    }

    fn output_shape(&self) -> TVec<usize> {
        let [n, _, _, _] = self.input_shape;
        let mut shape = tvec![n, self.output_channels, self.output_hw[0]];
        if self.rank == 4 {
            shape.push(self.output_hw[1]);
        }
        shape
    }

    /// One image's input (`[C][H][W]`) as quads of channels over the padded plane, as u8 (an i8
    /// input shifted by 128), padding and the last quad's missing channels the zero point. Quads
    /// in parallel: on one thread this pass left the others idle before the products.
    fn lay_out<T: Copy + Into<i32> + Sync>(
        &self,
        image: &[T],
        zero_u8: u8,
        quads: &mut [u8],
    ) -> TractResult<()> {
        let [_, c, h, w] = self.input_shape;
        let [hp, wp] = self.padded_hw();
        let shift = if self.input == i8::datum_type() {
            128
        } else {
            0
        };
        let plane = hp * wp * 4;
        let (laid, tail) = quads.split_at_mut(c.div_ceil(4) * plane);
        // Read only for the columns past the outputs: the zero point, as the padding.
        tail.fill(zero_u8);
        let columns = w.min(wp - self.pad_before[1]);
        let rows = h.min(hp.saturating_sub(self.pad_before[0]));
        parallel::par_chunks_mut(laid, plane, c * hp * wp, |first_quad, block| {
            for (q, quad) in block.chunks_exact_mut(plane).enumerate() {
                quad.fill(zero_u8);
                let channels = (first_quad + q) * 4..((first_quad + q) * 4 + 4).min(c);
                for (byte, channel) in channels.enumerate() {
                    let source = &image[channel * h * w..][..h * w];
                    for y in 0..rows {
                        let start = ((y + self.pad_before[0]) * wp + self.pad_before[1]) * 4;
                        let row = &source[y * w..][..columns];
                        let pixels = &mut quad[start..][..columns * 4];
                        for (pixel, &v) in pixels.chunks_exact_mut(4).zip(row) {
                            pixel[byte] = (v.into() + shift) as u8;
                        }
                    }
                }
            }
            Ok(())
        })
    }

    /// One image's sums (`[output channels][rows × padded width]`, before the correction) into
    /// `sums`, through its quads laid out in `quads` ([`Self::lay_out`]).
    fn convolve_image<T: Copy + Into<i32> + Sync>(
        &self,
        image: &[T],
        zero_u8: u8,
        quads: &mut [i32],
        sums: &mut [i32],
    ) -> TractResult<()> {
        let [ho, wp] = [self.output_hw[0], self.padded_hw()[1]];
        let positions = ho * wp;
        ensure!(
            sums.len() >= self.output_channels * positions,
            "quantized tap products: the sums are smaller than their geometry"
        );
        // SAFETY: the bytes of the quads' own i32 values (x86-64: little-endian, so byte `i`
        // of a value is channel `i` of its quad, as the kernel pairs them).
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(quads.as_mut_ptr() as *mut u8, quads.len() * 4)
        };
        self.lay_out(image, zero_u8, bytes)?;
        let sums_at = SharedSums(sums.as_mut_ptr());
        // Tasks over runs of positions and, where those are few (a 1-D convolution over a short
        // sequence), groups of channel blocks too.
        let position_tasks = positions.div_ceil(TASK_POSITIONS);
        let blocks = self.output_channels.div_ceil(CHANNELS);
        let per_group = blocks.div_ceil(MIN_TASKS.div_ceil(position_tasks).min(blocks));
        let groups = blocks.div_ceil(per_group);
        let quads = &*quads;
        parallel::for_each(position_tasks * groups, 0, |_, task| {
            let (run, group) = (task / groups, task % groups);
            let first = run * TASK_POSITIONS;
            let count = (positions - first).min(TASK_POSITIONS);
            let blocks = group * per_group..((group + 1) * per_group).min(blocks);
            // SAFETY: AVX-512 VNNI is present (the caller checked); every read lies inside
            // `quads` (the caller's length covers the farthest offset plus a row); the task
            // writes positions `first..first + count` of each row of `sums` (checked long
            // enough above), rows `positions` apart, which no other task writes.
            unsafe {
                products(
                    quads,
                    &self.offsets,
                    &self.packed,
                    self.output_channels,
                    blocks,
                    first,
                    count,
                    sums_at.get(),
                    positions,
                )
            };
            Ok(())
        })
    }

    fn eval_as<T: Datum + Copy + Into<i32> + Sync>(
        &self,
        input: &TValue,
        input_zero: i32,
    ) -> TractResult<Tensor> {
        ensure!(available(), "quantized tap products need AVX-512 VNNI");
        let [n, c, h, w] = self.input_shape;
        ensure!(
            input.shape().iter().product::<usize>() == n * c * h * w,
            "a quantized convolution built for {:?} got {:?}",
            self.input_shape,
            input.shape()
        );
        let shift = if self.input == i8::datum_type() {
            128
        } else {
            0
        };
        let zero_u8 = u8::try_from(input_zero + shift)
            .map_err(|_| format_err!("input zero point {input_zero} outside its type"))?;
        let plain = input.try_as_plain_ram()?;
        let values = plain.as_slice::<T>()?;
        let [hp, wp] = self.padded_hw();
        let [ho, wo] = self.output_hw;
        let positions = ho * wp;
        // Reads reach past the last plane by at most a row (the columns beyond the outputs).
        let quad_len = c.div_ceil(4) * hp * wp + wp + LANES;
        let mut output = Tensor::zero::<i32>(&self.output_shape())?;
        let mut out_ram = output.try_as_plain_ram_mut()?;
        let out = out_ram.as_slice_mut::<i32>()?;
        with_kept(quad_len, self.output_channels * positions, |quads, sums| {
            for (image, out) in values
                .chunks_exact(c * h * w)
                .zip(out.chunks_exact_mut(self.output_channels * ho * wo))
            {
                self.convolve_image(image, zero_u8, quads, sums)?;
                let sums = &*sums;
                // Output channels in parallel, as the products before them.
                parallel::par_chunks_mut(out, ho * wo, out.len(), |first, channels| {
                    for (o, out) in channels.chunks_exact_mut(ho * wo).enumerate() {
                        let channel = first + o;
                        let sums = &sums[channel * positions..][..positions];
                        let correction =
                            self.bias[channel] - zero_u8 as i32 * self.weight_sums[channel];
                        for (out, sums) in out.chunks_exact_mut(wo).zip(sums.chunks_exact(wp)) {
                            for (o, &s) in out.iter_mut().zip(sums) {
                                *o = s + correction;
                            }
                        }
                    }
                    Ok(())
                })?;
            }
            TractResult::Ok(())
        })?;
        Ok(output)
    }
}

/// The sums, written by tasks at disjoint positions.
struct SharedSums(*mut i32);
// SAFETY: tasks write disjoint positions and the buffer outlives the parallel loop.
unsafe impl Sync for SharedSums {}
unsafe impl Send for SharedSums {}

impl SharedSums {
    fn get(&self) -> *mut i32 {
        self.0
    }
}

/// `centred` (`channels` rows of `inputs × taps`, input channel major) packed for [`products`].
fn pack_weights(centred: &[i32], channels: usize, inputs: usize, taps: usize) -> Vec<i32> {
    let quads = inputs.div_ceil(4);
    let depth = quads * taps;
    let mut packed = vec![0i32; channels.div_ceil(CHANNELS) * depth * CHANNELS];
    for (row, weights) in centred.chunks_exact(inputs * taps).enumerate() {
        let (block, j) = (row / CHANNELS, row % CHANNELS);
        for quad in 0..quads {
            for tap in 0..taps {
                let mut bytes = [0u8; 4];
                for (byte, channel) in (quad * 4..(quad * 4 + 4).min(inputs)).enumerate() {
                    bytes[byte] = weights[channel * taps + tap] as i8 as u8;
                }
                let k = quad * taps + tap;
                packed[(block * depth + k) * CHANNELS + j] = i32::from_le_bytes(bytes);
            }
        }
    }
    packed
}

/// Sums over every quad-tap for positions `first..first + count` of the output channels of
/// `blocks` (of [`CHANNELS`]), into rows `row_len` apart from `sums`.
///
/// SAFETY: AVX-512F and VNNI must be present; `quads` must hold `offsets[k] + first + count`
/// values for every `k` (a masked load may read up to 15 lanes past them: they must exist too);
/// the positions written must be writable and written by no other thread meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn products(
    quads: &[i32],
    offsets: &[usize],
    packed: &[i32],
    channels: usize,
    blocks: std::ops::Range<usize>,
    first: usize,
    count: usize,
    sums: *mut i32,
    row_len: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        let depth = offsets.len();
        for block in blocks {
            let rows = (channels - block * CHANNELS).min(CHANNELS);
            let weights = packed[block * depth * CHANNELS..].as_ptr();
            let mut p = first;
            while p < first + count {
                let left = first + count - p;
                let vectors = left.div_ceil(LANES).min(VECTORS);
                let n = left.min(vectors * LANES);
                let tail = n - (vectors - 1) * LANES;
                // SAFETY: the caller's (see above), for this tile's positions `p..p + n`.
                unsafe {
                    let base = quads.as_ptr().add(p);
                    let out = sums.add(block * CHANNELS * row_len + p);
                    match vectors {
                        4 => tile::<4>(base, offsets, weights, out, row_len, rows, tail),
                        3 => tile::<3>(base, offsets, weights, out, row_len, rows, tail),
                        2 => tile::<2>(base, offsets, weights, out, row_len, rows, tail),
                        _ => tile::<1>(base, offsets, weights, out, row_len, rows, tail),
                    }
                }
                p += n;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (
        quads, offsets, packed, channels, first, count, sums, row_len,
    );
}

/// One micro-tile: `V` vectors of positions (the last holding `tail` of 16) by [`CHANNELS`]
/// channels (the first `rows` stored).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vnni")]
#[inline]
// Indexes over the register block: it must unroll into named registers.
#[allow(clippy::needless_range_loop)]
unsafe fn tile<const V: usize>(
    quads: *const i32,
    offsets: &[usize],
    weights: *const i32,
    out: *mut i32,
    out_row: usize,
    rows: usize,
    tail: usize,
) {
    use std::arch::x86_64::*;
    let mask: __mmask16 = if tail >= LANES {
        0xffff
    } else {
        (1u16 << tail) - 1
    };
    let mut acc = [[_mm512_setzero_si512(); CHANNELS]; V];
    for (k, &offset) in offsets.iter().enumerate() {
        // SAFETY: the caller's: quad-tap `k`'s `V` vectors (the last masked) lie inside the
        // quads, and its `CHANNELS` weights inside the block.
        unsafe {
            let a = quads.add(offset);
            let mut x = [_mm512_setzero_si512(); V];
            for (v, x) in x.iter_mut().enumerate() {
                *x = if v + 1 == V {
                    _mm512_maskz_loadu_epi32(mask, a.add(v * LANES))
                } else {
                    _mm512_loadu_si512(a.add(v * LANES) as *const _)
                };
            }
            let w = weights.add(k * CHANNELS);
            for j in 0..CHANNELS {
                let b = _mm512_set1_epi32(*w.add(j));
                for v in 0..V {
                    acc[v][j] = _mm512_dpbusd_epi32(acc[v][j], x[v], b);
                }
            }
        }
    }
    for j in 0..rows {
        for v in 0..V {
            // SAFETY: the caller's: row `j`'s `V` vectors (the last masked) lie inside `out`.
            unsafe {
                let at = out.add(j * out_row + v * LANES);
                if v + 1 == V {
                    _mm512_mask_storeu_epi32(at, mask, acc[v][j]);
                } else {
                    _mm512_storeu_si512(at as *mut _, acc[v][j]);
                }
            }
        }
    }
}

impl Op for FastQuantizedConv {
    fn name(&self) -> StaticName {
        "FastQuantizedConv".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FastQuantizedConv {
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

impl TypedOp for FastQuantizedConv {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 1 + usize::from(self.input_zero.is_none()));
        Ok(tvec!(i32::fact(&*self.output_shape())))
    }

    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let [n, c, _, _] = self.input_shape;
        let products = n
            * self.output_channels
            * self.output_hw[0]
            * self.output_hw[1]
            * c
            * self.kernel[0]
            * self.kernel[1];
        Ok(tvec!((Cost::FMA(i32::datum_type()), products.into())))
    }
}

/// Replaces every quantized convolution [`FastQuantizedConv::for_conv`] accepts. Returns how
/// many.
pub fn use_quantized_tap_products(model: &mut TypedModel) -> TractResult<usize> {
    if !available() {
        return Ok(0);
    }
    let mut count = 0;
    for id in 0..model.nodes().len() {
        let node = model.node(id);
        let Some(q) = QuantizedConv::of(model, node) else {
            continue;
        };
        let Some(shape) = model.outlet_fact(node.inputs[0])?.shape.as_concrete() else {
            continue;
        };
        let Some(fast) = FastQuantizedConv::for_conv(&q, shape) else {
            continue;
        };
        let mut patch = TypedModelPatch::new("quantized convolution on tap products");
        let mut inputs = vec![patch.tap_model(model, node.inputs[0])?];
        if fast.input_zero.is_none() {
            inputs.push(patch.tap_model(model, node.inputs[3])?);
        }
        let sums = patch.wire_node(format!("{}.sums", node.name), fast, &inputs)?[0];
        let Some((output, replaced)) = q.wire_output(model, node, &mut patch, sums) else {
            continue;
        };
        patch.shunt_outside(model, OutletId::new(replaced, 0), output)?;
        patch.apply(model)?;
        count += 1;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::tract_onnx::tract_core::ops::cnn::{KernelFormat, PaddingSpec, PoolSpec};

    /// Integers in `0..256` with no pattern a loop could lean on.
    fn levels(count: usize, seed: usize) -> Vec<u8> {
        (0..count)
            .map(|i| ((i * 89 + seed * 7 + i / 7) % 256) as u8)
            .collect()
    }

    /// A convolution's geometry: input `[1, c, h, w]` (`w = 0`: 1-D over `h`), `m` outputs.
    struct Geometry {
        c: usize,
        m: usize,
        h: usize,
        w: usize,
        kernel: [usize; 2],
        pads: [usize; 2],
        dilation: [usize; 2],
    }

    const GEOMETRIES: [Geometry; 4] = [
        Geometry {
            c: 5,
            m: 7,
            h: 9,
            w: 11,
            kernel: [3, 3],
            pads: [1, 1],
            dilation: [1, 1],
        },
        Geometry {
            c: 8,
            m: 13,
            h: 6,
            w: 40,
            kernel: [3, 2],
            pads: [0, 1],
            dilation: [2, 1],
        },
        Geometry {
            c: 6,
            m: 6,
            h: 70,
            w: 0,
            kernel: [5, 1],
            pads: [2, 0],
            dilation: [1, 1],
        },
        // Pointwise (1×1), many input channels: the products tract would run as a matrix one.
        Geometry {
            c: 37,
            m: 9,
            h: 7,
            w: 13,
            kernel: [1, 1],
            pads: [0, 0],
            dilation: [1, 1],
        },
    ];

    /// A ConvInteger of `g` in a model: an input of type `T`, its zero point a model input
    /// (`None`) or a constant, weights of type `W` with `weight_zero`.
    fn conv_integer<T: Datum, W: Datum + Copy>(
        g: &Geometry,
        input_zero: Option<i32>,
        weights: &[W],
        weight_zero: i32,
    ) -> TypedModel {
        let one_d = g.w == 0;
        let mut model = TypedModel::default();
        let shape: TVec<usize> = if one_d {
            tvec![1, g.c, g.h]
        } else {
            tvec![1, g.c, g.h, g.w]
        };
        let x = model.add_source("x", T::fact(&*shape)).unwrap();
        let (kh, kw) = (g.kernel[0], g.kernel[1]);
        let kernel_shape: Vec<usize> = if one_d {
            vec![g.m, g.c, kh]
        } else {
            vec![g.m, g.c, kh, kw]
        };
        let kernel = Tensor::from_shape(&kernel_shape, weights).unwrap();
        let mut inputs = vec![x, model.add_const("w", kernel).unwrap()];
        let bias: Vec<i32> = (0..g.m as i32).map(|c| (c - 3) * 977).collect();
        inputs.push(model.add_const("bias", tensor1(&bias)).unwrap());
        inputs.push(match input_zero {
            None => model.add_source("x_zero", i32::fact([0usize; 0])).unwrap(),
            Some(z) => model.add_const("x_zero", tensor0(z)).unwrap(),
        });
        for (name, value) in [
            ("x_scale", tensor0(1f32)),
            ("w_zero", tensor0(weight_zero)),
            ("w_scale", tensor0(1f32)),
            ("y_zero", tensor0(0i32)),
            ("y_scale", tensor0(1f32)),
        ] {
            inputs.push(model.add_const(name, value).unwrap());
        }
        let spatial = |v: [usize; 2]| -> TVec<usize> {
            if one_d {
                tvec![v[0]]
            } else {
                tvec![v[0], v[1]]
            }
        };
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: DataFormat::NCHW,
                kernel_shape: spatial(g.kernel),
                padding: PaddingSpec::Explicit(spatial(g.pads), spatial(g.pads)),
                dilations: Some(spatial(g.dilation)),
                strides: None,
                input_channels: g.c,
                output_channels: g.m,
            },
            kernel_fmt: KernelFormat::OIHW,
            group: 1,
            q_params: Some(i32::datum_type()),
        };
        let y = model.wire_node("conv", conv, &inputs).unwrap();
        model.select_output_outlets(&y).unwrap();
        model
    }

    /// The ConvInteger's sums by the definition: padding adds nothing.
    fn reference(g: &Geometry, x: &[i32], x_zero: i32, w: &[i32], w_zero: i32) -> Vec<i32> {
        let width = g.w.max(1);
        let (kh, kw) = (g.kernel[0], g.kernel[1]);
        let (ph, pw) = (g.pads[0], g.pads[1]);
        let oh = g.h + 2 * ph - (kh - 1) * g.dilation[0];
        let ow = width + 2 * pw - (kw - 1) * g.dilation[1];
        let mut sums = vec![];
        for o in 0..g.m {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut sum = (o as i32 - 3) * 977;
                    for c in 0..g.c {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let y = (oy + ky * g.dilation[0]) as isize - ph as isize;
                                let xx = (ox + kx * g.dilation[1]) as isize - pw as isize;
                                if y < 0 || xx < 0 || y >= g.h as isize || xx >= width as isize {
                                    continue;
                                }
                                let v = x[(c * g.h + y as usize) * width + xx as usize];
                                let k = w[((o * g.c + c) * kh + ky) * kw + kx];
                                sum += (v - x_zero) * (k - w_zero);
                            }
                        }
                    }
                    sums.push(sum);
                }
            }
        }
        sums
    }

    fn run(model: TypedModel, x: Tensor, x_zero: i32) -> Vec<i32> {
        let mut inputs = tvec![x.into_tvalue()];
        if model.inputs.len() == 2 {
            inputs.push(tensor0(x_zero).into_tvalue());
        }
        let out = model.into_runnable().unwrap().run(inputs).unwrap();
        let out = out[0].cast_to::<i32>().unwrap();
        out.try_as_plain_ram()
            .unwrap()
            .as_slice::<i32>()
            .unwrap()
            .to_vec()
    }

    fn replaced(model: &mut TypedModel) -> usize {
        let count = use_quantized_tap_products(model).unwrap();
        // Without VNNI the op does not exist here: the pass must leave the model to tract.
        assert_eq!(count, usize::from(available()));
        count
    }

    #[test]
    fn sums_are_the_definition_s_for_u8_and_i8_inputs_and_weights() {
        for g in &GEOMETRIES {
            let volume = g.c * g.h * g.w.max(1);
            let shape: Vec<usize> = if g.w == 0 {
                vec![1, g.c, g.h]
            } else {
                vec![1, g.c, g.h, g.w]
            };
            let weights = levels(g.m * g.c * g.kernel[0] * g.kernel[1], 3);
            let as_i32 = |v: &[u8]| v.iter().map(|&b| b as i32).collect::<Vec<_>>();
            // u8 input with a computed zero point; u8 weights, zero point 128 (centred: i8).
            let x = levels(volume, 11);
            let mut model = conv_integer::<u8, u8>(g, None, &weights, 128);
            if replaced(&mut model) == 1 {
                let got = run(model, Tensor::from_shape(&shape, &x).unwrap(), 77);
                let want = reference(g, &as_i32(&x), 77, &as_i32(&weights), 128);
                assert_eq!(got, want);
                assert!(got.iter().any(|&s| s < -5000) && got.iter().any(|&s| s > 5000));
            }
            // i8 input, constant zero point -3; i8 weights, zero point 2, from -126 up (so that
            // every centred weight fits in i8).
            let x: Vec<i8> = levels(volume, 5).iter().map(|&b| b as i8).collect();
            let w: Vec<i8> = weights.iter().map(|&b| (b as i8).max(-126)).collect();
            let mut model = conv_integer::<i8, i8>(g, Some(-3), &w, 2);
            if replaced(&mut model) == 1 {
                let got = run(model, Tensor::from_shape(&shape, &x).unwrap(), -3);
                let xs: Vec<i32> = x.iter().map(|&v| v as i32).collect();
                let ws: Vec<i32> = w.iter().map(|&v| v as i32).collect();
                assert_eq!(got, reference(g, &xs, -3, &ws, 2));
            }
        }
    }

    /// Before tract's declutter, tract-onnx's QLinearConv reads its bias through a cast: the
    /// pass that runs then (before 1×1 convolutions become matrix products) reads through it.
    #[test]
    fn a_bias_behind_a_cast_is_read_before_declutter() {
        use tessera_core::tract_onnx::tract_core::ops::cast::cast;
        let g = &GEOMETRIES[0];
        let shape = [1, g.c, g.h, g.w];
        let weights: Vec<i8> = levels(g.m * g.c * 9, 3)
            .iter()
            .map(|&b| (b as i8).max(-126))
            .collect();
        let mut model = conv_integer::<i8, i8>(g, Some(-3), &weights, 2);
        let conv = model.node_by_name("conv").unwrap().id;
        let bias: Vec<i64> = (0..g.m as i64).map(|c| (c - 3) * 977).collect();
        let bias = model.add_const("bias_i64", tensor1(&bias)).unwrap();
        // Added, not wired: wiring would fold the cast into a constant, which tract-onnx's
        // translation does not do.
        let cast = model
            .add_node(
                "bias_cast",
                cast(i32::datum_type()),
                tvec![i32::fact([g.m])],
            )
            .unwrap();
        model.add_edge(bias, InletId::new(cast, 0)).unwrap();
        model
            .add_edge(OutletId::new(cast, 0), InletId::new(conv, 2))
            .unwrap();
        assert!(
            model
                .outlet_fact(OutletId::new(cast, 0))
                .unwrap()
                .konst
                .is_none()
        );
        if replaced(&mut model) == 1 {
            let x: Vec<i8> = levels(g.c * g.h * g.w, 5)
                .iter()
                .map(|&b| b as i8)
                .collect();
            let got = run(model, Tensor::from_shape(&shape, &x).unwrap(), -3);
            let xs: Vec<i32> = x.iter().map(|&v| v as i32).collect();
            let ws: Vec<i32> = weights.iter().map(|&v| v as i32).collect();
            assert_eq!(got, reference(g, &xs, -3, &ws, 2));
        }
    }

    #[test]
    fn weights_whose_centred_values_leave_i8_stay_with_the_other_paths() {
        let g = &GEOMETRIES[0];
        let weights = levels(g.m * g.c * 9, 3);
        // u8 weights with zero point 100: 255 - 100 does not fit in i8.
        let mut model = conv_integer::<u8, u8>(g, None, &weights, 100);
        assert_eq!(use_quantized_tap_products(&mut model).unwrap(), 0);
    }
}
