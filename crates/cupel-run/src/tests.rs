#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{DateTime, TimeDelta, Utc};

use super::*;
use crate::{FixedTimeProvider, ManualTimeProvider, RunError};

fn t0() -> DateTime<Utc> {
    "2026-01-01T12:00:00Z".parse().unwrap()
}

fn usage(input: i64, output: i64) -> TokenUsage {
    TokenUsage::new(input, output).unwrap()
}

fn limit(input: Option<i64>, output: Option<i64>) -> TokenLimit {
    TokenLimit::new(input, output).unwrap()
}

fn tokens_budget(input: Option<i64>, output: Option<i64>) -> RunBudget {
    RunBudget::new(
        None,
        Some(limit(input, output)),
        &FixedTimeProvider::new(t0()),
    )
    .unwrap()
}

fn tracker(budget: RunBudget, clock: &ManualTimeProvider) -> LocalTracker {
    LocalTracker::new(budget, clock.clone()).unwrap()
}

// ----- construction ---------------------------------------------------------

#[test]
fn negative_ceilings_are_rejected_with_their_dimension() {
    assert_eq!(
        TokenLimit::new(Some(-1), Some(5)),
        Err(RunError::NegativeTokenLimit {
            dimension: BudgetDimension::Input,
            limit: -1
        })
    );
    assert_eq!(
        TokenLimit::new(None, Some(i64::MIN)),
        Err(RunError::NegativeTokenLimit {
            dimension: BudgetDimension::Output,
            limit: i64::MIN
        })
    );
    // Zero is a valid (depleted) ceiling, and either side may be unbounded.
    assert!(TokenLimit::new(Some(0), None).is_ok());
    assert_eq!(TokenLimit::unbounded(), limit(None, None));
}

#[test]
fn negative_usage_is_rejected() {
    assert_eq!(
        TokenUsage::new(0, -3),
        Err(RunError::NegativeTokenUsage {
            dimension: BudgetDimension::Output,
            tokens: -3
        })
    );
}

#[test]
fn expired_deadline_is_rejected_at_the_boundary() {
    let clock = FixedTimeProvider::new(t0());
    // A deadline equal to now has zero time left: expired (R-2).
    // Issue 28: it is the run-budget error, phase preflight.
    let err = RunBudget::new(Some(Deadline::at(t0())), None, &clock).unwrap_err();
    let RunError::Exceeded(e) = err else {
        panic!("expected RunBudgetExceeded, got {err:?}")
    };
    assert_eq!(
        (e.phase(), e.dimension()),
        (BudgetPhase::Preflight, BudgetDimension::Deadline)
    );
    // One nanosecond later is fine.
    let later = Deadline::at(t0() + TimeDelta::nanoseconds(1));
    assert!(RunBudget::new(Some(later), None, &clock).is_ok());
    // A past deadline is rejected by the builder too, and by a tracker.
    let past = Deadline::at(t0() - TimeDelta::seconds(1));
    assert!(RunBudget::builder().deadline(past).build(&clock).is_err());
    let clock2 = ManualTimeProvider::new(t0());
    let ok = RunBudget::new(Some(later), None, &clock).unwrap();
    clock2.advance(TimeDelta::seconds(1));
    assert!(matches!(
        LocalTracker::new(ok, clock2),
        Err(RunError::Exceeded(e)) if e.phase() == BudgetPhase::Preflight
    ));
}

#[test]
fn pure_deadline_and_unlimited_budgets() {
    let clock = FixedTimeProvider::new(t0());
    let d = Deadline::after(&clock, TimeDelta::seconds(90));
    let budget = RunBudget::new(Some(d), None, &clock).unwrap();
    assert_eq!(budget.token_limit(), None);
    assert_eq!(budget.remaining_tokens(usage(5, 5)), None);
    assert_eq!(
        budget.assert_within_limit(usage(i64::MAX, i64::MAX)),
        Ok(())
    );
    // 90 s budget, 30 s elapsed -> 60 s left; 100 s elapsed -> -10 s (not clamped).
    assert_eq!(
        budget.remaining_time(t0() + TimeDelta::seconds(30)),
        Some(TimeDelta::seconds(60))
    );
    assert_eq!(
        budget.remaining_time(t0() + TimeDelta::seconds(100)),
        Some(TimeDelta::seconds(-10))
    );
    assert_eq!(RunBudget::unlimited().remaining_time(t0()), None);
    assert_eq!(RunBudget::default(), RunBudget::unlimited());
}

// ----- remaining_tokens / assert_within_limit -------------------------------

#[test]
fn remaining_tokens_per_dimension() {
    let budget = tokens_budget(Some(1_000), None);
    // input: 1000 - 250 = 750; output unbounded stays None.
    assert_eq!(
        budget.remaining_tokens(usage(250, 40)),
        Some(RemainingTokens::new(Some(750), None))
    );
    // Overshoot: 1000 - 1200 = -200.
    assert_eq!(
        budget.remaining_tokens(usage(1_200, 0)).unwrap().input(),
        Some(-200)
    );
    // Token limit with both sides unbounded: Some, with both None.
    assert_eq!(
        tokens_budget(None, None).remaining_tokens(usage(1, 1)),
        Some(RemainingTokens::new(None, None))
    );
}

#[test]
fn assert_within_limit_meets_or_exceeds_boundary() {
    let budget = tokens_budget(Some(100), Some(10));
    // One below both ceilings: fine.
    assert_eq!(budget.assert_within_limit(usage(99, 9)), Ok(()));
    // Exactly the input ceiling: fails ("meets").
    let meets = budget.assert_within_limit(usage(100, 0)).unwrap_err();
    assert_eq!(meets.dimension(), BudgetDimension::Input);
    assert_eq!(meets.phase(), BudgetPhase::Budget);
    assert_eq!((meets.limit(), meets.remaining()), (Some(100), Some(0)));
    // Exactly the output ceiling: fails on output.
    let out = budget.assert_within_limit(usage(0, 10)).unwrap_err();
    assert_eq!(out.dimension(), BudgetDimension::Output);
    // Over both: input is reported first.
    let both = budget.assert_within_limit(usage(101, 11)).unwrap_err();
    assert_eq!(both.dimension(), BudgetDimension::Input);
    assert_eq!(both.remaining(), Some(-1));
}

#[test]
fn unbounded_dimension_is_ignored() {
    let budget = tokens_budget(None, Some(10));
    assert_eq!(budget.assert_within_limit(usage(i64::MAX, 9)), Ok(()));
    let budget = tokens_budget(Some(10), None);
    assert_eq!(budget.assert_within_limit(usage(9, i64::MAX)), Ok(()));
}

