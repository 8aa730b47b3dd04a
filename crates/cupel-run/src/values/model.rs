//! The immutable run-budget model: [`RunBudget`], [`Deadline`], [`TokenLimit`],
//! [`TokenUsage`] and [`RemainingTokens`].

use std::fmt;

use chrono::{DateTime, TimeDelta, Utc};

use super::exceeded::{
    Breach, BreachState, BudgetDimension, BudgetExceededError, BudgetPhase, ScopeId,
};
use cupel_core::TimeProvider;

use crate::RunError;

/// A wall-clock cutoff for a run.
///
/// A deadline is *expired* once the clock reads its instant or later: with
/// zero time left nothing more may start (R-2 in the specification).
///
/// ```
/// use chrono::TimeDelta;
/// use cupel_run::{Deadline, FixedTimeProvider};
/// let now = "2026-01-01T12:00:00Z".parse()?;
/// let deadline = Deadline::after(&FixedTimeProvider::new(now), TimeDelta::seconds(30));
/// assert_eq!(deadline.remaining(now), TimeDelta::seconds(30));
/// assert!(!deadline.is_expired(now));
/// assert!(deadline.is_expired(now + TimeDelta::seconds(30)));
/// # Ok::<(), chrono::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
pub struct Deadline {
    expires_at: DateTime<Utc>,
}

impl Deadline {
    /// A deadline at `expires_at`.
    pub fn at(expires_at: DateTime<Utc>) -> Self {
        Self { expires_at }
    }

    /// A deadline `timeout` after the clock's current instant (saturating at
    /// the latest representable instant).
    pub fn after<C: TimeProvider + ?Sized>(clock: &C, timeout: TimeDelta) -> Self {
        let now = clock.now();
        let expires_at =
            now.checked_add_signed(timeout)
                .unwrap_or(if timeout < TimeDelta::zero() {
                    DateTime::<Utc>::MIN_UTC
                } else {
                    DateTime::<Utc>::MAX_UTC
                });
        Self { expires_at }
    }

    /// The instant the deadline passes.
    pub fn expires_at(&self) -> DateTime<Utc> {
        self.expires_at
    }

    /// Time left at `now`: `expires_at - now`, zero or negative once expired
    /// (not clamped, so a late caller sees by how much it is late).
    pub fn remaining(&self, now: DateTime<Utc>) -> TimeDelta {
        self.expires_at.signed_duration_since(now)
    }

    /// Whether the deadline has passed at `now` (`now >= expires_at`).
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        now >= self.expires_at
    }
}

/// Per-dimension token ceilings: `input` for prompt and tool input tokens,
/// `output` for model and tool output tokens. `None` leaves a dimension
/// unbounded while the other is still enforced.
///
/// A ceiling of `0` is valid: that dimension is depleted from the start and
/// the pre-flight check fails (R-3).
///
/// ```
/// use cupel_run::TokenLimit;
/// let limit = TokenLimit::new(Some(10_000), None)?;
/// assert_eq!(limit.input(), Some(10_000));
/// assert_eq!(limit.output(), None);
/// assert!(TokenLimit::new(Some(-1), None).is_err());
/// # Ok::<(), cupel_run::RunError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "serde_impl::RawLimit"))]
pub struct TokenLimit {
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    input: Option<i64>,
    #[cfg_attr(feature = "serde", serde(skip_serializing_if = "Option::is_none"))]
    output: Option<i64>,
}

impl TokenLimit {
    /// Ceilings for the two dimensions (`None` = unbounded).
    ///
    /// # Errors
    /// [`RunError::NegativeTokenLimit`] when a bounded ceiling is negative.
    pub fn new(input: Option<i64>, output: Option<i64>) -> Result<Self, RunError> {
        for (dimension, value) in [
            (BudgetDimension::Input, input),
            (BudgetDimension::Output, output),
        ] {
            if let Some(limit) = value
                && limit < 0
            {
                return Err(RunError::NegativeTokenLimit { dimension, limit });
            }
        }
        Ok(Self { input, output })
    }

