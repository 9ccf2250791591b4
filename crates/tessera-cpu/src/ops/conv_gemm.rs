//! 1-D and 2-D convolution ([ONNX `Conv`]) for f32 as matrix products over tiles of output
//! positions, on the `gemm` crate's kernels, replacing tract's `Conv` in cpu plans (depthwise
//! convolutions have [their own op](super::depthwise_conv)). Channels first; channels last too
//! where tract folded a transpose into the convolution (magika) and the stride is 1.
//!
//! tract's matrix-product kernels ran ResNet-50's convolution shapes at 20-40 GFLOP/s on one
//! AVX-512 core where onnxruntime's reach ~100 (worst where the output plane is large: 3136 or
//! 12544 positions); `gemm` (AVX-512 at run time with its `x86-v4` feature, NEON on arm64) reaches
//! ~100 on the same shapes. For each group and tile of output positions the input windows are
//! gathered into a `K × tile` matrix (im2col, skipped for 1×1 convolutions that read the input
//! as it is), multiplied by the kernel's `M × K` rows into the output, then bias and a fused
//! clamp (ReLU, ReLU6) are applied while the tile is still in cache. Tiles, not one whole
//! im2col matrix: VGG's early layers would need ~115 MB for theirs. Unit-stride convolutions on
//! wide planes skip the gathering: one product per kernel tap over the input as it lies
//! ([`FastConv::shifted_taps`]). On CPUs with AVX-512, convolutions run on
//! [`tap_products`](super::tap_products) instead ([`FastConv::runs_on_tap_products`]): no
//! gathering and no product per tap at all, the whole depth summed in registers; on AVX2 CPUs,
//! those that would be gathered.
//!
//! [ONNX `Conv`]: https://onnx.ai/onnx/operators/onnx__Conv.html

use super::gemm_common::{self as gemm, Epilogue, ProductOp, RowFinish, Run, SharedOutput};
use super::pool_2d::{Axis, Window2d, taps_inside_range};
use super::tap_products;
use crate::parallel;
use tessera_core::tract_onnx::prelude::*;
use tessera_core::tract_onnx::tract_core::internal::*;
use tessera_core::tract_onnx::tract_core::ops::cnn::{Conv, KernelFormat, PaddingSpec, PoolSpec};
use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;

/// Floats of one gathered tile at most (2 MiB): with `K` rows, tiles are `TILE_FLOATS / K`
/// positions wide, within [`MIN_TILE`, `MAX_TILE`].
const TILE_FLOATS: usize = 1 << 19;
const MIN_TILE: usize = 128;
const MAX_TILE: usize = 1024;

/// A convolution's parallel work ([`FastConv::tasks`]).
struct Tasks {
    group: usize,
    tiles: usize,
    group_out: usize,
    column_tasks: usize,
    rows_per_block: usize,
    row_blocks: usize,
}

/// One task: image `b`, group `g`, a tile, and output channels `first_row..first_row + rows`
/// of the group (none when the last block is empty).
struct Task {
    b: usize,
    g: usize,
    tile: usize,
    first_row: usize,
    rows: usize,
}

impl Tasks {
    fn count(&self) -> usize {
        self.column_tasks * self.row_blocks
    }

    /// Runs `body(scratch, task)` for every task with output rows, on the run's threads, each
    /// compiled for the CPU's widest vectors ([`crate::simd::widest`]: gathering, epilogues);
    /// `body` should be `#[inline(always)]` for that.
    fn run(
        &self,
        scratch_len: usize,
        body: impl Fn(&mut [f32], Task) -> TractResult<()> + Sync + Send,
    ) -> TractResult<()> {
        parallel::for_each(self.count(), scratch_len, |scratch, i| {
            let task = self.task(i);
            if task.rows == 0 {
                return Ok(());
            }
            crate::simd::widest(
                #[inline(always)]
                || body(scratch, task),
            )
        })
    }

    fn task(&self, i: usize) -> Task {
        let (column_task, block) = (i / self.row_blocks, i % self.row_blocks);
        let (plane_group, tile) = (column_task / self.tiles, column_task % self.tiles);
        let first_row = block * self.rows_per_block;
        Task {
            b: plane_group / self.group,
            g: plane_group % self.group,
            tile,
            first_row,
            rows: self
                .rows_per_block
                .min(self.group_out.saturating_sub(first_row)),
        }
    }
}

/// Depth (input channels × taps) from which convolutions run on [`tap_products`]: over fewer,
/// each tile's sums are stored after too few products. An RGB image's 3×3 taps, depth 27, were
/// 8% slower than gathered on the kernel's first version (AMD EPYC, AVX-512); on today's AVX-512
/// kernel (Xeon, 1 and 2 threads) 0.86–0.99× on the seven shared models with such a layer,
/// SqueezeNet's first layer alone 0.90× and 0.85×, outputs bit-identical. The AVX2 kernel (half
/// the registers) is not measured at 27 and keeps 32.
const TAP_PRODUCTS_MIN_DEPTH: usize = 32;
#[cfg(target_arch = "x86_64")]
const AVX512_TAP_PRODUCTS_MIN_DEPTH: usize = 27;

/// Input channels per group up to which unit-stride convolutions on wide planes run on
/// [`tap_products`] on AVX2 CPUs, not on gemm's shifted taps, whose product for each tap sums only
/// that many values before its sums are stored and reloaded for the next tap. Zen 3, per node in the models (1
/// thread, interleaved, normalised by the run's matrix products): SqueezeNet's 3×3 convolutions
/// of 16 and 32 channels 0.75× and 0.86× their time on gemm; of 48 and 64 channels 0.98-1.04×,
/// ResNet-50's and Inception-v2's 64-channel ones 1.00-1.10×.
#[cfg(target_arch = "x86_64")]
const AVX2_TAP_PRODUCTS_MAX_GROUP_IN: usize = 32;

/// Output channels × output row width up to which small convolutions gather in padded-row
/// coordinates ([`FastConv::wide_gather`]).
const WIDE_GATHER_MAX_WORK: usize = 1024;

/// Positions a tile of the shifted-taps path covers at most (whole padded rows, at least one).
const SHIFTED_SPAN: usize = 1024;

/// Zeros after the last padded plane: a tile's positions, rounded up to 16, may read past its end.
const SLACK: usize = 16;

