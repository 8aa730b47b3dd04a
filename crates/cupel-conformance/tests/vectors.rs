#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Runs this repository's whole `conformance/` directory, and checks that the
//! runner works the same on a copy of it moved elsewhere.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use cupel_conformance::{Outcome, Summary, run};

fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance")
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A fresh scratch directory under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cupel-conformance-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn outcomes(s: &Summary) -> Vec<(String, Option<String>, Outcome)> {
    s.results
        .iter()
        .map(|r| (r.display.clone(), r.name.clone(), r.outcome.clone()))
        .collect()
}

#[test]
fn every_vector_passes() {
    let summary = run(&[conformance_dir()], None);
    // The suite has 200 vectors; a directory mix-up would show as far fewer.
    assert!(
        summary.results.len() >= 200,
        "only {} vectors found under {}",
        summary.results.len(),
        conformance_dir().display()
    );
    assert_eq!(summary.skipped(), 0, "{}", summary.report());
    assert!(summary.failed() == 0, "\n{}", summary.report());
}

#[test]
fn a_moved_copy_gives_the_same_results() {
    let original = run(&[conformance_dir()], None);
    let copy = scratch("copy").join("vectors");
    copy_dir(&conformance_dir(), &copy);
    let moved = run(std::slice::from_ref(&copy), None);
    assert_eq!(outcomes(&moved), outcomes(&original));
    assert!(moved.results.iter().all(|r| r.path.starts_with(&copy)));
    fs::remove_dir_all(copy.parent().unwrap()).unwrap();
}

#[test]
fn filter_matches_path_or_name() {
    let by_path = run(&[conformance_dir()], Some("decay-step"));
    assert!(!by_path.results.is_empty());
    assert!(
        by_path
            .results
            .iter()
            .all(|r| r.display.contains("decay-step"))
    );
    // Matched on the [test] name only: no file name contains "Decay".
    let by_name = run(&[conformance_dir()], Some("Decay"));
    assert!(!by_name.results.is_empty());
    assert!(
        by_name
            .results
            .iter()
            .all(|r| r.name.as_deref().unwrap().contains("Decay"))
    );
    assert!(
        run(&[conformance_dir()], Some("no vector is called this"))
            .results
            .is_empty()
    );
}

#[test]
fn default_dirs_prefix_their_names() {
    let summary = run(&cupel_conformance::default_dirs(), Some("greedy-basic"));
    let shown: Vec<&str> = summary.results.iter().map(|r| r.display.as_str()).collect();
    assert_eq!(shown, ["required/slicing/greedy-basic.toml"]);
}

const PASSING: &str = r#"
[test]
name = "priority ranks"
stage = "scoring"
scorer = "priority"

# Two prioritized items: ranks 0 and 1 over denominator 1 -> 0.0 and 1.0.
[[items]]
content = "low"
tokens = 1
priority = 1

[[items]]
content = "high"
tokens = 1
priority = 5

[[expected]]
content = "high"
score_approx = 1.0
"#;

