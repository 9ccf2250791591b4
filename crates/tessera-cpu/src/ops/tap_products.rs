//! An AVX-512 micro-kernel for convolutions read straight from their (padded) input planes:
//! `sums[j][p] = Σ_k weights[k][j] · input[offsets[k] + p]` for a block of output channels `j`
//! and a run of positions `p`, where `k` walks the input channels and kernel taps and
//! `offsets[k]` says where tap `k`'s values start. No gathered (im2col) matrix, no packing per
//! run: the weights are packed once per plan ([`pack_weights`]), the input is read where it lies.
//!
//! The `gemm` crate's kernels ran Inception's and SqueezeNet's 3×3 convolutions at 85-100
//! GMAC/s on one Zen 5 core where onnxruntime's direct NCHWc kernels reach 125-130: the shifted
//! taps' 9 products of depth `C` each store and reload their sums 9 times, and a gathered matrix
//! is a copy of the input 9 times over and packed again. Here the sums of a tile stay in 24
//! registers over the whole depth (`C · kh · kw`), 4 vectors of 16 positions by 6 channels, as in
//! onnxruntime's NCHWc kernels, but over channels-first planes. CPUs with AVX2 and FMA but no
//! AVX-512 (Zen 3, most desktop and laptop x86) run the same tiles on their 16 registers: 2
//! vectors of 8 positions by 6 channels.

use tessera_core::tract_onnx::tract_core::internal::*;

/// What the kernels do to a channel's sums before they store them, in registers: one row of a
/// product's epilogue (`gemm_common::Epilogue::row_finish`), bit for bit as its `apply`: `(s + shift) · scale + add` when `affine` is `[shift, scale, add]`, then
/// `max(·, low)`, then `min(·, high)` as compare-and-select (infinite bounds change nothing, NaN
/// included).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowFinish {
    pub affine: Option<[f32; 3]>,
    pub low: f32,
    pub high: f32,
}

impl RowFinish {
    /// Leaves every value as it is.
    pub const NONE: RowFinish = RowFinish {
        affine: None,
        low: f32::NEG_INFINITY,
        high: f32::INFINITY,
    };

    /// One value finished (the reference the vector kernels match).
    #[inline(always)]
    pub fn apply(&self, s: f32) -> f32 {
        let x = match self.affine {
            Some([shift, scale, add]) => (s + shift) * scale + add,
            None => s,
        };
        let x = if x < self.low { self.low } else { x };
        if x > self.high { self.high } else { x }
    }
}

/// Output channels per micro-tile.
pub const CHANNELS: usize = 6;
/// Positions per AVX-512 vector.
#[cfg(target_arch = "x86_64")]
pub const LANES: usize = 16;
/// AVX-512 vectors of positions per micro-tile.
#[cfg(any(target_arch = "x86_64", test))]
pub const VECTORS: usize = 4;

/// Values [`pack_weights_into`] writes for `rows` channels of depth `depth`.
pub fn packed_len(rows: usize, depth: usize) -> usize {
    rows.div_ceil(CHANNELS) * depth * CHANNELS
}

/// [`pack_weights_into`] a new zero-filled vector.
#[cfg(test)]
pub fn pack_weights(weights: &[f32], rows: usize, depth: usize) -> Vec<f32> {
    let mut packed = vec![0.0; packed_len(rows, depth)];
    pack_weights_into(weights, rows, depth, &mut packed);
    packed
}

/// `weights` (`rows × depth`, row-major: one row per output channel) packed for [`products`]
/// into `packed`, zero-filled and [`packed_len`] long: blocks of [`CHANNELS`] channels, each
/// `depth × CHANNELS` (k-major), the last block's missing channels left zero.
pub fn pack_weights_into(weights: &[f32], rows: usize, depth: usize, packed: &mut [f32]) {
    for (row, values) in weights.chunks_exact(depth.max(1)).take(rows).enumerate() {
        let (block, j) = (row / CHANNELS, row % CHANNELS);
        let Some(block) = packed.get_mut(block * depth * CHANNELS..(block + 1) * depth * CHANNELS)
        else {
            return;
        };
        for (k, &w) in values.iter().enumerate() {
            block[k * CHANNELS + j] = w;
        }
    }
}

