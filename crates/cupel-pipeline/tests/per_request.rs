//! Per-request budgets and the report of a traced run: the one entry point
//! (`run_with` and `RunOptions`), and the deprecated variants it replaces
//! (`run_with_budget` and friends), which must keep working. Every window is
//! derived by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, deprecated)]

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use cupel_core::{
    ContextBudget, ContextItem, CupelError, DiagnosticTraceCollector, ExclusionReason, FanOut,
    FixedTimeProvider, NullTraceCollector, OverflowStrategy, SelectionReport, TraceCollector,
    TraceDetailLevel,
};
use cupel_pipeline::{Pipeline, RunOptions, SelectWithinError};
use cupel_placers::ChronologicalPlacer;
use cupel_run::{LocalTracker, RunBudget, TokenLimit};
use cupel_scorers::ReflexiveScorer;
use cupel_slicers::GreedySlice;

fn at(minute: u32) -> DateTime<Utc> {
    format!("2026-01-01T09:{minute:02}:00Z").parse().unwrap()
}

/// Pinned `sys` (10 tokens) and four scoreable items; score = hint, so the
/// greedy densities (hint / tokens) are b 0.03, a 0.02, d 0.015, c 0.01.
/// Timestamps follow input order, so the chronological window does too.
fn items() -> Vec<ContextItem> {
    let item = |content: &str, tokens, hint, minute| {
        ContextItem::builder(content, tokens)
            .future_relevance_hint(hint)
            .timestamp(at(minute))
            .build()
            .unwrap()
    };
    vec![
        ContextItem::builder("sys", 10)
            .pinned(true)
            .timestamp(at(0))
            .build()
            .unwrap(),
        item("a", 40, 0.8, 1),
        item("b", 30, 0.9, 2),
        item("c", 20, 0.2, 3),
        item("d", 60, 0.9, 4),
    ]
}

/// Built with a budget large enough for everything (1000 / 1000).
fn pipeline() -> Pipeline {
    Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(ContextBudget::new(1_000, 1_000).unwrap())
        .build()
        .unwrap()
}

fn contents(window: &[ContextItem]) -> Vec<&str> {
    window.iter().map(|i| i.content()).collect()
}

fn zero_durations(mut r: SelectionReport) -> SelectionReport {
    for e in &mut r.events {
        e.duration_ms = 0.0;
    }
    r
}

#[test]
fn one_pipeline_serves_two_budgets() {
    let pipeline = pipeline();
    let items = items();

    // Small model: max 100, target 80. Effective target = min(80 - 10, 100 - 10) = 70.
    // Greedy: b 30 (40 left), a 40 (0 left), d 60 > 0 skipped, c 20 > 0 skipped.
    let small = ContextBudget::new(100, 80).unwrap();
    let window = pipeline.run_with_budget(&items, &small).unwrap();
    assert_eq!(contents(&window), ["sys", "a", "b"]);

    // Large model: max 200, target 150. Effective target = 140.
    // Greedy: b 30 (110 left), a 40 (70 left), d 60 (10 left), c 20 > 10 skipped.
    let large = ContextBudget::new(200, 150).unwrap();
    let window = pipeline.run_with_budget(&items, &large).unwrap();
    assert_eq!(contents(&window), ["sys", "a", "b", "d"]);

    // The pipeline's own budget is untouched and still takes everything.
    assert_eq!(
        pipeline.budget(),
        &ContextBudget::new(1_000, 1_000).unwrap()
    );
    let window = pipeline.run(&items).unwrap();
    assert_eq!(contents(&window), ["sys", "a", "b", "c", "d"]);
}

#[test]
fn per_request_runs_equal_pipelines_built_for_the_budget() {
    let pipeline = pipeline();
    let items = items();
    for budget in [
        ContextBudget::new(100, 80).unwrap(),
        ContextBudget::new(200, 150).unwrap(),
    ] {
        let rebuilt = pipeline.with_budget(budget.clone());
        // `with_budget` shares the components rather than cloning them.
        assert!(Arc::ptr_eq(
            pipeline.policy().scorer(),
            rebuilt.policy().scorer()
        ));
        assert!(Arc::ptr_eq(
            pipeline.policy().slicer(),
            rebuilt.policy().slicer()
        ));
        assert!(Arc::ptr_eq(
            pipeline.policy().placer(),
            rebuilt.policy().placer()
        ));
        let expected = rebuilt.run(&items).unwrap();
        assert_eq!(pipeline.run_with_budget(&items, &budget).unwrap(), expected);

        // The traced form records what the dry run under that budget reports.
        let mut diagnostics = DiagnosticTraceCollector::new(TraceDetailLevel::Stage);
        let window = pipeline
            .run_traced_with_budget(&items, &budget, &mut diagnostics)
            .unwrap();
        assert_eq!(window, expected);
        assert_eq!(
            zero_durations(diagnostics.into_report()),
            zero_durations(pipeline.dry_run_with_budget(&items, &budget).unwrap())
        );
    }
}

