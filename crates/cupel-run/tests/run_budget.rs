//! Run budget shared across threads: an orchestrator with three subagents on a
//! manual clock, a concurrent-reservation stress test, and the tracing fields.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use chrono::{DateTime, TimeDelta, Utc};
use cupel_run::{
    BudgetDimension, BudgetExceededError, BudgetPhase, Deadline, LocalTracker, ManualTimeProvider,
    RunBudget, RunRequest, TokenLimit, TokenUsage,
};
use proptest::prelude::*;

fn t0() -> DateTime<Utc> {
    "2026-03-01T09:00:00Z".parse().unwrap()
}

fn usage(input: i64, output: i64) -> TokenUsage {
    TokenUsage::new(input, output).unwrap()
}

/// One subagent turn: a provider call then a tool call, each reserved, run
/// and settled. Returns the first budget error.
fn subagent_turn(
    budget: &LocalTracker,
    call: TokenUsage,
    tool: TokenUsage,
) -> Result<(), BudgetExceededError> {
    budget.preflight()?;
    let r = budget.reserve(BudgetPhase::ProviderRequest, call)?;
    r.settle(call);
    let r = budget.reserve(BudgetPhase::ToolExecution, tool)?;
    r.settle(tool);
    Ok(())
}

#[test]
fn parent_and_three_subagents_share_one_budget() {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::builder()
        .deadline(Deadline::after(&clock, TimeDelta::seconds(60)))
        .token_limit(TokenLimit::new(Some(1_000), Some(300)).unwrap())
        .build(&clock)
        .unwrap();
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    run.preflight().unwrap();

    // The parent's own first call: projected 200/50, actual 180/40.
    run.reserve(BudgetPhase::ProviderRequest, usage(200, 50))
        .unwrap()
        .settle(usage(180, 40));

    // Three subagents hold clones of the same tracker ("the same object").
    thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let sub = run.clone();
                s.spawn(move || subagent_turn(&sub, usage(100, 20), usage(50, 10)))
            })
            .collect();
        for h in handles {
            h.join().unwrap().unwrap();
        }
    });
    clock.advance(TimeDelta::seconds(20));

    // Each subagent used 100 + 50 = 150 in and 20 + 10 = 30 out.
    // Parent view: 180 + 3*150 = 630 in, 40 + 3*30 = 130 out;
    // remaining 1000 - 630 = 370 in, 300 - 130 = 170 out; 60 - 20 = 40 s left.
    let snap = run.preflight().unwrap();
    assert_eq!(snap.usage, usage(630, 130));
    assert_eq!(
        snap.remaining_tokens.map(|r| (r.input(), r.output())),
        Some((Some(370), Some(170)))
    );
    assert_eq!(snap.remaining_time, Some(TimeDelta::seconds(40)));

    // Second round: subagent 0 asks for more than the 370 input tokens left.
    // Its error propagates and halts everyone, including the parent.
    let go = Barrier::new(3);
    let errors: Vec<Result<(), BudgetExceededError>> = thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let sub = run.clone();
                let go = &go;
                s.spawn(move || {
                    if i == 0 {
                        let r = subagent_turn(&sub, usage(400, 10), usage(0, 0));
                        go.wait();
                        r
                    } else {
                        go.wait();
                        // Would fit on its own (10 <= 370), but the run is halted.
                        subagent_turn(&sub, usage(10, 1), usage(0, 0))
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let first = errors[0].clone().unwrap_err();
    assert_eq!(
        (first.phase(), first.dimension()),
        (BudgetPhase::ProviderRequest, BudgetDimension::Input)
    );
    assert_eq!(
        (first.remaining(), first.requested()),
        (Some(370), usage(400, 10))
    );
    for other in &errors[1..] {
        assert_eq!(other.as_ref().unwrap_err(), &first);
    }
    assert_eq!(run.finalize().unwrap_err(), first);
    // Nothing was charged by the refused requests.
    assert_eq!(run.usage(), usage(630, 130));
}

#[test]
fn child_scopes_on_threads_charge_the_parent() {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::builder()
        .deadline(Deadline::after(&clock, TimeDelta::seconds(60)))
        .token_limit(TokenLimit::new(Some(1_000), None).unwrap())
        .build(&clock)
        .unwrap();
    let run = LocalTracker::new(budget, clock.clone()).unwrap();

    // Three subagents, each capped at 200 input tokens and 30 s.
    let children: Vec<LocalTracker> = (0..3)
        .map(|_| {
            let child_budget = RunBudget::builder()
                .deadline(Deadline::after(&clock, TimeDelta::seconds(30)))
                .token_limit(TokenLimit::new(Some(200), None).unwrap())
                .build(&clock)
                .unwrap();
            run.child(child_budget).unwrap()
        })
        .collect();

    let results: Vec<_> = thread::scope(|s| {
        let handles: Vec<_> = children
            .iter()
            .enumerate()
            .map(|(i, child)| {
                s.spawn(move || {
                    // Child 2 overruns its own 200-token cap: 150 + 60 = 210 > 200.
                    let second = if i == 2 { 60 } else { 50 };
                    subagent_turn(child, usage(150, 0), usage(second, 0))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results[0].is_ok() && results[1].is_ok());
    let err = results[2].as_ref().unwrap_err();
    assert_eq!(
        (err.phase(), err.scope_depth(), err.limit()),
        (BudgetPhase::ToolExecution, 1, Some(200))
    );
    // The child's overage stops that child only; the parent charged
    // 200 + 200 + 150 = 550 and has 450 left.
    assert!(!run.is_halted());
    assert!(children[2].is_halted());
    assert_eq!(run.usage(), usage(550, 0));
    assert_eq!(run.remaining_tokens().unwrap().input(), Some(450));

    // The children's 30 s deadline passes before the parent's 60 s.
    clock.advance(TimeDelta::seconds(30));
    let late = children[0].preflight().unwrap_err();
    assert_eq!(late.dimension(), BudgetDimension::Deadline);
    assert!(run.preflight().is_ok());
}

/// What a [`stress`] run did.
#[derive(Debug, PartialEq, Eq)]
struct StressOutcome {
    /// Reservations admitted.
    admitted: usize,
    /// Reservations refused (each thread stops at its first refusal).
    refused: usize,
    /// The tracker's final input usage.
    total: i64,
}

/// 8 threads reserve random costs against one ceiling at the same time; the
/// sum of usage and reservations may never pass the ceiling, and every
/// settled token is accounted for.
fn stress(limit: i64, costs: &[Vec<(i64, i64)>]) -> StressOutcome {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::new(
        None,
        Some(TokenLimit::new(Some(limit), Some(limit)).unwrap()),
        &clock,
    )
    .unwrap();
    let run = LocalTracker::new(budget, clock).unwrap();
    let settled = Arc::new(AtomicI64::new(0));
    let start = Barrier::new(costs.len());
    let violations = Mutex::new(Vec::new());
    let counts = Mutex::new((0usize, 0usize));
    thread::scope(|s| {
        for thread_costs in costs {
            let run = run.clone();
            let settled = Arc::clone(&settled);
            let (start, violations, counts) = (&start, &violations, &counts);
            s.spawn(move || {
                start.wait();
                let (mut admitted, mut refused) = (0, 0);
                for &(cost, actual_part) in thread_costs {
                    let Ok(r) = run.reserve(BudgetPhase::ProviderRequest, usage(cost, 0)) else {
                        refused += 1;
                        break;
                    };
                    admitted += 1;
                    // Consistent view under the lock: committed <= limit.
                    let snap = run.snapshot();
                    let left = snap.remaining_tokens.and_then(|t| t.input()).unwrap();
                    if left < 0 {
                        violations.lock().unwrap().push(left);
                    }
                    // Settle with at most what was reserved.
                    let actual = cost.min(actual_part);
                    r.settle(usage(actual, 0));
                    settled.fetch_add(actual, Ordering::SeqCst);
                }
                let mut c = counts.lock().unwrap();
                c.0 += admitted;
                c.1 += refused;
            });
        }
    });
    assert_eq!(violations.into_inner().unwrap(), Vec::<i64>::new());
    let total = run.usage().input();
    assert!(total <= limit, "total {total} passed the limit {limit}");
    assert_eq!(total, settled.load(Ordering::SeqCst));
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    let (admitted, refused) = counts.into_inner().unwrap();
    StressOutcome {
        admitted,
        refused,
        total,
    }
}

#[test]
fn eight_threads_fill_a_budget_exactly() {
    // 8 threads x 25 reservations of 5 tokens = 1000 tokens wanted, 1000
    // allowed. Committed tokens are always a multiple of 5, so a reservation
    // is refused only once committed = 1000; before the 200th is admitted it
    // is at most 995 and 995 + 5 <= 1000. Every reservation fits, the last
    // one lands exactly on the ceiling, and each settles at its 5 tokens.
    let costs = vec![vec![(5, 5); 25]; 8];
    assert_eq!(
        stress(1_000, &costs),
        StressOutcome {
            admitted: 200,
            refused: 0,
            total: 1_000
        }
    );
}

#[test]
fn eight_threads_asking_for_twice_the_budget_never_pass_it() {
    // 8 x 50 x 5 = 2000 tokens wanted, 1000 allowed. As above a refusal needs
    // committed = 1000, i.e. exactly 200 admitted reservations (each settling
    // at 5), and after the first refusal the run is halted, so no 201st is
    // admitted: total exactly 1000. 200 admissions complete at most 4 of the
    // 8 threads (50 each); every other thread stops at one refusal.
    let costs = vec![vec![(5, 5); 50]; 8];
    let outcome = stress(1_000, &costs);
    assert_eq!((outcome.admitted, outcome.total), (200, 1_000));
    assert!(
        (4..=8).contains(&outcome.refused),
        "refused {}",
        outcome.refused
    );
}

/// 8 subagent threads reserve through child scopes with their own input
/// ceilings under one run ceiling, until refused; `costs[i]` is the cost of
/// every reservation of thread `i`. Returns each child's final usage.
fn child_stress(run_limit: i64, child_limits: &[i64], costs: &[i64]) -> Vec<i64> {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::new(
        None,
        Some(TokenLimit::new(Some(run_limit), None).unwrap()),
        &clock,
    )
    .unwrap();
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    let children: Vec<LocalTracker> = child_limits
        .iter()
        .enumerate()
        .map(|(i, &cap)| {
            let b = RunBudget::new(
                None,
                Some(TokenLimit::new(Some(cap), None).unwrap()),
                &clock,
            )
            .unwrap();
            run.child_named(format!("sub-{i}"), b).unwrap()
        })
        .collect();
    let start = Barrier::new(children.len());
    let violations = Mutex::new(Vec::new());
    let settled: Vec<i64> = thread::scope(|s| {
        let handles: Vec<_> = children
            .iter()
            .zip(costs)
            .zip(child_limits)
            .map(|((child, &cost), &cap)| {
                let (run, start, violations) = (&run, &start, &violations);
                s.spawn(move || {
                    start.wait();
                    let mut mine = 0;
                    // Bounded: each admitted reservation adds cost >= 1 to
                    // a child capped at `cap`.
                    while let Ok(r) = child.reserve(BudgetPhase::ProviderRequest, usage(cost, 0)) {
                        // Neither the child's ceiling nor the run's is passed
                        // while reservations are in flight.
                        let c = child.snapshot();
                        if c.usage.input() + c.reserved.input() > cap {
                            violations.lock().unwrap().push(("child", c.usage.input()));
                        }
                        let p = run.snapshot();
                        if p.usage.input() + p.reserved.input() > run_limit {
                            violations.lock().unwrap().push(("run", p.usage.input()));
                        }
                        r.settle(usage(cost, 0));
                        mine += cost;
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(violations.into_inner().unwrap(), Vec::new());
    let usages: Vec<i64> = children.iter().map(|c| c.usage().input()).collect();
    // Totals add up: each child's books match what its thread settled, and
    // the run's usage is the sum of its children's.
    assert_eq!(usages, settled);
    assert_eq!(run.usage().input(), usages.iter().sum::<i64>());
    for (u, cap) in usages.iter().zip(child_limits) {
        assert!(u <= cap, "child used {u} of {cap}");
    }
    assert!(run.usage().input() <= run_limit);
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
    usages
}

#[test]
fn eight_threads_through_child_scopes_respect_every_ceiling() {
    // Run ceiling 1000; child caps 100, 120, ..., 240 (sum 1360); every
    // reservation is 10 tokens. All amounts are multiples of 10, so a child
    // is refused by its own cap only at exactly its cap, and by the run only
    // at exactly 1000. The children want 1360 > 1000, so the run's ceiling
    // must be met: the run ends at exactly 1000, no child above its cap.
    let caps: Vec<i64> = (0..8).map(|i| 100 + 20 * i).collect();
    let usages = child_stress(1_000, &caps, &[10; 8]);
    assert_eq!(usages.iter().sum::<i64>(), 1_000);
}

#[test]
fn child_caps_below_the_run_ceiling_are_each_filled() {
    // Caps 50 x 8 = 400 under a run ceiling of 1000: the run's ceiling never
    // binds, so every child is stopped by its own cap, exactly at it
    // (10 divides 50).
    let usages = child_stress(1_000, &[50; 8], &[10; 8]);
    assert_eq!(usages, vec![50; 8]);
}

#[test]
fn the_deadline_passing_mid_run_stops_every_holder() {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::builder()
        .deadline(Deadline::after(&clock, TimeDelta::seconds(60)))
        .token_limit(TokenLimit::new(Some(i64::MAX), None).unwrap())
        .build(&clock)
        .unwrap();
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    // Four subagents: two clones of the run, a named child, and a grandchild.
    let child = run
        .child_named("researcher", RunBudget::unlimited())
        .unwrap();
    let grandchild = child.child(RunBudget::unlimited()).unwrap();
    let holders = [run.clone(), run.clone(), child.clone(), grandchild.clone()];

    // Every subagent completes one step before the clock moves, then keeps
    // stepping until a checkpoint refuses; the main thread moves the clock
    // 61 s while they run.
    let started = Barrier::new(holders.len() + 1);
    let errors: Vec<(usize, BudgetExceededError)> = thread::scope(|s| {
        let handles: Vec<_> = holders
            .iter()
            .map(|h| {
                let started = &started;
                s.spawn(move || {
                    h.reserve(BudgetPhase::ProviderRequest, usage(1, 0))
                        .unwrap()
                        .settle(usage(1, 0));
                    started.wait();
                    let mut steps = 1;
                    loop {
                        match h.reserve(BudgetPhase::ToolExecution, usage(1, 0)) {
                            Ok(r) => {
                                r.settle(usage(1, 0));
                                steps += 1;
                            }
                            Err(e) => return (steps, e),
                        }
                    }
                })
            })
            .collect();
        started.wait();
        clock.advance(TimeDelta::seconds(61));
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    // The first refusal latched the run's deadline error (the root's
    // deadline is checked first), and every holder got that same error:
    // 60 s deadline, clock at +61 s -> 1 s late.
    let first = &errors[0].1;
    assert_eq!(first.dimension(), BudgetDimension::Deadline);
    assert_eq!(first.phase(), BudgetPhase::ToolExecution);
    assert_eq!(first.scope_depth(), 0);
    assert_eq!(first.remaining_time(), Some(TimeDelta::seconds(-1)));
    for (_, e) in &errors {
        assert_eq!(e, first);
    }
    // Every holder, on every checkpoint, now gets the deadline error.
    for h in [&run, &child, &grandchild] {
        assert_eq!(h.preflight().unwrap_err(), *first);
        assert_eq!(
            h.check(BudgetPhase::ProviderRequest, TokenUsage::ZERO)
                .unwrap_err(),
            *first
        );
        assert_eq!(
            h.would_fit(&RunRequest::tool_execution(TokenUsage::ZERO))
                .unwrap_err(),
            *first
        );
    }
    // The books: every step that passed was settled at 1 token.
    let steps: i64 = errors.iter().map(|(n, _)| i64::try_from(*n).unwrap()).sum();
    assert_eq!(run.usage().input(), steps);
    assert_eq!(run.snapshot().reserved, TokenUsage::ZERO);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn concurrent_reservations_never_pass_the_limit(
        limit in 0i64..2_000,
        costs in prop::collection::vec(
            prop::collection::vec((0i64..300, 0i64..300), 1..40),
            8,
        ),
    ) {
        stress(limit, &costs);
    }

    /// Random child caps and costs: no child passes its cap, the run never
    /// passes its ceiling, and the books add up.
    #[test]
    fn concurrent_child_scopes_never_pass_a_ceiling(
        run_limit in 0i64..1_500,
        caps in prop::collection::vec(0i64..400, 8),
        costs in prop::collection::vec(1i64..60, 8),
    ) {
        child_stress(run_limit, &caps, &costs);
    }
}

// ----- tracing fields ------------------------------------------------------------

mod capture {
    use std::fmt;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::{Event, Subscriber};
    use tracing_subscriber::layer::{Context, Layer};

    /// One event's fields as `(name, rendered value)` pairs.
    pub(crate) type EventFields = Vec<(String, String)>;

    /// Every budget event seen.
    #[derive(Clone, Default)]
    pub(crate) struct Capture(pub(crate) Arc<Mutex<Vec<EventFields>>>);

    struct Fields(Vec<(String, String)>);
    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0.push((field.name().to_owned(), format!("{value:?}")));
        }
        fn record_i64(&mut self, field: &Field, value: i64) {
            self.0.push((field.name().to_owned(), value.to_string()));
        }
        fn record_u64(&mut self, field: &Field, value: u64) {
            self.0.push((field.name().to_owned(), value.to_string()));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push((field.name().to_owned(), value.to_owned()));
        }
    }

    impl<S: Subscriber> Layer<S> for Capture {
        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            if event.metadata().target() == cupel_run::RUN_BUDGET_TRACING_TARGET {
                let mut fields = Fields(Vec::new());
                event.record(&mut fields);
                self.0.lock().unwrap().push(fields.0);
            }
        }
    }
}

#[test]
fn checkpoints_emit_remaining_time_and_tokens() {
    use tracing_subscriber::layer::SubscriberExt;

    let capture = capture::Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    tracing::subscriber::with_default(subscriber, || {
        // Other tests on other threads may have registered these callsites
        // while no subscriber was listening; recompute their interest now
        // that this one is (tracing caches it per callsite).
        tracing::callsite::rebuild_interest_cache();
        let clock = ManualTimeProvider::new(t0());
        let budget = RunBudget::builder()
            .deadline(Deadline::after(&clock, TimeDelta::seconds(10)))
            .token_limit(TokenLimit::new(Some(100), None).unwrap())
            .build(&clock)
            .unwrap();
        let run = LocalTracker::new(budget, clock.clone()).unwrap();
        run.preflight().unwrap();
        clock.advance(TimeDelta::milliseconds(2_500));
        // Reserve 30: after the reservation 100 - 30 = 70 remain, 7.5 s left.
        let _r = run
            .reserve(BudgetPhase::ProviderRequest, usage(30, 0))
            .unwrap();
        // Asking is not a checkpoint: would_fit emits nothing (R-19).
        assert!(
            run.would_fit(&RunRequest::tool_execution(usage(70, 0)))
                .is_ok()
        );
        assert!(
            run.would_fit(&RunRequest::tool_execution(usage(71, 0)))
                .is_err()
        );
        let _ = run.reserve(BudgetPhase::ToolExecution, usage(71, 0));
    });
    let events = capture.0.lock().unwrap();
    assert_eq!(events.len(), 3);
    let get =
        |e: &Vec<(String, String)>, k: &str| e.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get(&events[0], "phase").as_deref(), Some("preflight"));
    assert_eq!(
        get(&events[0], "budget_remaining_time").as_deref(),
        Some("10000")
    );
    assert_eq!(
        get(&events[0], "budget_remaining_tokens.input").as_deref(),
        Some("100")
    );
    // Unbounded output: the field is left out.
    assert_eq!(get(&events[0], "budget_remaining_tokens.output"), None);
    assert_eq!(
        get(&events[1], "budget_remaining_time").as_deref(),
        Some("7500")
    );
    assert_eq!(
        get(&events[1], "budget_remaining_tokens.input").as_deref(),
        Some("70")
    );
    // The refused request: dimension and JSON state are attached.
    assert_eq!(get(&events[2], "phase").as_deref(), Some("tool_execution"));
    assert_eq!(get(&events[2], "dimension").as_deref(), Some("input"));
    assert_eq!(get(&events[2], "requester_depth").as_deref(), Some("0"));
    assert!(
        get(&events[2], "budget")
            .unwrap()
            .starts_with(r#"{"scope_depth":0"#)
    );
}

// ----- a reference model ------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    Record(i64),
    Reserve(i64),
    SettleOldest(i64),
    ReleaseNewest,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0i64..60).prop_map(Op::Record),
        (0i64..80).prop_map(Op::Reserve),
        (0i64..80).prop_map(Op::SettleOldest),
        Just(Op::ReleaseNewest),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// One thread, random operations, compared with the rules of R-2, R-6,
    /// R-7 and R-11 written out as plain arithmetic.
    #[test]
    fn tracker_follows_the_reference_model(
        limit in 0i64..300,
        ops in prop::collection::vec(op(), 0..40),
    ) {
        let clock = ManualTimeProvider::new(t0());
        let budget = RunBudget::new(None, Some(TokenLimit::new(Some(limit), None).unwrap()), &clock)
            .unwrap();
        let run = LocalTracker::new(budget, clock).unwrap();
        let (mut used, mut held): (i64, Vec<(i64, cupel_run::Reservation)>) = (0, Vec::new());
        let mut halted = false;
        for op in ops {
            match op {
                Op::Record(n) => {
                    run.record(usage(n, 0));
                    used += n;
                }
                Op::Reserve(n) => {
                    let reserved: i64 = held.iter().map(|(c, _)| c).sum();
                    let committed = used + reserved;
                    // Admitted iff not halted, not depleted, and no overshoot.
                    let admit = !halted && committed < limit && committed + n <= limit;
                    match run.reserve(BudgetPhase::ProviderRequest, usage(n, 0)) {
                        Ok(r) => {
                            prop_assert!(admit);
                            held.push((n, r));
                        }
                        Err(_) => {
                            prop_assert!(!admit);
                            halted = true;
                        }
                    }
                }
                Op::SettleOldest(actual) => {
                    if !held.is_empty() {
                        let (_, r) = held.remove(0);
                        r.settle(usage(actual, 0));
                        used += actual;
                    }
                }
                Op::ReleaseNewest => {
                    if let Some((_, r)) = held.pop() {
                        r.release();
                    }
                }
            }
            let reserved: i64 = held.iter().map(|(c, _)| c).sum();
            let snap = run.snapshot();
            prop_assert_eq!(snap.usage, usage(used, 0));
            prop_assert_eq!(snap.reserved, usage(reserved, 0));
            prop_assert_eq!(snap.halted, halted);
            prop_assert_eq!(
                snap.remaining_tokens.and_then(|r| r.input()),
                Some(limit - used - reserved)
            );
        }
        // Finalization: halted -> the latched error; else fits iff used <= limit.
        drop(held);
        prop_assert_eq!(run.finalize().is_ok(), !halted && used <= limit);
    }

    /// The pure helpers agree with their definitions.
    #[test]
    fn helpers_match_their_definitions(
        input_limit in prop::option::of(0i64..1_000),
        output_limit in prop::option::of(0i64..1_000),
        input in 0i64..2_000,
        output in 0i64..2_000,
    ) {
        let clock = ManualTimeProvider::new(t0());
        let budget = RunBudget::new(
            None,
            Some(TokenLimit::new(input_limit, output_limit).unwrap()),
            &clock,
        )
        .unwrap();
        let used = usage(input, output);
        let left = budget.remaining_tokens(used).unwrap();
        prop_assert_eq!(left.input(), input_limit.map(|l| l - input));
        prop_assert_eq!(left.output(), output_limit.map(|l| l - output));
        let over = input_limit.is_some_and(|l| input >= l) || output_limit.is_some_and(|l| output >= l);
        prop_assert_eq!(budget.assert_within_limit(used).is_err(), over);
    }
}

// ----- messages ------------------------------------------------------------------

/// Every kind of budget message and construction error, one per line, with
/// the JSON state of the first: reviewed by hand in the snapshot.
#[test]
fn error_messages_are_pinned() {
    let clock = ManualTimeProvider::new(t0());
    let budget = RunBudget::builder()
        .deadline(Deadline::after(&clock, TimeDelta::seconds(5)))
        .token_limit(TokenLimit::new(Some(100), Some(40)).unwrap())
        .build(&clock)
        .unwrap();
    let mut lines = Vec::new();

    // Does not fit: 30 used, a request for 71 input tokens (100 - 30 = 70 left).
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    run.record(usage(30, 0));
    let e = run
        .reserve(BudgetPhase::ProviderRequest, usage(71, 0))
        .unwrap_err();
    lines.push(e.to_string());
    lines.push(e.budget_json().to_owned());

    // Depleted: 40 output tokens used of 40, in a child scope two levels down
    // (the root is unlimited, so the child's own ceiling is the one reported).
    let run = LocalTracker::new(RunBudget::unlimited(), clock.clone()).unwrap();
    let sub = run.child(RunBudget::unlimited()).unwrap();
    let sub2 = sub
        .child(
            RunBudget::new(None, Some(TokenLimit::new(None, Some(40)).unwrap()), &clock).unwrap(),
        )
        .unwrap();
    sub2.record(usage(0, 40));
    lines.push(
        sub2.check(BudgetPhase::ToolExecution, TokenUsage::ZERO)
            .unwrap_err()
            .to_string(),
    );

    // A named child's request breaks the run's ceiling: the message names
    // the child as the requester; the JSON state carries its depth and label.
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    run.record(usage(90, 0));
    let researcher = run
        .child_named("researcher", RunBudget::unlimited())
        .unwrap();
    let e = researcher
        .reserve(BudgetPhase::ProviderRequest, usage(11, 0))
        .unwrap_err();
    lines.push(e.to_string());
    lines.push(e.budget_json().to_owned());

    // An unnamed grandchild breaks a named child's ceiling.
    let run = LocalTracker::new(RunBudget::unlimited(), clock.clone()).unwrap();
    let writer = run
        .child_named(
            "writer",
            RunBudget::new(None, Some(TokenLimit::new(Some(10), None).unwrap()), &clock).unwrap(),
        )
        .unwrap();
    let helper = writer.child(RunBudget::unlimited()).unwrap();
    lines.push(
        helper
            .reserve(BudgetPhase::ToolExecution, usage(12, 0))
            .unwrap_err()
            .to_string(),
    );

    // A request projected to take 6 s with 5 s left (R-17).
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    let e = run
        .reserve_request(
            &RunRequest::provider_request(usage(10, 0))
                .with_duration(TimeDelta::seconds(6))
                .unwrap(),
        )
        .unwrap_err();
    lines.push(e.to_string());
    lines.push(e.budget_json().to_owned());

    // Final tally over: 130 input tokens of 100.
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    run.record(usage(130, 0));
    lines.push(run.finalize().unwrap_err().to_string());

    // Deadline: 5 s budget, clock at +7.25 s.
    let run = LocalTracker::new(budget, clock.clone()).unwrap();
    clock.advance(TimeDelta::milliseconds(7_250));
    lines.push(run.preflight().unwrap_err().to_string());

    // Construction errors.
    lines.push(TokenLimit::new(Some(-5), None).unwrap_err().to_string());
    lines.push(TokenUsage::new(0, -1).unwrap_err().to_string());
    lines.push(
        RunRequest::tool_execution(TokenUsage::ZERO)
            .with_duration(TimeDelta::milliseconds(-1_500))
            .unwrap_err()
            .to_string(),
    );
    let mut meter = LocalTracker::new(RunBudget::unlimited(), clock.clone())
        .unwrap()
        .meter_from(usage(500, 20));
    lines.push(meter.observe_total(usage(400, 20)).unwrap_err().to_string());
    lines.push(
        RunBudget::new(Some(Deadline::at(t0())), None, &clock)
            .unwrap_err()
            .to_string(),
    );
    insta::assert_snapshot!(lines.join("\n"));
}

/// A subscriber may read the tracker from inside a checkpoint event: events
/// are emitted after the ledger lock is released.
#[test]
fn subscribers_can_call_back_into_the_tracker() {
    use std::sync::OnceLock;
    use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

    struct Reader(Arc<OnceLock<LocalTracker>>, Arc<Mutex<Vec<TokenUsage>>>);
    impl<S: tracing::Subscriber> Layer<S> for Reader {
        fn on_event(&self, _event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
            if let Some(t) = self.0.get() {
                self.1.lock().unwrap().push(t.snapshot().reserved);
            }
        }
    }

    let cell = Arc::new(OnceLock::new());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let subscriber =
        tracing_subscriber::registry().with(Reader(Arc::clone(&cell), Arc::clone(&seen)));
    tracing::subscriber::with_default(subscriber, || {
        // Other tests on other threads may have registered these callsites
        // while no subscriber was listening; recompute their interest now
        // that this one is (tracing caches it per callsite).
        tracing::callsite::rebuild_interest_cache();
        let clock = ManualTimeProvider::new(t0());
        let run = LocalTracker::new(RunBudget::unlimited(), clock).unwrap();
        cell.set(run.clone()).unwrap();
        let _r = run
            .reserve(BudgetPhase::ProviderRequest, usage(12, 3))
            .unwrap();
    });
    // The event of the reservation saw the reservation in place.
    assert_eq!(*seen.lock().unwrap(), [usage(12, 3)]);
}
