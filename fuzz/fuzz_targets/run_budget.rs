//! (g) The run budget as a sequence of operations: child scopes (nested,
//! labelled, with their own limits), records, reservations settled, released
//! or dropped, checkpoints, probes, finalization, dropped handles and a
//! clock that moves. Asserts no panic and the books: the root's usage is
//! exactly the sum of everything recorded or settled anywhere in the tree
//! (nothing lost when scopes are freed, nothing counted twice), and a
//! reservation never leaves tokens reserved after it is gone.
#![no_main]

use arbitrary::Arbitrary;
use chrono::{DateTime, TimeDelta, Utc};
use cupel_run::{BudgetPhase, Deadline, ManualTimeProvider, RunBudget, TokenLimit, TokenUsage};
use cupel_run::{RunRequest, LocalTracker, Reservation};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
enum Op {
    Child {
        parent: u8,
        input: Option<u16>,
        output: Option<u16>,
        seconds: Option<u8>,
        named: bool,
    },
    Drop {
        tracker: u8,
    },
    Record {
        tracker: u8,
        input: u16,
        output: u16,
    },
    Reserve {
        tracker: u8,
        input: u16,
        output: u16,
    },
    Settle {
        reservation: u8,
        input: u16,
        output: u16,
    },
    Release {
        reservation: u8,
    },
    DropReservation {
        reservation: u8,
    },
    Check {
        tracker: u8,
        input: u16,
    },
    Probe {
        tracker: u8,
        input: u16,
    },
    Finalize {
        tracker: u8,
    },
    Advance {
        seconds: u8,
    },
}

#[derive(Debug, Arbitrary)]
struct Run {
    input: Option<u16>,
    output: Option<u16>,
    seconds: Option<u8>,
    ops: Vec<Op>,
}

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default()
}

fn budget(
    clock: &ManualTimeProvider,
    i: Option<u16>,
    o: Option<u16>,
    s: Option<u8>,
) -> Option<RunBudget> {
    let limit = TokenLimit::new(i.map(i64::from), o.map(i64::from)).ok()?;
    let deadline = match s {
        Some(s) => Some(Deadline::after(clock, TimeDelta::seconds(i64::from(s) + 1))),
        None => None,
    };
    RunBudget::new(deadline, Some(limit), clock).ok()
}

fn usage(i: u16, o: u16) -> TokenUsage {
    TokenUsage::new(i64::from(i), i64::from(o)).unwrap_or(TokenUsage::ZERO)
}

fuzz_target!(|run: Run| {
    let clock = ManualTimeProvider::new(t0());
    let Some(root_budget) = budget(&clock, run.input, run.output, run.seconds) else {
        return;
    };
    let Ok(root) = LocalTracker::new(root_budget, clock.clone()) else {
        return;
    };
    let mut trackers: Vec<LocalTracker> = vec![root.clone()];
    let mut reservations: Vec<Reservation> = Vec::new();
    // Everything that must end up in the root's books.
    let (mut spent_in, mut spent_out) = (0i64, 0i64);
    let pick = |v: usize, k: u8| (v > 0).then(|| usize::from(k) % v);
    for op in run.ops.into_iter().take(200) {
        match op {
            Op::Child {
                parent,
                input,
                output,
                seconds,
                named,
            } => {
                let Some(p) = pick(trackers.len(), parent) else {
                    continue;
                };
                if let Some(b) = budget(&clock, input, output, seconds) {
                    let child = if named {
                        trackers[p].child_named("sub\nagent", b)
                    } else {
                        trackers[p].child(b)
                    };
                    if let Ok(c) = child {
                        trackers.push(c);
                    }
                }
            }
            Op::Drop { tracker } => {
                // Never the root handle (index 0): the test keeps it.
                if let Some(t) = pick(trackers.len(), tracker).filter(|&t| t > 0) {
                    trackers.swap_remove(t);
                }
            }
            Op::Record {
                tracker,
                input,
                output,
            } => {
                if let Some(t) = pick(trackers.len(), tracker) {
                    trackers[t].record(usage(input, output));
                    spent_in += i64::from(input);
                    spent_out += i64::from(output);
                }
            }
            Op::Reserve {
                tracker,
                input,
                output,
            } => {
                if let Some(t) = pick(trackers.len(), tracker)
                    && let Ok(r) =
                        trackers[t].reserve(BudgetPhase::ProviderRequest, usage(input, output))
                {
                    reservations.push(r);
                }
            }
            Op::Settle {
                reservation,
                input,
                output,
            } => {
                if let Some(r) = pick(reservations.len(), reservation) {
                    reservations.swap_remove(r).settle(usage(input, output));
                    spent_in += i64::from(input);
                    spent_out += i64::from(output);
                }
            }
            Op::Release { reservation } => {
                if let Some(r) = pick(reservations.len(), reservation) {
                    reservations.swap_remove(r).release();
                }
            }
            Op::DropReservation { reservation } => {
                if let Some(r) = pick(reservations.len(), reservation) {
                    drop(reservations.swap_remove(r));
                }
            }
            Op::Check { tracker, input } => {
                if let Some(t) = pick(trackers.len(), tracker) {
                    let _ = trackers[t].check(BudgetPhase::ToolExecution, usage(input, 0));
                }
            }
            Op::Probe { tracker, input } => {
                if let Some(t) = pick(trackers.len(), tracker) {
                    let _ =
                        trackers[t].would_fit(&RunRequest::provider_request(usage(input, 0)));
                }
            }
            Op::Finalize { tracker } => {
                if let Some(t) = pick(trackers.len(), tracker) {
                    let _ = trackers[t].finalize().map_err(|e| e.to_string());
                }
            }
            Op::Advance { seconds } => clock.advance(TimeDelta::seconds(i64::from(seconds))),
        }
        assert_eq!(
            root.usage(),
            usage_i64(spent_in, spent_out),
            "root books drifted"
        );
    }
    drop(reservations);
    let snapshot = root.snapshot();
    assert_eq!(
        snapshot.reserved,
        TokenUsage::ZERO,
        "reservations left tokens behind"
    );
    let _ = format!("{snapshot:?}");
});

fn usage_i64(i: i64, o: i64) -> TokenUsage {
    TokenUsage::new(i, o).unwrap_or(TokenUsage::ZERO)
}
