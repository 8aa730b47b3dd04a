//! Project automation, run as `cargo xtask <command>`.
//!
//! * `ci` — exactly what `.ci/run` runs: format check, clippy with warnings
//!   denied, every test (doctests included), then the later checks as they exist.

use std::env;
use std::process::{Command, ExitCode};

mod ci;

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
  ci            fmt check, clippy -D warnings, all tests (incl. doctests), conformance, spec build";

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
