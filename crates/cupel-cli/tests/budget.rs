#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `cupel adaptive simulate` (old name `cupel budget simulate`), run for real: the seed's outputs byte for byte,
//! hand-derived budgets, snapshots of text, JSON and every input error.

mod common;

use common::cupel;

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A successful run's stdout (no stderr).
fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let o = cupel(args, stdin);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "");
    text(&o.stdout)
}

/// A run that fails with exit code 2: empty stdout, one `error:` line (and
/// at most a `hint:` line) on stderr, which is returned.
fn input_error(args: &[&str], stdin: Option<&str>) -> String {
    let o = cupel(args, stdin);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    assert_eq!(text(&o.stdout), "");
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(lines.len() <= 2, "{err}");
    if let Some(h) = lines.get(1) {
        assert!(h.starts_with("hint: "), "{err}");
    }
    err
}

/// `--trace -` with `csv` on stdin.
fn trace_error(csv: &str) -> String {
    input_error(
        &["adaptive", "simulate", "--trace", "-", "--margin", "0.1"],
        Some(csv),
    )
}

const WORKED: &str = "tests/fixtures/budget/worked-example.csv";
const EXAMPLE: &str = "examples/usage-trace.csv";

// ----- the seed's outputs ------------------------------------------------------------------

/// Seed 002, section "Simulation": what
/// `token_budget_convergence.py --steps 5 --usage 50 --margin 0.2` produces,
/// copied from the seed's code block line for line (ceil(50 × 1.2) = 60 at
/// every step).
const SEED_002_SIMULATION: &str = "\
step 1: 60
step 2: 60
step 3: 60
step 4: 60
step 5: 60
final budget: 60
";

#[test]
fn constant_usage_prints_exactly_the_seed_output() {
    let out = ok(
        &[
            "adaptive", "simulate", "--steps", "5", "--usage", "50", "--margin", "0.2",
        ],
        None,
    );
    // Byte for byte: six lines, no header, nothing on stderr (`ok` checks).
    assert_eq!(out, SEED_002_SIMULATION);
    assert_eq!(out.lines().count(), 6);
    // The old name, kept as a hidden alias (issue 50, item 3): the seed's
    // call as earlier releases spelled it prints the same bytes.
    let old = ok(
        &[
            "budget", "simulate", "--steps", "5", "--usage", "50", "--margin", "0.2",
        ],
        None,
    );
    assert_eq!(old, SEED_002_SIMULATION);
}

#[test]
fn the_old_name_budget_is_hidden_from_the_command_list() {
    let help = ok(&["--help"], None);
    assert!(help.contains("adaptive"), "{help}");
    assert!(
        !help.lines().any(|l| l.trim_start().starts_with("budget ")),
        "{help}"
    );
}

#[test]
fn verbose_opens_with_a_header_line() {
    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--steps",
            "5",
            "--usage",
            "50",
            "--margin",
            "0.2",
            "--verbose",
        ],
        None,
    );
    // The margin and the initial budget (the usage, 50), then the seed's lines.
    assert_eq!(
        out,
        format!("margin 0.2, initial budget 50\n{SEED_002_SIMULATION}")
    );
}

#[test]
fn usage_100_with_margin_0_1_is_110_not_111() {
    let out = ok(
        &[
            "adaptive", "simulate", "--steps", "2", "--usage", "100", "--margin", "0.1",
        ],
        None,
    );
    assert_eq!(out, "step 1: 110\nstep 2: 110\nfinal budget: 110\n");
}

#[test]
fn json_prints_the_margin_unrounded() {
    // 1_000_000 × (1 + 0.0000001) = 1_000_000.1, ceil = 1_000_001: the margin
    // changed the budget, so the JSON must not show it as 0.
    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--steps",
            "1",
            "--usage",
            "1000000",
            "--margin",
            "0.0000001",
            "--format",
            "json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["margin"].as_f64(), Some(0.0000001));
    assert_eq!(v["final_budget"], 1_000_001);
}

#[test]
fn steps_default_to_ten_and_margin_to_0_1() {
    // ceil(10 × 1.1) = 11.
    let out = ok(&["adaptive", "simulate", "--usage", "10"], None);
    assert_eq!(out.lines().count(), 11);
    assert!(out.lines().take(10).all(|l| l.ends_with(": 11")));
    let out = ok(
        &["adaptive", "simulate", "--usage", "10", "--verbose"],
        None,
    );
    assert_eq!(out.lines().next(), Some("margin 0.1, initial budget 10"));
}

#[test]
fn zero_usage_keeps_the_initial_budget() {
    // No usage is ever recorded: the budget is unchanged (--initial, else
    // --usage raised to 1).
    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--usage",
            "0",
            "--steps",
            "12",
            "--initial",
            "64",
            "--verbose",
        ],
        None,
    );
    assert_eq!(out.lines().next(), Some("margin 0.1, initial budget 64"));
    assert!(
        out.lines().skip(1).take(12).all(|l| l.ends_with(": 64")),
        "{out}"
    );
    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--usage",
            "0",
            "--steps",
            "2",
            "--verbose",
        ],
        None,
    );
    // --usage 0 raised to 1 is the initial budget.
    assert_eq!(
        out,
        "margin 0.1, initial budget 1\nstep 1: 1\nstep 2: 1\nfinal budget: 1\n"
    );
}