thread_local! {
    /// The calling thread's rearranged copy of a convolution's input (padded planes for the
    /// shifted-taps path, rows split by phase for strided gathering), kept between runs: a fresh
    /// buffer cost page faults and a memset each run.
    static INPUT_COPY: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f` with this thread's kept [`INPUT_COPY`] buffer, at least `len` long; a nested call, should
/// there be one, gets a buffer of its own.
fn with_input_copy<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    let use_buffer = |buffer: &mut Vec<f32>| {
        if buffer.len() < len {
            buffer.resize(len, 0.0);
        }
        f(&mut buffer[..len])
    };
    INPUT_COPY.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffer) => use_buffer(&mut buffer),
        Err(_) => use_buffer(&mut Vec::new()),
    })
}

/// A convolution run over rows of positions in padded-row coordinates: one product per kernel
/// tap ([`FastConv::shifted_taps`]), one over a gathered matrix ([`FastConv::wide_gather`]) or
/// on the tap products ([`FastConv::tap_geometry`]).
struct Shifted {
    /// The zero-padded input planes (or phase planes): `height × width`; outputs are computed
    /// over whole rows of `width` positions, those past the output's width dropped after.
    width: usize,
    height: usize,
    /// Whether the input needs padding (a copy), or is read as it is.
    copy: bool,
    /// Output rows per tile, and tiles per plane.
    tile_rows: usize,
    tiles: usize,
}

impl Shifted {
    /// Tile `tile`'s first output row and its number of rows, of `output_rows`.
    fn rows_of_tile(&self, tile: usize, output_rows: usize) -> (usize, usize) {
        let first = tile * self.tile_rows;
        (first, self.tile_rows.min(output_rows - first))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FastConv {
    pub window: Window2d,
    pub in_channels: usize,
    pub out_channels: usize,
    pub group: usize,
    /// Spatial axes: 2, or 1 (then `window.rows` is a single row).
    pub spatial: usize,
    /// Output shape: the input's, with `out_channels` and the convolved spatial axes.
    pub output_shape: TVec<usize>,
    /// Fused after the bias: operands per output channel (the rows) or scalars.
    pub epilogue: Epilogue,
    /// The kernel input is laid out tap by tap ([`FastConv::kernel_by_tap`]), as the plan
    /// rearranged a constant kernel once; otherwise it is ONNX's `[M, C/group, kh, kw]`.
    pub kernel_by_tap: bool,
    /// Input and output are channels-last (`[N, H, W, C]`: tract folds a transpose before the
    /// convolution into it); these run on the per-tap path only.
    pub channels_last: bool,
    /// Runs on [`tap_products`]' register-blocked kernel ([`Self::runs_on_tap_products`]).
    pub tap_products: bool,
    /// The kernel input is packed for [`tap_products`] ([`Self::packed_kernel`]), as the plan
    /// packed a constant kernel once.
    pub kernel_packed: bool,
}

// The epilogue's values are never NaN (see `gemm_common::step_after`): equality is an equivalence.
impl Eq for FastConv {}

/// The geometry of one run, derived from the op and checked against the operands' sizes.
struct Layout {
    /// Output planes per channel group: the product of the axes before the channel axis.
    batch: usize,
    group_in: usize,
    group_out: usize,
    /// Rows of the gathered matrix: `group_in · kh · kw`.
    depth: usize,
    in_plane: usize,
    out_plane: usize,
    tile: usize,
    tiles: usize,
    /// 1×1, unit stride, no padding: the input planes are the matrix, nothing to gather.
    direct: bool,
}

/// Input channels per group below which a channels-first convolution is gathered rather than run
/// tap by tap (see [`FastConv::shifted_taps`]). On wasm all of them are: in Chromium (SIMD128,
/// 1 thread, Zen 4) the per-tap products lost at every depth measured, mtcnn_pnet's 10- and
/// 16-channel convolutions 0.80 -> 0.58 and 1.91 -> 1.56 ms gathered, squeezenet's 16- and
/// 32-channel ones 3.1 -> 2.1 and 2.5 -> 1.9 ms, the convolutions of resnet50, vgg19,
/// inception_v1 and zfnet512 9-14% in all (docs/web.md). Channels-last ones (magika) have no
/// gathered path and keep the taps.
const MIN_SHIFTED_DEPTH: usize = if cfg!(target_family = "wasm") {
    usize::MAX
} else {
    8
};

/// Output channels per group below which a convolution stays with tract. A few channels over
/// many positions pay on gemm too (MTCNN's first layer: 3 → 10 channels over 118×158
/// positions). Native, 1 thread, interleaved runs: mtcnn_pnet 0.83×, ppocr_mobile_cls 0.94× with
/// 4 instead of 16, the other shared models within ±2%; 1 (MTCNN's 2-channel heads too)
/// measured 1.00–1.05× against 4.
const MIN_OUT_CHANNELS: usize = 4;

impl FastConv {
    /// The fast version of `conv` on an input of `shape`, when it applies: float (not quantized),
    /// channels first (or last, on the per-tap path only), one or two spatial axes, the kernel as
    /// ONNX lays it out (`[M, C/group, kh, kw]` or `[M, C/group, k]`). A 1-D convolution is a 2-D
    /// one over a single row.
    pub fn for_op(conv: &Conv, shape: &[usize]) -> Option<FastConv> {
        let (in_channels, out_channels) = (conv.input_channels(), conv.output_channels());
        if conv.q_params.is_some()
            || conv.kernel_fmt != KernelFormat::OIHW
            || conv.group == 0
            || in_channels == 0
            || in_channels % conv.group != 0
            || out_channels % conv.group != 0
        {
            return None;
        }
        let spatial = conv.pool_spec.kernel_shape.len();
        // Channels-last operands are described by their channels-first view (the channel axis
        // moved before the spatial ones): the window's arithmetic is the same.
        let channels_last = matches!(
            conv.pool_spec.data_format,
            DataFormat::NHWC | DataFormat::HWC
        );
        let channel_axis = shape.len().checked_sub(spatial + 1)?;
        let mut first_shape: TVec<usize> = shape.into();
        let mut spec = conv.pool_spec.clone();
        if channels_last {
            let channels = first_shape.pop()?;
            first_shape.insert(channel_axis, channels);
            spec.data_format = match spec.data_format {
                DataFormat::NHWC => DataFormat::NCHW,
                _ => DataFormat::CHW,
            };
        }
        let window = match spatial {
            2 => Window2d::new(&spec, &first_shape)?,
            1 => {
                let (spec, shape) = one_row(&spec, &first_shape)?;
                Window2d::new(&spec, &shape)?
            }
            _ => return None,
        };
        if first_shape[channel_axis] != in_channels {
            return None;
        }
        let mut output_shape = first_shape;
        output_shape[channel_axis] = out_channels;
        let rank = output_shape.len();
        output_shape[rank - 1] = window.cols.output;
        if spatial == 2 {
            output_shape[rank - 2] = window.rows.output;
        }
        if channels_last {
            let channels = output_shape.remove(channel_axis);
            output_shape.push(channels);
        }
        let fast = FastConv {
            window,
            in_channels,
            out_channels,
            group: conv.group,
            spatial,
            output_shape,
            epilogue: Epilogue::default(),
            kernel_by_tap: false,
            channels_last,
            tap_products: false,
            kernel_packed: false,
        };
        let fast = FastConv {
            tap_products: fast.runs_on_tap_products(),
            ..fast
        };
        (!channels_last || fast.shifted_taps().is_some()).then_some(fast)
    }

    /// Whether the product is wide enough for `gemm`: enough output positions (see
    /// [`MIN_SIDE`](super::gemm_common::MIN_SIDE)) and [`MIN_OUT_CHANNELS`] per group.
    pub fn worth_it(&self) -> bool {
        let positions = self.window.rows.output * self.window.cols.output;
        positions >= super::gemm_common::MIN_SIDE
            && self.out_channels / self.group >= MIN_OUT_CHANNELS
    }

    /// The parallel work over `batch` images of `tiles` tiles per channel group: the tiles, each
    /// split across blocks of output channels when they do not divide among the threads evenly
    /// (small planes, late layers).
    fn tasks(&self, batch: usize, tiles: usize, group_out: usize) -> Tasks {
        let column_tasks = batch * self.group * tiles;
        let parts = parallel::parts_for_balance(column_tasks);
        let (rows_per_block, row_blocks) = parallel::blocks(group_out, parts, 16);
        Tasks {
            group: self.group,
            tiles,
            group_out,
            column_tasks,
            rows_per_block,
            row_blocks,
        }
    }

    /// 1×1, unit stride, no padding: the input planes are the matrix, nothing to gather.
    fn direct(&self) -> bool {
        let unit =
            |a: &Axis| a.kernel == 1 && a.stride == 1 && a.pad_before == 0 && a.output == a.input;
        unit(&self.window.rows) && unit(&self.window.cols)
    }

    /// Whether runs read the kernel tap by tap: a plan with a constant kernel rearranges it once
    /// ([`Self::kernel_by_tap`]) and sets [`FastConv::kernel_by_tap`].
    pub fn reads_kernel_by_tap(&self) -> bool {
        self.shifted_taps().is_some()
    }

    /// Whether this convolution runs on [`tap_products`]: channels first, on a CPU with the
    /// kernel (AVX-512; AVX2 with FMA only where gemm would gather). Every input channel and
    /// tap is then read where it lies in the padded input (split by phase for strides:
    /// [`Self::tap_geometry`]), with the sums in registers over the whole depth.
    pub fn runs_on_tap_products(&self) -> bool {
        let kernel = tap_products::Kernel::best();
        let min_depth = match kernel {
            #[cfg(target_arch = "x86_64")]
            tap_products::Kernel::Avx512 => AVX512_TAP_PRODUCTS_MIN_DEPTH,
            _ => TAP_PRODUCTS_MIN_DEPTH,
        };
        // (Read only by the x86-64 kernels' arms.)
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
        let fits = !self.channels_last && self.depth() >= min_depth;
        match kernel {
            #[cfg(target_arch = "x86_64")]
            tap_products::Kernel::Avx512 => fits,
            // With half the registers (2 vectors of 8 positions a micro-tile, not 4 of 16) the
            // kernel beats gathering, but gemm's shifted taps only where a tap's product is
            // shallow ([`AVX2_TAP_PRODUCTS_MAX_GROUP_IN`]). Zen 3, 1 thread, interleaved: every
            // convolution on the kernel made VGG-19 1.19× slower (its 28×28 3×3 ones 1.4×);
            // gathered ones only: ZFNet-512 0.92×, magika 0.89×, the other CNNs within ±7%.
            #[cfg(target_arch = "x86_64")]
            tap_products::Kernel::Avx2 => {
                fits && (self.shifted_taps_geometry().is_none()
                    || self.in_channels / self.group.max(1) <= AVX2_TAP_PRODUCTS_MAX_GROUP_IN)
            }
            tap_products::Kernel::Portable => false,
        }
    }

    /// Rows of a group's product: its input channels × the kernel's taps.
    fn depth(&self) -> usize {
        self.in_channels / self.group.max(1) * self.window.rows.kernel * self.window.cols.kernel
    }

    /// `kernel` (ONNX's `[M, C/group, kh, kw]`) packed for [`tap_products`], group by group.
    pub fn packed_kernel(&self, kernel: &[f32]) -> Vec<f32> {
        let (group_out, depth) = (self.out_channels / self.group.max(1), self.depth());
        let group_len = tap_products::packed_len(group_out, depth);
        let mut packed = vec![0.0; group_len * self.group];
        for (weights, packed) in kernel
            .chunks(group_out * depth.max(1))
            .zip(packed.chunks_exact_mut(group_len.max(1)))
        {
            tap_products::pack_weights_into(weights, group_out, depth, packed);
        }
        packed
    }

    /// `kernel` (ONNX's `[M, C/group, kh, kw]`) tap by tap: `[kh·kw][M][C/group]`, so that each
    /// tap's weights are a plain row-major matrix, which gemm reads without packing
    /// (`[kh·kw][C/group][M]` for channels-last, whose products run untransposed).
    pub fn kernel_by_tap(&self, kernel: &[f32]) -> Vec<f32> {
        let taps = self.window.rows.kernel * self.window.cols.kernel;
        let group_in = self.in_channels / self.group.max(1);
        let tap_len = self.out_channels * group_in;
        let mut by_tap = vec![0.0f32; taps * tap_len];
        for (o, filter) in kernel.chunks_exact((group_in * taps).max(1)).enumerate() {
            for (i, window) in filter.chunks_exact(taps.max(1)).enumerate() {
                for (tap, &w) in window.iter().enumerate() {
                    let at = if self.channels_last {
                        tap * tap_len + i * self.out_channels + o
                    } else {
                        tap * tap_len + o * group_in + i
                    };
                    if let Some(slot) = by_tap.get_mut(at) {
                        *slot = w;
                    }
                }
            }
        }
        by_tap
    }

    /// Where the channels are in the output: just before the spatial axes.
    fn channel_axis(&self) -> usize {
        if self.channels_last {
            self.output_shape.len() - 1
        } else {
            self.first_spatial_axis() - 1
        }
    }

    /// The first spatial axis of the output: the axes before it (less the channel axis when it
    /// comes first) are the batch.
    fn first_spatial_axis(&self) -> usize {
        self.output_shape.len() - self.spatial - usize::from(self.channels_last)
    }

    fn layout(
        &self,
        input: usize,
        kernel: usize,
        bias: usize,
        output: usize,
    ) -> TractResult<Layout> {
        let (r, c) = (self.window.rows, self.window.cols);
        let (group_in, group_out) = (
            self.in_channels / self.group,
            self.out_channels / self.group,
        );
        let depth = group_in * r.kernel * c.kernel;
        ensure!(
            depth > 0,
            "a convolution with no input channel or an empty kernel"
        );
        let (in_plane, out_plane) = (r.input * c.input, r.output * c.output);
        let batch_axes = self.first_spatial_axis() - usize::from(!self.channels_last);
        let batch = self.output_shape[..batch_axes].iter().product::<usize>();
        let expected = if self.kernel_packed {
            self.group * tap_products::packed_len(group_out, depth)
        } else {
            self.out_channels * depth
        };
        ensure!(
            kernel == expected,
            "convolution kernel has {kernel} values, expected {expected}"
        );
        ensure!(
            bias == 1 || bias == self.out_channels,
            "convolution bias has {bias} values for {} output channels",
            self.out_channels
        );
        ensure!(
            input == batch * self.in_channels * in_plane
                && output == batch * self.out_channels * out_plane,
            "convolution input or output size differs from the plan's"
        );
        // As few tiles as fit, evened out (gemm packs the kernel once per tile: a 4-position
        // remainder tile packed all of 256×2304 again), each a multiple of 64 (gemm's row panel)
        // where it can, so that gemm reads the gathered tile as it is instead of packing it.
        let widest = (TILE_FLOATS / depth).clamp(MIN_TILE, MAX_TILE);
        let tiles = out_plane.div_ceil(widest).max(1);
        let tile = out_plane
            .div_ceil(tiles)
            .next_multiple_of(64)
            .min(out_plane.max(1));
        Ok(Layout {
            batch,
            group_in,
            group_out,
            depth,
            in_plane,
            out_plane,
            tile,
            tiles: out_plane.div_ceil(tile),
            direct: self.direct(),
        })
    }

    /// `output` = the convolution of `input` with `kernel` (`[M, K]`), plus `bias` (one value, or
    /// one per output channel), clamped.
    pub fn compute(
        &self,
        input: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let l = self.layout(input.len(), kernel.len(), bias.len(), output.len())?;
        if output.is_empty() {
            return Ok(());
        }
        if self.tap_products {
            return self.compute_tap_products(&l, input, kernel, bias, output);
        }
        ensure!(
            !self.kernel_packed,
            "a packed kernel on a path other than the tap products"
        );
        if let Some(shifted) = self.shifted_taps() {
            return self.compute_shifted(&l, &shifted, input, kernel, bias, output);
        }
        ensure!(
            !self.kernel_by_tap && !self.channels_last,
            "a channels-last convolution, or a kernel laid out by tap, on the gathered path"
        );
        if let Some(wide) = self.wide_gather() {
            return self.compute_wide(&l, &wide, input, kernel, bias, output);
        }
        // Strided columns: every input row split by phase once, so that each gathered run is a
        // contiguous copy instead of a strided walk (ResNet's and Inception's first layers
        // gather 7×7 taps at stride 2).
        match self.column_phases() {
            Some(phases) => with_input_copy(input.len(), |split| {
                phases.split(input, split);
                self.gathered_products(&l, Some(&phases), split, kernel, bias, output)
            }),
            None => self.gathered_products(&l, None, input, kernel, bias, output),
        }
    }

    /// The convolution as one product per tile of output positions over its gathered (im2col)
    /// input, or over the input as it is for 1×1 convolutions; `input`'s rows are split by
    /// `phases` when given.
    fn gathered_products(
        &self,
        l: &Layout,
        phases: Option<&ColumnPhases>,
        input: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let tasks = self.tasks(l.batch, l.tiles, l.group_out);
        let out = SharedOutput::new(output);
        let scratch_len = if l.direct { 0 } else { l.depth * l.tile };
        tasks.run(
            scratch_len,
            #[inline(always)]
            |scratch,
             Task {
                 b,
                 g,
                 tile,
                 first_row,
                 rows,
             }| {
                let start = tile * l.tile;
                let width = l.tile.min(l.out_plane - start);
                let planes = &input[(b * self.in_channels + g * l.group_in) * l.in_plane..]
                    [..l.group_in * l.in_plane];
                let (matrix, matrix_row) = if l.direct {
                    (&planes[start..], l.in_plane)
                } else {
                    let gathered = &mut scratch[..l.depth * width];
                    self.gather(planes, phases, start, width, gathered);
                    (&*gathered, width)
                };
                let out_channel = g * l.group_out + first_row;
                let weights = &kernel[out_channel * l.depth..][..rows * l.depth];
                let first_out = (b * self.out_channels + out_channel) * l.out_plane + start;
                // SAFETY: `matrix` holds `depth` rows of `width` values `matrix_row` apart (checked
                // by the slicing above: the last row ends inside `planes` or `gathered`), `weights`
                // `rows × depth` values; the output rows `out_channel..+rows`, columns
                // `start..+width` of plane `b` lie inside `output` (sizes checked in `layout`) and
                // no other task writes them: tasks differ in plane, group, tile or row block.
                unsafe {
                    gemm::product(
                        (rows, width, l.depth),
                        out.at(first_out),
                        (1, l.out_plane),
                        weights.as_ptr(),
                        (1, l.depth),
                        matrix.as_ptr(),
                        (1, matrix_row),
                        false,
                    );
                    for row in 0..rows {
                        let channel = out_channel + row;
                        let values = std::slice::from_raw_parts_mut(
                            out.at(first_out + row * l.out_plane),
                            width,
                        );
                        let run = Run::AlongRow {
                            row: channel,
                            first_column: start,
                        };
                        self.epilogue.apply(
                            values,
                            run,
                            bias[if bias.len() == 1 { 0 } else { channel }],
                        );
                    }
                }
                Ok(())
            },
        )
    }

    /// How a unit-stride convolution runs as one product per kernel tap, when it does: the rows
    /// of the (zero-padded) input, read from tap `(ky, kx)`'s offset, are that tap's matrix as
    /// they lie in memory, so nothing is gathered. Outputs are computed over whole padded rows
    /// (`kw - 1` extra columns each, dropped after), so planes narrower than 4× that stay on the
    /// gathered path (on 7×7 planes the taps' products are too small: 512 channels of a 3×3
    /// convolution took 7.7 ms this way, 3.3 gathered; 14×14 and wider gained 10-25%), and so
    /// do planes under 16 wide whose taps have few input channels (13×13 with 48 or 64: 10%
    /// slower than gathered, where 256 channels at 14×14 gained 25%), and taps of fewer than
    /// [`MIN_SHIFTED_DEPTH`] input channels (a 3-channel image: 9 products of depth 3 where
    /// gathering makes one of depth 27; mtcnn_rnet and mtcnn_onet 10-12% faster gathered).
    fn shifted_taps(&self) -> Option<Shifted> {
        if self.tap_products {
            return None;
        }
        self.shifted_taps_geometry()
    }

    /// [`Self::shifted_taps`]' geometry where the convolution would run that way on gemm.
    fn shifted_taps_geometry(&self) -> Option<Shifted> {
        let (r, c) = (self.window.rows, self.window.cols);
        let reach = |a: &Axis| (a.kernel - 1) * a.dilation;
        let group_in = self.in_channels / self.group.max(1);
        let wide = c.output >= 4 * reach(&c).max(1) && (c.output >= 16 || group_in >= 128);
        let deep = group_in >= MIN_SHIFTED_DEPTH || self.channels_last;
        if self.direct() || r.stride != 1 || c.stride != 1 || !wide || !deep {
            return None;
        }
        let (width, height) = (c.output + reach(&c), r.output + reach(&r));
        let copy = width != c.input || height != r.input || r.pad_before + c.pad_before != 0;
        // As few tiles as fit the span, evened out (56 rows in tiles of 17 left a 5-row tile and
        // one thread idle a third of the time).
        let tiles = r.output.div_ceil((SHIFTED_SPAN / width).clamp(1, r.output));
        Some(Shifted {
            width,
            height,
            copy,
            tile_rows: r.output.div_ceil(tiles),
            tiles,
        })
    }

    /// The convolution as `kh · kw` accumulated products per tile of output rows (see
    /// [`Self::shifted_taps`]): `output[o, p] = Σ_tap W[o, :, tap] · padded[:, p + offset(tap)]`.
    fn compute_shifted(
        &self,
        l: &Layout,
        s: &Shifted,
        input: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        if !self.channels_last {
            return self.on_padded_planes(input, s, |padded| {
                self.shifted_products(l, s, padded, kernel, bias, output)
            });
        }
        if !s.copy {
            return self.shifted_products(l, s, input, kernel, bias, output);
        }
        let len = l.batch * self.in_channels * s.width * s.height + SLACK;
        with_input_copy(len, |padded| {
            self.pad_channels_last(input, s, padded)?;
            self.shifted_products(l, s, padded, kernel, bias, output)
        })
    }

    /// [`Self::compute_shifted`] on input planes already padded (`padded`: `height × width`
    /// each, then [`SLACK`] values when they were copied).
    fn shifted_products(
        &self,
        l: &Layout,
        s: &Shifted,
        padded: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let padded_plane = s.width * s.height;
        let tap_len = self.out_channels * l.group_in;
        // A kernel that is not a constant of the plan is rearranged here, on every run.
        let rearranged;
        let by_tap: &[f32] = if self.kernel_by_tap {
            kernel
        } else {
            rearranged = self.kernel_by_tap(kernel);
            &rearranged
        };
        let tasks = self.tasks(l.batch, s.tiles, l.group_out);
        // Positions of a tile in padded-row coordinates: the last row's extra columns are cut,
        // then, over copied planes, rounded up to a multiple of 16 (the slack after the last
        // plane covers it) so that gemm reads the planes as they are instead of packing them.
        let span_of = |rows: usize| {
            let span = (rows - 1) * s.width + c.output;
            if s.copy && !self.channels_last {
                span.next_multiple_of(16)
            } else {
                span
            }
        };
        let span = span_of(s.tile_rows);
        let cl = self.channels_last;
        // Strides of a tap's matrix (between input channels, between positions) and where an
        // image's input starts: planes of positions, or positions of channels.
        let (channel_stride, position_stride) = if cl {
            (1, self.in_channels)
        } else {
            (padded_plane, 1)
        };
        // Channels last, one group, no column dilation: a kernel row's taps read `kw × channels`
        // consecutive values at each position, and their weights (by tap) are consecutive rows,
        // so the row is one product with `kw` times the depth (MTCNN's 3-channel input: 3
        // products of depth 9 instead of 9 of depth 3).
        let taps_per_product = if cl && self.group == 1 && c.dilation == 1 {
            c.kernel
        } else {
            1
        };
        let out = SharedOutput::new(output);
        tasks.run(
            tasks.rows_per_block * span,
            #[inline(always)]
            |scratch,
             Task {
                 b,
                 g,
                 tile,
                 first_row,
                 rows,
             }| {
                let (first_y, tile_rows) = s.rows_of_tile(tile, r.output);
                let span = span_of(tile_rows);
                let sums = &mut scratch[..rows * span];
                // Sums are `rows × span`: along positions (channels first) or along channels.
                let sums_strides = if cl { (rows, 1) } else { (1, span) };
                let image = b * self.in_channels * padded_plane;
                let out_channel = g * l.group_out + first_row;
                for ky in 0..r.kernel {
                    for kx in (0..c.kernel).step_by(taps_per_product) {
                        let tap = ky * c.kernel + kx;
                        let depth = l.group_in * taps_per_product;
                        let (weights, weight_strides) = if cl {
                            let len = (depth - 1) * self.out_channels + rows;
                            let at = tap * tap_len + out_channel;
                            (&by_tap[at..][..len], (self.out_channels, 1))
                        } else {
                            let at = tap * tap_len + out_channel * l.group_in;
                            (&by_tap[at..][..rows * l.group_in], (1, l.group_in))
                        };
                        let offset = (first_y + ky * r.dilation) * s.width + kx * c.dilation;
                        let first =
                            image + g * l.group_in * channel_stride + offset * position_stride;
                        let last =
                            first + (depth - 1) * channel_stride + (span - 1) * position_stride;
                        ensure!(last < padded.len(), "a tap reads past the padded input");
                        // SAFETY: `weights` holds the `rows × depth` values its strides
                        // reach (sliced above); the taps' matrix, `depth` rows of `span`
                        // values, ends inside `padded` (checked above); `sums` is this
                        // task's own scratch, `rows × span`.
                        unsafe {
                            gemm::product(
                                (rows, span, depth),
                                sums.as_mut_ptr(),
                                sums_strides,
                                weights.as_ptr(),
                                weight_strides,
                                padded.as_ptr().add(first),
                                (position_stride, channel_stride),
                                tap > 0,
                            );
                        }
                    }
                }
                if cl {
                    self.channels_last_out(
                        &out,
                        sums,
                        (b, first_y, tile_rows),
                        out_channel,
                        rows,
                        s,
                        bias,
                    );
                    return Ok(());
                }
                // SAFETY: this task's rows, image and output rows (see `write_padded_sums`).
                unsafe {
                    self.write_padded_sums(
                        &out,
                        sums,
                        span,
                        (b, out_channel),
                        l,
                        s.width,
                        (first_y, tile_rows),
                        Some(bias),
                    )
                };
                Ok(())
            },
        )
    }

    /// Output rows `first_y..+tile_rows` of channels `first_channel..` (one per row of `sums`,
    /// `span` apart, each in padded-row coordinates: `width` apart, the columns past the output's
    /// dropped) of image `b`, plus `bias` and the epilogue (`None`: the sums are finished).
    ///
    /// SAFETY: no other thread writes those output rows of those channels of image `b`.
    /// Inlined into the tasks, which are compiled for the widest vectors ([`crate::simd`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn write_padded_sums(
        &self,
        out: &SharedOutput,
        sums: &[f32],
        span: usize,
        (b, first_channel): (usize, usize),
        l: &Layout,
        width: usize,
        (first_y, tile_rows): (usize, usize),
        bias: Option<&[f32]>,
    ) {
        let c = self.window.cols;
        for (row, sum) in sums.chunks_exact(span).enumerate() {
            let channel = first_channel + row;
            let plane_start = (b * self.out_channels + channel) * l.out_plane;
            for y in 0..tile_rows {
                let first_column = (first_y + y) * c.output;
                // SAFETY: output row `first_y + y` of plane `channel` of image `b`: inside
                // `output` (sizes checked in `layout`), written by this task alone (the caller's
                // condition).
                let values = unsafe {
                    std::slice::from_raw_parts_mut(out.at(plane_start + first_column), c.output)
                };
                values.copy_from_slice(&sum[y * width..][..c.output]);
                if let Some(bias) = bias {
                    let run = Run::AlongRow {
                        row: channel,
                        first_column,
                    };
                    let extra = bias[if bias.len() == 1 { 0 } else { channel }];
                    self.epilogue.apply(values, run, extra);
                }
            }
        }
    }

    /// How a small unit-stride convolution gathers its input, when it does so in padded-row
    /// coordinates: each gathered row (input channel, tap) is then one contiguous copy of the
    /// zero-padded plane from the tap's offset, instead of one run per output row (rows of 3 to
    /// 22 values: MTCNN's and SqueezeNet's late layers spent more time gathering than
    /// multiplying), at the price of `kw - 1` extra columns per output row in the product, whose
    /// width then is no multiple of 64 either (gemm packs it). Gathering costs one run per
    /// output row, the product `out channels × row width` per run: so only where that is at most
    /// [`WIDE_GATHER_MAX_WORK`], in one tile (13×13 planes of 192 or 256 channels ran 20% slower
    /// this way; MTCNN's 9×9 of 48, 6% faster in all).
    fn wide_gather(&self) -> Option<Shifted> {
        let (r, c) = (self.window.rows, self.window.cols);
        if self.direct()
            || self.tap_products
            || self.channels_last
            || r.stride != 1
            || c.stride != 1
            || self.out_channels / self.group.max(1) * c.output > WIDE_GATHER_MAX_WORK
            || self.shifted_taps().is_some()
        {
            return None;
        }
        // The unit-stride padded planes of the tap products, in tiles of whole output rows that
        // fit the gathered matrix, as many as fit, evened out.
        let planes = self.tap_geometry();
        let fit =
            (MAX_TILE.min(TILE_FLOATS / self.depth().max(1)) / planes.width).clamp(1, r.output);
        let tiles = r.output.div_ceil(fit);
        Some(Shifted {
            tile_rows: r.output.div_ceil(tiles),
            tiles,
            ..planes
        })
    }

    /// The geometry of a run on [`tap_products`].
    ///
    /// Each input plane is zero-padded and split into `stride_r × stride_c` phase planes (phase
    /// `(a, b)` holds the padded input's rows `a, a + stride_r, …` and columns `b, b + stride_c,
    /// …`; one plane, the padded input, at unit stride). Tap `(ky, kx)` then reads phase
    /// `(ky·dy mod stride_r, kx·dx mod stride_c)` from a fixed offset, and the outputs of a row
    /// are consecutive there: any stride runs as unit-stride taps, over `width`-wide rows of
    /// positions of which the first `output` columns are kept.
    fn tap_geometry(&self) -> Shifted {
        let (r, c) = (self.window.rows, self.window.cols);
        // Padded extent the outputs read, then phase-plane rows of it.
        let extent = |a: &Axis| (a.output - 1) * a.stride + (a.kernel - 1) * a.dilation + 1;
        let (height, width) = (extent(&r).div_ceil(r.stride), extent(&c).div_ceil(c.stride));
        let tiles = r.output.div_ceil((SHIFTED_SPAN / width).clamp(1, r.output));
        Shifted {
            width,
            height,
            copy: r.stride * c.stride != 1
                || width != c.input
                || height != r.input
                || r.pad_before + c.pad_before != 0,
            tile_rows: r.output.div_ceil(tiles),
            tiles,
        }
    }

    /// The convolution on [`tap_products`] ([`Self::runs_on_tap_products`]).
    fn compute_tap_products(
        &self,
        l: &Layout,
        input: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let t = self.tap_geometry();
        // A kernel that is not a constant of the plan is packed here, on every run.
        let packed_here;
        let packed: &[f32] = if self.kernel_packed {
            kernel
        } else {
            packed_here = self.packed_kernel(kernel);
            &packed_here
        };
        self.on_padded_planes(input, &t, |planes| {
            self.tap_products_on(l, &t, planes, packed, bias, output)
        })
    }

    /// `run` on the input's planes as `s` lays them out: the input as it is, or (when `s.copy`)
    /// zero-padded and split by phase ([`Self::split_phases`]) in the thread's kept buffer.
    fn on_padded_planes(
        &self,
        input: &[f32],
        s: &Shifted,
        run: impl FnOnce(&[f32]) -> TractResult<()>,
    ) -> TractResult<()> {
        if !s.copy {
            return run(input);
        }
        let (r, c) = (self.window.rows, self.window.cols);
        let planes = input.len() / (r.input * c.input).max(1);
        let len = planes * r.stride * c.stride * s.width * s.height + SLACK;
        with_input_copy(len, |split| {
            self.split_phases(input, s, split)?;
            run(split)
        })
    }

    /// Writes every value of `split`: each input plane zero-padded and split into its phase
    /// planes ([`Self::tap_geometry`]; at unit stride, the padded plane), then zeros.
    fn split_phases(&self, input: &[f32], t: &Shifted, split: &mut [f32]) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let phase_plane = t.width * t.height;
        let plane_len = r.stride * c.stride * phase_plane;
        let planes = input.len() / (r.input * c.input).max(1);
        ensure!(
            split.len() >= planes * plane_len,
            "phase planes buffer too small"
        );
        let (split, slack) = split.split_at_mut(planes * plane_len);
        slack.fill(0.0);
        let target = SharedOutput::new(split);
        parallel::for_each(planes, 0, |_, plane| {
            let source = &input[plane * r.input * c.input..][..r.input * c.input];
            // SAFETY: plane `plane`'s phase planes lie inside `split`, written by this task alone.
            let dst =
                unsafe { std::slice::from_raw_parts_mut(target.at(plane * plane_len), plane_len) };
            crate::simd::widest(
                #[inline(always)]
                || {
                    for (phase, phase_dst) in dst.chunks_exact_mut(phase_plane).enumerate() {
                        let (a, b) = (phase / c.stride, phase % c.stride);
                        for (y, row) in phase_dst.chunks_exact_mut(t.width).enumerate() {
                            let source_row = (y * r.stride + a)
                                .checked_sub(r.pad_before)
                                .filter(|&iy| iy < r.input)
                                .map(|iy| &source[iy * c.input..][..c.input]);
                            split_row(row, source_row, c.pad_before, (c.stride, b));
                        }
                    }
                },
            );
            Ok(())
        })
    }

    /// Where each input channel and tap of the depth (ONNX's kernel order) reads in the padded
    /// (phase) planes `t` describes, from a tile's first position.
    fn tap_offsets(&self, group_in: usize, t: &Shifted) -> Vec<usize> {
        let (r, c) = (self.window.rows, self.window.cols);
        let phase_plane = t.width * t.height;
        let plane_len = r.stride * c.stride * phase_plane;
        (0..group_in)
            .flat_map(|channel| {
                (0..r.kernel).flat_map(move |ky| {
                    (0..c.kernel).map(move |kx| {
                        let (y, x) = (ky * r.dilation, kx * c.dilation);
                        let phase = (y % r.stride) * c.stride + x % c.stride;
                        channel * plane_len
                            + phase * phase_plane
                            + (y / r.stride) * t.width
                            + x / c.stride
                    })
                })
            })
            .collect()
    }

    /// [`Self::compute_tap_products`] on phase planes already made (or the input as it is).
    fn tap_products_on(
        &self,
        l: &Layout,
        t: &Shifted,
        split: &[f32],
        packed: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let phase_plane = t.width * t.height;
        let plane_len = r.stride * c.stride * phase_plane;
        let offsets = self.tap_offsets(l.group_in, t);
        let group_packed = tap_products::packed_len(l.group_out, l.depth);
        // Channel blocks start on the kernel's blocks of channels.
        let mut tasks = self.tasks(l.batch, t.tiles, l.group_out);
        tasks.rows_per_block = tasks
            .rows_per_block
            .next_multiple_of(tap_products::CHANNELS)
            .min(l.group_out);
        tasks.row_blocks = l.group_out.div_ceil(tasks.rows_per_block.max(1));
        let widest = (t.tile_rows - 1) * t.width + c.output;
        let out = SharedOutput::new(output);
        let fused = self.epilogue.fixed_along_rows(self.out_channels);
        let keeps_columns = tap_products::Kernel::best().keeps_columns();
        tasks.run(
            tasks.rows_per_block * widest,
            #[inline(always)]
            |scratch,
             Task {
                 b,
                 g,
                 tile,
                 first_row,
                 rows,
             }| {
                let (first_y, tile_rows) = t.rows_of_tile(tile, r.output);
                let span = (tile_rows - 1) * t.width + c.output;
                let first = (b * self.in_channels + g * l.group_in) * plane_len;
                let tile_input = &split[first + first_y * t.width..];
                let block = first_row / tap_products::CHANNELS * l.depth * tap_products::CHANNELS;
                let weights = &packed[g * group_packed + block..];
                let out_channel = g * l.group_out + first_row;
                let bias_of = |channel: usize| bias[if bias.len() == 1 { 0 } else { channel }];
                // The epilogue in the kernel's registers, where it is one map per channel.
                let finish = |j: usize| {
                    let channel = out_channel + j;
                    self.epilogue
                        .row_finish(channel, bias_of(channel))
                        .unwrap_or(RowFinish::NONE)
                };
                let no_finish = |_: usize| RowFinish::NONE;
                let finish: &dyn Fn(usize) -> RowFinish = if fused { &finish } else { &no_finish };
                // The output rows of the tile's channels, from output row `first_y`.
                let first_out =
                    (b * self.out_channels + out_channel) * l.out_plane + first_y * c.output;
                let straight = t.width == c.output;
                if straight || (fused && keeps_columns) {
                    // Rows of positions are the output's rows, or the kernel drops the padded
                    // columns as it stores: the sums go straight to the output.
                    let to = tap_products::Destination {
                        // SAFETY: rows `out_channel..+rows` of image `b`, from output row
                        // `first_y`: inside `output` (sizes checked in `layout`).
                        at: unsafe { out.at(first_out) },
                        row: l.out_plane,
                        kept: (!straight).then_some((t.width, c.output)),
                    };
                    // SAFETY: the positions of output rows `first_y..+tile_rows` of those
                    // channels, and tasks differ in image, group, tile of rows or block of
                    // channels.
                    unsafe {
                        tap_products::products_to(
                            tile_input,
                            &offsets,
                            weights,
                            (rows, span),
                            finish,
                            to,
                        )?
                    };
                    if !fused {
                        for row in 0..rows {
                            let channel = out_channel + row;
                            // SAFETY: as the products' rows just above.
                            let values = unsafe {
                                std::slice::from_raw_parts_mut(
                                    out.at(first_out + row * l.out_plane),
                                    span,
                                )
                            };
                            let run = Run::AlongRow {
                                row: channel,
                                first_column: first_y * c.output,
                            };
                            self.epilogue.apply(values, run, bias_of(channel));
                        }
                    }
                    return Ok(());
                }
                let sums = &mut scratch[..rows * span];
                tap_products::products(
                    tile_input,
                    &offsets,
                    weights,
                    (rows, span),
                    finish,
                    sums,
                    span,
                )?;
                // SAFETY: tasks differ in image, group, tile of rows or block of channels.
                unsafe {
                    self.write_padded_sums(
                        &out,
                        sums,
                        span,
                        (b, out_channel),
                        l,
                        t.width,
                        (first_y, tile_rows),
                        (!fused).then_some(bias),
                    )
                };
                Ok(())
            },
        )
    }

    /// The convolution as one product over the input gathered in padded-row coordinates
    /// ([`Self::wide_gather`]).
    fn compute_wide(
        &self,
        l: &Layout,
        s: &Shifted,
        input: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        self.on_padded_planes(input, s, |padded| {
            self.wide_products(l, s, padded, kernel, bias, output)
        })
    }

    /// [`Self::compute_wide`] on planes already padded (`height × width` each).
    fn wide_products(
        &self,
        l: &Layout,
        s: &Shifted,
        padded: &[f32],
        kernel: &[f32],
        bias: &[f32],
        output: &mut [f32],
    ) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let padded_plane = s.width * s.height;
        // A tile's positions: its rows in padded-row coordinates up to its last output, rounded
        // up to a multiple of 64 so that gemm reads the gathered rows as they are.
        let span_of = |rows: usize| ((rows - 1) * s.width + c.output).next_multiple_of(64);
        let widest = span_of(s.tile_rows);
        let offsets = self.tap_offsets(l.group_in, s);
        let tasks = self.tasks(l.batch, s.tiles, l.group_out);
        let out = SharedOutput::new(output);
        tasks.run(
            (l.depth + tasks.rows_per_block) * widest,
            #[inline(always)]
            |scratch,
             Task {
                 b,
                 g,
                 tile,
                 first_row,
                 rows,
             }| {
                let (first_y, tile_rows) = s.rows_of_tile(tile, r.output);
                let span = span_of(tile_rows);
                let (gathered, sums) = scratch.split_at_mut(l.depth * span);
                let sums = &mut sums[..rows * span];
                let tile_start =
                    (b * self.in_channels + g * l.group_in) * padded_plane + first_y * s.width;
                for (row, offset) in gathered.chunks_exact_mut(span).zip(&offsets) {
                    // Past the tile's last output the values are never used: read what the
                    // buffer holds, zeros after its end.
                    let source = &padded[(tile_start + offset).min(padded.len())..];
                    let n = span.min(source.len());
                    copy_run(&mut row[..n], source);
                    row[n..].fill(0.0);
                }
                let out_channel = g * l.group_out + first_row;
                let weights = &kernel[out_channel * l.depth..][..rows * l.depth];
                // SAFETY: `weights` holds `rows × depth` values, `gathered` `depth` rows of
                // `span` and `sums` `rows × span` (sliced above), this task's own scratch.
                unsafe {
                    gemm::product(
                        (rows, span, l.depth),
                        sums.as_mut_ptr(),
                        (1, span),
                        weights.as_ptr(),
                        (1, l.depth),
                        gathered.as_ptr(),
                        (1, span),
                        false,
                    );
                }
                // SAFETY: tasks differ in image, group, tile of rows or block of channels.
                unsafe {
                    self.write_padded_sums(
                        &out,
                        sums,
                        span,
                        (b, out_channel),
                        l,
                        s.width,
                        (first_y, tile_rows),
                        Some(bias),
                    )
                };
                Ok(())
            },
        )
    }

    /// A channels-last tile's sums (`span` positions of `rows` channels from `first_channel`)
    /// into the output's rows `first_y..+tile_rows` of image `b`, plus bias and epilogue.
    #[allow(clippy::too_many_arguments)]
    fn channels_last_out(
        &self,
        out: &SharedOutput,
        sums: &[f32],
        (b, first_y, tile_rows): (usize, usize, usize),
        first_channel: usize,
        rows: usize,
        s: &Shifted,
        bias: &[f32],
    ) {
        let (r, c) = (self.window.rows, self.window.cols);
        for y in 0..tile_rows {
            for x in 0..c.output {
                let position = (first_y + y) * c.output + x;
                let at = ((b * r.output * c.output) + position) * self.out_channels + first_channel;
                // SAFETY: the channels `first_channel..+rows` of one output position of image
                // `b`: inside `output` (sizes checked in `layout`), written by this task alone.
                let values = unsafe { std::slice::from_raw_parts_mut(out.at(at), rows) };
                values.copy_from_slice(&sums[(y * s.width + x) * rows..][..rows]);
                if bias.len() == 1 {
                    values.iter_mut().for_each(|v| *v += bias[0]);
                } else {
                    let bias = &bias[first_channel..][..rows];
                    values.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
                }
                let run = Run::AlongColumn {
                    column: position,
                    first_row: first_channel,
                };
                self.epilogue.apply(values, run, 0.0);
            }
        }
    }

    /// [`Self::split_phases`] at unit stride for channels-last input: each image's rows of
    /// positions (each position's channels together) zero-padded to `s.height × s.width`
    /// positions.
    fn pad_channels_last(&self, input: &[f32], s: &Shifted, padded: &mut [f32]) -> TractResult<()> {
        let (r, c) = (self.window.rows, self.window.cols);
        let channels = self.in_channels;
        let (in_row, padded_row) = (c.input * channels, s.width * channels);
        let images = input.len() / (r.input * in_row).max(1);
        let rows = images * s.height;
        ensure!(
            padded.len() >= rows * padded_row,
            "padded input buffer too small"
        );
        let (rows_part, slack) = padded.split_at_mut(rows * padded_row);
        slack.fill(0.0);
        let copied = c.input.min(s.width.saturating_sub(c.pad_before)) * channels;
        let before = (c.pad_before * channels).min(padded_row);
        let target = SharedOutput::new(rows_part);
        parallel::for_each(rows, 0, |_, row| {
            let (image, py) = (row / s.height, row % s.height);
            // SAFETY: padded row `row` lies inside `rows_part`, written by this task alone.
            let dst =
                unsafe { std::slice::from_raw_parts_mut(target.at(row * padded_row), padded_row) };
            let source = py
                .checked_sub(r.pad_before)
                .filter(|&y| y < r.input)
                .map(|y| &input[(image * r.input + y) * in_row..][..copied]);
            write_padded_row(dst, before, source);
            Ok(())
        })
    }

    /// How the gathered path splits input rows by column phase: for strides above 1 without
    /// dilation.
    fn column_phases(&self) -> Option<ColumnPhases> {
        let c = self.window.cols;
        (c.stride > 1 && c.dilation == 1 && !self.direct()).then(|| ColumnPhases::new(c))
    }

    /// im2col of output positions `start..start + width`: row `(channel, ky, kx)` of `gathered`
    /// holds the input value that tap reads for each position, zero where it reads padding.
    /// With `phases`, `planes`' rows are split by phase ([`ColumnPhases`]).
    #[inline(always)]
    fn gather(
        &self,
        planes: &[f32],
        phases: Option<&ColumnPhases>,
        start: usize,
        width: usize,
        gathered: &mut [f32],
    ) {
        let (r, c) = (self.window.rows, self.window.cols);
        let in_plane = r.input * c.input;
        let mut rows = gathered.chunks_exact_mut(width);
        for plane in planes.chunks_exact(in_plane) {
            for ky in 0..r.kernel {
                let (y_lo, y_hi) = r.valid(ky);
                for kx in 0..c.kernel {
                    let (x_lo, x_hi) = c.valid(kx);
                    let Some(row) = rows.next() else { return };
                    for (at, oy, ox, len) in output_row_runs(start, width, c.output) {
                        let segment = &mut row[at..at + len];
                        if oy < y_lo || oy >= y_hi {
                            segment.fill(0.0);
                            continue;
                        }
                        // Positions ox..ox + len; those in x_lo..x_hi read inside the input row.
                        let lo = x_lo.clamp(ox, ox + len) - ox;
                        let hi = x_hi.clamp(ox + lo, ox + len) - ox;
                        segment[..lo].iter_mut().for_each(|v| *v = 0.0);
                        segment[hi..].iter_mut().for_each(|v| *v = 0.0);
                        if lo == hi {
                            continue;
                        }
                        let iy = oy * r.stride + ky * r.dilation - r.pad_before;
                        let source = &plane[iy * c.input..][..c.input];
                        let first = (ox + lo) * c.stride + kx * c.dilation - c.pad_before;
                        let inside = &mut segment[lo..hi];
                        match phases {
                            None if c.stride == 1 => copy_run(inside, &source[first..]),
                            None => {
                                let taps = source[first..].iter().step_by(c.stride);
                                inside.iter_mut().zip(taps).for_each(|(v, s)| *v = *s);
                            }
                            Some(phases) => copy_run(inside, &source[phases.at(first)..]),
                        }
                    }
                }
            }
        }
    }
}

