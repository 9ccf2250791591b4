//! GPU plans of ops lowered into several steps — integer products and run-time quantization
//! (`lower/quantized.rs`), loops unrolled (`lower/scan.rs`), STFT, backward slices, training-mode
//! Dropout with a known ratio — run by the reference interpreter on the ONNX node suite's cases
//! and compared with their expected outputs: integers exactly, floats within the node suite's
//! tolerance (rtol 1e-3, atol 1e-5).
//!
//! Each case is lowered as a GPU session lowers it first (tract's graph prepared for GPUs, only
//! small inputs folded, every step lowered) and must keep a run-time input and plan the named
//! step: the op runs as steps, it is not folded away.
//!
//! Shared data: `$TESSERA_SHARED`, else `../shared` beside the repository; missing data is a
//! failure, never a silent skip.

#[allow(dead_code)]
mod common;

use common::{read_set, shared_dir};
use tessera_core::lower::prepare_for_gpu;
use tessera_core::model::specialize::{Folds, Lowering};
use tessera_core::plan::KernelOp;
use tessera_core::plan::reference::execute;
use tessera_core::{DType, Model, Plan, Tensor};

/// Each case with the kernel its plan must hold: (name, step kind, that step's dtype).
const CASES: &[(&str, &str, DType)] = &[
    ("test_matmulinteger", "MatMul", DType::I32),
    ("test_qlinearmatmul_2D_uint8_float32", "MatMul", DType::I32),
    ("test_qlinearmatmul_2D_int8_float32", "MatMul", DType::I32),
    ("test_qlinearmatmul_3D_uint8_float32", "MatMul", DType::I32),
    ("test_qlinearmatmul_3D_int8_float32", "MatMul", DType::I32),
    ("test_convinteger_with_padding", "Conv", DType::I32),
    ("test_convinteger_without_padding", "Conv", DType::I32),
    ("test_qlinearconv", "MatMul", DType::I32),
    ("test_dynamicquantizelinear", "Reduce", DType::F32),
    (
        "test_dynamicquantizelinear_max_adjusted",
        "Reduce",
        DType::F32,
    ),
    (
        "test_dynamicquantizelinear_min_adjusted",
        "Reduce",
        DType::F32,
    ),
    ("test_scan9_sum", "Concat", DType::F32),
    ("test_scan9_multi_state", "Concat", DType::F32),
    ("test_lstm_batchwise", "LstmEpilogue", DType::F32),
    ("test_gru_seq_length", "MatMul", DType::F32),
    ("test_rnn_seq_length", "MatMul", DType::F32),
    ("test_stft", "Dft", DType::F32),
    ("test_slice_neg_steps", "Gather", DType::F32),
];

fn step_dtype(op: &KernelOp) -> Option<DType> {
    match op {
        KernelOp::MatMul { dtype, .. }
        | KernelOp::Conv { dtype, .. }
        | KernelOp::Reduce { dtype, .. }
        | KernelOp::Concat { dtype, .. }
        | KernelOp::Gather { dtype, .. }
        | KernelOp::LstmEpilogue { dtype, .. } => Some(*dtype),
        KernelOp::Dft { .. } => Some(DType::F32),
        _ => None,
    }
}

