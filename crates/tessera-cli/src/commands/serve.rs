//! `tessera serve`: the Open Inference Protocol server (the work is in `tessera-server`).

use super::builder;
use crate::args::ServeArgs;
use anyhow::{Context, Result, bail};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;
use tessera_server::{Batching, ModelSpec, Server, ServerConfig, scan_repository};

pub fn run(args: ServeArgs) -> Result<ExitCode> {
    let mut models = args
        .models
        .iter()
        .map(|spec| ModelSpec::parse(spec))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(dir) = &args.model_repository {
        models.extend(scan_repository(dir)?);
    }
    if models.is_empty() {
        bail!("nothing to serve: give --model NAME=PATH.onnx or --model-repository DIR");
    }
    if !(args.timeout_s.is_finite() && args.timeout_s > 0.0) {
        bail!("--timeout-s must be a positive number of seconds");
    }
    if !(args.drain_delay_s.is_finite() && (0.0..=3600.0).contains(&args.drain_delay_s)) {
        bail!("--drain-delay-s must be between 0 and 3600 seconds");
    }
    let mut config = ServerConfig::new(models);
    config.addr = SocketAddr::new(args.host, args.port);
    config.session = builder(&args.engine);
    config.workers_per_model = args.workers.into();
    config.queue_capacity = args.queue as usize;
    config.max_body_bytes = (args.max_body_mib as usize) << 20;
    config.request_timeout = Duration::from_secs_f64(args.timeout_s);
    config.drain_delay = Duration::from_secs_f64(args.drain_delay_s);
    config.batching = args.max_batch.map(|max_batch| Batching {
        max_batch: max_batch as usize,
        timeout: Duration::from_micros(args.batch_timeout_us),
    });

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let server = Server::bind(config).await?;
        // Scripts wait for this line (and for /v2/health/ready).
        println!(
            "serving {} model(s) on http://{} ({})",
            server.model_names().len(),
            server.local_addr(),
            server.model_names().join(", ")
        );
        server.run_until_signal().await
    })?;
    println!("stopped");
    Ok(ExitCode::SUCCESS)
}