/// Input rows split by column phase: a row `x0 x1 x2 x3 x4` at stride 2 becomes
/// `x0 x2 x4 x1 x3`, so that the columns a strided tap reads are consecutive.
#[derive(Debug, Clone)]
struct ColumnPhases {
    width: usize,
    stride: usize,
    /// Where each phase starts in a split row.
    starts: Vec<usize>,
}

impl ColumnPhases {
    fn new(cols: Axis) -> ColumnPhases {
        let (width, stride) = (cols.input, cols.stride);
        let mut starts = Vec::with_capacity(stride);
        let mut at = 0;
        for phase in 0..stride {
            starts.push(at);
            at += width.saturating_sub(phase).div_ceil(stride);
        }
        ColumnPhases {
            width,
            stride,
            starts,
        }
    }

    /// Where column `x` of a row lies in the split row.
    #[inline(always)]
    fn at(&self, x: usize) -> usize {
        self.starts[x % self.stride] + x / self.stride
    }

    /// `input`'s rows, each split by phase, into `split` (as long).
    fn split(&self, input: &[f32], split: &mut [f32]) {
        crate::simd::widest(
            #[inline(always)]
            || {
                let rows = input.chunks_exact(self.width);
                for (row, out) in rows.zip(split.chunks_exact_mut(self.width)) {
                    for (phase, &start) in self.starts.iter().enumerate() {
                        let taps = row[phase..].iter().step_by(self.stride);
                        out[start..].iter_mut().zip(taps).for_each(|(o, v)| *o = *v);
                    }
                }
            },
        );
    }
}

