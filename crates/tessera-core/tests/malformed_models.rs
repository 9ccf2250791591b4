//! Damaged model files must give errors, never panics: truncations and byte flips of a real model,
//! loaded, lowered and run on cpu. A panic that Tessera catches fails these tests too (the browser
//! build aborts on any panic): every one is counted ([`tessera_core::error::panics_seen`]).

use std::path::Path;
use std::sync::Arc;
use tessera_core::error::{install_panic_counter, panics_seen_on_this_thread};
use tessera_core::{Model, Tensor};
use tessera_cpu::{CpuOptions, CpuSession};

/// Runs `f`, failing when anything panicked during it, caught or not.
fn without_panics<T>(what: &str, f: impl FnOnce() -> T) -> T {
    install_panic_counter();
    let before = panics_seen_on_this_thread();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let panics = panics_seen_on_this_thread() - before;
    assert_eq!(
        panics, 0,
        "{what}: {panics} panic(s) inside Tessera (caught or not): fix it at its source"
    );
    outcome.unwrap_or_else(|_| panic!("{what}: a panic escaped"))
}

fn example_model() -> Vec<u8> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/text-orientation/model.onnx");
    std::fs::read(path).expect("the example model")
}

/// A deterministic byte stream (xorshift), so failures reproduce.
fn pseudo_random(seed: u64) -> impl Iterator<Item = u64> {
    let mut state = seed.max(1);
    std::iter::repeat_with(move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    })
}

/// Loads, lowers and runs (on cpu, on this thread) what loads; every step may fail, none may panic.
fn load_lower_and_run(bytes: &[u8], what: &str) {
    without_panics(what, || {
        let Ok(model) = Model::from_bytes(bytes) else {
            return;
        };
        let input = Tensor::from_vec(vec![1, 3, 48, 64], vec![0.5f32; 3 * 48 * 64]).unwrap();
        // The session lowers the model for the input (the same `lower`) before it runs.
        let options = CpuOptions { threads: Some(1) };
        if let Ok(session) = CpuSession::new(Arc::new(model), &options) {
            let _ = session.run(vec![input]);
        }
    });
}

#[test]
fn truncated_models_are_errors() {
    let bytes = example_model();
    for cut in (0..bytes.len()).step_by(bytes.len() / 200) {
        let result = without_panics(&format!("truncated at {cut}"), || {
            Model::from_bytes(&bytes[..cut])
        });
        assert!(
            result.is_err(),
            "a model truncated at {cut} of {} bytes loaded",
            bytes.len()
        );
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let original = example_model();
    // Most random flips land in the weights; the structure has its own test below, and the
    // fuzz targets (docs/fuzzing.md) run these paths by the million.
    for seed in [0x7e55e7a, 1, 0xdecade] {
        let mut random = pseudo_random(seed);
        for case in 0..60 {
            let mut bytes = original.clone();
            for _ in 0..4 {
                let at = (random.next().unwrap() as usize) % bytes.len();
                bytes[at] ^= (random.next().unwrap() & 0xff) as u8 | 1;
            }
            load_lower_and_run(&bytes, &format!("seed {seed:#x}, case {case}"));
        }
    }
}

/// Flips in the graph's structure (the start of the file: nodes, attributes, names) rather than
/// in the weights, where most random flips land.
#[test]
fn flipped_structure_bytes_never_panic() {
    use prost::Message;
    use tessera_core::tract_onnx::pb;
    let original = example_model();
    let mut proto = pb::ModelProto::decode(&original[..]).unwrap();
    // Strip the weights' bytes so flips land in the structure; the lengths stay right.
    for tensor in &mut proto.graph.as_mut().unwrap().initializer {
        let elements: i64 = tensor.dims.iter().product();
        if elements > 64 {
            tensor.raw_data = vec![0; tensor.raw_data.len()];
        }
    }
    let stripped = proto.encode_to_vec();
    // Non-zero bytes: the structure (and the few small weights), not the zeroed weights.
    let structure: Vec<usize> = (0..stripped.len())
        .filter(|&at| stripped[at] != 0)
        .collect();
    let mut random = pseudo_random(0x57c7);
    for case in 0..300 {
        let mut bytes = stripped.clone();
        for _ in 0..2 {
            let at = structure[(random.next().unwrap() as usize) % structure.len()];
            bytes[at] ^= (random.next().unwrap() & 0xff) as u8 | 1;
        }
        load_lower_and_run(&bytes, &format!("structure flip, case {case}"));
    }
}

#[test]
fn random_bytes_are_errors() {
    for seed in [42, 7, 1234] {
        let mut random = pseudo_random(seed);
        for len in [0usize, 1, 2, 7, 64, 300, 4096] {
            let bytes: Vec<u8> = (0..len).map(|_| random.next().unwrap() as u8).collect();
            let result =
                without_panics(&format!("{len} random bytes"), || Model::from_bytes(&bytes));
            assert!(result.is_err(), "{len} random bytes loaded as a model");
        }
    }
}

/// Found by `scripts/fuzz-smoke.sh`: a graph output that nothing produces made tract index a
/// missing key (a panic). It is now rejected before tract sees the model.
#[test]
fn undefined_graph_output_is_an_error() {
    use prost::Message;
    use tessera_core::tract_onnx::pb;
    let mut proto = pb::ModelProto::decode(&example_model()[..]).unwrap();
    proto.graph.as_mut().unwrap().output[0].name = "nobody_makes_this".into();
    let err = Model::from_bytes(&proto.encode_to_vec())
        .unwrap_err()
        .to_string();
    assert!(err.contains("declares output 'nobody_makes_this'"), "{err}");
}
