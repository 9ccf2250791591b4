//! `tessera compare`'s search for the first diverging step, on a real wgpu trace (lavapipe in
//! CI): an untouched trace matches the host reference at every step; a trace with one step's
//! output altered is reported at exactly that step.

use tessera::check::{Tolerance, read_numbered};
use tessera::compare::{Divergence, first_divergence};
use tessera::{Backend, Session, Tensor, TensorData};
use tessera_conformance::*;

#[test]
fn the_first_altered_step_is_named() {
    let dir = shared_dir().join("models").join("mtcnn_onet");
    let session = Session::builder()
        .backend(Backend::Wgpu)
        .load(dir.join("model.onnx"))
        .unwrap();
    let names: Vec<String> = session.info().input_names();
    let inputs = read_numbered(&dir.join("test_data_set_0"), "input", &names).unwrap();
    let mut trace = session
        .trace(inputs)
        .unwrap()
        .expect("wgpu traces its runs");
    let tol = Tolerance::MODELS;
    match first_divergence(&trace, tol) {
        Divergence::NoStep { steps } => assert_eq!(steps, trace.plan.steps.len()),
        other => panic!("an untouched trace must match the reference: {other:?}"),
    }

    // Alter the output of a step in the middle of the plan (and so of every later one).
    let index = trace.plan.steps.len() / 2;
    let id = trace.plan.steps[index].outputs[0];
    let original = trace.values[&id].clone();
    let TensorData::F32(mut values) = original.data().clone() else {
        panic!("mtcnn_onet computes in f32");
    };
    values[0] += 1.0;
    trace.values.insert(
        id,
        Tensor::new(original.shape().to_vec(), TensorData::F32(values)).unwrap(),
    );
    match first_divergence(&trace, tol) {
        Divergence::Step {
            index: found,
            node,
            check,
            ..
        } => {
            assert_eq!(found, index, "named node '{node}'");
            assert_eq!(node, trace.plan.steps[index].node);
            assert_eq!(check.mismatches, 1);
            assert!((check.max_abs_err - 1.0).abs() < 1e-3);
        }
        other => panic!("expected the altered step, got {other:?}"),
    }
}
