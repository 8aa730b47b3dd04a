//! [`Pipeline`]: a policy bound to a budget, and its run methods.

use std::fmt;
use std::sync::Arc;

use cupel_core::{
    ContextBudget, ContextItem, CupelError, DiagnosticTraceCollector, FanOut, NullTraceCollector,
    OverflowEvent, Query, SelectionReport, TraceCollector, TraceDetailLevel,
};
use cupel_run::store::SharedReservation;
use cupel_run::{Reservation, RunTracker};

#[cfg(doc)]
use crate::run_budget::SelectWithinError;
use crate::run_budget::{NoRunBudget, RunBudgetSlot, Selection, WithRunBudget};

use crate::policy::{Policy, PolicyBuilder};
use crate::run::{execute, execute_with};

/// Callback receiving the [`OverflowEvent`] of a run that overflowed under
/// [`OverflowStrategy::Proceed`](cupel_core::OverflowStrategy::Proceed).
pub type OverflowObserver = Arc<dyn Fn(&OverflowEvent) + Send + Sync>;

/// A [`Policy`] bound to a [`ContextBudget`]: the object you run.
///
/// `Pipeline` is immutable, cheap to clone and `Send + Sync`; one instance can
/// serve concurrent runs from many threads.
///
/// | method | returns | builds a report |
/// | --- | --- | --- |
/// | [`run`](Self::run) | the window | no (the hot path) |
/// | [`dry_run`](Self::dry_run) | a [`SelectionReport`], no side effects | yes |
/// | [`run_with`](Self::run_with) | a [`RunOutput`], as [`RunOptions`] ask | if asked |
///
/// [`RunOptions`] combine freely: a per-request budget or policy, a
/// [`TraceCollector`] to feed, a report, a dry run, a run budget. The
/// earlier one-per-combination methods (`run_traced`, `run_with_budget`,
/// `dry_run_with_budget`, `run_within`, ...) remain, deprecated, for one
/// minor version.
///
/// The returned window holds clones of the input items; since
/// [`ContextItem`] is reference-counted, a clone costs one atomic increment.
///
/// # Per-request budgets
///
/// The budget given at build time is a default. An application serving models
/// with different context lengths keeps one pipeline and passes each
/// request's budget in [`RunOptions::budget`]: the policy is used in place,
/// nothing is cloned or rebuilt. [`with_budget`](Self::with_budget) makes a
/// pipeline with another default budget that shares this one's components
/// (`Arc` clones).
///
/// ```
/// use cupel_core::{ContextBudget, ContextItem};
/// use cupel_pipeline::{Pipeline, RunOptions};
/// use cupel_placers::ChronologicalPlacer;
/// use cupel_scorers::PriorityScorer;
/// use cupel_slicers::GreedySlice;
///
/// let pipeline = Pipeline::builder()
///     .scorer(PriorityScorer)
///     .slicer(GreedySlice::new())
///     .placer(ChronologicalPlacer)
///     .budget(ContextBudget::new(8_000, 6_000)?)
///     .build()?;
/// let items = vec![
///     ContextItem::builder("most important", 50).priority(9).build()?,
///     ContextItem::builder("useful", 40).priority(5).build()?,
///     ContextItem::builder("nice to have", 30).priority(1).build()?,
/// ];
/// // Scores 1.0, 0.5, 0.0; densities 0.02, 0.0125, 0.0. A small model with
/// // target 100 takes 50 (50 left) and 40 (10 left); the 30 no longer fits.
/// let small = ContextBudget::new(128, 100)?;
/// let window = pipeline.run_with(&items, RunOptions::new().budget(&small))?.items;
/// assert_eq!(window.len(), 2);
/// // The pipeline's own (large) budget takes everything.
/// assert_eq!(pipeline.run(&items)?.len(), 3);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
///
/// # Shared components
///
/// Components given as `Arc`s (the `*_arc` setters) can be shared by many
/// pipelines:
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{ContextBudget, ContextItem, Scorer};
/// use cupel_pipeline::Pipeline;
/// use cupel_placers::UShapedPlacer;
/// use cupel_scorers::PriorityScorer;
/// use cupel_slicers::GreedySlice;
///
/// let shared: Arc<dyn Scorer> = Arc::new(PriorityScorer::new());
/// let pipeline = Pipeline::builder()
///     .scorer_arc(Arc::clone(&shared)) // shared with other pipelines
///     .slicer(GreedySlice::new())
///     .placer(UShapedPlacer)
///     .budget(ContextBudget::new(1_000, 30)?)
///     .build()?;
/// let items = vec![
///     ContextItem::builder("low", 10).priority(1).build()?,
///     ContextItem::builder("high", 10).priority(9).build()?,
///     ContextItem::builder("mid", 10).priority(5).build()?,
/// ];
/// let window = pipeline.run(&items)?;
/// // U-shaped: best first, second best last, the rest in the middle.
/// let contents: Vec<&str> = window.iter().map(|i| i.content()).collect();
/// assert_eq!(contents, ["high", "low", "mid"]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct Pipeline {
    pub(crate) policy: Policy,
    pub(crate) budget: ContextBudget,
    pub(crate) overflow_observer: Option<OverflowObserver>,
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("policy", &self.policy)
            .field("budget", &self.budget)
            .field("overflow_observer", &self.overflow_observer.is_some())
            .finish()
    }
}

