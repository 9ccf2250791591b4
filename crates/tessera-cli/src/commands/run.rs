//! `tessera run MODEL`: one inference, outputs printed and optionally saved.

use super::{builder, describe_engine, millis};
use crate::args::RunArgs;
use crate::inputs::{Origin, gather};
use anyhow::{Context, Result};
use std::process::ExitCode;
use std::time::Instant;

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let start = Instant::now();
    let session = builder(&args.engine).load(&args.model)?;
    let loaded = start.elapsed();
    let info = session.info();
    println!("model: {} (opset {})", args.model.display(), info.opset);
    println!("backend: {}", describe_engine(&session));
    let inputs = gather(info, &args.input)?;
    for (name, tensor, origin) in &inputs {
        let origin = match origin {
            Origin::File(f) => format!("from {f}"),
            Origin::Random => format!("random, seed {}", args.input.seed),
        };
        println!(
            "input  '{name}': {}{:?} ({origin})",
            tensor.dtype(),
            tensor.shape()
        );
    }
    let feeds = inputs
        .into_iter()
        .map(|(name, tensor, _)| (name, tensor))
        .collect();
    if args.check_finite {
        return check_finite(&session, feeds);
    }
    let start = Instant::now();
    let outputs = session.run(feeds)?;
    let ran = start.elapsed();
    for (name, tensor) in &outputs {
        println!("output '{name}': {}", tensor.summary(args.show));
    }
    if let Some(dir) = &args.output {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (name, tensor) in &outputs {
            let file = dir.join(format!("{}.npy", sanitize(name)));
            tessera::npy::write_npy(&file, tensor)?;
            println!("wrote {}", file.display());
        }
    }
    println!(
        "time: load {:.1} ms, first run {:.1} ms (includes building the plan for these shapes)",
        millis(loaded),
        millis(ran)
    );
    Ok(ExitCode::SUCCESS)
}

/// Output names may hold `/` or `:`; keep file names portable.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `--check-finite`: run node by node; exit 1 naming the first node with NaN or Inf.
fn check_finite(
    session: &tessera::Session,
    feeds: Vec<(String, tessera::Tensor)>,
) -> Result<ExitCode> {
    use tessera::diagnostics::FiniteCheck;
    let start = Instant::now();
    let outcome = tessera::diagnostics::check_finite(session, feeds)?;
    let took = millis(start.elapsed());
    match outcome {
        FiniteCheck::AllFinite => {
            println!("check-finite: every node's output is finite ({took:.1} ms)");
            Ok(ExitCode::SUCCESS)
        }
        FiniteCheck::Input(range) => {
            println!("check-finite: an input is not finite: {range}");
            Ok(ExitCode::FAILURE)
        }
        FiniteCheck::NonFinite(found) => {
            print!("check-finite: {found}");
            Ok(ExitCode::FAILURE)
        }
    }
}
