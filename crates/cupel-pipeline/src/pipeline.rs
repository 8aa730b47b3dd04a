//! [`Pipeline`]: a policy bound to a budget, and its run methods.

use std::fmt;
use std::sync::Arc;

use cupel_core::{
    ContextBudget, ContextItem, CupelError, DiagnosticTraceCollector, FanOut, NullTraceCollector,
    OverflowEvent, OverflowStrategy, Placer, Scorer, SelectionReport, Slicer, TraceCollector,
    TraceDetailLevel,
};

use crate::policy::{Policy, PolicyBuilder};
use crate::run::execute;

/// Callback receiving the [`OverflowEvent`] of a run that overflowed under
/// [`OverflowStrategy::Proceed`].
pub type OverflowObserver = Arc<dyn Fn(&OverflowEvent) + Send + Sync>;

/// A [`Policy`] bound to a [`ContextBudget`]: the object you run.
///
/// `Pipeline` is immutable, cheap to clone and `Send + Sync`; one instance can
/// serve concurrent runs from many threads.
///
/// | method | returns | builds a report |
/// | --- | --- | --- |
/// | [`run`](Self::run) | the window | no (the hot path) |
/// | [`run_traced`](Self::run_traced) | the window | whatever the collector records |
/// | [`run_traced_with_report`](Self::run_traced_with_report) | the window and a [`SelectionReport`] | yes, and feeds the collector too |
/// | [`run_with_budget`](Self::run_with_budget) | the window under another budget | no |
/// | [`run_traced_with_budget`](Self::run_traced_with_budget) | the window under another budget | whatever the collector records |
/// | [`dry_run`](Self::dry_run) | a [`SelectionReport`] | yes |
/// | [`dry_run_with_budget`](Self::dry_run_with_budget) | a report under another budget | yes |
/// | [`dry_run_with_policy`](Self::dry_run_with_policy) | a report under another policy and budget | yes |
/// | [`run_within`](Self::run_within) | the window under a run budget, with its reservation | no |
///
/// The returned window holds clones of the input items; since
/// [`ContextItem`] is reference-counted, a clone costs one atomic increment.
///
/// # Per-request budgets
///
/// The budget given at build time is a default. An application serving models
/// with different context lengths keeps one pipeline and passes each
/// request's budget to [`run_with_budget`](Self::run_with_budget) (or
/// [`run_traced_with_budget`](Self::run_traced_with_budget),
/// [`dry_run_with_budget`](Self::dry_run_with_budget)): the policy is used in
/// place, nothing is cloned or rebuilt. [`with_budget`](Self::with_budget)
/// makes a pipeline with another default budget that shares this one's
/// components (`Arc` clones).
///
/// ```
/// use cupel_core::{ContextBudget, ContextItem};
/// use cupel_pipeline::Pipeline;
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
/// let window = pipeline.run_with_budget(&items, &small)?;
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

    /// Selects and orders the window for `items`.
    ///
    /// # Errors
    /// * [`CupelError::PinnedBudgetExceeded`] — pinned items need more than
    ///   `max_tokens - output_reserve`;
    /// * [`CupelError::BudgetOverflow`] — the selection exceeds the target
    ///   under [`OverflowStrategy::Throw`];
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

    /// Like [`run`](Self::run), reporting every stage and decision to `collector`.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_traced<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        collector: &mut C,
    ) -> Result<Vec<ContextItem>, CupelError> {
        execute(
            &self.policy,
            &self.budget,
            items,
            collector,
            self.overflow_observer.as_ref(),
        )
    }

    /// Like [`run_traced`](Self::run_traced), and also builds the run's
    /// [`SelectionReport`]: one run feeds `collector` (an OpenTelemetry
    /// bridge, say) and explains itself.
    ///
    /// The report equals what [`dry_run`](Self::dry_run) returns for the same
    /// items (durations in `events` aside); it is built by a
    /// [`DiagnosticTraceCollector`] at stage level running beside `collector`
    /// in a [`FanOut`] — use those two directly for another detail level or
    /// more collectors. Unlike a dry run this is a real run: an overflow
    /// observer set with [`PipelineBuilder::on_overflow`] is called.
    ///
    /// ```
    /// use cupel_core::{ContextBudget, ContextItem, NullTraceCollector};
    /// use cupel_pipeline::Pipeline;
    /// use cupel_placers::ChronologicalPlacer;
    /// use cupel_scorers::PriorityScorer;
    /// use cupel_slicers::GreedySlice;
    ///
    /// let pipeline = Pipeline::builder()
    ///     .scorer(PriorityScorer)
    ///     .slicer(GreedySlice::new())
    ///     .placer(ChronologicalPlacer)
    ///     .budget(ContextBudget::new(100, 60)?)
    ///     .build()?;
    /// let items = vec![
    ///     ContextItem::builder("kept", 50).priority(9).build()?,
    ///     ContextItem::builder("dropped", 40).priority(1).build()?,
    /// ];
    /// let (window, report) = pipeline.run_traced_with_report(&items, &mut NullTraceCollector)?;
    /// assert_eq!(window.len(), 1);
    /// assert_eq!(report.excluded[0].item.content(), "dropped");
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    ///
    /// # Errors
    /// As [`run`](Self::run); `collector` still sees the failure.
    pub fn run_traced_with_report<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        collector: &mut C,
    ) -> Result<(Vec<ContextItem>, SelectionReport), CupelError> {
        let mut both = FanOut::new(
            DiagnosticTraceCollector::new(TraceDetailLevel::Stage),
            collector,
        );
        let window = execute(
            &self.policy,
            &self.budget,
            items,
            &mut both,
            self.overflow_observer.as_ref(),
        )?;
        let (diagnostics, _) = both.into_inner();
        Ok((window, diagnostics.into_report()))
    }

    /// [`run`](Self::run) under another budget: the per-request form.
    ///
    /// The pipeline's policy is used in place (no component is cloned or
    /// rebuilt) and its own budget is ignored; the overflow observer still
    /// applies. The result is exactly what a pipeline built with `budget`
    /// would return. See [Per-request budgets](Self#per-request-budgets).
    ///
    /// # Errors
    /// As [`run`](Self::run), against `budget`.
    pub fn run_with_budget(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
    ) -> Result<Vec<ContextItem>, CupelError> {
        execute(
            &self.policy,
            budget,
            items,
            &mut NullTraceCollector,
            self.overflow_observer.as_ref(),
        )
    }

    /// [`run_traced`](Self::run_traced) under another budget.
    ///
    /// # Errors
    /// As [`run`](Self::run), against `budget`.
    pub fn run_traced_with_budget<C: TraceCollector + ?Sized>(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
        collector: &mut C,
    ) -> Result<Vec<ContextItem>, CupelError> {
        execute(
            &self.policy,
            budget,
            items,
            collector,
            self.overflow_observer.as_ref(),
        )
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

    /// Runs without side effects and explains every decision.
    ///
    /// Deterministic: the same items give the same report, byte for byte once
    /// serialised (durations in `events` aside).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn dry_run(&self, items: &[ContextItem]) -> Result<SelectionReport, CupelError> {
        report(&self.policy, &self.budget, items)
    }

    /// [`dry_run`](Self::dry_run) under another budget.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn dry_run_with_budget(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
    ) -> Result<SelectionReport, CupelError> {
        report(&self.policy, budget, items)
    }

    /// [`dry_run`](Self::dry_run) under another policy and budget, without
    /// building a new pipeline.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn dry_run_with_policy(
        &self,
        items: &[ContextItem],
        budget: &ContextBudget,
        policy: &Policy,
    ) -> Result<SelectionReport, CupelError> {
        report(policy, budget, items)
    }
}

