//! Any bytes given as a model must load or fail with an error; a panic or abort is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(model) = tessera_core::Model::from_bytes(data) {
        let _ = model.info();
    }
});
