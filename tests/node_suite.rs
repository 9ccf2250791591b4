//! The ONNX node test suite (`../shared/onnx-tests/node`) and the small multi-node suites beside
//! it, on cpu, on wgpu, and on cuda where a CUDA device is present (skipped with the reason
//! otherwise; until `expected/cuda_<suite>_pass.txt` exists, cuda reports its pass rate and must
//! pass 80% of the cpu passes, like wgpu). Tolerances: rtol 1e-3, atol 1e-5 (the suite's own), no exceptions.
//!
//! cpu: the pass set must contain every name in `expected/cpu_<suite>_pass.txt`.
//! wgpu (strict placement: no host fallback): the cases that pass on cpu are run; the pass set
//! must contain `expected/wgpu_<suite>_pass.txt`, and be at least 80% of the cpu passes.
//! Newly passing tests are listed so the files can grow (`TESSERA_BLESS=1` rewrites them).
//! `TESSERA_FILTER=conv` runs only the cases whose name contains `conv` and checks nothing
//! (for working on kernels; CI never sets it).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;
use tessera::Backend;
use tessera::check::Tolerance;
use tessera_conformance::*;

fn list_path(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("expected")
        .join(name)
}

fn suite(subdir: &str, backend: Backend) -> BTreeSet<String> {
    let root = shared_dir().join("onnx-tests").join(subdir);
    let key = subdir.replace('-', "_");
    let list = format!("{backend}_{key}_pass.txt");
    let filter = std::env::var("TESSERA_FILTER").ok();
    let cpu_passes = read_list(&list_path(&format!("cpu_{key}_pass.txt")));
    let dirs: Vec<_> = model_dirs(&root)
        .into_iter()
        .filter(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let wanted = filter.as_ref().is_none_or(|f| name.contains(f.as_str()));
            // A GPU backend is measured on what the cpu backend passes.
            wanted && (backend == Backend::Cpu || cpu_passes.contains(&name))
        })
        .collect();
    let results: Vec<CaseResult> = dirs
        .iter()
        .map(|dir| {
            run_case_bounded(
                dir,
                backend,
                Tolerance::NODE_SUITE,
                Duration::from_secs(120),
            )
        })
        .collect();
    let passed = report(&format!("onnx-tests/{subdir} on {backend}"), &results);
    if filter.is_some() {
        return passed;
    }
    if std::env::var_os("TESSERA_BLESS").is_some() {
        let body: String = passed.iter().map(|n| format!("{n}\n")).collect();
        std::fs::write(
            list_path(&list),
            format!("# onnx-tests/{subdir}: tests that pass on {backend}\n{body}"),
        )
        .unwrap();
    }
    let expected = read_list(&list_path(&list));
    let newly: Vec<&String> = passed.difference(&expected).collect();
    if !newly.is_empty() {
        println!("newly passing (add to tests/expected/{list}): {newly:?}");
    }
    let regressed: Vec<&String> = expected.difference(&passed).collect();
    assert!(
        regressed.is_empty(),
        "tests listed in tests/expected/{list} no longer pass: {regressed:?}"
    );
    // cuda's lists are written by the first GPU session (`scripts/cuda-device-check.sh`).
    if backend != Backend::Cuda {
        assert!(!expected.is_empty(), "tests/expected/{list} is empty");
    }
    if backend != Backend::Cpu {
        let share = passed.len() as f64 / cpu_passes.len().max(1) as f64;
        println!(
            "onnx-tests/{subdir}: {backend} passes {}/{} of the cpu passes ({:.1}%)",
            passed.len(),
            cpu_passes.len(),
            100.0 * share
        );
        if subdir == "node" {
            assert!(
                share >= 0.80,
                "{backend} must pass at least 80% of the node tests cpu passes"
            );
        }
    }
    passed
}

#[test]
fn node_suite_on_cpu() {
    suite("node", Backend::Cpu);
}

#[test]
fn small_model_suites_on_cpu() {
    for subdir in ["simple", "pytorch-converted", "pytorch-operator"] {
        suite(subdir, Backend::Cpu);
    }
}

#[test]
fn node_suite_on_wgpu() {
    suite("node", Backend::Wgpu);
}

#[test]
fn small_model_suites_on_wgpu() {
    for subdir in ["simple", "pytorch-converted", "pytorch-operator"] {
        suite(subdir, Backend::Wgpu);
    }
}

#[test]
fn node_suite_on_cuda() {
    if device_present(Backend::Cuda) {
        suite("node", Backend::Cuda);
    }
}

#[test]
fn small_model_suites_on_cuda() {
    if device_present(Backend::Cuda) {
        for subdir in ["simple", "pytorch-converted", "pytorch-operator"] {
            suite(subdir, Backend::Cuda);
        }
    }
}
