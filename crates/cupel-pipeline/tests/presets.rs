//! One end-to-end test per named preset.
//!
//! Each test runs `Pipeline::new(preset(name)?.config.build()?, budget)` with
//! both `run` and `dry_run` on a small, realistic item set built so that the
//! preset's particular weights, slicer and placer visibly decide the outcome,
//! and asserts the exact window order, every included score and reason, and
//! every exclusion (score, reason, and its numbers).
//!
//! Every expected value is derived by hand in the comment above the test, from
//! the specification's algorithms and the team's decisions (DECISIONS.md):
//!
//! * Recency / Priority: rank = number of *other* scoreable items with a
//!   strictly smaller timestamp / priority, divided by (number of scoreable
//!   items that have the field - 1); a missing field scores 0.
//! * Kind (default weights): SystemPrompt 1.0, Memory 0.8, ToolOutput 0.6,
//!   Document 0.4, Message 0.2.
//! * Reflexive: the hint clamped to [0, 1] (missing or non-finite: 0).
//! * Frequency: peers (other scoreable items) sharing a tag, ASCII case
//!   folded, divided by (scoreable count - 1). Pinned items are not scoreable.
//! * Composite: weights normalised to sum 1.
//! * Scoring sees the whole scoreable list, duplicates included; dedup runs
//!   after scoring and keeps the higher score (lower index on ties).
//! * Effective target = target - pinned tokens (no reserve/slots/margin here).
//! * Greedy: density = score / tokens, descending (ties by index); take if it
//!   fits the remaining budget, single pass.
//! * Knapsack: value = floor(score * 10000), weight = ceil(tokens / 100),
//!   capacity = floor(effective target / 100), 1-D DP with keep table,
//!   backtracking from the last candidate.
//! * Merged list (D-4) = pinned (input order, score 1.0) then sliced items in
//!   score-descending order. Overflow is checked against the original target.
//! * Chronological: timestamped ascending, then untimestamped in merged order.
//! * U-shaped: merged list by score descending (ties by merged index); even
//!   ranks fill from the left, odd ranks from the right.
//! * Report (D-6, D-8, D-9): pinned items score 1.0 / Pinned; an unselected
//!   scoreable item is PinnedOverride only when it alone is larger than the
//!   effective target E(pinned tokens) but fits E(0) (and the pinned item it
//!   names still holds that many unblamed tokens); otherwise BudgetExceeded
//!   { item_tokens, available_tokens = max(0, E(pinned) - sliced tokens) }.
//!   Excluded is sorted by score descending.
//!
//! All times are on 2025-03-14 (UTC); "09:30" below means 09:30:00 that day.
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

use chrono::{DateTime, TimeZone, Utc};
use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, ExclusionReason, InclusionReason,
    SelectionReport,
};
use cupel_pipeline::{Pipeline, SlicerConfig, SlicerType, preset};

/// The specification's tolerance for individual scores.
const EPS: f64 = 1e-9;

fn at(hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 14, hour, minute, 0).unwrap()
}

fn pinned(content: &str, tokens: i64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .kind(ContextKind::SYSTEM_PROMPT)
        .pinned(true)
        .build()
        .unwrap()
}

fn scored(content: &str, score: f64) -> (&str, f64, InclusionReason) {
    (content, score, InclusionReason::Scored)
}

fn pin(content: &str) -> (&str, f64, InclusionReason) {
    (content, 1.0, InclusionReason::Pinned)
}

fn budget_exceeded(item_tokens: i64, available_tokens: i64) -> ExclusionReason {
    ExclusionReason::BudgetExceeded {
        item_tokens,
        available_tokens,
    }
}

fn deduplicated(against: &str) -> ExclusionReason {
    ExclusionReason::Deduplicated {
        deduplicated_against: against.to_owned(),
    }
}

/// Asserts a report's included list (order, scores, reasons), excluded list
/// (order, scores, reasons) and totals.
fn assert_report(
    label: &str,
    report: &SelectionReport,
    items: &[ContextItem],
    included: &[(&str, f64, InclusionReason)],
    excluded: &[(&str, f64, ExclusionReason)],
) {
    let got: Vec<&str> = report.included.iter().map(|i| i.item.content()).collect();
    let want: Vec<&str> = included.iter().map(|e| e.0).collect();
    assert_eq!(got, want, "{label}: report.included order");
    for (inc, (content, score, reason)) in report.included.iter().zip(included) {
        assert_eq!(
            &inc.reason, reason,
            "{label}: inclusion reason of {content:?}"
        );
        assert!(
            (inc.score - score).abs() < EPS,
            "{label}: score of included {content:?}: got {}, derived {score}",
            inc.score
        );
    }
    let got: Vec<&str> = report.excluded.iter().map(|e| e.item.content()).collect();
    let want: Vec<&str> = excluded.iter().map(|e| e.0).collect();
    assert_eq!(got, want, "{label}: report.excluded order");
    for (exc, (content, score, reason)) in report.excluded.iter().zip(excluded) {
        assert_eq!(
            &exc.reason, reason,
            "{label}: exclusion reason of {content:?}"
        );
        assert!(
            (exc.score - score).abs() < EPS,
            "{label}: score of excluded {content:?}: got {}, derived {score}",
            exc.score
        );
    }
    assert_eq!(report.total_candidates, items.len(), "{label}");
    let total: i64 = items.iter().map(ContextItem::tokens).sum();
    assert_eq!(report.total_tokens_considered, total, "{label}");
    assert!(
        report.count_requirement_shortfalls.is_empty(),
        "{label}: no count quotas in presets"
    );
}