/// One row of a phase plane ([`FastConv::split_phases`]): `row[x]` = the padded input row's
/// value at `x · stride + phase` (`values` after `before` zeros, zeros past them; none: a
/// padding row).
#[inline(always)]
fn split_row(
    row: &mut [f32],
    values: Option<&[f32]>,
    before: usize,
    (stride, phase): (usize, usize),
) {
    if stride == 1 {
        return write_padded_row(
            row,
            before.min(row.len()),
            values.map(|v| &v[..v.len().min(row.len().saturating_sub(before))]),
        );
    }
    let values = values.unwrap_or(&[]);
    // Columns `x` whose `x · stride + phase - before` falls inside `values`: `lo..hi`.
    let (lo, hi) = taps_inside_range(row.len(), values.len(), (stride, 1, before), phase);
    row[..lo].fill(0.0);
    row[hi..].fill(0.0);
    if lo < hi {
        let first = lo * stride + phase - before;
        let inside = &mut row[lo..hi];
        if stride == 2 {
            crate::simd::take_even(&values[first..][..2 * inside.len() - 1], inside);
        } else {
            let taken = values[first..].iter().step_by(stride);
            inside.iter_mut().zip(taken).for_each(|(v, x)| *v = *x);
        }
    }
}

/// One row of a zero-padded input: `before` zeros, then `values` (none: a padding row), then
/// zeros to the end.
fn write_padded_row(row: &mut [f32], before: usize, values: Option<&[f32]>) {
    let values = values.unwrap_or(&[]);
    let (left, rest) = row.split_at_mut(before);
    let (inside, right) = rest.split_at_mut(values.len());
    left.fill(0.0);
    inside.copy_from_slice(values);
    right.fill(0.0);
}

