//! Inputs the fuzz targets (fuzz/, docs/fuzzing.md) found, each kept as a regression test: each
//! must end in a clear error (a regression to a hang is caught by CI's per-step timeout).

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
