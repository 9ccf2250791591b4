//! `tessera compare MODEL --backends cpu,wgpu`: the same inputs on each backend, every output
//! compared with the first backend's, and the first diverging node named when they part.

use crate::args::CompareArgs;
use crate::inputs::gather;
use anyhow::Result;
use std::process::ExitCode;
use tessera::check::{Tolerance, data_set_dirs, read_numbered};
use tessera::compare::{BackendRun, Divergence, compare_backends};
use tessera::{Model, Tensor};

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    if args.backends.len() < 2 {
        anyhow::bail!("--backends needs at least two backends (the first is the baseline)");
    }
    let (model_path, data_set) = if args.model.is_dir() {
        let first = data_set_dirs(&args.model)?.into_iter().next();
        (args.model.join("model.onnx"), first)
    } else {
        (args.model.clone(), None)
    };
    let model = Model::load(&model_path)?;
    let info = model.info();
    let (inputs, origin): (Vec<(String, Tensor)>, String) = match &data_set {
        Some(dir) if args.input.inputs.is_empty() => {
            let names: Vec<String> = info.inputs.iter().map(|i| i.name.clone()).collect();
            (
                read_numbered(dir, "input", &names)?,
                dir.display().to_string(),
            )
        }
        _ => (
            gather(info, &args.input)?
                .into_iter()
                .map(|(n, t, _)| (n, t))
                .collect(),
            format!("--input files, else random (seed {})", args.input.seed),
        ),
    };
    drop(model);
    let tol = Tolerance {
        rtol: args.rtol,
        atol: args.atol,
    };
    let comparison = compare_backends(&model_path, &args.backends, inputs, tol)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        println!("model: {}", model_path.display());
        println!("inputs: {origin}");
        println!(
            "tolerance: rtol {:e}, atol {:e}; baseline: {}",
            tol.rtol, tol.atol, comparison.baseline.backend
        );
        print_run(&comparison.baseline, true);
        for run in &comparison.others {
            print_run(run, false);
        }
        println!(
            "{}",
            if comparison.agrees() {
                "all backends agree"
            } else {
                "backends DISAGREE"
            }
        );
    }
    Ok(if comparison.agrees() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_run(run: &BackendRun, baseline: bool) {
    let device = run
        .device
        .as_ref()
        .map(|d| format!(" on {d}"))
        .unwrap_or_default();
    if let Some(error) = &run.error {
        println!("{}{device}: ERROR: {error}", run.backend);
        return;
    }
    if baseline {
        println!("{}{device}: baseline", run.backend);
        return;
    }
    println!("{}{device}:", run.backend);
    for output in &run.outputs {
        println!(
            "  {:<24} {:<20} max abs diff {:.3e}  max rel diff {:.3e}  {}",
            output.name,
            output.actual,
            output.max_abs_err,
            output.max_rel_err,
            if output.passed {
                "agree".to_string()
            } else if output.actual != output.expected {
                format!("DIFFER (baseline has {})", output.expected)
            } else {
                format!("DIFFER ({} elements)", output.mismatches)
            }
        );
    }
    match &run.divergence {
        None => {}
        Some(Divergence::Step {
            index,
            node,
            op,
            value,
            check,
        }) => println!(
            "  first divergence: step {index}, node '{node}' ({op}): output '{value}' differs from the host reference by up to {:.3e} (rel {:.3e}, {} elements) while its inputs agree",
            check.max_abs_err, check.max_rel_err, check.mismatches
        ),
        Some(Divergence::NoStep { steps }) => println!(
            "  every one of the {steps} steps matches the host reference of the same plan: the difference lies between the plan (tract's decluttered graph) and the baseline backend"
        ),
        Some(Divergence::Unavailable(why)) => println!("  first divergence: not found ({why})"),
    }
}
