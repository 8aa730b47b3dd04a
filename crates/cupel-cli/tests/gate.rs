#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `cupel gate`, run for real: snapshots of both decisions in text and JSON,
//! of the formatted blocks and of every error, plus checks of the numbers.

use std::process::Output;

use assert_cmd::cargo_bin_cmd;
use serde_json::Value;

fn cupel(args: &[&str]) -> Output {
    let mut cmd = cargo_bin_cmd!("cupel");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    cmd.output().unwrap()
}

/// A run that must exit with `code`; returns (stdout, stderr).
fn run(args: &[&str], code: i32) -> (String, String) {
    let o = cupel(args);
    let out = String::from_utf8(o.stdout).unwrap();
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(code), "stdout: {out}\nstderr: {err}");
    assert!(!err.contains("panicked"));
    (out, err)
}

fn json(args: &[&str]) -> Value {
    let (out, err) = run(args, 0);
    assert_eq!(err, "");
    serde_json::from_str(&out).unwrap()
}

const EXAMPLE: &str = "examples/gate.toml";
const OVER: &str = "tests/fixtures/gate-over.toml";

/// Totals add up: total = context + divider + nodes, and nodes = Σ tokens_after.
fn assert_totals_add_up(v: &Value) {
    let t = &v["tokens"];
    let n = |k: &str| t[k].as_i64().unwrap();
    assert_eq!(n("total"), n("context") + n("divider") + n("retrieval"));
    let after: i64 = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["tokens_after"].as_i64().unwrap())
        .sum();
    assert_eq!(n("retrieval"), after);
}

#[test]
fn example_file_is_admitted_text() {
    let (out, err) = run(&["gate", EXAMPLE], 0);
    assert_eq!(err, "");
    insta::assert_snapshot!("gate_example_text", out);
}

#[test]
fn example_file_is_admitted_json() {
    let v = json(&["gate", EXAMPLE, "--format", "json"]);
    assert_eq!(v["decision"], "admitted");
    assert_eq!(v["encoding"], "cl100k_base");
    assert_totals_add_up(&v);
    // Two old blocks + the divider + three node blocks; nothing to requeue.
    let ctx = v["context"].as_array().unwrap();
    assert_eq!(ctx.len(), 6);
    assert_eq!(ctx[2], "<<<New content");
    assert_eq!(v["requeue"], serde_json::json!([]));
    // sql: the demand message is present -> compacted; dotnet: always; prose: no rule.
    let langs: Vec<(&str, bool)> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["language"].as_str().unwrap(),
                n["compacted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(langs, [("sql", true), ("dotnet", true), ("unknown", false)]);
    assert_eq!(v["nodes"][2]["policy"], Value::Null);
    insta::assert_snapshot!(
        "gate_example_json",
        serde_json::to_string_pretty(&v).unwrap()
    );
}

#[test]
fn the_formatted_block_of_a_compacted_sql_node() {
    let v = json(&["gate", EXAMPLE, "--format", "json"]);
    insta::assert_snapshot!("gate_sql_block", v["context"][3].as_str().unwrap());
}

#[test]
fn over_hands_back_the_context_and_the_demand() {
    let (out, _) = run(&["gate", OVER], 0);
    insta::assert_snapshot!("gate_over_text", out);
    let v = json(&["gate", OVER, "--format", "json"]);
    assert_eq!(v["decision"], "over");
    assert_totals_add_up(&v);
    assert!(v["tokens"]["total"].as_i64().unwrap() > 60);
    // The context is the file's, unchanged; no divider, no node block.
    let file: Value = toml::from_str(
        &std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(OVER))
            .unwrap(),
    )
    .unwrap();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let (original, got) = (strings(&file["context"]), strings(&v["context"]));
    assert_eq!(got, original);
    // Only the message addressed to this gate comes back.
    assert_eq!(
        v["requeue"],
        serde_json::json!([{"target": "manage_budget", "topic": "compact_sql"}])
    );
    insta::assert_snapshot!("gate_over_json", serde_json::to_string_pretty(&v).unwrap());
}

#[test]
fn json_input_and_another_encoding() {
    let v = json(&["gate", "tests/fixtures/gate.json", "--format", "json"]);
    assert_eq!(v["decision"], "admitted");
    assert_eq!(v["nodes"][0]["policy"], "threshold");
    assert_eq!(v["nodes"][0]["compacted"], true);
    let o = json(&[
        "gate",
        "tests/fixtures/gate.json",
        "--format",
        "json",
        "--encoding",
        "gpt-4o",
    ]);
    assert_eq!(o["encoding"], "o200k_base");
    assert_totals_add_up(&o);
}

#[test]
fn misconfiguration_exits_1() {
    let (out, err) = run(&["gate", "tests/fixtures/gate-misconfig.toml"], 1);
    assert_eq!(out, "");
    assert!(err.starts_with("error: PIPELINE_BUDGET_MISCONFIG"), "{err}");
    insta::assert_snapshot!("gate_error_misconfig", err);
}

