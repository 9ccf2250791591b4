//! GPU plans of ops lowered into several steps — integer products and run-time quantization
//! (`lower/quantized.rs`), loops unrolled (`lower/scan.rs`), STFT, backward slices, training-mode
//! Dropout with a known ratio, `Einsum` forms that are not a matrix product — run by the
//! reference interpreter on the ONNX node suite's cases (the `Einsum` ones on numpy's outputs)
//! and compared with their expected outputs: integers exactly, floats within the node suite's
//! tolerance (rtol 1e-3, atol 1e-5).
//!
//! Each case is lowered as a GPU session lowers it first (tract's graph prepared for GPUs, only
//! small inputs folded, every step lowered) and must keep a run-time input and plan the named
//! step: the op runs as steps, it is not folded away.
//!
//! Shapes that depend on values (`NonZero`, `NonMaxSuppression`, a `TopK` of a computed `k`) run
//! in stages as a GPU session runs them (`lower/stages.rs`): the first stage's counts read, the
//! rest planned for them.
//!
//! Shared data: `$TESSERA_SHARED`, else `../shared` beside the repository; missing data is a
//! failure, never a silent skip.

#[allow(dead_code)]
mod common;

use common::{read_set, shared_dir};
use tessera_core::error::{install_panic_counter, panics_seen_on_this_thread};
use tessera_core::lower::prepare_for_gpu;
use tessera_core::lower::stages::split;
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

/// Runs `model` on `input` as a GPU session does when shapes depend on values (`lower/stages.rs`),
/// with the reference interpreter: plans whole when it can, else runs the first stage, reads its
/// counts, and plans the rest for them. Returns the outputs and how many stages ran.
fn run_in_stages(model: &Model, inputs: &[Tensor]) -> (Vec<Tensor>, usize) {
    install_panic_counter();
    let before = panics_seen_on_this_thread();
    let ran = run_stages(model, inputs);
    // The planning of later stages keeps a last net for tract's passes: it must never catch.
    assert_eq!(
        panics_seen_on_this_thread(),
        before,
        "a panic while running in stages"
    );
    ran
}

fn run_stages(model: &Model, inputs: &[Tensor]) -> (Vec<Tensor>, usize) {
    let lowering = Lowering {
        folds: Folds::Small,
        ..gpu_lowering()
    };
    let lowered = model.lower_for(inputs, None, lowering).unwrap();
    let mut feeds: Vec<Tensor> = lowered.runtime_inputs(inputs).cloned().collect();
    let mut typed = lowered.typed;
    for stage in 1..10 {
        if let Ok(plan) = Plan::build(&typed) {
            return (execute(&plan, &feeds).unwrap(), stage);
        }
        let stages = split(&typed).unwrap().expect("a NonZero to cut at");
        let first = Plan::build(&stages.first).unwrap();
        first.require_lowered().unwrap();
        let outputs = execute(&first, &feeds).unwrap();
        let counts: Vec<usize> = (stages.counts.iter())
            .map(|c| outputs[c.output].as_slice::<i64>().unwrap()[0] as usize)
            .collect();
        feeds = (0..stages.passed)
            .map(|at| {
                match stages
                    .counts
                    .iter()
                    .zip(&counts)
                    .find(|(c, _)| c.padded == Some(at))
                {
                    // The padded result's front is the op's own result.
                    Some((c, &n)) => {
                        let values = outputs[at].as_slice::<i64>().unwrap()[..c.width * n].to_vec();
                        Tensor::from_vec(c.result_shape(n), values).unwrap()
                    }
                    None => outputs[at].clone(),
                }
            })
            .collect();
        typed = stages.rest_for(&counts).unwrap();
    }
    panic!("more than 10 stages");
}

#[test]
fn shapes_that_depend_on_values_run_in_stages_planned_for_the_counts() {
    let model = control_flow_model("nonzero_stages.onnx");
    // Positive, negative and zero values; some above 1; then none positive at all.
    let patterns: [fn(usize) -> f32; 3] = [
        |i| ((i * 7) % 11) as f32 * 0.3 - 1.2,
        |i| if i % 5 == 0 { 2.5 } else { -1.0 },
        |_| -0.5,
    ];
    for pattern in patterns {
        let x: Vec<f32> = (0..256).map(pattern).collect();
        let input = Tensor::from_vec(vec![16, 16], x.clone()).unwrap();
        let (outputs, stages) = run_in_stages(&model, std::slice::from_ref(&input));
        let positive: Vec<usize> = (0..256).filter(|&i| x[i] > 0.0).collect();
        let n = positive.len();
        // Two NonZero, one on the other's result: three stages; when the first counts nothing,
        // the second's input is empty and its count known when the rest is planned.
        assert_eq!(stages, if n == 0 { 2 } else { 3 }, "{n} positive values");
        let mut positions = vec![0i64; 2 * n];
        for (k, &i) in positive.iter().enumerate() {
            positions[k] = (i / 16) as i64;
            positions[n + k] = (i % 16) as i64;
        }
        let picked: Vec<f32> = positive.iter().map(|&i| x[i]).collect();
        let big: Vec<i64> = (0..n as i64)
            .filter(|&k| picked[k as usize] > 1.0)
            .collect();
        let doubled: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        assert_eq!(outputs[0].as_slice::<f32>().unwrap(), doubled.as_slice());
        assert_eq!(outputs[1].shape(), &[2, n]);
        assert_eq!(outputs[1].as_slice::<i64>().unwrap(), positions.as_slice());
        assert_eq!(outputs[2].as_slice::<f32>().unwrap(), picked.as_slice());
        assert_eq!(outputs[3].shape(), &[1, big.len()]);
        assert_eq!(outputs[3].as_slice::<i64>().unwrap(), big.as_slice());
    }
}