fn report(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
) -> Result<SelectionReport, CupelError> {
    let mut collector = DiagnosticTraceCollector::new(TraceDetailLevel::Stage);
    execute(policy, budget, items, &mut collector, None)?;
    Ok(collector.into_report())
}

/// Builder for [`Pipeline`]: a budget plus either a whole [`Policy`] or its parts.
#[derive(Clone, Default)]
pub struct PipelineBuilder {
    policy: PolicyBuilder,
    budget: Option<ContextBudget>,
    overflow_observer: Option<OverflowObserver>,
}

impl fmt::Debug for PipelineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineBuilder")
            .field("policy", &self.policy)
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl PipelineBuilder {
    /// Uses every component and setting of `policy`.
    pub fn policy(mut self, policy: &Policy) -> Self {
        self.policy = PolicyBuilder::new()
            .scorer_arc(Arc::clone(&policy.scorer))
            .slicer_arc(Arc::clone(&policy.slicer))
            .placer_arc(Arc::clone(&policy.placer))
            .overflow_strategy(policy.overflow_strategy)
            .deduplication(policy.deduplication);
        self
    }

    /// Sets the budget (required).
    pub fn budget(mut self, budget: ContextBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Sets the scorer.
    pub fn scorer(mut self, scorer: impl Scorer + 'static) -> Self {
        self.policy = self.policy.scorer(scorer);
        self
    }

    /// Sets the slicer.
    pub fn slicer(mut self, slicer: impl Slicer + 'static) -> Self {
        self.policy = self.policy.slicer(slicer);
        self
    }

    /// Sets the placer.
    pub fn placer(mut self, placer: impl Placer + 'static) -> Self {
        self.policy = self.policy.placer(placer);
        self
    }

    /// Sets a shared scorer (e.g. one built from a [`PolicyConfig`](crate::PolicyConfig)).
    pub fn scorer_arc(mut self, scorer: Arc<dyn Scorer>) -> Self {
        self.policy = self.policy.scorer_arc(scorer);
        self
    }

    /// Sets a shared slicer.
    pub fn slicer_arc(mut self, slicer: Arc<dyn Slicer>) -> Self {
        self.policy = self.policy.slicer_arc(slicer);
        self
    }

    /// Sets a shared placer.
    pub fn placer_arc(mut self, placer: Arc<dyn Placer>) -> Self {
        self.policy = self.policy.placer_arc(placer);
        self
    }

    /// Sets the overflow strategy (default [`OverflowStrategy::Throw`]).
    pub fn overflow_strategy(mut self, strategy: OverflowStrategy) -> Self {
        self.policy = self.policy.overflow_strategy(strategy);
        self
    }

    /// Enables or disables deduplication (default enabled).
    pub fn deduplication(mut self, enabled: bool) -> Self {
        self.policy = self.policy.deduplication(enabled);
        self
    }

    /// Calls `observer` with the [`OverflowEvent`] whenever a run overflows
    /// under [`OverflowStrategy::Proceed`].
    pub fn on_overflow(
        mut self,
        observer: impl Fn(&OverflowEvent) + Send + Sync + 'static,
    ) -> Self {
        self.overflow_observer = Some(Arc::new(observer));
        self
    }

    /// Builds the pipeline.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] naming what is missing.
    pub fn build(self) -> Result<Pipeline, CupelError> {
        let budget = self.budget.ok_or_else(|| {
            CupelError::PipelineConfig("pipeline has no budget: call `.budget(...)`".into())
        })?;
        Ok(Pipeline {
            policy: self.policy.build()?,
            budget,
            overflow_observer: self.overflow_observer,
        })
    }
}