#[test]
fn negative_margins_count_as_zero() {
    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--steps",
            "1",
            "--usage",
            "77",
            "--margin",
            "-0.3",
            "--verbose",
        ],
        None,
    );
    // The header (--verbose) shows the margin as given and what it counts as.
    assert_eq!(
        out,
        "margin -0.3 (counts as 0), initial budget 77\nstep 1: 77\nfinal budget: 77\n"
    );
}

// ----- traces ------------------------------------------------------------------------------

#[test]
fn worked_example_trace_text() {
    let out = ok(
        &["adaptive", "simulate", "--trace", WORKED, "--margin", "0.1"],
        None,
    );
    // 6 = ceil(5 × 1.1), 33 = ceil(30 × 1.1), 17 = ceil(15 × 1.1) (ā_B = 30 / 2).
    let budgets: Vec<&str> = out
        .lines()
        .map(|l| l.split("  ").next().unwrap().trim())
        .collect();
    assert_eq!(
        budgets,
        ["step 1: 6", "step 2: 33", "step 3: 17", "final budget: 17"]
    );
    // ū_3 = 40 / 3, shown with two decimals.
    assert!(out.lines().nth(2).unwrap().contains("ū=13.33"));
    insta::assert_snapshot!(out);
}

#[test]
fn worked_example_trace_json() {
    let out = ok(
        &[
            "adaptive", "simulate", "--trace", WORKED, "--margin", "0.1", "--format", "json",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let budgets: Vec<i64> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["budget"].as_i64().unwrap())
        .collect();
    assert_eq!(budgets, [6, 33, 17]);
    assert_eq!(v["final_budget"], 17);
    // Cycle 2: ū = (5 + 30) / 2 = 17.5; cycle 3: ā = 15, from B.
    assert_eq!(v["steps"][1]["mean_total"], 17.5);
    assert_eq!(v["steps"][2]["max_agent_mean"], 15.0);
    assert_eq!(v["steps"][2]["max_agent_mean_name"], "B");
    assert_eq!(v["steps"][2]["mean_total"], 13.333333);
    insta::assert_snapshot!(out);
}

#[test]
fn constant_usage_json_has_the_same_shape() {
    let out = ok(
        &[
            "adaptive", "simulate", "--steps", "2", "--usage", "50", "--margin", "0.2", "--format",
            "json",
        ],
        None,
    );
    insta::assert_snapshot!(out);
    // The header is text output: --verbose leaves the JSON as it is.
    let verbose = ok(
        &[
            "adaptive",
            "simulate",
            "--steps",
            "2",
            "--usage",
            "50",
            "--margin",
            "0.2",
            "--format",
            "json",
            "--verbose",
        ],
        None,
    );
    assert_eq!(verbose, out);
}

#[test]
fn an_idle_spell_drops_to_1_and_a_trace_with_no_usage_keeps_initial() {
    // 40 tokens once, then ten cycles in which A reports 0: ū stays 40, so
    // ceil(40 × 1.1) = 44 for nine zero cycles, then 1.
    let mut csv = String::from("cycle,agent,tokens\n1,A,40\n");
    for c in 2..=11 {
        csv.push_str(&format!("{c},A,0\n"));
    }
    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--trace",
            "-",
            "--margin",
            "0.1",
            "--verbose",
        ],
        Some(&csv),
    );
    let lines: Vec<&str> = out.lines().collect();
    // A trace starts from budget 1 unless --initial says otherwise (the
    // --verbose header says which).
    assert_eq!(lines[0], "margin 0.1, initial budget 1");
    assert!(lines[10].starts_with("step 10: 44 "), "{out}");
    assert!(
        lines[11].starts_with("step 11: 1 ") && lines[11].ends_with("[ten idle cycles: budget 1]")
    );
    assert_eq!(lines[12], "final budget: 1");

    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--trace",
            "-",
            "--initial",
            "500",
            "--verbose",
        ],
        Some("cycle,agent,tokens\n1,A,0\n2,B,0\n"),
    );
    assert!(
        out.starts_with("margin 0.1, initial budget 500\nstep 1: 500"),
        "{out}"
    );
    assert!(out.contains("[no usage yet: budget kept]"));
    assert!(out.ends_with("final budget: 500\n"));
}

#[test]
fn cycle_numbers_are_labels_and_gaps_are_not_cycles() {
    // Cycles 10 and 20 are steps 1 and 2; no idle cycles are invented between
    // them, so A's mean is (4 + 0) / 2 = 2 (B reported in cycle 20), not 4 / 11.
    let out = ok(
        &[
            "adaptive", "simulate", "--trace", "-", "--margin", "0", "--format", "json",
        ],
        Some("cycle,agent,tokens\n10,A,4\n20,B,1\n"),
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            v["steps"][1]["step"].as_u64(),
            v["steps"][1]["cycle"].as_u64()
        ),
        (Some(2), Some(20))
    );
    assert_eq!(v["steps"][1]["max_agent_mean"], 2.0);
    // u = 1, ū = (4 + 1) / 2 = 2.5, a = 1, ā = 2: ceil(2.5) = 3.
    assert_eq!(v["steps"][1]["budget"], 3);
}