/// The runs of positions `start..start + width` that lie on one output row each (rows of
/// `row_len`): (offset in the tile, output row, first column, length). No division after the
/// first run, no allocation (it is walked once per gathered row).
fn output_row_runs(
    start: usize,
    width: usize,
    row_len: usize,
) -> impl Iterator<Item = (usize, usize, usize, usize)> {
    let (mut oy, mut ox) = (start / row_len.max(1), start % row_len.max(1));
    let mut done = 0;
    std::iter::from_fn(move || {
        if done >= width || row_len == 0 {
            return None;
        }
        let len = (row_len - ox).min(width - done);
        let run = (done, oy, ox, len);
        (done, oy, ox) = (done + len, oy + 1, 0);
        Some(run)
    })
}

/// Copies `src`'s first `dst.len()` values into `dst` in blocks of 8 (4 for short runs), the last
/// block overlapping the one before: a convolution's output rows are 7 to 56 values, and a
/// `memcpy` call for each cost more than the copy (im2col was 16% of Inception-v2's time).
#[inline(always)]
fn copy_run(dst: &mut [f32], src: &[f32]) {
    fn blocks<const N: usize>(dst: &mut [f32], src: &[f32]) {
        let n = dst.len();
        let mut at = 0;
        loop {
            let from = at.min(n - N);
            if let (Some(d), Some(s)) = (dst.get_mut(from..from + N), src.get(from..from + N)) {
                d.copy_from_slice(s);
            }
            if from + N >= n {
                return;
            }
            at += N;
        }
    }
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    match n {
        // Long runs: memcpy's wide vector moves beat 8-float blocks (baseline x86-64 builds
        // copy those with 16-byte moves).
        64.. => dst.copy_from_slice(src),
        8.. => blocks::<8>(dst, src),
        4..8 => blocks::<4>(dst, src),
        _ => dst.iter_mut().zip(src).for_each(|(d, s)| *d = *s),
    }
}