impl Pipeline {
    /// A pipeline running `policy` under `budget`.
    pub fn new(policy: Policy, budget: ContextBudget) -> Self {
        Self {
            policy,
            budget,
            overflow_observer: None,
        }
    }

    /// Starts a [`PipelineBuilder`].
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder::default()
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The budget.
    pub fn budget(&self) -> &ContextBudget {
        &self.budget
    }

    /// Selects and orders the window for `items` under the pipeline's own
    /// budget: the hot path, no report built. The same as
    /// [`run_with`](Self::run_with) with default [`RunOptions`].
    ///
    /// # Errors
    /// * [`CupelError::PinnedBudgetExceeded`] — pinned items need more than
    ///   `max_tokens - output_reserve`;
    /// * [`CupelError::BudgetOverflow`] — the selection exceeds the target
    ///   under [`OverflowStrategy::Throw`](cupel_core::OverflowStrategy::Throw);
    /// * [`CupelError::TokenOverflow`] — the items' token counts cannot be summed in `i64`;
    /// * errors from the slicer (e.g. `TableTooLarge`, `CountRequirementNotMet`);
    /// * [`CupelError::PipelineConfig`] — a custom component broke its contract.
    pub fn run(&self, items: &[ContextItem]) -> Result<Vec<ContextItem>, CupelError> {
        execute(
            &self.policy,
            &self.budget,
            items,
            &mut NullTraceCollector,
            self.overflow_observer.as_ref(),
        )
    }

