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

fn feed(dtype: DType, shape: Vec<usize>) -> Option<Tensor> {
    // Checked: a damaged model's dims may overflow (a debug build's `product` panics).
    let len = shape
        .iter()
        .try_fold(1usize, |len, &d| len.checked_mul(d))?;
    if len > 1 << 22 {
        return None;
    }
    Some(match dtype {
        DType::F32 => Tensor::from_vec(shape, vec![1f32; len]).ok()?,
        DType::I64 => Tensor::from_vec(shape, vec![1i64; len]).ok()?,
        other => Tensor::zeros(other, shape).ok()?,
    })
}

/// What happened to one model, for the log.
fn load_and_run(bytes: &[u8]) -> String {
    match run(bytes) {
        Ok(_) => "ran".into(),
        Err(e) => e,
    }
}

/// The model's outputs, or what stopped it (as [`load_and_run`] logs it).
fn run(bytes: &[u8]) -> Result<Vec<Tensor>, String> {
    let model = match Model::from_bytes(bytes) {
        Ok(model) => model,
        Err(e) => return Err(format!("load: {e}")),
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
            return Err(format!("not run: input '{}' is too big to feed", io.name));
        };
        inputs.push(tensor);
    }
    let options = CpuOptions { threads: Some(1) };
    match CpuSession::new(Arc::new(model), &options) {
        Ok(session) => session.run(inputs).map_err(|e| format!("run: {e}")),
        Err(e) => Err(format!("session: {e}")),
    }
}

/// Valid models at edges tract 0.23.9 panicked on (empty axes, negative pads, a fractional Range
/// step) run, with ONNX's answers (inputs are ones).
#[test]
fn valid_edge_cases_of_the_corpus_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/test/corpus/semantic");
    let outputs = |name: &str| {
        let bytes = std::fs::read(dir.join(format!("{name}.onnx"))).expect(name);
        run(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let range = &outputs("range_fractional_delta")[0];
    assert_eq!(range.as_slice::<f32>().unwrap(), [0.0, 0.25, 0.5, 0.75]);
    // [2, 3] cropped by one column, before (opset 18's axes) or after.
    for name in ["pad_negative_crop", "pad_axes_negative_crop"] {
        let y = &outputs(name)[0];
        assert_eq!(y.shape(), [2, 2], "{name}");
        assert_eq!(y.as_slice::<f32>().unwrap(), [1.0; 4], "{name}");
    }
    // Sums over an empty last axis are zeros; the f64 softmax of nothing is nothing.
    for name in [
        "reduce_sum_empty_last_axis",
        "reduce_sum_square_empty_last_axis",
        "reduce_l2_empty_last_axis",
    ] {
        let y = &outputs(name)[0];
        assert!(
            y.as_slice::<f32>().unwrap().iter().all(|&v| v == 0.0),
            "{name}: {y:?}"
        );
    }
    outputs("reduce_mean_empty_last_axis");
    assert_eq!(outputs("softmax_f64_empty_axis")[0].shape(), [2, 0]);
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
    assert!(paths.len() > 180, "the semantic corpus is missing");
    let mut panicked = Vec::new();
    for path in &paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        eprintln!("semantic/{name}");
        let bytes = std::fs::read(path).unwrap();
        let before = panics_seen_on_this_thread();
        let outcome = std::panic::catch_unwind(|| load_and_run(&bytes));
        let outcome = outcome.unwrap_or_else(|_| "panicked".into());
        eprintln!("  {}", outcome.lines().next().unwrap_or_default());
        if panics_seen_on_this_thread() != before {
            panicked.push(name);
        }
    }
    assert!(
        panicked.is_empty(),
        "cases that panic (fix each at its source, with a check before tract is called): {panicked:?}"
    );
}