    /// Both dimensions unbounded.
    pub const fn unbounded() -> Self {
        Self {
            input: None,
            output: None,
        }
    }

    /// The input ceiling, `None` when unbounded.
    pub fn input(&self) -> Option<i64> {
        self.input
    }

    /// The output ceiling, `None` when unbounded.
    pub fn output(&self) -> Option<i64> {
        self.output
    }

    /// The ceiling of one token dimension (`None` for
    /// [`BudgetDimension::Deadline`] and for an unbounded dimension).
    pub fn get(&self, dimension: BudgetDimension) -> Option<i64> {
        match dimension {
            BudgetDimension::Input => self.input,
            BudgetDimension::Output => self.output,
            BudgetDimension::Deadline => None,
        }
    }
}

/// Cumulative (or projected) token consumption in the two pricing dimensions
/// providers report. Both counts are `>= 0`.
///
/// ```
/// use cupel_run::TokenUsage;
/// let usage = TokenUsage::new(1_200, 300)?;
/// assert_eq!((usage.input(), usage.output()), (1_200, 300));
/// assert_eq!(usage.saturating_add(TokenUsage::new(1, 2)?), TokenUsage::new(1_201, 302)?);
/// assert!(TokenUsage::new(-1, 0).is_err());
/// # Ok::<(), cupel_run::RunError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "serde_impl::RawUsage"))]
pub struct TokenUsage {
    input: i64,
    output: i64,
}

impl TokenUsage {
    /// No tokens.
    pub const ZERO: TokenUsage = TokenUsage {
        input: 0,
        output: 0,
    };

    /// A usage of `input` input tokens and `output` output tokens.
    ///
    /// # Errors
    /// [`RunError::NegativeTokenUsage`] when either count is negative.
    pub fn new(input: i64, output: i64) -> Result<Self, RunError> {
        for (dimension, tokens) in [
            (BudgetDimension::Input, input),
            (BudgetDimension::Output, output),
        ] {
            if tokens < 0 {
                return Err(RunError::NegativeTokenUsage { dimension, tokens });
            }
        }
        Ok(Self { input, output })
    }

    /// Input tokens.
    pub fn input(&self) -> i64 {
        self.input
    }

    /// Output tokens.
    pub fn output(&self) -> i64 {
        self.output
    }

    /// The count of one token dimension (`0` for [`BudgetDimension::Deadline`]).
    pub fn get(&self, dimension: BudgetDimension) -> i64 {
        match dimension {
            BudgetDimension::Input => self.input,
            BudgetDimension::Output => self.output,
            BudgetDimension::Deadline => 0,
        }
    }

    /// Component-wise sum, saturating at `i64::MAX`.
    #[must_use]
    pub fn saturating_add(self, other: TokenUsage) -> TokenUsage {
        TokenUsage {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
        }
    }

    /// Builds a usage from exact totals: negatives count as 0 and totals
    /// beyond `i64::MAX` saturate there.
    #[must_use]
    pub fn saturating_from_i128(input: i128, output: i128) -> TokenUsage {
        TokenUsage {
            input: clamp_i64(input.max(0)),
            output: clamp_i64(output.max(0)),
        }
    }
}

impl fmt::Display for TokenUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "input {}, output {}", self.input, self.output)
    }
}

/// `input 7248, output unbounded`: each dimension's allowance left, or
/// `unbounded`.
impl fmt::Display for RemainingTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dim = |f: &mut fmt::Formatter<'_>, v: Option<i64>| match v {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("unbounded"),
        };
        f.write_str("input ")?;
        dim(f, self.input)?;
        f.write_str(", output ")?;
        dim(f, self.output)
    }
}