#[test]
fn the_small_budgets_report_names_the_budget_exclusions() {
    // Under the small budget (effective target 70, 0 left after a and b):
    // d and c are BudgetExceeded with 0 available, sorted by score (d 0.9, c 0.2).
    let small = ContextBudget::new(100, 80).unwrap();
    let report = pipeline().dry_run_with_budget(&items(), &small).unwrap();
    let excluded: Vec<(&str, &ExclusionReason)> = report
        .excluded
        .iter()
        .map(|e| (e.item.content(), &e.reason))
        .collect();
    assert_eq!(
        excluded,
        [
            (
                "d",
                &ExclusionReason::BudgetExceeded {
                    item_tokens: 60,
                    available_tokens: 0
                }
            ),
            (
                "c",
                &ExclusionReason::BudgetExceeded {
                    item_tokens: 20,
                    available_tokens: 0
                }
            ),
        ]
    );
}

#[test]
fn a_per_request_budget_is_validated_against_like_a_built_one() {
    // The pinned 10 tokens exceed max 8 - reserve 0.
    let tiny = ContextBudget::new(8, 8).unwrap();
    let err = pipeline().run_with_budget(&items(), &tiny).unwrap_err();
    assert!(matches!(
        err,
        CupelError::PinnedBudgetExceeded {
            pinned_tokens: 10,
            available_tokens: 8
        }
    ));
}

#[test]
fn the_overflow_observer_applies_to_per_request_runs() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    // Target 5 under Proceed: the slicer gets nothing (5 - 10 < 0) and the
    // pinned sys (10 tokens) alone overflows the target by 5.
    let pipeline = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .overflow_strategy(OverflowStrategy::Proceed)
        .budget(ContextBudget::new(1_000, 1_000).unwrap())
        .on_overflow(move |e| sink.lock().unwrap().push(e.tokens_over_budget))
        .build()
        .unwrap();
    let window = pipeline
        .run_with_budget(&items(), &ContextBudget::new(100, 5).unwrap())
        .unwrap();
    assert_eq!(contents(&window), ["sys"]);
    assert_eq!(*seen.lock().unwrap(), [5]);
}

#[test]
fn a_traced_run_returns_the_dry_run_report() {
    let pipeline = pipeline().with_budget(ContextBudget::new(100, 80).unwrap());
    let items = items();
    let (window, report) = pipeline
        .run_traced_with_report(&items, &mut NullTraceCollector)
        .unwrap();
    assert_eq!(contents(&window), ["sys", "a", "b"]);
    assert_eq!(
        zero_durations(report),
        zero_durations(pipeline.dry_run(&items).unwrap())
    );
}

/// Counts the stages and runs it sees, to check the caller's collector is fed.
#[derive(Default)]
struct Counter {
    stages: usize,
    completed: usize,
    failed: usize,
}

impl TraceCollector for Counter {
    fn is_enabled(&self) -> bool {
        true
    }
    fn on_stage_completed(&mut self, _: &cupel_core::StageTrace) {
        self.stages += 1;
    }
    fn on_run_completed(&mut self) {
        self.completed += 1;
    }
    fn on_run_failed(&mut self, _: &CupelError) {
        self.failed += 1;
    }
}

#[test]
fn a_traced_run_with_report_feeds_the_callers_collector_too() {
    let pipeline = pipeline();
    let items = items();
    let mut counter = Counter::default();
    let (window, report) = pipeline
        .run_traced_with_report(&items, &mut counter)
        .unwrap();
    assert_eq!(window.len(), 5);
    assert_eq!(report.included.len(), 5);
    // Five stage traces (Classify, Score, Deduplicate, Slice, Place), one run.
    assert_eq!(
        (counter.stages, counter.completed, counter.failed),
        (5, 1, 0)
    );

    // A failing run: the error is returned and the collector hears of it.
    let tiny = pipeline.with_budget(ContextBudget::new(8, 8).unwrap());
    let err = tiny
        .run_traced_with_report(&items, &mut counter)
        .unwrap_err();
    assert!(matches!(err, CupelError::PinnedBudgetExceeded { .. }));
    assert_eq!(counter.failed, 1);
}

#[test]
fn a_fan_out_of_dyn_collectors_builds_the_same_report() {
    // The building blocks of `run_traced_with_report`, used directly with a
    // `&mut dyn` collector and an Item-level report.
    let pipeline = pipeline();
    let items = items();
    let mut counter = Counter::default();
    let dyn_counter: &mut dyn TraceCollector = &mut counter;
    let mut both = FanOut::new(
        DiagnosticTraceCollector::new(TraceDetailLevel::Item),
        dyn_counter,
    );
    pipeline.run_traced(&items, &mut both).unwrap();
    let (diagnostics, _) = both.into_inner();
    let report = diagnostics.into_report();
    assert_eq!(report.included.len(), 5);
    // Item level: five stage events plus five inclusion events.
    assert_eq!(report.events.len(), 10);
    assert_eq!(counter.stages, 5);
}

