//! [`BudgetExceededError`] and the [`BudgetPhase`] / [`BudgetDimension`] it names.

use std::fmt::{self, Write as _};
use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};

use super::model::{RemainingTokens, RunBudget, TokenUsage, clamp_i64};

/// Where in a run a budget check happened.
///
/// The seed tags failures `preflight`, `budget` and `response`; we keep those
/// and split `budget` by checkpoint so a host can tell a blocked provider call
/// from a blocked tool (R-5). [`seed_tag`](Self::seed_tag) gives the seed's
/// coarser tag back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum BudgetPhase {
    /// Before any provider call: an expired deadline or a depleted dimension.
    Preflight,
    /// Before a provider request (the request is not issued on failure).
    ProviderRequest,
    /// Before a tool execution (the tool is not run on failure).
    ToolExecution,
    /// A check outside any tracker checkpoint:
    /// [`RunBudget::assert_within_limit`].
    Budget,
    /// Finalization: the final tally did not fit.
    Response,
}

impl BudgetPhase {
    /// The snake_case name used in messages, logs and telemetry
    /// (`preflight`, `provider_request`, `tool_execution`, `budget`, `response`).
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetPhase::Preflight => "preflight",
            BudgetPhase::ProviderRequest => "provider_request",
            BudgetPhase::ToolExecution => "tool_execution",
            BudgetPhase::Budget => "budget",
            BudgetPhase::Response => "response",
        }
    }

    /// The seed's phase tag: `preflight`, `response`, or `budget` for every
    /// other checkpoint.
    pub fn seed_tag(self) -> &'static str {
        match self {
            BudgetPhase::Preflight => "preflight",
            BudgetPhase::Response => "response",
            _ => "budget",
        }
    }
}

impl fmt::Display for BudgetPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The part of a run budget that ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum BudgetDimension {
    /// The wall-clock deadline.
    Deadline,
    /// The input-token ceiling.
    Input,
    /// The output-token ceiling.
    Output,
}

impl BudgetDimension {
    /// `deadline`, `input` or `output`.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetDimension::Deadline => "deadline",
            BudgetDimension::Input => "input",
            BudgetDimension::Output => "output",
        }
    }
}

impl fmt::Display for BudgetDimension {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which rule a check broke; picks the wording of a [`BudgetExceededError`].
///
/// Public for the crates that enforce a run budget (`cupel_run`'s tracker
/// and its stores); callers read [`BudgetExceededError::phase`] and
/// [`BudgetExceededError::dimension`] instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Breach {
    /// The deadline passed.
    Expired,
    /// Committed usage meets or exceeds the ceiling (nothing more may start).
    Exhausted,
    /// The projected cost does not fit what remains.
    DoesNotFit,
    /// The projected duration does not end before the deadline (R-17).
    TooLong,
    /// The final tally is above the ceiling.
    Overshot,
}

/// The state of the breached scope at the moment of a failed check: what a
/// [`BudgetExceededError`] is built from (see [`BudgetExceededError::new`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreachState {
    /// The breached scope's own budget.
    pub budget: RunBudget,
    /// Usage settled in that scope.
    pub usage: TokenUsage,
    /// Tokens held by open reservations in that scope.
    pub reserved: TokenUsage,
    /// What the failed request asked for (zero for a pre-flight check).
    pub requested: TokenUsage,
    /// The failed request's projected duration, if it gave one.
    pub requested_duration: Option<TimeDelta>,
    /// The clock reading of the check (`None` where time was not read).
    pub now: Option<DateTime<Utc>>,
    /// The scope whose limit was breached.
    pub scope: ScopeId,
    /// The scope that made the request: the breached scope or a descendant.
    pub requester: ScopeId,
}

/// A scope as an error names it: its depth and, for a child created with
/// `LocalTracker::child_named` (in `cupel_run`), its label.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeId {
    /// 0 for the run, 1 for a child, and so on.
    pub depth: usize,
    /// The label a named child was given.
    pub label: Option<Arc<str>>,
}

impl ScopeId {
    /// The root scope (depth 0, no label).
    pub const ROOT: ScopeId = ScopeId {
        depth: 0,
        label: None,
    };
}

