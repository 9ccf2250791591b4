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

/// Output channels per micro-tile.
pub const CHANNELS: usize = 6;
/// Positions per AVX-512 vector.
#[cfg(target_arch = "x86_64")]
pub const LANES: usize = 16;
/// AVX-512 vectors of positions per micro-tile.
#[cfg(any(target_arch = "x86_64", test))]
pub const VECTORS: usize = 4;

/// Values [`pack_weights`] makes of `rows` channels of depth `depth`.
pub fn packed_len(rows: usize, depth: usize) -> usize {
    rows.div_ceil(CHANNELS) * depth * CHANNELS
}

/// `weights` (`rows × depth`, row-major: one row per output channel) packed for [`products`]:
/// blocks of [`CHANNELS`] channels, each `depth × CHANNELS` (k-major), the last block padded
/// with zero weights.
pub fn pack_weights(weights: &[f32], rows: usize, depth: usize) -> Vec<f32> {
    let mut packed = vec![0.0; packed_len(rows, depth)];
    for (row, values) in weights.chunks_exact(depth.max(1)).take(rows).enumerate() {
        let (block, j) = (row / CHANNELS, row % CHANNELS);
        let block = &mut packed[block * depth * CHANNELS..][..depth * CHANNELS];
        for (k, &w) in values.iter().enumerate() {
            block[k * CHANNELS + j] = w;
        }
    }
    packed
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

/// `sums[j · sums_row + p] = Σ_k packed[k][j] · input[offsets[k] + p]` for channels `j` in
/// `0..channels` and positions `p` in `0..positions`.
///
/// `packed` is [`pack_weights`]'s layout for (at least) `channels` rows of depth `offsets.len()`;
/// `input` must hold `offsets[k] + positions` values for every `k`, and the other operands
/// their sizes (checked: an error otherwise).
pub fn products(
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    channels: usize,
    positions: usize,
    sums: &mut [f32],
    sums_row: usize,
) -> TractResult<()> {
    ensure!(
        channels == 0
            || positions == 0
            || (sums.len() >= (channels - 1) * sums_row + positions && sums_row >= positions),
        "tap products: the sums are smaller than their geometry"
    );
    // SAFETY: `sums` holds the rows written (checked just above) and is borrowed mutably.
    unsafe {
        products_to(
            input,
            offsets,
            packed,
            (channels, positions),
            sums.as_mut_ptr(),
            sums_row,
        )
    }
}

/// [`products`] into rows `sums_row` apart from `sums`, which may be rows of a larger output
/// that other threads write elsewhere in.
///
/// SAFETY: the `channels` rows of `positions` values from `sums`, `sums_row` apart, must be
/// writable and written by no other thread meanwhile.
pub unsafe fn products_to(
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    (channels, positions): (usize, usize),
    sums: *mut f32,
    sums_row: usize,
) -> TractResult<()> {
    // SAFETY: the caller's, passed on.
    unsafe {
        products_on(
            Kernel::best(),
            input,
            offsets,
            packed,
            (channels, positions),
            sums,
            sums_row,
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
    sums: *mut f32,
    sums_row: usize,
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
    #[cfg(target_arch = "x86_64")]
    match kernel {
        // SAFETY (both): the CPU has the kernel's features (checked just above); `input` and
        // `packed` sizes were checked above, `sums` is the caller's.
        Kernel::Avx512 => {
            unsafe { products_avx512(input, offsets, packed, channels, positions, sums, sums_row) };
            return Ok(());
        }
        Kernel::Avx2 => {
            unsafe { products_avx2(input, offsets, packed, channels, positions, sums, sums_row) };
            return Ok(());
        }
        Kernel::Portable => {}
    }
    for j in 0..channels {
        let (block, lane) = (j / CHANNELS, j % CHANNELS);
        let weights = &packed[block * depth * CHANNELS..];
        // SAFETY: row `j` of the sums, the caller's.
        let row = unsafe { std::slice::from_raw_parts_mut(sums.add(j * sums_row), positions) };
        row.fill(0.0);
        for (k, &offset) in offsets.iter().enumerate() {
            let w = weights[k * CHANNELS + lane];
            row.iter_mut()
                .zip(&input[offset..offset + positions])
                .for_each(|(s, x)| *s += w * x);
        }
    }
    Ok(())
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn products_avx512(
    input: &[f32],
    offsets: &[usize],
    packed: &[f32],
    channels: usize,
    positions: usize,
    sums: *mut f32,
    sums_row: usize,
) {
    let depth = offsets.len();
    for block in 0..channels.div_ceil(CHANNELS) {
        let rows = (channels - block * CHANNELS).min(CHANNELS);
        let weights = packed[block * depth * CHANNELS..].as_ptr();
        // SAFETY: the block's first row of the sums, the caller's.
        let out = unsafe { sums.add(block * CHANNELS * sums_row) };
        let mut p = 0;
        while p < positions {
            let vectors = tile_vectors((positions - p).div_ceil(LANES));
            let n = (positions - p).min(vectors * LANES);
            let tail = n - (vectors - 1) * LANES;
            // SAFETY: (for all) every load reads `input[offsets[k] + p..][..n]`, inside `input`
            // (`reach` was checked); stores write `rows` rows of `n` values from `p`, the
            // caller's; `weights` holds `depth × CHANNELS` values from the block (checked).
            unsafe {
                let base = input.as_ptr().add(p);
                let out = out.add(p);
                match vectors {
                    4 => tile_kernel::<4>(base, offsets, weights, out, sums_row, rows, tail),
                    3 => tile_kernel::<3>(base, offsets, weights, out, sums_row, rows, tail),
                    2 => tile_kernel::<2>(base, offsets, weights, out, sums_row, rows, tail),
                    _ => tile_kernel::<1>(base, offsets, weights, out, sums_row, rows, tail),
                }
            }
            p += n;
        }
    }
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

/// One micro-tile: `V` vectors of positions (the last holding `tail` of 16) by [`CHANNELS`]
/// channels (the first `rows` stored), summed over every `k` in registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
// Indexes, not iterators, over the register block: it must unroll into named registers.
#[allow(clippy::needless_range_loop)]
unsafe fn tile_kernel<const V: usize>(
    input: *const f32,
    offsets: &[usize],
    weights: *const f32,
    out: *mut f32,
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
                    _mm512_maskz_loadu_ps(mask, a.add(v * LANES))
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
    for j in 0..rows {
        for v in 0..V {
            // SAFETY: the caller's: row `j`'s `V` vectors (the last masked) lie inside `out`.
            unsafe {
                let at = out.add(j * out_row + v * LANES);
                if v + 1 == V {
                    _mm512_mask_storeu_ps(at, mask, acc[v][j]);
                } else {
                    _mm512_storeu_ps(at, acc[v][j]);
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
    channels: usize,
    positions: usize,
    sums: *mut f32,
    sums_row: usize,
) {
    let depth = offsets.len();
    for block in 0..channels.div_ceil(CHANNELS) {
        let rows = (channels - block * CHANNELS).min(CHANNELS);
        let weights = packed[block * depth * CHANNELS..].as_ptr();
        // SAFETY: the block's first row of the sums, the caller's.
        let out = unsafe { sums.add(block * CHANNELS * sums_row) };
        let mut p = 0;
        while p < positions {
            let n = (positions - p).min(2 * AVX2_LANES);
            let tail = n - (n - 1) / AVX2_LANES * AVX2_LANES;
            // SAFETY: (for all) every load reads `input[offsets[k] + p..][..n]`, inside `input`
            // (`reach` was checked); stores write `rows` rows of `n` values from `p`, the
            // caller's; `weights` holds `depth × CHANNELS` values from the block (checked).
            unsafe {
                let base = input.as_ptr().add(p);
                let out = out.add(p);
                match (n > AVX2_LANES, tail == AVX2_LANES) {
                    (true, true) => tile_kernel_avx2::<2, false>(
                        base, offsets, weights, out, sums_row, rows, tail,
                    ),
                    (true, false) => tile_kernel_avx2::<2, true>(
                        base, offsets, weights, out, sums_row, rows, tail,
                    ),
                    (false, true) => tile_kernel_avx2::<1, false>(
                        base, offsets, weights, out, sums_row, rows, tail,
                    ),
                    (false, false) => tile_kernel_avx2::<1, true>(
                        base, offsets, weights, out, sums_row, rows, tail,
                    ),
                }
            }
            p += n;
        }
    }
}

/// One AVX2 micro-tile: `V` vectors of 8 positions (the last holding `tail` of them, loaded and
/// stored under a mask when `MASKED`) by [`CHANNELS`] channels (the first `rows` stored).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
#[allow(clippy::needless_range_loop)]
unsafe fn tile_kernel_avx2<const V: usize, const MASKED: bool>(
    input: *const f32,
    offsets: &[usize],
    weights: *const f32,
    out: *mut f32,
    out_row: usize,
    rows: usize,
    tail: usize,
) {
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
        for v in 0..V {
            // SAFETY: the caller's: row `j`'s `V` vectors (the last masked when `MASKED`) lie
            // inside `out`.
            unsafe {
                let at = out.add(j * out_row + v * AVX2_LANES);
                if MASKED && v + 1 == V {
                    _mm256_maskstore_ps(at, mask, acc[v][j]);
                } else {
                    _mm256_storeu_ps(at, acc[v][j]);
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
                    let sums_row = positions + 3;
                    let mut sums = vec![f32::NAN; channels * sums_row];
                    // SAFETY: `sums` holds `channels` rows of `sums_row >= positions` values.
                    unsafe {
                        products_on(
                            kernel,
                            &input,
                            &depth_offsets,
                            &packed,
                            (channels, positions),
                            sums.as_mut_ptr(),
                            sums_row,
                        )
                    }
                    .unwrap();
                    for j in 0..channels {
                        for p in 0..positions {
                            let expected: f32 = depth_offsets
                                .iter()
                                .enumerate()
                                .map(|(k, &o)| weights[j * depth_offsets.len() + k] * input[o + p])
                                .sum();
                            let got = sums[j * sums_row + p];
                            assert!(
                                (got - expected).abs() <= 1e-4 * expected.abs().max(1.0),
                                "{kernel:?}, {channels} channels, {positions} positions: [{j}][{p}] {got} vs {expected}"
                            );
                        }
                        // Masked stores end at the row's last position.
                        assert!(
                            sums[j * sums_row + positions..][..3]
                                .iter()
                                .all(|s| s.is_nan()),
                            "{kernel:?}, {channels} channels, {positions} positions: row {j} written past its end"
                        );
                    }
                }
            }
        }
    }
}
