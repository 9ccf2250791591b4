//! The ONNX node test suite (`../shared/onnx-tests/node`) and the small multi-node suites beside
//! it, on the cpu backend. Tolerances: rtol 1e-3, atol 1e-5 (the suite's own), no exceptions.
//! The pass set must contain every name in `expected/cpu_node_pass.txt`; newly passing tests
//! are listed so the file can grow (`TESSERA_BLESS=1` rewrites it).

use std::time::Duration;
use tessera::Backend;
use tessera::check::Tolerance;
use tessera_conformance::*;

fn suite(subdir: &str, list: &str) {
    let root = shared_dir().join("onnx-tests").join(subdir);
    let results: Vec<CaseResult> = model_dirs(&root)
        .iter()
        .map(|dir| {
            run_case_bounded(
                dir,
                Backend::Cpu,
                Tolerance::NODE_SUITE,
                Duration::from_secs(120),
            )
        })
        .collect();
    let passed = report(&format!("onnx-tests/{subdir} on cpu"), &results);
    let list_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("expected")
        .join(list);
    if std::env::var_os("TESSERA_BLESS").is_some() {
        let body: String = passed.iter().map(|n| format!("{n}\n")).collect();
        std::fs::write(
            &list_path,
            format!("# onnx-tests/{subdir}: tests that pass on cpu\n{body}"),
        )
        .unwrap();
    }
    let expected = read_list(&list_path);
    let newly: Vec<&String> = passed.difference(&expected).collect();
    if !newly.is_empty() {
        println!("newly passing (add to tests/expected/{list}): {newly:?}");
    }
    let regressed: Vec<&String> = expected.difference(&passed).collect();
    assert!(
        regressed.is_empty(),
        "tests listed in tests/expected/{list} no longer pass: {regressed:?}"
    );
    assert!(!expected.is_empty(), "tests/expected/{list} is empty");
}

#[test]
fn node_suite_on_cpu() {
    suite("node", "cpu_node_pass.txt");
}

#[test]
fn small_model_suites_on_cpu() {
    for subdir in ["simple", "pytorch-converted", "pytorch-operator"] {
        suite(
            subdir,
            &format!("cpu_{}_pass.txt", subdir.replace('-', "_")),
        );
    }
}