#[test]
fn zero_ceiling_is_depleted_from_the_start() {
    let budget = tokens_budget(Some(0), None);
    // 0 >= 0: meets the ceiling.
    assert!(budget.assert_within_limit(TokenUsage::ZERO).is_err());
    let clock = ManualTimeProvider::new(t0());
    let err = tracker(budget, &clock).preflight().unwrap_err();
    assert_eq!(
        (err.phase(), err.dimension()),
        (BudgetPhase::Preflight, BudgetDimension::Input)
    );
}

// ----- tracker checkpoints ---------------------------------------------------

#[test]
fn preflight_fails_on_expired_deadline() {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::new(
        Some(Deadline::after(&clock, TimeDelta::seconds(10))),
        None,
        &clock,
    )
    .unwrap();
    let run = tracker(budget, &clock);
    // 9.999 s in: 1 ms left.
    clock.advance(TimeDelta::milliseconds(9_999));
    assert_eq!(
        run.preflight().unwrap().remaining_time,
        Some(TimeDelta::milliseconds(1))
    );
    clock.advance(TimeDelta::milliseconds(1));
    let err = run.preflight().unwrap_err();
    assert_eq!(err.dimension(), BudgetDimension::Deadline);
    assert_eq!(err.phase(), BudgetPhase::Preflight);
    assert_eq!(err.remaining_time(), Some(TimeDelta::zero()));
    assert_eq!(err.limit(), None);
    assert_eq!(
        err.to_string(),
        "run budget exceeded at preflight: the deadline 2026-01-01T12:00:10Z has passed \
         (now 2026-01-01T12:00:10Z, 0 ms late)"
    );
}

#[test]
fn reservation_fits_up_to_the_ceiling_then_exhausts() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    // 60 reserved, 40 left.
    let a = run
        .reserve(BudgetPhase::ProviderRequest, usage(60, 0))
        .unwrap();
    assert_eq!(run.remaining_tokens().unwrap().input(), Some(40));
    // 60 + 40 = 100 <= 100: fits exactly (R-2).
    let b = run
        .reserve(BudgetPhase::ProviderRequest, usage(40, 0))
        .unwrap();
    a.settle(usage(60, 7));
    b.settle(usage(40, 3));
    assert_eq!(run.usage(), usage(100, 10));
    // Final tally 100 == limit: fits.
    assert!(run.finalize().is_ok());
    // But the input side is now exhausted: even a zero-cost step is refused.
    let err = run
        .check(BudgetPhase::ToolExecution, TokenUsage::ZERO)
        .unwrap_err();
    assert_eq!(err.dimension(), BudgetDimension::Input);
    assert_eq!(err.remaining(), Some(0));
    assert_eq!(
        err.to_string(),
        "run budget exceeded at tool_execution: input tokens used 100 + reserved 0 meet or \
         exceed the limit of 100 (remaining 0)"
    );
}

#[test]
fn projection_one_over_is_refused_and_nothing_is_reserved() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), Some(50)), &clock);
    run.record(usage(30, 20));
    // Output left: 50 - 20 = 30; a request for 31 does not fit.
    let err = run
        .reserve(BudgetPhase::ProviderRequest, usage(10, 31))
        .unwrap_err();
    assert_eq!(err.dimension(), BudgetDimension::Output);
    assert_eq!(err.requested(), usage(10, 31));
    assert_eq!(err.remaining(), Some(30));
    assert_eq!(err.usage(), usage(30, 20));
    assert_eq!(
        err.to_string(),
        "run budget exceeded at provider_request: a request for 31 output tokens does not fit \
         the 30 remaining (limit 50, used 20, reserved 0)"
    );
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
}

#[test]
fn a_failed_checkpoint_halts_the_scope_with_the_same_error() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    let first = run
        .reserve(BudgetPhase::ToolExecution, usage(101, 0))
        .unwrap_err();
    assert!(run.is_halted());
    // A request that would fit on its own now fails with the original error.
    let again = run
        .check(BudgetPhase::ProviderRequest, usage(1, 0))
        .unwrap_err();
    assert_eq!(again, first);
    assert_eq!(run.finalize().unwrap_err(), first);
}

#[test]
fn dropping_a_reservation_releases_it() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    {
        let _r = run
            .reserve(BudgetPhase::ToolExecution, usage(70, 0))
            .unwrap();
        assert_eq!(run.snapshot().reserved, usage(70, 0));
    }
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    run.reserve(BudgetPhase::ToolExecution, usage(5, 0))
        .unwrap()
        .release();
    assert_eq!(run.usage(), TokenUsage::ZERO);
    assert_eq!(run.remaining_tokens().unwrap().input(), Some(100));
}

#[test]
fn settle_above_the_reservation_is_caught_at_finalization() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    let r = run
        .reserve(BudgetPhase::ProviderRequest, usage(90, 0))
        .unwrap();
    // The provider used 120 although 90 was projected: recorded as is.
    assert_eq!(r.settle(usage(120, 0)), usage(120, 0));
    let err = run.finalize().unwrap_err();
    assert_eq!(
        (err.phase(), err.dimension()),
        (BudgetPhase::Response, BudgetDimension::Input)
    );
    // 100 - 120 = -20 remaining.
    assert_eq!(err.remaining(), Some(-20));
    assert_eq!(
        err.to_string(),
        "run budget exceeded at response: the final tally of 120 input tokens is over the limit \
         of 100 by 20"
    );
}

#[test]
fn finalize_ignores_the_deadline() {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::new(
        Some(Deadline::after(&clock, TimeDelta::seconds(1))),
        Some(limit(Some(10), None)),
        &clock,
    )
    .unwrap();
    let run = tracker(budget, &clock);
    run.record(usage(10, 0));
    clock.advance(TimeDelta::seconds(5));
    // 10 == 10 fits; the deadline passed but the work is done (R-10).
    let snap = run.finalize().unwrap();
    assert_eq!(snap.remaining_time, Some(TimeDelta::seconds(-4)));
}

// ----- child scopes -----------------------------------------------------------

#[test]
fn child_consumption_reduces_the_parent() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(1_000), Some(100)), &clock);
    let sub = run.child(tokens_budget(Some(300), None)).unwrap();
    assert_eq!(sub.depth(), 1);
    sub.record(usage(200, 30));
    assert_eq!(run.usage(), usage(200, 30));
    // Parent: 1000 - 200 = 800 in, 100 - 30 = 70 out.
    assert_eq!(
        run.remaining_tokens(),
        Some(RemainingTokens::new(Some(800), Some(70)))
    );
    // Child: min(300 - 200, 800) = 100 in; out only bounded by the parent: 70.
    assert_eq!(
        sub.remaining_tokens(),
        Some(RemainingTokens::new(Some(100), Some(70)))
    );
}

