//! The CI entry point cannot be narrowed, blessed or redirected from the environment: the guard
//! it sources first refuses every such variable and lets a clean environment through.

use std::process::Command;
use tessera_conformance::repo_dir;

/// Runs `scripts/lib/ci-guard.sh` alone with one extra variable set.
fn guard_with(name: &str, value: &str) -> std::process::Output {
    Command::new("bash")
        .arg(repo_dir().join("scripts/lib/ci-guard.sh"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(name, value)
        .output()
        .expect("bash runs")
}

#[test]
fn narrowing_variables_are_refused() {
    for name in [
        "TESSERA_FILTER",
        "TESSERA_ONLY",
        "TESSERA_BLESS",
        "TESSERA_BLESS_REMOVE",
        "TESSERA_PASS_LISTS_TO",
        "TESSERA_SOMETHING_NEW",
        "PYTEST_ADDOPTS",
    ] {
        let output = guard_with(name, "1");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(name), "{name} is named: {stderr}");
    }
    let output = guard_with("NODE_OPTIONS", "--test-name-pattern=conv");
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn data_and_stricter_switches_are_allowed() {
    for (name, value) in [
        ("TESSERA_SHARED", "/somewhere"),
        ("TESSERA_REQUIRE_CUDA", "1"),
        ("TESSERA_LOG", "debug"),
        ("NODE_OPTIONS", "--max-old-space-size=4096"),
    ] {
        let output = guard_with(name, value);
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Both ways in (CI's `.ci/run` and the README's `scripts/test.sh`) source the guard before
/// they run anything.
#[test]
fn entry_points_source_the_guard_first() {
    for script in [".ci/run", "scripts/test.sh"] {
        let text = std::fs::read_to_string(repo_dir().join(script)).unwrap();
        let commands: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        let guard = commands
            .iter()
            .position(|l| *l == "source scripts/lib/ci-guard.sh")
            .unwrap_or_else(|| panic!("{script} does not source the guard"));
        // Only `set` and `cd` may come before it.
        assert!(
            commands[..guard]
                .iter()
                .all(|l| l.starts_with("set ") || l.starts_with("cd ")),
            "{script} runs {:?} before the guard",
            &commands[..guard]
        );
    }
}
