//! Command-line arguments (clap). Usage errors exit with code 2, failures with 1.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use tessera::Backend;

#[derive(Debug, Parser)]
#[command(
    name = "tessera",
    version,
    about = "Run one ONNX file on cpu, wgpu or cuda, and say where it runs."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a model once and print its outputs.
    Run(RunArgs),
    /// Show a model's inputs, outputs, opset, ops, and which backends can run them.
    Inspect(InspectArgs),
    /// List every backend: available or not, and why; devices found.
    Devices(DevicesArgs),
    /// Run MODEL_DIR/model.onnx on every test_data_set_* and compare with output_*.pb.
    Check(CheckArgs),
    /// Time loading and running a model.
    Bench(BenchArgs),
    /// Run the same inputs on several backends, compare every output, and name the first node
    /// where they part.
    Compare(CompareArgs),
    /// Serve models over HTTP with the Open Inference Protocol (KServe v2 / Triton).
    Serve(ServeArgs),
    /// Report the environment: CPU features, threads, Vulkan drivers, wgpu adapters, CUDA
    /// libraries, and for each backend why it is unavailable and what to install.
    Doctor(DoctorArgs),
}

/// Where and how to run.
#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Backend: cpu, wgpu, cuda or auto.
    #[arg(long, default_value = "cpu", value_parser = parse_backend)]
    pub backend: Backend,
    /// Worker threads on the cpu backend [default: one per core].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// On a GPU backend, run ops it has no kernel for on the host instead of refusing the
    /// model; every copy this causes is listed (`tessera inspect --backend`) and counted.
    #[arg(long)]
    pub allow_fallback: bool,
}

/// Model inputs: files, or random values.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// An input as NAME=FILE (.npy, .pb), or an .npz of named arrays; repeatable. Inputs not given are random.
    #[arg(long = "input", short = 'i', value_name = "NAME=FILE")]
    pub inputs: Vec<String>,
    /// Size for a symbolic dim of random inputs, as SYMBOL=N (e.g. batch=4). Unnamed open dims are 1.
    #[arg(long = "dim", value_name = "SYMBOL=N")]
    pub dims: Vec<String>,
    /// Seed for random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The ONNX model file.
    pub model: PathBuf,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// Write each output to DIR/<name>.npy.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// How many values of each output to print.
    #[arg(long, default_value_t = 8)]
    pub show: usize,
    /// Run node by node and stop at the first node whose output holds NaN or Inf, naming it
    /// with its inputs' value ranges (slower: every output is scanned; on a GPU read back).
    #[arg(long)]
    pub check_finite: bool,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The ONNX model file.
    pub model: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also plan the model on this backend and show where every step runs, every copy between
    /// host and device, and the device memory (shapes from --input/--dim, or the declared ones).
    #[arg(long, value_parser = parse_backend)]
    pub backend: Option<Backend>,
    /// With --backend: plan with host fallback allowed (shows what would fall back).
    #[arg(long, requires = "backend")]
    pub allow_fallback: bool,
    /// Draw the placement (steps coloured by device, copies with bytes, unsupported steps in
    /// red, legend) to FILE.svg or FILE.html (a self-contained page). Backend cpu by default.
    #[arg(long, value_name = "FILE")]
    pub graph: Option<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A folder with model.onnx (inputs from its test_data_set_0 when there is one), or an
    /// ONNX file (random inputs unless given).
    pub model: PathBuf,
    /// Backends to compare; the first is the baseline.
    #[arg(long, value_delimiter = ',', default_value = "cpu,wgpu", value_parser = parse_backend)]
    pub backends: Vec<Backend>,
    #[command(flatten)]
    pub input: InputArgs,
    /// Relative tolerance.
    #[arg(long, default_value_t = 1e-3)]
    pub rtol: f64,
    /// Absolute tolerance.
    #[arg(long, default_value_t = 1e-4)]
    pub atol: f64,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A folder with model.onnx and test_data_set_*/ (the ONNX test layout).
    pub model_dir: PathBuf,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Relative tolerance.
    #[arg(long, default_value_t = 1e-3)]
    pub rtol: f64,
    /// Absolute tolerance.
    #[arg(long, default_value_t = 1e-4)]
    pub atol: f64,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The ONNX model file.
    pub model: PathBuf,
    #[command(flatten)]
    pub engine: EngineArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// Timed runs.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Untimed runs before timing, after the first run (the cpu backend compares pooled and
    /// single-threaded execution over its first runs of a plan; timing starts once it has chosen).
    #[arg(long, default_value_t = 6)]
    pub warmup: u32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained page to FILE: per-op time (profiled over --runs extra runs)
    /// as bars, and the latency histogram of the timed runs.
    #[arg(long, value_name = "FILE", conflicts_with = "scaling")]
    pub html: Option<PathBuf>,
    /// Also write the per-op profile (profiled over --runs extra runs) as JSON to FILE: per op
    /// type and per node, ms per run (bench/op_profile_vs_ort.py reads it).
    #[arg(long, value_name = "FILE", conflicts_with = "scaling")]
    pub profile_json: Option<PathBuf>,
    /// Compare thread counts in one process (e.g. 1,2): one session each, timed runs interleaved,
    /// so machine noise hits every count alike. Replaces --threads.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "N,N,...",
        conflicts_with = "threads"
    )]
    pub scaling: Option<Vec<u16>>,
}

fn parse_backend(s: &str) -> Result<Backend, String> {
    s.parse()
}

#[derive(Debug, Args)]
#[cfg_attr(not(feature = "serve"), allow(dead_code))]
pub struct ServeArgs {
    /// A model to serve, as NAME=PATH.onnx; repeatable.
    #[arg(long = "model", value_name = "NAME=PATH")]
    pub models: Vec<String>,
    /// A folder with one folder per model: NAME/model.onnx, or NAME/<version>/model.onnx.
    #[arg(long, value_name = "DIR")]
    pub model_repository: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub host: std::net::IpAddr,
    /// Port to listen on (0: any free port; the chosen one is printed).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Threads running each model (each runs one request or batch at a time).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: u16,
    /// Requests a model may have waiting; more are refused with 503.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub queue: u32,
    /// Largest request body in MiB (413 above).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_body_mib: u32,
    /// Longest a request may wait and run, in seconds (504 after).
    #[arg(long, default_value_t = 60.0)]
    pub timeout_s: f64,
    /// On SIGTERM, keep serving this many seconds with /v2/health/ready answering 503 before
    /// refusing connections: the time a load balancer (Kubernetes endpoints) needs to stop
    /// sending new requests here. Accepted requests are always finished.
    #[arg(long, default_value_t = 0.0)]
    pub drain_delay_s: f64,
    /// Dynamic batching: merge queued requests into runs of up to this many rows (first dim),
    /// for models whose inputs all have an open first dim. Off unless given.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_batch: Option<u32>,
    /// With --max-batch: how long to wait for more requests after the first, in µs.
    #[arg(long, default_value_t = 500, requires = "max_batch")]
    pub batch_timeout_us: u64,
}
