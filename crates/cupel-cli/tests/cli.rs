#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `cupel` binary, run for real: snapshots of every command and of every
//! error message, plus hand-derived checks of the numbers they print.

mod common;

use common::{assert_fits_80, cupel, fails, ok, stderr, stdout};

const CHAT: &str = "tests/fixtures/chat.toml";
const RAG: &str = "tests/fixtures/rag.json";
const COUNT: &str = "tests/fixtures/count.toml";

// ----- demo ------------------------------------------------------------------------------

#[test]
fn demo() {
    let out = ok(&["demo"]);
    assert_fits_80(&out);
    insta::assert_snapshot!(out);
}

#[test]
fn demo_numbers_follow_from_the_scenario() {
    // Policy weights: decay 1, reflexive 3, kind 1 -> 0.2, 0.6, 0.2.
    // KB-2231 (#5): undated (decay 0.5), hint 0.95, Document 0.4:
    //   0.2*0.5 + 0.6*0.95 + 0.2*0.4 = 0.1 + 0.57 + 0.08 = 0.75
    // Its copy (#9, hint 0.7): 0.1 + 0.42 + 0.08 = 0.6 -> deduplicated against #5.
    // Conversation items have no hint and kind weight 0.6 (messages and tool
    // outputs alike), so each scores 0.12 + 0.2 * decay and an exchange (its
    // best member) ranks by its newest turn: #29 0.302, exchange-6 0.240,
    // exchange-5 0.196, exchange-4 0.177, exchange-3 0.168, exchange-2 0.160,
    // exchange-1 0.153.
    // Quota over the effective target T = 1024 - 71 pinned = 953:
    //   req = floor(45% T) 428, floor(35% T) 333, floor(8% T) 76 (Message,
    //   Document, Memory); caps floor(55% T) 524, floor(45% T) 428, floor(12% T) 114.
    //   unassigned = 953 - 837 = 116; masses 741 (conversation), 612 (articles
    //   without the duplicate), 93 (memories without #30): open mass 1446.
    //   shares: 428 + floor(116*741/1446 = 59.4) = 487; 333 + floor(49.1) = 382;
    //   76 + floor(7.5) = 83.
    // Contiguous per share, in score order, stopping at the first misfit:
    //   conversation 487: #29 24, ex-6 110, ex-5 115, ex-4 51, ex-3 144 (43 left);
    //     exchange-2 243 > 43 ends it; exchange-1 gets no room (54 > 0).
    //   articles 382: #5 156, #6 96, #10 77 (53 left); #8 85 > 53 ends it;
    //     #7, #11, #12 get no room.
    //   memories 83: #1 26, #2 28, #3 12 (17 left); #4 27 > 17 ends it.
    // Window: 71 + 444 + 329 + 66 = 910 tokens, 18 items (1 + 11 + 3 + 3);
    // 910 / 1536 = 59.24% -> 59.2%. The conversation kept is exchanges 3-6 and
    // the newest question: no exchange skipped.
    // Excluded 13: 5 BudgetExceeded (#8 #7 #11 #12 #4), 6 GroupExcluded
    // (exchanges 2 and 1), #9 Deduplicated, #30 NegativeTokens.
    // Bar, 60 cells over max(1536, 910 + 384) = 1536 tokens:
    //   S 71 -> 2.77, Memory 66 -> 2.58, Message 226 -> 8.83, ToolOutput 218 -> 8.52,
    //   Document 329 -> 12.85, free 242 -> 9.45, reserve 384 -> 15.0;
    //   floors 2+2+8+8+12+9+15 = 56, the 4 largest remainders (.85, .83, .77,
    //   .58) round up Document, Message, SystemPrompt, Memory -> 3, 3, 9, 8, 13, 9, 15.
    let out = ok(&["demo"]);
    assert!(out.contains("  5  included  0.750     156  Document      Scored"));
    assert!(
        out.contains("  9  excluded  0.600     156  Document      Deduplicated: duplicate of #5")
    );
    assert!(out.contains("BudgetExceeded: 85 > 53 available"));
    assert!(out.contains("BudgetExceeded: 27 > 17 available"));
    assert!(out.contains("GroupExcluded exchange-2: 243 > 43"));
    assert!(out.contains("GroupExcluded exchange-1: 54 > 0"));
    assert!(!out.contains("PinnedOverride"));
    assert!(out.contains("(BudgetExceeded 5, Deduplicated 1,"));
    assert!(out.contains("GroupExcluded 6, NegativeTokens 1)"));
    assert!(out.contains("window: 18 of 31 items, 910 tokens (59.2% of max_tokens)"));
    for n in [3, 4, 5, 6] {
        assert!(
            out.contains(&format!("[exchange-{n}] user")),
            "exchange-{n} kept"
        );
    }
    let bar = format!(
        "[{}{}{}{}{}{}{}]",
        "S".repeat(3),
        "M".repeat(3),
        "m".repeat(9),
        "T".repeat(8),
        "D".repeat(13),
        ".".repeat(9),
        "~".repeat(15)
    );
    assert!(out.contains(&bar), "{out}");
}

