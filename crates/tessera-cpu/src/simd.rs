//! Tessera's own loops (pools, element-wise chains, im2col, epilogues) compiled for the widest
//! vectors the CPU has, chosen at run time.
//!
//! A portable x86-64 build compiles them for SSE2 (4 floats); the matmul kernels underneath
//! (tract's, `gemm`'s) pick AVX-512 or AVX2 at run time, so without this the loops around them
//! ran at a quarter of the vector width (measured: SqueezeNet's convolution epilogues were 14%
//! of a run). arm64 and wasm builds have their vectors (NEON, SIMD128) in the baseline.

/// f32 values in a 512-bit register: the lane groups Tessera's row loops fold in (the softmax,
/// max and min reductions), which LLVM maps onto the widest vectors [`widest`] enables.
pub const F32_LANES: usize = 16;

/// Runs `body` compiled for AVX-512 or AVX2 + FMA when the CPU has them, else as built.
///
/// `body` should be a small closure calling `#[inline(always)]` functions: LLVM inlines it into
/// the feature-enabled wrapper, and with it everything marked `#[inline(always)]` below it, so
/// those loops are vectorized for the wider registers.
#[inline(always)]
pub fn widest<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has every feature the wrapper enables (checked just above).
            return unsafe { on_avx512(body) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: as above, for AVX2 and FMA.
            return unsafe { on_avx2(body) };
        }
    }
    body()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn on_avx512<R>(body: impl FnOnce() -> R) -> R {
    body()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn on_avx2<R>(body: impl FnOnce() -> R) -> R {
    body()
}

/// `dst.copy_from_slice(src)` for rows of a few dozen values, inline: fixed-size copies of 16,
/// 8, 4, 2 and 1 values, which compile to vector moves, where a copy of a run-time length is a
/// call into `memcpy` (LLVM makes one of a plain loop too): a pool over 576 planes of 14×14 spent
/// more than a quarter of its time in those calls, one per 14-value row.
#[inline(always)]
pub fn copy_short(dst: &mut [f32], src: &[f32]) {
    let mut src = &src[..dst.len()];
    let mut dst = dst;
    while dst.len() >= 16 {
        let (d, rest) = dst.split_at_mut(16);
        d.copy_from_slice(&src[..16]);
        (dst, src) = (rest, &src[16..]);
    }
    for n in [8, 4, 2, 1] {
        if dst.len() >= n {
            let (d, rest) = dst.split_at_mut(n);
            d.copy_from_slice(&src[..n]);
            (dst, src) = (rest, &src[n..]);
        }
    }
}

/// `even[i] = src[2 · i]` for every even index of `src` (`even` is `src.len().div_ceil(2)` long):
/// the outputs of stride-2 windows.
///
/// LLVM leaves this loop scalar on x86-64 even for AVX-512; there one permute takes 16 values
/// out of each 32.
#[inline(always)]
pub fn take_even(src: &[f32], even: &mut [f32]) {
    let even = &mut even[..src.len().div_ceil(2)];
    #[cfg(target_arch = "x86_64")]
    let done = if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above).
        unsafe { take_even_avx512(src, even) }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    for (e, v) in even[done..]
        .iter_mut()
        .zip(src.iter().skip(2 * done).step_by(2))
    {
        *e = *v;
    }
}

/// [`take_even`] on AVX-512: blocks of 32 values, then the last few through masked loads and a
/// masked store (a pool's rows of 7 to 27 outputs were otherwise taken one value at a time);
/// returns how many values it wrote (all of them).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn take_even_avx512(src: &[f32], even: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let blocks = src.len() / 32;
    let even_lanes = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (block, out) in src.chunks_exact(32).zip(even.chunks_exact_mut(16)) {
        // SAFETY: `block` holds 32 floats and `out` 16; unaligned loads and store.
        unsafe {
            let low = _mm512_loadu_ps(block.as_ptr());
            let high = _mm512_loadu_ps(block.as_ptr().add(16));
            _mm512_storeu_ps(
                out.as_mut_ptr(),
                _mm512_permutex2var_ps(low, even_lanes, high),
            );
        }
    }
    let rest = &src[32 * blocks..];
    let out = &mut even[16 * blocks..];
    if !rest.is_empty() {
        let lanes = |n: usize| ((1u32 << n.min(16)) - 1) as __mmask16;
        let (low_mask, high_mask) = (lanes(rest.len()), lanes(rest.len().saturating_sub(16)));
        // SAFETY: masked-off lanes are neither read nor written, and the masks cover `rest`
        // (under 32 values) and `out` (`rest.len().div_ceil(2)` values, `even`'s length).
        unsafe {
            let low = _mm512_maskz_loadu_ps(low_mask, rest.as_ptr());
            let high = _mm512_maskz_loadu_ps(high_mask, rest.as_ptr().wrapping_add(16));
            _mm512_mask_storeu_ps(
                out.as_mut_ptr(),
                lanes(out.len()),
                _mm512_permutex2var_ps(low, even_lanes, high),
            );
        }
    }
    even.len()
}

