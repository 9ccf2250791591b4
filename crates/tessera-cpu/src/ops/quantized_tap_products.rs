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
//!
//! CPUs without VNNI (AVX2 only: Zen 3, most desktops) run the same layout with pairs of 2
//! channels as 16-bit values per 32-bit lane, 8 positions a vector: `VPMADDWD` multiplies the
//! pairs by a pair of weights and adds the 2 products, 16 an instruction, twice an f32 FMA's
//! rate, and exact (onnxruntime's AVX2 kernels pair bytes with `VPMADDUBSW` instead, whose
//! 16-bit sums saturate). The weights may then be any centred 8-bit value (`−255..=255`: dynamic
//! u8 ones too).

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
/// Tasks a convolution is split into at least, where it has the channels for them.
const MIN_TASKS: usize = 8;
/// Lanes past a task's last position the kernels may read: the widest vector's.
const MAX_LANES: usize = 16;

/// The micro-kernel that computes the products, by the instructions the CPU has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TapIsa {
    /// AVX-512 VNNI: `VPDPBUSD` over quads of 4 channels as bytes, 16 positions a vector.
    Vnni,
    /// AVX2: `VPMADDWD` over pairs of 2 channels as 16-bit values, 8 positions a vector.
    Avx2,
}

impl TapIsa {
    pub const ALL: [TapIsa; 2] = [TapIsa::Vnni, TapIsa::Avx2];

    /// The fastest this CPU runs, if any.
    pub fn best() -> Option<TapIsa> {
        TapIsa::ALL.into_iter().find(|isa| isa.runs_here())
    }

    pub fn runs_here(self) -> bool {
        match self {
            TapIsa::Vnni => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            TapIsa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
        }
    }

    /// Its layout and tiles.
    fn layout(self) -> Layout {
        match self {
            TapIsa::Vnni => Layout {
                group: 4,
                lanes: 16,
                vectors: 4,
                task_positions: 512,
            },
            TapIsa::Avx2 => Layout {
                group: 2,
                lanes: 8,
                vectors: 2,
                task_positions: 256,
            },
        }
    }

    /// Input channels per 32-bit lane.
    fn group(self) -> usize {
        self.layout().group
    }

    /// Whether a centred weight fits the kernel's operand: a signed byte for VNNI, any centred
    /// 8-bit weight in AVX2's 16 bits.
    fn holds_weight(self, w: i32) -> bool {
        match self {
            TapIsa::Vnni => i8::try_from(w).is_ok(),
            TapIsa::Avx2 => (-255..=255).contains(&w),
        }
    }
}

/// Output positions below which a QDQ pointwise (1×1) convolution is better left float than
/// made integer for the AVX2 kernel: there the layout, correction and requantization passes
/// around the products cost more than the kernel saves over tract's f32 product
/// (ppocr_mobile_cls's 1×1 convolutions over 192 positions ran 1.6–2× slower on it). Quantized
/// convolutions of the other formats it takes whatever their size: their alternatives (f32 sums
/// of centred values, tract's integer kernel) are slower still.
const AVX2_MIN_POINTWISE_POSITIONS: usize = 512;

/// Whether making the float convolution `conv` of a QDQ pattern, over an input of `shape`, an
/// integer one for this CPU's kernel pays (given weights that fit it).
pub fn pays_over_float(conv: &Conv, shape: &[usize]) -> bool {
    let Some(isa) = TapIsa::best() else {
        return false;
    };
    if !runs_geometry(conv) || shape.len() < 3 {
        return false;
    }
    let padding = conv.pool_spec.computed_padding(&shape[2..]);
    let positions: usize = padding.iter().map(|p| p.convoluted).product();
    isa != TapIsa::Avx2
        || conv.pool_spec.kernel_shape.iter().any(|&k| k != 1)
        || positions >= AVX2_MIN_POINTWISE_POSITIONS
}