#[test]
fn child_overage_stops_only_the_child() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(1_000), None), &clock);
    let sub = run.child(tokens_budget(Some(300), None)).unwrap();
    sub.record(usage(250, 0));
    let err = sub
        .reserve(BudgetPhase::ProviderRequest, usage(51, 0))
        .unwrap_err();
    assert_eq!(err.scope_depth(), 1);
    assert_eq!(err.limit(), Some(300));
    assert!(
        err.to_string()
            .starts_with("run budget (child scope, depth 1)")
    );
    assert!(sub.is_halted());
    assert!(!run.is_halted());
    // 1000 - 250 = 750 left for the parent.
    assert!(
        run.reserve(BudgetPhase::ProviderRequest, usage(750, 0))
            .is_ok()
    );
}

#[test]
fn parent_overage_halts_every_child() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    let a = run.child(RunBudget::unlimited()).unwrap();
    let b = run.child(RunBudget::unlimited()).unwrap();
    let grandchild = b.child(RunBudget::unlimited()).unwrap();
    a.record(usage(100, 0));
    // `a` exhausted the shared input ceiling: its next step fails at the root.
    let err = a
        .check(BudgetPhase::ToolExecution, TokenUsage::ZERO)
        .unwrap_err();
    assert_eq!(err.scope_depth(), 0);
    for holder in [&run, &b, &grandchild] {
        assert_eq!(
            holder
                .check(BudgetPhase::ProviderRequest, TokenUsage::ZERO)
                .unwrap_err(),
            err
        );
    }
}

#[test]
fn child_deadline_earlier_than_parent() {
    let clock = ManualTimeProvider::new(t0());
    let parent = RunBudget::new(
        Some(Deadline::after(&clock, TimeDelta::seconds(60))),
        None,
        &clock,
    )
    .unwrap();
    let run = tracker(parent, &clock);
    let sub = run
        .child(
            RunBudget::new(
                Some(Deadline::after(&clock, TimeDelta::seconds(10))),
                None,
                &clock,
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(sub.remaining_time(), Some(TimeDelta::seconds(10)));
    clock.advance(TimeDelta::seconds(10));
    assert_eq!(
        sub.preflight().unwrap_err().dimension(),
        BudgetDimension::Deadline
    );
    // 60 - 10 = 50 s left for the parent, which keeps going.
    assert_eq!(
        run.preflight().unwrap().remaining_time,
        Some(TimeDelta::seconds(50))
    );
    // A child whose deadline already passed cannot be created.
    let stale = RunBudget::new(
        Some(Deadline::at(t0() + TimeDelta::seconds(11))),
        None,
        &clock,
    )
    .unwrap();
    clock.advance(TimeDelta::seconds(1));
    assert!(matches!(
        run.child(stale),
        Err(RunError::Exceeded(e)) if e.phase() == BudgetPhase::Preflight
    ));
}

// ----- projected durations (R-17) ----------------------------------------------

fn deadline_tracker(seconds: i64, clock: &ManualTimeProvider) -> LocalTracker {
    let budget = RunBudget::new(
        Some(Deadline::after(clock, TimeDelta::seconds(seconds))),
        Some(limit(Some(1_000), None)),
        clock,
    )
    .unwrap();
    tracker(budget, clock)
}

fn call(input: i64, duration: TimeDelta) -> RunRequest {
    RunRequest::provider_request(usage(input, 0))
        .with_duration(duration)
        .unwrap()
}

#[test]
fn a_request_may_end_exactly_at_the_deadline() {
    let clock = ManualTimeProvider::new(t0());
    let run = deadline_tracker(30, &clock);
    clock.advance(TimeDelta::seconds(10));
    // 30 - 10 = 20 s left; a 20 s request ends exactly at the deadline: fits.
    let r = run
        .reserve_request(&call(100, TimeDelta::seconds(20)))
        .unwrap();
    assert_eq!(r.amount(), usage(100, 0));
    assert_eq!(run.snapshot().reserved, usage(100, 0));
    // Without a duration any request fits while time is left (the old rule).
    assert!(run.check(BudgetPhase::ProviderRequest, usage(1, 0)).is_ok());
}

#[test]
fn a_request_that_would_outlive_the_deadline_is_refused() {
    let clock = ManualTimeProvider::new(t0());
    let run = deadline_tracker(30, &clock);
    clock.advance(TimeDelta::seconds(10));
    // 20 s left; 20.001 s projected: refused on the deadline, before tokens.
    let err = run
        .reserve_request(&call(2_000, TimeDelta::milliseconds(20_001)))
        .unwrap_err();
    assert_eq!(
        (err.phase(), err.dimension()),
        (BudgetPhase::ProviderRequest, BudgetDimension::Deadline)
    );
    assert_eq!(
        err.requested_duration(),
        Some(TimeDelta::milliseconds(20_001))
    );
    assert_eq!(err.remaining_time(), Some(TimeDelta::seconds(20)));
    assert_eq!(err.limit(), None);
    assert_eq!(
        err.to_string(),
        "run budget exceeded at provider_request: a request projected to take 20001 ms does not \
         end before the deadline 2026-01-01T12:00:30Z (20000 ms left)"
    );
    assert!(
        err.budget_json()
            .contains(r#""requested":{"input":2000,"output":0},"requested_duration_ms":20001,"#)
    );
    // Nothing reserved, and the refusal halts the scope like any other (R-7).
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    assert!(run.is_halted());
}

#[test]
fn durations_check_every_deadline_on_the_path() {
    let clock = ManualTimeProvider::new(t0());
    let run = deadline_tracker(60, &clock);
    let sub = run
        .child_named(
            "fast",
            RunBudget::new(
                Some(Deadline::after(&clock, TimeDelta::seconds(10))),
                None,
                &clock,
            )
            .unwrap(),
        )
        .unwrap();
    // 15 s fits the run's 60 s but not the child's 10 s: the child is refused
    // (and halted); the run is not.
    let err = sub
        .check_request(&call(1, TimeDelta::seconds(15)))
        .unwrap_err();
    assert_eq!(
        (err.dimension(), err.scope_depth(), err.scope_label()),
        (BudgetDimension::Deadline, 1, Some("fast"))
    );
    assert_eq!(err.remaining_time(), Some(TimeDelta::seconds(10)));
    assert!(!run.is_halted());
    assert!(run.check_request(&call(1, TimeDelta::seconds(60))).is_ok());
    // A budget without a deadline ignores durations.
    let free = tracker(tokens_budget(Some(10), None), &clock);
    assert!(free.check_request(&call(1, TimeDelta::days(365))).is_ok());
}

#[test]
fn negative_projected_duration_is_an_error() {
    let err = RunRequest::tool_execution(usage(1, 0))
        .with_duration(TimeDelta::seconds(-5))
        .unwrap_err();
    assert_eq!(
        err,
        RunError::NegativeProjectedDuration {
            duration: TimeDelta::seconds(-5)
        }
    );
    assert_eq!(
        err.to_string(),
        "run budget projected duration must be >= 0 (got -5000 ms)"
    );
    let tiny = RunRequest::tool_execution(usage(1, 0))
        .with_duration(TimeDelta::nanoseconds(-1))
        .unwrap_err();
    assert_eq!(
        tiny.to_string(),
        "run budget projected duration must be >= 0 (got -0.000001 ms)"
    );
    // Zero is a valid projection.
    let zero = RunRequest::tool_execution(usage(1, 0))
        .with_duration(TimeDelta::zero())
        .unwrap();
    assert_eq!(
        (zero.phase(), zero.tokens(), zero.duration()),
        (
            BudgetPhase::ToolExecution,
            usage(1, 0),
            Some(TimeDelta::zero())
        )
    );
}

// ----- would_fit: asking without halting (R-19) -----------------------------------

#[test]
fn would_fit_answers_without_halting_or_reserving() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), Some(50)), &clock);
    run.record(usage(30, 0));
    // 100 - 30 = 70 input left: 71 does not fit, 70 does.
    let no = run
        .would_fit(&RunRequest::provider_request(usage(71, 0)))
        .unwrap_err();
    assert_eq!(
        (no.dimension(), no.remaining(), no.requested()),
        (BudgetDimension::Input, Some(70), usage(71, 0))
    );
    assert!(!run.is_halted());
    let yes = run
        .would_fit(&RunRequest::provider_request(usage(70, 50)))
        .unwrap();
    // Nothing was reserved by asking.
    assert_eq!(yes.reserved, TokenUsage::ZERO);
    assert_eq!(
        yes.remaining_tokens,
        Some(RemainingTokens::new(Some(70), Some(50)))
    );
    // The checkpoint with the same request halts; from then on even the probe
    // answers with the latched error.
    let halted = run
        .check(BudgetPhase::ProviderRequest, usage(71, 0))
        .unwrap_err();
    assert!(run.is_halted());
    assert_eq!(
        run.would_fit(&RunRequest::tool_execution(TokenUsage::ZERO))
            .unwrap_err(),
        halted
    );
}