/// An element-wise select applied in place ([`select_in_place`]): each keeps a NaN `x`, as ONNX's
/// Max, Min, Relu and PRelu do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InPlace {
    /// `b` where `x < b`.
    Max,
    /// `b` where `x > b`.
    Min,
    /// `x · b` where `x < 0` (PRelu, `b` the slope).
    PRelu,
}

impl InPlace {
    #[inline(always)]
    fn scalar(self, x: f32, b: f32) -> f32 {
        match self {
            InPlace::Max => {
                if x < b {
                    b
                } else {
                    x
                }
            }
            InPlace::Min => {
                if x > b {
                    b
                } else {
                    x
                }
            }
            // A factor, not a choice of `x`: see [`Self::avx`].
            InPlace::PRelu => x * if x < 0.0 { b } else { 1.0 },
        }
    }

    /// The same on 8 lanes: `maxps(b, x)` is `b > x ? b : x`, so a NaN `x` stays. PRelu
    /// multiplies by a chosen factor (`x · 1` is `x`, NaN and -0 included): a blend of `x` itself
    /// is stored through a mask again.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn avx(
        self,
        x: std::arch::x86_64::__m256,
        b: std::arch::x86_64::__m256,
    ) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        // SAFETY: called only from `#[target_feature(enable = "avx")]` functions, below.
        unsafe {
            match self {
                InPlace::Max => _mm256_max_ps(b, x),
                InPlace::Min => _mm256_min_ps(b, x),
                InPlace::PRelu => _mm256_mul_ps(
                    x,
                    _mm256_blendv_ps(
                        _mm256_set1_ps(1.0),
                        b,
                        _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_setzero_ps()),
                    ),
                ),
            }
        }
    }
}

/// `x = op(x, b)` over `values`, with `b` one value (`SelectOperand::Value`) or one per value
/// (`SelectOperand::Each`, as long as `values`).
///
/// Written with the CPU's own max, min and multiply on x86-64: LLVM vectorizes the in-place select
/// `*x = if *x < b { b } else { *x }` for AVX into compares and masked stores (`vmaskmovps`),
/// which are microcoded on AMD's cores (Zen 3: a hard-swish model spent a third of its time in
/// them).
#[inline(always)]
pub fn select_in_place(op: InPlace, values: &mut [f32], b: SelectOperand<'_>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above).
        return unsafe { select_in_place_avx(op, values, b) };
    }
    match b {
        SelectOperand::Value(b) => values.iter_mut().for_each(|x| *x = op.scalar(*x, b)),
        SelectOperand::Each(each) => values
            .iter_mut()
            .zip(each)
            .for_each(|(x, b)| *x = op.scalar(*x, *b)),
    }
}

/// The second operand of [`select_in_place`].
#[derive(Clone, Copy, Debug)]
pub enum SelectOperand<'a> {
    Value(f32),
    Each(&'a [f32]),
}