/// A kernel's layout and tiles.
struct Layout {
    /// Input channels per 32-bit lane.
    group: usize,
    /// Positions per vector (one 32-bit lane each).
    lanes: usize,
    /// Vectors of positions per micro-tile: with [`CHANNELS`] sums each, the registers left for
    /// the inputs and a weight (AVX2: 12 sums, 2 inputs, a weight and a product of 16).
    vectors: usize,
    /// Positions per parallel task. AVX2's pairs take twice the bytes of VNNI's quads per
    /// channel: half the positions keep a task's inputs in L2 (256 positions of a 3×3
    /// convolution over 64 channels: 295 KB) while each block of channels reads them again.
    task_positions: usize,
}

/// Whether a micro-kernel runs on this CPU.
pub fn available() -> bool {
    TapIsa::best().is_some()
}

/// Whether `conv` has a geometry this op runs (given a CPU it runs on): channels first, 1-D or
/// 2-D, one group, unit strides.
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
    /// The micro-kernel, which decides the layouts below.
    pub isa: TapIsa,
    /// Centred weights in groups of [`TapIsa::group`] input channels per `i32` (4 `i8` for
    /// VNNI, 2 `i16` for AVX2): blocks of [`CHANNELS`] output channels, each `depth groups ×
    /// CHANNELS`, the last block padded with zeros.
    pub packed: Vec<i32>,
    /// `Σ (w − w_zero)` per output channel.
    pub weight_sums: Vec<i32>,
    pub bias: Vec<i32>,
    /// `None`: the op's second input, known at run time.
    pub input_zero: Option<i32>,
    /// u8 or i8.
    pub input: DatumType,
    /// Where each group-tap starts from the output position ([`Self::offsets`]).
    pub offsets: Vec<usize>,
}

thread_local! {
    /// Each thread's laid-out input and sums, kept between runs so that no run allocates them.
    static KEPT: RefCell<(Vec<i32>, Vec<i32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// `f` with this thread's kept buffers, `groups` and `sums` long (contents left from earlier
/// runs); a nested call, should there be one, gets buffers of its own.
fn with_kept<R>(groups: usize, sums: usize, f: impl FnOnce(&mut [i32], &mut [i32]) -> R) -> R {
    let use_buffers = |(g, s): &mut (Vec<i32>, Vec<i32>)| {
        if g.len() < groups {
            g.resize(groups, 0);
        }
        if s.len() < sums {
            s.resize(sums, 0);
        }
        f(&mut g[..groups], &mut s[..sums])
    };
    KEPT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffers) => use_buffers(&mut buffers),
        Err(_) => use_buffers(&mut (Vec::new(), Vec::new())),
    })
}