// ----- cumulative counters (R-18) ------------------------------------------------

#[test]
fn a_meter_records_only_the_increase_of_a_running_total() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(10_000), Some(1_000)), &clock);
    let mut meter = run.meter();
    assert_eq!(meter.last_total(), TokenUsage::ZERO);
    // Counter: 1000/200, then 1500/260 (+500/+60), then unchanged (+0/+0).
    assert_eq!(
        meter.observe_total(usage(1_000, 200)).unwrap(),
        usage(1_000, 200)
    );
    assert_eq!(
        meter.observe_total(usage(1_500, 260)).unwrap(),
        usage(500, 60)
    );
    assert_eq!(
        meter.observe_total(usage(1_500, 260)).unwrap(),
        TokenUsage::ZERO
    );
    assert_eq!(run.usage(), usage(1_500, 260));
    assert_eq!(meter.last_total(), usage(1_500, 260));

    // Output goes down while input goes up: refused as a whole.
    let err = meter.observe_total(usage(1_600, 250)).unwrap_err();
    assert_eq!(
        err,
        RunError::UsageCounterDecreased {
            dimension: BudgetDimension::Output,
            previous: 260,
            observed: 250
        }
    );
    assert_eq!(
        err.to_string(),
        "run budget cumulative output token counter went backwards (from 260 to 250); pass \
         deltas to LocalTracker::record, or start a new meter after a reset"
    );
    assert_eq!(run.usage(), usage(1_500, 260));
    assert_eq!(meter.last_total(), usage(1_500, 260));
}

#[test]
fn a_meter_settles_reservations_and_charges_through_its_scope() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(10_000), Some(1_000)), &clock);
    let sub = run.child_named("coder", RunBudget::unlimited()).unwrap();
    // The subagent's session counter already read 400/40 when it was handed over.
    let mut meter = sub.meter_from(usage(400, 40));
    assert_eq!(meter.tracker().label(), Some("coder"));
    let r = sub
        .reserve(BudgetPhase::ProviderRequest, usage(700, 100))
        .unwrap();
    // The provider answers with its running total 1000/130: +600/+90.
    assert_eq!(
        meter.settle_total(r, usage(1_000, 130)).unwrap(),
        usage(600, 90)
    );
    assert_eq!(sub.usage(), usage(600, 90));
    // The parent is charged too: 10000 - 600 = 9400 in, 1000 - 90 = 910 out left.
    assert_eq!(
        run.remaining_tokens(),
        Some(RemainingTokens::new(Some(9_400), Some(910)))
    );
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    // A backwards total releases the reservation and records nothing.
    let r = sub
        .reserve(BudgetPhase::ProviderRequest, usage(50, 5))
        .unwrap();
    assert!(matches!(
        meter.settle_total(r, usage(999, 130)),
        Err(RunError::UsageCounterDecreased {
            dimension: BudgetDimension::Input,
            previous: 1_000,
            observed: 999
        })
    ));
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    assert_eq!(run.usage(), usage(600, 90));
}

// ----- which scope asked (labels) -------------------------------------------------

#[test]
fn errors_name_the_scope_that_made_the_request() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    // The researcher's own ceiling (500) is looser than the run's (100).
    let researcher = run
        .child_named("researcher", tokens_budget(Some(500), None))
        .unwrap();
    assert_eq!(
        (researcher.label(), researcher.depth()),
        (Some("researcher"), 1)
    );
    let err = researcher
        .reserve(BudgetPhase::ToolExecution, usage(101, 0))
        .unwrap_err();
    assert_eq!((err.scope_depth(), err.scope_label()), (0, None));
    assert_eq!(
        (err.requester_depth(), err.requester_label()),
        (1, Some("researcher"))
    );
    assert_eq!(
        err.to_string(),
        "run budget exceeded at tool_execution (requested by child scope \"researcher\", depth \
         1): a request for 101 input tokens does not fit the 100 remaining (limit 100, used 0, \
         reserved 0)"
    );
    assert!(err.budget_json().starts_with(
        r#"{"scope_depth":0,"requester_depth":1,"requester_label":"researcher","budget":"#
    ));
    // Every later holder gets the same error: the requester stays the researcher.
    let seen_by_parent = run
        .check(BudgetPhase::ProviderRequest, TokenUsage::ZERO)
        .unwrap_err();
    assert_eq!(seen_by_parent, err);
    assert_eq!(seen_by_parent.requester_label(), Some("researcher"));
}

