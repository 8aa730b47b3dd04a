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

use clap::{Parser, Subcommand};

mod bench;
mod ci;
mod conformance;
mod fuzz;
mod release;
mod spec;

/// Project automation for the Cupel workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// fmt check, clippy -D warnings, all tests (incl. doctests), rustdoc -D
    /// warnings, conformance, fuzz build check, spec build, release dry run.
    Ci,
    /// Run the conformance vectors (default: conformance/required +
    /// conformance/optional).
    Conformance {
        /// A directory of vectors, searched recursively (repeatable); relative
        /// to the directory you run from.
        #[arg(long = "dir", value_name = "PATH")]
        dirs: Vec<PathBuf>,
        /// Only vectors whose path or [test] name contains SUBSTR.
        #[arg(long, value_name = "SUBSTR")]
        filter: Option<String>,
    },
    /// Run criterion benchmarks (default: pipeline) and print
    /// NAME median_ms floor_ms ratio.
    Bench {
        /// Fewer samples and shorter measurement windows.
        #[arg(long)]
        quick: bool,
        /// Only print the table from earlier results.
        #[arg(long)]
        summary_only: bool,
        /// The global allocator of the bench binaries: `system` (the
        /// default, what a library's users get) or `mimalloc`.
        #[arg(long, value_enum, default_value_t = bench::Allocator::System)]
        allocator: bench::Allocator,
        /// Benchmarks to run (names of benches/benches/*.rs).
        #[arg(value_name = "BENCH")]
        benches: Vec<String>,
    },
    /// Run the cargo-fuzz targets in fuzz/ (nightly + cargo-fuzz), seeded from
    /// conformance/ and the CLI fixtures, and print the execution counts.
    Fuzz {
        /// Seconds per target.
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        time: u64,
        /// Only this target (repeatable).
        #[arg(long = "target", value_name = "NAME")]
        targets: Vec<String>,
        /// Only build the targets (what `ci` does; skipped without cargo-fuzz).
        #[arg(long)]
        check: bool,
    },
    /// Check spec/*.md links and anchors and render it to target/spec/ (HTML).
    Spec,
    /// Refuse a dirty tree; bump every crate; move CHANGELOG's Unreleased under
    /// VERSION; run ci; cargo package --workspace; check each package's files;
    /// semver check against the previous tag; commit and tag vVERSION.
    Release {
        /// The new version, MAJOR.MINOR.PATCH (a leading `v` is accepted).
        version: String,
        /// Do all of it on a temporary copy and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Ci => ci::run(),
        Cmd::Bench {
            quick,
            summary_only,
            allocator,
            benches,
        } => bench::run(quick, summary_only, allocator, &benches),
        Cmd::Conformance { dirs, filter } => conformance::run(&dirs, filter.as_deref()),
        Cmd::Fuzz {
            time,
            targets,
            check,
        } => fuzz::run(time, &targets, check),
        Cmd::Spec => spec::run(),
        Cmd::Release { version, dry_run } => release::run(&version, dry_run),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

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
    fn arguments_parse_into_commands() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("xtask").chain(args.iter().copied()))
        };
        assert!(matches!(
            parse(&["fuzz", "--time", "5", "--target", "gate"]).unwrap().command,
            Cmd::Fuzz { time: 5, ref targets, check: false } if targets == &["gate"]
        ));
        assert!(matches!(
            parse(&["release", "0.2.0", "--dry-run"]).unwrap().command,
            Cmd::Release { ref version, dry_run: true } if version == "0.2.0"
        ));
        assert!(parse(&["release"]).is_err());
        assert!(parse(&["fuzz", "--time", "soon"]).is_err());
        assert!(parse(&["frobnicate"]).is_err());
    }

    #[test]
    fn workspace_root_is_the_directory_holding_spec_and_conformance() {
        let root = workspace_root();
        assert_eq!(root.join("xtask"), Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(root.join("spec").join("README.md").is_file());
        assert!(root.join("conformance").join("required").is_dir());
    }
}