/// The register-blocked kernels [`products`] can run on; `Portable` is the reference loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        for kernel in [Kernel::Avx512, Kernel::Avx2] {
            if kernel.runs_here() {
                return kernel;
            }
        }
        Kernel::Portable
    }

    /// Whether the kernel stores only the kept columns of padded rows ([`Destination::kept`]):
    /// AVX-512 compresses each vector's kept lanes in a register; AVX2 has no such instruction.
    pub fn keeps_columns(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => false,
            Kernel::Portable => true,
        }
    }

    /// Whether this CPU has the kernel's instructions.
    pub fn runs_here(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            Kernel::Portable => true,
        }
    }

    /// Every kernel this CPU runs, fastest first.
    #[cfg(test)]
    pub fn on_this_cpu() -> Vec<Kernel> {
        #[cfg(target_arch = "x86_64")]
        let vector_kernels = [Kernel::Avx512, Kernel::Avx2];
        #[cfg(not(target_arch = "x86_64"))]
        let vector_kernels: [Kernel; 0] = [];
        vector_kernels
            .into_iter()
            .filter(|kernel| kernel.runs_here())
            .chain([Kernel::Portable])
            .collect()
    }
}

/// Where [`products_to`] stores channel `j`'s (finished) sum for position `p`: at `at + j · row +
/// p`, or with `kept = Some((width, kept))` — positions in rows of `width` of which the first
/// `kept` are outputs, as in a zero-padded plane — only those, one after the other (position `p`
/// at `(p / width) · kept + p % width`).
#[derive(Clone, Copy, Debug)]
pub struct Destination {
    pub at: *mut f32,
    pub row: usize,
    pub kept: Option<(usize, usize)>,
}

/// `sums[j · sums_row + p] = finish(j)(Σ_k packed[k][j] · input[offsets[k] + p])` for channels
/// `j` in `0..channels` and positions `p` in `0..positions`.
///
/// `packed` is [`pack_weights`]'s layout for (at least) `channels` rows of depth `offsets.len()`;
/// `input` must hold `offsets[k] + positions` values for every `k`, and the other operands
/// their sizes (checked: an error otherwise).
pub fn products(
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    (channels, positions): (usize, usize),
    finish: &dyn Fn(usize) -> RowFinish,
    sums: &mut [f32],
    sums_row: usize,
) -> TractResult<()> {
    ensure!(
        channels == 0
            || positions == 0
            || (sums.len() >= (channels - 1) * sums_row + positions && sums_row >= positions),
        "tap products: the sums are smaller than their geometry"
    );
    let to = Destination {
        at: sums.as_mut_ptr(),
        row: sums_row,
        kept: None,
    };
    // SAFETY: `sums` holds the rows written (checked just above) and is borrowed mutably.
    unsafe { products_to(input, offsets, packed, (channels, positions), finish, to) }
}

/// [`products`] into `to`, which may be rows of a larger output that other threads write
/// elsewhere in; `to.kept` only where [`Kernel::keeps_columns`] of [`Kernel::best`].
///
/// SAFETY: what `to` says is written, for `channels` rows and `positions` positions, must be
/// writable and written by no other thread meanwhile.
pub unsafe fn products_to(
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    (channels, positions): (usize, usize),
    finish: &dyn Fn(usize) -> RowFinish,
    to: Destination,
) -> TractResult<()> {
    // SAFETY: the caller's, passed on.
    unsafe {
        products_on(
            Kernel::best(),
            input,
            offsets,
            packed,
            (channels, positions),
            finish,
            to,
        )
    }
}