/// A run budget ran out: the deadline passed or a token ceiling was reached.
///
/// Carries everything a host needs to log and act: the checkpoint
/// ([`phase`](Self::phase)), the [`dimension`](Self::dimension), the ceiling,
/// the usage, what remains, and [`budget_json`](Self::budget_json) — the whole
/// budget state of the scope that ran out, as one JSON object. Converts into
/// [`RunError::Exceeded`](crate::RunError::Exceeded)
/// with `?`.
///
/// ```
/// use cupel_run::{BudgetDimension, BudgetPhase, FixedTimeProvider, RunBudget, TokenLimit, TokenUsage};
/// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
/// let budget = RunBudget::new(None, Some(TokenLimit::new(None, Some(50))?), &clock)?;
/// let err = budget.assert_within_limit(TokenUsage::new(7, 60)?).unwrap_err();
/// assert_eq!((err.phase(), err.dimension()), (BudgetPhase::Budget, BudgetDimension::Output));
/// // remaining = 50 - 60 = -10: the overshoot stays visible.
/// assert_eq!((err.limit(), err.remaining()), (Some(50), Some(-10)));
/// assert_eq!(
///     err.budget_json(),
///     r#"{"scope_depth":0,"requester_depth":0,"budget":{"token_limit":{"output":50}},"usage":{"input":7,"output":60},"reserved":{"input":0,"output":0},"requested":{"input":0,"output":0},"remaining_tokens":{"output":-10}}"#
/// );
/// # Ok::<(), cupel_run::RunError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetExceededError(Box<Details>);

/// The payload of a [`BudgetExceededError`], boxed to keep `Result`s small.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Details {
    phase: BudgetPhase,
    dimension: BudgetDimension,
    limit: Option<i64>,
    usage: TokenUsage,
    reserved: TokenUsage,
    requested: TokenUsage,
    remaining: Option<i64>,
    deadline: Option<DateTime<Utc>>,
    now: Option<DateTime<Utc>>,
    remaining_time: Option<TimeDelta>,
    requested_duration: Option<TimeDelta>,
    scope: ScopeId,
    requester: ScopeId,
    budget_json: String,
    breach: Breach,
}

impl BudgetExceededError {
    /// The checkpoint that failed.
    pub fn phase(&self) -> BudgetPhase {
        self.0.phase
    }

    /// What ran out.
    pub fn dimension(&self) -> BudgetDimension {
        self.0.dimension
    }

    /// The rule broken (which also picks the message).
    pub fn breach(&self) -> Breach {
        self.0.breach
    }

    /// The ceiling of the breached token dimension (`None` for the deadline).
    pub fn limit(&self) -> Option<i64> {
        self.0.limit
    }

    /// Cumulative usage recorded in the breached scope.
    pub fn usage(&self) -> TokenUsage {
        self.0.usage
    }

    /// Tokens reserved by in-flight requests in the breached scope.
    pub fn reserved(&self) -> TokenUsage {
        self.0.reserved
    }

    /// The projected cost of the rejected request (zero for a plain check).
    pub fn requested(&self) -> TokenUsage {
        self.0.requested
    }

    /// Tokens left in the breached dimension: `limit - usage - reserved`,
    /// negative after an overshoot (`None` for the deadline).
    pub fn remaining(&self) -> Option<i64> {
        self.0.remaining
    }

    /// The breached scope's deadline, if it has one.
    pub fn deadline(&self) -> Option<DateTime<Utc>> {
        self.0.deadline
    }

    /// The clock reading at the check (`None` from
    /// [`RunBudget::assert_within_limit`], which has no clock).
    pub fn now(&self) -> Option<DateTime<Utc>> {
        self.0.now
    }

    /// `deadline - now`, zero or negative when the deadline ran out.
    pub fn remaining_time(&self) -> Option<TimeDelta> {
        self.0.remaining_time
    }

    /// The projected duration of the rejected request, when it gave one
    /// (`RunRequest::with_duration` in `cupel_run`).
    pub fn requested_duration(&self) -> Option<TimeDelta> {
        self.0.requested_duration
    }

    /// Depth of the scope whose limit broke: `0` for the tracker that owns
    /// the run, `n` for a child `n` levels down.
    pub fn scope_depth(&self) -> usize {
        self.0.scope.depth
    }

    /// Label of the scope whose limit broke, if it is a child created with
    /// `LocalTracker::child_named` (in `cupel_run`).
    pub fn scope_label(&self) -> Option<&str> {
        self.0.scope.label.as_deref()
    }

