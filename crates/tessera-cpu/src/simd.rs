//! Tessera's own loops (pools, element-wise chains, im2col, epilogues) compiled for the widest
//! vectors the CPU has, chosen at run time.
//!
//! A portable x86-64 build compiles them for SSE2 (4 floats); the matmul kernels underneath
//! (tract's, `gemm`'s) pick AVX-512 or AVX2 at run time, so without this the loops around them
//! ran at a quarter of the vector width (measured: SqueezeNet's convolution epilogues were 14%
//! of a run). arm64 and wasm builds have their vectors (NEON, SIMD128) in the baseline.

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
        .zip(src[2 * done..].iter().step_by(2))
    {
        *e = *v;
    }
}

/// The whole blocks of 32 values of [`take_even`]; returns how many values it wrote.
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
    16 * blocks
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
        for len in [0usize, 1, 2, 31, 32, 33, 63, 64, 65, 111, 223] {
            let src: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let mut even = vec![-1.0; len.div_ceil(2)];
            take_even(&src, &mut even);
            let expected: Vec<f32> = src.iter().copied().step_by(2).collect();
            assert_eq!(even, expected, "length {len}");
        }
    }
}