#[test]
fn a_childs_own_limit_and_an_unnamed_grandchild() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(RunBudget::unlimited(), &clock);
    let writer = run
        .child_named("writer", tokens_budget(None, Some(10)))
        .unwrap();
    // The writer breaks its own ceiling: no "requested by" clause.
    let own = writer
        .check(BudgetPhase::ProviderRequest, usage(0, 11))
        .unwrap_err();
    assert_eq!(
        own.to_string(),
        "run budget (child scope \"writer\", depth 1) exceeded at provider_request: a request \
         for 11 output tokens does not fit the 10 remaining (limit 10, used 0, reserved 0)"
    );
    assert_eq!(
        (
            own.scope_label(),
            own.requester_depth(),
            own.requester_label()
        ),
        (Some("writer"), 1, Some("writer"))
    );
    // An unnamed grandchild of a fresh writer scope breaks the writer's ceiling.
    let writer2 = run
        .child_named("writer", tokens_budget(None, Some(10)))
        .unwrap();
    let helper = writer2.child(RunBudget::unlimited()).unwrap();
    assert_eq!(helper.label(), None);
    let err = helper
        .reserve(BudgetPhase::ToolExecution, usage(0, 12))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "run budget (child scope \"writer\", depth 1) exceeded at tool_execution (requested by \
         child scope, depth 2): a request for 12 output tokens does not fit the 10 remaining \
         (limit 10, used 0, reserved 0)"
    );
    assert!(
        err.budget_json().starts_with(
            r#"{"scope_depth":1,"scope_label":"writer","requester_depth":2,"budget":"#
        )
    );
}

#[cfg(feature = "serde")]
#[test]
fn labels_are_escaped_in_the_json_state() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(RunBudget::unlimited(), &clock);
    let odd = run
        .child_named("say \"hi\"\\\n\u{1}", tokens_budget(Some(0), None))
        .unwrap();
    let err = odd.preflight().unwrap_err();
    assert!(err.budget_json().starts_with(
        r#"{"scope_depth":1,"scope_label":"say \"hi\"\\\n\u0001","requester_depth":1,"#
    ));
    let parsed: serde_json::Value = serde_json::from_str(err.budget_json()).unwrap();
    assert_eq!(parsed["scope_label"], "say \"hi\"\\\n\u{1}");
    assert_eq!(parsed["requester_label"], "say \"hi\"\\\n\u{1}");
}

// ----- error payload -----------------------------------------------------------

#[test]
fn budget_json_has_the_full_state_in_a_fixed_order() {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::new(
        Some(Deadline::after(&clock, TimeDelta::seconds(30))),
        Some(limit(Some(100), None)),
        &clock,
    )
    .unwrap();
    let run = tracker(budget, &clock);
    run.record(usage(40, 5));
    let _held = run
        .reserve(BudgetPhase::ProviderRequest, usage(20, 0))
        .unwrap();
    clock.advance(TimeDelta::milliseconds(1_500));
    // 40 used + 20 reserved + 41 requested = 101 > 100.
    let err = run
        .reserve(BudgetPhase::ToolExecution, usage(41, 0))
        .unwrap_err();
    assert_eq!(
        err.budget_json(),
        concat!(
            r#"{"scope_depth":0,"requester_depth":0,"#,
            r#""budget":{"deadline":"2026-01-01T12:00:30Z","token_limit":{"input":100}},"#,
            r#""usage":{"input":40,"output":5},"reserved":{"input":20,"output":0},"#,
            r#""requested":{"input":41,"output":0},"remaining_tokens":{"input":40},"#,
            r#""now":"2026-01-01T12:00:01.500Z","remaining_time_ms":28500}"#
        )
    );
}

#[test]
fn converts_into_cupel_error() {
    let budget = tokens_budget(Some(1), None);
    let err = budget.assert_within_limit(usage(1, 0)).unwrap_err();
    let cupel: RunError = err.clone().into();
    assert_eq!(cupel.to_string(), err.to_string());
    assert!(matches!(cupel, RunError::Exceeded(ref e) if *e == err));
}

#[test]
fn seed_tags() {
    assert_eq!(BudgetPhase::Preflight.seed_tag(), "preflight");
    assert_eq!(BudgetPhase::ProviderRequest.seed_tag(), "budget");
    assert_eq!(BudgetPhase::ToolExecution.seed_tag(), "budget");
    assert_eq!(BudgetPhase::Budget.seed_tag(), "budget");
    assert_eq!(BudgetPhase::Response.seed_tag(), "response");
}

