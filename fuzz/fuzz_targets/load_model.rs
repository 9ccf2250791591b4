//! Any bytes given as a model must load or fail with an error; a panic that escapes Tessera, or
//! an abort, is a bug. (Panics inside tract that Tessera catches and reports as internal errors
//! are not counted: libfuzzer-sys's hook would abort on them, so it is replaced.)
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        std::panic::set_hook(Box::new(|_| {}));
    },
    |data: &[u8]| {
        if let Ok(model) = tessera_core::Model::from_bytes(data) {
            let _ = model.info();
        }
    }
);
