//! `Pipeline::run_within`: selecting a context window under a shared run budget.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, deprecated)]

use chrono::{DateTime, TimeDelta, Utc};
use cupel_core::{ContextBudget, ContextItem, CupelError, ManualTimeProvider};
use cupel_pipeline::{Pipeline, RunOptions, SelectWithinError};
use cupel_placers::ChronologicalPlacer;
use cupel_run::{
    BudgetDimension, BudgetExceededError, BudgetPhase, Deadline, LocalTracker, RunBudget, RunError,
    TokenLimit, TokenUsage,
};
use cupel_scorers::ReflexiveScorer;
use cupel_slicers::GreedySlice;

fn t0() -> DateTime<Utc> {
    "2026-05-01T08:00:00Z".parse().unwrap()
}

fn usage(input: i64, output: i64) -> TokenUsage {
    TokenUsage::new(input, output).unwrap()
}

fn tracker(input: Option<i64>, output: Option<i64>) -> (LocalTracker, ManualTimeProvider) {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::builder()
        .deadline(Deadline::after(&clock, TimeDelta::seconds(60)))
        .token_limit(TokenLimit::new(input, output).unwrap())
        .build(&clock)
        .unwrap();
    (LocalTracker::new(budget, clock.clone()).unwrap(), clock)
}

