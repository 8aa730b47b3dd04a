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

/// A run's stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A run's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A successful run's stdout; fails on a non-zero exit or any stderr.
pub fn ok(args: &[&str]) -> String {
    let o = cupel(args, None);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(stderr(&o), "");
    stdout(&o)
}

/// A failed run: asserts the exit code, an empty stdout, exactly one
/// `error:` line first (plus at most one `hint:` line), and returns stderr.
pub fn fails(args: &[&str], stdin: Option<&str>, code: i32) -> String {
    let o = cupel(args, stdin);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert_eq!(stdout(&o), "");
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(lines.len() <= 2, "{err}");
    if let Some(h) = lines.get(1) {
        assert!(h.starts_with("hint: "), "{err}");
    }
    assert!(!err.contains("panicked") && !err.contains("backtrace"));
    err
}

/// Every line fits an 80-column terminal (counted in characters).
pub fn assert_fits_80(text: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} > 80: {line}",
            line.chars().count()
        );
    }
}