// ----- The one entry point: `run_with` and `RunOptions` ---------------------

#[test]
fn run_with_combines_a_budget_a_collector_and_a_report_in_one_run() {
    let pipeline = pipeline();
    let items = items();
    // Small model: effective target min(80 - 10, 100 - 10) = 70; greedy takes
    // b 30 (40 left) and a 40 (0 left); d 60 and c 20 no longer fit.
    let small = ContextBudget::new(100, 80).unwrap();
    let mut mine = DiagnosticTraceCollector::new(TraceDetailLevel::Stage);
    let out = pipeline
        .run_with(
            &items,
            RunOptions::new()
                .budget(&small)
                .collector(&mut mine)
                .report(true),
        )
        .unwrap();
    assert_eq!(contents(&out.items), ["sys", "a", "b"]);
    assert!(out.hold.is_none());
    let report = zero_durations(out.report.unwrap());
    // The caller's collector saw the same run the report describes.
    assert_eq!(zero_durations(mine.into_report()), report);
    // Rows carry input positions: sys 0, a 1, b 2 placed; excluded by score,
    // d (position 4, 0.9) before c (position 3, 0.2).
    let placed: Vec<usize> = report.included.iter().map(|i| i.position).collect();
    assert_eq!(placed, [0, 1, 2]);
    let left_out: Vec<usize> = report.excluded.iter().map(|e| e.position).collect();
    assert_eq!(left_out, [4, 3]);
}

#[test]
fn run_with_defaults_to_run_and_its_dry_report_to_dry_run() {
    let pipeline = pipeline();
    let items = items();
    let out = pipeline.run_with(&items, RunOptions::new()).unwrap();
    assert_eq!(out.items, pipeline.run(&items).unwrap());
    assert!(out.report.is_none());
    let dry = pipeline
        .run_with(&items, RunOptions::new().dry(true).report(true))
        .unwrap();
    assert_eq!(
        zero_durations(dry.report.unwrap()),
        zero_durations(pipeline.dry_run(&items).unwrap())
    );
}

#[test]
fn a_dry_run_calls_no_overflow_observer_and_holds_no_run_budget() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let pipeline = Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .overflow_strategy(OverflowStrategy::Proceed)
        .budget(ContextBudget::new(1_000, 1_000).unwrap())
        .on_overflow(move |e| sink.lock().unwrap().push(e.tokens_over_budget))
        .build()
        .unwrap();
    // Target 5: the pinned sys (10 tokens) alone overflows it by 5.
    let tiny = ContextBudget::new(100, 5).unwrap();
    let dry = pipeline
        .run_with(&items(), RunOptions::new().budget(&tiny).dry(true))
        .unwrap();
    assert_eq!(contents(&dry.items), ["sys"]);
    assert!(seen.lock().unwrap().is_empty());
    // The same run, not dry, calls it once with the 5 tokens over.
    pipeline
        .run_with(&items(), RunOptions::new().budget(&tiny))
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), [5]);

    let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
    let run = LocalTracker::new(RunBudget::new(None, None, &clock).unwrap(), clock).unwrap();
    let err = pipeline
        .run_with(&items(), RunOptions::new().run_budget(&run).dry(true))
        .unwrap_err();
    assert!(
        matches!(
            err,
            SelectWithinError::Selection(CupelError::PipelineConfig(_))
        ),
        "{err:?}"
    );
}

#[test]
fn run_with_a_run_budget_clamps_a_per_request_budget_and_reports() {
    let pipeline = pipeline();
    let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
    let limits = TokenLimit::new(Some(50), None).unwrap();
    let run =
        LocalTracker::new(RunBudget::new(None, Some(limits), &clock).unwrap(), clock).unwrap();
    // Request budget 100 / 80; the run has 50 input tokens left, below
    // 100 - 0, so the selection runs under max 50, target min(80, 50) = 50.
    // Effective target 50 - 10 = 40: b 30 (10 left); a 40, d 60, c 20 do not fit.
    let request = ContextBudget::new(100, 80).unwrap();
    let out = pipeline
        .run_with(
            &items(),
            RunOptions::new()
                .budget(&request)
                .run_budget(&run)
                .report(true),
        )
        .unwrap();
    assert_eq!(contents(&out.items), ["sys", "b"]);
    let hold = out.hold.unwrap();
    assert_eq!(hold.context_budget.target_tokens(), 50);
    assert_eq!(hold.input_tokens, 40); // sys 10 + b 30
    let report = out.report.unwrap();
    assert_eq!(report.included.len(), 2);
    assert_eq!(report.excluded.len(), 3);
}
