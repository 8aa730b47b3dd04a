//! The bridge between the run budget and the adaptive budget: a cycle's
//! demand, read from the trackers that ran it, recorded into a
//! [`UsageRecorder`]; and a [`AdaptiveSuggestion`] turned into the budget types
//! that enforce it.
//!
//! Demand, not usage: a request the tracker refused was still needed. If the
//! recorder saw only what was spent, a suggestion used as a hard ceiling
//! would refuse the work above it, record less, suggest less the next cycle,
//! and shrink toward nothing — the agent starves (spec `16-adaptive-budget.md`,
//! A-16).

use std::collections::BTreeMap;

use cupel_core::{ContextBudget, CupelError, TimeProvider};

use crate::{BudgetDimension, Deadline, RunBudget, RunError, TokenLimit, TokenUsage};

use crate::adaptive::{AdaptiveSuggestion, UsageError, UsageRecorder};
use crate::tracker::LocalTracker;

/// One cycle of a multi-agent loop, read from the agents' trackers: each
/// agent's demand since it was [`track`](Self::track)ed, recorded into a
/// [`UsageRecorder`] with [`record_into`](Self::record_into).
///
/// An agent's demand is its tracker's [`demand`](LocalTracker::demand)
/// (settled usage plus refused requests) in one dimension — input tokens
/// ([`input`](Self::input)) or output tokens ([`output`](Self::output)) —
/// counted from the moment it was tracked, so a tracker that lives across
/// cycles and a fresh child per cycle both work. Reservations still open
/// when the cycle is recorded are not counted (they are neither spent nor
/// refused yet).
///
/// ```
/// use cupel_run::{
///     BudgetDimension, BudgetPhase, LocalTracker, CycleDemand, Decimal, ManualTimeProvider,
///     RunBudget, TokenLimit, TokenUsage, UsageRecorder,
/// };
///
/// let clock = ManualTimeProvider::new("2026-03-01T09:00:00Z".parse()?);
/// let run = LocalTracker::new(RunBudget::unlimited(), clock.clone())?;
/// let mut usage = UsageRecorder::new();
///
/// // Cycle 1: the coder may use 1,000 input tokens.
/// let cap = RunBudget::builder().token_limit(TokenLimit::new(Some(1_000), None)?).build(&clock)?;
/// let coder = run.child_named("coder", cap)?;
/// let mut cycle = CycleDemand::input();
/// cycle.track("coder", &coder);
/// coder.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(900, 0)?)?.settle(TokenUsage::new(880, 50)?);
/// // The next request needs 600 more: refused (880 + 600 > 1,000) — but needed.
/// assert!(coder.reserve(BudgetPhase::ProviderRequest, TokenUsage::new(600, 0)?).is_err());
/// cycle.record_into(&mut usage)?;
///
/// // The recorder saw 880 + 600 = 1,480, not 880: the next cap grows.
/// assert_eq!(usage.last_total(), Some(1_480));
/// let next = usage.suggest(1_000, "0.1".parse()?); // ceil(1,480 × 1.1) = 1,628
/// assert_eq!(next.budget, 1_628);
/// let cap = next.run_budget(BudgetDimension::Input, None, &clock)?;
/// assert_eq!(cap.token_limit().and_then(|l| l.input()), Some(1_628));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct CycleDemand {
    dimension: BudgetDimension,
    /// Every tracked agent with the demand its tracker showed when tracked.
    tracked: Vec<(String, LocalTracker, TokenUsage)>,
}

impl CycleDemand {
    /// A cycle that records input-token demand (the size of what agents send:
    /// the quantity a context window budget bounds).
    pub fn input() -> Self {
        Self {
            dimension: BudgetDimension::Input,
            tracked: Vec::new(),
        }
    }

    /// A cycle that records output-token demand (what agents generate).
    pub fn output() -> Self {
        Self {
            dimension: BudgetDimension::Output,
            tracked: Vec::new(),
        }
    }

    /// The dimension this cycle records: [`BudgetDimension::Input`] or
    /// [`BudgetDimension::Output`].
    pub fn dimension(&self) -> BudgetDimension {
        self.dimension
    }

    /// Starts counting `agent`'s demand on `tracker` from now. Tracking one
    /// agent name on several trackers adds their demands up (the recorder
    /// adds repeated names, A-1). The tracker is shared, not copied: the
    /// cycle holds a handle to it until recorded.
    pub fn track(&mut self, agent: impl Into<String>, tracker: &LocalTracker) -> &mut Self {
        self.tracked
            .push((agent.into(), tracker.clone(), tracker.demand()));
        self
    }