#[test]
fn invalid_files_exit_2_naming_the_key() {
    for (name, file) in [
        ("threshold_missing", "gate-threshold-missing.toml"),
        ("rules_not_a_list", "gate-rules-not-a-list.toml"),
        ("unknown_key", "gate-unknown-key.toml"),
        ("missing_budget", "gate-missing-budget.toml"),
        ("bad_node", "gate-bad-node-key.toml"),
        ("missing_text", "gate-missing-text.toml"),
        ("threshold_string", "gate-threshold-string.toml"),
        ("budget_string", "gate-budget-string.toml"),
        ("rule_string", "gate-rule-string.toml"),
    ] {
        let (out, err) = run(&["gate", &format!("tests/fixtures/{file}")], 2);
        assert_eq!(out, "");
        assert!(err.starts_with("error: tests/fixtures/"), "{err}");
        insta::assert_snapshot!(format!("gate_error_{name}"), err);
    }
    let (_, err) = run(&["gate", EXAMPLE, "--encoding", "bogus"], 2);
    assert!(err.starts_with("error: unknown encoding `bogus`"), "{err}");
}

#[test]
fn type_errors_name_the_key_path_and_the_position() {
    let (_, err) = run(&["gate", "tests/fixtures/gate-threshold-string.toml"], 2);
    // Line 9, column 13: the value after `threshold = `.
    assert!(
        err.starts_with(
            "error: tests/fixtures/gate-threshold-string.toml:9:13: `gate.compact_code.rules[0].threshold`: invalid type: string \"0.4\", expected f64"
        ),
        "{err}"
    );
    let (_, err) = run(&["gate", "tests/fixtures/gate-budget-string.toml"], 2);
    assert!(
        err.starts_with(
            "error: tests/fixtures/gate-budget-string.toml:4:22: `gate.max_context_tokens`: "
        ),
        "{err}"
    );
    let (_, err) = run(&["gate", "tests/fixtures/gate-rule-string.toml"], 2);
    assert!(
        err.starts_with(
            "error: tests/fixtures/gate-rule-string.toml:5:27: `gate.compact_code.rules[0]`: "
        ),
        "{err}"
    );
}

#[test]
fn encoding_flag_overrides_the_file() {
    let file = "tests/fixtures/gate-encoding.toml";
    let from_file = json(&["gate", file, "--format", "json"]);
    assert_eq!(from_file["encoding"], "o200k_base");
    let flagged = json(&[
        "gate",
        file,
        "--format",
        "json",
        "--encoding",
        "cl100k_base",
    ]);
    assert_eq!(flagged["encoding"], "cl100k_base");
    // The text output says which encoding counted.
    let (out, _) = run(&["gate", file, "--encoding", "cl100k_base"], 0);
    assert!(
        out.starts_with("gate manage_budget: admitted (encoding cl100k_base)\n"),
        "{out}"
    );
}

#[test]
fn help_lists_the_exit_codes() {
    let (out, _) = run(&["gate", "--help"], 0);
    assert!(out.contains("PIPELINE_BUDGET_MISCONFIG"));
    assert!(out.contains("--encoding <NAME>"));
}

/// Issue 28 points 1, 2 and 4: the original retrieval keys are read as they
/// are, the `.cs` path decides the language, `C#` / `Always` name `dotnet` /
/// `always`, and a node no rule matched says so.
#[test]
fn the_original_node_keys_and_names_are_accepted() {
    let v = json(&[
        "gate",
        "tests/fixtures/gate-original-keys.json",
        "--format",
        "json",
    ]);
    assert_eq!(v["decision"], "admitted");
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["id"], "orders-1");
    // "hello" alone is unknown; the path `src/Shop/Orders.cs` makes it dotnet,
    // and the rule for `C#` compacts it.
    assert_eq!(nodes[0]["language"], "dotnet");
    assert_eq!(nodes[0]["policy"], "always");
    assert_eq!(nodes[0]["compacted"], true);
    assert!(nodes[0].get("unmatched").is_none());
    // `docs/notes.md` decides nothing; the text is unknown.
    assert_eq!(nodes[1]["language"], "unknown");
    assert_eq!(nodes[1]["unmatched"], "unknown_language");
    let block = v["context"][0].as_str().unwrap();
    assert!(block.contains("id: orders-1"), "{block}");
    assert!(block.contains("path: src/Shop/Orders.cs"), "{block}");
    let block = v["context"][1].as_str().unwrap();
    assert!(block.contains("path: docs/notes.md"), "{block}");
    let (out, _) = run(&["gate", "tests/fixtures/gate-original-keys.json"], 0);
    assert!(
        out.contains("note: node 2 (notes-1): language unknown, so no compaction rule can match\n"),
        "{out}"
    );
}
