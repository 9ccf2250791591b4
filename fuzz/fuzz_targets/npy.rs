//! Any bytes given as a `.npy` file decode or fail with an error: no panic, no allocation
//! sized by what the header claims rather than by the bytes present.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(tensor) = tessera_core::tensor::npy::npy_from_bytes(data) {
        // What decoded must re-encode and decode to the same tensor.
        let bytes = tessera_core::tensor::npy::npy_to_bytes(&tensor).expect("re-encode");
        let back = tessera_core::tensor::npy::npy_from_bytes(&bytes).expect("decode again");
        assert_eq!(back.shape(), tensor.shape());
        assert_eq!(back.len(), tensor.len());
    }
});
