//! `cfg(pooled)`: builds whose runs can use a rayon thread pool — native ones, and wasm built
//! with `+atomics` (the browser's threaded module, its pool started by wasm-bindgen-rayon).
fn main() {
    println!("cargo::rustc-check-cfg=cfg(pooled)");
    let wasm =
        std::env::var("CARGO_CFG_TARGET_FAMILY").is_ok_and(|f| f.split(',').any(|f| f == "wasm"));
    let atomics = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|f| f.split(',').any(|f| f == "atomics"));
    if !wasm || atomics {
        println!("cargo::rustc-cfg=pooled");
    }
}