#[test]
fn tracker_is_send_sync_and_reservation_is_send() {
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}
    assert_send_sync::<LocalTracker>();
    assert_send::<Reservation>();
    assert_send_sync::<BudgetExceededError>();
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trip_and_validation() {
    let clock = FixedTimeProvider::new(t0());
    let budget = RunBudget::new(
        Some(Deadline::after(&clock, TimeDelta::seconds(30))),
        Some(limit(Some(100), None)),
        &clock,
    )
    .unwrap();
    let json = serde_json::to_string(&budget).unwrap();
    assert_eq!(
        json,
        r#"{"deadline":"2026-01-01T12:00:30Z","token_limit":{"input":100}}"#
    );
    assert_eq!(serde_json::from_str::<RunBudget>(&json).unwrap(), budget);
    // The error payload's "budget" member is that same serde form.
    let run = LocalTracker::new(budget, clock).unwrap();
    let err = run
        .reserve(BudgetPhase::ProviderRequest, usage(101, 0))
        .unwrap_err();
    let payload: serde_json::Value = serde_json::from_str(err.budget_json()).unwrap();
    assert_eq!(
        serde_json::from_value::<RunBudget>(payload["budget"].clone()).unwrap(),
        budget
    );
    // Negative ceilings and usages are refused on input.
    assert!(serde_json::from_str::<TokenLimit>(r#"{"input":-1}"#).is_err());
    assert!(serde_json::from_str::<TokenUsage>(r#"{"input":1,"output":-1}"#).is_err());
    assert_eq!(
        serde_json::from_str::<TokenUsage>(r#"{"input":3}"#).unwrap(),
        usage(3, 0)
    );
}

#[cfg(feature = "serde")]
#[test]
fn unknown_budget_keys_are_rejected_not_ignored() {
    // A misspelt "deadline" must not silently become an unlimited budget.
    let err = serde_json::from_str::<RunBudget>(r#"{"dedline":"2026-01-01T12:00:30Z"}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("unknown field `dedline`, expected `deadline` or `token_limit`"),
        "{err}"
    );
    // Unknown keys inside the token limit and next to valid members fail too.
    assert!(
        serde_json::from_str::<RunBudget>(r#"{"token_limit":{"input":5,"outptu":7}}"#).is_err()
    );
    assert!(serde_json::from_str::<RunBudget>(r#"{"token_limit":{"input":5},"extra":1}"#).is_err());
    assert!(serde_json::from_str::<RemainingTokens>(r#"{"inputs":5}"#).is_err());
    // The empty object is still the unlimited budget (R-1), and known keys parse.
    assert_eq!(
        serde_json::from_str::<RunBudget>("{}").unwrap(),
        RunBudget::unlimited()
    );
    assert_eq!(
        serde_json::from_str::<RunBudget>(r#"{"token_limit":{"output":7}}"#).unwrap(),
        tokens_budget(None, Some(7))
    );
}

// ----- scope lifetime (issue 31 point 5) ------------------------------------

#[test]
fn a_child_scope_entry_is_freed_when_its_last_handle_drops() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(1_000_000), None), &clock);
    // Two million short-lived subagents grew the ledger without bound; now
    // one entry is reused, and every subagent's usage stays in the root.
    for _ in 0..200_000 {
        let sub = run.child(tokens_budget(Some(10), None)).unwrap();
        sub.record(usage(2, 0));
    }
    assert_eq!(run.ledger_entries(), (2, 1));
    // 200,000 × 2 = 400,000 input tokens, all charged to the root.
    assert_eq!(run.usage(), usage(400_000, 0));
}

#[test]
fn a_scope_lives_while_any_handle_or_descendant_lives() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    let parent = run.child(tokens_budget(Some(50), None)).unwrap();
    let grandchild = parent.child(RunBudget::unlimited()).unwrap();
    let reservation = grandchild
        .reserve(BudgetPhase::ProviderRequest, usage(30, 0))
        .unwrap();
    drop(parent);
    drop(grandchild);
    // The reservation still holds the grandchild, which holds the parent:
    // root + parent + grandchild are live.
    assert_eq!(run.ledger_entries(), (3, 3));
    // The parent's ceiling (50) still applies through the open reservation's
    // scope: 30 reserved + 25 requested = 55 > 50.
    let again = reservation.tracker().clone();
    assert!(
        again
            .would_fit(&RunRequest::provider_request(usage(25, 0)))
            .is_err()
    );
    // Settling charges 30 to the whole path; dropping every handle frees both.
    reservation.settle(usage(30, 0));
    drop(again);
    assert_eq!(run.ledger_entries(), (3, 1));
    assert_eq!(run.usage(), usage(30, 0));
    // A new child reuses a freed entry and starts with clean books.
    let fresh = run.child(RunBudget::unlimited()).unwrap();
    assert_eq!(fresh.usage(), usage(0, 0));
    assert!(!fresh.is_halted());
    assert_eq!(run.ledger_entries(), (3, 2));
}

#[test]
fn a_freed_halted_child_does_not_halt_its_successor() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(100), None), &clock);
    let sub = run.child(tokens_budget(Some(5), None)).unwrap();
    assert!(
        sub.check(BudgetPhase::ProviderRequest, usage(6, 0))
            .is_err()
    );
    assert!(sub.is_halted());
    drop(sub);
    let next = run.child(tokens_budget(Some(5), None)).unwrap();
    assert!(!next.is_halted());
    assert!(
        next.check(BudgetPhase::ProviderRequest, usage(5, 0))
            .is_ok()
    );
}

#[test]
fn a_saturated_tally_does_not_claim_to_be_over_by_zero() {
    // Issue 31 (6): limit i64::MAX, two records of i64::MAX: the exact tally
    // is 2 × (2^63 − 1), over the limit, but a snapshot shows i64::MAX.
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(i64::MAX), None), &clock);
    run.record(usage(i64::MAX, 0));
    run.record(usage(i64::MAX, 0));
    let err = run.finalize().unwrap_err();
    let text = err.to_string();
    assert!(!text.contains("by 0"), "{text}");
    assert_eq!(
        text,
        "run budget exceeded at response: the final tally of input tokens is over the limit of \
         9223372036854775807 (more than 9223372036854775807, the largest count a snapshot shows)"
    );
}

// ----- issue 28 ------------------------------------------------------------------

/// Point 7, from the seed: "expired deadlines or depleted tokens raise [the
/// run-budget error] with phase preflight before any provider call". Every
/// way a run can start with its deadline already gone gives that one error.
#[test]
fn a_deadline_gone_before_the_run_starts_is_a_preflight_run_budget_error() {
    let deadline = Deadline::at(t0() + TimeDelta::seconds(5));
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::new(Some(deadline), None, &clock).unwrap();
    // The clock passes the deadline by 1.5 s before the run starts.
    clock.advance(TimeDelta::milliseconds(6500));
    let expect = |err: RunError, depth: usize, label: Option<&str>| {
        let RunError::Exceeded(e) = err else {
            panic!("expected RunBudgetExceeded, got {err:?}")
        };
        assert_eq!(e.phase(), BudgetPhase::Preflight);
        assert_eq!(e.phase().seed_tag(), "preflight");
        assert_eq!(e.dimension(), BudgetDimension::Deadline);
        assert_eq!((e.scope_depth(), e.scope_label()), (depth, label));
        e
    };
    // 1. Building the budget at that moment.
    let e = expect(
        RunBudget::new(Some(deadline), None, &clock).unwrap_err(),
        0,
        None,
    );
    // 5 s deadline, now 6.5 s: 1500 ms late.
    assert_eq!(
        e.to_string(),
        "run budget exceeded at preflight: the deadline 2026-01-01T12:00:05Z has passed \
         (now 2026-01-01T12:00:06.500Z, 1500 ms late)"
    );
    // 2. The builder.
    expect(
        RunBudget::builder()
            .deadline(deadline)
            .build(&clock)
            .unwrap_err(),
        0,
        None,
    );
    // 3. A tracker started with a budget made earlier (or deserialised).
    expect(
        LocalTracker::new(budget, clock.clone()).unwrap_err(),
        0,
        None,
    );
    // 4 and 5. Children, named or not, of a live run.
    let run = LocalTracker::new(RunBudget::unlimited(), clock.clone()).unwrap();
    expect(run.child(budget).unwrap_err(), 1, None);
    expect(
        run.child_named("researcher", budget).unwrap_err(),
        1,
        Some("researcher"),
    );
    // 6. A run whose deadline passes after it started fails its pre-flight
    // check with the same error.
    let clock = ManualTimeProvider::new(t0());
    let run = LocalTracker::new(
        RunBudget::new(Some(deadline), None, &clock).unwrap(),
        clock.clone(),
    )
    .unwrap();
    clock.advance(TimeDelta::seconds(5));
    let e = run.preflight().unwrap_err();
    assert_eq!(
        (e.phase(), e.dimension()),
        (BudgetPhase::Preflight, BudgetDimension::Deadline)
    );
    // 7. Depleted tokens at pre-flight: same type, dimension input.
    let limited = LocalTracker::new(
        RunBudget::new(None, Some(TokenLimit::new(Some(10), None).unwrap()), &clock).unwrap(),
        clock.clone(),
    )
    .unwrap();
    limited.record(usage(10, 0));
    let e = limited.preflight().unwrap_err();
    assert_eq!(
        (e.phase(), e.dimension()),
        (BudgetPhase::Preflight, BudgetDimension::Input)
    );
    // Every one converts into the one variant hosts match.
    assert!(matches!(RunError::from(e), RunError::Exceeded(_)));
}

/// Point 8: what users print reads as text.
#[test]
fn remaining_tokens_time_and_tracker_state_display() {
    assert_eq!(
        RemainingTokens::new(Some(7248), None).to_string(),
        "input 7248, output unbounded"
    );
    assert_eq!(
        RemainingTokens::new(Some(-3), Some(0)).to_string(),
        "input -3, output 0"
    );
    // 90 250 ms = 1 min 30.25 s; 3 723 000 ms = 1 h 2 min 3 s.
    assert_eq!(
        RemainingTime::new(TimeDelta::milliseconds(90_250)).to_string(),
        "1m 30.250s left"
    );
    assert_eq!(
        RemainingTime::new(TimeDelta::milliseconds(3_723_000)).to_string(),
        "1h 2m 3s left"
    );
    assert_eq!(
        RemainingTime::new(TimeDelta::milliseconds(-1500)).to_string(),
        "expired 1.500s ago"
    );
    let clock = FixedTimeProvider::new(t0());
    let budget = RunBudget::new(
        Some(Deadline::after(&clock, TimeDelta::seconds(90))),
        Some(TokenLimit::new(Some(100), None).unwrap()),
        &clock,
    )
    .unwrap();
    let run = LocalTracker::new(budget, clock).unwrap();
    run.record(usage(10, 5));
    // 100 - 10 = 90 input left; output unbounded; 90 s to the deadline.
    assert_eq!(
        run.snapshot().to_string(),
        "run budget (depth 0): used input 10, output 5 (reserved input 0, output 0); \
         tokens left: input 90, output unbounded; time: 1m 30s left (deadline 2026-01-01T12:01:30Z)"
    );
    let sub = run.child_named("tool", RunBudget::unlimited()).unwrap();
    assert_eq!(
        sub.to_string(),
        "[tool] run budget (depth 1): used input 0, output 0 (reserved input 0, output 0); \
         tokens left: input 90, output unbounded; time: 1m 30s left (deadline 2026-01-01T12:01:30Z)"
    );
    let unlimited =
        LocalTracker::new(RunBudget::unlimited(), FixedTimeProvider::new(t0())).unwrap();
    assert_eq!(
        unlimited.to_string(),
        "run budget (depth 0): used input 0, output 0 (reserved input 0, output 0); \
         tokens left: unlimited; time: no deadline"
    );
}

// ----- demand and the adaptive bridge (issue 27) -----------------------------------

#[test]
fn refused_requests_count_as_demand_on_the_requester_and_its_ancestors() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(tokens_budget(Some(1_000), None), &clock);
    let sub = run
        .child_named("sub", tokens_budget(Some(300), None))
        .unwrap();
    sub.reserve(BudgetPhase::ProviderRequest, usage(200, 10))
        .unwrap()
        .settle(usage(180, 20));
    // 180 + 150 > 300: refused by the child's ceiling; a check refuses too.
    assert!(
        sub.reserve(BudgetPhase::ProviderRequest, usage(150, 5))
            .is_err()
    );
    assert!(sub.check(BudgetPhase::ToolExecution, usage(40, 0)).is_err());
    // A probe is a question, not a request: not counted.
    assert!(
        sub.would_fit(&RunRequest::provider_request(usage(999, 0)))
            .is_err()
    );
    // refused = (150 + 40, 5 + 0); demand = usage + refused = (180 + 190, 20 + 5).
    assert_eq!(sub.refused(), usage(190, 5));
    assert_eq!(sub.demand(), usage(370, 25));
    // The run saw the same requests through its child.
    assert_eq!(run.refused(), usage(190, 5));
    assert_eq!(run.demand(), usage(370, 25));
    // A sibling's refusals are not the first child's.
    let other = run.child(tokens_budget(Some(10), None)).unwrap();
    assert!(
        other
            .reserve(BudgetPhase::ProviderRequest, usage(11, 0))
            .is_err()
    );
    assert_eq!(sub.refused(), usage(190, 5));
    assert_eq!(run.refused(), usage(201, 5)); // 190 + 11
}

#[test]
fn a_cycle_records_demand_since_tracking_per_agent_in_name_order() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(RunBudget::unlimited(), &clock);
    let long_lived = run.child_named("writer", RunBudget::unlimited()).unwrap();
    // Before the cycle: 500 input tokens that belong to an earlier cycle.
    long_lived.record(usage(500, 0));

    let mut recorder = UsageRecorder::new();
    let mut cycle = CycleDemand::input();
    cycle.track("writer", &long_lived);
    let capped = run
        .child_named("reader", tokens_budget(Some(100), None))
        .unwrap();
    cycle.track("reader", &capped);
    // The same agent on a second tracker: its demands add up.
    let helper = run.child_named("reader", RunBudget::unlimited()).unwrap();
    cycle.track("reader", &helper);

    long_lived.record(usage(70, 9)); // writer: 70 input this cycle
    capped.record(usage(60, 1));
    assert!(
        capped
            .reserve(BudgetPhase::ProviderRequest, usage(45, 0))
            .is_err()
    ); // 60 + 45 > 100
    helper.record(usage(5, 0));
    // Open reservations are neither spent nor refused: not counted.
    let _open = helper
        .reserve(BudgetPhase::ProviderRequest, usage(1_000, 0))
        .unwrap();

    // reader = 60 + 45 (refused) + 5 = 110; writer = 70.
    let demand = cycle.demand().unwrap();
    assert_eq!(
        demand.into_iter().collect::<Vec<_>>(),
        vec![("reader", 110), ("writer", 70)]
    );
    cycle.record_into(&mut recorder).unwrap();
    assert_eq!(recorder.last_total(), Some(180));
    // The largest agent of the cycle is the reader: ceil(180 × 1.0) = 180
    // beats a = 110, so the suggestion is the total.
    assert_eq!(recorder.suggest_token_budget(1, Decimal::ZERO), 180);
}