    /// Runs without side effects (no overflow observer is called) and
    /// explains every decision: the same as [`run_with`](Self::run_with)
    /// with `RunOptions::new().dry(true).report(true)`.
    ///
    /// Deterministic: the same items give the same report, byte for byte once
    /// serialised (durations in `events` aside).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn dry_run(&self, items: &[ContextItem]) -> Result<SelectionReport, CupelError> {
        // Only the report is returned: the window is not built.
        let mut report = DiagnosticTraceCollector::new(TraceDetailLevel::Stage);
        execute_with(&self.policy, &self.budget, items, &mut report, None, false)?;
        Ok(report.into_report())
    }

    /// The one run method: selects the window for `items` as `options` asks
    /// — under another budget or policy, feeding a collector, building a
    /// report, without side effects, under a run budget, in any combination.
    /// [`run`](Self::run) and [`dry_run`](Self::dry_run) are shorthands.
    ///
    /// ```
    /// use cupel_core::{ContextBudget, ContextItem, DiagnosticTraceCollector, ExclusionReason};
    /// use cupel_pipeline::{Pipeline, RunOptions};
    /// use cupel_placers::ChronologicalPlacer;
    /// use cupel_scorers::PriorityScorer;
    /// use cupel_slicers::GreedySlice;
    ///
    /// let pipeline = Pipeline::builder()
    ///     .scorer(PriorityScorer)
    ///     .slicer(GreedySlice::new())
    ///     .placer(ChronologicalPlacer)
    ///     .budget(ContextBudget::new(8_000, 6_000)?)
    ///     .build()?;
    /// let items = vec![
    ///     ContextItem::builder("kept", 50).priority(9).build()?,
    ///     ContextItem::builder("dropped", 40).priority(1).build()?,
    /// ];
    /// // A request for a small model: its own budget, a report, and a collector
    /// // (an OpenTelemetry bridge, say) fed by the same run.
    /// let small = ContextBudget::new(100, 60)?;
    /// let mut telemetry = DiagnosticTraceCollector::default();
    /// let out = pipeline.run_with(
    ///     &items,
    ///     RunOptions::new().budget(&small).collector(&mut telemetry).report(true),
    /// )?;
    /// // Scores 1.0 and 0.0: "kept" (50) fits the target 60, "dropped" (40) no longer does.
    /// assert_eq!(out.items.len(), 1);
    /// let report = out.report.expect("asked for");
    /// assert_eq!(report.excluded[0].position, 1);
    /// assert!(matches!(report.excluded[0].reason, ExclusionReason::BudgetExceeded { .. }));
    /// assert_eq!(telemetry.into_report(), report);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    ///
    /// # Errors
    /// Without a run budget, a [`CupelError`]: as [`run`](Self::run),
    /// against the budget and policy in effect. With one, a
    /// [`SelectWithinError`]: the selection's error or the run budget's (see
    /// [`RunOptions::run_budget`]); a dry run with a run budget is a
    /// [`CupelError::PipelineConfig`] (holding tokens is a side effect).
    pub fn run_with<C: TraceCollector + ?Sized, S: RunBudgetSlot>(
        &self,
        items: &[ContextItem],
        options: RunOptions<'_, C, S>,
    ) -> Result<RunOutput<S::Hold>, S::Error> {
        let RunOptions {
            budget,
            policy,
            collector,
            report,
            dry,
            run_budget,
            run_budgets,
            query,
        } = options;
        let policy = policy.unwrap_or(&self.policy);
        // A query binds the scorer to it for this run only (one `Arc` and a
        // policy clone per run with a query; none without).
        let bound;
        let policy = match query {
            None => policy,
            Some(query) => {
                bound = policy.with_query(query);
                &bound
            }
        };
        let budget = budget.unwrap_or(&self.budget);
        let observer = if dry {
            None
        } else {
            self.overflow_observer.as_ref()
        };
        if run_budgets > 1 {
            return Err(CupelError::PipelineConfig(
                "a run holds tokens on one run budget: give `run_budget` once, not both".into(),
            )
            .into());
        }
        run_budget.select(Selection {
            policy,
            budget,
            items,
            collector,
            report,
            dry,
            observer,
        })
    }

    /// Like [`run`](Self::run), reporting every stage and decision to `collector`.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().collector(c))`"
    )]
    pub fn run_traced<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        collector: &mut C,
    ) -> Result<Vec<ContextItem>, CupelError> {
        self.run_with(items, RunOptions::new().collector(collector))
            .map(|o| o.items)
    }

    /// Like [`run_traced`](Self::run_traced), and also builds the run's
    /// [`SelectionReport`] (a [`DiagnosticTraceCollector`] at stage level
    /// beside `collector` in a [`FanOut`]).
    ///
    /// # Errors
    /// As [`run`](Self::run); `collector` still sees the failure.
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().collector(c).report(true))`"
    )]
    pub fn run_traced_with_report<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        collector: &mut C,
    ) -> Result<(Vec<ContextItem>, SelectionReport), CupelError> {
        let out = self.run_with(items, RunOptions::new().collector(collector).report(true))?;
        Ok((out.items, out.report.unwrap_or_default()))
    }

    /// [`run`](Self::run) under another budget: the per-request form.
    ///
    /// # Errors
    /// As [`run`](Self::run), against `budget`.
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().budget(b))`"
    )]
    pub fn run_with_budget(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
    ) -> Result<Vec<ContextItem>, CupelError> {
        self.run_with(items, RunOptions::new().budget(budget))
            .map(|o| o.items)
    }

    /// [`run_traced`](Self::run_traced) under another budget.
    ///
    /// # Errors
    /// As [`run`](Self::run), against `budget`.
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().budget(b).collector(c))`"
    )]
    pub fn run_traced_with_budget<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
        collector: &mut C,
    ) -> Result<Vec<ContextItem>, CupelError> {
        self.run_with(items, RunOptions::new().budget(budget).collector(collector))
            .map(|o| o.items)
    }

    /// A pipeline with the same policy (its components shared, not cloned)
    /// and overflow observer, and `budget` as its default budget.
    pub fn with_budget(&self, budget: ContextBudget) -> Pipeline {
        Pipeline {
            policy: self.policy.clone(),
            budget,
            overflow_observer: self.overflow_observer.clone(),
        }
    }

    /// [`dry_run`](Self::dry_run) under another budget.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().budget(b).dry(true).report(true))`"
    )]
    pub fn dry_run_with_budget(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
    ) -> Result<SelectionReport, CupelError> {
        let options = RunOptions::new().budget(budget).dry(true).report(true);
        Ok(self.run_with(items, options)?.report.unwrap_or_default())
    }

    /// [`dry_run`](Self::dry_run) under another policy and budget, without
    /// building a new pipeline.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    #[deprecated(
        since = "0.2.0",
        note = "use `run_with(items, RunOptions::new().policy(p).budget(b).dry(true).report(true))`"
    )]
    pub fn dry_run_with_policy(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
        policy: &Policy,
    ) -> Result<SelectionReport, CupelError> {
        let options = RunOptions::new()
            .policy(policy)
            .budget(budget)
            .dry(true)
            .report(true);
        Ok(self.run_with(items, options)?.report.unwrap_or_default())
    }
}