/// A 1-D convolution's spec and input shape as a 2-D convolution's over a single row (kernel 1,
/// stride 1, no padding on it): the same arithmetic, so one op serves both.
fn one_row(spec: &PoolSpec, shape: &[usize]) -> Option<(PoolSpec, TVec<usize>)> {
    let with = |unit: usize, values: &TVec<usize>| -> TVec<usize> {
        std::iter::once(unit)
            .chain(values.iter().copied())
            .collect()
    };
    let padding = match &spec.padding {
        PaddingSpec::Explicit(before, after) => {
            PaddingSpec::Explicit(with(0, before), with(0, after))
        }
        PaddingSpec::ExplicitOnnxPool(before, after, ceil) => {
            PaddingSpec::ExplicitOnnxPool(with(0, before), with(0, after), *ceil)
        }
        other => other.clone(),
    };
    let spec = PoolSpec {
        kernel_shape: with(1, &spec.kernel_shape),
        padding,
        dilations: spec.dilations.as_ref().map(|d| with(1, d)),
        strides: spec.strides.as_ref().map(|s| with(1, s)),
        ..spec.clone()
    };
    let mut shape: TVec<usize> = shape.into();
    shape.insert(shape.len().checked_sub(1)?, 1);
    Some((spec, shape))
}

impl ProductOp for FastConv {
    fn epilogue(&self) -> &Epilogue {
        &self.epilogue
    }

