//! [`UsageMeter`]: turns a provider's cumulative usage counter into the
//! deltas a [`LocalTracker`] records.

use crate::{BudgetDimension, RunError, TokenUsage};

use crate::tracker::{LocalTracker, Reservation};

/// Feeds a provider's *cumulative* usage counter into a tracker.
///
/// Providers (and the seed) report usage as running totals for a session:
/// after three calls the counter says what all three used together.
/// [`LocalTracker::record`] and [`Reservation::settle`] take the usage of
/// *one* step, so passing a running total to them counts every earlier call
/// again. A meter remembers the last total it saw and charges only the
/// increase (R-18):
///
/// ```
/// use cupel_run::{LocalTracker, FixedTimeProvider, RunBudget, TokenUsage};
/// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
/// let run = LocalTracker::new(RunBudget::unlimited(), clock)?;
/// let mut meter = run.meter();
/// // The session counter after the first and the second call:
/// assert_eq!(meter.observe_total(TokenUsage::new(1_000, 200)?)?, TokenUsage::new(1_000, 200)?);
/// assert_eq!(meter.observe_total(TokenUsage::new(1_500, 260)?)?, TokenUsage::new(500, 60)?);
/// // Recorded 1500 / 260 in all, not 2500 / 460.
/// assert_eq!(run.usage(), TokenUsage::new(1_500, 260)?);
/// // A counter that goes down is refused, and nothing is recorded.
/// assert!(meter.observe_total(TokenUsage::new(1_400, 300)?).is_err());
/// assert_eq!(run.usage(), TokenUsage::new(1_500, 260)?);
/// # Ok::<(), cupel_run::RunError>(())
/// ```
///
/// Use one meter per counter (one per provider session): two meters fed the
/// same counter would each charge its increases. A meter records through the
/// scope of the tracker it came from, so a subagent's meter charges the
/// subagent's scope and its ancestors. It is `Send`, and its methods take
/// `&mut self`: a counter is read in order by whoever owns it.
#[derive(Debug)]
pub struct UsageMeter {
    tracker: LocalTracker,
    last: TokenUsage,
}

/// The increase of a cumulative counter from `last` to `total`, per
/// dimension, after checking that neither went down (R-18). Both meters
/// ([`UsageMeter`] and the shared one) count with it.
pub(crate) fn increase(last: TokenUsage, total: TokenUsage) -> Result<TokenUsage, RunError> {
    for dimension in [BudgetDimension::Input, BudgetDimension::Output] {
        let (previous, observed) = (last.get(dimension), total.get(dimension));
        if observed < previous {
            return Err(RunError::UsageCounterDecreased {
                dimension,
                previous,
                observed,
            });
        }
    }
    // Both differences are in 0..=observed, so they are valid usages.
    TokenUsage::new(total.input() - last.input(), total.output() - last.output())
}

impl LocalTracker {
    /// A [`UsageMeter`] for a counter that starts at zero, recording through
    /// this tracker's scope.
    pub fn meter(&self) -> UsageMeter {
        self.meter_from(TokenUsage::ZERO)
    }

    /// A [`UsageMeter`] for a counter that already reads `baseline`, whose
    /// usage so far is accounted for elsewhere (recorded before, or not part
    /// of this run): only increases beyond `baseline` are recorded.
    pub fn meter_from(&self, baseline: TokenUsage) -> UsageMeter {
        UsageMeter {
            tracker: self.clone(),
            last: baseline,
        }
    }
}

impl UsageMeter {
    /// The last total observed (the baseline before any observation).
    pub fn last_total(&self) -> TokenUsage {
        self.last
    }

    /// The tracker the meter records through.
    pub fn tracker(&self) -> &LocalTracker {
        &self.tracker
    }

    /// Records the increase of the counter since the last observation
    /// (`total - last_total`, per dimension) and returns it. A total equal to
    /// the last one records nothing.
    ///
    /// # Errors
    /// [`RunError::UsageCounterDecreased`] when either dimension of
    /// `total` is below the last observation (input checked first). Nothing
    /// is recorded and the meter keeps its last total.
    pub fn observe_total(&mut self, total: TokenUsage) -> Result<TokenUsage, RunError> {
        let delta = self.advance(total)?;
        self.tracker.record(delta);
        Ok(delta)
    }

    /// Settles `reservation` with the increase of the counter since the last
    /// observation (see [`observe_total`](Self::observe_total)) and returns
    /// the increase: the usual close of a reserved provider call whose
    /// response carries the session's running total.
    ///
    /// # Errors
    /// [`RunError::UsageCounterDecreased`] as for
    /// [`observe_total`](Self::observe_total); the reservation is then
    /// released (dropped) and nothing is recorded.
    pub fn settle_total(
        &mut self,
        reservation: Reservation,
        total: TokenUsage,
    ) -> Result<TokenUsage, RunError> {
        let delta = self.advance(total)?;
        reservation.settle(delta);
        Ok(delta)
    }

    /// `total - last` (see [`increase`]); moves `last` to `total`.
    fn advance(&mut self, total: TokenUsage) -> Result<TokenUsage, RunError> {
        let delta = increase(self.last, total)?;
        self.last = total;
        Ok(delta)
    }
}