/// One selection, fed to `collector` if any, with a stage-level report if
/// `report` asks for one. Each combination is its own compiled engine: an
/// untraced run never builds a record.
pub(crate) fn select<C: TraceCollector + ?Sized>(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
    collector: Option<&mut C>,
    report: bool,
    observer: Option<&OverflowObserver>,
) -> Result<(Vec<ContextItem>, Option<SelectionReport>), CupelError> {
    let diagnostics = || DiagnosticTraceCollector::new(TraceDetailLevel::Stage);
    match (collector, report) {
        (None, false) => Ok((
            execute(policy, budget, items, &mut NullTraceCollector, observer)?,
            None,
        )),
        (None, true) => {
            let mut d = diagnostics();
            let window = execute(policy, budget, items, &mut d, observer)?;
            Ok((window, Some(d.into_report())))
        }
        (Some(c), false) => Ok((execute(policy, budget, items, c, observer)?, None)),
        (Some(c), true) => {
            let mut both = FanOut::new(diagnostics(), c);
            let window = execute(policy, budget, items, &mut both, observer)?;
            Ok((window, Some(both.into_inner().0.into_report())))
        }
    }
}

/// What a run should do besides selecting, for [`Pipeline::run_with`]:
/// another budget or policy for this request, a collector to feed, a
/// report to build, no side effects, a run budget to hold tokens on. Every
/// option is independent of the others; the default is a plain
/// [`run`](Pipeline::run).
///
/// `C` is the collector's type; [`collector`](Self::collector) sets it.
///
/// `S` says whether the run holds tokens on a run budget:
/// [`NoRunBudget`] (the default: the run returns a [`CupelError`]) or
/// [`WithRunBudget`] ([`run_budget`](Self::run_budget) sets it: the run
/// returns a [`SelectWithinError`], the selection's error or the run
/// budget's).
pub struct RunOptions<
    'a,
    C: TraceCollector + ?Sized = NullTraceCollector,
    S: RunBudgetSlot = NoRunBudget,