fn pipeline(max: i64, target: i64, reserve: i64) -> Pipeline {
    Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .budget(
            ContextBudget::builder(max, target)
                .output_reserve(reserve)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap()
}

/// Five 20-token documents, relevance 0.9, 0.8, ... 0.5.
fn docs() -> Vec<ContextItem> {
    (0..5)
        .map(|i| {
            ContextItem::builder(format!("doc {i}"), 20)
                .future_relevance_hint(0.9 - 0.1 * f64::from(i))
                .build()
                .unwrap()
        })
        .collect()
}

fn budget_error(e: SelectWithinError) -> BudgetExceededError {
    match e {
        SelectWithinError::Run(RunError::Exceeded(b)) => b,
        other => panic!("expected a run-budget error, got {other:?}"),
    }
}

fn contents(items: &[ContextItem]) -> Vec<&str> {
    items.iter().map(ContextItem::content).collect()
}

#[test]
fn window_is_clamped_to_the_remaining_input() {
    let (run, _) = tracker(Some(200), None);
    run.record(usage(150, 0));
    // Pipeline: max 1000, target 500, reserve 100 -> room 900. Input left:
    // 200 - 150 = 50 < 900, so max = 50 + 100 = 150 and target = min(500, 50) = 50.
    // Greedy by relevance: doc 0 (20) + doc 1 (20) = 40; doc 2 would make 60 > 50.
    let window = pipeline(1_000, 500, 100).run_within(&docs(), &run).unwrap();
    assert_eq!(contents(&window.items), ["doc 0", "doc 1"]);
    assert_eq!(window.input_tokens, 40);
    assert_eq!(window.context_budget.max_tokens(), 150);
    assert_eq!(window.context_budget.target_tokens(), 50);
    assert_eq!(window.context_budget.output_reserve(), 100);
    // Reserved: 40 in; output unbounded -> the whole reserve (100) is reserved.
    assert_eq!(window.reservation.amount(), usage(40, 100));
    assert_eq!(window.max_output_tokens, Some(100));
    assert_eq!(run.remaining_tokens().unwrap().input(), Some(10));
}

#[test]
fn clamp_never_raises_the_pipeline_budget() {
    let (run, _) = tracker(Some(1_000_000), None);
    // Plenty of input left: the pipeline's own budget (target 50) applies.
    let p = pipeline(1_000, 50, 0);
    let window = p.run_within(&docs(), &run).unwrap();
    assert_eq!(&window.context_budget, p.budget());
    // target 50: doc 0 + doc 1 = 40, doc 2 -> 60 > 50.
    assert_eq!(window.input_tokens, 40);
}

#[test]
fn unbounded_input_uses_the_pipeline_budget() {
    let (run, _) = tracker(None, Some(10));
    let p = pipeline(1_000, 1_000, 0);
    let window = p.run_within(&docs(), &run).unwrap();
    assert_eq!(window.input_tokens, 100);
    assert_eq!(&window.context_budget, p.budget());
}

#[test]
fn depleted_budget_selects_nothing() {
    let (run, _) = tracker(Some(100), None);
    run.record(usage(100, 0));
    let err = budget_error(
        pipeline(1_000, 500, 0)
            .run_within(&docs(), &run)
            .unwrap_err(),
    );
    assert_eq!(
        (err.phase(), err.dimension()),
        (BudgetPhase::Preflight, BudgetDimension::Input)
    );
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
}

/// The same refusal through `run_with`, read with `exceeded()`: a run
/// without a run budget keeps core's error type, so only this path can
/// carry a run-budget error.
#[test]
fn run_with_a_depleted_run_budget_is_a_run_error() {
    let (run, _) = tracker(Some(100), None);
    run.record(usage(100, 0));
    let p = pipeline(1_000, 500, 0);
    let err = p
        .run_with(&docs(), RunOptions::new().run_budget(&run))
        .unwrap_err();
    // 100 of 100 input tokens used: the pre-flight check finds input depleted.
    let refusal = err.exceeded().expect("a refusal");
    assert_eq!(
        (refusal.phase(), refusal.dimension()),
        (BudgetPhase::Preflight, BudgetDimension::Input)
    );
    assert!(matches!(err, SelectWithinError::Run(RunError::Exceeded(_))));
    // Without the run budget the same pipeline selects (a CupelError path).
    let plain: Result<_, CupelError> = p.run_with(&docs(), RunOptions::new());
    assert_eq!(plain.map(|o| o.items.len()).ok(), Some(5));
}

#[test]
fn expired_deadline_selects_nothing() {
    let (run, clock) = tracker(None, None);
    clock.advance(TimeDelta::seconds(60));
    let err = budget_error(
        pipeline(1_000, 500, 0)
            .run_within(&docs(), &run)
            .unwrap_err(),
    );
    assert_eq!(
        (err.phase(), err.dimension()),
        (BudgetPhase::Preflight, BudgetDimension::Deadline)
    );
}

#[test]
fn pinned_items_over_the_input_left_are_a_budget_error() {
    let (run, _) = tracker(Some(100), None);
    run.record(usage(70, 0));
    let items = vec![
        ContextItem::builder("system", 40)
            .pinned(true)
            .build()
            .unwrap(),
    ];
    // 40 pinned tokens fit the pipeline (room 1000) but not the 30 left.
    let err = budget_error(
        pipeline(1_000, 500, 0)
            .run_within(&items, &run)
            .unwrap_err(),
    );
    assert_eq!(
        (err.phase(), err.dimension()),
        (BudgetPhase::ProviderRequest, BudgetDimension::Input)
    );
    assert_eq!((err.requested(), err.remaining()), (usage(40, 0), Some(30)));
    // Only asked, never requested: the run is not halted, nothing is
    // reserved, and a selection without the oversized pin still works.
    assert!(!run.is_halted());
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    // 30 input left: one 20-token document fits, a second would make 40.
    let w = pipeline(1_000, 500, 0).run_within(&docs(), &run).unwrap();
    assert_eq!(contents(&w.items), ["doc 0"]);
    assert_eq!(w.reservation.amount(), usage(20, 0));
}

#[test]
fn pinned_items_that_stop_fitting_after_a_release_fit_again() {
    let (run, _) = tracker(Some(100), None);
    let p = pipeline(1_000, 500, 0);
    // Another holder reserves 70 of the 100 input tokens.
    let other = run
        .reserve(BudgetPhase::ToolExecution, usage(70, 0))
        .unwrap();
    let pinned = vec![
        ContextItem::builder("system", 40)
            .pinned(true)
            .build()
            .unwrap(),
    ];
    // 100 - 70 = 30 < 40: refused, not halted.
    let err = budget_error(p.run_within(&pinned, &run).unwrap_err());
    assert_eq!(err.remaining(), Some(30));
    // The other holder releases its tokens: the same call now succeeds
    // (with a latch it would have failed for the rest of the run).
    other.release();
    let w = p.run_within(&pinned, &run).unwrap();
    assert_eq!((w.input_tokens, w.reservation.amount()), (40, usage(40, 0)));
}

#[test]
fn zero_output_reserve_promises_the_same_tokens_to_concurrent_holders() {
    // Output ceiling 100, reserve 0: two holders selecting back to back are
    // both told 100 (nothing is held), and if both models use it the run
    // ends 200 - 100 = 100 over its ceiling, which the next checkpoint reports.
    let (run, _) = tracker(None, Some(100));
    let p = pipeline(1_000, 20, 0);
    let a = p.run_within(&docs(), &run).unwrap();
    let b = p.run_within(&docs(), &run).unwrap();
    assert_eq!(
        (a.max_output_tokens, b.max_output_tokens),
        (Some(100), Some(100))
    );
    assert_eq!(run.snapshot().reserved, usage(40, 0));
    a.reservation.settle(usage(20, 100));
    b.reservation.settle(usage(20, 100));
    let err = run.finalize().unwrap_err();
    assert_eq!(
        (err.dimension(), err.remaining()),
        (BudgetDimension::Output, Some(-100))
    );

    // With a reserve of 60 the second holder is told only what is left
    // after the first one's hold: 100 - 60 = 40.
    let (run, _) = tracker(None, Some(100));
    let p = pipeline(1_000, 20, 60);
    let a = p.run_within(&docs(), &run).unwrap();
    let b = p.run_within(&docs(), &run).unwrap();
    assert_eq!(
        (a.max_output_tokens, b.max_output_tokens),
        (Some(60), Some(40))
    );
    assert_eq!(run.snapshot().reserved, usage(40, 100));
}

#[test]
fn pinned_items_over_the_pipeline_budget_keep_the_pipeline_error() {
    let (run, _) = tracker(Some(10), None);
    let items = vec![
        ContextItem::builder("system", 40)
            .pinned(true)
            .build()
            .unwrap(),
    ];
    // 40 > the pipeline's own room of 30: the selection itself is wrong.
    let err = pipeline(30, 30, 0).run_within(&items, &run).unwrap_err();
    assert!(matches!(
        err,
        SelectWithinError::Selection(CupelError::PinnedBudgetExceeded {
            pinned_tokens: 40,
            ..
        })
    ));
}

#[test]
fn output_reserve_is_reserved_against_the_output_ceiling() {
    // Output left 300 >= reserve 256: reserve 256, cap 256.
    let (run, _) = tracker(None, Some(300));
    let w = pipeline(1_000, 500, 256).run_within(&docs(), &run).unwrap();
    assert_eq!(
        (w.reservation.amount().output(), w.max_output_tokens),
        (256, Some(256))
    );
    drop(w);

    // Output left 300 - 250 = 50 < reserve 256: reserve 50, cap 50.
    run.record(usage(0, 250));
    let w = pipeline(1_000, 500, 256).run_within(&docs(), &run).unwrap();
    assert_eq!(
        (w.reservation.amount().output(), w.max_output_tokens),
        (50, Some(50))
    );
    drop(w);

    // No output reserve: nothing reserved, the cap is all 50 left.
    let w = pipeline(1_000, 500, 0).run_within(&docs(), &run).unwrap();
    assert_eq!(
        (w.reservation.amount().output(), w.max_output_tokens),
        (0, Some(50))
    );
    drop(w);

    // Output unbounded and no reserve: no cap.
    let (free, _) = tracker(Some(1_000), None);
    let w = pipeline(1_000, 500, 0).run_within(&docs(), &free).unwrap();
    assert_eq!(
        (w.reservation.amount().output(), w.max_output_tokens),
        (0, None)
    );
}

#[test]
fn settling_records_the_provider_usage_and_dropping_releases() {
    let (run, _) = tracker(Some(1_000), Some(1_000));
    let p = pipeline(1_000, 1_000, 100);
    let w = p.run_within(&docs(), &run).unwrap();
    // 5 x 20 = 100 in, 100 out reserved.
    assert_eq!(run.snapshot().reserved, usage(100, 100));
    drop(w);
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    assert_eq!(run.usage(), TokenUsage::ZERO);

    let w = p.run_within(&docs(), &run).unwrap();
    w.reservation.settle(usage(104, 37));
    assert_eq!(run.usage(), usage(104, 37));
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
}

#[test]
fn a_subagent_scope_charges_the_parent() {
    let (run, clock) = tracker(Some(1_000), None);
    let sub = run
        .child(
            RunBudget::new(None, Some(TokenLimit::new(Some(50), None).unwrap()), &clock).unwrap(),
        )
        .unwrap();
    // The child may hold 50: doc 0 + doc 1 = 40 (doc 2 -> 60 > 50).
    let w = pipeline(1_000, 1_000, 0).run_within(&docs(), &sub).unwrap();
    assert_eq!(w.input_tokens, 40);
    w.reservation.settle(usage(40, 5));
    assert_eq!(run.usage(), usage(40, 5));
    assert_eq!(run.remaining_tokens().unwrap().input(), Some(960));
}

// ----- a run budget shared across processes (issue 30) -----------------------------------

/// The same selection under a `SharedTracker` (here on the in-process
/// `MemoryStore`; the Redis store is held to the same answers by
/// cupel-run's behaviour suite) as under the in-process tracker: the window
/// budget clamped to the run's input allowance, the same window, the same
/// tokens held.
#[test]
fn a_shared_run_budget_clamps_and_holds_like_the_in_process_one() {
    use std::sync::Arc;

    use cupel_pipeline::RunHold;
    use cupel_run::store::{MemoryStore, SharedReservation, SharedTracker};
    use cupel_run::{Reservation, RunTracker};

    // Run: 70 input tokens left after 30 already used (limit 100); output 500.
    // Pipeline: max 200, target 150, reserve 40 -> clamped to max 70 + 40 = 110,
    // target min(150, 70) = 70. Greedy by hint: docs 0, 1, 2 (60 tokens);
    // doc 3 (20) > 70 - 60 = 10. Held: 60 input, min(40, 500) = 40 output.
    let clock = ManualTimeProvider::new(t0());
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let budget = RunBudget::from_parts(None, Some(TokenLimit::new(Some(100), Some(500)).unwrap()));
    let shared = SharedTracker::create(store, "run", budget).unwrap();
    shared.record(usage(30, 0)).unwrap();
    let (local, _clock) = tracker(Some(100), Some(500));
    local.record(usage(30, 0));

    let p = pipeline(200, 150, 40);
    let items = docs();
    let a = p
        .run_with(&items, RunOptions::new().run_budget(&local))
        .unwrap();
    let b = p
        .run_with(&items, RunOptions::new().run_budget(&shared))
        .unwrap();
    // One hold type: the in-process and the store's reservation in it.
    let (ha, hb): (RunHold<Reservation>, RunHold<SharedReservation>) =
        (a.hold.unwrap(), b.hold.unwrap());
    assert_eq!(a.items, b.items);
    let contents: Vec<&str> = b.items.iter().map(ContextItem::content).collect();
    assert_eq!(contents, ["doc 0", "doc 1", "doc 2"]);
    assert_eq!(hb.context_budget, ha.context_budget);
    assert_eq!(
        (
            hb.context_budget.max_tokens(),
            hb.context_budget.target_tokens()
        ),
        (110, 70)
    );
    assert_eq!((hb.input_tokens, hb.max_output_tokens), (60, Some(40)));
    assert_eq!(shared.snapshot().unwrap().reserved, usage(60, 40));
    hb.reservation.settle(usage(60, 35)).unwrap();
    ha.reservation.settle(usage(60, 35));
    assert_eq!(shared.usage().unwrap(), local.usage());

    // One run budget per run, and none on a dry run.
    let both = p.run_with(
        &items,
        RunOptions::new().run_budget(&local).run_budget(&shared),
    );
    assert!(matches!(
        both,
        Err(SelectWithinError::Selection(CupelError::PipelineConfig(m))) if m.contains("not both")
    ));
    let dry = p.run_with(&items, RunOptions::new().run_budget(&shared).dry(true));
    assert!(matches!(
        dry,
        Err(SelectWithinError::Selection(CupelError::PipelineConfig(_)))
    ));
}

/// The names deprecated by issue 50 still work for one minor version:
/// `shared_run_budget` is `run_budget`, and `SharedRunHold` is the one
/// `RunHold` over the store's reservation.
#[test]
#[allow(deprecated)]
fn the_deprecated_shared_names_still_select_and_hold() {
    use std::sync::Arc;

    use cupel_pipeline::{RunOptions, SharedRunHold};
    use cupel_run::RunTracker;
    use cupel_run::store::{MemoryStore, SharedTracker};

    let clock = ManualTimeProvider::new(t0());
    let store = Arc::new(MemoryStore::new(clock));
    let budget = RunBudget::from_parts(None, Some(TokenLimit::new(Some(100), Some(500)).unwrap()));
    let shared = SharedTracker::create(store, "run", budget).unwrap();
    let out = pipeline(200, 150, 40)
        .run_with(&docs(), RunOptions::new().shared_run_budget(&shared))
        .unwrap();
    let hold: SharedRunHold = out.hold.unwrap();
    assert_eq!(hold.max_output_tokens, Some(40));
    assert_eq!(
        shared.snapshot().unwrap().reserved,
        usage(hold.input_tokens, 40)
    );
}