/// Time left before a deadline, for people: `1m 30.250s left`, or
/// `expired 2s ago` once it has passed (`expired just now` at zero).
///
/// [`RunBudget::remaining_time`] and the tracker give a [`TimeDelta`]; wrap
/// it to print it.
///
/// ```
/// use chrono::TimeDelta;
/// use cupel_run::RemainingTime;
/// assert_eq!(RemainingTime::new(TimeDelta::milliseconds(90_250)).to_string(), "1m 30.250s left");
/// assert_eq!(RemainingTime::new(TimeDelta::hours(2)).to_string(), "2h 0m 0s left");
/// assert_eq!(RemainingTime::new(TimeDelta::seconds(-2)).to_string(), "expired 2s ago");
/// assert_eq!(RemainingTime::new(TimeDelta::zero()).to_string(), "expired just now");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RemainingTime(TimeDelta);

impl RemainingTime {
    /// Wraps `deadline - now` (zero or negative once expired).
    pub const fn new(remaining: TimeDelta) -> Self {
        Self(remaining)
    }

    /// The wrapped duration.
    pub const fn get(self) -> TimeDelta {
        self.0
    }
}

impl fmt::Display for RemainingTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.num_milliseconds();
        if ms == 0 {
            return f.write_str("expired just now");
        }
        let abs = ms.unsigned_abs();
        let (h, m, s, frac) = (
            abs / 3_600_000,
            abs / 60_000 % 60,
            abs / 1000 % 60,
            abs % 1000,
        );
        if ms < 0 {
            f.write_str("expired ")?;
        }
        if h > 0 {
            write!(f, "{h}h {m}m ")?;
        } else if m > 0 {
            write!(f, "{m}m ")?;
        }
        if frac == 0 {
            write!(f, "{s}s")?;
        } else {
            write!(f, "{s}.{frac:03}s")?;
        }
        f.write_str(if ms < 0 { " ago" } else { " left" })
    }
}

/// What is left of a token limit: `limit - usage` per bounded dimension,
/// `None` for an unbounded one. Negative once a recorded usage went past the
/// ceiling (R-4): the amount of the overshoot is kept, not hidden behind `0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct RemainingTokens {
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    input: Option<i64>,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    output: Option<i64>,
}

impl RemainingTokens {
    /// Remaining allowances (`None` = unbounded).
    pub const fn new(input: Option<i64>, output: Option<i64>) -> Self {
        Self { input, output }
    }

    /// Input tokens left, `None` when unbounded.
    pub fn input(&self) -> Option<i64> {
        self.input
    }

    /// Output tokens left, `None` when unbounded.
    pub fn output(&self) -> Option<i64> {
        self.output
    }

    /// Tokens left in one dimension (`None` for [`BudgetDimension::Deadline`]).
    pub fn get(&self, dimension: BudgetDimension) -> Option<i64> {
        match dimension {
            BudgetDimension::Input => self.input,
            BudgetDimension::Output => self.output,
            BudgetDimension::Deadline => None,
        }
    }
}

/// A run budget: an optional wall-clock [`Deadline`] and optional
/// [`TokenLimit`], validated at construction and immutable afterwards.
///
/// `RunBudget` is the *contract*; the consumption lives in a
/// `LocalTracker` (in `cupel_run`), which every step and subagent of
/// a run shares. Without a token limit the budget is a pure deadline budget;
/// with neither part it enforces nothing (R-1).
///
/// With the `serde` feature the JSON form is
/// `{"deadline": "<RFC 3339>", "token_limit": {"input": .., "output": ..}}`,
/// every member optional; an unknown key (a misspelt `"dedline"`) is an
/// error, never a silently unlimited budget (R-16).
///
/// ```
/// use chrono::TimeDelta;
/// use cupel_run::{
///     BudgetDimension, Deadline, FixedTimeProvider, RunBudget, TokenLimit, TokenUsage,
/// };
/// let clock = FixedTimeProvider::new("2026-01-01T12:00:00Z".parse().unwrap());
/// let budget = RunBudget::builder()
///     .deadline(Deadline::after(&clock, TimeDelta::minutes(5)))
///     .token_limit(TokenLimit::new(Some(1_000), None)?)
///     .build(&clock)?;
///
/// let used = TokenUsage::new(400, 9_999)?;
/// // 1000 - 400 = 600 input tokens left; output is unbounded.
/// let left = budget.remaining_tokens(used).unwrap();
/// assert_eq!((left.input(), left.output()), (Some(600), None));
/// assert!(budget.assert_within_limit(used).is_ok());
///
/// // Reaching the ceiling exactly already fails: "meets or exceeds".
/// let err = budget.assert_within_limit(TokenUsage::new(1_000, 0)?).unwrap_err();
/// assert_eq!(err.dimension(), BudgetDimension::Input);
/// assert_eq!(err.remaining(), Some(0));
/// # Ok::<(), cupel_run::RunError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct RunBudget {
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    deadline: Option<Deadline>,
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    token_limit: Option<TokenLimit>,
}

