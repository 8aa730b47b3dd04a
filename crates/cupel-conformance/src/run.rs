//! The driver: discovery, filtering, one vector at a time, the summary.

use std::fmt;
use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use toml::Table;

use crate::discover::toml_files;
use crate::toml_util::{boolean, one_line, required_string, string, table};
use crate::{pipeline, stages};

/// What happened to one vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held.
    Pass,
    /// Something differed, or the vector could not be run; the message says what.
    Fail(String),
    /// Not run; the reason says why (e.g. a TOML file that is not a vector).
    Skip(String),
}

/// One vector file and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorResult {
    /// The file.
    pub path: PathBuf,
    /// The file as printed: relative to the directory it was found in (prefixed
    /// with that directory's name when several directories were given).
    pub display: String,
    /// `[test] name`, when the file has one.
    pub name: Option<String>,
    /// Pass, fail or skip.
    pub outcome: Outcome,
}

impl fmt::Display for VectorResult {
    /// `FAIL <path> [<name>]: <message>`, `SKIP <path> [<name>]: <reason>` or
    /// `PASS <path> [<name>]`, on one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name.as_deref().unwrap_or("<unnamed>");
        match &self.outcome {
            Outcome::Pass => write!(f, "PASS {} [{name}]", self.display),
            Outcome::Fail(m) => write!(f, "FAIL {} [{name}]: {}", self.display, one_line(m)),
            Outcome::Skip(r) => write!(f, "SKIP {} [{name}]: {}", self.display, one_line(r)),
        }
    }
}

/// The results of a run, in the order the vectors were found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// One entry per vector file (and per unreadable directory).
    pub results: Vec<VectorResult>,
}

impl Summary {
    /// Vectors that passed.
    pub fn passed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Pass))
    }

    /// Vectors that failed.
    pub fn failed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Fail(_)))
    }

    /// Vectors that were skipped.
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skip(_)))
    }

    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.results.iter().filter(|r| f(&r.outcome)).count()
    }

    /// The failed results.
    pub fn failures(&self) -> impl Iterator<Item = &VectorResult> {
        self.results
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
    }

    /// `N passed, N failed`, plus `, N skipped` when any were skipped.
    pub fn summary_line(&self) -> String {
        let mut line = format!("{} passed, {} failed", self.passed(), self.failed());
        if self.skipped() > 0 {
            line.push_str(&format!(", {} skipped", self.skipped()));
        }
        line
    }

    /// The printed report: one line per failure and per skip (in path order),
    /// `conformance: N vectors`, and the [summary line](Self::summary_line) last.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for r in &self.results {
            if !matches!(r.outcome, Outcome::Pass) {
                out.push_str(&r.to_string());
                out.push('\n');
            }
        }
        out.push_str(&format!("conformance: {} vectors\n", self.results.len()));
        out.push_str(&self.summary_line());
        out
    }
}

/// This repository's vector directories: `conformance/required` and
/// `conformance/optional` of the workspace this crate was built in.
pub fn default_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("conformance");
    vec![root.join("required"), root.join("optional")]
}

/// Runs every `.toml` vector under each of `dirs` (recursively, in path order).
///
/// With a `filter`, only vectors whose printed path or `[test] name` contains
/// it are run (a file that does not parse is matched on its path). A `dirs`
/// entry that is a file is run as a single vector; one that cannot be read is
/// a failed result. Never panics on input: a vector that panics the
/// implementation is a failure naming the panic.
pub fn run(dirs: &[PathBuf], filter: Option<&str>) -> Summary {
    let mut results = Vec::new();
    let prefix = dirs.len() > 1;
    for dir in dirs {
        if dir.is_file() {
            let display = dir.file_name().map_or_else(
                || dir.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            push_filtered(&mut results, dir, display, filter);
            continue;
        }
        let files = match toml_files(dir) {
            Ok(f) => f,
            Err(e) => {
                results.push(VectorResult {
                    path: dir.clone(),
                    display: dir.display().to_string(),
                    name: None,
                    outcome: Outcome::Fail(format!("cannot read the vector directory: {e}")),
                });
                continue;
            }
        };
        let dir_name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for file in files {
            let rel = file.strip_prefix(dir).unwrap_or(&file);
            let mut display = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if prefix && !dir_name.is_empty() {
                display = format!("{dir_name}/{display}");
            }
            push_filtered(&mut results, &file, display, filter);
        }
    }
    Summary { results }
}

fn push_filtered(
    results: &mut Vec<VectorResult>,
    path: &Path,
    display: String,
    filter: Option<&str>,
) {
    let loaded = load(path);
    let name = match &loaded {
        Ok(Some(v)) => vector_name(v),
        _ => None,
    };
    if let Some(f) = filter
        && !display.contains(f)
        && !name.as_deref().is_some_and(|n| n.contains(f))
    {
        return;
    }
    let outcome = match loaded {
        Err(e) => Outcome::Fail(e),
        Ok(None) => Outcome::Skip("no [test] table: not a conformance vector".into()),
        Ok(Some(v)) => execute(&v),
    };
    results.push(VectorResult {
        path: path.to_path_buf(),
        display,
        name,
        outcome,
    });
}

/// Runs one vector file. Its `display` is the path as given.
pub fn run_file(path: &Path) -> VectorResult {
    let mut results = Vec::new();
    push_filtered(&mut results, path, path.display().to_string(), None);
    results.pop().unwrap_or_else(|| VectorResult {
        path: path.to_path_buf(),
        display: path.display().to_string(),
        name: None,
        outcome: Outcome::Fail("not run".into()),
    })
}

/// Parses and runs a vector from its text **without** catching panics (the
/// fuzz target's entry point; not a stable API). `Ok(None)`: not a vector
/// (no `[test]` table); `Ok(Some(()))`: it passed; `Err`: why it failed or
/// could not be read.
///
/// # Errors
/// The vector's failure message, or why the text is not a readable vector.
#[doc(hidden)]
pub fn run_text_unguarded(text: &str) -> Result<Option<()>, String> {
    let v: Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("invalid TOML: {}", one_line(&e.to_string())))?;
    if !v.contains_key("test") {
        return Ok(None);
    }
    dispatch(&v).map(Some)
}