impl FastQuantizedConv {
    /// The op for `q` over an input of `shape` on `isa`'s kernel (which the caller checked runs
    /// here), when the geometry runs here and every centred weight fits the kernel.
    pub fn for_conv_on(
        q: &QuantizedConv,
        shape: &[usize],
        isa: TapIsa,
    ) -> Option<FastQuantizedConv> {
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
        if q.centred.len() != channels * depth || !q.centred.iter().all(|&w| isa.holds_weight(w)) {
            return None;
        }
        // Every i32 on the way stays in range: the kernel's sums (at most 255 times the largest
        // centred weight per product) and the correction (the zero point, up to 255, times as
        // much) plus the bias.
        let largest_bias = q.bias.iter().map(|&b| (b as i64).abs()).max().unwrap_or(0);
        let largest_weight = q
            .centred
            .iter()
            .map(|&w| (w as i64).abs())
            .max()
            .unwrap_or(0);
        if largest_bias + 2 * 255 * largest_weight * depth as i64 > i32::MAX as i64 {
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
            isa,
            packed: pack_weights(
                &q.centred,
                channels,
                spec.input_channels,
                kernel[0] * kernel[1],
                isa,
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

    /// Channel groups of the laid-out input.
    fn groups(&self) -> usize {
        self.input_shape[1].div_ceil(self.isa.group())
    }

    /// Where each group-tap starts, from the output position: channel groups major, then taps.
    fn offsets(&self) -> Vec<usize> {
        let [hp, wp] = self.padded_hw();
        let mut offsets = Vec::with_capacity(self.groups() * self.kernel[0] * self.kernel[1]);
        for group in 0..self.groups() {
            for ky in 0..self.kernel[0] {
                for kx in 0..self.kernel[1] {
                    offsets
                        .push(group * hp * wp + ky * self.dilation[0] * wp + kx * self.dilation[1]);
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

    /// One image's input (`[C][H][W]`) as groups of channels over the padded plane, each value
    /// `E` of `x + shift` (an i8 input shifted by 128 to u8), padding and the last group's
    /// missing channels the zero point. Groups in parallel: on one thread this pass left the
    /// others idle before the products.
    fn lay_out<T: Copy + Into<i32> + Sync, E: Copy + Send + Sync>(
        &self,
        image: &[T],
        zero: E,
        laid_out: &mut [E],
        value: impl Fn(i32) -> E + Sync,
    ) -> TractResult<()> {
        let [_, c, h, w] = self.input_shape;
        let [hp, wp] = self.padded_hw();
        let g = self.isa.group();
        let shift = if self.input == i8::datum_type() {
            128
        } else {
            0
        };
        let plane = hp * wp * g;
        let (laid, tail) = laid_out.split_at_mut(self.groups() * plane);
        // Read only for the columns past the outputs: the zero point, as the padding.
        tail.fill(zero);
        let columns = w.min(wp - self.pad_before[1]);
        let rows = h.min(hp.saturating_sub(self.pad_before[0]));
        // Rows as wide as the padded plane's run together: one run over the plane (a k×1
        // convolution's one-column rows, one by one, took a fifth of magika's convolution).
        let (runs, run_len) = if w == wp && self.pad_before[1] == 0 {
            (1, rows * w)
        } else {
            (rows, columns)
        };
        parallel::par_chunks_mut(laid, plane, c * hp * wp, |first_group, block| {
            for (q, group) in block.chunks_exact_mut(plane).enumerate() {
                group.fill(zero);
                let channels = (first_group + q) * g..((first_group + q) * g + g).min(c);
                for (slot, channel) in channels.enumerate() {
                    let source = &image[channel * h * w..][..h * w];
                    for y in 0..runs {
                        let start = ((y + self.pad_before[0]) * wp + self.pad_before[1]) * g;
                        let row = &source[y * w..][..run_len];
                        let pixels = &mut group[start..][..run_len * g];
                        for (pixel, &v) in pixels.chunks_exact_mut(g).zip(row) {
                            pixel[slot] = value(v.into() + shift);
                        }
                    }
                }
            }
            Ok(())
        })
    }

    /// One image's sums (`[output channels][rows × padded width]`, before the correction) into
    /// `sums`, through its groups laid out in `groups` ([`Self::lay_out`]).
    fn convolve_image<T: Copy + Into<i32> + Sync>(
        &self,
        image: &[T],
        zero_u8: u8,
        groups: &mut [i32],
        sums: &mut [i32],
    ) -> TractResult<()> {
        let [ho, wp] = [self.output_hw[0], self.padded_hw()[1]];
        let positions = ho * wp;
        ensure!(
            sums.len() >= self.output_channels * positions,
            "quantized tap products: the sums are smaller than their geometry"
        );
        // SAFETY (both): the bytes or 16-bit halves of the groups' own i32 values (x86-64:
        // little-endian, so part `i` of a value is channel `i` of its group, as the kernels
        // pair them).
        match self.isa {
            TapIsa::Vnni => self.lay_out(
                image,
                zero_u8,
                unsafe {
                    std::slice::from_raw_parts_mut(groups.as_mut_ptr() as *mut u8, groups.len() * 4)
                },
                |v| v as u8,
            )?,
            TapIsa::Avx2 => self.lay_out(
                image,
                zero_u8 as i16,
                unsafe {
                    std::slice::from_raw_parts_mut(
                        groups.as_mut_ptr() as *mut i16,
                        groups.len() * 2,
                    )
                },
                |v| v as i16,
            )?,
        }
        let sums_at = SharedSums(sums.as_mut_ptr());
        // Tasks over runs of positions and, where those are few (a 1-D convolution over a short
        // sequence), groups of channel blocks too.
        let task_positions = self.isa.layout().task_positions;
        let position_tasks = positions.div_ceil(task_positions);
        let blocks = self.output_channels.div_ceil(CHANNELS);
        let per_group = blocks.div_ceil(MIN_TASKS.div_ceil(position_tasks).min(blocks));
        let block_groups = blocks.div_ceil(per_group);
        let groups = &*groups;
        parallel::for_each(position_tasks * block_groups, 0, |_, task| {
            let (run, block_group) = (task / block_groups, task % block_groups);
            let first = run * task_positions;
            let count = (positions - first).min(task_positions);
            let blocks = block_group * per_group..((block_group + 1) * per_group).min(blocks);
            // SAFETY: the kernel's instructions are present (the caller checked); every read
            // lies inside `groups` (the caller's length covers the farthest offset plus a row
            // and a vector); the task writes positions `first..first + count` of each row of
            // `sums` (checked long enough above), rows `positions` apart, which no other task
            // writes.
            unsafe {
                products(
                    self.isa,
                    groups,
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
        ensure!(
            self.isa.runs_here(),
            "quantized tap products built for {:?}, which this CPU lacks",
            self.isa
        );
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
        // Reads reach past the last plane by at most a row (the columns beyond the outputs) and
        // a vector.
        let groups_len = self.groups() * hp * wp + wp + MAX_LANES;
        let mut output = Tensor::zero::<i32>(&self.output_shape())?;
        let mut out_ram = output.try_as_plain_ram_mut()?;
        let out = out_ram.as_slice_mut::<i32>()?;
        with_kept(
            groups_len,
            self.output_channels * positions,
            |groups, sums| {
                for (image, out) in values
                    .chunks_exact(c * h * w)
                    .zip(out.chunks_exact_mut(self.output_channels * ho * wo))
                {
                    self.convolve_image(image, zero_u8, groups, sums)?;
                    let sums = &*sums;
                    // Output channels in parallel, as the products before them.
                    parallel::par_chunks_mut(out, ho * wo, out.len(), |first, channels| {
                        for (o, out) in channels.chunks_exact_mut(ho * wo).enumerate() {
                            let channel = first + o;
                            let sums = &sums[channel * positions..][..positions];
                            let correction =
                                self.bias[channel] - zero_u8 as i32 * self.weight_sums[channel];
                            // Without padding columns, the rows run together.
                            let row = if wo == wp { ho * wo } else { wo };
                            let padded_row = if wo == wp { ho * wp } else { wp };
                            for (out, sums) in
                                out.chunks_exact_mut(row).zip(sums.chunks_exact(padded_row))
                            {
                                for (o, &s) in out.iter_mut().zip(sums) {
                                    *o = s + correction;
                                }
                            }
                        }
                        Ok(())
                    })?;
                }
                TractResult::Ok(())
            },
        )?;
        Ok(output)
    }
}

/// Sums written by tasks at disjoint places (here positions; the matrix products' rows ×
/// columns).
pub(super) struct SharedSums(pub(super) *mut i32);
// SAFETY: tasks write disjoint positions and the buffer outlives the parallel loop.
unsafe impl Sync for SharedSums {}
unsafe impl Send for SharedSums {}

impl SharedSums {
    pub(super) fn get(&self) -> *mut i32 {
        self.0
    }
}

/// `centred` (`channels` rows of `inputs × taps`, input channel major) packed for [`products`]
/// on `isa`: each `i32` the weights of one group of input channels at one tap.
fn pack_weights(
    centred: &[i32],
    channels: usize,
    inputs: usize,
    taps: usize,
    isa: TapIsa,
) -> Vec<i32> {
    let g = isa.group();
    let groups = inputs.div_ceil(g);
    let depth = groups * taps;
    let mut packed = vec![0i32; channels.div_ceil(CHANNELS) * depth * CHANNELS];
    for (row, weights) in centred.chunks_exact(inputs * taps).enumerate() {
        let (block, j) = (row / CHANNELS, row % CHANNELS);
        for group in 0..groups {
            for tap in 0..taps {
                let mut bytes = [0u8; 4];
                for (slot, channel) in (group * g..(group * g + g).min(inputs)).enumerate() {
                    let w = weights[channel * taps + tap];
                    match isa {
                        TapIsa::Vnni => bytes[slot] = w as i8 as u8,
                        TapIsa::Avx2 => {
                            bytes[slot * 2..][..2].copy_from_slice(&(w as i16).to_le_bytes())
                        }
                    }
                }
                let k = group * taps + tap;
                packed[(block * depth + k) * CHANNELS + j] = i32::from_le_bytes(bytes);
            }
        }
    }
    packed
}

/// Sums over every group-tap for positions `first..first + count` of the output channels of
/// `blocks` (of [`CHANNELS`]), into rows `row_len` apart from `sums`, on `isa`'s micro-kernel.
///
/// SAFETY: `isa`'s instructions must be present; `groups` must hold `offsets[k] + first +
/// count` values for every `k` (a vector may read up to [`MAX_LANES`] − 1 lanes past them: they
/// must exist too); the positions written must be writable and written by no other thread
/// meanwhile.
#[allow(clippy::too_many_arguments)]
unsafe fn products(
    isa: TapIsa,
    groups: &[i32],
    offsets: &[usize],
    packed: &[i32],
    channels: usize,
    blocks: std::ops::Range<usize>,
    first: usize,
    count: usize,
    sums: *mut i32,
    row_len: usize,
) {
    let depth = offsets.len();
    let Layout {
        lanes,
        vectors: max_vectors,
        ..
    } = isa.layout();
    for block in blocks {
        let rows = (channels - block * CHANNELS).min(CHANNELS);
        let weights = packed[block * depth * CHANNELS..].as_ptr();
        let mut p = first;
        while p < first + count {
            let left = first + count - p;
            let vectors = left.div_ceil(lanes).min(max_vectors);
            let n = left.min(vectors * lanes);
            let tail = n - (vectors - 1) * lanes;
            // SAFETY: the caller's (see above), for this tile's positions `p..p + n`.
            unsafe {
                let base = groups.as_ptr().add(p);
                let out = sums.add(block * CHANNELS * row_len + p);
                let tile = (base, offsets, weights, out, row_len, rows, tail);
                match (isa, vectors) {
                    (TapIsa::Vnni, 4) => vnni::tile::<4>(tile),
                    (TapIsa::Vnni, 3) => vnni::tile::<3>(tile),
                    (TapIsa::Vnni, 2) => vnni::tile::<2>(tile),
                    (TapIsa::Vnni, _) => vnni::tile::<1>(tile),
                    (TapIsa::Avx2, 2) => avx2::tile::<2>(tile),
                    (TapIsa::Avx2, _) => avx2::tile::<1>(tile),
                }
            }
            p += n;
        }
    }
}

/// A micro-tile's arguments: the group-taps' first position, their offsets, the block's
/// weights, where its sums go, the distance between their rows, how many rows (channels) to
/// store, and how many positions of the last vector.
type Tile<'a> = (
    *const i32,
    &'a [usize],
    *const i32,
    *mut i32,
    usize,
    usize,
    usize,
);

mod vnni {
    use super::{CHANNELS, Tile};
    use std::arch::x86_64::*;

    const LANES: usize = 16;

    /// One micro-tile: `V` vectors of 16 positions (the last holding `tail`) by [`CHANNELS`]
    /// channels (the first `rows` stored).
    #[target_feature(enable = "avx512f,avx512vnni")]
    #[inline]
    // Indexes over the register block: it must unroll into named registers.
    #[allow(clippy::needless_range_loop)]
    pub unsafe fn tile<const V: usize>((quads, offsets, weights, out, out_row, rows, tail): Tile) {
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
}

mod avx2 {
    use super::{CHANNELS, Tile};
    use std::arch::x86_64::*;

    const LANES: usize = 8;

    /// One micro-tile: `V` vectors of 8 positions (the last holding `tail`) by [`CHANNELS`]
    /// channels (the first `rows` stored). Each lane holds 2 channels as i16, each weight the
    /// same 2 channels' weights: `VPMADDWD` gives the 2 products' sum, exactly, in 32 bits.
    #[target_feature(enable = "avx2")]
    #[inline]
    // Indexes over the register block: it must unroll into named registers.
    #[allow(clippy::needless_range_loop)]
    pub unsafe fn tile<const V: usize>((pairs, offsets, weights, out, out_row, rows, tail): Tile) {
        let mut acc = [[_mm256_setzero_si256(); CHANNELS]; V];
        for (k, &offset) in offsets.iter().enumerate() {
            // SAFETY: the caller's: pair-tap `k`'s `V` vectors lie inside the pairs (the last
            // one's lanes past `tail` too, read and never stored), and its `CHANNELS` weights
            // inside the block.
            unsafe {
                let a = pairs.add(offset);
                let mut x = [_mm256_setzero_si256(); V];
                for (v, x) in x.iter_mut().enumerate() {
                    *x = _mm256_loadu_si256(a.add(v * LANES) as *const __m256i);
                }
                let w = weights.add(k * CHANNELS);
                for j in 0..CHANNELS {
                    let b = _mm256_set1_epi32(*w.add(j));
                    for v in 0..V {
                        acc[v][j] = _mm256_add_epi32(acc[v][j], _mm256_madd_epi16(x[v], b));
                    }
                }
            }
        }
        let mask = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(tail as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        );
        for j in 0..rows {
            for v in 0..V {
                // SAFETY: the caller's: row `j`'s `V` vectors (of the last, its first `tail`
                // lanes) lie inside `out`.
                unsafe {
                    let at = out.add(j * out_row + v * LANES);
                    if v + 1 == V && tail < LANES {
                        _mm256_maskstore_epi32(at, mask, acc[v][j]);
                    } else {
                        _mm256_storeu_si256(at as *mut __m256i, acc[v][j]);
                    }
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

/// Replaces every quantized convolution [`FastQuantizedConv::for_conv_on`] accepts on this CPU's
/// best kernel. Returns how
/// many.
pub fn use_quantized_tap_products(model: &mut TypedModel) -> TractResult<usize> {
    match TapIsa::best() {
        Some(isa) => use_quantized_tap_products_on(model, isa),
        None => Ok(0),
    }
}

/// [`use_quantized_tap_products`] on `isa`'s kernel (which runs here).
fn use_quantized_tap_products_on(model: &mut TypedModel, isa: TapIsa) -> TractResult<usize> {
    let mut count = 0;
    for id in 0..model.nodes().len() {
        let node = model.node(id);
        let Some(q) = QuantizedConv::of(model, node) else {
            continue;
        };
        let Some(shape) = model.outlet_fact(node.inputs[0])?.shape.as_concrete() else {
            continue;
        };
        let Some(fast) = FastQuantizedConv::for_conv_on(&q, shape, isa) else {
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

    const GEOMETRIES: [Geometry; 6] = [
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
        // Pointwise over positions for 2 tasks on AVX2 (323: tasks of 256), 3 blocks of channels,
        // the last of one.
        Geometry {
            c: 12,
            m: 13,
            h: 17,
            w: 19,
            kernel: [1, 1],
            pads: [0, 0],
            dilation: [1, 1],
        },
        // Positions for several tasks on either kernel, 3 blocks of channels, an odd channel
        // count (a half-empty pair and quad).
        Geometry {
            c: 19,
            m: 14,
            h: 20,
            w: 30,
            kernel: [3, 3],
            pads: [1, 1],
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

    /// The kernels this CPU runs: each test checks every one of them. On an x86-64 without
    /// AVX2 there is none, and the pass must leave the model to tract.
    fn kernels_here() -> Vec<TapIsa> {
        let here: Vec<TapIsa> = TapIsa::ALL.into_iter().filter(|i| i.runs_here()).collect();
        if here.is_empty() {
            let g = &GEOMETRIES[0];
            let weights = levels(g.m * g.c * 9, 3);
            let mut model = conv_integer::<u8, u8>(g, None, &weights, 128);
            assert_eq!(use_quantized_tap_products(&mut model).unwrap(), 0);
        }
        here
    }

    /// `model` with its convolution on `isa`'s kernel.
    fn replaced(mut model: TypedModel, isa: TapIsa) -> TypedModel {
        assert_eq!(use_quantized_tap_products_on(&mut model, isa).unwrap(), 1);
        model
    }

    fn input_shape(g: &Geometry) -> Vec<usize> {
        if g.w == 0 {
            vec![1, g.c, g.h]
        } else {
            vec![1, g.c, g.h, g.w]
        }
    }

    fn as_i32<T: Copy + Into<i32>>(v: &[T]) -> Vec<i32> {
        v.iter().map(|&b| b.into()).collect()
    }

    #[test]
    fn sums_are_the_definition_s_for_u8_and_i8_inputs_and_weights() {
        for isa in kernels_here() {
            for g in &GEOMETRIES {
                let volume = g.c * g.h * g.w.max(1);
                let shape = input_shape(g);
                let weights = levels(g.m * g.c * g.kernel[0] * g.kernel[1], 3);
                // u8 input with a computed zero point; u8 weights, zero point 128 (centred: i8).
                let x = levels(volume, 11);
                let model = replaced(conv_integer::<u8, u8>(g, None, &weights, 128), isa);
                let got = run(model, Tensor::from_shape(&shape, &x).unwrap(), 77);
                let want = reference(g, &as_i32(&x), 77, &as_i32(&weights), 128);
                assert_eq!(got, want, "{isa:?}");
                assert!(got.iter().any(|&s| s < -5000) && got.iter().any(|&s| s > 5000));
                // i8 input, constant zero point -3; i8 weights, zero point 2, from -126 up (so
                // that every centred weight fits in i8).
                let x: Vec<i8> = levels(volume, 5).iter().map(|&b| b as i8).collect();
                let w: Vec<i8> = weights.iter().map(|&b| (b as i8).max(-126)).collect();
                let model = replaced(conv_integer::<i8, i8>(g, Some(-3), &w, 2), isa);
                let got = run(model, Tensor::from_shape(&shape, &x).unwrap(), -3);
                assert_eq!(
                    got,
                    reference(g, &as_i32(&x), -3, &as_i32(&w), 2),
                    "{isa:?}"
                );
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
        for isa in kernels_here() {
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
            let model = replaced(model, isa);
            let x: Vec<i8> = levels(g.c * g.h * g.w, 5)
                .iter()
                .map(|&b| b as i8)
                .collect();
            let got = run(model, Tensor::from_shape(&shape, &x).unwrap(), -3);
            assert_eq!(got, reference(g, &as_i32(&x), -3, &as_i32(&weights), 2));
        }
    }

    /// u8 weights whose centred values leave i8 (zero points 100, 0 and 255: dynamic u8
    /// weights): VNNI's signed bytes cannot hold them, so they stay with the other paths;
    /// AVX2's 16-bit operands hold every one, the largest products included.
    #[test]
    fn weights_whose_centred_values_leave_i8_run_on_avx2_only() {
        let g = &GEOMETRIES[0];
        let shape = input_shape(g);
        let weights = levels(g.m * g.c * 9, 3);
        let x = levels(g.c * g.h * g.w, 11);
        for isa in kernels_here() {
            for weight_zero in [100, 0, 255] {
                let mut model = conv_integer::<u8, u8>(g, None, &weights, weight_zero);
                let count = use_quantized_tap_products_on(&mut model, isa).unwrap();
                assert_eq!(count, usize::from(isa == TapIsa::Avx2), "{isa:?}");
                if count == 1 {
                    // Input zero point 0 and 255: the extremes of x − x_zero as well.
                    for x_zero in [0, 255] {
                        let got = run(
                            model.clone(),
                            Tensor::from_shape(&shape, &x).unwrap(),
                            x_zero,
                        );
                        let want =
                            reference(g, &as_i32(&x), x_zero, &as_i32(&weights), weight_zero);
                        assert_eq!(got, want, "weights' zero {weight_zero}, input's {x_zero}");
                    }
                }
            }
        }
    }
}
