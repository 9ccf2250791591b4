//! `tessera bench MODEL`: load time, first run, latency distribution, peak memory.

use super::{builder, describe_engine, millis};
use crate::args::BenchArgs;
use crate::inputs::gather;
use anyhow::Result;
use std::process::ExitCode;
use std::time::Instant;

#[derive(serde::Serialize)]
struct Report {
    model: String,
    backend: String,
    threads: usize,
    runs: u32,
    load_ms: f64,
    first_run_ms: f64,
    median_ms: f64,
    p90_ms: f64,
    mean_ms: f64,
    min_ms: f64,
    peak_rss_mb: Option<f64>,
    /// GPU backends: device memory the plan holds, and bytes copied per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    device_memory: Option<tessera::DeviceMemory>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transfers: Option<tessera::Transfers>,
}

/// Untimed runs at most while the cpu backend chooses its thread mode (a few runs plus about
/// 150 ms of pooled work: thousands only for a model that runs in microseconds).
const MAX_CALIBRATION_RUNS: usize = 10_000;

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    #[cfg(not(feature = "pictures"))]
    if args.html.is_some() {
        return Err(super::without_pictures("--html"));
    }
    if let Some(counts) = &args.scaling {
        return scaling(&args, counts);
    }
    let start = Instant::now();
    let session = builder(&args.engine).load(&args.model)?;
    let inputs: Vec<_> = gather(session.info(), &args.input)?
        .into_iter()
        .map(|(n, t, _)| (n, t))
        .collect();
    session.prepare(inputs.clone())?;
    let load_ms = millis(start.elapsed());
    let device_memory = session.plan_report(inputs.clone())?.map(|r| r.memory);

    let start = Instant::now();
    session.run(inputs.clone())?;
    let first_run_ms = millis(start.elapsed());
    for _ in 0..args.warmup {
        session.run(inputs.clone())?;
    }
    // Timed runs start once the cpu backend has chosen its thread mode: they measure the steady
    // state, not the calibration's mix of both modes.
    for _ in 0..MAX_CALIBRATION_RUNS {
        if !session.choosing_threads(inputs.clone())? {
            break;
        }
        session.run(inputs.clone())?;
    }
    let progress = Progress::new(args.runs, args.json);
    // Grown as runs finish: --runs is the user's number, not a size to reserve up front.
    let mut times = Vec::with_capacity(args.runs.min(1 << 16) as usize);
    for _ in 0..args.runs {
        let feeds = inputs.clone();
        let start = Instant::now();
        session.run(feeds)?;
        times.push(millis(start.elapsed()));
        progress.inc();
    }
    progress.finish();
    times.sort_by(f64::total_cmp);
    let quantile = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let report = Report {
        model: args.model.display().to_string(),
        backend: session.backend().to_string(),
        threads: session.threads(),
        runs: args.runs,
        load_ms,
        first_run_ms,
        median_ms: quantile(0.5),
        p90_ms: quantile(0.9),
        mean_ms: times.iter().sum::<f64>() / times.len() as f64,
        min_ms: times[0],
        peak_rss_mb: peak_rss_mb(),
        device_memory,
        transfers: session.last_transfers(),
    };
    let profile = if args.html.is_some() || args.profile_json.is_some() {
        Some(tessera::diagnostics::bench_report::profile(
            &session,
            inputs.clone(),
            args.runs,
        )?)
    } else {
        None
    };
    if let (Some(file), Some(profile)) = (&args.profile_json, &profile) {
        std::fs::write(file, serde_json::to_string_pretty(profile)?)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", file.display()))?;
    }
    #[cfg(feature = "pictures")]
    if let (Some(file), Some(profile)) = (&args.html, &profile) {
        let summary = tessera::diagnostics::bench_report::BenchSummary {
            model: report.model.clone(),
            backend: describe_engine(&session),
            load_ms: report.load_ms,
            first_run_ms: report.first_run_ms,
            latencies_ms: times.clone(),
        };
        let page = tessera::diagnostics::bench_report::render_html(&summary, profile)?;
        std::fs::write(file, page)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", file.display()))?;
        if !args.json {
            println!(
                "wrote {}: {} op types profiled ({})",
                file.display(),
                profile.per_op.len(),
                profile.method
            );
        }
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("model: {}", report.model);
        println!("backend: {}", describe_engine(&session));
        println!("load (model + plan): {:.2} ms", report.load_ms);
        println!("first run: {:.2} ms", report.first_run_ms);
        println!(
            "latency over {} runs: median {:.3} ms, p90 {:.3} ms, mean {:.3} ms, min {:.3} ms",
            report.runs, report.median_ms, report.p90_ms, report.mean_ms, report.min_ms
        );
        match report.peak_rss_mb {
            Some(mb) => println!("peak RSS: {mb:.1} MB"),
            None => println!("peak RSS: not available on this platform"),
        }
        if let Some(m) = &report.device_memory {
            println!(
                "peak device memory: {} = arena {} (largest live set {}, {:.2}x) + inputs {} + weights {} + other {}",
                tessera::plan_mib(m.total()),
                tessera::plan_mib(m.arena),
                tessera::plan_mib(m.peak_live),
                m.arena_ratio(),
                tessera::plan_mib(m.inputs),
                tessera::plan_mib(m.constants),
                tessera::plan_mib(m.other)
            );
        }
        if let Some(t) = &report.transfers {
            println!(
                "host<->device per run: {} bytes (inputs {}, outputs {}, fallback {})",
                t.total(),
                t.input_bytes,
                t.output_bytes,
                t.fallback_bytes
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Serialize)]
struct ScalingEntry {
    threads: usize,
    median_ms: f64,
    p90_ms: f64,
    /// Median relative to the first thread count's.
    ratio: f64,
}

/// `--scaling 1,2`: sessions with each thread count, warmed up, then timed in alternation.
fn scaling(args: &BenchArgs, counts: &[u16]) -> Result<ExitCode> {
    if counts.is_empty() || counts.contains(&0) {
        anyhow::bail!("--scaling needs thread counts of at least 1");
    }
    let mut sessions = Vec::new();
    for &threads in counts {
        let session = builder(&args.engine)
            .threads(threads.into())
            .load(&args.model)?;
        sessions.push(session);
    }
    let inputs: Vec<_> = gather(sessions[0].info(), &args.input)?
        .into_iter()
        .map(|(n, t, _)| (n, t))
        .collect();
    for session in &sessions {
        for _ in 0..=args.warmup {
            session.run(inputs.clone())?;
        }
        for _ in 0..MAX_CALIBRATION_RUNS {
            if !session.choosing_threads(inputs.clone())? {
                break;
            }
            session.run(inputs.clone())?;
        }
    }
    let progress = Progress::new(args.runs, args.json);
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); sessions.len()];
    for round in 0..args.runs as usize {
        // Rotate who goes first so neither count always runs on a just-warmed cache.
        for offset in 0..sessions.len() {
            let index = (round + offset) % sessions.len();
            let feeds = inputs.clone();
            let start = Instant::now();
            sessions[index].run(feeds)?;
            times[index].push(millis(start.elapsed()));
        }
        progress.inc();
    }
    progress.finish();
    let mut entries = Vec::new();
    for (session, mut samples) in sessions.iter().zip(times) {
        samples.sort_by(f64::total_cmp);
        let quantile = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        entries.push(ScalingEntry {
            threads: session.threads(),
            median_ms: quantile(0.5),
            p90_ms: quantile(0.9),
            ratio: 0.0,
        });
    }
    let base = entries[0].median_ms;
    for entry in &mut entries {
        entry.ratio = entry.median_ms / base;
    }
    if args.json {
        let report = serde_json::json!({ "model": args.model.display().to_string(), "runs": args.runs, "scaling": entries });
        println!("{report}");
    } else {
        println!(
            "model: {} ({} interleaved runs per thread count)",
            args.model.display(),
            args.runs
        );
        for entry in &entries {
            println!(
                "threads {:>2}: median {:.3} ms, p90 {:.3} ms, {:.2}x the {}-thread median",
                entry.threads, entry.median_ms, entry.p90_ms, entry.ratio, entries[0].threads
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Peak resident memory of this process (Linux: VmHWM).
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The bar a benchmark shows while it runs (indicatif's, on stderr; none with `--json`, and none
/// in builds without the `progress` feature: the edge boards').
struct Progress {
    #[cfg(feature = "progress")]
    bar: indicatif::ProgressBar,
}

impl Progress {
    #[cfg_attr(not(feature = "progress"), allow(unused_variables))]
    fn new(runs: u32, hidden: bool) -> Progress {
        #[cfg(feature = "progress")]
        {
            use indicatif::{ProgressBar, ProgressStyle};
            let bar = if hidden {
                ProgressBar::hidden()
            } else {
                ProgressBar::new(runs.into())
            };
            bar.set_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            Progress { bar }
        }
        #[cfg(not(feature = "progress"))]
        Progress {}
    }

    fn inc(&self) {
        #[cfg(feature = "progress")]
        self.bar.inc(1);
    }

    fn finish(&self) {
        #[cfg(feature = "progress")]
        self.bar.finish_and_clear();
    }
}
