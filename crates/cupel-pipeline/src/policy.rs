//! [`Policy`]: the scorer, slicer, placer and overflow rules of a selection.

use std::fmt;
use std::sync::Arc;

use cupel_core::{CupelError, OverflowStrategy, Placer, Query, ScoreContext, Scorer, Slicer};

/// Everything about *how* to select, but not *how much*: a scorer, a slicer, a
/// placer, an [`OverflowStrategy`] and whether to deduplicate.
///
/// Cheap to clone (components are shared behind `Arc`), `Send + Sync`, and
/// reusable across budgets — pair it with a budget in a
/// [`Pipeline`](crate::Pipeline), or pass it to
/// [`RunOptions::policy`](crate::RunOptions::policy).
///
/// ```
/// use cupel_core::{ContextBudget, ContextItem, OverflowStrategy};
/// use cupel_pipeline::{Pipeline, Policy};
/// use cupel_placers::ChronologicalPlacer;
/// use cupel_scorers::ReflexiveScorer;
/// use cupel_slicers::GreedySlice;
///
/// let policy = Policy::builder()
///     .scorer(ReflexiveScorer::new())
///     .slicer(GreedySlice::new())
///     .placer(ChronologicalPlacer)
///     .build()?;
/// assert_eq!(policy.overflow_strategy(), OverflowStrategy::Throw);
/// // One policy, two budgets.
/// let small = Pipeline::new(policy.clone(), ContextBudget::new(100, 10)?);
/// let large = Pipeline::new(policy, ContextBudget::new(100, 100)?);
/// let items = vec![
///     ContextItem::builder("a", 10).future_relevance_hint(0.9).build()?,
///     ContextItem::builder("b", 10).future_relevance_hint(0.5).build()?,
/// ];
/// assert_eq!(small.run(&items)?.len(), 1);
/// assert_eq!(large.run(&items)?.len(), 2);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct Policy {
    pub(crate) scorer: Arc<dyn Scorer>,
    pub(crate) slicer: Arc<dyn Slicer>,
    pub(crate) placer: Arc<dyn Placer>,
    pub(crate) overflow_strategy: OverflowStrategy,
    pub(crate) deduplication: bool,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("slicer_kind", &self.slicer.slicer_kind())
            .field("overflow_strategy", &self.overflow_strategy)
            .field("deduplication", &self.deduplication)
            .finish_non_exhaustive()
    }
}

/// A scorer bound to one run's query: its `score_all` is the inner
/// scorer's `score_all_in` with that query.
struct QueryBound {
    inner: Arc<dyn Scorer>,
    query: Query,
}

impl Scorer for QueryBound {
    fn score(&self, index: usize, items: &[&cupel_core::ContextItem]) -> f64 {
        self.score_all(items)
            .get(index)
            .copied()
            .unwrap_or(f64::NAN)
    }
    fn score_all(&self, items: &[&cupel_core::ContextItem]) -> Vec<f64> {
        let cx = ScoreContext::new().query(Some(&self.query));
        self.inner.score_all_in(items, &cx)
    }
    fn score_all_in(&self, items: &[&cupel_core::ContextItem], _: &ScoreContext<'_>) -> Vec<f64> {
        self.score_all(items)
    }
    fn try_score_all(
        &self,
        items: &[&cupel_core::ContextItem],
    ) -> Result<Vec<f64>, cupel_core::CupelError> {
        let cx = ScoreContext::new().query(Some(&self.query));
        self.inner.try_score_all_in(items, &cx)
    }
    fn try_score_all_in(
        &self,
        items: &[&cupel_core::ContextItem],
        _: &ScoreContext<'_>,
    ) -> Result<Vec<f64>, cupel_core::CupelError> {
        self.try_score_all(items)
    }
    fn notes_in(
        &self,
        items: &[&cupel_core::ContextItem],
        _: &ScoreContext<'_>,
    ) -> Vec<(usize, cupel_core::ScoreNote)> {
        let cx = ScoreContext::new().query(Some(&self.query));
        self.inner.notes_in(items, &cx)
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

impl Policy {
    /// This policy with its scorer bound to `query`: every run scores as
    /// a run given `RunOptions::query(query)` does (the pipeline does this
    /// for each run with a query). Useful where no run options reach the
    /// run — budget simulation and the other analytics of
    /// `cupel-analytics` take a [`Pipeline`](crate::Pipeline) built from
    /// such a policy.
    ///
    /// ```
    /// use cupel_core::{ContextBudget, ContextItem, Query};
    /// use cupel_pipeline::{Pipeline, Policy};
    /// use cupel_scorers::Bm25Scorer;
    /// use cupel_slicers::GreedySlice;
    /// use cupel_placers::ChronologicalPlacer;
    /// let policy = Policy::builder()
    ///     .scorer(Bm25Scorer::new())
    ///     .slicer(GreedySlice::new())
    ///     .placer(ChronologicalPlacer)
    ///     .build()?
    ///     .with_query(&Query::new("tokyo"));
    /// let p = Pipeline::new(policy, ContextBudget::new(1, 1)?);
    /// let items = [ContextItem::new("paris", 1)?, ContextItem::new("tokyo", 1)?];
    /// assert_eq!(p.run(&items)?[0].content(), "tokyo");
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    #[must_use]
    pub fn with_query(&self, query: &Query) -> Policy {
        let mut p = self.clone();
        p.scorer = Arc::new(QueryBound {
            inner: Arc::clone(&self.scorer),
            query: query.clone(),
        });
        p
    }

    /// Starts a [`PolicyBuilder`].
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::new()
    }

    /// The scorer.
    pub fn scorer(&self) -> &Arc<dyn Scorer> {
        &self.scorer
    }

    /// The slicer.
    pub fn slicer(&self) -> &Arc<dyn Slicer> {
        &self.slicer
    }

    /// The placer.
    pub fn placer(&self) -> &Arc<dyn Placer> {
        &self.placer
    }

    /// What happens when the selection overflows the target.
    pub fn overflow_strategy(&self) -> OverflowStrategy {
        self.overflow_strategy
    }

    /// Whether byte-identical contents are deduplicated.
    pub fn deduplication(&self) -> bool {
        self.deduplication
    }
}

/// Builder for [`Policy`]. Scorer, slicer and placer are required;
/// overflow defaults to [`OverflowStrategy::Throw`] and deduplication to on.
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{OverflowStrategy, Slicer};
/// use cupel_pipeline::PolicyBuilder;
/// use cupel_placers::UShapedPlacer;
/// use cupel_scorers::RecencyScorer;
/// use cupel_slicers::KnapsackSlice;
///
/// let slicer: Arc<dyn Slicer> = Arc::new(KnapsackSlice::new(50)?);
/// let policy = PolicyBuilder::new()
///     .scorer(RecencyScorer::new())
///     .slicer_arc(slicer)
///     .placer(UShapedPlacer)
///     .overflow_strategy(OverflowStrategy::Truncate)
///     .deduplication(false)
///     .build()?;
/// assert!(!policy.deduplication());
/// // A missing component is an error, not a panic.
/// assert!(PolicyBuilder::new().scorer(RecencyScorer::new()).build().is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
///
/// The component setters are shared with
/// [`PipelineBuilder`](crate::PipelineBuilder), which is this builder with a
/// budget to collect (`PolicyBuilder<PipelineParts>`): they are written once,
/// here.
#[derive(Clone, Default)]
pub struct PolicyBuilder<P = ()> {
    pub(crate) scorer: Option<Arc<dyn Scorer>>,
    pub(crate) slicer: Option<Arc<dyn Slicer>>,
    pub(crate) placer: Option<Arc<dyn Placer>>,
    pub(crate) overflow_strategy: OverflowStrategy,
    pub(crate) deduplication: Option<bool>,
    /// What the builder collects besides the policy (nothing for a policy).
    pub(crate) rest: P,
}

impl<P: fmt::Debug> fmt::Debug for PolicyBuilder<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyBuilder")
            .field("scorer", &self.scorer.is_some())
            .field("slicer", &self.slicer.is_some())
            .field("placer", &self.placer.is_some())
            .field("overflow_strategy", &self.overflow_strategy)
            .field("deduplication", &self.deduplication)
            .field("rest", &self.rest)
            .finish()
    }
}