> {
    budget: Option<&'a ContextBudget>,
    policy: Option<&'a Policy>,
    collector: Option<&'a mut C>,
    report: bool,
    dry: bool,
    run_budget: S,
    /// How many run budgets were given (more than one is an error).
    run_budgets: u8,
    query: Option<&'a Query>,
}

impl RunOptions<'_> {
    /// The options of a plain run: the pipeline's own budget and policy, no
    /// collector, no report.
    pub fn new() -> Self {
        RunOptions {
            budget: None,
            policy: None,
            collector: None,
            report: false,
            dry: false,
            run_budget: NoRunBudget,
            run_budgets: 0,
            query: None,
        }
    }
}

impl Default for RunOptions<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: TraceCollector + ?Sized, S: RunBudgetSlot> fmt::Debug for RunOptions<'_, C, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("budget", &self.budget)
            .field("policy", &self.policy)
            .field("collector", &self.collector.is_some())
            .field("report", &self.report)
            .field("dry", &self.dry)
            .field("run_budget", &self.run_budget.holds())
            .field("query", &self.query)
            .finish()
    }
}

impl<'a, C: TraceCollector + ?Sized, S: RunBudgetSlot> RunOptions<'a, C, S> {
    /// Runs under `budget` instead of the pipeline's own (a per-request
    /// budget: the policy is used in place, nothing is rebuilt).
    #[must_use]
    pub fn budget(mut self, budget: &'a ContextBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Runs `policy` instead of the pipeline's own (the overflow observer
    /// still applies unless the run is [`dry`](Self::dry)).
    #[must_use]
    pub fn policy(mut self, policy: &'a Policy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Reports every stage and decision of the run to `collector`.
    pub fn collector<D: TraceCollector + ?Sized>(
        self,
        collector: &'a mut D,
    ) -> RunOptions<'a, D, S> {
        RunOptions {
            budget: self.budget,
            policy: self.policy,
            collector: Some(collector),
            report: self.report,
            dry: self.dry,
            run_budget: self.run_budget,
            run_budgets: self.run_budgets,
            query: self.query,
        }
    }

    /// Runs with `query`: what the request is about, for query-aware
    /// scorers (such as `cupel_scorers::Bm25Scorer`), which read it through
    /// [`Scorer::score_all_in`](cupel_core::Scorer::score_all_in).
    ///
    /// Without a query (the default) the run is exactly a plain run: the
    /// scorer's `score_all` is called, nothing is wrapped or allocated. With
    /// one, the policy's scorer is called through `score_all_in` with a
    /// [`ScoreContext`](cupel_core::ScoreContext) holding the query; scorers
    /// that do not read the query score as before.
    #[must_use]
    pub fn query(mut self, query: &'a Query) -> Self {
        self.query = Some(query);
        self
    }

    /// Builds the run's [`SelectionReport`] ([`RunOutput::report`]), at
    /// stage level, beside any collector.
    #[must_use]
    pub fn report(mut self, wanted: bool) -> Self {
        self.report = wanted;
        self
    }

    /// A dry run: no side effects (the overflow observer set with
    /// [`PipelineBuilder::on_overflow`] is not called).
    #[must_use]
    pub fn dry(mut self, dry: bool) -> Self {
        self.dry = dry;
        self
    }

    /// Selects under the run budget tracked by `tracker` ([`RunOutput::hold`]):
    /// any [`RunTracker`] — the in-process `cupel_run::LocalTracker`, or a
    /// `cupel_run::store::SharedTracker` whose books are in a store (e.g.
    /// Redis) shared across processes. For a shared tracker every step below
    /// is checked and held in the store; a store failure is
    /// [`RunError::StoreFailed`](cupel_run::RunError::StoreFailed) (or, for
    /// a tracker failing open, a
    /// selection under the pipeline's own budget with an unverified hold).
    ///
    /// 1. **Pre-flight**: an expired deadline or a depleted dimension on the
    ///    tracker fails the call before anything is selected.
    /// 2. **Clamp**: with `R` input tokens left on the tracker (the smallest
    ///    allowance of its scope and ancestors, reservations counted), the
    ///    window may hold at most `R` tokens: when `R` is below
    ///    `max_tokens - output_reserve`, the selection runs under
    ///    `max_tokens = R + output_reserve` and `target_tokens =
    ///    min(target_tokens, R)`. The clamp never raises a limit: the
    ///    pipeline's own budget stays the upper bound.
    /// 3. **Select** as the other options ask (a per-request
    ///    [`budget`](Self::budget) is the one clamped; a collector sees the
    ///    clamped budget).
    /// 4. **Reserve** the request on the tracker, atomically: the selected
    ///    tokens as input, and for the output the pipeline's
    ///    `output_reserve` (lowered to the output allowance left).
    ///
    /// # `output_reserve` and the output ceiling
    /// `output_reserve` is the room kept in the context window for the
    /// model's answer, i.e. the longest answer this request allows. Under a
    /// run budget it is also the request's *projected output cost*: it is
    /// reserved against the output ceiling, so concurrent subagents cannot
    /// together promise more output than the run has left. When less output
    /// allowance remains than `output_reserve`, only what remains is reserved
    /// and [`RunHold::max_output_tokens`] says so — pass it to the
    /// provider as the generation limit. The reserve does not shrink the
    /// input clamp: input and output are separate ceilings.
    ///
    /// **With `output_reserve = 0` nothing is reserved for the answer.**
    /// `max_output_tokens` is then the whole output allowance left (or
    /// `None` when output is unbounded) — a number, not a hold: concurrent
    /// holders that select at the same time are each told the same
    /// remaining tokens, and if they all use them the run's output ceiling is
    /// passed (recorded when they settle; the next checkpoint fails). Use a
    /// positive `output_reserve` — the longest answer one request may write —
    /// whenever subagents share an output ceiling (R-20).
    ///
    /// # Pinned items that do not fit the run
    /// If the pinned items alone fit the pipeline's own budget but not the
    /// input the run has left, the call fails with the run-budget error of a
    /// `provider_request` check for the pinned tokens — found with the
    /// non-latching [`RunTracker::would_fit`], so the tracker is **not**
    /// halted: nothing was requested, and the caller may retry with fewer
    /// pins, a smaller pipeline or after other holders release their
    /// reservations (R-19).
    ///
    /// # Projected duration
    /// The window's reservation carries no duration. To refuse a request
    /// that would outlive the deadline (R-17), check the time first:
    /// `tracker.check_request(&RunRequest::provider_request(TokenUsage::ZERO)
    /// .with_duration(expected)?)` — the time rule does not depend on the
    /// tokens.
    ///
    /// # Errors (of [`Pipeline::run_with`])
    /// With a run budget, [`run_with`](Pipeline::run_with) returns a
    /// [`SelectWithinError`]:
    /// * [`SelectWithinError::Run`] holding
    ///   [`RunError::Exceeded`](cupel_run::RunError::Exceeded) — the
    ///   pre-flight check failed (phase `preflight`; the tracker is halted),
    ///   pinned items alone need more input tokens than remain (phase
    ///   `provider_request`; not halted, see above), or another holder
    ///   consumed the room between the clamp and the reservation (phase
    ///   `provider_request`; halted); or
    ///   [`RunError::StoreFailed`](cupel_run::RunError::StoreFailed) — a
    ///   shared tracker's store failed;
    /// * [`SelectWithinError::Selection`] holding every error of
    ///   [`Pipeline::run`], and a [`CupelError::PipelineConfig`] for a dry
    ///   run (holding tokens is a side effect).
    ///
    /// A function that builds items and runs under a run budget can return
    /// [`SelectWithinError`] itself: `?` converts both error types into it.
    ///
    /// ```
    /// use cupel_core::{ContextBudget, ContextItem, FixedTimeProvider};
    /// use cupel_run::{LocalTracker, RunBudget, TokenLimit, TokenUsage};
    /// use cupel_pipeline::{Pipeline, RunOptions};
    /// use cupel_placers::ChronologicalPlacer;
    /// use cupel_scorers::ReflexiveScorer;
    /// use cupel_slicers::GreedySlice;
    ///
    /// let clock = FixedTimeProvider::new("2026-01-01T00:00:00Z".parse().unwrap());
    /// let run = LocalTracker::new(
    ///     RunBudget::new(None, Some(TokenLimit::new(Some(100), Some(1_000))?), &clock)?,
    ///     clock,
    /// )?;
    /// run.record(TokenUsage::new(40, 0)?); // earlier turns used 40 input tokens
    ///
    /// let pipeline = Pipeline::builder()
    ///     .scorer(ReflexiveScorer::new())
    ///     .slicer(GreedySlice::new())
    ///     .placer(ChronologicalPlacer)
    ///     .budget(ContextBudget::builder(4_096, 4_000).output_reserve(256).build()?)
    ///     .build()?;
    /// let items = vec![
    ///     ContextItem::builder("best", 50).future_relevance_hint(0.9).build()?,
    ///     ContextItem::builder("good", 30).future_relevance_hint(0.5).build()?,
    /// ];
    /// // 100 - 40 = 60 input tokens left: "best" (50) fits, "good" (30) no longer does.
    /// let out = pipeline.run_with(&items, RunOptions::new().run_budget(&run))?;
    /// assert_eq!(out.items.len(), 1);
    /// let hold = out.hold.expect("a run budget was given");
    /// assert_eq!(hold.context_budget.target_tokens(), 60);
    /// assert_eq!(hold.max_output_tokens, Some(256));
    /// // ... call the model, then settle with what it reports:
    /// hold.reservation.settle(TokenUsage::new(50, 120)?);
    /// assert_eq!(run.usage(), TokenUsage::new(90, 120)?);
    /// # Ok::<(), cupel_pipeline::SelectWithinError>(())
    /// ```
    #[must_use]
    pub fn run_budget<T: RunTracker>(
        self,
        tracker: &'a T,
    ) -> RunOptions<'a, C, WithRunBudget<'a, T::Reservation>> {
        RunOptions {
            budget: self.budget,
            policy: self.policy,
            collector: self.collector,
            report: self.report,
            dry: self.dry,
            run_budget: WithRunBudget(tracker),
            run_budgets: self.run_budgets.saturating_add(1),
            query: self.query,
        }
    }

    /// Selects under a run budget shared across processes: now
    /// [`run_budget`](Self::run_budget), which takes either tracker.
    ///
    /// # Errors
    /// As [`run_budget`](Self::run_budget).
    #[deprecated(
        since = "0.2.0",
        note = "use `run_budget`, which takes any `RunTracker`"
    )]
    #[must_use]
    pub fn shared_run_budget(
        self,
        tracker: &'a cupel_run::store::SharedTracker,
    ) -> RunOptions<'a, C, WithRunBudget<'a, SharedReservation>> {
        self.run_budget(tracker)
    }
}

