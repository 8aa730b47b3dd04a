//! `cargo xtask conformance [--dir PATH]... [--filter SUBSTR]`: runs the
//! conformance vectors with the `cupel-conformance` binary (default: this
//! repository's `conformance/required` and `conformance/optional`).

use std::env;
use std::path::{Path, PathBuf};

use crate::{cargo, run_step, workspace_root};

pub(crate) fn run(dirs: &[PathBuf], filter: Option<&str>) -> Result<(), String> {
    // cargo runs from the workspace root, so relative `--dir` paths are made
    // absolute against the caller's directory first.
    let cwd = env::current_dir().map_err(|e| format!("conformance: current directory: {e}"))?;
    let mut cmd = cargo();
    cmd.current_dir(workspace_root())
        .args(["run", "-q", "-p", "cupel-conformance", "--"]);
    for dir in absolute_dirs(dirs, &cwd) {
        cmd.arg("--dir").arg(dir);
    }
    if let Some(f) = filter {
        cmd.args(["--filter", f]);
    }
    run_step("cargo xtask conformance", cmd)
}

/// `dirs` resolved against `cwd` (absolute ones unchanged).
fn absolute_dirs(dirs: &[PathBuf], cwd: &Path) -> Vec<PathBuf> {
    dirs.iter()
        .map(|p| {
            if p.is_absolute() {
                p.clone()
            } else {
                cwd.join(p)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_dirs_are_resolved_against_the_callers_directory() {
        let cwd = Path::new("/home/me/work");
        let dirs = [PathBuf::from("vectors"), PathBuf::from("/abs/v")];
        assert_eq!(
            absolute_dirs(&dirs, cwd),
            [
                PathBuf::from("/home/me/work/vectors"),
                PathBuf::from("/abs/v")
            ]
        );
    }
}
