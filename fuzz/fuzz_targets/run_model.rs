//! Any bytes given as a model load or fail with an error, and a model that loads runs on the
//! cpu backend (or fails with an error) on inputs of its declared shapes: symbolic and unknown
//! dims set to 1..=4, values taken from the model bytes. Inputs past 2^16 elements in all are
//! skipped, so the fuzzer never allocates giant tensors legitimately.
//!
//! As in load_model, a panic is a crash even when Tessera catches it (in wasm a panic traps the
//! module): each is fixed at its source.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tessera::{Backend, DType, Dim, Session, Tensor};

const MAX_INPUT_ELEMENTS: usize = 1 << 16;

fuzz_target!(
    init: {
        // libfuzzer-sys's hook aborts at the panic, before Tessera's catch_panic can report it;
        // the panic is printed and counted instead, and the case aborts once the call returns.
        std::panic::set_hook(Box::new(|info| eprintln!("panicked: {info}")));
        tessera_core::error::install_panic_counter();
    },
    |data: &[u8]| {
        load_and_run(data);
        abort_on_caught_panics();
    }
);

fn load_and_run(data: &[u8]) {
    let Ok(session) = Session::builder()
        .backend(Backend::Cpu)
        .threads(1)
        .load_bytes(data)
    else {
        return;
    };
    let seed = data.len();
    let mut total = 0usize;
    let mut inputs = Vec::new();
    for (i, input) in session.info().inputs.iter().enumerate() {
        let shape: Vec<usize> = match &input.dims {
            Some(dims) => dims
                .iter()
                .enumerate()
                .map(|(j, d)| match d {
                    Dim::Fixed(n) => *n,
                    Dim::Symbol(_) | Dim::Unknown => 1 + (seed + i + j) % 4,
                })
                .collect(),
            None => vec![1 + (seed + i) % 4],
        };
        let Some(count) = tessera::element_count(&shape) else {
            return;
        };
        total = total.saturating_add(count);
        if total > MAX_INPUT_ELEMENTS {
            return;
        }
        let size = input.dtype.size_of();
        // Small values (0..8 for integers: valid indices and sizes more often than not).
        let bytes: Vec<u8> = (0..count * size)
            .map(|k| {
                let b = data
                    .get((k / size + i) % data.len().max(1))
                    .copied()
                    .unwrap_or(0);
                match (input.dtype, k % size) {
                    (DType::F32, 3) => 0x3f,
                    (DType::F64, 7) => 0x3f,
                    (DType::F16, 1) => 0x3c,
                    (DType::F32 | DType::F64 | DType::F16, _) => b,
                    (_, 0) => b % 8,
                    _ => 0,
                }
            })
            .collect();
        let Ok(tensor) = Tensor::from_le_bytes(input.dtype, shape, &bytes) else {
            return;
        };
        inputs.push((input.name.clone(), tensor));
    }
    let _ = session.run(inputs);
}

/// A panic that Tessera caught (and turned into an error) is still a crash.
fn abort_on_caught_panics() {
    if tessera_core::error::panics_seen() > 0 {
        eprintln!("a panic was caught inside Tessera: fix it at its source");
        std::process::abort();
    }
}