#[test]
fn bad_vectors_fail_with_messages_and_non_vectors_are_skipped() {
    let dir = scratch("bad");
    fs::write(dir.join("a-pass.toml"), PASSING).unwrap();
    fs::write(dir.join("b-broken.toml"), "[test\nname = ").unwrap();
    fs::write(
        dir.join("c-unknown-placer.toml"),
        "[test]\nname = \"spiral\"\nstage = \"placing\"\nplacer = \"spiral\"\n",
    )
    .unwrap();
    fs::write(
        dir.join("d-wrong-score.toml"),
        PASSING.replace("score_approx = 1.0", "score_approx = 0.5"),
    )
    .unwrap();
    fs::write(dir.join("e-not-a-vector.toml"), "[package]\nname = \"x\"\n").unwrap();
    let summary = run(std::slice::from_ref(&dir), None);
    let report = summary.report();
    let lines: Vec<&str> = report.lines().collect();
    assert!(
        lines[0].starts_with("FAIL b-broken.toml [<unnamed>]: invalid TOML:"),
        "{report}"
    );
    assert!(
        lines[1].starts_with(
            "FAIL c-unknown-placer.toml [spiral]: [test].placer: unknown placer `spiral`"
        ),
        "{report}"
    );
    assert_eq!(
        lines[2],
        "FAIL d-wrong-score.toml [priority ranks]: score of \"high\": expected 0.5, actual 1 (epsilon 0.000000001); \
         score_all of \"high\": expected 0.5, actual 1 (epsilon 0.000000001)"
    );
    assert_eq!(
        lines[3],
        "SKIP e-not-a-vector.toml [<unnamed>]: no [test] table: not a conformance vector"
    );
    assert_eq!(lines[4], "conformance: 5 vectors");
    assert_eq!(lines[5], "1 passed, 3 failed, 1 skipped");
    assert_eq!(lines.len(), 6);
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_directory_is_a_failure() {
    let summary = run(&[PathBuf::from("/no/such/cupel/vectors")], None);
    assert_eq!(summary.failed(), 1);
    assert!(
        summary
            .report()
            .contains("cannot read the vector directory"),
        "{}",
        summary.report()
    );
}

#[test]
fn the_binary_exits_non_zero_on_failure_and_ends_with_the_summary() {
    let exe = env!("CARGO_BIN_EXE_cupel-conformance");
    let dir = scratch("cli");
    fs::write(dir.join("pass.toml"), PASSING).unwrap();
    let ok = Command::new(exe).arg("--dir").arg(&dir).output().unwrap();
    let stdout = String::from_utf8(ok.stdout).unwrap();
    assert!(ok.status.success(), "{stdout}");
    assert_eq!(stdout, "conformance: 1 vectors\n1 passed, 0 failed\n");

    fs::write(
        dir.join("fail.toml"),
        PASSING.replace("score_approx = 1.0", "score_approx = 0.0"),
    )
    .unwrap();
    let bad = Command::new(exe).arg("--dir").arg(&dir).output().unwrap();
    let stdout = String::from_utf8(bad.stdout).unwrap();
    assert!(!bad.status.success());
    assert!(
        stdout.starts_with("FAIL fail.toml [priority ranks]: "),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last(), Some("1 passed, 1 failed"));

    let usage = Command::new(exe).arg("--bogus").output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_keys_are_ignored_everywhere() {
    // Reflexive scores: a 0.9, b 0.5, c 0.1; greedy by density (score/tokens):
    // a 0.009, b 0.005, c 0.001 against target 250 -> a (100, 150 left),
    // b (100, 50 left), c 100 > 50 out: BudgetExceeded, available 250 - 200 = 50.
    // Chronological, no timestamps: merged (score) order a, b.
    let dir = scratch("unknown-keys");
    fs::write(
        dir.join("future.toml"),
        r#"
suite_version = "9.9"

[test]
name = "forward compatible"
stage = "pipeline"
added_in = "2.0"

[budget]
max_tokens = 1000
target_tokens = 250
output_reserve = 0
future_budget_knob = 3

[config]
slicer = "greedy"
placer = "chronological"
future_policy_knob = "x"

[[config.scorers]]
type = "reflexive"
weight = 1.0
future_scorer_knob = [1, 2]

[[items]]
content = "a"
tokens = 100
futureRelevanceHint = 0.9
embedding_id = "e1"

[[items]]
content = "b"
tokens = 100
futureRelevanceHint = 0.5

[[items]]
content = "c"
tokens = 100
futureRelevanceHint = 0.1

[[expected_output]]
content = "a"
note = "ignored"

[[expected_output]]
content = "b"

[expected]
future_expectation = 1

[[expected.diagnostics.excluded]]
content = "c"
score_approx = 0.1
exclusion_reason = "BudgetExceeded"
item_tokens = 100
available_tokens = 50
future_field = "y"
"#,
    )
    .unwrap();
    let summary = run(std::slice::from_ref(&dir), None);
    assert_eq!(
        summary.summary_line(),
        "1 passed, 0 failed",
        "{}",
        summary.report()
    );
    fs::remove_dir_all(&dir).unwrap();
}