fn check(name: &str, kind: &str, dtype: DType) -> Result<(), String> {
    let dir = shared_dir().join("onnx-tests/node").join(name);
    let inputs = read_set(&dir, "input")?;
    let expected = read_set(&dir, "output")?;
    let model = Model::load(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let lowering = Lowering {
        before_declutter: Some(prepare_for_gpu),
        keep_axes: false,
        folds: Folds::SmallLeavingAnInput,
    };
    let (lowered, plan) = model
        .lower_then_for(&inputs, None, lowering, |typed| {
            let plan = Plan::build(typed)?;
            plan.require_lowered()?;
            Ok(plan)
        })
        .map_err(|e| format!("not lowered: {e}"))?;
    if !plan
        .steps
        .iter()
        .any(|s| s.op.kind() == kind && step_dtype(&s.op) == Some(dtype))
    {
        return Err(format!("no {kind} step of {dtype} in the plan"));
    }
    let runtime: Vec<Tensor> = lowered.runtime_inputs(&inputs).cloned().collect();
    if runtime.is_empty() {
        return Err("every input folded: nothing runs as steps".into());
    }
    let outputs = execute(&plan, &runtime).map_err(|e| e.to_string())?;
    if outputs.len() != expected.len() {
        return Err(format!(
            "{} outputs, expected {}",
            outputs.len(),
            expected.len()
        ));
    }
    for (k, (got, want)) in outputs.iter().zip(&expected).enumerate() {
        if got.dtype() != want.dtype() || got.shape() != want.shape() {
            return Err(format!(
                "output {k}: {} {:?}, expected {} {:?}",
                got.dtype(),
                got.shape(),
                want.dtype(),
                want.shape()
            ));
        }
        let (g, w) = (got.data().to_f64_vec(), want.data().to_f64_vec());
        let exact = !want.dtype().is_float();
        for (i, (&a, &e)) in g.iter().zip(&w).enumerate() {
            let ok = if exact {
                a == e
            } else {
                (a - e).abs() <= 1e-5 + 1e-3 * e.abs()
            };
            if !ok {
                return Err(format!("output {k}[{i}] = {a}, expected {e}"));
            }
        }
    }
    Ok(())
}

#[test]
fn ops_lowered_into_steps_plan_and_match_the_node_suite() {
    let failures: Vec<String> = CASES
        .iter()
        .filter_map(|&(name, kind, dtype)| {
            check(name, kind, dtype)
                .err()
                .map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// How a GPU session lowers first: graph prepared for GPUs, small inputs folded at most.
fn gpu_lowering() -> Lowering {
    Lowering {
        before_declutter: Some(prepare_for_gpu),
        keep_axes: false,
        folds: Folds::SmallLeavingAnInput,
    }
}

fn control_flow_model(name: &str) -> Model {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/control_flow")
        .join(name);
    Model::load(path).unwrap()
}

#[test]
fn an_if_on_a_run_time_condition_runs_both_branches_and_selects() {
    let model = control_flow_model("runtime_if.onnx");
    let values: Vec<f32> = (0..32).map(|i| i as f32 * 0.25 - 3.0).collect();
    for sign in [1.0f32, -1.0] {
        let x: Vec<f32> = values.iter().map(|v| v * sign).collect();
        let input = Tensor::from_vec(vec![2, 16], x.clone()).unwrap();
        let (lowered, plan) = model
            .lower_then_for(
                std::slice::from_ref(&input),
                None,
                gpu_lowering(),
                |typed| {
                    let plan = Plan::build(typed)?;
                    plan.require_lowered()?;
                    Ok(plan)
                },
            )
            .unwrap();
        assert_eq!(lowered.folding, vec![false], "x must stay a run-time input");
        assert!(
            plan.steps.iter().any(|s| s.op.kind() == "Select"),
            "no Select step in {:?}",
            plan.steps.iter().map(|s| s.op.name()).collect::<Vec<_>>()
        );
        let out = execute(&plan, &[input]).unwrap().remove(0);
        let positive = x.iter().sum::<f32>() > 0.0;
        let expected: Vec<f32> = x
            .iter()
            .map(|v| if positive { v * 2.0 } else { v - 1.0 })
            .collect();
        assert_eq!(
            out.as_slice::<f32>().unwrap(),
            expected.as_slice(),
            "sign {sign}"
        );
    }
}

#[test]
fn a_shape_that_depends_on_values_is_refused_not_computed_when_planning() {
    let model = control_flow_model("nonzero.onnx");
    let input =
        Tensor::from_vec(vec![8, 8], (0..64).map(|i| (i % 3) as f32 - 1.0).collect()).unwrap();
    let err = model
        .lower_then_for(
            std::slice::from_ref(&input),
            None,
            gpu_lowering(),
            Plan::build,
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("NonZero") && err.contains("depends on values computed at run time"),
        "{err}"
    );
}
