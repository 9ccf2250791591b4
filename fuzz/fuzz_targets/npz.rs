//! Any bytes given as a `.npz` archive read or fail with an error: zip members state their own
//! sizes, and those are not to be trusted.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(arrays) = tessera_core::tensor::npy::npz_from_reader(std::io::Cursor::new(data)) {
        for (_, tensor) in arrays {
            let _ = tensor.summary(4);
        }
    }
});