#[test]
fn demo_print_input_is_the_embedded_scenario() {
    let out = ok(&["demo", "--print-input"]);
    assert_eq!(out, cupel_pipeline::samples::SUPPORT_CHAT);
}

#[test]
fn demo_json_is_a_reproducible_report() {
    let a = ok(&["demo", "--format", "json", "--zero-durations"]);
    assert_eq!(a, ok(&["demo", "--format", "json", "--zero-durations"]));
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    // 31 candidates; the demo's `window:` line says 18 included.
    assert_eq!(v["total_candidates"], 31);
    // 31 - 18 = 13 excluded: 5 BudgetExceeded + 6 GroupExcluded + 1 Deduplicated
    // + 1 NegativeTokens
    // (see demo_numbers_follow_from_the_scenario).
    let included = v["included"].as_array().unwrap().len();
    let excluded = v["excluded"].as_array().unwrap().len();
    assert_eq!((included, excluded), (18, 13));
}

// ----- select ---------------------------------------------------------------------------------

#[test]
fn select_text_with_the_default_preset() {
    let out = ok(&["select", CHAT]);
    assert_fits_80(&out);
    // No --policy, --preset or [policy]: the chat preset, and the output says so.
    assert!(out.contains("preset `recent-dense` (the default"));
    insta::assert_snapshot!(out);
}

#[test]
fn select_text_window_follows_the_chat_preset() {
    // chat preset: recency 3, kind 1 -> weights 0.75 / 0.25.
    // Scoreable: messages #1 #2 #3 #5 #6 (dated 10:00..10:04, recency ranks
    // 0, 0.25, 0.5, 0.75, 1.0) and the undated document #4 (recency 0).
    //   #1 0.75*0    + 0.25*0.2 = 0.05      #5 0.75*0.75 + 0.05 = 0.6125
    //   #2 0.75*0.25 + 0.05     = 0.2375    #6 0.75*1    + 0.05 = 0.8
    //   #3 0.75*0.5  + 0.05     = 0.425     #4 0.25*0.4 (Document) = 0.1
    // Effective target = min(200 - 20 pinned, 300 - 50 - 20) = 180.
    // Greedy by score/token: #6 30, #5 35, #3 25, #2 40, #1 30 = 160 <= 180;
    // #4 (90) > 180 - 160 = 20 -> excluded. Window (chronological): #0 (09:00)
    // then #1 #2 #3 #5 #6; 20 + 160 = 180 tokens = 60.0% of 300.
    let out = ok(&["select", CHAT]);
    assert!(out.contains("window: 6 of 7 items, 180 tokens (60.0% of max_tokens)"));
    let items: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("item"))
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(items, ["0", "1", "2", "3", "5", "6"]);
}