    fn with_epilogue(&self, epilogue: Epilogue) -> FastConv {
        FastConv {
            epilogue,
            ..self.clone()
        }
    }

    fn operand_axes(&self) -> (Option<usize>, Option<usize>) {
        (Some(self.channel_axis()), None)
    }
}

impl Op for FastConv {
    fn name(&self) -> StaticName {
        "FastConv".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("group {}, {:?}", self.group, self.epilogue)])
    }

    op_as_typed_op!();
}

impl EvalOp for FastConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        gemm::eval_input_kernel_bias(inputs, &self.output_shape, "a convolution", |i, k, b, o| {
            self.compute(i, k, b, o)
        })
    }
}

impl TypedOp for FastConv {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        gemm::input_kernel_bias_facts(inputs, &self.output_shape, "a convolution")
    }

    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let (r, c) = (self.window.rows, self.window.cols);
        let depth = self.in_channels / self.group * r.kernel * c.kernel;
        let points: usize = self.output_shape.iter().product();
        Ok(tvec!((
            Cost::FMA(f32::datum_type()),
            (points * depth).into()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm_common::Operand;
    use super::super::pool_2d::tests::{GEOMETRIES, data, taps_inside_window, window};
    use super::*;
    use tract_linalg::multithread::{Executor, multithread_tract_scope};

    /// The definition, output point by output point: bias plus every input channel's taps
    /// inside the input, then the epilogue written out.
    fn reference(op: &FastConv, input: &[f32], kernel: &[f32], bias: &[f32]) -> Vec<f32> {
        let (r, c) = (op.window.rows, op.window.cols);
        let (group_in, group_out) = (op.in_channels / op.group, op.out_channels / op.group);
        let taps = r.kernel * c.kernel;
        let batches = input.len() / (op.in_channels * r.input * c.input);
        let mut out = vec![];
        for b in 0..batches {
            for o in 0..op.out_channels {
                let g = o / group_out;
                for oy in 0..r.output {
                    for ox in 0..c.output {
                        let mut acc = bias[if bias.len() == 1 { 0 } else { o }];
                        for i in 0..group_in {
                            let plane = b * op.in_channels + g * group_in + i;
                            for (tap, value) in
                                taps_inside_window(&op.window, input, plane, (oy, ox))
                            {
                                acc += kernel[(o * group_in + i) * taps + tap] * value;
                            }
                        }
                        let e = &op.epilogue;
                        let scale = match &e.scale {
                            Some(Operand::PerRow(rows)) => rows[o],
                            Some(Operand::Scalar(s)) => *s,
                            _ => 1.0,
                        };
                        let add = match &e.add {
                            Some(Operand::Scalar(a)) => *a,
                            _ => 0.0,
                        };
                        let v = (acc * scale + add).max(e.low.unwrap_or(f32::MIN));
                        out.push(v.min(e.high.unwrap_or(f32::MAX)));
                    }
                }
            }
        }
        out
    }

    fn conv(window: Window2d, in_channels: usize, out_channels: usize, group: usize) -> FastConv {
        let mut output_shape = window.output_shape.clone();
        output_shape[1] = out_channels;
        FastConv {
            window,
            in_channels,
            out_channels,
            group,
            spatial: 2,
            output_shape,
            epilogue: Epilogue::default(),
            kernel_by_tap: false,
            channels_last: false,
            tap_products: false,
            kernel_packed: false,
        }
    }

    #[test]
    fn matches_the_definition_over_geometries_groups_epilogues_and_threads() {
        // `window` makes 2 batches × 3 channels. Plain and grouped, one bias per output channel
        // or one for all, with and without a fused BatchNorm + ReLU6; on one thread and on two
        // (tasks split by tile and by rows of output channels).
        let mut windows: Vec<Window2d> = GEOMETRIES.into_iter().map(window).collect();
        windows.push(window((6, 1, 1, 1, 0))); // 1×1, read as it is: no gather
        windows.push(window((7, 1, 2, 1, 0))); // 1×1 at stride 2
        // Unit stride, wide enough for one product per tap: unpadded (read as it is), dilated,
        // and tall enough for several tiles of rows.
        windows.push(window((24, 3, 1, 1, 0)));
        windows.push(window((20, 3, 1, 2, 2)));
        windows.push(window((70, 3, 1, 1, 1)));
        // 3 input channels run gathered; 16 also one product per tap where the plane is wide.
        let channel_layouts = [
            (3, [(4, 1), (6, 3), (40, 1)]),
            (16, [(4, 1), (8, 2), (40, 1)]),
        ];
        for (window, (in_channels, layouts)) in windows
            .iter()
            .flat_map(|w| channel_layouts.iter().map(move |c| (w, c)))
        {
            for &(out_channels, group) in layouts {
                let mut op = conv(window.clone(), *in_channels, out_channels, group);
                let depth = in_channels / group * window.rows.kernel * window.cols.kernel;
                let input: Vec<f32> = match in_channels {
                    3 => data(window),
                    _ => (0..2 * in_channels * window.rows.input * window.cols.input)
                        .map(|i| ((i * 53 % 97) as f32) - 40.0)
                        .collect(),
                };
                let kernel: Vec<f32> = (0..out_channels * depth)
                    .map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0)
                    .collect();
                let per_channel: Vec<f32> =
                    (0..out_channels).map(|o| o as f32 / 4.0 - 1.0).collect();
                for (bias, epilogue) in [
                    (per_channel.clone(), Epilogue::default()),
                    (
                        vec![0.25],
                        Epilogue {
                            scale: Some(Operand::PerRow(per_channel.clone().into())),
                            add: Some(Operand::Scalar(0.5)),
                            low: Some(0.0),
                            high: Some(6.0),
                        },
                    ),
                ] {
                    op.epilogue = epilogue;
                    let expected = reference(&op, &input, &kernel, &bias);
                    // Where the convolution reads its kernel by tap, also as a plan gives it:
                    // rearranged once, beforehand.
                    let mut by_tap = op.clone();
                    by_tap.kernel_by_tap = true;
                    let mut variants = vec![(by_tap.clone(), kernel.clone())];
                    variants[0].0.kernel_by_tap = false;
                    if op.reads_kernel_by_tap() {
                        variants.push((by_tap, op.kernel_by_tap(&kernel)));
                    }
                    // On the tap products' kernel where this CPU has it (at any depth, not only
                    // where a plan chooses it), with the kernel as it comes and packed as a plan
                    // packs it.
                    if tap_products::Kernel::best() != tap_products::Kernel::Portable
                        && !op.channels_last
                    {
                        let mut taps = op.clone();
                        taps.tap_products = true;
                        variants.push((taps.clone(), kernel.clone()));
                        taps.kernel_packed = true;
                        variants.push((taps, op.packed_kernel(&kernel)));
                    }
                    for (threads, (op, kernel)) in [1, 2]
                        .into_iter()
                        .flat_map(|t| variants.iter().map(move |v| (t, v)))
                    {
                        let mut out = vec![f32::NAN; op.output_shape.iter().product()];
                        multithread_tract_scope(Executor::multithread(threads), || {
                            op.compute(&input, kernel, &bias, &mut out)
                        })
                        .unwrap();
                        for (i, (got, want)) in out.iter().zip(&expected).enumerate() {
                            assert!(
                                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                                "{:?} {out_channels}/{group} {threads} thread(s): element {i} is {got}, expected {want}",
                                (window.rows, window.cols)
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn channels_last_matches_channels_first_transposed() {
        // [N, C, H, W] data transposed to [N, H, W, C]; the output transposed back must be the
        // channels-first result. Padded and not, grouped, with a per-channel bias and BatchNorm.
        let to_last = |values: &[f32], (n, c, hw): (usize, usize, usize)| {
            let mut out = vec![0.0; values.len()];
            for b in 0..n {
                for ch in 0..c {
                    for p in 0..hw {
                        out[(b * hw + p) * c + ch] = values[(b * c + ch) * hw + p];
                    }
                }
            }
            out
        };
        for geometry in [(24, 3, 1, 1, 0), (20, 3, 1, 2, 2), (70, 3, 1, 1, 1)] {
            let window = window(geometry);
            for (out_channels, group) in [(40, 1), (6, 3)] {
                let mut first = conv(window.clone(), 3, out_channels, group);
                first.epilogue = Epilogue {
                    scale: Some(Operand::PerRow(
                        (0..out_channels).map(|o| 1.0 - o as f32 / 64.0).collect(),
                    )),
                    add: None,
                    low: Some(-20.0),
                    high: None,
                };
                let mut last = first.clone();
                last.channels_last = true;
                last.output_shape = tvec![2, window.rows.output, window.cols.output, out_channels];
                assert!(last.reads_kernel_by_tap());
                let depth = 3 / group * window.rows.kernel * window.cols.kernel;
                let input = data(&window);
                let kernel: Vec<f32> = (0..out_channels * depth)
                    .map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0)
                    .collect();
                let bias: Vec<f32> = (0..out_channels).map(|o| o as f32 / 4.0 - 1.0).collect();
                let in_plane = window.rows.input * window.cols.input;
                let out_plane = window.rows.output * window.cols.output;
                let mut expected = vec![f32::NAN; 2 * out_channels * out_plane];
                first
                    .compute(&input, &kernel, &bias, &mut expected)
                    .unwrap();
                let expected = to_last(&expected, (2, out_channels, out_plane));
                let input = to_last(&input, (2, 3, in_plane));
                for (threads, kernel) in [(1, kernel.clone()), (2, last.kernel_by_tap(&kernel))] {
                    let mut op = last.clone();
                    op.kernel_by_tap = threads == 2;
                    let mut out = vec![f32::NAN; expected.len()];
                    multithread_tract_scope(Executor::multithread(threads), || {
                        op.compute(&input, &kernel, &bias, &mut out)
                    })
                    .unwrap();
                    for (i, (got, want)) in out.iter().zip(&expected).enumerate() {
                        assert!(
                            (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                            "{geometry:?} {out_channels}/{group}: element {i} is {got}, expected {want}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_1d_convolution_is_one_row_of_a_2d_one() {
        use tessera_core::tract_onnx::tract_core::ops::nn::DataFormat;
        // Grouped, strided, dilated, padded unevenly: [2, 4, 19] → [2, 6, 9].
        let (stride, dilation, pad, taps, length) = (2, 2, 1, 3, 19);
        let conv = Conv {
            pool_spec: PoolSpec {
                data_format: DataFormat::NCHW,
                kernel_shape: tvec![taps],
                padding: PaddingSpec::Explicit(tvec![pad], tvec![2]),
                dilations: Some(tvec![dilation]),
                strides: Some(tvec![stride]),
                input_channels: 4,
                output_channels: 6,
            },
            kernel_fmt: KernelFormat::OIHW,
            group: 2,
            q_params: None,
        };
        let op = FastConv::for_op(&conv, &[2, 4, length]).expect("a 1-D convolution");
        assert_eq!(&op.output_shape[..], &[2, 6, 9]);
        let input: Vec<f32> = (0..2 * 4 * length)
            .map(|i| ((i * 53 % 97) as f32) - 40.0)
            .collect();
        let kernel: Vec<f32> = (0..6 * 2 * taps)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 8.0)
            .collect();
        let bias: Vec<f32> = (0..6).map(|o| o as f32 - 2.5).collect();
        let mut out = vec![f32::NAN; 2 * 6 * 9];
        op.compute(&input, &kernel, &bias, &mut out).unwrap();
        for b in 0..2 {
            for o in 0..6 {
                for x in 0..9 {
                    let mut want = bias[o];
                    for i in 0..2 {
                        let channel = o / 3 * 2 + i;
                        for t in 0..taps {
                            let at = (x * stride + t * dilation) as isize - pad as isize;
                            if (0..length as isize).contains(&at) {
                                let value = input[(b * 4 + channel) * length + at as usize];
                                want += kernel[(o * 2 + i) * taps + t] * value;
                            }
                        }
                    }
                    let got = out[(b * 6 + o) * 9 + x];
                    assert!(
                        (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                        "[{b}, {o}, {x}]: {got}, expected {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_kernel_bias_or_input_of_the_wrong_size_is_an_error() {
        let op = conv(window(GEOMETRIES[0]), 3, 4, 1);
        let input = data(&op.window);
        let mut out = vec![0.0; op.output_shape.iter().product()];
        let kernel = vec![0.0; 4 * 27];
        assert!(op.compute(&input, &kernel[1..], &[0.0], &mut out).is_err());
        assert!(op.compute(&input, &kernel, &[0.0; 3], &mut out).is_err());
        assert!(op.compute(&input[1..], &kernel, &[0.0], &mut out).is_err());
        assert!(op.compute(&input, &kernel, &[0.0], &mut out[1..]).is_err());
    }
}