    /// Depth of the scope that made the request which broke the limit: the
    /// breached scope itself or one of its descendants. A child whose request
    /// breaks the run's ceiling reports `scope_depth() == 0` and
    /// `requester_depth() == 1`.
    ///
    /// A halted scope hands this same error to every later holder (R-7), so
    /// the requester stays the one that caused the halt, not the holder that
    /// reads the error.
    pub fn requester_depth(&self) -> usize {
        self.0.requester.depth
    }

    /// Label of the requesting scope (see
    /// [`requester_depth`](Self::requester_depth)), if it has one.
    pub fn requester_label(&self) -> Option<&str> {
        self.0.requester.label.as_deref()
    }

    /// The breached scope's state as JSON (keys in a fixed order):
    /// `scope_depth`, `scope_label` (absent without a label),
    /// `requester_depth`, `requester_label` (absent without a label), `budget`
    /// (the [`RunBudget`] in its serde form), `usage`, `reserved`,
    /// `requested`, `requested_duration_ms` (absent when the request gave no
    /// duration), `remaining_tokens` (absent without a token limit), and with
    /// a clock `now` and — with a deadline — `remaining_time_ms`.
    pub fn budget_json(&self) -> &str {
        &self.0.budget_json
    }

    /// Builds the error for a failed check: `breach` picks the message,
    /// `state` gives the numbers, and the JSON payload
    /// ([`budget_json`](Self::budget_json)) is derived from `state`.
    ///
    /// For crates that enforce a run budget; callers receive these errors.
    #[must_use]
    pub fn new(
        phase: BudgetPhase,
        dimension: BudgetDimension,
        breach: Breach,
        state: &BreachState,
    ) -> Self {
        let budget = state.budget;
        let deadline = budget.deadline().map(|d| d.expires_at());
        let remaining_time = state.now.and_then(|now| budget.remaining_time(now));
        let committed = state.usage.saturating_add(state.reserved);
        let remaining = budget
            .remaining_tokens(committed)
            .and_then(|r| r.get(dimension));
        let limit = budget.token_limit().and_then(|l| l.get(dimension));
        Self(Box::new(Details {
            phase,
            dimension,
            limit,
            usage: state.usage,
            reserved: state.reserved,
            requested: state.requested,
            remaining,
            deadline,
            now: state.now,
            remaining_time,
            requested_duration: state.requested_duration,
            scope: state.scope.clone(),
            requester: state.requester.clone(),
            budget_json: budget_json(state, budget.remaining_tokens(committed), remaining_time),
            breach,
        }))
    }
}

impl fmt::Display for BudgetExceededError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &*self.0;
        let phase = d.phase;
        let dim = d.dimension;
        let scope = if d.scope.depth == 0 {
            String::from("run budget")
        } else {
            format!("run budget ({})", describe(&d.scope))
        };
        // The requester is the breached scope or a descendant: a deeper
        // requester is a different scope, and the message names it.
        let phase = if d.requester.depth > d.scope.depth {
            format!("{phase} (requested by {})", describe(&d.requester))
        } else {
            phase.to_string()
        };
        let used = d.usage.get(dim);
        let reserved = d.reserved.get(dim);
        let limit = d.limit.unwrap_or_default();
        let remaining = d.remaining.unwrap_or_default();
        match d.breach {
            Breach::Expired => {
                let late_ms = d
                    .remaining_time
                    .map_or(0, |t| t.num_milliseconds().saturating_neg());
                write!(f, "{scope} exceeded at {phase}: the deadline")?;
                if let Some(deadline) = d.deadline {
                    write!(f, " {}", rfc3339(deadline))?;
                }
                write!(f, " has passed")?;
                if let Some(now) = d.now {
                    write!(f, " (now {}, {late_ms} ms late)", rfc3339(now))?;
                }
                Ok(())
            }
            Breach::Exhausted => write!(
                f,
                "{scope} exceeded at {phase}: {dim} tokens used {used} + reserved {reserved} \
                 meet or exceed the limit of {limit} (remaining {remaining})"
            ),
            Breach::TooLong => {
                let left_ms = d.remaining_time.map_or(0, |t| t.num_milliseconds());
                let wanted_ms = d.requested_duration.map_or(0, |t| t.num_milliseconds());
                write!(
                    f,
                    "{scope} exceeded at {phase}: a request projected to take {wanted_ms} ms \
                     does not end before the deadline"
                )?;
                if let Some(deadline) = d.deadline {
                    write!(f, " {}", rfc3339(deadline))?;
                }
                write!(f, " ({left_ms} ms left)")
            }
            Breach::DoesNotFit => write!(
                f,
                "{scope} exceeded at {phase}: a request for {} {dim} tokens does not fit the \
                 {remaining} remaining (limit {limit}, used {used}, reserved {reserved})",
                d.requested.get(dim)
            ),
            Breach::Overshot => {
                let over = clamp_i64(i128::from(used) - i128::from(limit));
                if over > 0 {
                    write!(
                        f,
                        "{scope} exceeded at {phase}: the final tally of {used} {dim} tokens is \
                         over the limit of {limit} by {over}"
                    )
                } else {
                    // An overshoot is a tally strictly above the limit, so a
                    // difference of 0 means the tally saturated at i64::MAX
                    // in the snapshot: say so instead of "over by 0".
                    write!(
                        f,
                        "{scope} exceeded at {phase}: the final tally of {dim} tokens is over the \
                         limit of {limit} (more than {used}, the largest count a snapshot shows)"
                    )
                }
            }
        }
    }
}