#[test]
fn select_json_is_the_full_report_with_zeroed_durations() {
    let out = ok(&["select", RAG, "--format", "json", "--zero-durations"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // rag.json: reflexive only; pinned "Answer..." 10 tokens.
    // Dedup: two copies of Source A (hints 0.9, 0.5) -> the 0.5 copy goes.
    // Effective target 300 - 10 = 290. Greedy densities: A 0.009, B 0.008,
    // D 0.6/150 = 0.004, C 0.3/80 = 0.00375: A 100 -> 190, B 100 -> 90,
    // D 150 > 90 skip, C 80 -> 10. D: BudgetExceeded, available 290 - 280 = 10.
    // U-shaped over [sys 1.0, A 0.9, B 0.8, C 0.3]: sys, B, C, A.
    let included: Vec<&str> = v["included"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["item"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        included,
        [
            "Answer using only the sources below.",
            "Source B: it was renamed in 1974.",
            "Source C: a tram crosses it today.",
            "Source A: the bridge opened in 1966.",
        ]
    );
    assert_eq!(v["excluded"][0]["reason"]["reason"], "BudgetExceeded");
    assert_eq!(v["excluded"][0]["reason"]["available_tokens"], 10);
    assert_eq!(v["excluded"][1]["reason"]["reason"], "Deduplicated");
    // 10 + 100 + 100 + 80 + 100 + 150 = 540
    assert_eq!(v["total_tokens_considered"], 540);
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), 5);
    assert!(events.iter().all(|e| e["duration_ms"] == 0.0));
    insta::assert_snapshot!(out);
}

#[test]
fn json_durations_are_measured_unless_zeroed() {
    // The specification: a stage event's duration_ms is the stage's wall-clock
    // time. Five stages each take some nanoseconds, so without the flag their
    // sum is positive; with --zero-durations every one is exactly 0.0.
    let durations = |args: &[&str]| -> Vec<f64> {
        let v: serde_json::Value = serde_json::from_str(&ok(args)).unwrap();
        v["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["duration_ms"].as_f64().unwrap())
            .collect()
    };
    for cmd in [
        vec!["select", RAG, "--format", "json"],
        vec!["explain", RAG, "--format", "json"],
        vec!["demo", "--format", "json"],
    ] {
        let measured = durations(&cmd);
        assert_eq!(measured.len(), 5, "{cmd:?}");
        assert!(measured.iter().all(|d| *d >= 0.0), "{cmd:?}: {measured:?}");
        assert!(measured.iter().sum::<f64>() > 0.0, "{cmd:?}: {measured:?}");
        let mut zeroed_cmd = cmd.clone();
        zeroed_cmd.push("--zero-durations");
        assert_eq!(durations(&zeroed_cmd), [0.0; 5], "{cmd:?}");
    }
    // Text output has no durations: the flag is accepted and changes nothing.
    assert_eq!(
        ok(&["select", RAG]),
        ok(&["select", RAG, "--zero-durations"])
    );
}

#[test]
fn select_reads_stdin_with_input_format() {
    let text = std::fs::read_to_string(format!("{}/{RAG}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let o = cupel(
        &[
            "select",
            "-",
            "--input-format",
            "json",
            "--format",
            "json",
            "--zero-durations",
        ],
        Some(&text),
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        ok(&["select", RAG, "--format", "json", "--zero-durations"])
    );
}

#[test]
fn select_with_a_policy_file() {
    // policy.toml: reflexive 2, kind 1 (2/3, 1/3), knapsack bucket 10.
    //   A 2/3*0.9 + 1/3*0.4 = 0.733, B 0.667, C 0.333, D 0.533.
    // Capacity floor(290/10) = 29 buckets; weights A 10, B 10, C 8, D 15.
    // A+B+C = 28 buckets, value 1.733 beats any set with D (A+D = 25, no
    // room for a third). Chronological over undated items keeps merged
    // order: pinned, then A, B, C by score.
    // Window: 10 pinned + 100 + 100 + 80 = 290 tokens; 290 / 400 = 72.5%.
    let out = ok(&["select", RAG, "--policy", "tests/fixtures/policy.toml"]);
    assert_fits_80(&out);
    assert!(out.contains("window: 4 of 6 items, 290 tokens (72.5% of max_tokens)"));
    let rows: Vec<(&str, &str)> = out
        .lines()
        .skip_while(|l| !l.starts_with("item"))
        .skip(1)
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0], cols[3])
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("0", "1.000"),
            ("1", "0.733"),
            ("2", "0.667"),
            ("3", "0.333")
        ]
    );
    insta::assert_snapshot!(out);
}

#[test]
fn flags_override_the_budget() {
    // --target-tokens 200: effective target 200 - 10 pinned = 190.
    // Greedy: A 100 -> 90 left; B 100 > 90 and D 150 > 90 skipped; C 80 -> 10.
    // Window: sys 10 + A 100 + C 80 = 190 tokens.
    let out = ok(&["select", RAG, "--target-tokens", "200", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let tokens: i64 = v["included"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["item"]["tokens"].as_i64().unwrap())
        .sum();
    assert_eq!(tokens, 10 + 100 + 80);
}

// ----- explain ----------------------------------------------------------------------------------

#[test]
fn explain_text() {
    let out = ok(&["explain", CHAT]);
    assert_fits_80(&out);
    // Bar: scale max(300, 180 + 50) = 300 over 60 cells:
    //   S 20 -> 4, M 160 -> 32, free 300 - 180 - 50 = 70 -> 14, reserve 50 -> 10.
    let bar = format!(
        "[{}{}{}{}]",
        "S".repeat(4),
        "M".repeat(32),
        ".".repeat(14),
        "~".repeat(10)
    );
    assert!(out.contains(&bar), "{out}");
    assert!(out.contains("utilisation  180 of 300 max_tokens = 60.0% (target 200: 90.0%)"));
    assert!(out.contains("BudgetExceeded: 90 > 20 available"));
    insta::assert_snapshot!(out);
}

#[test]
fn explain_names_duplicates_and_pinned_by_index() {
    let out = ok(&["explain", RAG]);
    assert_fits_80(&out);
    // The 0.5 copy of Source A (#4) lost to #1.
    assert!(out.contains("Deduplicated: duplicate of #1"));
    insta::assert_snapshot!(out);
}

#[test]
fn explain_blames_a_pinned_item_only_for_what_it_displaced() {
    // Hand-derived in the fixture's comments: E(120) = 30, E(0) = 150.
    let out = ok(&["explain", "tests/fixtures/pinned-override.toml"]);
    assert_fits_80(&out);
    let row = |n: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(n))
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        row("1 "),
        "1 excluded 0.900 80 Message PinnedOverride: displaced by #0"
    );
    assert_eq!(
        row("2 "),
        "2 excluded 0.700 60 Message BudgetExceeded: 60 > 10 available"
    );
    assert!(
        out.contains("(BudgetExceeded 1, PinnedOverride 1)"),
        "{out}"
    );
}

