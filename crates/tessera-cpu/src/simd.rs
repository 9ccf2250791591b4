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
}
