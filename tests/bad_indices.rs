//! Out-of-range indices on every backend: the same error as on cpu (naming the node), never a
//! silent 0 from a shader and never a panic. Node-suite models with their index input replaced
//! by one out of range; wgpu runs on lavapipe in CI. See docs/robustness.md.

use tessera::{Backend, Session, Tensor, TensorData};
use tessera_conformance::{device_present, shared_dir};

/// `tensor` with its first element set to `value`.
fn with_first(tensor: Tensor, value: i64) -> Tensor {
    let (shape, data) = tensor.into_parts();
    let data = match data {
        TensorData::I64(mut v) => {
            v[0] = value;
            TensorData::I64(v)
        }
        TensorData::I32(mut v) => {
            v[0] = value as i32;
            TensorData::I32(v)
        }
        other => panic!("unexpected index dtype {:?}", other.dtype()),
    };
    Tensor::new(shape, data).unwrap()
}

fn run(
    backend: Backend,
    name: &str,
    index_input: usize,
    value: Option<i64>,
) -> tessera::Result<()> {
    let dir = shared_dir().join("onnx-tests/node").join(name);
    let session = Session::builder()
        .backend(backend)
        .load(dir.join("model.onnx"))
        .unwrap();
    let names: Vec<String> = session.info().input_names();
    let inputs = names
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let path = dir.join(format!("test_data_set_0/input_{k}.pb"));
            let tensor = tessera::onnx_pb::read_pb(&path).unwrap().1;
            let tensor = match value {
                Some(v) if k == index_input => with_first(tensor, v),
                _ => tensor,
            };
            (n.clone(), tensor)
        })
        .collect();
    session.run(inputs).map(drop)
}

const CASES: &[(&str, usize)] = &[
    ("test_gather_0", 1),
    ("test_gather_elements_0", 1),
    ("test_scatter_elements_with_axis", 1),
];

fn out_of_range_indices_are_errors(backend: Backend) {
    tessera::install_panic_counter();
    let before = tessera::panics_seen_on_this_thread();
    for &(name, index_input) in CASES {
        // In range (negative ones too), it runs.
        run(backend, name, index_input, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        run(backend, name, index_input, Some(-1)).unwrap_or_else(|e| panic!("{name}: {e}"));
        for value in [1000, -1000] {
            let message = run(backend, name, index_input, Some(value))
                .expect_err(&format!("{name} with index {value} ran on {backend}"))
                .to_string();
            assert!(
                message.contains(&format!("index {value} is out of range")),
                "{name} on {backend}: {message}"
            );
        }
    }
    assert_eq!(
        tessera::panics_seen_on_this_thread(),
        before,
        "Tessera panicked (caught or not)"
    );
}

#[test]
fn out_of_range_indices_are_errors_on_cpu() {
    out_of_range_indices_are_errors(Backend::Cpu);
}

#[test]
fn out_of_range_indices_are_errors_on_wgpu() {
    if device_present(Backend::Wgpu) {
        out_of_range_indices_are_errors(Backend::Wgpu);
    }
}
