//! 2-D convolution ([ONNX `Conv`], and the 1×1 ones tract rewrites into an `EinSum`) writing
//! the channels-blocked layout of [`crate::blocked_layout`]: `[N, C/16, H, W, 16]`, 16 channels
//! of a position in one AVX-512 vector (two AVX ones on AVX2 CPUs, see [`kernel`]). Input blocked the same way, or channels first when it
//! has fewer than 16 channels (an image's first layer).
//!
//! With channels in the vector lanes each input value is broadcast once for 32 output channels
//! (2 blocks × 12 positions of sums in 24 registers, bias and epilogue applied before the store),
//! any stride or dilation costs nothing, and each thread writes whole blocks of the output: in
//! channels-first tensors two threads splitting a plane's positions meet once per channel, and
//! SqueezeNet's 1×1 products over 55×55 planes gained nothing from a second thread (a chain of
//! 16 of them 0.95 / 0.84 ms at 1 / 2 threads; blocked 0.67 / 0.37, as onnxruntime's NCHWc).
//!
//! [ONNX `Conv`]: https://onnx.ai/onnx/operators/onnx__Conv.html

use super::gemm_common::{Epilogue, ProductOp};
use super::pool_2d::Axis;
use crate::blocked_layout::BLOCK;
use crate::parallel;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;

/// How a [`BlockedConv`] reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputLayout {
    /// `[N, C/16, H, W, 16]`.
    Blocked,
    /// `[N, C, H, W]` with `C < 16`.
    ChannelsFirst,
}

/// A convolution's geometry, concrete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub batch: usize,
    pub in_channels: usize,
    pub out_channels: usize,
    pub rows: Axis,
    pub cols: Axis,
}

impl Geometry {
    fn in_blocks(&self) -> usize {
        self.in_channels.div_ceil(BLOCK)
    }

    fn out_blocks(&self) -> usize {
        self.out_channels / BLOCK
    }

    /// Input channels per block of the packed weights: 16, or all of a channels-first input's.
    fn block_in(&self) -> usize {
        self.in_channels.min(BLOCK)
    }

    fn taps(&self) -> usize {
        self.rows.kernel * self.cols.kernel
    }
}

/// The convolution: weights packed once per plan, per-channel bias and epilogue.
#[derive(Debug, Clone)]
pub struct BlockedConv {
    pub geometry: Geometry,
    pub input_layout: InputLayout,
    /// Whether the output is blocked: false only while the layout pass fuses epilogues, when
    /// the op still stands for the channels-first convolution it replaces.
    pub blocked_output: bool,
    /// `[O/16][C/16][kh][kw][block_in][16]`, each output block's 16 channels in a vector.
    pub packed: Arc<[f32]>,
    /// One value per output channel.
    pub bias: Arc<[f32]>,
    pub epilogue: Epilogue,
}

// Equality serves tract's merging of identical nodes, which compares ops while it optimizes:
// the weights by identity, not value by value (ResNet-50's plan compared megabytes of them).
impl PartialEq for BlockedConv {
    fn eq(&self, other: &BlockedConv) -> bool {
        self.geometry == other.geometry
            && self.input_layout == other.input_layout
            && self.blocked_output == other.blocked_output
            && Arc::ptr_eq(&self.packed, &other.packed)
            && Arc::ptr_eq(&self.bias, &other.bias)
            && self.epilogue == other.epilogue
    }
}

impl Eq for BlockedConv {}

/// The epilogue as the kernels apply it: `(s + bias) · scale + add`, then `max(·, low)`,
/// `min(·, high)` (compare-and-select: NaN stays NaN).
struct Finish<'a> {
    bias: &'a [f32],
    scale: PerChannel<'a>,
    add: PerChannel<'a>,
    low: f32,
    high: f32,
}

/// An epilogue operand: one value per output channel, or one for all.
#[derive(Clone, Copy)]
enum PerChannel<'a> {
    Values(&'a [f32]),
    All(f32),
}

impl BlockedConv {
    /// The op for weights `kernel` (`[O, C, kh, kw]`, row-major) and `bias` (one value or `O`).
    pub fn new(
        geometry: Geometry,
        input_layout: InputLayout,
        kernel: &[f32],
        bias: &[f32],
    ) -> TractResult<BlockedConv> {
        let g = geometry;
        let taps = g.taps();
        ensure!(
            kernel.len() == g.out_channels * g.in_channels * taps,
            "kernel has {} values for {} × {} × {taps}",
            kernel.len(),
            g.out_channels,
            g.in_channels
        );
        ensure!(
            bias.len() == 1 || bias.len() == g.out_channels,
            "bias has {} values for {} channels",
            bias.len(),
            g.out_channels
        );
        let block_in = g.block_in();
        let mut packed = vec![0f32; g.out_blocks() * g.in_blocks() * taps * block_in * BLOCK];
        // In the packed order, each destination written once (no division per weight: plans
        // of ResNet-50 pack 23 M of them).
        let mut at = 0;
        for ob in 0..g.out_blocks() {
            for cb in 0..g.in_blocks() {
                for tap in 0..taps {
                    for c in cb * BLOCK..cb * BLOCK + block_in {
                        for o in ob * BLOCK..(ob + 1) * BLOCK {
                            packed[at] = kernel[(o * g.in_channels + c) * taps + tap];
                            at += 1;
                        }
                    }
                }
            }
        }
        let bias = (0..g.out_channels)
            .map(|o| bias[if bias.len() == 1 { 0 } else { o }])
            .collect();
        Ok(BlockedConv {
            geometry,
            input_layout,
            blocked_output: false,
            packed: packed.into(),
            bias,
            epilogue: Epilogue::default(),
        })
    }

