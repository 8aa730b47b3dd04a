//! `cargo xtask ci`: the whole CI gate, in order (the last step is a release
//! dry run on a temporary copy of the working tree).

use crate::{cargo, run_step};

pub(crate) fn run() -> Result<(), String> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--", "--check"]);
    run_step("cargo fmt --check", fmt)?;

    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ]);
    run_step("cargo clippy -D warnings", clippy)?;

    // `cupel-rs-pipeline` without its default `config` feature: no toml,
    // serde_json, serde_ignored, serde_path_to_error or `cupel-core/serde`.
    // The same for the other crates whose default features pull in
    // optional parts (the CLI's chat and tokenizer, the gate's config, the
    // tokens crate's tiktoken): the fuzz targets and benches build them lean.
    for package in [
        "cupel-rs-pipeline",
        "cupel-cli",
        "cupel-rs-gate",
        "cupel-rs-tokens",
        "cupel-rs-run",
    ] {
        let mut lean = cargo();
        lean.args([
            "clippy",
            "-p",
            package,
            "--no-default-features",
            "--",
            "-D",
            "warnings",
        ]);
        run_step(
            &format!("cargo check -p {package} --no-default-features (clippy)"),
            lean,
        )?;
    }

    // The shared run budget's tests start their own redis-server; say so up
    // front rather than after the build (`.ci/run` installs it).
    if std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        return Err(
            "redis-server is not on PATH: the shared run-budget tests (cupel-rs-run, \
                    feature `redis`) start a real server. Install it (`apt-get install \
                    redis-server`; `.ci/run` does) and run again."
                .to_string(),
        );
    }
    let mut test = cargo();
    test.args(["test", "--workspace", "--all-features"]);
    run_step("cargo test --workspace --all-features", test)?;

    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps", "--all-features"])
        .env("RUSTDOCFLAGS", "-D warnings");
    run_step("cargo doc (rustdoc warnings denied)", doc)?;

    crate::conformance::run(&[], None)?;

    // Build-check only (fast); skipped with a message without cargo-fuzz.
    crate::fuzz::run(0, &[], true)?;

    eprintln!("==> cargo xtask spec");
    crate::spec::run()?;

    crate::release::ci_dry_run()?;

    eprintln!("==> ci: all checks passed");
    Ok(())
}
