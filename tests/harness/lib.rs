//! The conformance harness: runs ONNX-layout model folders (the node suite, the shared real
//! models) on a backend, classifies each failure by cause, and compares the pass set with a
//! checked-in list so that a regression fails the build.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tessera::check::{Tolerance, check_data_set, data_set_dirs, read_numbered};
use tessera::{Backend, Error, Session};

/// Where the shared test data lives: `$TESSERA_SHARED`, else `../shared` beside the repository.
pub fn shared_dir() -> PathBuf {
    std::env::var_os("TESSERA_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("..")
                .join("shared")
        })
}

/// The repository root.
pub fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Why a case failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// An operator no backend implements.
    UnsupportedOp,
    /// An element type Tessera does not hold (float8, int4, bfloat16, strings, sequences).
    UnsupportedDtype,
    /// tract needed a constant that even folding the inputs could not provide.
    NeedsConstant,
    /// It ran, but an output is out of tolerance (or has the wrong dtype or shape).
    WrongResult,
    /// Any other error (invalid model for tract, failed plan...).
    OtherError,
    /// Did not finish within the time limit.
    Timeout,
    /// Something panicked during the case (caught by Tessera or not): a failure even when the
    /// outputs matched, because the browser build aborts on any panic.
    Panicked,
}

/// The outcome of one model folder.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// Folder name, e.g. `test_abs`.
    pub name: String,
    /// `None` when every data set passed.
    pub failure: Option<(Cause, String)>,
    /// Wall time of load and runs.
    pub elapsed: Duration,
    /// On a GPU backend, a passing case whose plan has no step: its outputs were known when the
    /// plan was made (a shape-only op, or every input small enough to be folded in).
    pub no_device_step: bool,
}

fn classify(error: &Error) -> Cause {
    match error {
        Error::UnsupportedOps { .. } => Cause::UnsupportedOp,
        Error::UnsupportedDtype { .. } => Cause::UnsupportedDtype,
        other => {
            let message = other.to_string().to_lowercase();
            if message.contains("unsupported datum type")
                || message.contains("string") && message.contains("datum")
            {
                Cause::UnsupportedDtype
            } else if message.contains("const")
                && (message.contains("expect")
                    || message.contains("must")
                    || message.contains("need"))
            {
                Cause::NeedsConstant
            } else {
                Cause::OtherError
            }
        }
    }
}

/// Runs every data set of one model folder on a backend.
pub fn run_case(dir: &Path, backend: Backend, tol: Tolerance) -> CaseResult {
    let start = Instant::now();
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut no_device_step = false;
    let failure = (|| {
        let session = Session::builder().backend(backend).load(dir.join("model.onnx")).map_err(|e| (classify(&e), e.to_string()))?;
        let data_sets = data_set_dirs(dir).map_err(|e| (Cause::OtherError, e.to_string()))?;
        if let Some(first) = data_sets.first() {
            let names = session.info().input_names();
            let inputs = read_numbered(first, "input", &names).map_err(|e| (classify(&e), e.to_string()))?;
            if let Ok(Some(report)) = session.plan_report(inputs) {
                no_device_step = report.step_placements().is_empty();
            }
        }
        for data_set in data_sets {
            let check = check_data_set(&session, &data_set, tol);
            if let Some(error) = &check.error {
                return Err((classify(error), error.to_string()));
            }
            if let Some(bad) = check.outputs.iter().find(|o| !o.passed) {
                return Err((
                    Cause::WrongResult,
                    format!(
                        "output '{}': got {}, expected {}, max abs err {:.3e}, max rel err {:.3e}, {} element(s) off",
                        bad.name, bad.actual, bad.expected, bad.max_abs_err, bad.max_rel_err, bad.mismatches
                    ),
                ));
            }
        }
        Ok(())
    })()
    .err();
    CaseResult {
        no_device_step: no_device_step && failure.is_none(),
        name,
        failure,
        elapsed: start.elapsed(),
    }
}

