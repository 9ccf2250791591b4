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