/// [`products_to`] on `kernel`, which must run on this CPU ([`Kernel::runs_here`]).
///
/// SAFETY: as [`products_to`].
unsafe fn products_on(
    kernel: Kernel,
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    (channels, positions): (usize, usize),
    finish: &dyn Fn(usize) -> RowFinish,
    to: Destination,
) -> TractResult<()> {
    let depth = offsets.len();
    if channels == 0 || positions == 0 {
        return Ok(());
    }
    let reach = offsets.iter().max().map_or(0, |&o| o + positions);
    ensure!(
        input.len() >= reach && packed.len() >= packed_len(channels, depth),
        "tap products: an operand is smaller than its geometry"
    );
    ensure!(
        kernel.runs_here(),
        "tap products: the {kernel:?} kernel does not run on this CPU"
    );
    if let Some((width, kept)) = to.kept {
        ensure!(
            kernel.keeps_columns() && 0 < kept && kept <= width,
            "tap products: the {kernel:?} kernel cannot keep {kept} of {width} columns"
        );
    }
    #[cfg(target_arch = "x86_64")]
    match kernel {
        // SAFETY (both): the CPU has the kernel's features (checked just above); `input` and
        // `packed` sizes were checked above, `to` is the caller's.
        Kernel::Avx512 => {
            unsafe { products_avx512(input, offsets, packed, (channels, positions), finish, to) };
            return Ok(());
        }
        Kernel::Avx2 => {
            unsafe { products_avx2(input, offsets, packed, (channels, positions), finish, to) };
            return Ok(());
        }
        Kernel::Portable => {}
    }
    for j in 0..channels {
        let (block, lane) = (j / CHANNELS, j % CHANNELS);
        let weights = &packed[block * depth * CHANNELS..];
        let finish = finish(j);
        for p in 0..positions {
            let index = match to.kept {
                None => p,
                Some((width, kept)) if p % width < kept => p / width * kept + p % width,
                Some(_) => continue,
            };
            let sum = offsets.iter().enumerate().fold(0.0, |sum, (k, &offset)| {
                sum + weights[k * CHANNELS + lane] * input[offset + p]
            });
            // SAFETY: channel `j`'s value for position `p`, the caller's.
            unsafe { *to.at.add(j * to.row + index) = finish.apply(sum) };
        }
    }
    Ok(())
}

/// The finishes of the channels of `block` (the first `rows` of them).
#[cfg(target_arch = "x86_64")]
fn block_finishes(
    finish: &dyn Fn(usize) -> RowFinish,
    block: usize,
    rows: usize,
) -> [RowFinish; CHANNELS] {
    let mut finishes = [RowFinish::NONE; CHANNELS];
    for (j, f) in finishes.iter_mut().enumerate().take(rows) {
        *f = finish(block * CHANNELS + j);
    }
    finishes
}

/// Where the vector of positions `first..first + lanes` goes in `to`'s rows: the offset of its
/// first kept value and the mask of its kept lanes.
#[cfg(target_arch = "x86_64")]
fn vector_store(to: &Destination, first: usize, lanes: usize) -> (usize, u16) {
    let Some((width, kept)) = to.kept else {
        return (first, ((1u32 << lanes) - 1) as u16);
    };
    // Row by row: the row under lane 0 starts `first % width` lanes before it, and each row's
    // first `kept` columns are kept.
    let lanes_below = |lane: isize| -> u32 { (1u32 << lane.clamp(0, lanes as isize)) - 1 };
    let mut mask = 0u32;
    let mut row_start = -((first % width) as isize);
    while row_start < lanes as isize {
        mask |= lanes_below(row_start + kept as isize) & !lanes_below(row_start);
        row_start += width as isize;
    }
    let mask = mask as u16;
    (first / width * kept + (first % width).min(kept), mask)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn products_avx512(
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    (channels, positions): (usize, usize),
    finish: &dyn Fn(usize) -> RowFinish,
    to: Destination,
) {
    let depth = offsets.len();
    for block in 0..channels.div_ceil(CHANNELS) {
        let rows = (channels - block * CHANNELS).min(CHANNELS);
        let weights = packed[block * depth * CHANNELS..].as_ptr();
        let finishes = block_finishes(finish, block, rows);
        let out = Destination {
            // SAFETY: the block's first row, the caller's.
            at: unsafe { to.at.add(block * CHANNELS * to.row) },
            ..to
        };
        let mut p = 0;
        while p < positions {
            let vectors = tile_vectors((positions - p).div_ceil(LANES));
            let n = (positions - p).min(vectors * LANES);
            let mut stores = [(0, 0); VECTORS];
            for (v, store) in stores.iter_mut().enumerate().take(vectors) {
                let first = p + v * LANES;
                *store = vector_store(&out, first, (p + n - first).min(LANES));
            }
            let tile = Tile {
                rows,
                tail: n - (vectors - 1) * LANES,
                stores: &stores,
                finishes: &finishes,
                out: &out,
            };
            // SAFETY: (for all) every load reads `input[offsets[k] + p..][..n]`, inside `input`
            // (`reach` was checked); stores write `rows` rows of the kept positions of
            // `p..p + n`, the caller's; `weights` holds `depth × CHANNELS` values from the block
            // (checked).
            unsafe {
                let base = input.as_ptr().add(p);
                match vectors {
                    4 => tile_kernel::<4>(base, offsets, weights, tile),
                    3 => tile_kernel::<3>(base, offsets, weights, tile),
                    2 => tile_kernel::<2>(base, offsets, weights, tile),
                    _ => tile_kernel::<1>(base, offsets, weights, tile),
                }
            }
            p += n;
        }
    }
}

/// How a micro-tile stores its sums: `rows` channels of `out`, each vector `v` of positions
/// finished by its channel's finish and stored under `stores[v]` = (offset in the row, mask of
/// kept lanes), compressed to consecutive values when `out` keeps columns. The last vector holds
/// `tail` positions (1 to 16).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Tile<'a> {
    rows: usize,
    tail: usize,
    stores: &'a [(usize, u16); VECTORS],
    finishes: &'a [RowFinish; CHANNELS],
    out: &'a Destination,
}