    /// Each tracked agent's demand so far, in name order.
    ///
    /// # Errors
    /// [`UsageError::TotalOverflow`] if one agent's demand, summed over its
    /// trackers, does not fit in an `i64`.
    pub fn demand(&self) -> Result<BTreeMap<&str, i64>, UsageError> {
        let mut per_agent: BTreeMap<&str, i128> = BTreeMap::new();
        for (agent, tracker, start) in &self.tracked {
            let now = tracker.demand();
            let delta = i128::from(now.get(self.dimension)) - i128::from(start.get(self.dimension));
            *per_agent.entry(agent.as_str()).or_default() += delta.max(0);
        }
        per_agent
            .into_iter()
            .map(|(agent, total)| {
                i64::try_from(total)
                    .map(|t| (agent, t))
                    .map_err(|_| UsageError::TotalOverflow { cycle: 0, total })
            })
            .collect()
    }

    /// Records the cycle: every tracked agent with its demand since it was
    /// tracked. A cycle with no tracked agent records an idle cycle.
    ///
    /// # Errors
    /// What [`UsageRecorder::record_cycle`] returns (an empty agent name, or
    /// a cycle total beyond `i64::MAX`); the recorder is then unchanged.
    pub fn record_into(self, recorder: &mut UsageRecorder) -> Result<(), UsageError> {
        let demand = self.demand().map_err(|e| match e {
            UsageError::TotalOverflow { total, .. } => UsageError::TotalOverflow {
                cycle: recorder.cycles().saturating_add(1),
                total,
            },
            other => other,
        })?;
        recorder.record_cycle(demand)
    }
}

impl AdaptiveSuggestion {
    /// The suggested budget as a ceiling on one token dimension
    /// ([`BudgetDimension::Input`] or [`BudgetDimension::Output`]; the other
    /// is unlimited).
    ///
    /// # Errors
    /// [`RunError::NotATokenDimension`] for [`BudgetDimension::Deadline`]: a
    /// token suggestion is not a time.
    pub fn token_limit(&self, dimension: BudgetDimension) -> Result<TokenLimit, RunError> {
        match dimension {
            BudgetDimension::Input => TokenLimit::new(Some(self.budget), None),
            BudgetDimension::Output => TokenLimit::new(None, Some(self.budget)),
            _ => Err(RunError::NotATokenDimension { dimension }),
        }
    }

    /// The suggested budget as a [`RunBudget`] for the next cycle: a ceiling
    /// on `dimension` (see [`token_limit`](Self::token_limit)) and, if given,
    /// a deadline. Hand it to
    /// [`LocalTracker::child_named`](crate::LocalTracker::child_named) to
    /// cap an agent inside the run.
    ///
    /// # Errors
    /// As [`token_limit`](Self::token_limit), and as [`RunBudget::new`] (an
    /// expired deadline).
    pub fn run_budget<C: TimeProvider + ?Sized>(
        &self,
        dimension: BudgetDimension,
        deadline: Option<Deadline>,
        clock: &C,
    ) -> Result<RunBudget, RunError> {
        RunBudget::new(deadline, Some(self.token_limit(dimension)?), clock)
    }

    /// The suggested budget as the [`ContextBudget`] of one provider request
    /// whose window may hold `budget` tokens, with `output_reserve` tokens
    /// kept for the answer on top: `max_tokens = budget + output_reserve`,
    /// `target_tokens = budget`. Right when a cycle is one request and the
    /// cycle's demand was recorded in input tokens ([`CycleDemand::input`]).
    ///
    /// ```
    /// use cupel_run::{Decimal, UsageRecorder};
    /// let mut usage = UsageRecorder::new();
    /// usage.record_cycle([("agent", 3_000)])?;
    /// // ceil(3,000 × 1.2) = 3,600 for the window, 500 more for the answer.
    /// let budget = usage.suggest(4_000, "0.2".parse()?).context_budget(500)?;
    /// assert_eq!((budget.max_tokens(), budget.target_tokens()), (4_100, 3_600));
    /// assert_eq!(budget.output_reserve(), 500);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] for a negative `output_reserve`,
    /// [`CupelError::TokenOverflow`] when `budget + output_reserve` passes
    /// `i64::MAX`.
    pub fn context_budget(&self, output_reserve: i64) -> Result<ContextBudget, CupelError> {
        if output_reserve < 0 {
            return Err(CupelError::InvalidArgument(format!(
                "output_reserve must be >= 0 (got {output_reserve})"
            )));
        }
        let max =
            self.budget
                .checked_add(output_reserve)
                .ok_or_else(|| CupelError::TokenOverflow {
                    sign: cupel_core::TokenSign::Positive,
                    total: i128::from(self.budget) + i128::from(output_reserve),
                })?;
        ContextBudget::builder(max, self.budget)
            .output_reserve(output_reserve)
            .build()
    }
}
