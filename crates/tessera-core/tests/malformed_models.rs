//! Damaged model files must give errors, never panics: truncations and byte flips of a real model.

use std::path::Path;
use tessera_core::{Model, Tensor};

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

fn load_and_maybe_lower(bytes: &[u8]) {
    let outcome = std::panic::catch_unwind(|| {
        if let Ok(model) = Model::from_bytes(bytes) {
            let input = Tensor::from_vec(vec![1, 3, 48, 64], vec![0.5f32; 3 * 48 * 64]).unwrap();
            let _ = model.lower(&[input], None);
        }
    });
    assert!(outcome.is_ok(), "a damaged model made Tessera panic");
}

#[test]
fn truncated_models_are_errors() {
    let bytes = example_model();
    for cut in (0..bytes.len()).step_by(bytes.len() / 40) {
        let result = Model::from_bytes(&bytes[..cut]);
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
    let mut random = pseudo_random(0x7e55e7a);
    for _ in 0..60 {
        let mut bytes = original.clone();
        for _ in 0..4 {
            let at = (random.next().unwrap() as usize) % bytes.len();
            bytes[at] ^= (random.next().unwrap() & 0xff) as u8 | 1;
        }
        load_and_maybe_lower(&bytes);
    }
}

#[test]
fn random_bytes_are_errors() {
    let mut random = pseudo_random(42);
    for len in [0usize, 1, 7, 64, 4096] {
        let bytes: Vec<u8> = (0..len).map(|_| random.next().unwrap() as u8).collect();
        assert!(
            Model::from_bytes(&bytes).is_err(),
            "{len} random bytes loaded as a model"
        );
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
