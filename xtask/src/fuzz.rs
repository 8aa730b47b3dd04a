//! `cargo xtask fuzz [--time SECS] [--target NAME]... [--check]`: runs the
//! cargo-fuzz targets in `fuzz/` (nightly + cargo-fuzz), each for `--time`
//! seconds (default 60), seeded from `conformance/` and the CLI's test
//! fixtures, and prints libFuzzer's execution counts and their total.
//! `--check` only type-checks the targets (what `cargo xtask ci` runs), and
//! skips with a message when nightly or cargo-fuzz is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::workspace_root;

/// Every target, and the directories (relative to the root) that seed it.
const TARGETS: &[(&str, &[&str])] = &[
    (
        "input_files",
        &[
            "crates/cupel-cli/tests/fixtures",
            "crates/cupel-cli/examples",
        ],
    ),
    (
        "policy_config",
        &[
            "crates/cupel-cli/tests/fixtures",
            "conformance/required/pipeline",
        ],
    ),
    ("pipeline", &[]),
    ("conformance_vector", &["conformance"]),
    (
        "gate",
        &[
            "crates/cupel-cli/tests/fixtures",
            "crates/cupel-cli/examples",
        ],
    ),
    ("budget_trace", &["crates/cupel-cli/tests/fixtures/budget"]),
    ("run_budget", &[]),
    ("chat_transcript", &["crates/cupel-chat/tests/fixtures"]),
];

/// `cargo +nightly ...` through the rustup proxy on PATH (not `$CARGO`, which
/// is the toolchain that runs xtask), with the variables that would pin that
/// toolchain removed.
fn nightly_cargo(fuzz_dir: &Path) -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly")
        .current_dir(fuzz_dir)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO_TARGET_DIR");
    c
}

/// Whether `cargo +nightly fuzz` can run here.
fn available(fuzz_dir: &Path) -> bool {
    nightly_cargo(fuzz_dir)
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

pub(crate) fn run(time: u64, only: &[String], check: bool) -> Result<(), String> {
    let root = workspace_root();
    let fuzz_dir = root.join("fuzz");
    if !available(&fuzz_dir) {
        let msg = "cargo-fuzz (and the nightly toolchain) not found: \
                   `rustup toolchain install nightly` and `cargo install cargo-fuzz --locked`";
        if check {
            eprintln!("==> fuzz targets: skipped ({msg})");
            return Ok(());
        }
        return Err(msg.into());
    }
    if check {
        let mut c = nightly_cargo(&fuzz_dir);
        c.args(["fuzz", "check"]);
        return crate::run_step("cargo +nightly fuzz check (fuzz targets build)", c);
    }
    for name in only {
        if !TARGETS.iter().any(|(t, _)| t == name) {
            return Err(format!("fuzz: unknown target `{name}`"));
        }
    }
    let mut total: u64 = 0;
    let mut lines = Vec::new();
    for (target, _) in TARGETS {
        if !only.is_empty() && !only.iter().any(|o| o == target) {
            continue;
        }
        let corpus = fuzz_dir.join("corpus").join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let mut c = nightly_cargo(&fuzz_dir);
        c.args(["fuzz", "run", "-O", target]).arg(&corpus);
        c.args(seed_dirs(&root, target));
        c.args([
            "--",
            &format!("-max_total_time={time}"),
            "-max_len=65536",
            "-print_final_stats=1",
        ]);
        eprintln!("==> fuzz {target} for {time}s");
        let out = c
            .output()
            .map_err(|e| format!("fuzz {target}: could not start: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let execs = executions(&stderr);
        if !out.status.success() {
            // The crash report and the artifact path are at the end.
            let tail: Vec<&str> = stderr.lines().rev().take(60).collect();
            for l in tail.into_iter().rev() {
                eprintln!("{l}");
            }
            return Err(format!(
                "fuzz {target} failed ({}); the input is under fuzz/artifacts/{target}/: \
                 make it a regression test",
                out.status
            ));
        }
        let n = execs.unwrap_or(0);
        total += n;
        lines.push(format!("{target}: {n} executions, no crash"));
        eprintln!("    {target}: {n} executions, no crash");
    }
    for l in &lines {
        println!("{l}");
    }
    println!("total: {total} executions, no crash");
    Ok(())
}

/// libFuzzer's `stat::number_of_executed_units: N` (or the `Done N runs` line).
fn executions(stderr: &str) -> Option<u64> {
    stderr.lines().rev().find_map(|l| {
        if let Some(n) = l.strip_prefix("stat::number_of_executed_units:") {
            return n.trim().parse().ok();
        }
        l.strip_prefix("Done ")
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok())
    })
}

/// The seed directories of `target` that exist.
fn seed_dirs(root: &Path, target: &str) -> Vec<PathBuf> {
    TARGETS
        .iter()
        .filter(|(t, _)| *t == target)
        .flat_map(|(_, s)| s.iter().map(|d| root.join(d)))
        .filter(|p| p.is_dir())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executions_are_read_from_libfuzzers_final_stats() {
        let err = "#1024 pulse\nDone 68949 runs in 9 second(s)\n\
                   stat::number_of_executed_units: 68950\nstat::average_exec_per_sec: 7000\n";
        assert_eq!(executions(err), Some(68950));
        assert_eq!(executions("Done 12 runs in 1 second(s)\n"), Some(12));
        assert_eq!(executions("nothing"), None);
    }

    #[test]
    fn every_target_has_a_source_file_and_existing_seeds() {
        let root = workspace_root();
        for (t, _) in TARGETS {
            let src = root
                .join("fuzz")
                .join("fuzz_targets")
                .join(format!("{t}.rs"));
            assert!(src.is_file(), "{}", src.display());
        }
        assert!(!seed_dirs(&root, "conformance_vector").is_empty());
        assert!(!seed_dirs(&root, "input_files").is_empty());
    }
}
