//! Runs every shared real model through the reference interpreter
//! (`tessera_core::plan::reference::execute`) and compares with onnxruntime's outputs.
//!
//! Per model: `Model::load` → `Model::lower` → `Plan::build` → `execute` on the non-folded
//! inputs → each output against `output_K.pb` with `|a - e| <= atol + rtol * |e|`
//! (rtol 1e-3, atol 1e-4; the int8 QDQ model may be one u8 quantization step off, atol 0.004).
//! Models listed in [`KNOWN_FAILURES`] must fail (a known failure that passes fails the test,
//! so the list is kept honest); every other model must pass.
//!
//! A second test replays a few small models step by step: `execute_traced` keeps every value,
//! and `execute_step` run alone on the traced inputs of each step gives its traced outputs.
//!
//! Shared data: `$TESSERA_SHARED`, else `../shared` beside the repository; missing data is a
//! failure, never a silent skip.
//!
//! Time (2 shared cores): the heavy kernels (matrix products, im2col convolutions) run in
//! `ndarray`, which the dev profile builds optimised, so the test runs in a debug build too:
//! about 75 s (ppocrv4_det 25 s, densenet121 14 s, vgg19 8 s) in `cargo test -p tessera-core --test plan_reference -- --nocapture`;
//! about 25 s for both tests with `--release`. Set `TESSERA_ONLY=name` to run only the models
//! whose name contains `name` (in the first test).

mod common;

use common::{read_set, shared_dir, shared_model_dirs};
use std::path::Path;
use std::time::Instant;
use tessera_core::plan::reference::{execute, execute_step, execute_traced};
use tessera_core::{Model, Plan, Tensor};

/// Models expected to fail, with the reason.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

const RTOL: f64 = 1e-3;
const ATOL: f64 = 1e-4;

fn atol(model: &str) -> f64 {
    if model == "ppocr_mobile_cls_qdq_int8" {
        0.004
    } else {
        ATOL
    }
}

/// The largest absolute error, or why the outputs do not compare.
fn compare(name: &str, actual: &[Tensor], expected: &[Tensor]) -> Result<f64, (String, f64)> {
    if actual.len() != expected.len() {
        return Err((
            format!("{} outputs, expected {}", actual.len(), expected.len()),
            f64::NAN,
        ));
    }
    let mut max_err = 0.0f64;
    let mut problem = None;
    for (k, (a, e)) in actual.iter().zip(expected).enumerate() {
        if a.shape() != e.shape() {
            problem.get_or_insert(format!(
                "output {k}: shape {:?}, expected {:?}",
                a.shape(),
                e.shape()
            ));
            continue;
        }
        let (av, ev) = (a.data().to_f64_vec(), e.data().to_f64_vec());
        for (i, (&x, &y)) in av.iter().zip(&ev).enumerate() {
            let err = (x - y).abs();
            if err.is_nan() && !(x.is_nan() && y.is_nan()) {
                max_err = f64::INFINITY;
            } else if !err.is_nan() {
                max_err = max_err.max(err);
            }
            let ok = (x.is_nan() && y.is_nan()) || err <= atol(name) + RTOL * y.abs();
            if !ok && problem.is_none() {
                problem = Some(format!("output {k}[{i}] = {x}, expected {y}"));
            }
        }
    }
    match problem {
        None => Ok(max_err),
        Some(p) => Err((p, max_err)),
    }
}

struct Outcome {
    name: String,
    result: Result<f64, (String, f64)>,
    seconds: f64,
}

fn run_model(dir: &Path) -> Outcome {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let start = Instant::now();
    let result = (|| -> Result<f64, (String, f64)> {
        let fail = |e: String| (e, f64::NAN);
        let inputs = read_set(dir, "input").map_err(fail)?;
        let expected = read_set(dir, "output").map_err(fail)?;
        let model = Model::load(dir.join("model.onnx")).map_err(|e| fail(e.to_string()))?;
        let lowered = model
            .lower(&inputs, None)
            .map_err(|e| fail(e.to_string()))?;
        let plan = Plan::build(&lowered.typed).map_err(|e| fail(e.to_string()))?;
        let runtime: Vec<Tensor> = lowered.runtime_inputs(&inputs).cloned().collect();
        let outputs = execute(&plan, &runtime).map_err(|e| fail(e.to_string()))?;
        compare(&name, &outputs, &expected)
    })();
    Outcome {
        name,
        result,
        seconds: start.elapsed().as_secs_f64(),
    }
}

