//! `tessera`: run, inspect, check and benchmark ONNX models on any backend.
//! This binary is a shell: argument handling and I/O; the work is in the `tessera` library.

mod args;
mod commands;
mod inputs;

use clap::Parser;
use std::process::ExitCode;

// musl's allocator is the bottleneck of tract's many small allocations, and glibc's returns each
// large tensor's pages to the system, to fault them in again on the next run (Cargo.toml says
// by how much): mimalloc keeps both cheap.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // tract signals expected failures while it analyses a model as `anyhow` errors; with
    // RUST_BACKTRACE set, each captures a backtrace: +10-60% load time with glibc, 8x with the
    // static musl builds (whose unwinder scans for frames). Tessera prints errors without those
    // backtraces, so they stay off unless asked for by name; panics keep RUST_BACKTRACE.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: the first statement of main, before any other thread exists.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
    let cli = args::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("TESSERA_LOG"))
        .with_writer(std::io::stderr)
        .init();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