/// Reads and parses a file; `Ok(None)` when it has no `[test]` table.
fn load(path: &Path) -> Result<Option<Table>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let v: Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("invalid TOML: {}", one_line(&e.to_string())))?;
    Ok(v.contains_key("test").then_some(v))
}

fn vector_name(v: &Table) -> Option<String> {
    v.get("test")?.get("name")?.as_str().map(str::to_string)
}

/// Runs a parsed vector, turning a panic into a failure.
pub(crate) fn execute(v: &Table) -> Outcome {
    guarded(|| dispatch(v))
}

/// Runs `f`; `Ok` is a pass, `Err` a failure with its message, a panic a
/// failure quoting the panic message (a last line of defence: the
/// implementation must never panic on input).
fn guarded(f: impl FnOnce() -> Result<(), String>) -> Outcome {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Outcome::Pass,
        Ok(Err(m)) => Outcome::Fail(m),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".into());
            Outcome::Fail(format!("the implementation panicked: {msg}"))
        }
    }
}

fn dispatch(v: &Table) -> Result<(), String> {
    let test = table(v, "test", "vector")?.ok_or("missing [test] table")?;
    let stage = required_string(test, "stage", "[test]")?;
    let construction = boolean(test, "expect_construction_error", "[test]")?.unwrap_or(false);
    // A name is required by the format; its absence is reported.
    string(test, "name", "[test]")?.ok_or("[test]: missing `name`")?;
    match stage {
        "scoring" => stages::scoring(v, test, construction),
        "slicing" => stages::slicing(v, test, construction),
        "placing" => stages::placing(v, test, construction),
        "pipeline" => pipeline::pipeline(v, construction),
        other => Err(format!(
            "unknown stage `{other}` (known: scoring, slicing, placing, pipeline)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(s: &str) -> Outcome {
        execute(&s.parse::<Table>().unwrap())
    }

    #[test]
    fn unknown_stage_and_missing_fields_fail_with_a_message() {
        assert_eq!(
            vector("[test]\nname = \"x\"\nstage = \"sorting\"\n"),
            Outcome::Fail(
                "unknown stage `sorting` (known: scoring, slicing, placing, pipeline)".into()
            )
        );
        assert_eq!(
            vector("[test]\nname = \"x\"\n"),
            Outcome::Fail("[test]: missing `stage`".into())
        );
        assert_eq!(
            vector("[test]\nname = \"x\"\nstage = \"scoring\"\nscorer = \"psychic\"\n"),
            Outcome::Fail(
                "[test].scorer: unknown scorer `psychic` (known: recency, priority, kind, tag, frequency, reflexive, composite, scaled, decay, metadata_trust, metadata_key, position, bm25, vector, hybrid)"
                    .into()
            )
        );
    }

    #[test]
    fn an_unknown_name_is_never_an_expected_construction_error() {
        let out = vector(
            "[test]\nname = \"x\"\nstage = \"slicing\"\nslicer = \"telepathic\"\nexpect_construction_error = true\n",
        );
        assert!(matches!(out, Outcome::Fail(m) if m.contains("unknown slicer `telepathic`")));
    }

    #[test]
    fn a_panic_is_a_failure_not_a_crash() {
        assert_eq!(
            guarded(|| panic!("index out of bounds")),
            Outcome::Fail("the implementation panicked: index out of bounds".into())
        );
        let n = 3;
        assert_eq!(
            guarded(|| panic!("bad {n}")),
            Outcome::Fail("the implementation panicked: bad 3".into())
        );
        assert_eq!(guarded(|| Ok(())), Outcome::Pass);
        assert_eq!(guarded(|| Err("x".into())), Outcome::Fail("x".into()));
    }

    #[test]
    fn summary_lines() {
        let r = |o: Outcome| VectorResult {
            path: PathBuf::from("a.toml"),
            display: "a.toml".into(),
            name: Some("n".into()),
            outcome: o,
        };
        let s = Summary {
            results: vec![
                r(Outcome::Pass),
                r(Outcome::Fail("score of \"a\": expected 1, actual 0".into())),
                r(Outcome::Skip("why\nnot".into())),
            ],
        };
        assert_eq!(s.summary_line(), "1 passed, 1 failed, 1 skipped");
        assert_eq!(
            s.report(),
            "FAIL a.toml [n]: score of \"a\": expected 1, actual 0\n\
             SKIP a.toml [n]: why not\n\
             conformance: 3 vectors\n\
             1 passed, 1 failed, 1 skipped"
        );
        let clean = Summary {
            results: vec![r(Outcome::Pass)],
        };
        assert_eq!(clean.report(), "conformance: 1 vectors\n1 passed, 0 failed");
    }

    #[test]
    fn default_dirs_point_at_the_repository_vectors() {
        let dirs = default_dirs();
        assert!(dirs[0].ends_with("conformance/required"));
        assert!(dirs[1].ends_with("conformance/optional"));
    }
}