#[cfg(any(target_arch = "x86_64", test))]
/// Vectors of the next micro-tile when `left` vectors of positions remain: 4 where that leaves
/// no tile of 1 or 2 behind, else 3 (13 vectors as 3 + 3 + 4 + 3, not 4 + 4 + 4 + 1: a tile of
/// one vector loads 6 weights for 6 products and ran at a third of the speed).
fn tile_vectors(left: usize) -> usize {
    match left {
        0..=VECTORS => left,
        _ if left.is_multiple_of(VECTORS) || left % VECTORS == VECTORS - 1 => VECTORS,
        _ => VECTORS - 1,
    }
}

/// One micro-tile: `V` vectors of positions by [`CHANNELS`] channels, summed over every `k` in
/// registers (the last vector's lanes past the positions not loaded: they may lie past the
/// input), then finished and stored as `tile` says.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
// Indexes, not iterators, over the register block: it must unroll into named registers.
#[allow(clippy::needless_range_loop)]
unsafe fn tile_kernel<const V: usize>(
    input: *const f32,
    offsets: &[usize],
    weights: *const f32,
    tile: Tile,
) {
    use std::arch::x86_64::*;
    // The last vector's lanes that lie inside the positions.
    let last_lanes = ((1u32 << tile.tail) - 1) as __mmask16;
    let mut acc = [[_mm512_setzero_ps(); CHANNELS]; V];
    for (k, &offset) in offsets.iter().enumerate() {
        // SAFETY: the caller's: tap `k`'s `V` vectors (the last masked) lie inside the input,
        // and its `CHANNELS` weights inside the block.
        unsafe {
            let a = input.add(offset);
            // The next micro-tile's values of this tap: the first sweep over a large input
            // reads hundreds of rows at once, more than the hardware prefetchers follow.
            for v in 0..V {
                _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add((V + v) * LANES) as *const i8);
            }
            let mut x = [_mm512_setzero_ps(); V];
            for (v, x) in x.iter_mut().enumerate() {
                *x = if v + 1 == V {
                    _mm512_maskz_loadu_ps(last_lanes, a.add(v * LANES))
                } else {
                    _mm512_loadu_ps(a.add(v * LANES))
                };
            }
            let w = weights.add(k * CHANNELS);
            for j in 0..CHANNELS {
                let b = _mm512_set1_ps(*w.add(j));
                for v in 0..V {
                    acc[v][j] = _mm512_fmadd_ps(x[v], b, acc[v][j]);
                }
            }
        }
    }
    let compress = tile.out.kept.is_some();
    for j in 0..tile.rows {
        let finish = tile.finishes[j];
        let (low, high) = (_mm512_set1_ps(finish.low), _mm512_set1_ps(finish.high));
        let affine = finish
            .affine
            .map(|values| values.map(|v| _mm512_set1_ps(v)));
        for v in 0..V {
            let mut x = acc[v][j];
            // Not fused into FMAs: the same roundings as `RowFinish::apply`.
            if let Some([shift, scale, add]) = affine {
                x = _mm512_add_ps(_mm512_mul_ps(_mm512_add_ps(x, shift), scale), add);
            }
            // `max(low, x)` keeps `x` unless `low > x`: a NaN stays, as in `RowFinish::apply`.
            x = _mm512_min_ps(high, _mm512_max_ps(low, x));
            let (first, mask) = tile.stores[v];
            // SAFETY: the caller's: row `j`'s kept values of vector `v` lie inside `out` from
            // `first`.
            unsafe {
                let at = tile.out.at.add(j * tile.out.row + first);
                if compress {
                    let kept = ((1u32 << mask.count_ones()) - 1) as u16;
                    _mm512_mask_storeu_ps(at, kept, _mm512_maskz_compress_ps(mask, x));
                } else {
                    _mm512_mask_storeu_ps(at, mask, x);
                }
            }
        }
    }
}

