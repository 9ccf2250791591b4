#![allow(dead_code)]
// Kernel-level benchmark: AVX-VNNI ymm int8 GEMM (avxvnni_mmm_i32_8x8,
// VEX-encoded VPDPBUSD over PackedI8K4 with K=4 inner) vs the AVX2 emulation
// path (avx2_mmm_i32_8x8, vpmaddubsw-style widening). Both kernels run the
// same i8i8 packing index (1) over the same M/K/N so the only difference is
// the matmul inner loop.
//
// Designed for Atom-class hosts that have AVX-VNNI but no AVX-512:
//
//   * Alder Lake / Raptor Lake / Meteor Lake E-cores (Gracemont, Crestmont)
//   * Sierra Forest (Sierra Glen)
//   * Clearwater Forest (Darkmont)
//
// Big cores with both AVX-512-VNNI and AVX-VNNI still run AVX-VNNI here for
// comparison purposes; in production dispatch the EVEX-encoded
// avx512vnni_mmm_i32_8x8 wins on those CPUs because it can later be widened
// to zmm without an ISA-level rewrite.
use criterion::*;
use tract_data::internal::*;
use tract_linalg::mmm::{AsInputValue, FusedSpec, MatMatMul};

fn run_kernel(be: &mut Bencher, mmm: &dyn MatMatMul, m: usize, k: usize, n: usize) {
    let a = Tensor::zero_dt(DatumType::I8, &[m, k]).unwrap();
    let b = Tensor::zero_dt(DatumType::I8, &[k, n]).unwrap();
    let (pack_a, pack_b) = &mmm.packings()[1];
    let pa = pack_a.prepare_one(&a, 1, 0).unwrap();
    let pb = pack_b.prepare_one(&b, 0, 1).unwrap();
    let mut scratch = unsafe { mmm.allocate_scratch_space() };
    be.iter_custom(|iters| {
        let mut dur = std::time::Duration::default();
        for _ in 0..iters {
            let t = std::time::Instant::now();
            unsafe {
                mmm.run_with_scratch_space(
                    m,
                    n,
                    scratch.as_mut(),
                    &[FusedSpec::AddMatMul {
                        a: AsInputValue::Borrowed(&*pa),
                        b: AsInputValue::Borrowed(&*pb),
                        packing: 1,
                    }],
                )
                .unwrap()
            };
            dur += t.elapsed();
        }
        dur
    });
}

fn benches(c: &mut Criterion) {
    #[cfg(tract_avxvnni)]
    {
        use tract_linalg::x86_64::avxvnni::has_avxvnni;
        use tract_linalg::x86_64::mmm::*;
        if !has_avxvnni() {
            eprintln!("AVX-VNNI not available (CPUID leaf 7.1 EAX.4 unset), skipping");
            return;
        }
        // Same shapes as amx_i32 / vnni_i32 for direct side-by-side comparison.
        for &(m, k, n) in
            &[(64usize, 256usize, 64usize), (256, 256, 256), (512, 512, 512), (1024, 1024, 64)]
        {
            let id = format!("{m}x{k}x{n}");
            let mut g = c.benchmark_group("avxvnni_i32/packed_packed");
            g.throughput(Throughput::Elements((m * k * n) as u64));
            g.bench_with_input(BenchmarkId::new("avx2", &id), &(m, k, n), |b, &(m, k, n)| {
                run_kernel(b, &*avx2_mmm_i32_8x8.mmm(), m, k, n)
            });
            g.bench_with_input(BenchmarkId::new("avxvnni", &id), &(m, k, n), |b, &(m, k, n)| {
                run_kernel(b, &*avxvnni_mmm_i32_8x8.mmm(), m, k, n)
            });
            // When the same host also reports AVX-512-VNNI, include it as a
            // reference point: the same kernel body runs as EVEX/zmm-encoded
            // VPDPBUSD, which should match the AVX-VNNI throughput on Sapphire
            // Rapids+ but can diverge on Cooper/Cascade Lake where the EVEX
            // decoder is on the AVX-512 fused unit.
            if std::is_x86_feature_detected!("avx512vnni") {
                g.bench_with_input(
                    BenchmarkId::new("avx512vnni", &id),
                    &(m, k, n),
                    |b, &(m, k, n)| run_kernel(b, &*avx512vnni_mmm_i32_8x8.mmm(), m, k, n),
                );
            }
            g.finish();
        }
    }
    #[cfg(not(tract_avxvnni))]
    {
        eprintln!("tract not built with AVX-VNNI support (probe failed at build time)");
        let _ = c;
    }
}

criterion_group!(g, benches);
criterion_main!(g);
