//! The protobuf-valid, semantically damaged models of web/test/corpus/semantic (make_corpus.py),
//! run natively as web/test/damaged.test.mjs runs them in wasm: loaded, then run on cpu with
//! inputs of their declared shapes (symbolic dims as 1; f32/i64 inputs filled with ones, others
//! zeros). Each may fail with an Error; none may panic, caught or not (in wasm a panic aborts and
//! traps the module): panics are counted by [`tessera_core::error::panics_seen_on_this_thread`].

use std::path::Path;
use std::sync::Arc;
use tessera_core::error::{install_panic_counter, panics_seen_on_this_thread};
use tessera_core::{DType, Dim, Model, Tensor};
use tessera_cpu::{CpuOptions, CpuSession};

/// Cases that still panic natively, with the panic each hits (the same tract / ndarray / smallvec
/// panics that trap the wasm module, see KNOWN_TRAPS in web/test/damaged.test.mjs). Fix them at
/// their source in tessera-core (a check before tract is called) and take them off this list: the
/// test fails when a listed case stops panicking. Natively (64-bit) expand_huge, onehot_huge_depth
/// and range_huge panic in tract-data's blob.rs (a failed allocation) where wasm refuses them.
const KNOWN_NATIVE_PANICS: &[(&str, &str)] = &[
    (
        "constant_of_shape_huge",
        "tract-core-0.23.9/src/model/fact.rs:21:9: assertion failed: dims >= 0 (negative dims)",
    ),
    (
        "constant_of_shape_negative",
        "tract-core-0.23.9/src/model/fact.rs:21:9: assertion failed: dims >= 0 (negative dims)",
    ),
    (
        "expand_huge",
        "tract-data-0.23.9/src/blob.rs:76:13: failed to allocate Layout { size: 4000000000000000000, align: 64 (1 << 6) }",
    ),
    (
        "flatten_axis_oob",
        "tract-hir-0.23.9/src/ops/array/flatten.rs:15:18: range end index 6 out of range for slice of length 2",
    ),
    (
        "gather_const_indices_negative_oob",
        "tract-core-0.23.9/src/ops/array/gather.rs:75:52: index out of bounds: the len is 6 but the index is 18446744073709551519",
    ),
    (
        "gather_const_indices_oob",
        "tract-core-0.23.9/src/ops/array/gather.rs:85:59: range start index 20 out of range for slice of length 6",
    ),
    (
        "gather_elements_const_data_oob",
        "ndarray-0.17.2/src/arraytraits.rs:36:5: ndarray: index out of bounds",
    ),
    (
        "gather_input_const_indices_oob",
        "tract-core-0.23.9/src/ops/array/gather.rs:85:59: range start index 21 out of range for slice of length 6",
    ),
    (
        "gather_nd_const_oob",
        "tract-core-0.23.9/src/ops/array/gather_nd.rs:72:23: assertion failed: index < dim",
    ),
    (
        "maxpool_zero_stride",
        "tract-core-0.23.9/src/ops/cnn/padding.rs:254:75: attempt to divide by zero",
    ),
    (
        "onehot_huge_depth",
        "tract-data-0.23.9/src/blob.rs:76:13: failed to allocate Layout { size: 8000000000000, align: 64 (1 << 6) }",
    ),
    (
        "pad_negative_past_size",
        "tract-core-0.23.9/src/model/fact.rs:21:9: assertion failed: dims >= 0 (negative dims)",
    ),
    (
        "range_huge",
        "tract-data-0.23.9/src/blob.rs:76:13: failed to allocate Layout { size: 8000000000000, align: 64 (1 << 6) }",
    ),
    (
        "reduce_axes_oob",
        "tract-hir-0.23.9/src/ops/nn/reduce.rs:124:63: called `Result::unwrap()` on an `Err` value: Illegal combination of values for rank and axis: 2 and 12",
    ),
    (
        "scatter_elements_const_oob",
        "ndarray-0.17.2/src/arraytraits.rs:36:5: ndarray: index out of bounds",
    ),
    (
        "tile_negative",
        "tract-core-0.23.9/src/model/fact.rs:21:9: assertion failed: dims >= 0 (negative dims)",
    ),
    (
        "transpose_perm_oob",
        "tract-hir-0.23.9/src/ops/array/permute_axes.rs:21:33: index out of bounds: the len is 2 but the index is 9",
    ),
    (
        "unsqueeze_axis_oob",
        "smallvec-1.16.6/src/lib.rs:1538:17: index exceeds length",
    ),
];

