//! Runs Cupel conformance vectors — TOML test files in the format of the
//! specification's "Vector format" chapter — against this implementation.
//!
//! [`run`] searches directories recursively for `.toml` files, runs every
//! vector through the component it names (built with `cupel-pipeline`'s
//! declarative configuration: [`ScorerConfig`](cupel_pipeline::ScorerConfig),
//! [`SlicerConfig`](cupel_pipeline::SlicerConfig),
//! [`PlacerType`](cupel_pipeline::PlacerType),
//! [`PolicyConfig`](cupel_pipeline::PolicyConfig)) and returns a [`Summary`]
//! with one [`VectorResult`] per file: [`Outcome::Pass`], [`Outcome::Fail`]
//! (with what differed) or [`Outcome::Skip`] (with why). The
//! `cupel-conformance` binary and `cargo xtask conformance` print
//! [`Summary::report`].
//!
//! ```
//! use cupel_conformance::{Outcome, run};
//!
//! let dir = std::env::temp_dir().join(format!("cupel-conformance-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! std::fs::write(dir.join("reflexive.toml"), r#"
//! [test]
//! name = "reflexive passes the hint through"
//! stage = "scoring"
//! scorer = "reflexive"
//!
//! [[items]]
//! content = "a"
//! tokens = 10
//! futureRelevanceHint = 0.75
//!
//! [[expected]]
//! content = "a"
//! score_approx = 0.75
//! "#)?;
//! let summary = run(&[dir.clone()], None);
//! assert_eq!(summary.results[0].outcome, Outcome::Pass);
//! assert_eq!(summary.summary_line(), "1 passed, 0 failed");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Choices where the format is silent
//!
//! * A `.toml` file that parses but has no `[test]` table is not a vector: it
//!   is **skipped** (with that reason), so a directory may hold other TOML
//!   files. A file that does not parse is a failure.
//! * Unknown keys are ignored everywhere; unknown stage, scorer, slicer or
//!   placer names are failures, also in `expect_construction_error` vectors.
//! * Expectations find items by `content`; when several items share a
//!   content, the **first** one (file order) is used.
//! * `expect_error` names are matched ignoring case, `_` and `-`; a name this
//!   runner does not know passes on **any** error (forward compatibility).
//!   `expect_error = true` also means "any error".
//! * A pipeline vector without `[[expected_output]]` asserts an empty output,
//!   unless it has `[expected.diagnostics]` or `expect_error`, in which case
//!   only those are checked.
//! * Expected and actual scores that are both NaN match.
//!
//! Depends on `cupel-core` and `cupel-pipeline` (which brings in every stage
//! crate); it is a test tool and is not published.

mod diagnostics;
mod discover;
mod errors;
mod pipeline;
mod run;
mod stages;
mod toml_util;

pub use run::{Outcome, Summary, VectorResult, default_dirs, run, run_file, run_text_unguarded};

/// Every vector file (`*.toml`, recursively, links to directories not
/// followed) under `dir`, sorted by path: what [`run`] runs.
///
/// # Errors
/// The directory (or an entry under it) cannot be read.
pub fn vector_files(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    discover::toml_files(dir)
}
