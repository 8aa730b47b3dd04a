#![allow(clippy::unwrap_used, clippy::expect_used)]
//! One named test per conformance vector, so a failure names its vector and
//! `cargo test -p cupel-conformance --test each_vector -- overflow` runs a
//! subset. Test names are the vector's path under `conformance/` without
//! `.toml` (`required/pipeline/overflow-throw`).

use std::path::Path;

use cupel_conformance::{Outcome, run_file, vector_files};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance");
    let files = vector_files(&root).expect("the conformance directory is readable");
    assert!(
        files.len() >= 200,
        "only {} vectors under {}",
        files.len(),
        root.display()
    );
    let trials = files
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .with_extension("")
                .to_string_lossy()
                .replace('\\', "/");
            // Every file in this repository's directory is a vector: a skip
            // (a TOML file without `[test]`) is a mistake here, so it fails.
            Trial::test(name, move || match run_file(&path).outcome {
                Outcome::Pass => Ok(()),
                Outcome::Fail(why) => Err(Failed::from(why)),
                Outcome::Skip(why) => Err(Failed::from(format!("not a vector: {why}"))),
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
