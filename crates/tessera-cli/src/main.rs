//! `tessera`: run, inspect, check and benchmark ONNX models on any backend.
//! This binary is a shell: argument handling and I/O; the work is in the `tessera` library.

mod args;
mod commands;
mod inputs;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
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