/// Positions per AVX2 vector.
#[cfg(target_arch = "x86_64")]
const AVX2_LANES: usize = 8;

/// [`products_avx512`] on AVX2 and FMA: micro-tiles of 2 vectors of 8 positions by [`CHANNELS`]
/// channels (12 sums, 2 input vectors and a broadcast weight: 15 of the 16 registers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn products_avx2(
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    (channels, positions): (usize, usize),
    finish: &dyn Fn(usize) -> RowFinish,
    to: Destination,
) {
    let depth = offsets.len();
    let sums_row = to.row;
    for block in 0..channels.div_ceil(CHANNELS) {
        let rows = (channels - block * CHANNELS).min(CHANNELS);
        let weights = packed[block * depth * CHANNELS..].as_ptr();
        let finishes = block_finishes(finish, block, rows);
        let finishes = &finishes;
        // SAFETY: the block's first row of the sums, the caller's.
        let out = unsafe { to.at.add(block * CHANNELS * sums_row) };
        let mut p = 0;
        while p < positions {
            let n = (positions - p).min(2 * AVX2_LANES);
            let tail = n - (n - 1) / AVX2_LANES * AVX2_LANES;
            // SAFETY: (for all) every load reads `input[offsets[k] + p..][..n]`, inside `input`
            // (`reach` was checked); stores write `rows` rows of `n` values from `p`, the
            // caller's; `weights` holds `depth × CHANNELS` values from the block (checked).
            unsafe {
                let base = input.as_ptr().add(p);
                let tile = Avx2Tile {
                    out: out.add(p),
                    out_row: sums_row,
                    finishes,
                    rows,
                    tail,
                };
                match (n > AVX2_LANES, tail == AVX2_LANES) {
                    (true, true) => tile_kernel_avx2::<2, false>(base, offsets, weights, tile),
                    (true, false) => tile_kernel_avx2::<2, true>(base, offsets, weights, tile),
                    (false, true) => tile_kernel_avx2::<1, false>(base, offsets, weights, tile),
                    (false, false) => tile_kernel_avx2::<1, true>(base, offsets, weights, tile),
                }
            }
            p += n;
        }
    }
}

/// Where an AVX2 micro-tile stores: `rows` rows of `out`, `out_row` apart, each finished by its
/// channel's finish; the last vector holds `tail` positions.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Avx2Tile<'a> {
    out: *mut f32,
    out_row: usize,
    finishes: &'a [RowFinish; CHANNELS],
    rows: usize,
    tail: usize,
}