#[test]
fn an_output_cycle_and_an_empty_cycle() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(RunBudget::unlimited(), &clock);
    let mut recorder = UsageRecorder::new();

    let mut cycle = CycleDemand::output();
    assert_eq!(cycle.dimension(), BudgetDimension::Output);
    cycle.track("a", &run);
    run.record(usage(1_000, 42));
    cycle.record_into(&mut recorder).unwrap();
    assert_eq!(recorder.last_total(), Some(42));

    // No agent tracked: an idle cycle (total 0), agent "a" gets a zero.
    CycleDemand::input().record_into(&mut recorder).unwrap();
    assert_eq!((recorder.cycles(), recorder.last_total()), (2, Some(0)));

    // An empty agent name is the recorder's error; nothing is recorded.
    let mut bad = CycleDemand::input();
    bad.track(" ", &run);
    assert!(matches!(
        bad.record_into(&mut recorder),
        Err(UsageError::EmptyAgentName { cycle: 3 })
    ));
    assert_eq!(recorder.cycles(), 2);
}

#[test]
fn a_suggestion_becomes_a_run_budget_or_a_context_budget() {
    let clock = FixedTimeProvider::new(t0());
    let mut recorder = UsageRecorder::new();
    recorder.record_cycle([("agent", 1_000)]).unwrap();
    // ceil(1,000 × 1.5) = 1,500.
    let s = recorder.suggest(10, "0.5".parse().unwrap());
    assert_eq!(s.budget, 1_500);

    assert_eq!(
        s.token_limit(BudgetDimension::Output).unwrap(),
        limit(None, Some(1_500))
    );
    let err = s.token_limit(BudgetDimension::Deadline).unwrap_err();
    assert!(err.to_string().contains("not deadline"), "{err}");

    let deadline = Deadline::at(t0() + TimeDelta::minutes(5));
    let rb = s
        .run_budget(BudgetDimension::Input, Some(deadline), &clock)
        .unwrap();
    assert_eq!(rb.token_limit(), Some(limit(Some(1_500), None)));
    assert_eq!(rb.deadline(), Some(deadline));
    // A deadline already past is the usual pre-flight failure.
    let past = Deadline::at(t0() - TimeDelta::seconds(1));
    assert!(matches!(
        s.run_budget(BudgetDimension::Input, Some(past), &clock),
        Err(RunError::Exceeded(_))
    ));

    // max = 1,500 + 200, target = 1,500.
    let cb = s.context_budget(200).unwrap();
    assert_eq!(
        (cb.max_tokens(), cb.target_tokens(), cb.output_reserve()),
        (1_700, 1_500, 200)
    );
    assert!(matches!(
        s.context_budget(-1),
        Err(cupel_core::CupelError::InvalidArgument(_))
    ));
    let huge = AdaptiveSuggestion {
        budget: i64::MAX,
        ..s
    };
    assert!(matches!(
        huge.context_budget(1),
        Err(cupel_core::CupelError::TokenOverflow { total, .. }) if total == i128::from(i64::MAX) + 1
    ));
}

