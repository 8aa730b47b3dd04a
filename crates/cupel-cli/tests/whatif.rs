#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The what-if commands (`sweep`, `marginal`, `min-budget`, `compare`), run
//! for real: snapshots on the demo scenario, one small case per command whose
//! numbers are derived by hand, the committed sweep chart, and every error.

mod common;

use common::{assert_fits_80, cupel, fails, ok};

/// The demo's items under greedy slicing (the scenario `cupel demo` ran
/// before 0.2): greedy is what makes budgets non-monotonic, which the sweep
/// and `min-budget --exact` cases show.
const DEMO: &str = "tests/fixtures/whatif/support-greedy.toml";
const DENSE: &str = "tests/fixtures/whatif/dense.toml";
const THREE: &str = "tests/fixtures/whatif/three.toml";
const TWO: &str = "tests/fixtures/whatif/two.toml";
const BY_HINT: &str = "tests/fixtures/whatif/by-hint.toml";
const BY_PRIORITY: &str = "tests/fixtures/whatif/by-priority.toml";
const QUOTA: &str = "tests/fixtures/whatif/quota.toml";
const PINNED: &str = "tests/fixtures/whatif/pinned.toml";

/// The arguments that draw `examples/sweep.svg` (the README shows it).
const CHART_ARGS: [&str; 8] = ["sweep", DEMO, "--from", "0", "--to", "1536", "--step", "32"];

#[test]
fn the_demo_fixture_is_the_embedded_scenario() {
    assert_eq!(
        ok(&["demo", "--print-input"]),
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/demo.toml"
        ))
        .unwrap()
    );
}

// ----- sweep ------------------------------------------------------------------------------------

#[test]
fn sweep_demo_text() {
    let out = ok(&[
        "sweep", DEMO, "--from", "0", "--to", "1536", "--step", "128",
    ]);
    assert_fits_80(&out);
    insta::assert_snapshot!(out);
}

#[test]
fn sweep_demo_json() {
    insta::assert_snapshot!(ok(&[
        "sweep", DEMO, "--from", "512", "--to", "1536", "--points", "3", "--format", "json"
    ]));
}

#[test]
fn sweep_demo_csv() {
    insta::assert_snapshot!(ok(&[
        "sweep", DEMO, "--from", "256", "--to", "1536", "--step", "256", "--format", "csv"
    ]));
}

