//! The edge cases listed in the specification's stage chapters that the other
//! test files and the conformance vectors do not already pin down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cupel_core::{
    ContextBudget, ContextItem, CupelError, ExclusionReason, OverflowStrategy, ScoredItem, Scorer,
    SliceBudget, SliceOutcome, Slicer,
};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::ReflexiveScorer;
use cupel_slicers::GreedySlice;

/// Counts whole-pass calls, then scores like the reflexive scorer.
#[derive(Default)]
struct CountingScorer(AtomicUsize);
impl Scorer for CountingScorer {
    fn score(&self, i: usize, items: &[&ContextItem]) -> f64 {
        items[i].future_relevance_hint().unwrap_or(0.0)
    }
    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        self.0.fetch_add(1, Ordering::SeqCst);
        (0..items.len()).map(|i| self.score(i, items)).collect()
    }
}

/// Records what the slicer is given, then delegates to greedy.
#[derive(Default)]
struct SpySlicer(Mutex<Vec<(Vec<String>, SliceBudget)>>);
impl Slicer for SpySlicer {
    fn slice(&self, s: &[ScoredItem<'_>], b: SliceBudget) -> Result<SliceOutcome, CupelError> {
        let contents = s.iter().map(|x| x.item.content().to_owned()).collect();
        self.0.lock().unwrap().push((contents, b));
        GreedySlice::new().slice(s, b)
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

#[test]
fn scorer_is_called_once_per_run_and_never_on_an_empty_scoreable_list() {
    let scorer = std::sync::Arc::new(CountingScorer::default());
    let p = Pipeline::builder()
        .scorer(std::sync::Arc::clone(&scorer))
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100, 100).unwrap())
        .build()
        .unwrap();
    // All pinned (or negative): nothing to score.
    p.run(&[pinned("p", 5), item("neg", -1, 0.5)]).unwrap();
    assert_eq!(scorer.0.load(Ordering::SeqCst), 0);
    // Three scoreable items: exactly one whole pass.
    p.run(&[item("a", 1, 0.1), item("b", 1, 0.2), item("c", 1, 0.3)])
        .unwrap();
    assert_eq!(scorer.0.load(Ordering::SeqCst), 1);
}

#[test]
fn slicer_sees_score_order_with_input_order_on_ties_and_the_effective_budget() {
    // Scores: a 0.5, b 0.9, c 0.5, d 0.5 -> sorted b, then a, c, d (ties keep input order).
    // Budget max 100, target 60, pinned 10: effective max 90, target 50.
    let spy = std::sync::Arc::new(SpySlicer::default());
    let p = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(std::sync::Arc::clone(&spy))
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100, 60).unwrap())
        .build()
        .unwrap();
    p.run(&[
        item("a", 10, 0.5),
        item("b", 10, 0.9),
        pinned("p", 10),
        item("c", 10, 0.5),
        item("d", 10, 0.5),
    ])
    .unwrap();
    let calls = spy.0.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, ["b", "a", "c", "d"]);
    assert_eq!(calls[0].1, SliceBudget::new(90, 50));
}

#[test]
fn slicer_receives_an_empty_list_when_everything_is_pinned() {
    let spy = std::sync::Arc::new(SpySlicer::default());
    let p = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(std::sync::Arc::clone(&spy))
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100, 100).unwrap())
        .build()
        .unwrap();
    let window = p.run(&[pinned("p1", 10), pinned("p2", 20)]).unwrap();
    assert_eq!(window.len(), 2);
    assert!(spy.0.lock().unwrap()[0].0.is_empty());
}

#[test]
fn pinned_items_filling_the_target_leave_the_slicer_nothing() {
    // max 200, target 50, pinned 50: effective target 0 -> greedy selects nothing;
    // merged = 50 tokens, not over the target. "a" reported with available 0;
    // without the pinned item it would have fit 50 -> PinnedOverride.
    let p = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(200, 50).unwrap())
        .build()
        .unwrap();
    let items = [pinned("p", 50), item("a", 20, 0.9)];
    let window = p.run(&items).unwrap();
    assert_eq!(window.len(), 1);
    let r = p.dry_run(&items).unwrap();
    assert_eq!(
        r.excluded[0].reason,
        ExclusionReason::PinnedOverride {
            displaced_by: "p".into()
        }
    );
}

#[test]
fn duplicates_with_different_metadata_are_still_duplicates_and_survivor_keeps_its_fields() {
    let a = ContextItem::builder("same text", 10)
        .future_relevance_hint(0.2)
        .tag("first")
        .build()
        .unwrap();
    let b = ContextItem::builder("same text", 10)
        .future_relevance_hint(0.8)
        .kind(cupel_core::ContextKind::DOCUMENT)
        .metadata("source", "kb")
        .build()
        .unwrap();
    let p = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100, 100).unwrap())
        .build()
        .unwrap();
    let window = p.run(&[a, b.clone()]).unwrap();
    assert_eq!(window.len(), 1);
    assert!(window[0].ptr_eq(&b));
    assert_eq!(
        window[0].metadata().get("source").map(String::as_str),
        Some("kb")
    );
}

#[test]
fn byte_exact_dedup_keeps_case_and_whitespace_variants() {
    let p = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(100, 100).unwrap())
        .build()
        .unwrap();
    let items = [
        item("Hello", 1, 0.5),
        item("hello", 1, 0.5),
        item("Hello ", 1, 0.5),
        item("\u{e9}", 1, 0.5),   // precomposed é
        item("e\u{301}", 1, 0.5), // e + combining acute: distinct bytes
    ];
    assert_eq!(p.run(&items).unwrap().len(), 5);
}

#[test]
fn truncate_with_pinned_items_alone_over_target_keeps_only_them() {
    // max 100, target 30, pinned 40 + 10 = 50 > 30; effective target 0 so the
    // slicer selects nothing; merged 50 > 30 -> Truncate keeps both pinned items.
    let p = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .overflow_strategy(OverflowStrategy::Truncate)
        .budget(ContextBudget::new(100, 30).unwrap())
        .build()
        .unwrap();
    let window = p
        .run(&[pinned("p1", 40), item("a", 5, 0.9), pinned("p2", 10)])
        .unwrap();
    let contents: Vec<&str> = window.iter().map(ContextItem::content).collect();
    assert_eq!(contents, ["p1", "p2"]);
}