/// The result of [`Pipeline::run_with`]; `R` is the reservation type of
/// the run budget's tracker ([`Reservation`] in process,
/// [`SharedReservation`] for a shared one).
#[derive(Debug)]
#[non_exhaustive]
pub struct RunOutput<R = Reservation> {
    /// The window, in placed order.
    pub items: Vec<ContextItem>,
    /// The run's report, when [`RunOptions::report`] asked for one.
    pub report: Option<SelectionReport>,
    /// What the run holds on its run budget, when
    /// [`RunOptions::run_budget`] gave one.
    pub hold: Option<RunHold<R>>,
}

/// The tokens a run holds on its run budget ([`RunOptions::run_budget`]),
/// whichever tracker keeps it: `R` is the tracker's reservation.
#[derive(Debug)]
#[non_exhaustive]
pub struct RunHold<R = Reservation> {
    /// The sum of the selected items' tokens (reserved as input usage).
    pub input_tokens: i64,
    /// The most the model may generate for this request without breaking the
    /// output ceiling: the `output_reserve`, lowered to the output allowance
    /// left; `None` when neither bounds it (see [`RunOptions::run_budget`]).
    pub max_output_tokens: Option<i64>,
    /// The budget the selection ran under, clamped to the run's remaining
    /// input allowance.
    pub context_budget: ContextBudget,
    /// The tokens held on the tracker (for a shared tracker, in the store
    /// under its lease); settle it with the provider's usage.
    pub reservation: R,
}

