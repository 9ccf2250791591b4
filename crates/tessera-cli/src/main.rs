//! `tessera`: run, inspect, check and benchmark ONNX models on any backend.
//! This binary is a shell: argument handling and I/O; the work is in the `tessera` library.

mod args;
mod commands;
mod inputs;

use clap::Parser;
use std::process::ExitCode;

// Static musl builds (edge boards, the serving image): musl's own allocator is the bottleneck of
// tract's many small allocations (Cargo.toml says by how much).
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// glibc serves blocks over 128 KiB-4 MiB (its threshold moves) with their own `mmap` and gives
/// them back on free, so every run faulted each large tensor's pages in again and zeroed them:
/// 115k page faults in 30 runs of ppocrv4_det, 15% of its time. Taking blocks up to 32 MiB from
/// the heap and trimming it only past 512 MiB keeps those pages between runs (27k faults, peak
/// RSS unchanged), as onnxruntime's arena does.
#[cfg(target_env = "gnu")]
fn keep_tensor_pages() {
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

#[cfg(not(target_env = "gnu"))]
fn keep_tensor_pages() {}

fn main() -> ExitCode {
    // tract signals expected failures while it analyses a model as `anyhow` errors; with
    // RUST_BACKTRACE set, each captures a backtrace: +10-60% load time with glibc, 8x with the
    // static musl builds (whose unwinder scans for frames). Tessera prints errors without those
    // backtraces, so they stay off unless asked for by name; panics keep RUST_BACKTRACE.
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        // SAFETY: the first statement of main, before any other thread exists.
        unsafe { std::env::set_var("RUST_LIB_BACKTRACE", "0") };
    }
    keep_tensor_pages();
    let cli = args::Cli::parse();
    init_logging();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr at the levels `TESSERA_LOG` names: `LEVEL` or `TARGET=LEVEL`, comma-separated
/// (e.g. `debug`, `info,tract_core=warn`); errors only when unset. tracing-subscriber's `Targets`
/// parses it: its `EnvFilter` (span and field filters) would add a regex engine, 0.15 MB of an
/// edge binary.
fn init_logging() {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::prelude::*;
    let errors_only = Targets::new().with_default(LevelFilter::ERROR);
    let filter = match std::env::var("TESSERA_LOG") {
        Ok(spec) if !spec.trim().is_empty() => spec.parse::<Targets>().unwrap_or_else(|error| {
            eprintln!(
                "warning: TESSERA_LOG={spec:?} ignored ({error}); expected LEVEL or TARGET=LEVEL, \
                 comma-separated"
            );
            errors_only.clone()
        }),
        _ => errors_only,
    };
    tracing_subscriber::registry()
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(filter)
        .init();
}