#[test]
fn explain_json_is_the_same_report_as_select_json() {
    assert_eq!(
        ok(&["explain", RAG, "--format", "json", "--zero-durations"]),
        ok(&["select", RAG, "--format", "json", "--zero-durations"])
    );
}

// ----- presets ----------------------------------------------------------------------------------

#[test]
fn presets() {
    let out = ok(&["presets"]);
    assert_fits_80(&out);
    for name in [
        "chat",
        "code-review",
        "rag",
        "document-qa",
        "tool-use",
        "long-running",
        "debugging",
    ] {
        assert!(out.lines().any(|l| l == name), "{name}");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn every_preset_runs() {
    for p in [
        "chat",
        "rag",
        "document-qa",
        "tool-use",
        "long-running",
        "debugging",
        "code-review",
    ] {
        let by_policy = ok(&["select", CHAT, "--policy", p]);
        // `--preset` is a hidden alias of `--policy`: the same window.
        assert_eq!(ok(&["select", CHAT, "--preset", p]), by_policy, "{p}");
    }
}

#[test]
fn policy_takes_a_preset_or_a_file_in_select_as_in_compare() {
    // A preset name: the preset (it used to be read as a file name in select).
    let out = ok(&["select", CHAT, "--policy", "rag"]);
    assert!(out.contains("policy  preset `rag`"), "{out}");
    // A path: the file.
    let out = ok(&["select", CHAT, "--policy", "tests/fixtures/policy.toml"]);
    assert!(
        out.contains("policy  from --policy tests/fixtures/policy.toml"),
        "{out}"
    );
    // Neither: the error lists the presets.
    let err = fails(&["select", CHAT, "--policy", "fancy"], None, 2);
    assert!(
        err.contains("`fancy` is neither a preset nor a policy file"),
        "{err}"
    );
}

// ----- --encoding (hidden alias --count-tokens) ----------------------------------------------

#[cfg(feature = "tiktoken")]
#[test]
fn count_tokens_fills_missing_counts() {
    let out = ok(&[
        "select",
        COUNT,
        "--encoding",
        "cl100k_base",
        "--policy",
        "rag",
    ]);
    // cl100k_base: "hello world" = hello + " world" = 2;
    // "The quick brown fox jumps over the lazy dog." = 9 words + "." = 10;
    // the third item keeps its own 7. 2 + 10 + 7 = 19.
    assert!(out.contains("counted with cl100k_base for 2 items without `tokens`"));
    assert!(out.contains("window: 3 of 3 items, 19 tokens"));
    insta::assert_snapshot!(out);
}

#[cfg(feature = "tiktoken")]
#[test]
fn the_old_flag_names_still_work_and_print_nothing_extra() {
    let new = cupel(
        &[
            "select",
            COUNT,
            "--encoding",
            "cl100k_base",
            "--policy",
            "rag",
        ],
        None,
    );
    let old = cupel(
        &[
            "select",
            COUNT,
            "--count-tokens",
            "cl100k_base",
            "--preset",
            "rag",
        ],
        None,
    );
    assert_eq!(old.status.code(), Some(0));
    assert_eq!(old.stdout, new.stdout);
    assert_eq!(stderr(&old), "");
}

// ----- errors -------------------------------------------------------------------------------------

#[test]
fn error_unreadable_file() {
    let err = fails(&["select", "tests/fixtures/missing.toml"], None, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn error_unknown_extension() {
    let err = fails(&["select", "Cargo.lock"], None, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn error_stdin_needs_input_format() {
    let err = fails(&["select", "-"], Some("{}"), 2);
    insta::assert_snapshot!(err);
}

#[test]
fn error_bad_toml_has_line_and_column() {
    // Line 6 is `content = "unterminated`; the string runs to the end of the line.
    let err = fails(&["select", "tests/fixtures/bad-syntax.toml"], None, 2);
    assert!(err.starts_with("error: tests/fixtures/bad-syntax.toml:6:"));
    insta::assert_snapshot!(err);
}

#[test]
fn error_bad_json_has_line_and_column() {
    // Line 5 has the trailing comma before `}`.
    let err = fails(&["explain", "tests/fixtures/bad-syntax.json"], None, 2);
    assert!(err.starts_with("error: tests/fixtures/bad-syntax.json:5:"));
    insta::assert_snapshot!(err);
}

#[test]
fn error_wrong_type_has_line_and_column() {
    let err = fails(&["select", "tests/fixtures/bad-type.toml"], None, 2);
    assert!(err.starts_with("error: tests/fixtures/bad-type.toml:7:"));
    insta::assert_snapshot!(err);
}

#[test]
fn error_invalid_budget() {
    let err = fails(&["select", "tests/fixtures/invalid-budget.toml"], None, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn error_invalid_budget_from_a_flag() {
    let err = fails(&["select", CHAT, "--output-reserve", "400"], None, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn error_unknown_preset() {
    let err = fails(&["select", CHAT, "--policy", "fancy"], None, 2);
    insta::assert_snapshot!(err);
}

#[test]
fn error_unknown_policy_key() {
    let err = fails(
        &["select", "tests/fixtures/unknown-policy-key.toml"],
        None,
        2,
    );
    insta::assert_snapshot!(err);
}

#[test]
fn error_unknown_key_in_a_policy_file() {
    let err = fails(
        &[
            "select",
            CHAT,
            "--policy",
            "tests/fixtures/policy-typo.toml",
        ],
        None,
        2,
    );
    insta::assert_snapshot!(err);
}

#[test]
fn error_misplaced_key_in_a_policy_file() {
    let err = fails(
        &[
            "select",
            CHAT,
            "--policy",
            "tests/fixtures/policy-misplaced.toml",
        ],
        None,
        2,
    );
    insta::assert_snapshot!(err);
}

#[test]
fn error_unknown_item_key() {
    let err = fails(
        &["explain", "tests/fixtures/unknown-item-key.toml"],
        None,
        2,
    );
    insta::assert_snapshot!(err);
}

#[test]
fn error_policy_and_preset_conflict() {
    // `--preset` is `--policy` under its old name: giving both is giving one
    // flag twice.
    let o = cupel(
        &["select", CHAT, "--preset", "rag", "--policy", "x.toml"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cannot be used multiple times"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn error_pinned_overflow_is_a_selection_failure() {
    // Pinned 250 + 200 = 450 > max_tokens - output_reserve = 500 - 100 = 400.
    let err = fails(&["select", "tests/fixtures/pinned-overflow.toml"], None, 1);
    assert!(err.contains("450") && err.contains("400"));
    insta::assert_snapshot!(err);
}

#[test]
fn error_throw_overflow_is_a_selection_failure() {
    // Pinned 200 + 200 = 400 > target 300 under overflow_strategy = "throw".
    let err = fails(&["explain", "tests/fixtures/throw-overflow.toml"], None, 1);
    assert!(err.contains("400") && err.contains("300"));
    insta::assert_snapshot!(err);
}

#[test]
fn error_token_overflow_is_an_input_error() {
    // 2^62 + 2^62 = 2^63 = 9223372036854775808 = i64::MAX + 1: bad input
    // (exit 2, like a malformed file), not a selection that failed (exit 1).
    let err = fails(&["select", "tests/fixtures/token-overflow.toml"], None, 2);
    assert!(err.contains("9223372036854775808"), "{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn error_missing_tokens_names_the_item() {
    let err = fails(&["select", COUNT], None, 2);
    assert!(err.contains("items[0]"));
    insta::assert_snapshot!(err);
}

#[cfg(feature = "tiktoken")]
#[test]
fn error_unknown_encoding() {
    let err = fails(&["select", COUNT, "--encoding", "cl200k"], None, 2);
    insta::assert_snapshot!(err);
}

#[cfg(not(feature = "tiktoken"))]
#[test]
fn error_count_tokens_without_a_tokenizer() {
    let err = fails(&["select", COUNT, "--encoding", "cl100k_base"], None, 2);
    assert!(err.contains("built without"));
}

// ----- help ----------------------------------------------------------------------------------------

#[test]
fn help_documents_exit_codes_and_json_durations() {
    let out = ok(&["select", "--help"]);
    // The table is in `cupel --help` only; a subcommand points there.
    assert!(!out.contains("2  usage or input error"), "{out}");
    assert!(
        out.contains("`cupel --help` lists what each means"),
        "{out}"
    );
    // The old flag names are hidden aliases.
    assert!(out.contains("--encoding <ENCODING>") && !out.contains("--count-tokens"));
    assert!(out.contains("--policy <PRESET|FILE>") && !out.contains("--preset"));
    assert!(out.contains("--zero-durations"));
    assert!(out.contains("measured wall-clock time"));
    insta::assert_snapshot!(out);
}

#[test]
fn zero_token_and_pinned_scores_agree_with_the_library_report() {
    // D-6: a non-pinned zero-token item is ZeroToken with its computed score;
    // a pinned item is Pinned with 1.0. Reflexive scorer: score = hint.
    // Budget 100/100; pinned "sys" 10; "free" 0 tokens (hint 0.4); "doc" 50 (0.7).
    // Effective target 90: greedy takes free (0) and doc (50) -> 60 tokens.
    let input = r#"
[budget]
max_tokens = 100
target_tokens = 100

[policy]
placer = "chronological"
[[policy.scorers]]
type = "reflexive"

[[items]]
content = "sys"
tokens = 10
pinned = true

[[items]]
content = "free"
tokens = 0
futureRelevanceHint = 0.4

[[items]]
content = "doc"
tokens = 50
futureRelevanceHint = 0.7
"#;
    let o = cupel(
        &[
            "select",
            "-",
            "--input-format",
            "toml",
            "--format",
            "json",
            "--zero-durations",
        ],
        Some(input),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let got: Vec<(String, f64, String)> = v["included"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["item"]["content"].as_str().unwrap().to_owned(),
                i["score"].as_f64().unwrap(),
                i["reason"]["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // No timestamps: merged order (pinned first, then by score) is kept.
    let want = [
        ("sys", 1.0, "Pinned"),
        ("doc", 0.7, "Scored"),
        ("free", 0.4, "ZeroToken"),
    ];
    assert_eq!(got.len(), want.len());
    for ((c, s, r), (wc, ws, wr)) in got.iter().zip(want) {
        assert_eq!((c.as_str(), *s, r.as_str()), (wc, ws, wr));
    }
    // The text explanation prints the same numbers.
    let o = cupel(&["explain", "-", "--input-format", "toml"], Some(input));
    let text = stdout(&o);
    assert!(
        text.contains("   1  included  0.400       0  Message  ZeroToken"),
        "{text}"
    );
    assert!(
        text.contains("   0  included  1.000      10  Message  Pinned"),
        "{text}"
    );
}

#[test]
fn select_and_explain_show_atomic_groups() {
    const GROUPS: &str = "tests/fixtures/groups.toml";
    let out = ok(&["select", GROUPS]);
    assert_fits_80(&out);
    assert!(out.contains("[weather] call get_weather(Lisbon)"), "{out}");
    assert!(out.contains("[weather] result: 24C, sunny"), "{out}");
    assert!(!out.contains("flights found"), "{out}");
    let out = ok(&["explain", GROUPS]);
    assert_fits_80(&out);
    assert!(out.contains("GroupExcluded flights: 220 > 70"), "{out}");
    assert!(out.contains("[flights] result: 14 flights found"), "{out}");
    let json = ok(&["select", GROUPS, "--format", "json", "--zero-durations"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let excluded = v["excluded"].as_array().unwrap();
    assert_eq!(excluded.len(), 2);
    for e in excluded {
        assert_eq!(e["item"]["group"], "flights");
        assert_eq!(e["reason"]["reason"], "GroupExcluded");
        assert_eq!(e["reason"]["group"], "flights");
        assert_eq!(e["reason"]["group_tokens"], 220);
        assert_eq!(e["reason"]["available_tokens"], 70);
    }
}

#[test]
fn explain_counts_every_member_of_a_pinned_group_as_pinned() {
    // "call" is not flagged pinned, but its group holds a pinned member, so
    // it is pinned too (AG-1): pinned = sys 10 + call 15 + result 15 = 40
    // tokens in 3 items; "note" (20) fits the rest of the target (100 - 40).
    let input = r#"
[budget]
max_tokens = 200
target_tokens = 100

[[items]]
content = "sys"
tokens = 10
pinned = true

[[items]]
content = "call"
tokens = 15
group = "g"

[[items]]
content = "result"
tokens = 15
group = "g"
pinned = true

[[items]]
content = "note"
tokens = 20
"#;
    let o = cupel(&["explain", "-", "--input-format", "toml"], Some(input));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("(pinned: 3 items, 40 tokens)"), "{text}");
}

#[test]
fn select_and_explain_show_variants() {
    const VARIANTS: &str = "tests/fixtures/variants.toml";
    let out = ok(&["select", VARIANTS]);
    assert_fits_80(&out);
    // See the fixture's header for the arithmetic.
    assert!(
        out.contains("[flights] [flight search results omitted]"),
        "{out}"
    );
    assert!(out.contains("[flights] call search_flights(LIS)"), "{out}");
    let out = ok(&["explain", VARIANTS]);
    // Variant 2 saved 200 - 8 = 192 tokens; the window holds 258 tokens.
    assert!(out.contains("Scored, variant 2 (-192)"), "{out}");
    assert!(out.contains("included  7 items       258 tokens"), "{out}");
    let json = ok(&["select", VARIANTS, "--format", "json", "--zero-durations"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["excluded"].as_array().unwrap().len(), 0);
    let row = v["included"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r.get("variant").is_some())
        .unwrap();
    assert_eq!(
        row["variant"],
        serde_json::json!({"variant": 2, "reason": "did_not_fit", "tokens_saved": 192})
    );
    assert_eq!(row["position"], 5);
    let input = "[budget]\nmax_tokens = 10\ntarget_tokens = 10\n[[items]]\ncontent = \"x\"\ntokens = 5\n[[items.variants]]\ncontent = \"y\"\ntokens = 6\n";
    let err = fails(&["select", "-", "--input-format", "toml"], Some(input), 2);
    assert!(err.contains("variant 1 of the item is invalid"), "{err}");
}

#[test]
fn a_policy_variants_table_generates_forms_counted_with_count_tokens() {
    let log: Vec<String> = (0..400).map(|i| format!("line {i} ok")).collect();
    let input = format!(
        "[budget]\nmax_tokens = 300\ntarget_tokens = 300\n[policy]\nslicer = \"greedy\"\n\
         [[policy.scorers]]\ntype = \"reflexive\"\n[policy.variants]\nhead_tail = 100\n\
         placeholder = \"[log of {{tokens}} tokens omitted]\"\nmin_tokens = 200\n\
         [[items]]\ncontent = \"user: what failed?\"\ntokens = 5\n\
         [[items]]\ncontent = \"{}\"\ntokens = 4000\n",
        log.join("\\n")
    );
    let o = cupel(
        &[
            "select",
            "-",
            "--input-format",
            "toml",
            "--count-tokens",
            "o200k_base",
            "--format",
            "json",
        ],
        Some(&input),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The log (thousands of tokens) cannot go in whole at 300: its head and
    // tail (at most 100 tokens) does, as variant 1.
    let row = &v["included"][1];
    assert_eq!(row["variant"]["variant"], 1, "{v}");
    assert!(row["item"]["tokens"].as_i64().unwrap() <= 100);
    let text = row["item"]["content"].as_str().unwrap();
    assert!(
        text.starts_with("line 0 ok\n") && text.contains(" tokens omitted …]\n"),
        "{text}"
    );
    // Without a counter the table cannot be applied: an input error.
    let err = fails(&["select", "-", "--input-format", "toml"], Some(&input), 2);
    assert!(err.contains("[variants]"), "{err}");
}

#[test]
fn an_empty_group_id_is_an_input_error() {
    let input = "[budget]\nmax_tokens = 10\ntarget_tokens = 10\n[[items]]\ncontent = \"x\"\ntokens = 1\ngroup = \"\"\n";
    let err = fails(&["select", "-", "--input-format", "toml"], Some(input), 2);
    assert!(err.contains("group id must not be empty"), "{err}");
    let input = "[budget]\nmax_tokens = 10\ntarget_tokens = 10\n[[items]]\ncontent = \"x\"\ntokens = 1\ngroup_id = \"g\"\n";
    let err = fails(&["select", "-", "--input-format", "toml"], Some(input), 2);
    assert!(err.contains("`group = \"<id>\"`"), "{err}");
}

#[test]
fn the_exit_code_table_is_in_the_top_level_help_once() {
    let out = ok(&["--help"]);
    assert_eq!(
        out.matches("Exit codes (every command):").count(),
        1,
        "{out}"
    );
    for line in [
        "  0  success",
        "  1  valid input, but the result cannot be made:",
        "PIPELINE_BUDGET_MISCONFIG",
        "chat, cache-sim:",
        "  2  usage or input error",
    ] {
        assert!(out.contains(line), "{line}\n{out}");
    }
    let mut commands = vec![
        "demo",
        "select",
        "explain",
        "gate",
        "sweep",
        "marginal",
        "min-budget",
        "compare",
    ];
    if cfg!(feature = "chat") {
        commands.extend(["chat", "cache-sim"]);
    }
    for cmd in commands {
        let help = ok(&[cmd, "--help"]);
        assert!(!help.contains("  2  usage or input error"), "{cmd}: {help}");
        assert!(
            help.contains("`cupel --help` lists what each means"),
            "{cmd}"
        );
    }
    let help = ok(&["adaptive", "simulate", "--help"]);
    assert!(!help.contains("  2  usage or input error"), "{help}");
}

#[test]
fn a_knapsack_whose_dp_rows_exceed_the_guard_fails_at_once() {
    // One 10-token item, target 300,000,000, bucket 1: a keep table of
    // ceil(300,000,001 / 64) x 8 = 37,500,008 bytes, within 64 MiB, but two
    // u32 DP rows of 2 x 300,000,001 x 4 = 2,400,000,008 bytes. The guard
    // counts both, so the command refuses before allocating anything (it
    // used to allocate the 2.4 GB).
    let input = "[budget]\nmax_tokens = 400000000\ntarget_tokens = 300000000\n\n\
                 [policy]\nslicer = \"knapsack\"\nbucket_size = 1\n\n\
                 [[policy.scorers]]\ntype = \"priority\"\n\n\
                 [[items]]\ncontent = \"one big document\"\ntokens = 10\n";
    let err = fails(&["select", "-", "--input-format", "toml"], Some(input), 1);
    assert!(
        err.contains("1 candidate x 300000001 capacity buckets")
            && err.contains("a keep table of 37500008 bytes and DP rows of 2400000008 bytes"),
        "{err}"
    );
    assert!(
        err.contains("hint: raise the knapsack `bucket_size`"),
        "{err}"
    );
}

/// The `recall` preset ranks turns by BM25 relevance to `--query`: with a
/// 35-token budget, the Tokyo turn (BM25 hit, 20 tokens) and its next turn
/// in the same session (lifted to half its score, 12 tokens) are kept; the
/// newest turns, which do not mention Tokyo, are not.
#[test]
fn select_recall_with_a_query() {
    let args = [
        "select",
        "tests/fixtures/turns.jsonl",
        "--policy",
        "recall",
        "--query",
        "When did Calvin first travel to Tokyo?",
        "--max-tokens",
        "35",
        "--target-tokens",
        "35",
        "--format",
        "json",
        "--zero-durations",
    ];
    let out = ok(&args);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let included: Vec<&str> = report["included"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["item"]["content"].as_str())
        .collect();
    assert!(included[0].contains("Tokyo"), "{included:?}");
    assert!(
        included.iter().all(|c| !c.contains("car broke")),
        "{included:?}"
    );
    // Deterministic: identical input and query, identical bytes.
    assert_eq!(out, ok(&args));
    // A query file gives the same run.
    let q = std::env::temp_dir().join(format!("cupel-query-{}.txt", std::process::id()));
    std::fs::write(&q, "When did Calvin first travel to Tokyo?").unwrap();
    let mut by_file: Vec<&str> = args.to_vec();
    let qs = q.to_string_lossy().into_owned();
    by_file.splice(4..6, ["--query-file", qs.as_str()]);
    assert_eq!(out, ok(&by_file));
    let _ = std::fs::remove_file(&q);
}

/// Report rows explain relevance: `explain` prints each bm25 note under its
/// row, `--format json` carries it as the row's `notes`. The Tokyo turn
/// matches "first", "tokyo" and "calvin" of the query (the stop words
/// "when", "did", "to" and the unmatched "travel" give nothing); its next
/// turn scores only by the neighbour lift.
#[test]
fn explain_says_which_query_words_matched() {
    let args = [
        "explain",
        "tests/fixtures/turns.jsonl",
        "--policy",
        "recall",
        "--query",
        "When did Calvin first travel to Tokyo?",
        "--max-tokens",
        "35",
        "--target-tokens",
        "35",
    ];
    let out = ok(&args);
    assert!(out.contains("relevance 1.00: matched "), "{out}");
    assert!(out.contains("tokyo"), "{out}");
    assert!(
        out.contains("lifted by a match in the previous item"),
        "{out}"
    );
    let mut json = args.to_vec();
    json.extend(["--format", "json", "--zero-durations"]);
    let report: serde_json::Value = serde_json::from_str(&ok(&json)).unwrap();
    let first = &report["included"][0];
    let terms: Vec<&str> = first["notes"][0]["terms"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let mut sorted = terms.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["calvin", "first", "tokyo"], "{first}");
}

/// Embeddings in JSON Lines items and `--query-embedding`: a length
/// mismatch is an error naming the item and both lengths, not a panic.
#[test]
fn vector_scorer_reads_embeddings_and_rejects_mismatches() {
    let dir = std::env::temp_dir().join(format!("cupel-vec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let items = dir.join("items.jsonl");
    std::fs::write(
        &items,
        "{\"content\": \"tokyo\", \"tokens\": 1, \"embedding\": [1.0, 0.0]}\n\
         {\"content\": \"car\", \"tokens\": 1, \"embedding\": [0.0, 1.0]}\n",
    )
    .unwrap();
    let policy = dir.join("vector.toml");
    std::fs::write(
        &policy,
        "slicer = \"greedy\"\n[[scorers]]\ntype = \"vector\"\n",
    )
    .unwrap();
    let (i, p) = (items.to_string_lossy(), policy.to_string_lossy());
    let base = [
        "select",
        &i,
        "--policy",
        &p,
        "--max-tokens",
        "1",
        "--target-tokens",
        "1",
    ];
    let mut good = base.to_vec();
    good.extend(["--query-embedding", "[0.0, 2.0]", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&ok(&good)).unwrap();
    assert_eq!(report["included"][0]["item"]["content"], "car");
    let mut bad = base.to_vec();
    bad.extend(["--query-embedding", "[1.0, 0.0, 0.0]"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cupel"))
        .args(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 dimensions but the query's has 3"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