/// The tokens a run holds on a shared run budget: a [`RunHold`] of a
/// [`SharedReservation`].
#[deprecated(since = "0.2.0", note = "use `RunHold<SharedReservation>`")]
pub type SharedRunHold = RunHold<SharedReservation>;

/// Builder for [`Pipeline`]: a budget plus either a whole [`Policy`] or its
/// parts.
///
/// It is a [`PolicyBuilder`] that also collects the pipeline's parts
/// ([`PipelineParts`]): the component setters (`scorer`, `slicer_arc`,
/// `overflow_strategy`, ...) are the policy builder's, written once; the
/// methods below are the pipeline's own.
pub type PipelineBuilder = PolicyBuilder<PipelineParts>;

/// What a [`PipelineBuilder`] collects besides the policy: the budget and
/// the overflow observer.
#[derive(Clone, Default)]
pub struct PipelineParts {
    budget: Option<ContextBudget>,
    overflow_observer: Option<OverflowObserver>,
}

impl fmt::Debug for PipelineParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineParts")
            .field("budget", &self.budget)
            .field("overflow_observer", &self.overflow_observer.is_some())
            .finish()
    }
}

impl PolicyBuilder<PipelineParts> {
    /// Uses every component and setting of `policy`.
    pub fn policy(self, policy: &Policy) -> Self {
        PolicyBuilder {
            scorer: Some(Arc::clone(&policy.scorer)),
            slicer: Some(Arc::clone(&policy.slicer)),
            placer: Some(Arc::clone(&policy.placer)),
            overflow_strategy: policy.overflow_strategy,
            deduplication: Some(policy.deduplication),
            rest: self.rest,
        }
    }

    /// Sets the budget (required).
    pub fn budget(mut self, budget: ContextBudget) -> Self {
        self.rest.budget = Some(budget);
        self
    }

    /// Calls `observer` with the [`OverflowEvent`] whenever a run overflows
    /// under [`OverflowStrategy::Proceed`](cupel_core::OverflowStrategy::Proceed).
    pub fn on_overflow(
        mut self,
        observer: impl Fn(&OverflowEvent) + Send + Sync + 'static,
    ) -> Self {
        self.rest.overflow_observer = Some(Arc::new(observer));
        self
    }

    /// Builds the pipeline.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] naming what is missing.
    pub fn build(self) -> Result<Pipeline, CupelError> {
        if self.rest.budget.is_none() {
            return Err(CupelError::PipelineConfig(
                "pipeline has no budget: call `.budget(...)`".into(),
            ));
        }
        let (policy, rest) = self.into_policy()?;
        let budget = rest.budget.ok_or_else(|| {
            CupelError::PipelineConfig("pipeline has no budget: call `.budget(...)`".into())
        })?;
        Ok(Pipeline {
            policy,
            budget,
            overflow_observer: rest.overflow_observer,
        })
    }
}
