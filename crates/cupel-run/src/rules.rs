//! The checkpoint rules of `spec/15-run-budget.md` as pure functions over a
//! scope path's books. The in-process [`LocalTracker`](crate::LocalTracker)
//! decides with them (and so does [`MemoryStore`](crate::store::MemoryStore),
//! which is trackers behind the store contract); a
//! [`SharedTracker`](crate::store::SharedTracker) builds its snapshots with
//! them. The Redis store runs the same rules server-side
//! (`store/redis/budget.lua`); the shared behaviour suite holds it to the
//! in-process answers.

use crate::{Breach, BudgetDimension, RemainingTokens, RunBudget, TokenUsage};
use chrono::{DateTime, TimeDelta, Utc};

use crate::tracker::RunSnapshot;

/// The input and output dimensions, in the order the rules check them.
pub(crate) const DIMS: [BudgetDimension; 2] = [BudgetDimension::Input, BudgetDimension::Output];

/// The index of a token dimension in the `[input, output]` arrays.
pub(crate) fn idx(dimension: BudgetDimension) -> usize {
    match dimension {
        BudgetDimension::Output => 1,
        _ => 0,
    }
}

/// Clamps an exact `i128` into the `i64` range.
pub(crate) fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// One scope's books as the rules read them: its budget and the exact sums
/// of settled and reserved tokens, `[input, output]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Books {
    pub(crate) budget: RunBudget,
    pub(crate) used: [i128; 2],
    pub(crate) reserved: [i128; 2],
}

impl Books {
    fn limit(&self, d: BudgetDimension) -> Option<i128> {
        self.budget
            .token_limit()
            .and_then(|l| l.get(d))
            .map(i128::from)
    }
}

/// The first rule a request breaks on a path (root first; per scope:
/// deadline, projected duration, input, output), as the index on the path
/// of the breached scope, the dimension and the rule.
pub(crate) fn first_breach(
    path: &[Books],
    tokens: TokenUsage,
    duration: Option<TimeDelta>,
    now: DateTime<Utc>,
) -> Option<(usize, BudgetDimension, Breach)> {
    let cost = [i128::from(tokens.input()), i128::from(tokens.output())];
    path.iter().enumerate().find_map(|(i, s)| {
        if let Some(deadline) = s.budget.deadline() {
            if deadline.is_expired(now) {
                return Some((i, BudgetDimension::Deadline, Breach::Expired));
            }
            if duration.is_some_and(|wanted| wanted > deadline.remaining(now)) {
                return Some((i, BudgetDimension::Deadline, Breach::TooLong));
            }
        }
        DIMS.into_iter().find_map(|d| {
            let limit = s.limit(d)?;
            let k = idx(d);
            let committed = s.used[k] + s.reserved[k];
            if committed >= limit {
                Some((i, d, Breach::Exhausted))
            } else if committed + cost[k] > limit {
                Some((i, d, Breach::DoesNotFit))
            } else {
                None
            }
        })
    })
}

/// The finalization rule: the first scope (root first) whose settled usage is
/// *over* a ceiling (a tally exactly at the ceiling fits, R-2).
pub(crate) fn final_breach(path: &[Books]) -> Option<(usize, BudgetDimension)> {
    path.iter().enumerate().find_map(|(i, s)| {
        DIMS.into_iter()
            .find(|&d| s.limit(d).is_some_and(|limit| s.used[idx(d)] > limit))
            .map(|d| (i, d))
    })
}

/// The snapshot of the last scope of `path`.
pub(crate) fn snapshot(path: &[Books], halted: bool, now: DateTime<Utc>) -> RunSnapshot {
    let deadline = path
        .iter()
        .filter_map(|s| s.budget.deadline().map(|d| d.expires_at()))
        .min();
    let any_limit = path.iter().any(|s| s.budget.token_limit().is_some());
    let left = |d: BudgetDimension| {
        path.iter()
            .filter_map(|s| {
                let k = idx(d);
                s.limit(d).map(|l| l - s.used[k] - s.reserved[k])
            })
            .min()
            .map(clamp_i64)
    };
    let own = path.last().copied().unwrap_or(Books {
        budget: RunBudget::unlimited(),
        used: [0; 2],
        reserved: [0; 2],
    });
    RunSnapshot {
        now,
        deadline,
        remaining_time: deadline.map(|d| d.signed_duration_since(now)),
        usage: TokenUsage::saturating_from_i128(own.used[0], own.used[1]),
        reserved: TokenUsage::saturating_from_i128(own.reserved[0], own.reserved[1]),
        remaining_tokens: any_limit.then(|| {
            RemainingTokens::new(left(BudgetDimension::Input), left(BudgetDimension::Output))
        }),
        halted,
        scope_depth: path.len().saturating_sub(1),
    }
}