/// Runs the preset with `run` and `dry_run` and checks both against the
/// hand-derived expectation. Returns the pipeline for further probing.
fn check_preset(
    name: &str,
    budget: ContextBudget,
    items: &[ContextItem],
    included: &[(&str, f64, InclusionReason)],
    excluded: &[(&str, f64, ExclusionReason)],
) -> Result<Pipeline, CupelError> {
    let pipeline = Pipeline::new(preset(name)?.config.build()?, budget);
    let window = pipeline.run(items)?;
    let got: Vec<&str> = window.iter().map(ContextItem::content).collect();
    let want: Vec<&str> = included.iter().map(|e| e.0).collect();
    assert_eq!(got, want, "{name}: run() window");
    let report = pipeline.dry_run(items)?;
    assert_report(name, &report, items, included, excluded);
    Ok(pipeline)
}

// ---------------------------------------------------------------------------
// recent-dense (the `chat` policy until 0.1) = recency 3, kind 1 -> normalised
// 3/4, 1/4; greedy; chronological.
//
// Input (index: content, kind, time, tokens):
//   0 "system: answer in English"          SystemPrompt, pinned, -,     100
//   1 "user: hi"                            Message,      09:00,          10
//   2 "assistant: hello! how can I help?"   Message,      09:01,          20
//   3 "user: what's the weather in Oslo?"   Message,      09:02,          30
//   4 "tool(weather): Oslo 4C, light rain"  ToolOutput,   09:03,         120
//   5 "assistant: it's 4C and raining"      Message,      09:04,          40
//   6 "memory: user lives in Oslo"          Memory,       -,              50
//   7 "user: hi"  (greets again)            Message,      09:05,          10
//
// Scoreable = 1..7. Timestamped: 1,2,3,4,5,7 (6 items, denominator 5); the
// duplicate 7 takes part in the ranking because dedup runs after scoring.
//   recency: 1 0, 2 1/5, 3 2/5, 4 3/5, 5 4/5, 7 5/5; 6 (no time) 0.
//   score = 3/4 * recency + 1/4 * kind = 3r/20 + k/4:
//     1: 0     + 1/20 = 1/20  = 0.05
//     2: 3/20  + 1/20 = 4/20  = 0.20
//     3: 6/20  + 1/20 = 7/20  = 0.35
//     4: 9/20  + 3/20 = 12/20 = 0.60
//     5: 12/20 + 1/20 = 13/20 = 0.65
//     6: 0     + 4/20 = 4/20  = 0.20   (kind alone: memory 0.8 / 4)
//     7: 15/20 + 1/20 = 16/20 = 0.80
// Dedup: "user: hi" at 1 (0.05) and 7 (0.80): 7 survives, 1 is Deduplicated
//   (score 0.05) against "user: hi".
// Budget max 1000, target 300; pinned 100 -> effective target 200.
// Greedy densities: 7 0.80/10 = 0.08, 5 0.65/40 = 0.01625, 3 0.35/30 = 0.01167,
//   2 0.20/20 = 0.01, 4 0.60/120 = 0.005, 6 0.20/50 = 0.004.
//   7 (10) -> 190 left; 5 (40) -> 150; 3 (30) -> 120; 2 (20) -> 100;
//   4 (120 > 100) skipped; 6 (50) -> 50.  Sliced tokens 150.
// The tool output (second-best score) loses to cheaper turns: room = 200 - 150
//   = 50 < 120. The pinned prompt is not to blame: 120 alone fits the
//   effective target 200, so it is BudgetExceeded { 120, available 50 }.
// Merged: system (1.0), 7, 5, 3, 2 / 6 -> 100 + 150 = 250 <= 300, no overflow.
// (2 and 6 both score 0.20; their relative order cannot matter: 2 has a time.)
// Chronological: 2 (09:01), 3 (09:02), 5 (09:04), 7 (09:05), then the
//   untimestamped in merged order: system, memory.
// ---------------------------------------------------------------------------
#[test]
fn recent_dense_preset_keeps_recent_cheap_turns_in_reading_order() -> Result<(), CupelError> {
    let msg = |c: &str, t: DateTime<Utc>, n: i64| {
        ContextItem::builder(c, n).timestamp(t).build().unwrap()
    };
    let items = vec![
        pinned("system: answer in English", 100),
        msg("user: hi", at(9, 0), 10),
        msg("assistant: hello! how can I help?", at(9, 1), 20),
        msg("user: what's the weather in Oslo?", at(9, 2), 30),
        ContextItem::builder("tool(weather): Oslo 4C, light rain", 120)
            .kind(ContextKind::TOOL_OUTPUT)
            .timestamp(at(9, 3))
            .build()?,
        msg("assistant: it's 4C and raining", at(9, 4), 40),
        ContextItem::builder("memory: user lives in Oslo", 50)
            .kind(ContextKind::MEMORY)
            .build()?,
        msg("user: hi", at(9, 5), 10),
    ];
    check_preset(
        "recent-dense",
        ContextBudget::new(1000, 300)?,
        &items,
        &[
            scored("assistant: hello! how can I help?", 4.0 / 20.0),
            scored("user: what's the weather in Oslo?", 7.0 / 20.0),
            scored("assistant: it's 4C and raining", 13.0 / 20.0),
            scored("user: hi", 16.0 / 20.0),
            pin("system: answer in English"),
            scored("memory: user lives in Oslo", 4.0 / 20.0),
        ],
        &[
            (
                "tool(weather): Oslo 4C, light rain",
                12.0 / 20.0,
                budget_exceeded(120, 50),
            ),
            ("user: hi", 1.0 / 20.0, deduplicated("user: hi")),
        ],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------
// newest-turns (and chat, the same policy) = position 1; contiguous;
// chronological; no deduplication. Same input as recent-dense above.
//
// Scoreable = 1..7 (7 items, in input order): position scores index / 6:
//   1 0, 2 1/6, 3 2/6, 4 3/6, 5 4/6, 6 5/6, 7 6/6.
// No deduplication: both "user: hi" stay candidates.
// Budget max 1000, target 300; pinned 100 -> effective target 200.
// Contiguous, by score: 7 (10) -> 190 left; 6 (50) -> 140; 5 (40) -> 100;
//   4 (120 > 100): the cut. Its room is 100; 3, 2, 1 come after the cut: room 0.
// Chronological: 5 (09:04), 7 (09:05), then the untimestamped in merged
//   order: system (pinned), memory.
// ---------------------------------------------------------------------------
#[test]
fn newest_turns_and_chat_keep_the_newest_stretch_without_holes() -> Result<(), CupelError> {
    let msg = |c: &str, t: DateTime<Utc>, n: i64| {
        ContextItem::builder(c, n).timestamp(t).build().unwrap()
    };
    let items = vec![
        pinned("system: answer in English", 100),
        msg("user: hi", at(9, 0), 10),
        msg("assistant: hello! how can I help?", at(9, 1), 20),
        msg("user: what's the weather in Oslo?", at(9, 2), 30),
        ContextItem::builder("tool(weather): Oslo 4C, light rain", 120)
            .kind(ContextKind::TOOL_OUTPUT)
            .timestamp(at(9, 3))
            .build()?,
        msg("assistant: it's 4C and raining", at(9, 4), 40),
        ContextItem::builder("memory: user lives in Oslo", 50)
            .kind(ContextKind::MEMORY)
            .build()?,
        msg("user: hi", at(9, 5), 10),
    ];
    for name in ["newest-turns", "chat"] {
        check_preset(
            name,
            ContextBudget::new(1000, 300)?,
            &items,
            &[
                scored("assistant: it's 4C and raining", 4.0 / 6.0),
                scored("user: hi", 1.0),
                pin("system: answer in English"),
                scored("memory: user lives in Oslo", 5.0 / 6.0),
            ],
            &[
                (
                    "tool(weather): Oslo 4C, light rain",
                    3.0 / 6.0,
                    budget_exceeded(120, 100),
                ),
                (
                    "user: what's the weather in Oslo?",
                    2.0 / 6.0,
                    budget_exceeded(30, 0),
                ),
                (
                    "assistant: hello! how can I help?",
                    1.0 / 6.0,
                    budget_exceeded(20, 0),
                ),
                ("user: hi", 0.0, budget_exceeded(10, 0)),
            ],
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// code-review = kind 2, priority 2, recency 1 -> 2/5, 2/5, 1/5; greedy;
// chronological.
//
// Input (index: content, kind, priority, time, tokens):
//   0 "system: review for correctness first"          SystemPrompt pinned  -  -      50
//   1 "diff: src/lib.rs (+40 -12)"                     Document    9  10:00         200
//   2 "file: src/util.rs (unchanged context)"          Document    3  09:00         300
//   3 "ci: 2 tests failed in parser::tests"            ToolOutput  7  10:05         100
//   4 "author: please look at the error handling"      Message     -  10:10         200
//   5 "reviewer: nit: rename foo to parse_header"      Message     1  10:15         150
//   6 "memory: the team prefers Result over panics"    Memory      5  -              50
//
// Priority: prioritised 1,2,3,5,6 (denominator 4); values 9,3,7,1,5 ->
//   5 0, 2 1/4, 6 2/4, 3 3/4, 1 4/4; 4 (none) 0.
// Recency: timestamped 1,2,3,4,5 (denominator 4): 2 0, 1 1/4, 3 2/4, 4 3/4,
//   5 4/4; 6 (none) 0.
// score = 0.4 kind + 0.4 priority + 0.2 recency (in hundredths):
//   1: 16 + 40 +  5 = 61      2: 16 + 10 + 0 = 26      3: 24 + 30 + 10 = 64
//   4:  8 +  0 + 15 = 23      5:  8 +  0 + 20 = 28     6: 32 + 20 +  0 = 52
// Kind and priority carry equal weight and together dwarf recency: the newest
//   chatter (4, 5) scores below the diff, CI output and team memory, and the
//   old context file (2, a Document with priority) still outranks the fresh
//   author message (4): 0.26 > 0.23.
// Budget max 1000, target 600; pinned 50 -> effective target 550.
// Densities: 6 0.52/50 = 0.0104, 3 0.64/100 = 0.0064, 1 0.61/200 = 0.00305,
//   5 0.28/150 = 0.001867, 4 0.23/200 = 0.00115, 2 0.26/300 = 0.000867.
//   6 (50) -> 500 left; 3 (100) -> 400; 1 (200) -> 200; 5 (150) -> 50;
//   4 (200 > 50) skipped; 2 (300 > 50) skipped.  Sliced 500.
// room = 550 - 500 = 50. 4 (200) and 2 (300) each fit the effective target
//   550 alone, so the pinned prompt is not to blame: both BudgetExceeded with
//   available_tokens 50.
// Merged 50 + 500 = 550 <= 600. Chronological: 1 (10:00), 3 (10:05),
//   5 (10:15), then untimestamped in merged order: system, memory.
// Excluded by score: 2 (0.26), 4 (0.23).
// ---------------------------------------------------------------------------
#[test]
fn code_review_preset_lets_kind_and_priority_outweigh_recency() -> Result<(), CupelError> {
    let item = |c: &str, kind: ContextKind, p: Option<i64>, t: Option<DateTime<Utc>>, n: i64| {
        ContextItem::builder(c, n)
            .kind(kind)
            .priority_opt(p)
            .timestamp_opt(t)
            .build()
            .unwrap()
    };
    let items = vec![
        pinned("system: review for correctness first", 50),
        item(
            "diff: src/lib.rs (+40 -12)",
            ContextKind::DOCUMENT,
            Some(9),
            Some(at(10, 0)),
            200,
        ),
        item(
            "file: src/util.rs (unchanged context)",
            ContextKind::DOCUMENT,
            Some(3),
            Some(at(9, 0)),
            300,
        ),
        item(
            "ci: 2 tests failed in parser::tests",
            ContextKind::TOOL_OUTPUT,
            Some(7),
            Some(at(10, 5)),
            100,
        ),
        item(
            "author: please look at the error handling",
            ContextKind::MESSAGE,
            None,
            Some(at(10, 10)),
            200,
        ),
        item(
            "reviewer: nit: rename foo to parse_header",
            ContextKind::MESSAGE,
            Some(1),
            Some(at(10, 15)),
            150,
        ),
        item(
            "memory: the team prefers Result over panics",
            ContextKind::MEMORY,
            Some(5),
            None,
            50,
        ),
    ];
    check_preset(
        "code-review",
        ContextBudget::new(1000, 600)?,
        &items,
        &[
            scored("diff: src/lib.rs (+40 -12)", 0.61),
            scored("ci: 2 tests failed in parser::tests", 0.64),
            scored("reviewer: nit: rename foo to parse_header", 0.28),
            pin("system: review for correctness first"),
            scored("memory: the team prefers Result over panics", 0.52),
        ],
        &[
            (
                "file: src/util.rs (unchanged context)",
                0.26,
                budget_exceeded(300, 50),
            ),
            (
                "author: please look at the error handling",
                0.23,
                budget_exceeded(200, 50),
            ),
        ],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------
// rag = reflexive 3, kind 1 -> 3/4, 1/4; greedy; u-shaped.
//
// Input (index: content, kind, hint, tokens):
//   0 "system: answer only from the sources below"    SystemPrompt pinned  -    100
//   1 "chunk A: returns are accepted within 30 days"   Document    0.9          200
//   2 "chunk B: a receipt is required for refunds"     Document    0.7          100
//   3 "chunk C: store hours are 9 to 17"               Document    0.2          100
//   4 "chunk D: shipping costs 5 EUR"                  Document    0.4          300
//   5 "user: how long do I have to return a kettle?"   Message     1.5 (!)      100
//   6 "chunk B: a receipt is required for refunds"     Document    0.5          100
//   7 "memory: user bought a kettle on 3 May"          Memory      0.6          100
//
// Reflexive clamps 1.5 to 1.0. score = 0.75 hint + 0.25 kind:
//   1: 0.675 + 0.1  = 0.775     2: 0.525 + 0.1 = 0.625    3: 0.15 + 0.1 = 0.25
//   4: 0.3   + 0.1  = 0.40      5: 0.75  + 0.05 = 0.80    6: 0.375 + 0.1 = 0.475
//   7: 0.45  + 0.2  = 0.65
// Dedup: chunk B at 2 (0.625) and 6 (0.475): 2 survives; 6 is Deduplicated.
// Budget max 1000, target 600; pinned 100 -> effective target 500.
// Densities: 5 0.80/100 = 0.008, 7 0.0065, 2 0.00625, 1 0.775/200 = 0.003875,
//   3 0.0025, 4 0.40/300 = 0.001333.
//   5 (100) -> 400 left; 7 (100) -> 300; 2 (100) -> 200; 1 (200) -> 0;
//   3 (100 > 0) skipped; 4 (300 > 0) skipped.  Sliced 500.
// room = 500 - 500 = 0. Neither item alone is larger than the effective
//   target 500, so the pinned prompt is blamed for neither:
//   3: BudgetExceeded { 100, available 0 }; 4: BudgetExceeded { 300, available 0 }.
// Merged: system 1.0, then sliced by score: 5 0.80, 1 0.775, 7 0.65, 2 0.625;
//   tokens 100 + 500 = 600 <= 600.
// U-shaped (5 items): rank 0 system -> pos 0; rank 1 question -> pos 4;
//   rank 2 chunk A -> pos 1; rank 3 memory -> pos 3; rank 4 chunk B -> pos 2.
//   Had the 1.5 hint not been clamped the question would score 1.175 > 1.0 and
//   take position 0 instead of the system prompt.
// Excluded by score: 6 (0.475), 4 (0.40), 3 (0.25).
// ---------------------------------------------------------------------------
#[test]
fn rag_preset_follows_hints_and_puts_the_best_at_the_edges() -> Result<(), CupelError> {
    let chunk = |c: &str, hint: f64, n: i64| {
        ContextItem::builder(c, n)
            .kind(ContextKind::DOCUMENT)
            .future_relevance_hint(hint)
            .build()
            .unwrap()
    };
    let items = vec![
        pinned("system: answer only from the sources below", 100),
        chunk("chunk A: returns are accepted within 30 days", 0.9, 200),
        chunk("chunk B: a receipt is required for refunds", 0.7, 100),
        chunk("chunk C: store hours are 9 to 17", 0.2, 100),
        chunk("chunk D: shipping costs 5 EUR", 0.4, 300),
        ContextItem::builder("user: how long do I have to return a kettle?", 100)
            .future_relevance_hint(1.5)
            .build()?,
        chunk("chunk B: a receipt is required for refunds", 0.5, 100),
        ContextItem::builder("memory: user bought a kettle on 3 May", 100)
            .kind(ContextKind::MEMORY)
            .future_relevance_hint(0.6)
            .build()?,
    ];
    check_preset(
        "rag",
        ContextBudget::new(1000, 600)?,
        &items,
        &[
            pin("system: answer only from the sources below"),
            scored("chunk A: returns are accepted within 30 days", 0.775),
            scored("chunk B: a receipt is required for refunds", 0.625),
            scored("memory: user bought a kettle on 3 May", 0.65),
            scored("user: how long do I have to return a kettle?", 0.80),
        ],
        &[
            (
                "chunk B: a receipt is required for refunds",
                0.475,
                deduplicated("chunk B: a receipt is required for refunds"),
            ),
            (
                "chunk D: shipping costs 5 EUR",
                0.40,
                budget_exceeded(300, 0),
            ),
            (
                "chunk C: store hours are 9 to 17",
                0.25,
                budget_exceeded(100, 0),
            ),
        ],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------
// document-qa = kind 2, reflexive 2, priority 1 -> 2/5, 2/5, 1/5;
// knapsack (bucket 100); u-shaped.
//
// Input (index: content, kind, hint, priority, tokens):
//   0 "system: answer from the documents and cite them"         SystemPrompt pinned      100
//   1 "doc: API reference - pagination"                          Document 0.9  3         500
//   2 "doc: migration guide v1 to v2"                            Document 0.8  2         500
//   3 "memory: user is still on API v1"                          Memory   0.3  -         100
//   4 "doc: changelog 2019-2025"                                 Document 0.2  1         600
//   5 "user: how do I paginate results after migrating to v2?"   Message  pinned         100
//
// Scoreable = 1..4 (the pinned question is not ranked). Priority: 1,2,4 have
//   3,2,1 (denominator 2) -> 1 1, 2 1/2, 4 0; 3 (none) 0.
// score = 0.4 kind + 0.4 hint + 0.2 priority:
//   1: 0.16 + 0.36 + 0.2 = 0.72        2: 0.16 + 0.32 + 0.1 = 0.58
//   3: 0.32 + 0.12 + 0   = 0.44        4: 0.16 + 0.08 + 0   = 0.24
// Budget max 2000, target 1200; pinned 100 + 100 -> effective target 1000.
// Knapsack: capacity floor(1000/100) = 10. Candidates in sorted order
//   A=1 (w 5, v 7200), B=2 (w 5, v 5800), M=3 (w 1, v 4400), C=4 (w 6, v 2400)
//   (values floor(score * 10000); a 1-unit float wobble changes nothing below).
//   DP (dp[0..=10] after each candidate):
//     A: dp[5..=10] = 7200 (keep A at 5..10)
//     B: w10: dp[5] + 5800 = 13000 > 7200 -> keep B at 10; w9..5: 5800 < 7200
//        -> [0,0,0,0,0,7200,7200,7200,7200,7200,13000]
//     M: w10: dp[9] + 4400 = 11600 < 13000; w9..6: 11600 > 7200 keep;
//        w5: 4400 < 7200; w4..1: 4400 keep
//        -> [0,4400,4400,4400,4400,7200,11600,11600,11600,11600,13000]
//     C: w10: dp[4] + 2400 = 6800 < 13000; ... w6: 2400 < 11600: never kept.
//   Backtrack from 10: C no, M no (keep[M][10] false), B yes -> 5, A yes -> 0.
//   Optimum {A, B} = 13000, tokens 1000. (All subsets: {A,B} 13000/10,
//   {A,M} 11600/6, {B,M} 10200/6, {M,C} 6800/7, {A,C}, {B,C} > 10 buckets.)
// Greedy would differ: densities M 0.0044, A 0.00144, B 0.00116, C 0.0004 ->
//   M (100) 900 left, A (500) 400 left, B (500 > 400) and C (600) skipped:
//   {M, A} worth 0.44 + 0.72 = 1.16 < 0.72 + 0.58 = 1.30.
// Report: room = 1000 - 1000 = 0. Both items alone fit the effective target
//   1000, so neither is PinnedOverride:
//   M (100): BudgetExceeded { 100, available 0 }.
//   C (600): BudgetExceeded { 600, available 0 }.
// Merged: system 1.0, question 1.0, A 0.72, B 0.58 = 1200 <= 1200.
// U-shaped: rank 0 system (merged index 0) -> pos 0; rank 1 question (1.0,
//   merged index 1) -> pos 3; rank 2 A -> pos 1; rank 3 B -> pos 2.
// Contrast (same items, same budget, slicer swapped to greedy): sliced {M, A}
//   = 600 tokens, room 1000 - 600 = 400. B (500) and C (600) each fit the
//   effective target 1000 alone: BudgetExceeded { 500, 400 } and
//   BudgetExceeded { 600, 400 }. Window (u-shaped over system, question,
//   A 0.72, M 0.44): system, A, M, question.
// ---------------------------------------------------------------------------
#[test]
fn document_qa_preset_packs_optimally_where_greedy_would_not() -> Result<(), CupelError> {
    let doc = |c: &str, hint: f64, p: i64, n: i64| {
        ContextItem::builder(c, n)
            .kind(ContextKind::DOCUMENT)
            .future_relevance_hint(hint)
            .priority(p)
            .build()
            .unwrap()
    };
    let system = "system: answer from the documents and cite them";
    let question = "user: how do I paginate results after migrating to v2?";
    let items = vec![
        pinned(system, 100),
        doc("doc: API reference - pagination", 0.9, 3, 500),
        doc("doc: migration guide v1 to v2", 0.8, 2, 500),
        ContextItem::builder("memory: user is still on API v1", 100)
            .kind(ContextKind::MEMORY)
            .future_relevance_hint(0.3)
            .build()?,
        doc("doc: changelog 2019-2025", 0.2, 1, 600),
        ContextItem::builder(question, 100).pinned(true).build()?,
    ];
    let budget = ContextBudget::new(2000, 1200)?;
    let pipeline = check_preset(
        "document-qa",
        budget.clone(),
        &items,
        &[
            pin(system),
            scored("doc: API reference - pagination", 0.72),
            scored("doc: migration guide v1 to v2", 0.58),
            pin(question),
        ],
        &[
            (
                "memory: user is still on API v1",
                0.44,
                budget_exceeded(100, 0),
            ),
            ("doc: changelog 2019-2025", 0.24, budget_exceeded(600, 0)),
        ],
    )?;

    // The same preset with its knapsack swapped for greedy picks worse.
    let mut cfg = preset("document-qa")?.config;
    cfg.slicer = SlicerConfig::new(SlicerType::Greedy);
    let greedy = pipeline.dry_run_with_policy(&items, &budget, &cfg.build()?)?;
    assert_report(
        "document-qa with greedy",
        &greedy,
        &items,
        &[
            pin(system),
            scored("doc: API reference - pagination", 0.72),
            scored("memory: user is still on API v1", 0.44),
            pin(question),
        ],
        &[
            (
                "doc: migration guide v1 to v2",
                0.58,
                budget_exceeded(500, 400),
            ),
            ("doc: changelog 2019-2025", 0.24, budget_exceeded(600, 400)),
        ],
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// tool-use = kind 2, recency 2, priority 1 -> 2/5, 2/5, 1/5; greedy;
// chronological.
//
// Input (index: content, kind, priority, time, tokens):
//   0 "system: tools available: search, fetch"                  SystemPrompt pinned  -  -  100
//   1 "user: find the cheapest flight to Rome on Friday"         Message    10  10:00       50
//   2 "tool(search): 12 flights found"                           ToolOutput  -  10:01      300
//   3 "assistant: fetching prices for the 3 cheapest"            Message     -  10:02       50
//   4 "tool(fetch): AZ123 EUR 89, FR456 EUR 95, U2789 EUR 99"    ToolOutput  -  10:03      200
//   5 "tool(search): 12 flights found"  (re-run)                 ToolOutput  -  10:04      300
//   6 "memory: user prefers morning flights"                     Memory      5  -          100
//   7 "tool(weather): Rome 24C, sunny"                           ToolOutput  1  09:30      250
//
// Priority: 1,6,7 have 10,5,1 (denominator 2) -> 1 1, 6 1/2, 7 0; others 0.
// Recency: timestamped 1,2,3,4,5,7 (6 items, denominator 5; the duplicate
//   counts): 7 0, 1 1/5, 2 2/5, 3 3/5, 4 4/5, 5 5/5; 6 0.
// score = 0.4 kind + 0.4 recency + 0.2 priority (hundredths):
//   1:  8 +  8 + 20 = 36     2: 24 + 16 + 0 = 40     3:  8 + 24 + 0 = 32
//   4: 24 + 32 +  0 = 56     5: 24 + 40 + 0 = 64     6: 32 +  0 + 10 = 42
//   7: 24 +  0 +  0 = 24
// Dedup: the search output at 2 (0.40) and its re-run at 5 (0.64): the fresher
//   copy survives, 2 is Deduplicated (score 0.40).
// Budget max 2000, target 900; pinned 100 -> effective target 800.
// Densities: 1 0.36/50 = 0.0072, 3 0.32/50 = 0.0064, 6 0.42/100 = 0.0042,
//   4 0.56/200 = 0.0028, 5 0.64/300 = 0.002133, 7 0.24/250 = 0.00096.
//   1 (50) -> 750 left; 3 (50) -> 700; 6 (100) -> 600; 4 (200) -> 400;
//   5 (300) -> 100; 7 (250 > 100) skipped.  Sliced 700.
// room = 100; 250 <= 800 fits the effective target alone -> BudgetExceeded
//   { 250, 100 }:
//   the stale, unrelated tool output is the one left out.
// Merged 100 + 700 = 800 <= 900. Chronological: 1 (10:00), 3 (10:02),
//   4 (10:03), 5 (10:04), then untimestamped in merged order: system, memory.
// ---------------------------------------------------------------------------
#[test]
fn tool_use_preset_prefers_fresh_tool_outputs() -> Result<(), CupelError> {
    let item = |c: &str, kind: ContextKind, p: Option<i64>, t: Option<DateTime<Utc>>, n: i64| {
        ContextItem::builder(c, n)
            .kind(kind)
            .priority_opt(p)
            .timestamp_opt(t)
            .build()
            .unwrap()
    };
    let search = "tool(search): 12 flights found";
    let items = vec![
        pinned("system: tools available: search, fetch", 100),
        item(
            "user: find the cheapest flight to Rome on Friday",
            ContextKind::MESSAGE,
            Some(10),
            Some(at(10, 0)),
            50,
        ),
        item(search, ContextKind::TOOL_OUTPUT, None, Some(at(10, 1)), 300),
        item(
            "assistant: fetching prices for the 3 cheapest",
            ContextKind::MESSAGE,
            None,
            Some(at(10, 2)),
            50,
        ),
        item(
            "tool(fetch): AZ123 EUR 89, FR456 EUR 95, U2789 EUR 99",
            ContextKind::TOOL_OUTPUT,
            None,
            Some(at(10, 3)),
            200,
        ),
        item(search, ContextKind::TOOL_OUTPUT, None, Some(at(10, 4)), 300),
        item(
            "memory: user prefers morning flights",
            ContextKind::MEMORY,
            Some(5),
            None,
            100,
        ),
        item(
            "tool(weather): Rome 24C, sunny",
            ContextKind::TOOL_OUTPUT,
            Some(1),
            Some(at(9, 30)),
            250,
        ),
    ];
    check_preset(
        "tool-use",
        ContextBudget::new(2000, 900)?,
        &items,
        &[
            scored("user: find the cheapest flight to Rome on Friday", 0.36),
            scored("assistant: fetching prices for the 3 cheapest", 0.32),
            scored(
                "tool(fetch): AZ123 EUR 89, FR456 EUR 95, U2789 EUR 99",
                0.56,
            ),
            scored(search, 0.64),
            pin("system: tools available: search, fetch"),
            scored("memory: user prefers morning flights", 0.42),
        ],
        &[
            (search, 0.40, deduplicated(search)),
            (
                "tool(weather): Rome 24C, sunny",
                0.24,
                budget_exceeded(250, 100),
            ),
        ],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------
// long-running = recency 3, frequency 1, kind 1 -> 3/5, 1/5, 1/5; greedy;
// chronological.
//
// Input (index: content, kind, time, tags, tokens):
//   0 "system: you are the team's database assistant"  SystemPrompt pinned - [db]   20
//   1 "user: we run Postgres 16"                        Message     08:00 [db]       100
//   2 "user: what's for lunch?"                         Message     08:30 []         100
//   3 "tool: migration 001_create_users applied"        ToolOutput  09:00 [db,migrations] 200
//   4 "user: add an index on users.email"               Message     09:30 [DB]       100
//   5 "memory: prod database is read-replicated"        Memory      -     [Db]       150
//   6 "assistant: index created concurrently"           Message     10:00 [db]       100
//   7 "user: thanks!"                                   Message     10:30 []          50
//
// Frequency: scoreable = 1..7 (7 items, denominator 6; the pinned prompt's
//   tag does not count). Tags fold case, so {1,3,4,5,6} share "db": each has
//   4 matching peers -> 4/6 = 2/3. 2 and 7 have no tags -> 0.
// Recency: timestamped 1,2,3,4,6,7 (denominator 5): 1 0, 2 1/5, 3 2/5,
//   4 3/5, 6 4/5, 7 5/5; 5 0.
// score = 3/5 recency + 1/5 frequency + 1/5 kind (in 75ths):
//   1: 0     + 2/15 + 1/25 = 13/75 = 0.17333   2: 3/25 + 0 + 1/25 = 12/75 = 0.16
//   3: 6/25  + 2/15 + 3/25 = 37/75 = 0.49333   4: 9/25 + 2/15 + 1/25 = 40/75
//   5: 0     + 2/15 + 4/25 = 22/75 = 0.29333   6: 12/25 + 2/15 + 1/25 = 49/75
//   7: 15/25 + 0    + 1/25 = 48/75 = 0.64
// Frequency flips two pairs against recency: the old "Postgres 16" turn (1)
//   beats the newer lunch question (2), 13/75 > 12/75, and the assistant's
//   db reply (6) beats the newest "thanks!" (7), 49/75 > 48/75. (Without the
//   frequency scorer, 2 would score 0.2 > 0.05 for 1.)
// Budget max 1000, target 770; pinned 20 -> effective target 750.
// Densities: 7 (48/75)/50 = 0.0128, 6 0.006533, 4 0.005333, 3 0.002467,
//   5 0.001956, 1 0.001733, 2 0.0016.
//   7 (50) -> 700 left; 6 (100) -> 600; 4 (100) -> 500; 3 (200) -> 300;
//   5 (150) -> 150; 1 (100) -> 50; 2 (100 > 50) skipped.  Sliced 700.
// room = 50; 100 <= 750 fits the effective target alone -> BudgetExceeded
//   { 100, 50 }.
// Merged 20 + 700 = 720 <= 770. Chronological: 1 (08:00), 3 (09:00),
//   4 (09:30), 6 (10:00), 7 (10:30), then untimestamped: system, memory.
// ---------------------------------------------------------------------------
#[test]
fn long_running_preset_keeps_items_that_share_topics() -> Result<(), CupelError> {
    let item = |c: &str, kind: ContextKind, t: Option<DateTime<Utc>>, tags: &[&str], n: i64| {
        ContextItem::builder(c, n)
            .kind(kind)
            .timestamp_opt(t)
            .tags(tags.iter().copied())
            .build()
            .unwrap()
    };
    let system = "system: you are the team's database assistant";
    let items = vec![
        ContextItem::builder(system, 20)
            .kind(ContextKind::SYSTEM_PROMPT)
            .pinned(true)
            .tag("db")
            .build()?,
        item(
            "user: we run Postgres 16",
            ContextKind::MESSAGE,
            Some(at(8, 0)),
            &["db"],
            100,
        ),
        item(
            "user: what's for lunch?",
            ContextKind::MESSAGE,
            Some(at(8, 30)),
            &[],
            100,
        ),
        item(
            "tool: migration 001_create_users applied",
            ContextKind::TOOL_OUTPUT,
            Some(at(9, 0)),
            &["db", "migrations"],
            200,
        ),
        item(
            "user: add an index on users.email",
            ContextKind::MESSAGE,
            Some(at(9, 30)),
            &["DB"],
            100,
        ),
        item(
            "memory: prod database is read-replicated",
            ContextKind::MEMORY,
            None,
            &["Db"],
            150,
        ),
        item(
            "assistant: index created concurrently",
            ContextKind::MESSAGE,
            Some(at(10, 0)),
            &["db"],
            100,
        ),
        item(
            "user: thanks!",
            ContextKind::MESSAGE,
            Some(at(10, 30)),
            &[],
            50,
        ),
    ];
    check_preset(
        "long-running",
        ContextBudget::new(1000, 770)?,
        &items,
        &[
            scored("user: we run Postgres 16", 13.0 / 75.0),
            scored("tool: migration 001_create_users applied", 37.0 / 75.0),
            scored("user: add an index on users.email", 40.0 / 75.0),
            scored("assistant: index created concurrently", 49.0 / 75.0),
            scored("user: thanks!", 48.0 / 75.0),
            pin(system),
            scored("memory: prod database is read-replicated", 22.0 / 75.0),
        ],
        &[(
            "user: what's for lunch?",
            12.0 / 75.0,
            budget_exceeded(100, 50),
        )],
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------
// debugging = priority 3, kind 2, recency 1 -> 1/2, 1/3, 1/6; greedy;
// chronological.
//
// Input (index: content, kind, priority, time, tokens):
//   0 "system: you are the on-call assistant"                 SystemPrompt pinned  -  -   50
//   1 "log 10:00 GET /health 200"                             ToolOutput  1  10:00     200
//   2 "log 10:05 panic: index out of bounds at worker.rs:88"  ToolOutput 10  10:05     100
//   3 "user: the worker crashes on empty batches"             Message     8  10:06     100
//   4 "doc: worker.rs batch loop source"                      Document    6  09:00     150
//   5 "log 10:10 GET /metrics 200"                            ToolOutput  2  10:10     200
//   6 "memory: last deploy changed batch sizing"              Memory      3  -         100
//   7 "user: also the dashboard font is ugly"                 Message     0  10:12     100
//
// Priority: all 7 scoreable have one (denominator 6); values 1,10,8,6,2,3,0 ->
//   7 0, 1 1/6, 5 2/6, 6 3/6, 4 4/6, 3 5/6, 2 6/6.
// Recency: timestamped 1,2,3,4,5,7 (denominator 5): 4 0, 1 1/5, 2 2/5,
//   3 3/5, 5 4/5, 7 5/5; 6 0.
// score = p/2 + k/3 + r/6 (in 60ths):
//   1: 5 + 12 + 2 = 19     2: 30 + 12 + 4 = 46     3: 25 + 4 + 6 = 35
//   4: 20 + 8 + 0 = 28     5: 10 + 12 + 8 = 30     6: 15 + 16 + 0 = 31
//   7: 0 + 4 + 10 = 14
// Budget max 1000, target 500; pinned 50 -> effective target 450.
// Densities (score / tokens): 2 (46/60)/100 = 0.0076667, 3 (35/60)/100 =
//   0.0058333, 6 (31/60)/100 = 0.0051667, 4 (28/60)/150 = 0.0031111,
//   5 (30/60)/200 = 0.0025, 7 (14/60)/100 = 0.0023333, 1 (19/60)/200 = 0.0015833.
//   2 (100) -> 350 left; 3 (100) -> 250; 6 (100) -> 150; 4 (150) -> 0;
//   5 (200), 7 (100), 1 (200) skipped.  Sliced 450.
// The window holds exactly the four highest-priority items (10, 8, 6, 3);
//   the newest item (7, priority 0) and the noisy logs are out.
// room = 0; every skipped item (at most 200 tokens) fits the effective target
//   450 alone -> BudgetExceeded with available_tokens 0.
// Merged 50 + 450 = 500 <= 500. Chronological: 4 (09:00), 2 (10:05),
//   3 (10:06), then untimestamped: system, memory.
// Excluded by score: 5 (30/60), 1 (19/60), 7 (14/60).
// ---------------------------------------------------------------------------
#[test]
fn debugging_preset_lets_priority_dominate() -> Result<(), CupelError> {
    let item = |c: &str, kind: ContextKind, p: i64, t: Option<DateTime<Utc>>, n: i64| {
        ContextItem::builder(c, n)
            .kind(kind)
            .priority(p)
            .timestamp_opt(t)
            .build()
            .unwrap()
    };
    let items = vec![
        pinned("system: you are the on-call assistant", 50),
        item(
            "log 10:00 GET /health 200",
            ContextKind::TOOL_OUTPUT,
            1,
            Some(at(10, 0)),
            200,
        ),
        item(
            "log 10:05 panic: index out of bounds at worker.rs:88",
            ContextKind::TOOL_OUTPUT,
            10,
            Some(at(10, 5)),
            100,
        ),
        item(
            "user: the worker crashes on empty batches",
            ContextKind::MESSAGE,
            8,
            Some(at(10, 6)),
            100,
        ),
        item(
            "doc: worker.rs batch loop source",
            ContextKind::DOCUMENT,
            6,
            Some(at(9, 0)),
            150,
        ),
        item(
            "log 10:10 GET /metrics 200",
            ContextKind::TOOL_OUTPUT,
            2,
            Some(at(10, 10)),
            200,
        ),
        item(
            "memory: last deploy changed batch sizing",
            ContextKind::MEMORY,
            3,
            None,
            100,
        ),
        item(
            "user: also the dashboard font is ugly",
            ContextKind::MESSAGE,
            0,
            Some(at(10, 12)),
            100,
        ),
    ];
    check_preset(
        "debugging",
        ContextBudget::new(1000, 500)?,
        &items,
        &[
            scored("doc: worker.rs batch loop source", 28.0 / 60.0),
            scored(
                "log 10:05 panic: index out of bounds at worker.rs:88",
                46.0 / 60.0,
            ),
            scored("user: the worker crashes on empty batches", 35.0 / 60.0),
            pin("system: you are the on-call assistant"),
            scored("memory: last deploy changed batch sizing", 31.0 / 60.0),
        ],
        &[
            (
                "log 10:10 GET /metrics 200",
                30.0 / 60.0,
                budget_exceeded(200, 0),
            ),
            (
                "log 10:00 GET /health 200",
                19.0 / 60.0,
                budget_exceeded(200, 0),
            ),
            (
                "user: also the dashboard font is ugly",
                14.0 / 60.0,
                budget_exceeded(100, 0),
            ),
        ],
    )?;
    Ok(())
}
