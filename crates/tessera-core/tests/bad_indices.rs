//! Out-of-range indices are an error naming the node, never a panic: tract indexes arrays with
//! them unchecked, so Tessera checks them first (`model/index_check.rs`). Node-suite models, their
//! index input replaced by one out of range, run on cpu.

#[allow(dead_code)]
mod common;

use std::path::PathBuf;
use std::sync::Arc;
use tessera_core::error::{install_panic_counter, panics_seen_on_this_thread};
use tessera_core::{Model, Tensor, TensorData};
use tessera_cpu::{CpuOptions, CpuSession};

fn node_dir(name: &str) -> PathBuf {
    common::shared_dir().join("onnx-tests/node").join(name)
}

/// `tensor` with its first element set to `value`.
fn with_first(tensor: &Tensor, value: i64) -> Tensor {
    let (shape, data) = tensor.clone().into_parts();
    let data = match data {
        TensorData::I64(mut v) => {
            v[0] = value;
            TensorData::I64(v)
        }
        TensorData::I32(mut v) => {
            v[0] = value as i32;
            TensorData::I32(v)
        }
        TensorData::F32(mut v) => {
            v[0] = value as f32;
            TensorData::F32(v)
        }
        other => panic!("unexpected index dtype {:?}", other.dtype()),
    };
    Tensor::new(shape, data).unwrap()
}

/// Runs node test `name` with input `index_input`'s first element set to `value` on cpu; returns
/// the error message. No panic may happen, caught or not.
fn run_with_index(name: &str, index_input: usize, value: i64) -> String {
    let dir = node_dir(name);
    let mut inputs = common::read_set(&dir, "input").unwrap();
    inputs[index_input] = with_first(&inputs[index_input], value);
    install_panic_counter();
    let before = panics_seen_on_this_thread();
    let model = Arc::new(Model::load(dir.join("model.onnx")).unwrap());
    let session = CpuSession::new(model, &CpuOptions { threads: Some(1) }).unwrap();
    let result = session.run(inputs);
    assert_eq!(
        panics_seen_on_this_thread(),
        before,
        "{name} with index {value}: Tessera panicked (caught or not)"
    );
    match result {
        Ok(outputs) => panic!("{name} with index {value} ran: {outputs:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn out_of_range_indices_are_errors_on_cpu() {
    for (name, index_input, op) in [
        ("test_gather_0", 1, "Gather"),
        ("test_gather_elements_0", 1, "GatherElements"),
        ("test_scatter_elements_with_axis", 1, "ScatterElements"),
        ("test_gathernd_example_int32", 1, "GatherNd"),
        // With a reduction tract indexes the data unchecked (a panic before the guard).
        ("test_scatternd_add", 1, "ScatterNd"),
        ("test_onehot_without_axis", 0, "OneHot"),
    ] {
        for value in [1000, -1000] {
            let message = run_with_index(name, index_input, value);
            // OneHot's depth is an input there: the error reported is the first folding
            // tried (tract needs the depth), not the index check of the next one.
            let checked =
                op == "OneHot" || message.contains(&format!("index {value} is out of range"));
            assert!(checked && message.contains(op), "{name}: {message}");
        }
    }
}

#[test]
fn in_range_negative_indices_still_run_on_cpu() {
    let dir = node_dir("test_gather_negative_indices");
    let inputs = common::read_set(&dir, "input").unwrap();
    let expected = common::read_set(&dir, "output").unwrap();
    let model = Arc::new(Model::load(dir.join("model.onnx")).unwrap());
    let session = CpuSession::new(model, &CpuOptions { threads: Some(1) }).unwrap();
    let outputs = session.run(inputs).unwrap();
    assert_eq!(outputs[0].data(), expected[0].data());
}