impl std::error::Error for BudgetExceededError {}

/// `child scope "researcher", depth 1`, `child scope, depth 2`, or `the run`.
fn describe(scope: &ScopeId) -> String {
    match (&scope.label, scope.depth) {
        (_, 0) => String::from("the run"),
        (Some(label), depth) => format!("child scope {label:?}, depth {depth}"),
        (None, depth) => format!("child scope, depth {depth}"),
    }
}

/// `s` as a JSON string literal (quotes, backslashes and control characters
/// escaped).
fn push_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// RFC 3339 in UTC with a `Z` and only as many fraction digits as needed —
/// the form chrono's serde support writes.
fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn push_usage(out: &mut String, key: &str, u: TokenUsage) {
    let _ = write!(
        out,
        r#","{key}":{{"input":{},"output":{}}}"#,
        u.input(),
        u.output()
    );
}

/// `{"input":..,"output":..}` with `None` members left out (the serde form).
fn push_optional_pair(out: &mut String, input: Option<i64>, output: Option<i64>) {
    out.push('{');
    let mut first = true;
    for (key, value) in [("input", input), ("output", output)] {
        if let Some(v) = value {
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(out, r#""{key}":{v}"#);
        }
    }
    out.push('}');
}

/// The JSON payload of an error. Written by hand so it exists without the
/// `serde` feature; labels are escaped, every other value is a number or an
/// RFC 3339 string. Key order is fixed (deterministic output).
fn budget_json(
    state: &BreachState,
    remaining: Option<RemainingTokens>,
    remaining_time: Option<TimeDelta>,
) -> String {
    let mut out = String::with_capacity(256);
    let _ = write!(out, r#"{{"scope_depth":{}"#, state.scope.depth);
    if let Some(label) = &state.scope.label {
        out.push_str(r#","scope_label":"#);
        push_json_string(&mut out, label);
    }
    let _ = write!(out, r#","requester_depth":{}"#, state.requester.depth);
    if let Some(label) = &state.requester.label {
        out.push_str(r#","requester_label":"#);
        push_json_string(&mut out, label);
    }
    out.push_str(r#","budget":{"#);
    let mut first = true;
    if let Some(deadline) = state.budget.deadline() {
        let _ = write!(out, r#""deadline":"{}""#, rfc3339(deadline.expires_at()));
        first = false;
    }
    if let Some(limit) = state.budget.token_limit() {
        if !first {
            out.push(',');
        }
        out.push_str(r#""token_limit":"#);
        push_optional_pair(&mut out, limit.input(), limit.output());
    }
    out.push('}');
    push_usage(&mut out, "usage", state.usage);
    push_usage(&mut out, "reserved", state.reserved);
    push_usage(&mut out, "requested", state.requested);
    if let Some(d) = state.requested_duration {
        let _ = write!(out, r#","requested_duration_ms":{}"#, d.num_milliseconds());
    }
    if let Some(r) = remaining {
        out.push_str(r#","remaining_tokens":"#);
        push_optional_pair(&mut out, r.input(), r.output());
    }
    if let Some(now) = state.now {
        let _ = write!(out, r#","now":"{}""#, rfc3339(now));
    }
    if let Some(t) = remaining_time {
        let _ = write!(out, r#","remaining_time_ms":{}"#, t.num_milliseconds());
    }
    out.push('}');
    out
}