/// Cases not run natively: they abort the process (a failed allocation of terabytes, not a panic:
/// nothing to count) where wasm's smaller address space makes them Errors or runs. A check before
/// tract allocates would let them run here too.
const NATIVE_ABORTS: &[(&str, &str)] = &[
    (
        "pad_huge",
        "tract-core Pad::eval, folded while typing: memory allocation of 26388279066648 bytes failed",
    ),
    (
        "resize_huge_scales",
        "memory allocation of 32000000000 bytes failed (in wasm: capacity overflow, raw_vec/mod.rs:28)",
    ),
    (
        "tile_huge",
        "materialises its huge output: ~23 GB resident until the OOM killer ends the process",
    ),
    (
        "transpose_bad_perm",
        "perm [0, 0]: grows memory until the OOM killer ends the process (in wasm: smallvec capacity overflow)",
    ),
];

fn feed(dtype: DType, shape: Vec<usize>) -> Option<Tensor> {
    let len: usize = shape.iter().product();
    if len > 1 << 22 {
        return None;
    }
    Some(match dtype {
        DType::F32 => Tensor::from_vec(shape, vec![1f32; len]).ok()?,
        DType::I64 => Tensor::from_vec(shape, vec![1i64; len]).ok()?,
        other => Tensor::zeros(other, shape).ok()?,
    })
}

fn load_and_run(bytes: &[u8]) {
    let Ok(model) = Model::from_bytes(bytes) else {
        return;
    };
    let mut inputs = Vec::new();
    for io in &model.info().inputs {
        let shape = match &io.dims {
            Some(dims) => dims
                .iter()
                .map(|d| match d {
                    Dim::Fixed(n) => *n,
                    _ => 1,
                })
                .collect(),
            None => vec![1],
        };
        let Some(tensor) = feed(io.dtype, shape) else {
            return;
        };
        inputs.push(tensor);
    }
    let options = CpuOptions { threads: Some(1) };
    if let Ok(session) = CpuSession::new(Arc::new(model), &options) {
        let _ = session.run(inputs);
    }
}

#[test]
fn semantic_corpus_never_panics() {
    install_panic_counter();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/test/corpus/semantic");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("web/test/corpus/semantic")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    paths.sort();
    assert!(paths.len() > 50, "the semantic corpus is missing");
    let mut panicked = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some((_, why)) = NATIVE_ABORTS.iter().find(|(n, _)| *n == name) {
            // Not run here (it would take the test process down), and said so: no silent skip.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "not run natively: semantic/{name} ({why})"
            );
            continue;
        }
        eprintln!("semantic/{name}");
        let bytes = std::fs::read(path).unwrap();
        let before = panics_seen_on_this_thread();
        let _ = std::panic::catch_unwind(|| load_and_run(&bytes));
        if panics_seen_on_this_thread() != before {
            panicked.push(name);
        }
    }
    let known: Vec<&str> = KNOWN_NATIVE_PANICS.iter().map(|(n, _)| *n).collect();
    let new: Vec<_> = panicked
        .iter()
        .filter(|n| !known.contains(&n.as_str()))
        .collect();
    let fixed: Vec<_> = known
        .iter()
        .filter(|n| !panicked.iter().any(|p| p == *n))
        .collect();
    assert!(
        new.is_empty(),
        "cases that panic and are not in KNOWN_NATIVE_PANICS: {new:?}"
    );
    assert!(
        fixed.is_empty(),
        "KNOWN_NATIVE_PANICS cases that no longer panic (take them off): {fixed:?}"
    );
}