/// [`select_in_place`] on 8 lanes at a time, the last few values through a block on the stack
/// (LLVM's own loop for them would store through a mask again).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn select_in_place_avx(op: InPlace, values: &mut [f32], b: SelectOperand<'_>) {
    use std::arch::x86_64::*;
    let len = match b {
        SelectOperand::Value(_) => values.len(),
        SelectOperand::Each(each) => values.len().min(each.len()),
    };
    let blocks = len / 8;
    let at = values.as_mut_ptr();
    for block in 0..blocks {
        // SAFETY: block `block` of 8 values lies inside `values` (and `each`): `blocks` is
        // their whole blocks; unaligned loads and stores.
        unsafe {
            let b = match b {
                SelectOperand::Value(b) => _mm256_set1_ps(b),
                SelectOperand::Each(each) => _mm256_loadu_ps(each.as_ptr().add(8 * block)),
            };
            let x = _mm256_loadu_ps(at.add(8 * block));
            _mm256_storeu_ps(at.add(8 * block), op.avx(x, b));
        }
    }
    let tail = 8 * blocks..len;
    if !tail.is_empty() {
        let (mut x, mut b_tail) = ([0.0f32; 8], [0.0f32; 8]);
        x[..tail.len()].copy_from_slice(&values[tail.clone()]);
        match b {
            SelectOperand::Value(b) => b_tail = [b; 8],
            SelectOperand::Each(each) => b_tail[..tail.len()].copy_from_slice(&each[tail.clone()]),
        }
        // SAFETY: both blocks hold 8 values.
        unsafe {
            let selected = op.avx(
                _mm256_loadu_ps(x.as_ptr()),
                _mm256_loadu_ps(b_tail.as_ptr()),
            );
            _mm256_storeu_ps(x.as_mut_ptr(), selected);
        }
        values[tail.clone()].copy_from_slice(&x[..tail.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_runs_once_and_its_value_comes_back() {
        let mut calls = 0;
        let sum = widest(|| {
            calls += 1;
            (1..=100).map(|i| i as f32).sum::<f32>()
        });
        assert_eq!((sum, calls), (5050.0, 1));
    }

    #[test]
    fn even_values_are_taken_at_every_length() {
        // Every length of the masked tail, around and past whole blocks of 32.
        for len in (0usize..=100).chain([111, 223]) {
            let src: Vec<f32> = (0..len).map(|i| i as f32).collect();
            // A destination longer than the evens: nothing past them may change.
            let mut even = vec![-1.0; len.div_ceil(2) + 3];
            take_even(&src, &mut even);
            let expected: Vec<f32> = src.iter().copied().step_by(2).collect();
            assert_eq!(even[..expected.len()], expected, "length {len}");
            assert_eq!(
                even[expected.len()..],
                [-1.0; 3],
                "length {len}: past the evens"
            );
        }
    }

    #[test]
    fn short_copies_copy_exactly_their_values_at_every_length() {
        let src: Vec<f32> = (0..80).map(|i| i as f32 + 0.5).collect();
        for len in 0..=70 {
            // A destination longer than the copy: nothing past `len` may change.
            let mut dst = vec![-1.0; len + 3];
            copy_short(&mut dst[..len], &src);
            assert_eq!(dst[..len], src[..len], "length {len}");
            assert_eq!(dst[len..], [-1.0; 3], "length {len}: past the copy");
        }
    }

    #[test]
    fn in_place_selects_match_their_definition_nan_and_signed_zero_included() {
        let values: Vec<f32> = (0..37)
            .map(|i| match i % 7 {
                0 => f32::NAN,
                1 => -0.0,
                2 => f32::INFINITY,
                3 => f32::NEG_INFINITY,
                _ => (i as f32 - 18.0) * 0.37,
            })
            .collect();
        let each: Vec<f32> = (0..37).map(|i| (i as f32 - 11.0) * 0.21).collect();
        for op in [InPlace::Max, InPlace::Min, InPlace::PRelu] {
            for len in [0usize, 1, 7, 8, 9, 16, 37] {
                // ONNX's definitions, NaN propagating: a NaN `x` stays.
                let definition = |x: f32, b: f32| match op {
                    _ if x.is_nan() => x,
                    InPlace::Max => x.max(b),
                    InPlace::Min => x.min(b),
                    InPlace::PRelu if x < 0.0 => x * b,
                    InPlace::PRelu => x,
                };
                let mut by_value = values[..len].to_vec();
                select_in_place(op, &mut by_value, SelectOperand::Value(0.5));
                let mut by_each = values[..len].to_vec();
                select_in_place(op, &mut by_each, SelectOperand::Each(&each[..len]));
                for i in 0..len {
                    let (x, b) = (values[i], each[i]);
                    for (got, want) in [
                        (by_value[i], definition(x, 0.5)),
                        (by_each[i], definition(x, b)),
                    ] {
                        assert_eq!(
                            got.to_bits(),
                            want.to_bits(),
                            "{op:?} of {x} at {i} of {len}"
                        );
                    }
                }
            }
        }
    }
}