impl RunBudget {
    /// A budget from its two optional parts, validated against `clock`.
    ///
    /// # Errors
    /// [`RunError::Exceeded`] (phase `preflight`, dimension
    /// `deadline`) when the deadline is not after `clock.now()`. (A
    /// [`TokenLimit`] cannot hold a negative ceiling, so the token part is
    /// already valid.)
    pub fn new<C: TimeProvider + ?Sized>(
        deadline: Option<Deadline>,
        token_limit: Option<TokenLimit>,
        clock: &C,
    ) -> Result<Self, RunError> {
        let budget = Self {
            deadline,
            token_limit,
        };
        budget.validate(clock.now(), &ScopeId::ROOT)?;
        Ok(budget)
    }

    /// A budget that enforces nothing (no deadline, no token limit).
    pub const fn unlimited() -> Self {
        Self {
            deadline: None,
            token_limit: None,
        }
    }

    /// A budget from its parts *without* the construction check (an expired
    /// deadline is accepted): for a budget read back from a store, which was
    /// checked when it was first built. Trackers check it again when they
    /// start.
    #[must_use]
    pub const fn from_parts(deadline: Option<Deadline>, token_limit: Option<TokenLimit>) -> Self {
        Self {
            deadline,
            token_limit,
        }
    }

    /// Starts a [`RunBudgetBuilder`].
    pub fn builder() -> RunBudgetBuilder {
        RunBudgetBuilder::default()
    }

    /// Checks the construction rules at `now`: the deadline, if any, must be
    /// after `now`. Used again when a budget reaches a tracker (a root or a
    /// child, named by `scope`).
    ///
    /// An expired deadline is the seed's pre-flight failure: a
    /// [`RunError::Exceeded`] with phase
    /// [`BudgetPhase::Preflight`] and dimension
    /// [`BudgetDimension::Deadline`], the one error type hosts match for
    /// every overage (issue 28).
    ///
    /// # Errors
    /// [`RunError::Exceeded`] when the deadline is not after `now`.
    pub fn validate(&self, now: DateTime<Utc>, scope: &ScopeId) -> Result<(), RunError> {
        if let Some(deadline) = self.deadline
            && deadline.is_expired(now)
        {
            let state = BreachState {
                budget: *self,
                usage: TokenUsage::ZERO,
                reserved: TokenUsage::ZERO,
                requested: TokenUsage::ZERO,
                requested_duration: None,
                now: Some(now),
                scope: scope.clone(),
                requester: scope.clone(),
            };
            return Err(RunError::Exceeded(BudgetExceededError::new(
                BudgetPhase::Preflight,
                BudgetDimension::Deadline,
                Breach::Expired,
                &state,
            )));
        }
        Ok(())
    }

    /// The wall-clock cutoff, if any.
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// The token ceilings, if any.
    pub fn token_limit(&self) -> Option<TokenLimit> {
        self.token_limit
    }