    pub fn input_shape(&self) -> TVec<usize> {
        let g = &self.geometry;
        match self.input_layout {
            InputLayout::Blocked => {
                tvec![g.batch, g.in_blocks(), g.rows.input, g.cols.input, BLOCK]
            }
            InputLayout::ChannelsFirst => tvec![g.batch, g.in_channels, g.rows.input, g.cols.input],
        }
    }

    pub fn output_shape(&self) -> TVec<usize> {
        let g = &self.geometry;
        if self.blocked_output {
            tvec![g.batch, g.out_blocks(), g.rows.output, g.cols.output, BLOCK]
        } else {
            tvec![g.batch, g.out_channels, g.rows.output, g.cols.output]
        }
    }

    fn finish(&self) -> TractResult<Finish<'_>> {
        use super::gemm_common::Operand;
        let channels = self.geometry.out_channels;
        fn per_channel(
            operand: &Option<Operand>,
            identity: f32,
            channels: usize,
        ) -> TractResult<PerChannel<'_>> {
            Ok(match operand {
                None => PerChannel::All(identity),
                Some(Operand::Scalar(v)) => PerChannel::All(*v),
                Some(Operand::PerRow(values)) if values.len() >= channels => {
                    PerChannel::Values(&values[..channels])
                }
                Some(_) => bail!("a blocked convolution's epilogue varies along positions"),
            })
        }
        ensure!(
            self.bias.len() == channels,
            "bias of {} values",
            self.bias.len()
        );
        Ok(Finish {
            bias: &self.bias,
            scale: per_channel(&self.epilogue.scale, 1.0, channels)?,
            add: per_channel(&self.epilogue.add, 0.0, channels)?,
            low: self.epilogue.low.unwrap_or(f32::NEG_INFINITY),
            high: self.epilogue.high.unwrap_or(f32::INFINITY),
        })
    }

    /// Whether this CPU runs one of the kernels (AVX-512, or AVX2 and FMA).
    pub fn runs_here() -> bool {
        kernel::Isa::best().is_some()
    }

    /// Whether this CPU runs the AVX-512 kernel.
    pub fn runs_avx512() -> bool {
        kernel::Isa::best() == Some(kernel::Isa::Avx512)
    }

    /// `output` (blocked) = the convolution of `input`, bias and epilogue applied.
    pub fn compute(&self, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        let Some(isa) = kernel::Isa::best() else {
            bail!("blocked convolutions run on CPUs with AVX-512 or AVX2 and FMA only")
        };
        self.compute_on(isa, input, output)
    }

    /// [`Self::compute`] on the kernel for `isa`, which this CPU runs.
    fn compute_on(&self, isa: kernel::Isa, input: &[f32], output: &mut [f32]) -> TractResult<()> {
        ensure!(isa.runs_here(), "this CPU does not run {isa:?}");
        ensure!(
            input.len() == self.input_shape().iter().product::<usize>(),
            "blocked convolution input has {} values",
            input.len()
        );
        ensure!(
            self.blocked_output && output.len() == self.output_shape().iter().product::<usize>(),
            "blocked convolution output has {} values",
            output.len()
        );
        let finish = self.finish()?;
        let (r, c) = (self.geometry.rows, self.geometry.cols);
        let padded = |a: &Axis| a.pad_before > 0 || a.reach() > a.input;
        if !padded(&r) && !padded(&c) {
            return self.walk(isa, input, (r.input, c.input), output, &finish);
        }
        let plane = (r.padded_width(), c.padded_width());
        let len = self.planes() * plane.0 * plane.1 * self.lanes();
        PADDED.with_borrow_mut(|buffer| {
            if buffer.len() < len {
                buffer.resize(len, 0.0);
            }
            let buffer = &mut buffer[..len];
            self.pad_into(input, plane, buffer)?;
            self.walk(isa, buffer, plane, output, &finish)
        })
    }

    /// Planes of the input: `N · C/16` blocked, `N · C` channels first.
    fn planes(&self) -> usize {
        let g = &self.geometry;
        match self.input_layout {
            InputLayout::Blocked => g.batch * g.in_blocks(),
            InputLayout::ChannelsFirst => g.batch * g.in_channels,
        }
    }

    /// Values of a position in a plane: 16 blocked, 1 channels first.
    fn lanes(&self) -> usize {
        match self.input_layout {
            InputLayout::Blocked => BLOCK,
            InputLayout::ChannelsFirst => 1,
        }
    }

    /// Each input plane copied into the middle of a zeroed `height × width` one, so that every
    /// tap of every output reads inside it.
    fn pad_into(
        &self,
        input: &[f32],
        (height, width): (usize, usize),
        padded: &mut [f32],
    ) -> TractResult<()> {
        let (r, c) = (self.geometry.rows, self.geometry.cols);
        let lanes = self.lanes();
        let (src_row, dst_row) = (c.input * lanes, width * lanes);
        let (left, src_plane) = (c.pad_before * lanes, r.input * src_row);
        let work = padded.len();
        parallel::par_chunks_mut(padded, height * dst_row, work, |first, chunk| {
            for (p, dst) in chunk.chunks_exact_mut(height * dst_row).enumerate() {
                let src = &input[(first + p) * src_plane..][..src_plane];
                for (y, row) in dst.chunks_exact_mut(dst_row).enumerate() {
                    match y.checked_sub(r.pad_before).filter(|&iy| iy < r.input) {
                        Some(iy) => {
                            row[..left].fill(0.0);
                            row[left..left + src_row]
                                .copy_from_slice(&src[iy * src_row..][..src_row]);
                            row[left + src_row..].fill(0.0);
                        }
                        None => row.fill(0.0),
                    }
                }
            }
            Ok(())
        })
    }

    /// The convolution over `input` planes of `height × width` that every tap reads inside
    /// (the padded copy, or the input where it needs no padding).
    fn walk(
        &self,
        isa: kernel::Isa,
        input: &[f32],
        (height, width): (usize, usize),
        output: &mut [f32],
        finish: &Finish,
    ) -> TractResult<()> {
        let g = self.geometry;
        let (r, c) = (g.rows, g.cols);
        let lanes = self.lanes();
        let plane = height * width * lanes;
        let image_len = self.planes() / g.batch * plane;
        ensure!(
            input.len() == image_len * g.batch,
            "padded input of {} values",
            input.len()
        );
        let walk = kernel::Walk {
            block_in: g.block_in(),
            kernel: (r.kernel, c.kernel),
            dilation: (r.dilation, c.dilation),
            width,
            // Between channels of a block, between positions, between blocks.
            strides: match self.input_layout {
                InputLayout::Blocked => (1, BLOCK, plane),
                InputLayout::ChannelsFirst => (height * width, 1, plane * BLOCK),
            },
            out_width: c.output,
            block_len: g.in_blocks() * g.taps() * g.block_in() * BLOCK,
        };
        // Unit strides: the outputs of all rows in one run over the padded width, whose last
        // `width - out_width` columns are computed and not stored.
        let flat = r.stride == 1 && c.stride == 1;
        let positions = if flat {
            (r.output - 1) * width + c.output
        } else {
            r.output * c.output
        };
        // The depth in chunks of input blocks whose weights (of a pair of output blocks) stay in
        // L1 while a band's positions run through them, the sums kept between chunks in the
        // task's scratch: over a whole deep depth each tile streamed its weights from L2 (a
        // pair's for ResNet-50's 3×3 convolutions of 512 channels: 590 KB per 12 positions).
        let weights_per_block = 2 * g.taps() * g.block_in() * BLOCK * size_of::<f32>();
        let chunk = (WEIGHTS_IN_L1 / weights_per_block).max(1);
        let chunks = g.in_blocks().div_ceil(chunk);
        // Tasks: image × pair of output blocks × band of positions (whole output rows when
        // strided), so that both threads get work on the small planes too; a band's sums
        // between chunks take 120 × 2 vectors.
        let band_positions = if chunks > 1 { 120 } else { 240 };
        let band = if flat {
            band_positions
        } else {
            (band_positions / c.output).max(1) * c.output
        };
        let bands = positions.div_ceil(band);
        let pairs = g.out_blocks().div_ceil(2);
        let out_plane = r.output * c.output * BLOCK;
        let out = super::gemm_common::SharedOutput::new(output);
        let scratch = if chunks > 1 { band * 2 * BLOCK } else { 0 };
        parallel::for_each(g.batch * pairs * bands, scratch, |sums, task| {
            let (image, rest) = (task / (pairs * bands), task % (pairs * bands));
            let (pair, band_index) = (rest / bands, rest % bands);
            let first = band_index * band;
            let count = band.min(positions - first);
            let first_block = pair * 2;
            let blocks = (g.out_blocks() - first_block).min(2);
            let block_out = |block: usize| (image * g.out_blocks() + block) * out_plane;
            for k in 0..chunks {
                let depth = kernel::Depth {
                    blocks: k * chunk..((k + 1) * chunk).min(g.in_blocks()),
                    first: k == 0,
                    last: k + 1 == chunks,
                };
                // SAFETY: this task alone writes its positions of blocks
                // `first_block..+blocks` (inside `output`: its length is checked), reads
                // inside `input`, and keeps its sums in its own scratch, `band` positions of
                // 2 blocks.
                unsafe {
                    let outs = [
                        out.at(block_out(first_block)),
                        out.at(block_out(first_block + blocks - 1)),
                    ];
                    let pass = kernel::Kernel {
                        walk: &walk,
                        weights: self.packed.as_ptr().add(first_block * walk.block_len),
                        outs,
                        finish,
                        o0: first_block * BLOCK,
                        depth,
                        sums: sums.as_mut_ptr(),
                    };
                    let x = input.as_ptr().add(image * image_len);
                    if flat {
                        let start = (first / width, first % width);
                        let step = walk.strides.1;
                        pass.run(isa, blocks, x.add(first * step), step, count, start, 0);
                    } else {
                        let rows = first / c.output..(first + count) / c.output;
                        for (i, oy) in rows.enumerate() {
                            let x_row = x.add(oy * r.stride * width * walk.strides.1);
                            let step = c.stride * walk.strides.1;
                            pass.run(isa, blocks, x_row, step, c.output, (oy, 0), i * c.output);
                        }
                    }
                }
            }
            Ok(())
        })
    }
}