#[test]
fn reference_interpreter_matches_onnxruntime() {
    let dirs = shared_model_dirs();
    let only = std::env::var("TESSERA_ONLY").ok();
    println!("| model | result | max abs err | time s | note |");
    println!("|---|---|---|---|---|");
    let mut problems = vec![];
    let total = dirs.len();
    let mut ran = 0;
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        ran += 1;
        let outcome = run_model(&dir);
        let known = KNOWN_FAILURES.iter().find(|(n, _)| *n == outcome.name);
        let (verdict, err, note) = match (&outcome.result, known) {
            (Ok(err), None) => ("pass", *err, String::new()),
            (Ok(err), Some(_)) => {
                problems.push(format!(
                    "{}: listed in KNOWN_FAILURES but passes now: remove it",
                    outcome.name
                ));
                ("PASS (known failure)", *err, "now passes".into())
            }
            (Err((why, err)), Some((_, reason))) => {
                ("known failure", *err, format!("{reason} ({why})"))
            }
            (Err((why, err)), None) => {
                problems.push(format!("{}: {why}", outcome.name));
                ("FAIL", *err, why.clone())
            }
        };
        println!(
            "| {} | {verdict} | {err:.3e} | {:.1} | {} |",
            outcome.name,
            outcome.seconds,
            note.replace('|', "/")
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(ran > 0, "no model ran (TESSERA_ONLY={only:?})");
    if only.is_none() {
        assert_eq!(ran, total, "models run");
    }
}

/// Small models with views, matrix products, quantization and recurrent cells between them.
const REPLAY_MODELS: &[&str] = &[
    "minilm_l3_paraphrase",
    "mtcnn_onet",
    "ppocr_mobile_cls_qdq_int8",
    "silero_vad_v5",
];

/// `execute_traced` returns every value with its plan shape and the outputs `execute` returns;
/// running each step alone with `execute_step` on the traced inputs gives back the traced
/// outputs bit for bit (what a GPU backend's host fallback and a debugger rely on).
#[test]
fn traced_values_replay_step_by_step() {
    for name in REPLAY_MODELS {
        let dir = shared_dir().join("models").join(name);
        let inputs = read_set(&dir, "input").unwrap_or_else(|e| panic!("{e}"));
        let model = Model::load(dir.join("model.onnx")).unwrap_or_else(|e| panic!("{name}: {e}"));
        let lowered = model
            .lower(&inputs, None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let plan = Plan::build(&lowered.typed).unwrap_or_else(|e| panic!("{name}: {e}"));
        let runtime: Vec<Tensor> = lowered.runtime_inputs(&inputs).cloned().collect();

        let trace = execute_traced(&plan, &runtime).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(trace.len(), plan.values.len(), "{name}");
        for (value, traced) in plan.values.iter().zip(&trace) {
            let traced = traced
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: '{}' not traced", value.name));
            assert_eq!(
                traced.shape(),
                value.shape.as_slice(),
                "{name}: {}",
                value.name
            );
            assert_eq!(traced.dtype(), value.dtype, "{name}: {}", value.name);
        }
        let outputs = execute(&plan, &runtime).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, (output, &id)) in outputs.iter().zip(&plan.outputs).enumerate() {
            let traced = trace[id.0].as_ref().unwrap();
            assert_eq!(output.shape(), traced.shape(), "{name}: output {k}");
            assert_eq!(
                output.data().to_le_bytes(),
                traced.data().to_le_bytes(),
                "{name}: output {k}"
            );
        }

        for (ix, step) in plan.steps.iter().enumerate() {
            let args: Vec<&Tensor> = step
                .inputs
                .iter()
                .map(|id| trace[id.0].as_ref().unwrap())
                .collect();
            let results =
                execute_step(&plan, ix, &args).unwrap_or_else(|e| panic!("{name}: step {ix}: {e}"));
            assert_eq!(results.len(), step.outputs.len(), "{name}: step {ix}");
            for (result, id) in results.iter().zip(&step.outputs) {
                let traced = trace[id.0].as_ref().unwrap();
                assert_eq!(result.shape(), traced.shape(), "{name}: step {ix}");
                assert_eq!(
                    result.data().to_le_bytes(),
                    traced.data().to_le_bytes(),
                    "{name}: step {ix} ('{}', {})",
                    step.node,
                    step.op.name()
                );
            }
        }
        println!(
            "{name}: {} values traced, {} steps replayed",
            trace.len(),
            plan.steps.len()
        );
    }
}