impl PolicyBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the policy.
    ///
    /// # Errors
    /// [`CupelError::PipelineConfig`] naming the missing component.
    pub fn build(self) -> Result<Policy, CupelError> {
        self.into_policy().map(|(policy, ())| policy)
    }
}

impl<P> PolicyBuilder<P> {
    /// Sets the scorer (any `Scorer`, including an `Arc<dyn Scorer>` you share elsewhere).
    pub fn scorer(mut self, scorer: impl Scorer + 'static) -> Self {
        self.scorer = Some(Arc::new(scorer));
        self
    }

    /// Sets a shared scorer without re-wrapping it (e.g. one built from a
    /// [`PolicyConfig`](crate::PolicyConfig)).
    pub fn scorer_arc(mut self, scorer: Arc<dyn Scorer>) -> Self {
        self.scorer = Some(scorer);
        self
    }

    /// Sets the slicer.
    pub fn slicer(mut self, slicer: impl Slicer + 'static) -> Self {
        self.slicer = Some(Arc::new(slicer));
        self
    }

    /// Sets a shared slicer without re-wrapping it.
    pub fn slicer_arc(mut self, slicer: Arc<dyn Slicer>) -> Self {
        self.slicer = Some(slicer);
        self
    }

    /// Sets the placer.
    pub fn placer(mut self, placer: impl Placer + 'static) -> Self {
        self.placer = Some(Arc::new(placer));
        self
    }

    /// Sets a shared placer without re-wrapping it.
    pub fn placer_arc(mut self, placer: Arc<dyn Placer>) -> Self {
        self.placer = Some(placer);
        self
    }

    /// Sets the overflow strategy (default [`OverflowStrategy::Throw`]).
    pub fn overflow_strategy(mut self, strategy: OverflowStrategy) -> Self {
        self.overflow_strategy = strategy;
        self
    }

    /// Enables or disables deduplication (default enabled).
    pub fn deduplication(mut self, enabled: bool) -> Self {
        self.deduplication = Some(enabled);
        self
    }

    /// The policy and the rest, or the error naming a missing component.
    pub(crate) fn into_policy(self) -> Result<(Policy, P), CupelError> {
        let missing = |what: &str, call: &str| {
            CupelError::PipelineConfig(format!("policy has no {what}: call `.{call}(...)`"))
        };
        let policy = Policy {
            scorer: self.scorer.ok_or_else(|| missing("scorer", "scorer"))?,
            slicer: self.slicer.ok_or_else(|| missing("slicer", "slicer"))?,
            placer: self.placer.ok_or_else(|| missing("placer", "placer"))?,
            overflow_strategy: self.overflow_strategy,
            deduplication: self.deduplication.unwrap_or(true),
        };
        Ok((policy, self.rest))
    }
}
