//! `cupel-conformance [--dir PATH]... [--filter SUBSTR]`: runs Cupel
//! conformance vectors and prints one line per failure or skip, the vector
//! count and `N passed, N failed[, N skipped]`. Exits 1 when any vector failed
//! (or none was found), 2 on a usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use cupel_conformance::{default_dirs, run};

/// Runs Cupel conformance vectors and prints one line per failure or skip,
/// the vector count and `N passed, N failed[, N skipped]`.
#[derive(Debug, Parser)]
#[command(
    name = "cupel-conformance",
    after_help = "Exit codes: 0 all passed, 1 a vector failed (or none was found), 2 usage error"
)]
struct Args {
    /// A directory of .toml vectors, searched recursively (repeatable);
    /// default: this repository's conformance/required and conformance/optional.
    #[arg(long = "dir", value_name = "PATH")]
    dirs: Vec<PathBuf>,
    /// Only vectors whose path or [test] name contains SUBSTR.
    #[arg(long, value_name = "SUBSTR")]
    filter: Option<String>,
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    if args.dirs.is_empty() {
        args.dirs = default_dirs();
    }
    let summary = run(&args.dirs, args.filter.as_deref());
    println!("{}", summary.report());
    if summary.results.is_empty() {
        eprintln!("cupel-conformance: no vectors found");
        return ExitCode::FAILURE;
    }
    if summary.failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("cupel-conformance").chain(args.iter().copied()))
    }

    #[test]
    fn flags_take_separate_or_inline_values() {
        let a = parse(&["--dir", "x", "--dir=y", "--filter", "decay"]).unwrap();
        assert_eq!(a.dirs, [PathBuf::from("x"), PathBuf::from("y")]);
        assert_eq!(a.filter.as_deref(), Some("decay"));
        assert!(parse(&[]).unwrap().dirs.is_empty());
        assert!(parse(&["--dir"]).is_err());
        let e = parse(&["--frobnicate"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument);
        assert_eq!(e.exit_code(), 2);
    }
}
