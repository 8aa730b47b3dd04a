//! What every CLI test file needs: running the real binary.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::process::Output;

use assert_cmd::cargo_bin_cmd;

/// Runs `cupel args...` from the crate directory (so fixture paths in
/// messages are `tests/fixtures/...`), optionally feeding `stdin`.
pub fn cupel(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = cargo_bin_cmd!("cupel");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    if let Some(s) = stdin {
        cmd.write_stdin(s);
    }
    cmd.output().unwrap()
}
