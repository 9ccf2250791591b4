//! `tessera check MODEL_DIR`: compare every test_data_set_* with its expected outputs.

use super::{builder, describe_engine};
use crate::args::CheckArgs;
use anyhow::{Result, bail};
use std::process::ExitCode;
use tessera::check::{Tolerance, check_data_set, data_set_dirs};

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let tol = Tolerance {
        rtol: args.rtol,
        atol: args.atol,
    };
    let session = builder(&args.engine).load(args.model_dir.join("model.onnx"))?;
    let data_sets = data_set_dirs(&args.model_dir)?;
    if data_sets.is_empty() {
        bail!("{} has no test_data_set_* folder", args.model_dir.display());
    }
    println!("model: {}", args.model_dir.join("model.onnx").display());
    println!("backend: {}", describe_engine(&session));
    println!(
        "tolerance: rtol {:e}, atol {:e} (|actual - expected| <= atol + rtol * |expected|)",
        tol.rtol, tol.atol
    );
    let mut failed = 0;
    for dir in &data_sets {
        let check = check_data_set(&session, dir, tol);
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(error) = &check.error {
            println!("{name}: FAIL: {error}");
            failed += 1;
            continue;
        }
        for output in &check.outputs {
            println!(
                "{name} {:<24} {:<20} max abs err {:.3e}  max rel err {:.3e}  {}",
                output.name,
                output.actual,
                output.max_abs_err,
                output.max_rel_err,
                if output.passed {
                    "pass".to_string()
                } else if output.actual != output.expected {
                    format!("FAIL (expected {})", output.expected)
                } else {
                    format!("FAIL ({} elements off)", output.mismatches)
                }
            );
        }
        failed += usize::from(!check.passed());
    }
    println!(
        "{} of {} data set(s) pass",
        data_sets.len() - failed,
        data_sets.len()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
