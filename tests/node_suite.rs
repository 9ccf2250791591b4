//! The ONNX node test suite (`../shared/onnx-tests/node`) and the small multi-node suites beside
//! it, on cpu, on wgpu, and on cuda where a CUDA device is present (skipped with the reason
//! otherwise, failed with `TESSERA_REQUIRE_CUDA=1`). Tolerances: rtol 1e-3, atol 1e-5 (the
//! suite's own), no exceptions.
//!
//! cpu: the pass set must contain every name in `expected/cpu_<suite>_pass.txt`.
//! wgpu and cuda (strict placement: no host fallback): the cases that pass on cpu are run; the
//! pass set must contain `expected/<backend>_<suite>_pass.txt`, be at least 80% of the cpu
//! passes, and no case may give a wrong result (refusing an op is allowed, answering wrongly is
//! not). cuda's lists were measured on an NVIDIA H200 (`scripts/cuda-device-check.sh`).
//! Every suite checks how many cases it ran against the shared data's known size, so a partial
//! copy or an over-eager filter cannot pass by running less.
//!
//! Pass lists only grow: `TESSERA_BLESS=1` adds the newly passing tests to the lists;
//! removing entries takes `TESSERA_BLESS_REMOVE=1` and prints each one removed.
//! `TESSERA_PASS_LISTS_TO=DIR` writes the pass sets found as candidate lists into DIR and
//! leaves the checked-in ones alone (what a GPU session brings back for review).
//! `TESSERA_FILTER=conv` runs only the cases whose name contains `conv` and checks nothing
//! (for working on kernels). `.ci/run` refuses to start with any of these set.

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

/// How many model folders each shared suite holds (the shared data's own size).
const SUITE_SIZES: &[(&str, usize)] = &[
    ("node", 1765),
    ("simple", 23),
    ("pytorch-converted", 82),
    ("pytorch-operator", 35),
];

fn suite(subdir: &str, backend: Backend) -> BTreeSet<String> {
    let root = shared_dir().join("onnx-tests").join(subdir);
    let key = subdir.replace('-', "_");
    let list = format!("{backend}_{key}_pass.txt");
    let filter = std::env::var("TESSERA_FILTER").ok();
    let cpu_passes = read_list(&list_path(&format!("cpu_{key}_pass.txt")));
    let all_dirs = model_dirs(&root);
    let expected_size = SUITE_SIZES
        .iter()
        .find(|(name, _)| *name == subdir)
        .map(|(_, n)| *n)
        .expect("every suite has a known size");
    assert_eq!(
        all_dirs.len(),
        expected_size,
        "onnx-tests/{subdir} at {} holds {} cases, expected {expected_size}: a partial copy runs less than it claims",
        root.display(),
        all_dirs.len()
    );
    let dirs: Vec<_> = all_dirs
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
    // No loop that can pass having run nothing: cpu runs every case, a GPU backend every cpu pass.
    let should_run = if backend == Backend::Cpu {
        expected_size
    } else {
        cpu_passes.len()
    };
    assert_eq!(
        results.len(),
        should_run,
        "onnx-tests/{subdir} on {backend} ran {} cases, expected {should_run}",
        results.len()
    );
    let expected = read_list(&list_path(&list));
    if let Some(dir) = std::env::var_os("TESSERA_PASS_LISTS_TO") {
        let path = PathBuf::from(dir).join(&list);
        write_list(&path, subdir, backend, &passed);
        println!("candidate pass list written to {}", path.display());
    }
    let newly: Vec<&String> = passed.difference(&expected).collect();
    if !newly.is_empty() {
        println!("newly passing (add to tests/expected/{list}): {newly:?}");
    }
    let regressed: Vec<&String> = expected.difference(&passed).collect();
    let remove = std::env::var_os("TESSERA_BLESS_REMOVE").is_some();
    if remove || std::env::var_os("TESSERA_BLESS").is_some() {
        // Blessing adds; only the separate, explicit flag removes, and says what it removed.
        let mut blessed: BTreeSet<String> = expected.union(&passed).cloned().collect();
        if remove {
            for name in &regressed {
                println!("removed from tests/expected/{list}: {name}");
                blessed.remove(*name);
            }
        }
        write_list(&list_path(&list), subdir, backend, &blessed);
    }
    assert!(
        regressed.is_empty(),
        "tests listed in tests/expected/{list} no longer pass: {regressed:?}"
    );
    assert!(!expected.is_empty(), "tests/expected/{list} is empty");
    if backend != Backend::Cpu {
        let wrong: Vec<String> = results
            .iter()
            .filter(|r| matches!(r.failure, Some((Cause::WrongResult, _))))
            .map(|r| r.name.clone())
            .collect();
        assert!(
            wrong.is_empty(),
            "{backend} gave wrong results (cpu passes these) on onnx-tests/{subdir}: {wrong:?}"
        );
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

fn write_list(path: &std::path::Path, subdir: &str, backend: Backend, names: &BTreeSet<String>) {
    let body: String = names.iter().map(|n| format!("{n}\n")).collect();
    std::fs::write(
        path,
        format!("# onnx-tests/{subdir}: tests that pass on {backend}\n{body}"),
    )
    .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
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
