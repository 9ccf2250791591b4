//! Any bytes given as a model must load or fail with an error. A panic is a crash even when
//! Tessera catches it (in wasm a panic traps the module): each is fixed at its source.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // libfuzzer-sys's hook aborts at the panic, before Tessera's catch_panic can report it;
        // the panic is printed and counted instead, and the case aborts once the call returns.
        std::panic::set_hook(Box::new(|info| eprintln!("panicked: {info}")));
        tessera_core::error::install_panic_counter();
    },
    |data: &[u8]| {
        if let Ok(model) = tessera_core::Model::from_bytes(data) {
            let _ = model.info();
        }
        abort_on_caught_panics();
    }
);

/// A panic that Tessera caught (and turned into an error) is still a crash.
fn abort_on_caught_panics() {
    if tessera_core::error::panics_seen() > 0 {
        eprintln!("a panic was caught inside Tessera: fix it at its source");
        std::process::abort();
    }
}
