//! Inputs the fuzz targets (fuzz/, docs/fuzzing.md) found, each kept as a regression test: each
//! must end in a clear error (a regression to a hang is caught by CI's per-step timeout).

use tessera_core::Model;
use tessera_core::error::{install_panic_counter, panics_seen_on_this_thread};
use tessera_core::tensor::npy::npy_from_bytes;

fn finding(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `npy` target, 2026-11-26: a 262-byte header of nested open brackets kept the header parser
/// (py_literal, a backtracking grammar) busy for minutes.
#[test]
fn npy_header_of_nested_brackets_is_refused_at_once() {
    let bytes = finding("npy-nested-brackets.npy");
    let error = npy_from_bytes(&bytes).expect_err("a header nested this deep is not numpy's");
    assert!(
        error.to_string().contains("nested deeper than"),
        "unexpected error: {error}"
    );
}

/// `run_model` target (counting caught panics), 2026-11-26: an LSTM whose omitted first output
/// ("") is also the graph's output; tract indexed its name table with "" and panicked.
#[test]
fn graph_output_with_an_empty_name_is_an_error() {
    install_panic_counter();
    let before = panics_seen_on_this_thread();
    let error = Model::from_bytes(&finding("graph-output-empty-name.onnx"))
        .expect_err("the model is invalid");
    assert!(
        error.to_string().contains("declares output"),
        "unexpected error: {error}"
    );
    assert_eq!(
        panics_seen_on_this_thread(),
        before,
        "a panic was caught on the way"
    );
}