/// One AVX2 micro-tile: `V` vectors of 8 positions (the last holding `tile.tail` of them, loaded
/// and stored under a mask when `MASKED`) by [`CHANNELS`] channels (the first `tile.rows`
/// stored).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)]
unsafe fn tile_kernel_avx2<const V: usize, const MASKED: bool>(
    input: *const f32,
    offsets: &[usize],
    weights: *const f32,
    tile: Avx2Tile,
) {
    let Avx2Tile {
        out,
        out_row,
        finishes,
        rows,
        tail,
    } = tile;
    use std::arch::x86_64::*;
    // Lanes below `tail` on: a window of eight into eight -1s followed by eight 0s.
    const ONES_THEN_ZEROS: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
    // SAFETY: `tail` is 1..=8, so the eight values read lie inside the table.
    let mask = unsafe {
        _mm256_loadu_si256(ONES_THEN_ZEROS.as_ptr().add(AVX2_LANES - tail) as *const __m256i)
    };
    let mut acc = [[_mm256_setzero_ps(); CHANNELS]; V];
    for (k, &offset) in offsets.iter().enumerate() {
        // SAFETY: the caller's: tap `k`'s `V` vectors (the last masked when `MASKED`) lie
        // inside the input, and its `CHANNELS` weights inside the block.
        unsafe {
            let a = input.add(offset);
            for v in 0..V {
                _mm_prefetch::<_MM_HINT_T0>(a.wrapping_add((V + v) * AVX2_LANES) as *const i8);
            }
            let mut x = [_mm256_setzero_ps(); V];
            for (v, x) in x.iter_mut().enumerate() {
                *x = if MASKED && v + 1 == V {
                    _mm256_maskload_ps(a.add(v * AVX2_LANES), mask)
                } else {
                    _mm256_loadu_ps(a.add(v * AVX2_LANES))
                };
            }
            let w = weights.add(k * CHANNELS);
            for j in 0..CHANNELS {
                let b = _mm256_broadcast_ss(&*w.add(j));
                for v in 0..V {
                    acc[v][j] = _mm256_fmadd_ps(x[v], b, acc[v][j]);
                }
            }
        }
    }
    for j in 0..rows {
        let finish = finishes[j];
        let (low, high) = (_mm256_set1_ps(finish.low), _mm256_set1_ps(finish.high));
        let affine = finish
            .affine
            .map(|values| values.map(|v| _mm256_set1_ps(v)));
        for v in 0..V {
            let mut x = acc[v][j];
            // As the AVX-512 kernel's finish: `RowFinish::apply`'s roundings and NaNs.
            if let Some([shift, scale, add]) = affine {
                x = _mm256_add_ps(_mm256_mul_ps(_mm256_add_ps(x, shift), scale), add);
            }
            x = _mm256_min_ps(high, _mm256_max_ps(low, x));
            // SAFETY: the caller's: row `j`'s `V` vectors (the last masked when `MASKED`) lie
            // inside `out`.
            unsafe {
                let at = out.add(j * out_row + v * AVX2_LANES);
                if MASKED && v + 1 == V {
                    _mm256_maskstore_ps(at, mask, x);
                } else {
                    _mm256_storeu_ps(at, x);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_tiles_cover_the_vectors_with_no_tile_under_three_where_they_can() {
        for total in 1..40 {
            let (mut left, mut tiles) = (total, vec![]);
            while left > 0 {
                tiles.push(tile_vectors(left));
                left -= tiles[tiles.len() - 1];
            }
            assert_eq!(tiles.iter().sum::<usize>(), total);
            if total >= 3 && total != 5 {
                assert!(tiles.iter().all(|&t| t >= 3), "{total}: {tiles:?}");
            }
        }
    }

    /// [`products_on`] into `channels` rows of `row` NaNs, returned.
    fn run(
        kernel: Kernel,
        input: &[f32],
        offsets: &[usize],
        packed: &[f32],
        (channels, positions): (usize, usize),
        finish: &dyn Fn(usize) -> RowFinish,
        (row, kept): (usize, Option<(usize, usize)>),
    ) -> Vec<f32> {
        let mut sums = vec![f32::NAN; channels * row];
        let to = Destination {
            at: sums.as_mut_ptr(),
            row,
            kept,
        };
        // SAFETY: `sums` holds `channels` rows of `row` values, at least what `to` keeps.
        unsafe {
            products_on(
                kernel,
                input,
                offsets,
                packed,
                (channels, positions),
                finish,
                to,
            )
        }
        .unwrap();
        sums
    }

    #[test]
    fn products_match_the_definition_for_every_tile_shape_on_every_kernel_of_this_cpu() {
        let depth_offsets: Vec<usize> = (0..13).map(|k| (k * 37) % 50 + k).collect();
        let input: Vec<f32> = (0..400).map(|i| ((i * 31 % 23) as f32) - 11.0).collect();
        for kernel in Kernel::on_this_cpu() {
            for channels in [1, 5, 6, 7, 13] {
                for positions in [1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 64, 65, 130] {
                    let weights: Vec<f32> = (0..channels * depth_offsets.len())
                        .map(|i| ((i * 7 % 11) as f32) * 0.5 - 2.0)
                        .collect();
                    let packed = pack_weights(&weights, channels, depth_offsets.len());
                    let expected = |j: usize, p: usize| -> f32 {
                        depth_offsets
                            .iter()
                            .enumerate()
                            .map(|(k, &o)| weights[j * depth_offsets.len() + k] * input[o + p])
                            .sum()
                    };
                    let near = |got: f32, expected: f32| {
                        (got - expected).abs() <= 1e-4 * expected.abs().max(1.0)
                    };
                    let what = format!("{kernel:?}, {channels} channels, {positions} positions");
                    let geometry = (channels, positions);
                    let none = |_: usize| RowFinish::NONE;
                    // Rows of every position, 3 apart past the last.
                    let row = positions + 3;
                    let sums = run(
                        kernel,
                        &input,
                        &depth_offsets,
                        &packed,
                        geometry,
                        &none,
                        (row, None),
                    );
                    for j in 0..channels {
                        for p in 0..positions {
                            let got = sums[j * row + p];
                            assert!(near(got, expected(j, p)), "{what}: [{j}][{p}] {got}");
                        }
                        // Masked stores end at the row's last position.
                        assert!(
                            sums[j * row + positions..][..3].iter().all(|s| s.is_nan()),
                            "{what}: row {j} written past its end"
                        );
                    }
                    if !kernel.keeps_columns() {
                        continue;
                    }
                    // Padded rows: only the first `kept` of each `width` stored, one after the other.
                    for (width, kept) in [(1, 1), (4, 3), (7, 5), (15, 13), (16, 16), (18, 16)] {
                        let outputs = positions / width * kept + (positions % width).min(kept);
                        let row = outputs + 2;
                        let to = (row, Some((width, kept)));
                        let sums =
                            run(kernel, &input, &depth_offsets, &packed, geometry, &none, to);
                        for j in 0..channels {
                            let stored = (0..positions).filter(|p| p % width < kept);
                            for (index, p) in stored.enumerate() {
                                let got = sums[j * row + index];
                                assert!(
                                    near(got, expected(j, p)),
                                    "{what}, {kept} of {width}: [{j}][{p}] at {index}: {got}"
                                );
                            }
                            assert!(
                                sums[j * row + outputs..][..2].iter().all(|s| s.is_nan()),
                                "{what}, {kept} of {width}: row {j} written past its end"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn finished_products_are_the_finish_of_the_products_bit_for_bit_on_every_kernel() {
        let offsets: Vec<usize> = (0..9).map(|k| k * 5).collect();
        // Sums of both signs, zeros and a NaN among them.
        let mut input: Vec<f32> = (0..200)
            .map(|i| ((i * 13 % 17) as f32) * 0.37 - 3.0)
            .collect();
        input[61] = f32::NAN;
        let finishes = [
            RowFinish::NONE,
            RowFinish {
                affine: Some([0.25, 1.5, -0.75]),
                low: 0.0,
                high: f32::INFINITY,
            },
            RowFinish {
                affine: Some([0.0, 1.0, 0.0]),
                low: 0.0,
                high: 6.0,
            },
            RowFinish {
                affine: None,
                low: -1.0,
                high: f32::INFINITY,
            },
            RowFinish {
                affine: Some([-0.5, -2.0, 0.125]),
                low: f32::NEG_INFINITY,
                high: f32::INFINITY,
            },
            RowFinish {
                affine: Some([1.0, 0.5, 0.0]),
                low: -2.0,
                high: 2.0,
            },
            RowFinish {
                affine: None,
                low: f32::NEG_INFINITY,
                high: 0.5,
            },
        ];
        let channels = finishes.len();
        let weights: Vec<f32> = (0..channels * offsets.len())
            .map(|i| ((i * 7 % 11) as f32) * 0.25 - 1.25)
            .collect();
        let packed = pack_weights(&weights, channels, offsets.len());
        for kernel in Kernel::on_this_cpu() {
            for positions in [1, 16, 37, 64, 100] {
                let geometry = (channels, positions);
                let none = |_: usize| RowFinish::NONE;
                let finish = |j: usize| finishes[j];
                let to = (positions, None);
                let plain = run(kernel, &input, &offsets, &packed, geometry, &none, to);
                let finished = run(kernel, &input, &offsets, &packed, geometry, &finish, to);
                for (i, (&sum, &got)) in plain.iter().zip(&finished).enumerate() {
                    let want = finishes[i / positions].apply(sum);
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "{kernel:?}, {positions} positions, value {i}: {got} against {want} (sum {sum})"
                    );
                }
            }
        }
    }
}