/// Issue 27's starvation case: a suggestion used as the next hard cap. The
/// agent needs ten 100-token requests per cycle and stops at its first
/// refusal. Counting demand, each capped cycle asks for one refused request
/// more than it got, so the cap climbs 500 → 600 → ... → 1,000 and holds
/// (u dominates: the single agent's total is the cycle's, and the means
/// trail behind it). Counting usage alone it would stay at 500 forever.
#[test]
fn a_suggestion_used_as_a_cap_grows_back_to_the_demand() {
    let clock = ManualTimeProvider::new(t0());
    let run = tracker(RunBudget::unlimited(), &clock);
    let mut recorder = UsageRecorder::new();
    let mut cap = 500;
    let mut caps = vec![cap];
    for _ in 0..7 {
        let budget = tokens_budget(Some(cap), None);
        let agent = run.child_named("agent", budget).unwrap();
        let mut cycle = CycleDemand::input();
        cycle.track("agent", &agent);
        for _ in 0..10 {
            match agent.reserve(BudgetPhase::ProviderRequest, usage(100, 0)) {
                Ok(hold) => {
                    hold.settle(usage(100, 0));
                }
                Err(_) => break,
            }
        }
        cycle.record_into(&mut recorder).unwrap();
        cap = recorder.suggest_token_budget(cap, Decimal::ZERO);
        caps.push(cap);
    }
    assert_eq!(caps, [500, 600, 700, 800, 900, 1_000, 1_000, 1_000]);
}

/// The names before issue 50's renames still compile, as deprecated
/// aliases of the new ones (ARCHITECTURE.md, Glossary), until 0.3.
#[test]
#[allow(deprecated)]
fn the_old_budget_names_are_aliases_of_the_new() {
    use crate::store::{BudgetStore, MemoryStore, RunStore};
    let clock = ManualTimeProvider::new("2026-03-01T09:00:00Z".parse().unwrap());
    let budget = RunBudget::builder()
        .token_limit(TokenLimit::new(Some(100), None).unwrap())
        .build(&clock)
        .unwrap();
    let old: crate::BudgetTracker = LocalTracker::new(budget, clock.clone()).unwrap();
    let snapshot: crate::BudgetSnapshot = old.snapshot();
    let _: &RunSnapshot = &snapshot;
    let _: Option<crate::BudgetRequest> = None::<RunRequest>;
    let _: Option<crate::BudgetSuggestion> = None::<AdaptiveSuggestion>;
    let _: Option<crate::BudgetCandidates> = None::<AdaptiveCandidates>;
    // Every `RunStore` is a `BudgetStore`: old bounds and trait objects work.
    fn old_bound<S: BudgetStore>(store: &S) -> &dyn RunStore {
        store
    }
    let store = MemoryStore::new(clock);
    let _: &dyn BudgetStore = &store;
    assert!(format!("{:?}", old_bound(&store)).contains("MemoryStore"));
}
