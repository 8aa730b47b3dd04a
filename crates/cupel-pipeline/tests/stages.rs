//! Stage semantics of the pipeline, exercised with minimal test components so
//! that each expectation can be derived by hand.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use cupel_core::{
    ContextBudget, ContextItem, CupelError, DiagnosticTraceCollector, ExclusionReason,
    InclusionReason, OverflowEvent, OverflowStrategy, PipelineStage, Placer, ScoredItem, Scorer,
    SelectionReport, SliceBudget, SliceOutcome, Slicer, TraceCollector, TraceDetailLevel,
};
use cupel_pipeline::{Pipeline, RunOptions};

/// Score = the item's future-relevance hint (0 when absent).
struct Hint;
impl Scorer for Hint {
    fn score(&self, i: usize, items: &[&ContextItem]) -> f64 {
        items[i].future_relevance_hint().unwrap_or(0.0)
    }
}

/// First fit in the given (score-descending) order, zero-token items always in.
struct FirstFit;
impl Slicer for FirstFit {
    fn slice(&self, s: &[ScoredItem<'_>], b: SliceBudget) -> Result<SliceOutcome, CupelError> {
        let mut left = b.target_tokens;
        let mut out = vec![];
        for (i, x) in s.iter().enumerate() {
            let t = x.item.tokens();
            if t <= left {
                left -= t;
                out.push(i);
            }
        }
        Ok(SliceOutcome::selected(out))
    }
}

/// Keeps the merged order.
struct Keep;
impl Placer for Keep {
    fn place(&self, s: &[ScoredItem<'_>]) -> Vec<usize> {
        (0..s.len()).collect()
    }
}

fn item(content: &str, tokens: i64, hint: f64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .future_relevance_hint(hint)
        .build()
        .unwrap()
}

fn pinned(content: &str, tokens: i64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .pinned(true)
        .build()
        .unwrap()
}

fn pipeline(max: i64, target: i64, overflow: OverflowStrategy) -> Pipeline {
    Pipeline::builder()
        .scorer(Hint)
        .slicer(FirstFit)
        .placer(Keep)
        .overflow_strategy(overflow)
        .budget(ContextBudget::new(max, target).unwrap())
        .build()
        .unwrap()
}

fn contents(items: &[ContextItem]) -> Vec<&str> {
    items.iter().map(ContextItem::content).collect()
}

/// `(content, reason)` of every excluded item, in report order.
fn exclusions(r: &SelectionReport) -> Vec<(&str, ExclusionReason)> {
    r.excluded
        .iter()
        .map(|e| (e.item.content(), e.reason.clone()))
        .collect()
}

fn budget_exceeded(item_tokens: i64, available_tokens: i64) -> ExclusionReason {
    ExclusionReason::BudgetExceeded {
        item_tokens,
        available_tokens,
    }
}

fn pinned_override(by: &str) -> ExclusionReason {
    ExclusionReason::PinnedOverride {
        displaced_by: by.into(),
    }
}

/// Every item sliced (see [`TakeAll`]), then Truncate against `target` (max 1000).
fn truncating(target: i64) -> Pipeline {
    Pipeline::builder()
        .scorer(Hint)
        .slicer(TakeAll)
        .placer(Keep)
        .overflow_strategy(OverflowStrategy::Truncate)
        .budget(ContextBudget::new(1000, target).unwrap())
        .build()
        .unwrap()
}

#[test]
fn empty_input_gives_empty_window_and_five_stage_events() {
    let p = pipeline(100, 50, OverflowStrategy::Throw);
    assert!(p.run(&[]).unwrap().is_empty());
    let r = p.dry_run(&[]).unwrap();
    assert!(r.included.is_empty() && r.excluded.is_empty());
    assert_eq!(r.total_candidates, 0);
    let stages: Vec<_> = r.events.iter().map(|e| e.stage).collect();
    assert_eq!(stages, PipelineStage::ALL);
    assert!(r.events.iter().all(|e| e.item_count == 0));
}

#[test]
fn negative_tokens_are_excluded_before_the_pinned_check() {
    // A pinned item with -5 tokens is excluded (score 0.0), not pinned.
    let items = [pinned("neg", -5), item("ok", 10, 0.5)];
    let p = pipeline(100, 50, OverflowStrategy::Throw);
    assert_eq!(contents(&p.run(&items).unwrap()), ["ok"]);
    let r = p.dry_run(&items).unwrap();
    assert_eq!(r.excluded.len(), 1);
    assert_eq!(r.excluded[0].score, 0.0);
    assert_eq!(
        r.excluded[0].reason,
        ExclusionReason::NegativeTokens { tokens: -5 }
    );
    // Totals include the negative item: candidates 2, tokens -5 + 10 = 5.
    assert_eq!(r.total_candidates, 2);
    assert_eq!(r.total_tokens_considered, 5);
}

#[test]
fn pinned_items_over_max_minus_reserve_fail() {
    let items = [pinned("a", 60), pinned("b", 50)];
    let budget = ContextBudget::builder(120, 100)
        .output_reserve(20)
        .build()
        .unwrap();
    let p = Pipeline::builder()
        .scorer(Hint)
        .slicer(FirstFit)
        .placer(Keep)
        .budget(budget)
        .build()
        .unwrap();
    // 60 + 50 = 110 > 120 - 20 = 100
    let err = p.run(&items).unwrap_err();
    assert_eq!(
        err,
        CupelError::PinnedBudgetExceeded {
            pinned_tokens: 110,
            available_tokens: 100
        }
    );
    assert_eq!(
        err.to_string(),
        "Pinned items require 110 tokens, but only 100 are available"
    );
}

#[test]
fn dedup_keeps_highest_score_and_earlier_on_ties() {
    let items = [
        item("same", 10, 0.3),
        item("same", 10, 0.8),
        item("tie", 10, 0.5),
        item("tie", 10, 0.5),
    ];
    let p = pipeline(100, 100, OverflowStrategy::Throw);
    let r = p.dry_run(&items).unwrap();
    // Survivors: same@1 (0.8 > 0.3), tie@2 (equal: earlier kept). Merged in score order.
    let inc: Vec<(&str, f64)> = r
        .included
        .iter()
        .map(|i| (i.item.content(), i.score))
        .collect();
    assert_eq!(inc, [("same", 0.8), ("tie", 0.5)]);
    // Excluded sorted by score: tie@3 (0.5) then same@0 (0.3).
    let exc: Vec<(&str, f64)> = r
        .excluded
        .iter()
        .map(|e| (e.item.content(), e.score))
        .collect();
    assert_eq!(exc, [("tie", 0.5), ("same", 0.3)]);
    assert!(r.excluded.iter().all(|e| matches!(
        &e.reason,
        ExclusionReason::Deduplicated { deduplicated_against } if deduplicated_against == e.item.content()
    )));
}

#[test]
fn dedup_can_be_disabled() {
    let items = [item("same", 10, 0.3), item("same", 10, 0.8)];
    let p = Pipeline::builder()
        .scorer(Hint)
        .slicer(FirstFit)
        .placer(Keep)
        .deduplication(false)
        .budget(ContextBudget::new(100, 100).unwrap())
        .build()
        .unwrap();
    assert_eq!(p.run(&items).unwrap().len(), 2);
}

#[test]
fn budget_exceeded_reports_room_left_after_slicing() {
    // target 200: "fits" (150, 0.9) selected, "big" (400, 0.1) left; room = 200 - 150 = 50.
    let items = [item("big", 400, 0.1), item("fits", 150, 0.9)];
    let r = pipeline(1000, 200, OverflowStrategy::Throw)
        .dry_run(&items)
        .unwrap();
    assert_eq!(r.included.len(), 1);
    assert_eq!(r.included[0].reason, InclusionReason::Scored);
    assert_eq!(r.excluded[0].reason, budget_exceeded(400, 50));
}

#[test]
fn pinned_override_at_slice_names_the_responsible_pinned_item() {
    // max 1000, target 100; pinned p1 = 30, p2 = 40 (pinned total 70).
    // Effective target E(70) = 100 - 70 = 30; without pinned E(0) = 100.
    // Sorted: a (25, 0.9), b (35, 0.5), c (35, 0.4), d (80, 0.3).
    // First fit takes a (30 -> 5 left) and skips b, c, d (each > 5).
    // D-9: PinnedOverride only for an item alone > E(70) = 30 and <= E(0) = 100,
    // naming the first pinned prefix whose effective target it exceeds, and only
    // while that pinned item still holds as many unblamed tokens:
    //   b (35): E(30) = 70 >= 35, E(70) = 30 < 35 -> p2; p2 holds 40 >= 35
    //           -> PinnedOverride(p2); p2 has 40 - 35 = 5 left.
    //   c (35): -> p2 again, but 35 > 5 left -> BudgetExceeded(35, 30 - 25 = 5).
    //   d (80): E(30) = 70 < 80 -> p1; p1 holds 30 < 80 -> BudgetExceeded(80, 5).
    let items = [
        pinned("p1", 30),
        pinned("p2", 40),
        item("a", 25, 0.9),
        item("b", 35, 0.5),
        item("c", 35, 0.4),
        item("d", 80, 0.3),
    ];
    let r = pipeline(1000, 100, OverflowStrategy::Throw)
        .dry_run(&items)
        .unwrap();
    assert_eq!(
        exclusions(&r),
        [
            ("b", pinned_override("p2")),
            ("c", budget_exceeded(35, 5)),
            ("d", budget_exceeded(80, 5)),
        ]
    );
    // Pinned items are reported with score 1.0 and reason Pinned.
    assert_eq!(r.included[0].score, 1.0);
    assert_eq!(r.included[0].reason, InclusionReason::Pinned);
}

#[test]
fn an_item_that_fits_the_effective_target_alone_is_budget_exceeded() {
    // The demo's case in miniature: max 1000, target 100, pinned p = 10.
    // E(10) = 90. First fit: a (88) -> 2 left; b (20) and c (30) skipped.
    // Both fit E(10) = 90 on their own: they lost to a, not to p.
    //   -> BudgetExceeded(20, 90 - 88 = 2), BudgetExceeded(30, 2).
    let items = [
        pinned("p", 10),
        item("a", 88, 0.9),
        item("b", 20, 0.5),
        item("c", 30, 0.4),
    ];
    let r = pipeline(1000, 100, OverflowStrategy::Throw)
        .dry_run(&items)
        .unwrap();
    let exc: Vec<_> = r.excluded.iter().map(|e| e.reason.clone()).collect();
    assert_eq!(exc, [budget_exceeded(20, 2), budget_exceeded(30, 2),]);
}

#[test]
fn zero_token_items_are_reported_as_zero_token() {
    let items = [item("free", 0, 0.2), item("paid", 5, 0.9)];
    let r = pipeline(10, 10, OverflowStrategy::Throw)
        .dry_run(&items)
        .unwrap();
    let reasons: Vec<_> = r
        .included
        .iter()
        .map(|i| (i.item.content(), i.reason.clone(), i.score))
        .collect();
    assert_eq!(
        reasons,
        [
            ("paid", InclusionReason::Scored, 0.9),
            ("free", InclusionReason::ZeroToken, 0.2)
        ]
    );
}

#[test]
fn throw_on_overflow_when_pinned_exceed_target() {
    // max 100, target 50, pinned 60 (fits 100) -> merged 60 > 50 under Throw.
    let items = [pinned("p", 60), item("a", 10, 0.5)];
    let err = pipeline(100, 50, OverflowStrategy::Throw)
        .run(&items)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Selected items require 60 tokens, exceeding target budget of 50"
    );
}

/// A slicer that ignores the budget, to force overflow after merge.
struct TakeAll;
impl Slicer for TakeAll {
    fn slice(&self, s: &[ScoredItem<'_>], _: SliceBudget) -> Result<SliceOutcome, CupelError> {
        Ok(SliceOutcome::selected((0..s.len()).collect()))
    }
}

#[test]
fn truncate_drops_lowest_scores_and_never_pinned() {
    // target 100. Merged: p (40, pinned), a (30, 0.9), b (30, 0.8), c (20, 0.7), d (10, 0.1).
    // Truncate: p kept (40); a 70 <= 100 kept; b 100 <= 100 kept; c 120 > 100 removed;
    // d 110 > 100 removed.
    // c: kept_unpinned 60 + 20 = 80 <= 100 -> PinnedOverride by p (p holds 40; 20 left).
    // d: 60 + 10 = 70 <= 100 -> PinnedOverride by p (10 <= 20 left; 10 left).
    let items = [
        item("d", 10, 0.1),
        item("c", 20, 0.7),
        pinned("p", 40),
        item("b", 30, 0.8),
        item("a", 30, 0.9),
    ];
    let p = truncating(100);
    assert_eq!(contents(&p.run(&items).unwrap()), ["p", "a", "b"]);
    let r = p.dry_run(&items).unwrap();
    assert_eq!(
        exclusions(&r),
        [("c", pinned_override("p")), ("d", pinned_override("p")),]
    );
}

#[test]
fn truncate_never_blames_a_pinned_item_for_more_than_it_holds() {
    // target 100; merged: p (20, pinned), a (60, 0.9), b (25, 0.8), c (15, 0.7), d (10, 0.6).
    // Truncate: p 20; a 80 kept; b 80 + 25 = 105 > 100 dropped with room 100 - 80 = 20;
    //   c 95 kept; d 105 > 100 dropped with room 100 - 95 = 5.
    // b: non-pinned kept before it 60; 60 + 25 = 85 <= 100 would fit without p,
    //    but p holds only 20 < 25 tokens -> BudgetExceeded(25, 20).
    // d: non-pinned kept before it 60 + 15 = 75; 75 + 10 = 85 <= 100 -> p (20 >= 10)
    //    -> PinnedOverride(p).
    let items = [
        pinned("p", 20),
        item("a", 60, 0.9),
        item("b", 25, 0.8),
        item("c", 15, 0.7),
        item("d", 10, 0.6),
    ];
    let p = truncating(100);
    assert_eq!(contents(&p.run(&items).unwrap()), ["p", "a", "c"]);
    let r = p.dry_run(&items).unwrap();
    assert_eq!(
        exclusions(&r),
        [("b", budget_exceeded(25, 20)), ("d", pinned_override("p")),]
    );
}

#[test]
fn truncate_without_pinned_reports_budget_exceeded() {
    // target 50: a (30) kept, b (30) 60 > 50 removed with room 50 - 30 = 20
    // (the room it had when the pass reached it), c (20) 50 kept.
    let items = [item("a", 30, 0.9), item("b", 30, 0.8), item("c", 20, 0.7)];
    let p = truncating(50);
    let r = p.dry_run(&items).unwrap();
    assert_eq!(r.excluded[0].reason, budget_exceeded(30, 20));
    assert_eq!(contents(&p.run(&items).unwrap()), ["a", "c"]);
}

#[test]
fn proceed_keeps_everything_and_reports_the_overflow() {
    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let items = [item("a", 30, 0.9), item("b", 30, 0.8)];
    let p = Pipeline::builder()
        .scorer(Hint)
        .slicer(TakeAll)
        .placer(Keep)
        .overflow_strategy(OverflowStrategy::Proceed)
        .on_overflow(move |e: &OverflowEvent| sink.lock().unwrap().push(e.tokens_over_budget))
        .budget(ContextBudget::new(1000, 50).unwrap())
        .build()
        .unwrap();
    // 60 - 50 = 10 tokens over.
    assert_eq!(p.run(&items).unwrap().len(), 2);
    assert_eq!(*seen.lock().unwrap(), [10]);

    struct Overflows(Vec<OverflowEvent>);
    impl TraceCollector for Overflows {
        fn is_enabled(&self) -> bool {
            false
        }
        fn on_overflow(&mut self, e: &OverflowEvent) {
            self.0.push(e.clone());
        }
    }
    let mut c = Overflows(vec![]);
    p.run_with(&items, RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    assert_eq!(c.0.len(), 1);
    assert_eq!(c.0[0].overflowing_items.len(), 2);
    assert_eq!(c.0[0].budget.target_tokens(), 50);
}

/// Issue 31 point 3 / clarification S-15a: a slicer that overshoots (count
/// quotas commit required items whatever their size; `TakeAll` here) is judged
/// against the real room `min(target, max - output_reserve)`, not the raw
/// target. Budget max 200, target 150, reserve 120: room min(150, 80) = 80.
/// Items a 60 + b 50 = 110 tokens: under the raw target (110 <= 150) but 30
/// over the room.
#[test]
fn overflow_is_judged_against_the_room_not_the_raw_target() {
    let items = [item("a", 60, 0.9), item("b", 50, 0.8)];
    let budget = ContextBudget::builder(200, 150)
        .output_reserve(120)
        .build()
        .unwrap();
    assert_eq!(budget.overflow_limit(), 80);
    let with = |strategy| {
        let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
        let sink = Arc::clone(&seen);
        let p = Pipeline::builder()
            .scorer(Hint)
            .slicer(TakeAll)
            .placer(Keep)
            .overflow_strategy(strategy)
            .on_overflow(move |e: &OverflowEvent| sink.lock().unwrap().push(e.tokens_over_budget))
            .budget(budget.clone())
            .build()
            .unwrap();
        (p, seen)
    };
    // Throw: 110 > 80 fails; the error carries the limit it was checked against.
    let (p, _) = with(OverflowStrategy::Throw);
    assert_eq!(
        p.run(&items).unwrap_err(),
        CupelError::BudgetOverflow {
            selected_tokens: 110,
            target_tokens: 80
        }
    );
    // Truncate: a 0 + 60 <= 80 kept; b 60 + 50 = 110 > 80 dropped with room 20.
    let (p, _) = with(OverflowStrategy::Truncate);
    assert_eq!(contents(&p.run(&items).unwrap()), ["a"]);
    assert_eq!(
        p.dry_run(&items).unwrap().excluded[0].reason,
        budget_exceeded(50, 20)
    );
    // Proceed: both kept, 110 - 80 = 30 tokens over reported.
    let (p, seen) = with(OverflowStrategy::Proceed);
    assert_eq!(p.run(&items).unwrap().len(), 2);
    assert_eq!(*seen.lock().unwrap(), [30]);
}

#[test]
fn stage_events_count_items_entering_each_stage() {
    // 5 inputs: 1 negative, 1 pinned, 3 scoreable of which 1 duplicate; target fits 1 item.
    let items = [
        item("neg", -1, 0.0),
        pinned("p", 5),
        item("x", 10, 0.9),
        item("x", 10, 0.1),
        item("y", 10, 0.5),
    ];
    let p = pipeline(100, 15, OverflowStrategy::Throw);
    let mut c = DiagnosticTraceCollector::new(TraceDetailLevel::Item);
    let window = p
        .run_with(&items, RunOptions::new().collector(&mut c))
        .map(|o| o.items)
        .unwrap();
    assert_eq!(contents(&window), ["p", "x"]);
    let stage_counts: Vec<(PipelineStage, usize)> = c
        .events()
        .iter()
        .filter(|e| e.message.is_none())
        .map(|e| (e.stage, e.item_count))
        .collect();
    // Classify 5 in; Score 3; Deduplicate 3; Slice 2 (x, y); Place 2 (p + x).
    assert_eq!(
        stage_counts,
        [
            (PipelineStage::Classify, 5),
            (PipelineStage::Score, 3),
            (PipelineStage::Deduplicate, 3),
            (PipelineStage::Slice, 2),
            (PipelineStage::Place, 2),
        ]
    );
    // Item events precede their stage event.
    let seq: Vec<(PipelineStage, bool)> = c
        .events()
        .iter()
        .map(|e| (e.stage, e.message.is_some()))
        .collect();
    assert_eq!(
        seq,
        [
            (PipelineStage::Classify, true),
            (PipelineStage::Classify, false),
            (PipelineStage::Score, false),
            (PipelineStage::Deduplicate, true),
            (PipelineStage::Deduplicate, false),
            (PipelineStage::Slice, true),
            (PipelineStage::Slice, false),
            (PipelineStage::Place, true),
            (PipelineStage::Place, true),
            (PipelineStage::Place, false),
        ]
    );
    let r = c.into_report();
    assert_eq!(r.total_candidates, r.included.len() + r.excluded.len());
}

#[test]
fn effective_budget_includes_reserved_slots_and_margin() {
    // max 1000, target 500, reserve 100, slot 100, margin 50%:
    //   max = 1000 - 100 - 0 - 100 = 800 -> 400; target = min(500 - 100, 800) = 400 -> 200.
    struct Spy(Mutex<Option<SliceBudget>>);
    impl Slicer for Spy {
        fn slice(&self, _: &[ScoredItem<'_>], b: SliceBudget) -> Result<SliceOutcome, CupelError> {
            *self.0.lock().unwrap() = Some(b);
            Ok(SliceOutcome::default())
        }
    }
    let spy = Arc::new(Spy(Mutex::new(None)));
    let budget = ContextBudget::builder(1000, 500)
        .output_reserve(100)
        .reserved_slot(cupel_core::ContextKind::MEMORY, 100)
        .safety_margin_percent(50.0)
        .build()
        .unwrap();
    let p = Pipeline::builder()
        .scorer(Hint)
        .slicer(Arc::clone(&spy))
        .placer(Keep)
        .budget(budget)
        .build()
        .unwrap();
    p.run(&[item("a", 1, 0.5)]).unwrap();
    assert_eq!(*spy.0.lock().unwrap(), Some(SliceBudget::new(400, 200)));
}

#[test]
fn broken_components_give_errors_not_panics() {
    struct Short;
    impl Scorer for Short {
        fn score(&self, _: usize, _: &[&ContextItem]) -> f64 {
            0.0
        }
        fn score_all(&self, _: &[&ContextItem]) -> Vec<f64> {
            vec![]
        }
    }
    struct Twice;
    impl Slicer for Twice {
        fn slice(&self, _: &[ScoredItem<'_>], _: SliceBudget) -> Result<SliceOutcome, CupelError> {
            Ok(SliceOutcome::selected(vec![0, 0]))
        }
    }
    struct Lossy;
    impl Placer for Lossy {
        fn place(&self, _: &[ScoredItem<'_>]) -> Vec<usize> {
            vec![]
        }
    }
    let items = [item("a", 1, 0.5)];
    let budget = ContextBudget::new(10, 10).unwrap();
    let base = Pipeline::builder().budget(budget);
    let e = base
        .clone()
        .scorer(Short)
        .slicer(FirstFit)
        .placer(Keep)
        .build()
        .unwrap()
        .run(&items)
        .unwrap_err();
    assert_eq!(
        e,
        CupelError::PipelineConfig("scorer returned 0 scores for 1 items".into())
    );
    let e = base
        .clone()
        .scorer(Hint)
        .slicer(Twice)
        .placer(Keep)
        .build()
        .unwrap()
        .run(&items)
        .unwrap_err();
    assert!(e.to_string().contains("more than once"), "{e}");
    let e = base
        .scorer(Hint)
        .slicer(FirstFit)
        .placer(Lossy)
        .build()
        .unwrap()
        .run(&items)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("placer returned 0 positions for 1 items"),
        "{e}"
    );
}

#[test]
fn token_sums_near_i64_max_are_errors_not_panics() {
    let items = [item("a", i64::MAX, 0.5), item("b", 1, 0.5)];
    let e = pipeline(100, 50, OverflowStrategy::Throw)
        .run(&items)
        .unwrap_err();
    assert!(matches!(e, CupelError::TokenOverflow { .. }), "{e}");
    // A single huge item is fine: it just does not fit.
    let r = pipeline(100, 50, OverflowStrategy::Throw)
        .dry_run(&[item("huge", i64::MAX, 0.5)])
        .unwrap();
    assert_eq!(r.total_tokens_considered, i64::MAX);
    assert!(r.included.is_empty());
}

#[test]
fn token_sums_are_checked_on_both_sides_of_the_first_grouped_item() {
    // The totals are summed in the scan before the first grouped item and
    // in the unit table's pass after it: an overflow made of counts from
    // both sides is still caught, with its exact total.
    let grouped = |content: &str, tokens: i64| {
        ContextItem::builder(content, tokens)
            .future_relevance_hint(0.5)
            .group("g")
            .build()
            .unwrap()
    };
    let overflow =
        |items: &[ContextItem]| match pipeline(100, 50, OverflowStrategy::Throw).run(items) {
            Err(CupelError::TokenOverflow { sign, total }) => (sign, total),
            other => panic!("expected TokenOverflow, got {other:?}"),
        };
    // Non-negative: i64::MAX (before) + 1 (the group) + 1 (after)
    // = 9,223,372,036,854,775,809.
    let items = [
        item("a", i64::MAX, 0.5),
        grouped("g1", 1),
        item("b", 1, 0.5),
    ];
    assert_eq!(
        overflow(&items),
        (cupel_core::TokenSign::Positive, i128::from(i64::MAX) + 2)
    );
    // Negative: -1 (the group, first) + i64::MIN (after) = i64::MIN - 1.
    let items = [grouped("g1", -1), item("b", i64::MIN, 0.5)];
    assert_eq!(
        overflow(&items),
        (cupel_core::TokenSign::Negative, i128::from(i64::MIN) - 1)
    );
}

#[test]
fn missing_parts_are_named() {
    let e = Pipeline::builder().scorer(Hint).build().unwrap_err();
    assert!(e.to_string().contains("no budget"), "{e}");
    let e = Pipeline::builder()
        .budget(ContextBudget::new(1, 1).unwrap())
        .scorer(Hint)
        .placer(Keep)
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("no slicer"), "{e}");
}

#[test]
fn one_pipeline_serves_many_threads() {
    let p = Arc::new(pipeline(1000, 100, OverflowStrategy::Throw));
    let items: Arc<Vec<ContextItem>> = Arc::new(
        (0..50)
            .map(|i: i32| {
                item(
                    &format!("item {i}"),
                    7 + i64::from(i % 5),
                    f64::from(i % 10) / 10.0,
                )
            })
            .collect(),
    );
    let expected = p.run(&items).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let p = Arc::clone(&p);
            let items = Arc::clone(&items);
            std::thread::spawn(move || p.run(&items).unwrap())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), expected);
    }
}

#[test]
fn a_bad_cap_exclusion_fails_run_and_dry_run_alike() {
    struct BadCap;
    impl Slicer for BadCap {
        fn slice(&self, _: &[ScoredItem<'_>], _: SliceBudget) -> Result<SliceOutcome, CupelError> {
            Ok(SliceOutcome {
                selected: vec![0],
                shortfalls: vec![],
                cap_exclusions: vec![cupel_core::CapExclusion::new(
                    0,
                    cupel_core::ContextKind::MESSAGE,
                    1,
                    1,
                )],
                rooms: vec![],
            })
        }
    }
    let p = Pipeline::builder()
        .scorer(Hint)
        .slicer(BadCap)
        .placer(Keep)
        .budget(ContextBudget::new(10, 10).unwrap())
        .build()
        .unwrap();
    let items = [item("a", 1, 0.5)];
    let e1 = p.run(&items).unwrap_err();
    let e2 = p.dry_run(&items).unwrap_err();
    assert_eq!(e1, e2);
    assert!(e1.to_string().contains("cap exclusion for index 0"), "{e1}");
}

#[test]
fn a_room_for_an_unknown_index_fails_run_and_dry_run_alike() {
    struct BadRoom;
    impl Slicer for BadRoom {
        fn slice(&self, _: &[ScoredItem<'_>], _: SliceBudget) -> Result<SliceOutcome, CupelError> {
            Ok(SliceOutcome {
                rooms: vec![cupel_core::SliceRoom::new(5, vec![0, 3])],
                ..SliceOutcome::default()
            })
        }
    }
    let p = Pipeline::builder()
        .scorer(Hint)
        .slicer(BadRoom)
        .placer(Keep)
        .budget(ContextBudget::new(10, 10).unwrap())
        .build()
        .unwrap();
    let items = [item("a", 1, 0.5), item("b", 1, 0.4)];
    let e1 = p.run(&items).unwrap_err();
    let e2 = p.dry_run(&items).unwrap_err();
    assert_eq!(e1, e2);
    assert_eq!(
        e1,
        CupelError::PipelineConfig(
            "slicer reported a room for index 3, but only 2 items were given".into()
        )
    );
}

#[test]
fn a_slicer_room_is_the_available_tokens_of_its_members() {
    // A custom slicer that selects nothing but says item 1 had 7 tokens of room.
    // Effective target 10, nothing selected: item 0 (no room listed) reads
    // 10 - 0 = 10; item 1 reads its own room 7; a negative room reads 0.
    struct Rooms;
    impl Slicer for Rooms {
        fn slice(&self, _: &[ScoredItem<'_>], _: SliceBudget) -> Result<SliceOutcome, CupelError> {
            Ok(SliceOutcome {
                rooms: vec![
                    cupel_core::SliceRoom::new(7, vec![1]),
                    cupel_core::SliceRoom::new(-4, vec![1, 2]),
                ],
                ..SliceOutcome::default()
            })
        }
    }
    let p = Pipeline::builder()
        .scorer(Hint)
        .slicer(Rooms)
        .placer(Keep)
        .budget(ContextBudget::new(10, 10).unwrap())
        .build()
        .unwrap();
    let items = [item("a", 20, 0.9), item("b", 20, 0.5), item("c", 20, 0.1)];
    let r = p.dry_run(&items).unwrap();
    let avail: Vec<_> = r
        .excluded
        .iter()
        .map(|e| match e.reason {
            ExclusionReason::BudgetExceeded {
                available_tokens, ..
            } => available_tokens,
            _ => -1,
        })
        .collect();
    assert_eq!(avail, [10, 7, 0]);
}
