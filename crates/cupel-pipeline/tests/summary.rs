//! Summaries of what a run evicts (spec/22-variants.md, "Summaries"): the
//! two-step plan / apply API and the running summary that folds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use cupel_core::{ContextBudget, ContextItem, ContextKind, CupelError};
use cupel_pipeline::{Pipeline, SUMMARY_METADATA_KEY, Summary};
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::PositionScorer;
use cupel_slicers::ContiguousSlice;

/// Newest turns first, contiguous, in time order: the chat shape.
fn pipeline() -> Pipeline {
    Pipeline::builder()
        .scorer(PositionScorer)
        .slicer(ContiguousSlice)
        .placer(ChronologicalPlacer)
        .deduplication(false)
        .budget(ContextBudget::new(100, 100).unwrap())
        .build()
        .unwrap()
}

fn turn(t: i64) -> ContextItem {
    let at = chrono::DateTime::from_timestamp(1_700_000_000 + t * 60, 0).unwrap();
    ContextItem::builder(format!("turn {t}"), 30)
        .timestamp(at)
        .build()
        .unwrap()
}

fn contents(items: &[ContextItem]) -> Vec<&str> {
    items.iter().map(ContextItem::content).collect()
}

#[test]
fn a_running_summary_folds_the_previous_one_with_the_new_evictions() {
    let p = pipeline();
    // Turn 1: five turns of 30; 20 held back -> target 80. Newest first:
    // turn 5 (30), turn 4 (60), turn 3 would make 90 > 80: stop.
    let first: Vec<ContextItem> = (1..=5).map(turn).collect();
    let plan = p.plan_summary(&first, 20).unwrap();
    assert!(plan.needs_summary());
    assert!(plan.previous_summary().is_none());
    let units: Vec<Vec<usize>> = plan.evicted().iter().map(|u| u.positions.clone()).collect();
    assert_eq!(units, [vec![0], vec![1], vec![2]]);
    let window = plan
        .apply(Some(Summary::new("sum 1-3", 10).unwrap()))
        .unwrap();
    assert_eq!(contents(&window.items), ["sum 1-3", "turn 4", "turn 5"]);
    assert_eq!(window.summary_index, Some(0));
    let summary = &window.items[0];
    assert!(summary.pinned());
    assert_eq!(summary.kind(), &ContextKind::MEMORY);
    // It stands for 3 items of 30 tokens: 90.
    assert_eq!(summary.metadata()[SUMMARY_METADATA_KEY], "3");
    assert_eq!(summary.original_tokens(), Some(90));

    // Turn 2: the window plus turns 6 and 7. The summary (position 0) is the
    // previous one; the run sees turns 4..7 (120 tokens) with target 80:
    // turn 7, turn 6 (60), turn 5 would make 90: stop. Evicted: turns 4, 5
    // (input positions 1 and 2).
    let mut second = window.items.clone();
    second.extend([turn(6), turn(7)]);
    let plan = p.plan_summary(&second, 20).unwrap();
    assert_eq!(
        plan.previous_summary().map(ContextItem::content),
        Some("sum 1-3")
    );
    let read: Vec<&str> = plan.to_summarise().map(ContextItem::content).collect();
    // One previous summary plus raw turns: never a summary of summaries.
    assert_eq!(read, ["sum 1-3", "turn 4", "turn 5"]);
    let window = plan
        .apply(Some(Summary::new("sum 1-5", 12).unwrap()))
        .unwrap();
    assert_eq!(contents(&window.items), ["sum 1-5", "turn 6", "turn 7"]);
    // 3 + 2 items; 90 + 60 tokens.
    assert_eq!(window.items[0].metadata()[SUMMARY_METADATA_KEY], "5");
    assert_eq!(window.items[0].original_tokens(), Some(150));
    // 12 + 30 + 30 = 72 <= 100.
    assert_eq!(
        window.items.iter().map(ContextItem::tokens).sum::<i64>(),
        72
    );

    // Turn 3, nothing new: nothing evicted, the summary stays as it is.
    let plan = p.plan_summary(&window.items, 20).unwrap();
    assert!(!plan.needs_summary());
    let again = plan.apply(None).unwrap();
    assert_eq!(again.items, window.items);
}

#[test]
fn a_group_is_evicted_as_one_unit() {
    let p = pipeline();
    let call = turn(1)
        .to_builder()
        .content("call")
        .group("t")
        .build()
        .unwrap();
    let result = turn(2)
        .to_builder()
        .content("result")
        .group("t")
        .build()
        .unwrap();
    let items = vec![call, result, turn(3), turn(4)];
    // Target 100 - 10 = 90: turn 4, turn 3 (60); the group (60) would make 120: out.
    let plan = p.plan_summary(&items, 10).unwrap();
    assert_eq!(plan.evicted().len(), 1);
    assert_eq!(plan.evicted()[0].positions, [0, 1]);
    assert_eq!(contents(&plan.evicted()[0].items), ["call", "result"]);
}

#[test]
fn bad_summaries_and_inputs_are_errors_with_the_numbers() {
    let p = pipeline();
    let items: Vec<ContextItem> = (1..=5).map(turn).collect();
    let plan = p.plan_summary(&items, 20).unwrap();
    assert_eq!(
        plan.apply(Some(Summary::new("too long", 25).unwrap())),
        Err(CupelError::InvalidArgument(
            "the summary holds 25 tokens, more than the 20 reserved".into()
        ))
    );
    assert!(matches!(
        p.plan_summary(&items, 101),
        Err(CupelError::InvalidArgument(m)) if m.contains("0..=100")
    ));
    let s = turn(0)
        .to_builder()
        .metadata(SUMMARY_METADATA_KEY, "1")
        .build()
        .unwrap();
    let twice = vec![s.clone(), turn(1), s];
    assert_eq!(
        p.plan_summary(&twice, 20).map(|_| ()),
        Err(CupelError::InvalidArgument(
            "the input holds 2 summary items (positions [0, 2]); a running summary is one item"
                .into()
        ))
    );
    assert_eq!(Summary::new("", 1), Err(CupelError::EmptyContent));
}