#[test]
fn example_trace_and_its_committed_chart() {
    let svg = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("budget-example.svg");
    let svg_arg = svg.to_str().unwrap();
    let out = ok(
        &[
            "adaptive",
            "simulate",
            "--trace",
            EXAMPLE,
            "--margin",
            "0.2",
            "--initial",
            "2000",
            "--plot",
            svg_arg,
        ],
        None,
    );
    insta::assert_snapshot!(out);
    // The SVG in the repository is exactly what this command draws (the
    // README shows it); regenerate it with the command in the README.
    let drawn = std::fs::read_to_string(&svg).unwrap();
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/budget.svg"))
            .unwrap();
    assert_eq!(drawn, committed, "examples/budget.svg is stale");
    for label in [
        "Adaptive token budget (margin 0.2)",
        "step (cycle)",
        "tokens",
        "usage u (cycle total)",
    ] {
        assert!(drawn.contains(label), "{label}");
    }
    // Cycle 7's 4200-token spike: ceil(4200 × 1.2) = 5040.
    assert!(out.contains("step 7: 5040 "));
}

#[test]
fn help_describes_the_rule_and_the_trace_format() {
    insta::assert_snapshot!(ok(&["adaptive", "simulate", "--help"], None));
}

// ----- errors --------------------------------------------------------------------------------

#[test]
fn error_negative_tokens_names_the_file_and_line() {
    let err = input_error(
        &[
            "adaptive",
            "simulate",
            "--trace",
            "tests/fixtures/budget/negative-tokens.csv",
        ],
        None,
    );
    insta::assert_snapshot!(err);
}

#[test]
fn error_non_numeric_tokens() {
    insta::assert_snapshot!(trace_error("cycle,agent,tokens\n1,A,5\n2,A,many\n"));
}

#[test]
fn error_missing_header() {
    insta::assert_snapshot!(trace_error("1,A,5\n2,B,30\n"));
}

#[test]
fn error_empty_trace() {
    insta::assert_snapshot!(trace_error(""));
}

#[test]
fn error_unknown_column() {
    insta::assert_snapshot!(trace_error("cycle,agent,tokens,model\n1,A,5,gpt\n"));
}

#[test]
fn error_missing_column() {
    insta::assert_snapshot!(trace_error("cycle,tokens\n1,5\n"));
}

#[test]
fn error_cycles_out_of_order() {
    insta::assert_snapshot!(trace_error("cycle,agent,tokens\n1,A,5\n3,A,5\n2,B,1\n"));
}

#[test]
fn error_agent_twice_in_a_cycle() {
    insta::assert_snapshot!(trace_error("cycle,agent,tokens\n1,A,5\n1,B,2\n1,A,1\n"));
}

#[test]
fn error_wrong_number_of_fields() {
    insta::assert_snapshot!(trace_error("cycle,agent,tokens\n1,A\n"));
}

#[test]
fn error_cycle_total_overflows() {
    // 9223372036854775807 + 1 = 9223372036854775808 = 2^63.
    insta::assert_snapshot!(trace_error(
        "cycle,agent,tokens\n1,A,9223372036854775807\n1,B,1\n"
    ));
}

#[test]
fn error_unreadable_trace() {
    insta::assert_snapshot!(input_error(
        &[
            "adaptive",
            "simulate",
            "--trace",
            "tests/fixtures/budget/missing.csv"
        ],
        None
    ));
}

#[test]
fn error_unwritable_chart() {
    let err = input_error(
        &[
            "adaptive",
            "simulate",
            "--trace",
            WORKED,
            "--plot",
            "tests/fixtures/budget/no-such-dir/x.svg",
        ],
        None,
    );
    assert!(
        err.starts_with(
            "error: cannot write the chart to `tests/fixtures/budget/no-such-dir/x.svg`"
        ),
        "{err}"
    );
}

#[test]
fn flag_errors_exit_2() {
    // clap reports these (with its usage lines); the exit code is still 2.
    for args in [
        &["adaptive", "simulate", "--usage", "5", "--margin", "lots"][..],
        &["adaptive", "simulate", "--usage", "-5"],
        &["adaptive", "simulate", "--usage", "5", "--steps", "0"],
        &["adaptive", "simulate", "--trace", WORKED, "--steps", "3"],
        &["adaptive", "simulate", "--usage", "5", "--initial", "0"],
        &["adaptive", "simulate"],
    ] {
        let o = cupel(args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o.stderr).starts_with("error: "), "{args:?}");
    }
    let o = cupel(
        &["adaptive", "simulate", "--usage", "5", "--margin", "lots"],
        None,
    );
    assert!(text(&o.stderr).contains("`lots` is not a decimal number"));
}