    /// Time left at `now` ([`Deadline::remaining`]), `None` without a
    /// deadline; wrap it in [`RemainingTime`] to print it.
    pub fn remaining_time(&self, now: DateTime<Utc>) -> Option<TimeDelta> {
        self.deadline.map(|d| d.remaining(now))
    }

    /// Per-dimension allowance left after `usage` (`limit - usage`, negative
    /// once past the ceiling); unbounded dimensions stay `None`, and the whole
    /// answer is `None` without a token limit.
    pub fn remaining_tokens(&self, usage: TokenUsage) -> Option<RemainingTokens> {
        let limit = self.token_limit?;
        let left =
            |l: Option<i64>, used: i64| l.map(|l| clamp_i64(i128::from(l) - i128::from(used)));
        Some(RemainingTokens::new(
            left(limit.input, usage.input),
            left(limit.output, usage.output),
        ))
    }

    /// Fails when a bounded dimension's cumulative `usage` **meets or exceeds**
    /// its ceiling (input checked first); a no-op without a token limit.
    ///
    /// The error's phase is [`BudgetPhase::Budget`], the seed's generic tag:
    /// this helper does not know which checkpoint called it. Its `now`,
    /// deadline and time fields are empty (no clock is involved).
    ///
    /// # Errors
    /// [`BudgetExceededError`] naming the first exhausted dimension.
    pub fn assert_within_limit(&self, usage: TokenUsage) -> Result<(), BudgetExceededError> {
        let Some(limit) = self.token_limit else {
            return Ok(());
        };
        for dimension in [BudgetDimension::Input, BudgetDimension::Output] {
            if let Some(ceiling) = limit.get(dimension)
                && usage.get(dimension) >= ceiling
            {
                return Err(BudgetExceededError::new(
                    BudgetPhase::Budget,
                    dimension,
                    Breach::Exhausted,
                    &BreachState {
                        budget: *self,
                        usage,
                        reserved: TokenUsage::ZERO,
                        requested: TokenUsage::ZERO,
                        requested_duration: None,
                        now: None,
                        scope: ScopeId::ROOT,
                        requester: ScopeId::ROOT,
                    },
                ));
            }
        }
        Ok(())
    }
}

/// Builder for [`RunBudget`]; [`build`](Self::build) validates against a clock.
#[derive(Debug, Clone, Default)]
pub struct RunBudgetBuilder {
    deadline: Option<Deadline>,
    token_limit: Option<TokenLimit>,
}

impl RunBudgetBuilder {
    /// Starts an empty builder (no deadline, no token limit).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the deadline.
    pub fn deadline(mut self, deadline: Deadline) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the token ceilings.
    pub fn token_limit(mut self, limit: TokenLimit) -> Self {
        self.token_limit = Some(limit);
        self
    }

    /// Validates and builds.
    ///
    /// # Errors
    /// As [`RunBudget::new`].
    pub fn build<C: TimeProvider + ?Sized>(self, clock: &C) -> Result<RunBudget, RunError> {
        RunBudget::new(self.deadline, self.token_limit, clock)
    }
}

/// Clamps an exact `i128` into the `i64` range.
pub(crate) fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::{TokenLimit, TokenUsage};
    use crate::RunError;

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawLimit {
        #[serde(default)]
        input: Option<i64>,
        #[serde(default)]
        output: Option<i64>,
    }

    impl TryFrom<RawLimit> for TokenLimit {
        type Error = RunError;
        fn try_from(raw: RawLimit) -> Result<Self, RunError> {
            TokenLimit::new(raw.input, raw.output)
        }
    }

    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct RawUsage {
        #[serde(default)]
        input: i64,
        #[serde(default)]
        output: i64,
    }

    impl TryFrom<RawUsage> for TokenUsage {
        type Error = RunError;
        fn try_from(raw: RawUsage) -> Result<Self, RunError> {
            TokenUsage::new(raw.input, raw.output)
        }
    }
}