#[test]
fn sweep_hand_checked() {
    // dense.toml: A 60 tokens (density 0.015), B 50 (0.010); reserve 0, so a
    // probe b gives greedy exactly b tokens, and it takes A first when it fits.
    //   b =  50: A does not fit, B does        -> 1 item,  50 tokens, 50/50   = 100.0%
    //   b =  60: A fits, 0 left                 -> 1 item,  60 tokens, 60/60   = 100.0%
    //   b =  70: A, 10 left < 50                -> 1 item,  60 tokens, 60/70   =  85.7%
    //   b =  80 / 90 / 100: A only              ->          60/80 = 75.0%, 60/90 = 66.7%, 60/100 = 60.0%
    //   b = 110: A + B = 110                    -> 2 items, 110 tokens, 100.0%
    // B (#1) is in at 50 and out at 60: the one gap.
    let out = ok(&[
        "sweep", DENSE, "--from", "50", "--to", "110", "--step", "10",
    ]);
    for line in [
        "    50      1      50  100.0%  M 50",
        "    60      1      60  100.0%  M 60",
        "    70      1      60   85.7%  M 60",
        "    80      1      60   75.0%  M 60",
        "    90      1      60   66.7%  M 60",
        "   100      1      60   60.0%  M 60",
        "   110      2     110  100.0%  M 110",
    ] {
        assert!(out.contains(&format!("{line}\n")), "{line}\n{out}");
    }
    assert!(out.contains("#1 (in at 50, out at 60)"), "{out}");
    // The same numbers as JSON and CSV.
    let json = ok(&[
        "sweep", DENSE, "--from", "50", "--to", "110", "--step", "10", "--format", "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows: Vec<(i64, i64, f64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["budget"].as_i64().unwrap(),
                r["tokens"].as_i64().unwrap(),
                r["utilisation"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (50, 50, 1.0),
            (60, 60, 1.0),
            (70, 60, 0.8571),
            (80, 60, 0.75),
            (90, 60, 0.6667),
            (100, 60, 0.6),
            (110, 110, 1.0)
        ]
    );
    assert_eq!(v["rows"][0]["included"], serde_json::json!([1]));
    assert_eq!(
        v["non_monotonic_items"],
        serde_json::json!([{"item": 1, "included_at": 50, "excluded_at": 60}])
    );
    let csv = ok(&[
        "sweep", DENSE, "--from", "50", "--to", "70", "--points", "2", "--format", "csv",
    ]);
    assert_eq!(
        csv,
        "budget,items,tokens,utilisation,no_window,Message items,Message tokens\n\
         50,1,50,1,,1,50\n\
         70,1,60,0.8571,,1,60\n"
    );
}

#[test]
fn sweep_rows_without_a_window_say_why() {
    // Demo: output_reserve 384, one pinned 71-token prompt. b = 300 < 384: the
    // probe budget itself is invalid; b = 400: 400 - 384 = 16 < 71.
    let out = ok(&[
        "sweep", DEMO, "--from", "300", "--to", "400", "--step", "100",
    ]);
    assert!(
        out.contains("   300  no window: output_reserve 384 > 300\n"),
        "{out}"
    );
    assert!(
        out.contains("   400  no window: pinned items need 71, 16 available\n"),
        "{out}"
    );
}

#[test]
fn sweep_chart_is_the_committed_example() {
    let svg = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep-example.svg");
    let mut args = CHART_ARGS.to_vec();
    args.extend(["--plot", svg.to_str().unwrap()]);
    let out = ok(&args);
    assert!(
        out.starts_with(
            "policy  the [policy] table of tests/fixtures/whatif/support-greedy.toml\n"
        )
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/sweep.svg"))
            .unwrap();
    // Regenerate with the command in the README if this fails on purpose.
    assert_eq!(drawn, committed, "examples/sweep.svg is stale");
    for label in [
        "Budget sweep: what is selected at each budget b",
        "selected tokens",
        "selected items",
        "room: b - output_reserve",
        "SystemPrompt",
        "Document",
    ] {
        assert!(drawn.contains(&format!(">\n{label}\n</text>")), "{label}");
    }
    // Five kinds, two panels: ten stacked bands, no system font.
    assert_eq!(drawn.matches("<polygon").count(), 10);
    assert!(!drawn.contains("font-face") && !drawn.contains("@import"));
}

#[test]
fn sweep_errors_name_the_flag() {
    let e = fails(
        &[
            "sweep", DEMO, "--from", "900", "--to", "500", "--step", "10",
        ],
        None,
        2,
    );
    insta::assert_snapshot!("sweep_error_from_above_to", e);
    let e = fails(
        &["sweep", DEMO, "--from", "0", "--to", "500", "--step", "0"],
        None,
        2,
    );
    assert!(
        e.starts_with("error: --step must be at least 1 (got 0)\n"),
        "{e}"
    );
    let e = fails(
        &["sweep", DEMO, "--from", "0", "--to", "500", "--points", "1"],
        None,
        2,
    );
    assert!(
        e.starts_with("error: --points must be at least 2 (got 1)\n"),
        "{e}"
    );
    let e = fails(
        &["sweep", DEMO, "--from", "0", "--to", "2", "--points", "4"],
        None,
        2,
    );
    assert!(
        e.contains("--points 4 is more than the 3 budgets from 0 to 2"),
        "{e}"
    );
    let e = fails(
        &["sweep", DEMO, "--from", "-5", "--to", "2", "--step", "1"],
        None,
        2,
    );
    assert!(e.starts_with("error: --from must be >= 0 (got -5)"), "{e}");
    let e = fails(
        &[
            "sweep",
            DEMO,
            "--from",
            "0",
            "--to",
            "9",
            "--step",
            "1",
            "--plot",
            "tests/fixtures/no-such-dir/x.svg",
        ],
        None,
        2,
    );
    assert!(e.contains("cannot write the chart"), "{e}");
    // Neither or both of --step and --points: clap's usage error, also 2.
    let o = cupel(&["sweep", DEMO, "--from", "0", "--to", "9"], None);
    assert_eq!(o.status.code(), Some(2));
    let o = cupel(
        &[
            "sweep", DEMO, "--from", "0", "--to", "9", "--step", "1", "--points", "3",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    // Input errors are the same as select's.
    fails(
        &[
            "sweep",
            "tests/fixtures/bad-syntax.toml",
            "--from",
            "0",
            "--to",
            "9",
            "--step",
            "1",
        ],
        None,
        2,
    );
}

// ----- marginal ---------------------------------------------------------------------------------

#[test]
fn marginal_demo() {
    let out = ok(&["marginal", DEMO, "--slack", "200"]);
    assert_fits_80(&out);
    insta::assert_snapshot!(out);
}

#[test]
fn marginal_hand_checked() {
    // three.toml: best 0.9, good 0.5, meh 0.1, 40 tokens each; budget 120/120.
    // Full: greedy takes all three (120). --slack 40: 80/80 holds best + good
    // (80), so meh (#2) is the one item that enters between 80 and 120. In the
    // reduced run the slicer has used 80 of 80 when it reaches meh: 0 left.
    let out = ok(&["marginal", THREE, "--slack", "40"]);
    assert!(
        out.contains(
            "1 item (40 tokens) enter between target_tokens 80 and 120 (in window order):"
        ),
        "{out}"
    );
    assert!(
        out.contains("   2  Message      40  0.100  BudgetExceeded: 40 > 0 available\n"),
        "{out}"
    );
    assert!(out.contains("full     3 items      120 tokens"), "{out}");
    assert!(out.contains("reduced  2 items       80 tokens"), "{out}");
    // --slack 0: the same budget twice, nothing is marginal.
    let out = ok(&["marginal", THREE, "--slack", "0"]);
    assert!(out.contains("0 items (0 tokens) enter"), "{out}");
}

#[test]
fn marginal_refuses_a_quota_slicer_with_the_spec_message() {
    let e = fails(
        &["marginal", THREE, "--slack", "40", "--policy", QUOTA],
        None,
        2,
    );
    assert!(e.starts_with(
        "error: GetMarginalItems requires monotonic item inclusion. QuotaSlice produces \
         non-monotonic inclusion as budget changes shift percentage allocations.\n"
    ));
    insta::assert_snapshot!(e);
}

#[test]
fn marginal_errors() {
    let e = fails(&["marginal", THREE, "--slack", "121"], None, 2);
    assert!(
        e.starts_with("error: --slack 121 is larger than target_tokens 120\n"),
        "{e}"
    );
    let e = fails(&["marginal", THREE, "--slack", "-1"], None, 2);
    assert!(e.starts_with("error: --slack must be >= 0 (got -1)"), "{e}");
    // --max-tokens 1200: 1200 - 900 = 300 < output_reserve 384; at most
    // 1200 - 384 = 816 keeps the reserve.
    let e = fails(
        &["marginal", DEMO, "--max-tokens", "1200", "--slack", "900"],
        None,
        2,
    );
    assert_eq!(
        e,
        "error: --slack 900 leaves max_tokens 300 below output_reserve 384\n\
         hint: use at most --slack 816 (max_tokens - output_reserve)\n"
    );
    // Demo --slack 1000: target 1024 - 1000 = 24 < the pinned prompt's 71
    // tokens under overflow "throw": the reduced run fails (exit 1).
    let e = fails(&["marginal", DEMO, "--slack", "1000"], None, 1);
    assert!(
        e.starts_with(
            "error: at the reduced budget (max_tokens 536, target_tokens 24): \
             Selected items require 71 tokens"
        ),
        "{e}"
    );
    // The pinned 80 tokens fit 100 but not 100 - 30 = 70: a selection failure.
    let e = fails(&["marginal", PINNED, "--slack", "30"], None, 1);
    insta::assert_snapshot!("marginal_error_pinned_at_the_reduced_budget", e);
}

// ----- min-budget -------------------------------------------------------------------------------

#[test]
fn min_budget_demo() {
    let out = ok(&["min-budget", DEMO, "--item", "7"]);
    assert_fits_80(&out);
    insta::assert_snapshot!(out);
}

#[test]
fn min_budget_demo_exact_disagrees() {
    let out = ok(&[
        "min-budget",
        DEMO,
        "--content",
        "Lumen Home holiday",
        "--exact",
    ]);
    assert_fits_80(&out);
    assert!(out.contains("They disagree"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn min_budget_hand_checked() {
    // dense.toml, B (#1, 50 tokens), ceiling 110. Binary search (low 50, high 110):
    //   mid  80: A (60) fits, 20 left < 50  -> B out, low  80
    //   mid  95: A, 35 left                 -> out,   low  95
    //   mid 102: A, 42 left                 -> out,   low 102
    //   mid 106: A, 46 left                 -> out,   low 106
    //   mid 108: A, 48 left                 -> out,   low 108
    //   mid 109: A, 49 left                 -> out,   low 109
    //   high - low = 1: verify 110 = A + B  -> 110.
    // Exact scan from 50: A does not fit, B does -> 50. First budget after 50
    // without B: 60 (A fits and leaves 0).
    let out = ok(&[
        "min-budget",
        DENSE,
        "--item",
        "1",
        "--ceiling",
        "110",
        "--exact",
    ]);
    assert!(out.contains("binary search  110\n"), "{out}");
    assert!(out.contains("exact scan     50\n"), "{out}");
    assert!(out.contains("(selected at 50, not at 60)"), "{out}");
    // A (#0, 60 tokens), ceiling 100: 80, 70, 65, 62, 61 all include A (high
    // moves down to 61); 60 is the lower bound and never probed -> 61. The
    // exact scan finds 60: the only cause is S-2.
    let out = ok(&[
        "min-budget",
        DENSE,
        "--content",
        "A",
        "--ceiling",
        "100",
        "--exact",
    ]);
    assert!(out.contains("binary search  61\n"), "{out}");
    assert!(out.contains("exact scan     60\n"), "{out}");
    assert!(out.contains("never probes its lower"), "{out}");
    // Without --exact only the binary search runs; the default ceiling is
    // max_tokens 1000: it finds 110 for B too? 50..1000: mid 525 includes B
    // (A + B = 110 <= 525), then 287, 168, 109 (out: 49 left), 138, 123, 116,
    // 112, 110 (in), 109 is low: answer 110.
    let out = ok(&["min-budget", DENSE, "--item", "1"]);
    assert!(out.contains("binary search  110\n"), "{out}");
    assert!(out.contains("--exact scans every budget"), "{out}");
}

#[test]
fn min_budget_quota_is_refused_unless_exact() {
    let e = fails(
        &["min-budget", THREE, "--item", "2", "--policy", QUOTA],
        None,
        2,
    );
    assert!(e.starts_with(
        "error: FindMinBudgetFor requires monotonic item inclusion. QuotaSlice and \
         CountQuotaSlice produce non-monotonic inclusion as budget changes shift \
         allocations. Use a GreedySlice or KnapsackSlice inner slicer for budget simulation.\n"
    ));
    assert!(e.contains("--exact"), "{e}");
    // --exact: the scan answers; the binary search is reported as refused.
    // meh (#2) ranks last and all three are Messages; the quota caps Message
    // at 90% of b, so it needs 40 + 40 + 40 = 120 <= 0.9 b: b >= 134 (0.9 ×
    // 133 = 119.7 floors to 119 < 120; 0.9 × 134 = 120.6 -> 120).
    let out = ok(&[
        "min-budget",
        THREE,
        "--item",
        "2",
        "--policy",
        QUOTA,
        "--ceiling",
        "200",
        "--exact",
    ]);
    assert!(
        out.contains("binary search  refused: FindMinBudgetFor"),
        "{out}"
    );
    assert!(out.contains("exact scan     134\n"), "{out}");
}

#[test]
fn min_budget_errors() {
    let e = fails(&["min-budget", DEMO, "--item", "31"], None, 2);
    insta::assert_snapshot!("min_budget_error_item_out_of_range", e);
    let e = fails(&["min-budget", DEMO, "--content", "no such text"], None, 2);
    assert!(
        e.starts_with("error: no item's content contains \"no such text\""),
        "{e}"
    );
    let e = fails(&["min-budget", DEMO, "--content", "KB-"], None, 2);
    assert!(
        e.contains("is part of several items' contents: #5, #6, #7 and more"),
        "{e}"
    );
    let e = fails(
        &["min-budget", DEMO, "--item", "5", "--ceiling", "100"],
        None,
        2,
    );
    assert!(
        e.starts_with("error: --ceiling 100 is below the 156 tokens of item #5"),
        "{e}"
    );
    let e = fails(&["min-budget", DEMO, "--item", "30"], None, 2);
    assert!(e.contains("negative tokens (-1)"), "{e}");
    // 100000 + 24 - 24 + 1 = 100001 budgets from item #13's 24 tokens.
    let e = fails(
        &[
            "min-budget",
            DEMO,
            "--item",
            "13",
            "--ceiling",
            "100024",
            "--exact",
        ],
        None,
        2,
    );
    assert!(
        e.starts_with("error: --exact would probe up to 100001 budgets (24..=100024)"),
        "{e}"
    );
    let o = cupel(&["min-budget", DEMO], None);
    assert_eq!(o.status.code(), Some(2), "--item or --content is required");
}

// ----- compare ----------------------------------------------------------------------------------

#[test]
fn compare_demo() {
    let out = ok(&["compare", DEMO, "--policy", "chat", "--policy", "rag"]);
    assert_fits_80(&out);
    insta::assert_snapshot!(out);
}

#[test]
fn compare_hand_checked() {
    // two.toml: room for one of two 50-token items. By hint (A): relevant
    // (0.9) beats urgent (0.1). By priority (B): urgent (9) beats relevant (1).
    // Both items swing, in input order: urgent (#0) out/in, relevant (#1) in/out.
    let out = ok(&["compare", TWO, "--policy", BY_HINT, "--policy", BY_PRIORITY]);
    assert!(
        out.contains("differences: 2 of 2 distinct contents change status"),
        "{out}"
    );
    let diffs = out.split("differences").nth(1).unwrap();
    assert!(
        diffs.contains("   0  out   in  urgent\n   1   in  out  relevant\n"),
        "{diffs}"
    );
    assert!(
        out.contains("summary   A  1 item         50 tokens\n"),
        "{out}"
    );
    assert!(
        out.contains("          B  1 item         50 tokens\n"),
        "{out}"
    );
    assert!(
        out.contains("in all 0, only in A 1, only in B 1, in none 0"),
        "{out}"
    );
    // The same policy twice: no differences.
    let out = ok(&["compare", TWO, "--policy", BY_HINT, "--policy", BY_HINT]);
    assert!(out.contains("differences: 0 of 2"), "{out}");
}

#[test]
fn compare_errors() {
    let e = fails(&["compare", DEMO, "--policy", "chat"], None, 2);
    assert!(
        e.starts_with("error: compare needs at least two --policy (got 1)"),
        "{e}"
    );
    let e = fails(
        &["compare", DEMO, "--policy", "chat", "--policy", "nope"],
        None,
        2,
    );
    insta::assert_snapshot!("compare_error_unknown_policy", e);
    // A pinned prompt over the budget fails the run: exit 1, naming the policy.
    let e = fails(
        &[
            "compare",
            PINNED,
            "--policy",
            "chat",
            "--policy",
            "rag",
            "--max-tokens",
            "50",
            "--target-tokens",
            "50",
        ],
        None,
        1,
    );
    assert!(
        e.starts_with("error: under policy A (chat): Pinned items require 80"),
        "{e}"
    );
}

// ----- help -------------------------------------------------------------------------------------

#[test]
fn help_has_an_example_for_every_command() {
    for cmd in ["sweep", "marginal", "min-budget", "compare"] {
        let out = ok(&[cmd, "--help"]);
        assert!(
            out.contains("Example:\n  cupel demo --print-input > chat.toml\n"),
            "{cmd}"
        );
        assert!(!out.contains("  2  usage or input error"), "{cmd}");
        insta::assert_snapshot!(format!("help_{cmd}"), out);
    }
}

#[test]
fn compare_agrees_with_select_under_each_preset() {
    // The summary's counts are the windows `select --preset` prints.
    let out = ok(&["compare", DEMO, "--policy", "chat", "--policy", "rag"]);
    for (letter, preset) in [("A", "chat"), ("B", "rag")] {
        let window = ok(&["select", DEMO, "--policy", preset]);
        let head = window.lines().find(|l| l.starts_with("window: ")).unwrap();
        // "window: 24 of 31 items, 1018 tokens (...)"
        let words: Vec<&str> = head.split_whitespace().collect();
        let (items, tokens) = (words[1], words[5]);
        let line = format!(
            "{letter}  {:<9} {tokens:>7} tokens",
            format!("{items} items")
        );
        assert!(out.contains(&line), "{line}\n{out}");
    }
}

#[test]
fn compare_takes_preset_as_a_hidden_alias_of_policy() {
    let by_policy = ok(&["compare", DEMO, "--policy", "chat", "--policy", "rag"]);
    let by_preset = ok(&["compare", DEMO, "--preset", "chat", "--preset", "rag"]);
    assert_eq!(by_preset, by_policy);
    let help = ok(&["compare", "--help"]);
    assert!(!help.contains("--preset"), "{help}");
}

/// Items that go in as a variant count the variant's tokens in `marginal`
/// and in the sweep's mix by kind (spec chapter 22), not their whole size.
#[test]
fn marginal_and_sweep_count_a_variant_at_its_own_tokens() {
    const VARIANTS: &str = "tests/fixtures/variants.toml";
    // Full (target 300, effective 280): the fixture's header derives the
    // window, 258 tokens with the flight results as their 8-token placeholder.
    // Reduced by 50 (target 250, effective 230): user 30 (200 left),
    // assistant 40 (160), weather 140 (20); the flights group needs at least
    // 20 + 8 = 28 > 20 and stays out: 20 pinned + 30 + 40 + 140 = 230 tokens.
    // The marginal items are the call (20) and the result as the window
    // holds it (8): 28 tokens, not 20 + 200 = 220.
    let out = ok(&["marginal", VARIANTS, "--slack", "50"]);
    assert!(
        out.contains("2 items (28 tokens) enter between target_tokens 250 and 300"),
        "{out}"
    );
    assert!(out.contains("   5  ToolOutput       8  0.700"), "{out}");
    assert!(out.contains("reduced  5 items      230 tokens"), "{out}");
    // At 300 the window is the full one: SystemPrompt 20; Message 30 + 40 = 70;
    // ToolOutput 20 + 120 + 20 + 8 = 168; 258 / 300 = 0.86.
    let csv = ok(&[
        "sweep", VARIANTS, "--from", "300", "--to", "300", "--step", "1", "--format", "csv",
    ]);
    assert!(csv.contains("\n300,7,258,0.86,,1,20,2,70,4,168\n"), "{csv}");
}
