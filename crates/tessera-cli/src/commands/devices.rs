//! `tessera devices`: every backend, whether it is usable here, and why not.

use crate::args::DevicesArgs;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(args: DevicesArgs) -> Result<ExitCode> {
    let statuses = tessera::backends();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&statuses)?);
        return Ok(ExitCode::SUCCESS);
    }
    for status in &statuses {
        let state = if status.available {
            "available"
        } else {
            "unavailable"
        };
        println!("{:<5} {state}: {}", status.backend, status.detail);
        for device in &status.devices {
            println!("      device: {device}");
        }
    }
    match tessera::resolve_backend(tessera::Backend::Auto) {
        Ok((_, why)) => println!("auto  -> {why}"),
        Err(e) => println!("auto  -> {e}"),
    }
    Ok(ExitCode::SUCCESS)
}