/// Bytes of a pair of output blocks' weights a depth chunk holds at most.
const WEIGHTS_IN_L1: usize = 16 << 10;

thread_local! {
    /// The calling thread's zero-padded copy of a convolution's input, kept between runs.
    static PADDED: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl ProductOp for BlockedConv {
    fn epilogue(&self) -> &Epilogue {
        &self.epilogue
    }

    fn with_epilogue(&self, epilogue: Epilogue) -> BlockedConv {
        BlockedConv {
            epilogue,
            ..self.clone()
        }
    }

    fn operand_axes(&self) -> (Option<usize>, Option<usize>) {
        // Fused only before the layout changes, on the channels-first output.
        (Some(1), None)
    }
}

impl Op for BlockedConv {
    fn name(&self) -> StaticName {
        "BlockedConv".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "{:?} input, {:?}",
            self.input_layout, self.epilogue
        )])
    }

    op_as_typed_op!();
}

impl EvalOp for BlockedConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(
            self.blocked_output,
            "a blocked convolution before its layout"
        );
        super::eval_f32_starting(
            super::OutputStart::Unset,
            inputs,
            Some(&self.output_shape()),
            |input, _, output| self.compute(input, output),
        )
    }
}

impl TypedOp for BlockedConv {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(tvec!(f32::fact(&*self.output_shape())))
    }

    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let g = &self.geometry;
        let points = g.batch * g.out_channels * g.rows.output * g.cols.output;
        Ok(tvec!((
            Cost::FMA(f32::datum_type()),
            (points * g.in_channels * g.taps()).into()
        )))
    }
}

