//! One module per subcommand.

mod bench;
mod check;
mod compare;
mod devices;
mod doctor;
mod inspect;
mod run;
#[cfg(feature = "serve")]
mod serve;

use crate::args::{Cli, Command, EngineArgs};
use std::process::ExitCode;
use tessera::{Session, SessionBuilder};

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Devices(args) => devices::run(args),
        Command::Check(args) => check::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Compare(args) => compare::run(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve::run(args),
        #[cfg(not(feature = "serve"))]
        Command::Serve(_) => anyhow::bail!(
            "this tessera was built without the server (cargo feature `serve`, left out of the \
             edge boards' build): use a build with it, e.g. the serving image"
        ),
        Command::Doctor(args) => doctor::run(args),
    }
}

/// What `flag` says in a build without the drawn reports (the edge boards' build).
#[cfg(not(feature = "pictures"))]
fn without_pictures(flag: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{flag}: this tessera was built without pictures (cargo feature `pictures`, left out of \
         the edge boards' build to keep it small): draw it with a build that has them"
    )
}

/// The session builder the engine flags ask for.
fn builder(engine: &EngineArgs) -> SessionBuilder {
    let builder = Session::builder()
        .backend(engine.backend)
        .allow_fallback(engine.allow_fallback);
    match engine.threads {
        Some(threads) => builder.threads(threads.into()),
        None => builder,
    }
}

/// `cpu (cpu requested), 2 threads`.
fn describe_engine(session: &Session) -> String {
    match session.backend() {
        tessera::Backend::Cpu => format!(
            "{} ({}), {} thread(s)",
            session.backend(),
            session.backend_choice(),
            session.threads()
        ),
        other => format!(
            "{other} ({}){}",
            session.backend_choice(),
            session
                .device_name()
                .map(|d| format!(" on {d}"))
                .unwrap_or_default()
        ),
    }
}

fn millis(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
