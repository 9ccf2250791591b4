//! The threaded module (built with `+atomics`) must import a shared memory and export its
//! thread-local storage hooks for wasm-bindgen's thread glue; rustc stopped passing these linker
//! flags itself with `+atomics` (rust-lang/rust#147225). Its maximum is wasm32's whole 4 GiB, as
//! in onnxruntime-web's threaded module (the linker's default, 1 GiB, is too small for large
//! models).
fn main() {
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    if features.split(',').any(|f| f == "atomics") {
        for arg in [
            "--shared-memory",
            "--import-memory",
            "--max-memory=4294967296",
            "--export=__wasm_init_tls",
            "--export=__tls_size",
            "--export=__tls_align",
            "--export=__tls_base",
        ] {
            println!("cargo::rustc-link-arg-cdylib={arg}");
        }
    }
}