/// The register-blocked kernels: a tile of output blocks × positions whose sums stay in
/// registers over the whole depth, each input value broadcast once per position for every block
/// of the tile. AVX-512: a block is one vector, tiles of 2 blocks × 12 positions (or 1 × 14) in
/// 24 of its 32 registers. AVX2 with FMA (Zen 3, most desktop and laptop x86): a block is two
/// vectors, tiles of 1 block × 6 positions in 12 of its 16 registers (two blocks would leave 2
/// positions, too few sums to hide the FMA's latency), a pair of blocks one block after the other.
mod kernel {
    use super::{BLOCK, Finish, PerChannel};
    use std::arch::x86_64::*;

    /// The instruction sets the kernel is written for.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Isa {
        Avx512,
        Avx2,
    }

    impl Isa {
        /// The widest this CPU runs, if any.
        pub fn best() -> Option<Isa> {
            [Isa::Avx512, Isa::Avx2]
                .into_iter()
                .find(|isa| isa.runs_here())
        }

        pub fn runs_here(self) -> bool {
            std::arch::is_x86_feature_detected!("fma")
                && match self {
                    Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
                    Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
                }
        }
    }

    /// One block's 16 channels in registers, and what the kernel does with them. Every function
    /// is inlined into a `run_*` compiled for its instruction set.
    trait Channels: Copy {
        /// Blocks a tile holds at most.
        const TILE_BLOCKS: usize;
        unsafe fn zero() -> Self;
        unsafe fn load(at: *const f32) -> Self;
        unsafe fn splat(value: f32) -> Self;
        /// `a · b + c`.
        unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self;
        unsafe fn add(a: Self, b: Self) -> Self;
        unsafe fn mul(a: Self, b: Self) -> Self;
        /// `min(high, max(low, x))` with the compare-and-select of `max_ps`/`min_ps`: a NaN `x`
        /// is returned as it is by `max(low, x)`.
        unsafe fn clamp(x: Self, low: Self, high: Self) -> Self;
        unsafe fn store(self, at: *mut f32);
    }

    impl Channels for __m512 {
        const TILE_BLOCKS: usize = 2;
        #[inline(always)]
        unsafe fn zero() -> Self {
            unsafe { _mm512_setzero_ps() }
        }
        #[inline(always)]
        unsafe fn load(at: *const f32) -> Self {
            unsafe { _mm512_loadu_ps(at) }
        }
        #[inline(always)]
        unsafe fn splat(value: f32) -> Self {
            unsafe { _mm512_set1_ps(value) }
        }
        #[inline(always)]
        unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self {
            unsafe { _mm512_fmadd_ps(a, b, c) }
        }
        #[inline(always)]
        unsafe fn add(a: Self, b: Self) -> Self {
            unsafe { _mm512_add_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn mul(a: Self, b: Self) -> Self {
            unsafe { _mm512_mul_ps(a, b) }
        }
        #[inline(always)]
        unsafe fn clamp(x: Self, low: Self, high: Self) -> Self {
            unsafe { _mm512_min_ps(high, _mm512_max_ps(low, x)) }
        }
        #[inline(always)]
        unsafe fn store(self, at: *mut f32) {
            unsafe { _mm512_storeu_ps(at, self) }
        }
    }

    /// A block as two AVX vectors, channels 0-7 and 8-15.
    #[derive(Clone, Copy)]
    struct Pair(__m256, __m256);

    impl Channels for Pair {
        const TILE_BLOCKS: usize = 1;
        #[inline(always)]
        unsafe fn zero() -> Self {
            unsafe { Pair(_mm256_setzero_ps(), _mm256_setzero_ps()) }
        }
        #[inline(always)]
        unsafe fn load(at: *const f32) -> Self {
            unsafe { Pair(_mm256_loadu_ps(at), _mm256_loadu_ps(at.add(8))) }
        }
        #[inline(always)]
        unsafe fn splat(value: f32) -> Self {
            let v = unsafe { _mm256_set1_ps(value) };
            Pair(v, v)
        }
        #[inline(always)]
        unsafe fn fmadd(a: Self, b: Self, c: Self) -> Self {
            unsafe {
                Pair(
                    _mm256_fmadd_ps(a.0, b.0, c.0),
                    _mm256_fmadd_ps(a.1, b.1, c.1),
                )
            }
        }
        #[inline(always)]
        unsafe fn add(a: Self, b: Self) -> Self {
            unsafe { Pair(_mm256_add_ps(a.0, b.0), _mm256_add_ps(a.1, b.1)) }
        }
        #[inline(always)]
        unsafe fn mul(a: Self, b: Self) -> Self {
            unsafe { Pair(_mm256_mul_ps(a.0, b.0), _mm256_mul_ps(a.1, b.1)) }
        }
        #[inline(always)]
        unsafe fn clamp(x: Self, low: Self, high: Self) -> Self {
            unsafe {
                Pair(
                    _mm256_min_ps(high.0, _mm256_max_ps(low.0, x.0)),
                    _mm256_min_ps(high.1, _mm256_max_ps(low.1, x.1)),
                )
            }
        }
        #[inline(always)]
        unsafe fn store(self, at: *mut f32) {
            unsafe {
                _mm256_storeu_ps(at, self.0);
                _mm256_storeu_ps(at.add(8), self.1);
            }
        }
    }

    /// How a convolution reads its (padded) input planes.
    pub struct Walk {
        pub block_in: usize,
        pub kernel: (usize, usize),
        pub dilation: (usize, usize),
        /// Positions of an input row.
        pub width: usize,
        /// Values between channels of a block, between positions, between blocks.
        pub strides: (usize, usize, usize),
        pub out_width: usize,
        /// Packed weights of one output block.
        pub block_len: usize,
    }

    /// Where the `t`-th output of a run goes: row and column, columns at or past `out_width`
    /// (the padding of a flat run) not stored.
    #[derive(Clone, Copy)]
    struct Cursor {
        oy: usize,
        ox: usize,
        /// The position's sums in the scratch.
        sum: usize,
    }

    impl Cursor {
        #[inline(always)]
        fn next(&mut self, width: usize) {
            self.sum += 1;
            self.ox += 1;
            if self.ox == width {
                self.ox = 0;
                self.oy += 1;
            }
        }
    }

    /// Which input blocks a pass over a run sums, and whether it starts the sums (else they are
    /// read from the scratch) and finishes them (else they are kept there).
    pub struct Depth {
        pub blocks: std::ops::Range<usize>,
        pub first: bool,
        pub last: bool,
    }

    /// A pass of one or two output blocks over runs of positions.
    pub struct Kernel<'a> {
        pub walk: &'a Walk,
        /// The first block's weights; the second's follow.
        pub weights: *const f32,
        /// Each block's output plane.
        pub outs: [*mut f32; 2],
        pub finish: &'a Finish<'a>,
        /// The first block's first channel.
        pub o0: usize,
        pub depth: Depth,
        /// The sums between depth chunks: 2 blocks per position of the task's band.
        pub sums: *mut f32,
    }

    impl Kernel<'_> {
        /// `count` outputs of `blocks` (1 or 2) output blocks, the `t`-th reading its window
        /// from `x + t · step`, written at row and column `start` on (moving along rows of
        /// `walk.width`), its sums between chunks at position `at_sum + t` of the scratch.
        ///
        /// SAFETY: the CPU runs `isa`; every window read lies inside the input; the outputs lie
        /// inside the output and the sums inside the scratch, and no other thread writes them.
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn run(
            &self,
            isa: Isa,
            blocks: usize,
            x: *const f32,
            step: usize,
            count: usize,
            start: (usize, usize),
            at_sum: usize,
        ) {
            let at = Cursor {
                oy: start.0,
                ox: start.1,
                sum: at_sum,
            };
            // SAFETY: the caller's conditions.
            unsafe {
                match isa {
                    Isa::Avx512 => self.run_avx512(blocks, x, step, count, at),
                    Isa::Avx2 => self.run_avx2(blocks, x, step, count, at),
                }
            }
        }

        #[target_feature(enable = "avx512f,fma")]
        unsafe fn run_avx512(
            &self,
            blocks: usize,
            x: *const f32,
            step: usize,
            count: usize,
            at: Cursor,
        ) {
            // SAFETY: the caller's conditions.
            unsafe { self.run_blocks::<__m512>(blocks, x, step, count, at) }
        }

        #[target_feature(enable = "avx2,fma")]
        unsafe fn run_avx2(
            &self,
            blocks: usize,
            x: *const f32,
            step: usize,
            count: usize,
            at: Cursor,
        ) {
            // SAFETY: the caller's conditions.
            unsafe { self.run_blocks::<Pair>(blocks, x, step, count, at) }
        }

        /// The blocks a tile of `V` holds at a time: both, or one then the other.
        #[inline(always)]
        unsafe fn run_blocks<V: Channels>(
            &self,
            blocks: usize,
            x: *const f32,
            step: usize,
            count: usize,
            at: Cursor,
        ) {
            // SAFETY: the caller's conditions.
            unsafe {
                if blocks == 2 && V::TILE_BLOCKS == 2 {
                    return self.run_steps::<V, 2>(0, x, step, count, at);
                }
                for first in 0..blocks {
                    self.run_steps::<V, 1>(first, x, step, count, at);
                }
            }
        }

        /// The common steps between positions as constants.
        #[inline(always)]
        unsafe fn run_steps<V: Channels, const B: usize>(
            &self,
            first: usize,
            x: *const f32,
            step: usize,
            count: usize,
            mut at: Cursor,
        ) {
            let at = &mut at;
            // Steps 16 and 32: blocked inputs, stride 1 and 2. Steps 1 and 2 (channels-first
            // first layers) as constants only where the tiles hold every block of the pass
            // (AVX-512 pairs, AVX2 blocks): an AVX-512 pass of one block is the rare odd last
            // one, not worth two more copies of its code.
            // SAFETY: the caller's conditions.
            unsafe {
                match step {
                    16 => self.tiles::<V, B, 16>(first, x, count, at),
                    32 => self.tiles::<V, B, 32>(first, x, count, at),
                    1 if B == 2 || V::TILE_BLOCKS == 1 => {
                        self.tiles::<V, B, 1>(first, x, count, at)
                    }
                    2 if B == 2 || V::TILE_BLOCKS == 1 => {
                        self.tiles::<V, B, 2>(first, x, count, at)
                    }
                    _ => self.tiles_any::<V, B>(first, x, step, count, at),
                }
            }
        }

        /// The run in tiles of 12, 6 and 3 positions (2 blocks of `__m512`; 14, 7 and 4 for
        /// one; 6 and 3 for a [`Pair`]), then one by one, with the step between positions a
        /// constant.
        #[inline(always)]
        unsafe fn tiles<V: Channels, const B: usize, const STEP: usize>(
            &self,
            first: usize,
            x: *const f32,
            count: usize,
            at: &mut Cursor,
        ) {
            let i = &mut 0;
            // SAFETY: the caller's conditions.
            unsafe {
                if V::TILE_BLOCKS == 1 {
                    self.tiles_of::<V, B, 6>(first, x, STEP, count, i, at);
                    self.tiles_of::<V, B, 3>(first, x, STEP, count, i, at);
                } else if B == 2 {
                    self.tiles_of::<V, B, 12>(first, x, STEP, count, i, at);
                    self.tiles_of::<V, B, 6>(first, x, STEP, count, i, at);
                    self.tiles_of::<V, B, 3>(first, x, STEP, count, i, at);
                } else {
                    self.tiles_of::<V, B, 14>(first, x, STEP, count, i, at);
                    self.tiles_of::<V, B, 7>(first, x, STEP, count, i, at);
                    self.tiles_of::<V, B, 4>(first, x, STEP, count, i, at);
                }
                self.tiles_of::<V, B, 1>(first, x, STEP, count, i, at);
            }
        }

        /// [`Self::tiles`] with a step known only at run time.
        #[inline(always)]
        unsafe fn tiles_any<V: Channels, const B: usize>(
            &self,
            first: usize,
            x: *const f32,
            step: usize,
            count: usize,
            at: &mut Cursor,
        ) {
            let i = &mut 0;
            // SAFETY: the caller's conditions.
            unsafe {
                self.tiles_of::<V, B, 6>(first, x, step, count, i, at);
                self.tiles_of::<V, B, 1>(first, x, step, count, i, at);
            }
        }

        /// Tiles of `T` positions from position `*i` on while they fit in `count` (positions one
        /// by one for `T` = 1: [`Self::single`]).
        #[inline(always)]
        unsafe fn tiles_of<V: Channels, const B: usize, const T: usize>(
            &self,
            first: usize,
            x: *const f32,
            step: usize,
            count: usize,
            i: &mut usize,
            at: &mut Cursor,
        ) {
            while *i + T <= count {
                // SAFETY: the caller's conditions.
                unsafe {
                    let x = x.add(*i * step);
                    if T == 1 {
                        self.single::<V, B>(first, x, at)
                    } else {
                        self.tile::<V, B, T>(first, x, step, at)
                    }
                }
                *i += T;
            }
        }

        /// Offsets of tap `(icb, ky, kx)`: into the input from a window's start, into one
        /// block's weights.
        #[inline(always)]
        fn tap(&self, icb: usize, ky: usize, kx: usize) -> (usize, usize) {
            let w = self.walk;
            let (_, pos_stride, block_stride) = w.strides;
            let input =
                icb * block_stride + (ky * w.dilation.0 * w.width + kx * w.dilation.1) * pos_stride;
            let tap = (icb * w.kernel.0 + ky) * w.kernel.1 + kx;
            (input, tap * w.block_in * BLOCK)
        }

        /// `T` positions of blocks `first..first + B`, windows from `x`, `step` apart.
        // Indexes, not iterators, over the register block: it must unroll into registers.
        #[allow(clippy::needless_range_loop)]
        #[inline(always)]
        unsafe fn tile<V: Channels, const B: usize, const T: usize>(
            &self,
            first: usize,
            x: *const f32,
            step: usize,
            at: &mut Cursor,
        ) {
            let w = self.walk;
            let ic_stride = w.strides.0;
            // SAFETY: the caller's conditions.
            unsafe {
                let weights = self.weights.add(first * w.block_len);
                let mut acc = [[V::zero(); T]; B];
                for icb in self.depth.blocks.clone() {
                    for ky in 0..w.kernel.0 {
                        for kx in 0..w.kernel.1 {
                            let (input, tap_weights) = self.tap(icb, ky, kx);
                            let (x, wp) = (x.add(input), weights.add(tap_weights));
                            for c in 0..w.block_in {
                                let mut wv = [V::zero(); B];
                                for (b, wv) in wv.iter_mut().enumerate() {
                                    *wv = V::load(wp.add(b * w.block_len + c * BLOCK));
                                }
                                let xc = x.add(c * ic_stride);
                                for t in 0..T {
                                    let v = V::splat(*xc.add(t * step));
                                    for b in 0..B {
                                        acc[b][t] = V::fmadd(v, wv[b], acc[b][t]);
                                    }
                                }
                            }
                        }
                    }
                }
                for t in 0..T {
                    self.store::<V, B>(first, std::array::from_fn(|b| acc[b][t]), at);
                }
            }
        }

        /// One position of blocks `first..first + B`, its sums split over 4 registers per block
        /// (by input channel) so that the additions do not wait on one another.
        // Indexes, not iterators, over the register block: it must unroll into registers.
        #[allow(clippy::needless_range_loop)]
        #[inline(always)]
        unsafe fn single<V: Channels, const B: usize>(
            &self,
            first: usize,
            x: *const f32,
            at: &mut Cursor,
        ) {
            const SPLIT: usize = 4;
            let w = self.walk;
            let ic_stride = w.strides.0;
            // SAFETY: the caller's conditions.
            unsafe {
                let weights = self.weights.add(first * w.block_len);
                let mut acc = [[V::zero(); SPLIT]; B];
                for icb in self.depth.blocks.clone() {
                    for ky in 0..w.kernel.0 {
                        for kx in 0..w.kernel.1 {
                            let (input, tap_weights) = self.tap(icb, ky, kx);
                            let (x, wp) = (x.add(input), weights.add(tap_weights));
                            let mut c = 0;
                            while c + SPLIT <= w.block_in {
                                for k in 0..SPLIT {
                                    let v = V::splat(*x.add((c + k) * ic_stride));
                                    for b in 0..B {
                                        let wv = V::load(wp.add(b * w.block_len + (c + k) * BLOCK));
                                        acc[b][k] = V::fmadd(v, wv, acc[b][k]);
                                    }
                                }
                                c += SPLIT;
                            }
                            while c < w.block_in {
                                let v = V::splat(*x.add(c * ic_stride));
                                for b in 0..B {
                                    let wv = V::load(wp.add(b * w.block_len + c * BLOCK));
                                    acc[b][0] = V::fmadd(v, wv, acc[b][0]);
                                }
                                c += 1;
                            }
                        }
                    }
                }
                let sums = std::array::from_fn(|b| {
                    let [a0, a1, a2, a3] = acc[b];
                    V::add(V::add(a0, a1), V::add(a2, a3))
                });
                self.store::<V, B>(first, sums, at);
            }
        }

        /// One position's sums of blocks `first..first + B` finished and stored at `at` (unless
        /// it is a padding column of a flat run); `at` moves on.
        #[inline(always)]
        unsafe fn store<V: Channels, const B: usize>(
            &self,
            first: usize,
            mut sums: [V; B],
            at: &mut Cursor,
        ) {
            let w = self.walk;
            if !self.depth.first {
                // The earlier chunks' sums, added here rather than loaded into the tile's
                // registers before its products (that kept them on the stack).
                for (b, sum) in sums.iter_mut().enumerate() {
                    // SAFETY: the caller's conditions.
                    *sum = unsafe { V::add(*sum, V::load(self.sum_at(at.sum, first + b))) };
                }
            }
            if !self.depth.last {
                for (b, &sum) in sums.iter().enumerate() {
                    // SAFETY: the caller's conditions.
                    unsafe { sum.store(self.sum_at(at.sum, first + b)) };
                }
            } else if at.ox < w.out_width {
                let position = (at.oy * w.out_width + at.ox) * BLOCK;
                for (b, &sum) in sums.iter().enumerate() {
                    let block = first + b;
                    // SAFETY: the caller's conditions.
                    unsafe {
                        let x = self.finished(sum, self.o0 + block * BLOCK);
                        x.store(self.outs[block].add(position));
                    }
                }
            }
            at.next(w.width);
        }

        /// Where block `b`'s sums of scratch position `position` are kept.
        #[inline(always)]
        fn sum_at(&self, position: usize, b: usize) -> *mut f32 {
            self.sums.wrapping_add((position * 2 + b) * BLOCK)
        }

        /// `sum` (channels `o0..o0 + 16`) with the bias and epilogue applied.
        #[inline(always)]
        unsafe fn finished<V: Channels>(&self, sum: V, o0: usize) -> V {
            let f = self.finish;
            // SAFETY: the CPU runs `V` (the caller's condition); one value per output channel,
            // `o0 + 16` of them at least.
            unsafe {
                let operand = |values: PerChannel| match values {
                    PerChannel::Values(v) => V::load(v.as_ptr().add(o0)),
                    PerChannel::All(v) => V::splat(v),
                };
                let mut x = V::add(sum, V::load(f.bias.as_ptr().add(o0)));
                if !matches!(f.scale, PerChannel::All(1.0)) {
                    x = V::mul(x, operand(f.scale));
                }
                if !matches!(f.add, PerChannel::All(0.0)) {
                    x = V::add(x, operand(f.add));
                }
                V::clamp(x, V::splat(f.low), V::splat(f.high))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm_common::Operand;
    use super::*;
    use crate::blocked_layout::{blocked_values, test_values as values};
    use tract_linalg::multithread::{Executor, multithread_tract_scope};

    /// (input channels, output channels, height, width, kernel, stride, padding, dilation)
    type Case = (usize, usize, usize, usize, usize, usize, usize, usize);

    /// Channels first and blocked inputs, unit and other strides (2: a constant step; 3: one
    /// known at run time), padding, dilation, an odd number of output blocks.
    const CASES: [Case; 7] = [
        (3, 32, 11, 13, 3, 2, 1, 1),
        (5, 16, 9, 9, 7, 1, 3, 1),
        (16, 48, 9, 7, 3, 1, 1, 1),
        (32, 16, 6, 5, 1, 1, 0, 1),
        (16, 32, 12, 12, 3, 2, 2, 2),
        (16, 32, 14, 17, 3, 3, 1, 1),
        (48, 32, 13, 13, 3, 1, 1, 1),
    ];

    fn geometry((c, o, h, w, k, stride, pad, dilation): Case) -> Geometry {
        let axis = |input: usize| Axis {
            input,
            output: (input + 2 * pad - dilation * (k - 1) - 1) / stride + 1,
            kernel: k,
            stride,
            dilation,
            pad_before: pad,
            padded_end: None,
        };
        Geometry {
            batch: 2,
            in_channels: c,
            out_channels: o,
            rows: axis(h),
            cols: axis(w),
        }
    }

    /// The definition in f64, output `[N, O, OH, OW]` as `[N, O/16, OH, OW, 16]`.
    fn reference(g: &Geometry, x: &[f32], k: &[f32], bias: &[f32], e: &Epilogue) -> Vec<f32> {
        let (r, c) = (g.rows, g.cols);
        let mut out = vec![];
        for n in 0..g.batch {
            for o in 0..g.out_channels {
                for oy in 0..r.output {
                    for ox in 0..c.output {
                        let mut acc = bias[o] as f64;
                        for i in 0..g.in_channels {
                            for ky in 0..r.kernel {
                                for kx in 0..c.kernel {
                                    let iy = (oy * r.stride + ky * r.dilation) as isize
                                        - r.pad_before as isize;
                                    let ix = (ox * c.stride + kx * c.dilation) as isize
                                        - c.pad_before as isize;
                                    if iy < 0
                                        || ix < 0
                                        || iy >= r.input as isize
                                        || ix >= c.input as isize
                                    {
                                        continue;
                                    }
                                    let xv = x[((n * g.in_channels + i) * r.input + iy as usize)
                                        * c.input
                                        + ix as usize];
                                    let kv = k
                                        [((o * g.in_channels + i) * r.kernel + ky) * c.kernel + kx];
                                    acc += xv as f64 * kv as f64;
                                }
                            }
                        }
                        let scale = match &e.scale {
                            Some(Operand::PerRow(v)) => v[o],
                            Some(Operand::Scalar(v)) => *v,
                            _ => 1.0,
                        };
                        let add = match &e.add {
                            Some(Operand::PerRow(v)) => v[o],
                            Some(Operand::Scalar(v)) => *v,
                            _ => 0.0,
                        };
                        let v = (acc * scale as f64 + add as f64) as f32;
                        out.push(
                            v.max(e.low.unwrap_or(f32::MIN))
                                .min(e.high.unwrap_or(f32::MAX)),
                        );
                    }
                }
            }
        }
        blocked_values(&out, &[g.batch, g.out_channels, r.output, c.output])
    }

    #[test]
    fn matches_the_definition_over_layouts_strides_padding_and_epilogues() {
        for (index, case) in CASES.into_iter().enumerate() {
            let g = geometry(case);
            let plane = g.rows.input * g.cols.input;
            let x = values(g.batch * g.in_channels * plane, index);
            let k = values(g.out_channels * g.in_channels * g.taps(), index + 50);
            let bias = values(g.out_channels, index + 99);
            let layout = if g.in_channels < BLOCK {
                InputLayout::ChannelsFirst
            } else {
                InputLayout::Blocked
            };
            let mut op = BlockedConv::new(g, layout, &k, &bias).unwrap();
            op.blocked_output = true;
            if index % 2 == 1 {
                op.epilogue = Epilogue {
                    scale: Some(Operand::PerRow(values(g.out_channels, 7).into())),
                    add: Some(Operand::Scalar(0.25)),
                    low: Some(0.0),
                    high: Some(0.75),
                };
            }
            let input = match layout {
                InputLayout::Blocked => {
                    blocked_values(&x, &[g.batch, g.in_channels, g.rows.input, g.cols.input])
                }
                InputLayout::ChannelsFirst => x.clone(),
            };
            let want = reference(&g, &x, &k, &bias, &op.epilogue);
            for (isa, threads) in kernels_here()
                .into_iter()
                .flat_map(|isa| [(isa, 1), (isa, 2)])
            {
                let mut got = vec![f32::NAN; want.len()];
                multithread_tract_scope(Executor::multithread(threads), || {
                    op.compute_on(isa, &input, &mut got).unwrap()
                });
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    // Sums of up to 432 products of values in [-1, 1], in another order.
                    assert!(
                        (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                        "case {case:?}, {isa:?}, {threads} thread(s), value {i}: {g} against {w}"
                    );
                }
            }
        }
    }

    /// The kernels this CPU runs, each checked; on an x86-64 CPU without AVX2 and FMA (none
    /// sold since 2015) the op's refusal instead.
    fn kernels_here() -> Vec<kernel::Isa> {
        let isas: Vec<_> = [kernel::Isa::Avx512, kernel::Isa::Avx2]
            .into_iter()
            .filter(|isa| isa.runs_here())
            .collect();
        eprintln!("blocked convolution kernels checked on this CPU: {isas:?}");
        assert_eq!(isas.first().copied(), kernel::Isa::best());
        assert_eq!(crate::blocked_layout::runs_here(), !isas.is_empty());
        isas
    }

    #[test]
    fn refuses_on_cpus_without_its_instructions() {
        let g = geometry(CASES[2]);
        let k = values(g.out_channels * g.in_channels * g.taps(), 1);
        let mut op = BlockedConv::new(g, InputLayout::Blocked, &k, &[0.5]).unwrap();
        op.blocked_output = true;
        let input = vec![0.0; op.input_shape().iter().product::<usize>()];
        let mut output = vec![0.0; op.output_shape().iter().product::<usize>()];
        match kernel::Isa::best() {
            Some(_) => op.compute(&input, &mut output).unwrap(),
            None => {
                let refused = op.compute(&input, &mut output).unwrap_err().to_string();
                assert!(refused.contains("AVX2 and FMA only"), "{refused}");
            }
        }
        for isa in [kernel::Isa::Avx512, kernel::Isa::Avx2] {
            let result = op.compute_on(isa, &input, &mut output);
            assert_eq!(result.is_ok(), isa.runs_here(), "{isa:?}: {result:?}");
        }
    }

    #[test]
    fn refuses_inputs_and_outputs_of_other_lengths() {
        let g = geometry(CASES[2]);
        let k = values(g.out_channels * g.in_channels * g.taps(), 1);
        let mut op = BlockedConv::new(g, InputLayout::Blocked, &k, &[0.5]).unwrap();
        op.blocked_output = true;
        let len: usize = op.output_shape().iter().product();
        let input = vec![0.0; op.input_shape().iter().product::<usize>()];
        assert!(op.compute(&input[1..], &mut vec![0.0; len]).is_err());
        assert!(op.compute(&input, &mut vec![0.0; len - 1]).is_err());
        assert!(BlockedConv::new(g, InputLayout::Blocked, &k[1..], &[0.5]).is_err());
    }
}
