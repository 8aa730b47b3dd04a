//! `cargo xtask conformance [--dir PATH]... [--filter SUBSTR]`: runs the
//! conformance vectors with the `cupel-conformance` binary (default: this
//! repository's `conformance/required` and `conformance/optional`).

use std::env;
use std::path::{Path, PathBuf};

use crate::{cargo, run_step, workspace_root};

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    // cargo runs from the workspace root, so relative `--dir` paths are made
    // absolute against the caller's directory first.
    let cwd = env::current_dir().map_err(|e| format!("conformance: current directory: {e}"))?;
    let args = absolute_dirs(args, &cwd);
    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args(["run", "-q", "-p", "cupel-conformance", "--"])
        .args(&args);
    run_step("cargo xtask conformance", cmd)
}

/// Rewrites `--dir PATH` / `--dir=PATH` with `PATH` resolved against `cwd`;
/// every other argument is passed through for the runner to check.
fn absolute_dirs(args: &[String], cwd: &Path) -> Vec<String> {
    let abs = |p: &str| {
        let p = PathBuf::from(p);
        let p = if p.is_absolute() { p } else { cwd.join(p) };
        p.to_string_lossy().into_owned()
    };
    let mut out = Vec::with_capacity(args.len());
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        if a == "--dir" {
            out.push(a.clone());
            if let Some(p) = iter.next() {
                out.push(abs(p));
            }
        } else if let Some(p) = a.strip_prefix("--dir=") {
            out.push(format!("--dir={}", abs(p)));
        } else {
            out.push(a.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_dirs_are_resolved_against_the_callers_directory() {
        let cwd = Path::new("/home/me/work");
        let args: Vec<String> = [
            "--dir",
            "vectors",
            "--dir=/abs/v",
            "--filter",
            "x",
            "--dir=rel",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let got = absolute_dirs(&args, cwd);
        assert_eq!(
            got,
            [
                "--dir",
                "/home/me/work/vectors",
                "--dir=/abs/v",
                "--filter",
                "x",
                "--dir=/home/me/work/rel"
            ]
        );
    }
}