#[test]
fn non_max_suppression_runs_in_stages_and_matches_the_node_suite() {
    let names = [
        "test_nonmaxsuppression_center_point_box_format",
        "test_nonmaxsuppression_flipped_coordinates",
        "test_nonmaxsuppression_identical_boxes",
        "test_nonmaxsuppression_iou_threshold_boundary",
        "test_nonmaxsuppression_limit_output_size",
        "test_nonmaxsuppression_single_box",
        "test_nonmaxsuppression_suppress_by_IOU",
        "test_nonmaxsuppression_suppress_by_IOU_and_scores",
        "test_nonmaxsuppression_two_batches",
        "test_nonmaxsuppression_two_classes",
    ];
    for name in names {
        let dir = shared_dir().join("onnx-tests/node").join(name);
        let inputs = read_set(&dir, "input").unwrap();
        let expected = read_set(&dir, "output").unwrap();
        let model = Model::load(dir.join("model.onnx")).unwrap();
        let (outputs, stages) = run_in_stages(&model, &inputs);
        assert_eq!(stages, 2, "{name}: the selection counted, then the rest");
        assert_eq!(outputs, expected, "{name}");
    }
}

/// The `k` largest of `x` (equal values in index order) and their indices, `k` its positives.
fn top_positives(x: &[f32]) -> (Vec<f32>, Vec<i64>) {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[b].total_cmp(&x[a]));
    let k = x.iter().filter(|&&v| v > 0.0).count();
    order.truncate(k);
    (
        order.iter().map(|&i| x[i]).collect(),
        order.iter().map(|&i| i as i64).collect(),
    )
}

#[test]
fn a_top_k_of_a_computed_k_runs_in_stages_planned_for_k() {
    let model = control_flow_model("topk_stages.onnx");
    for offset in [1.2f32, 0.0, 5.0] {
        let x: Vec<f32> = (0..64)
            .map(|i| ((i * 7) % 11) as f32 * 0.3 - offset)
            .collect();
        let input = Tensor::from_vec(vec![64], x.clone()).unwrap();
        let (outputs, stages) = run_in_stages(&model, std::slice::from_ref(&input));
        assert_eq!(stages, 2, "k read back, then the TopK planned for it");
        let (values, indices) = top_positives(&x);
        assert_eq!(outputs[0].as_slice::<f32>().unwrap(), values.as_slice());
        assert_eq!(outputs[1].as_slice::<i64>().unwrap(), indices.as_slice());
    }
}

/// f32 `Einsum` forms that are not one matrix product (`lower/einsum.rs`), made with numpy's
/// outputs by `tests/data/einsum/make_models.py`: every step lowered, within the node suite's
/// tolerance of numpy.
#[test]
fn einsum_forms_that_are_not_a_matrix_product_lower_and_match_numpy() {
    use tessera_core::tensor::npy::read_npy;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/einsum");
    let names = [
        "sum",
        "transpose",
        "batch_diagonal",
        "trace",
        "outer",
        "bilinear",
        "diagonal_times_vector",
    ];
    for name in names {
        let model = Model::load(dir.join(format!("{name}.onnx"))).unwrap();
        let inputs: Vec<Tensor> = (0..)
            .map(|k| dir.join(format!("{name}.input_{k}.npy")))
            .take_while(|p| p.exists())
            .map(|p| read_npy(&p).unwrap())
            .collect();
        let expected = read_npy(&dir.join(format!("{name}.output.npy"))).unwrap();
        let (lowered, plan) = model
            .lower_then_for(&inputs, None, gpu_lowering(), |typed| {
                let plan = Plan::build(typed)?;
                plan.require_lowered()?;
                Ok(plan)
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let runtime: Vec<Tensor> = lowered.runtime_inputs(&inputs).cloned().collect();
        assert!(!runtime.is_empty(), "{name}: every input folded");
        let got = execute(&plan, &runtime).unwrap().remove(0);
        assert_eq!(got.shape(), expected.shape(), "{name}");
        for (a, e) in
            (got.as_slice::<f32>().unwrap().iter()).zip(expected.as_slice::<f32>().unwrap())
        {
            assert!((a - e).abs() <= 1e-5 + 1e-3 * e.abs(), "{name}: {a} vs {e}");
        }
    }
}

#[test]
fn a_computed_k_past_its_axis_is_an_error_naming_the_top_k() {
    install_panic_counter();
    let before = panics_seen_on_this_thread();
    let model = control_flow_model("topk_past_the_axis.onnx");
    let x: Vec<f32> = (0..64).map(|i| ((i * 7) % 11) as f32 * 0.3 - 1.2).collect();
    let input = Tensor::from_vec(vec![64], x).unwrap();
    let lowering = Lowering {
        folds: Folds::Small,
        ..gpu_lowering()
    };
    let lowered = model
        .lower_for(std::slice::from_ref(&input), None, lowering)
        .unwrap();
    let stages = split(&lowered.typed)
        .unwrap()
        .expect("a TopK of a computed k to cut at");
    let first = Plan::build(&stages.first).unwrap();
    let outputs = execute(&first, std::slice::from_ref(&input)).unwrap();
    let [count] = &stages.counts[..] else {
        panic!("one count: the TopK's k");
    };
    let k = outputs[count.output].as_slice::<i64>().unwrap()[0];
    assert_eq!(k, 35 + 60);
    let error = count.check(k).unwrap_err().to_string();
    assert!(
        error.contains("'top'") && error.contains("at most 64"),
        "{error}"
    );
    let error = stages.rest_for(&[k as usize]).unwrap_err().to_string();
    assert!(error.contains("at most 64"), "{error}");
    assert_eq!(
        panics_seen_on_this_thread(),
        before,
        "refused by a check, not a panic"
    );
}
