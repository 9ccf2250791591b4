//! `tessera doctor`: the environment each backend needs, what is there, and what is missing.

use crate::args::DoctorArgs;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(args: DoctorArgs) -> Result<ExitCode> {
    let report = tessera::diagnostics::doctor::doctor();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.render());
    }
    Ok(ExitCode::SUCCESS)
}
