//! Project automation, run as `cargo xtask <command>`.
//!
//! * `ci` — exactly what `.ci/run` runs: format check, clippy with warnings
//!   denied, every test (doctests included), rustdoc with warnings denied, the
//!   conformance vectors, and the spec build.
//! * `conformance` — runs the conformance vectors (`--dir`, `--filter`).
//! * `spec` — checks the links and anchors of `spec/*.md` and renders it to
//!   `target/spec/` as HTML.
//! * `fuzz` — runs the cargo-fuzz targets in `fuzz/` (`--time SECS` each),
//!   or only type-checks them (`--check`, part of `ci`; skipped with a
//!   message where nightly or cargo-fuzz is missing).
//! * `bench` — runs criterion benchmarks and prints `NAME median_ms floor_ms ratio`.
//! * `release VERSION [--dry-run]` — bumps, packages, checks and tags a
//!   release (see the `release` module); `ci` runs its dry run.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod bench;
mod ci;
mod conformance;
mod fuzz;
mod release;
mod spec;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let (cmd, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match cmd {
        "ci" => ci::run(rest),
        "bench" => bench::run(rest),
        "conformance" => conformance::run(rest),
        "fuzz" => fuzz::run(rest),
        "spec" => spec::run(rest),
        "release" => release::run(rest),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask <command>

commands:
  ci            fmt check, clippy -D warnings, all tests (incl. doctests), rustdoc -D warnings, conformance, spec build
  conformance [--dir PATH]... [--filter SUBSTR]
                run the conformance vectors (default: conformance/required + conformance/optional)
  bench [--quick] [--summary-only] [BENCH...]
                run criterion benchmarks (default: pipeline) and print NAME median_ms floor_ms ratio
  fuzz [--time SECS] [--target NAME]... [--check]
                run the cargo-fuzz targets in fuzz/ (nightly + cargo-fuzz) for SECS each
                (default 60), seeded from conformance/ and the CLI fixtures; print the
                execution counts. --check only builds them (ci; skipped if cargo-fuzz is missing)
  spec          check spec/*.md links and anchors, render it to target/spec/ (HTML)
  release VERSION [--dry-run]
                refuse a dirty tree; bump every crate; move CHANGELOG's Unreleased under
                VERSION; run ci; cargo package --workspace; check each package's files;
                semver check against the previous tag; commit and tag vVERSION.
                --dry-run does all of it on a temporary copy and changes nothing";

/// The cargo that invoked us (`$CARGO`), falling back to `cargo` on PATH.
pub(crate) fn cargo() -> Command {
    Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Runs a command, echoing it first; fails with its exit status.
pub(crate) fn run_step(name: &str, mut cmd: Command) -> Result<(), String> {
    eprintln!("==> {name}");
    let status = cmd
        .status()
        .map_err(|e| format!("{name}: could not start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{name} failed ({status})"))
    }
}

/// The workspace root: the parent of this crate's directory (`xtask/`).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_root_is_the_directory_holding_spec_and_conformance() {
        let root = workspace_root();
        assert_eq!(root.join("xtask"), Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(root.join("spec").join("README.md").is_file());
        assert!(root.join("conformance").join("required").is_dir());
    }
}
