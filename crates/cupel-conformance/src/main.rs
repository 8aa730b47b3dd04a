//! `cupel-conformance [--dir PATH]... [--filter SUBSTR]`: runs Cupel
//! conformance vectors and prints one line per failure or skip, the vector
//! count and `N passed, N failed[, N skipped]`. Exits 1 when any vector failed
//! (or none was found), 2 on a usage error.

use std::path::PathBuf;
use std::process::ExitCode;

use cupel_conformance::{default_dirs, run};

const USAGE: &str = "usage: cupel-conformance [--dir PATH]... [--filter SUBSTR]

  --dir PATH       a directory of .toml vectors, searched recursively (repeatable);
                   default: this repository's conformance/required and conformance/optional
  --filter SUBSTR  only vectors whose path or [test] name contains SUBSTR";

struct Args {
    dirs: Vec<PathBuf>,
    filter: Option<String>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut dirs = Vec::new();
    let mut filter = None;
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("`{name}` needs a value"))
        };
        match flag.as_str() {
            "--dir" => dirs.push(PathBuf::from(value("--dir")?)),
            "--filter" => filter = Some(value("--filter")?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if dirs.is_empty() {
        dirs = default_dirs();
    }
    Ok(Some(Args { dirs, filter }))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("cupel-conformance: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
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

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_take_separate_or_inline_values() {
        let a = parse(&["--dir", "x", "--dir=y", "--filter", "decay"])
            .unwrap()
            .unwrap();
        assert_eq!(a.dirs, [PathBuf::from("x"), PathBuf::from("y")]);
        assert_eq!(a.filter.as_deref(), Some("decay"));
        let a = parse(&[]).unwrap().unwrap();
        assert_eq!(a.dirs, default_dirs());
        assert!(parse(&["--help"]).unwrap().is_none());
        assert_eq!(parse(&["--dir"]).err().unwrap(), "`--dir` needs a value");
        assert_eq!(
            parse(&["--frobnicate"]).err().unwrap(),
            "unknown argument `--frobnicate`"
        );
    }
}