/// Runs one case on a worker thread; a case still running after `limit` is reported as a
/// timeout (its thread is left to finish on its own) so one hang cannot stall the suite.
pub fn run_case_bounded(
    dir: &Path,
    backend: Backend,
    tol: Tolerance,
    limit: Duration,
) -> CaseResult {
    let (sender, receiver) = mpsc::channel();
    let owned = dir.to_path_buf();
    tessera::install_panic_counter();
    std::thread::spawn(move || {
        // Counted per thread (other tests run beside this one); panics on tract's pool threads
        // that Tessera caught on this one count here too.
        let before = tessera::panics_seen_on_this_thread();
        let mut result = run_case(&owned, backend, tol);
        let panics = tessera::panics_seen_on_this_thread() - before;
        if panics > 0 {
            let after = match &result.failure {
                Some((cause, message)) => format!("; then [{cause:?}] {message}"),
                None => String::new(),
            };
            result.failure = Some((Cause::Panicked, format!("{panics} panic(s){after}")));
        }
        let _ = sender.send(result);
    });
    receiver
        .recv_timeout(limit)
        .unwrap_or_else(|error| CaseResult {
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            failure: Some(match error {
                mpsc::RecvTimeoutError::Timeout => {
                    (Cause::Timeout, format!("no result after {limit:?}"))
                }
                mpsc::RecvTimeoutError::Disconnected => {
                    (Cause::Panicked, "a panic escaped the case".into())
                }
            }),
            elapsed: limit,
            no_device_step: false,
        })
}

/// Sub-folders of `root` that hold a `model.onnx`, sorted.
pub fn model_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("cannot list {}: {e} (set TESSERA_SHARED?)", root.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.onnx").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// Reads a checked-in list: one name per line, `#` comments.
pub fn read_list(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Prints one line per failure and a summary by cause; returns the names that passed.
pub fn report(title: &str, results: &[CaseResult]) -> BTreeSet<String> {
    let mut by_cause: std::collections::BTreeMap<Cause, usize> = Default::default();
    for result in results {
        if let Some((cause, message)) = &result.failure {
            *by_cause.entry(*cause).or_default() += 1;
            let short: String = message.chars().take(300).collect();
            println!("FAIL {} [{cause:?}] {short}", result.name);
        }
    }
    let passed: BTreeSet<String> = results
        .iter()
        .filter(|r| r.failure.is_none())
        .map(|r| r.name.clone())
        .collect();
    let total = results.len();
    let folded = results.iter().filter(|r| r.no_device_step).count();
    if folded > 0 {
        println!(
            "{title}: {folded} of the passes ran no device step (outputs known when the plan was \
             made: shape-only ops, or every input small enough to fold in)"
        );
    }
    println!(
        "{title}: {}/{} pass ({:.1}%); failures by cause: {}",
        passed.len(),
        total,
        100.0 * passed.len() as f64 / total.max(1) as f64,
        by_cause
            .iter()
            .map(|(c, n)| format!("{c:?} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    passed
}

/// Whether `backend` has a usable device here; prints why not (GPU-only tests skip then, and only
/// then: a backend that is not compiled in is a failure, not a skip). With
/// `TESSERA_REQUIRE_CUDA=1` a missing cuda device fails the test instead of skipping it.
pub fn device_present(backend: tessera::Backend) -> bool {
    let status = tessera::backend_status(backend);
    assert!(
        status.compiled_in,
        "{backend} is not compiled into the conformance harness"
    );
    if !status.available {
        assert!(
            !(backend == tessera::Backend::Cuda && cuda_required()),
            "TESSERA_REQUIRE_CUDA=1 but no cuda device is usable here: {}",
            status.detail
        );
        // Straight to stderr: `cargo test` captures println!, and a skip must show in CI's log.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: no {backend} device here ({})",
            status.detail
        );
    }
    status.available
}

/// Whether `TESSERA_REQUIRE_CUDA=1` is set: GPU sessions set it so a cuda test can only pass
/// by running on the GPU.
pub fn cuda_required() -> bool {
    std::env::var("TESSERA_REQUIRE_CUDA").is_ok_and(|v| v == "1")
}
