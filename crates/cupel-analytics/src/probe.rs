//! The one primitive every simulation is built on: a dry run that reports the
//! input positions of the included items, with the budget-independent scores
//! computed once per simulation.

use std::sync::{Arc, OnceLock};

use cupel_core::{
    ContextBudget, ContextItem, CupelError, ExclusionRecord, InclusionRecord, Query, ScoreContext,
    ScoreNote, Scorer, StageTrace, TraceCollector,
};
use cupel_pipeline::{Pipeline, Policy, RunOptions};

/// Records the input position of every included item, in placed order.
///
/// The pipeline hands each [`InclusionRecord`] its index in the run's input
/// slice, so this is identity by position (clarification D-1) with no
/// ambiguity, even when the same `Arc`-backed item appears twice in `items`.
/// The collector is *enabled*, so the run takes exactly the path of
/// [`Pipeline::dry_run`] (the report builder is the only difference).
#[derive(Debug, Default)]
struct IncludedIndices {
    placed: Vec<usize>,
    /// Per entry of `placed`: the tokens the window holds for it (a
    /// variant's tokens for an item taken as a variant: spec chapter 22).
    held: Vec<i64>,
    /// Their sum.
    tokens: i64,
}

impl TraceCollector for IncludedIndices {
    fn is_enabled(&self) -> bool {
        true
    }

    fn on_run_started(&mut self, _items: &[ContextItem], _budget: &ContextBudget) {
        self.placed.clear();
        self.held.clear();
        self.tokens = 0;
    }

    fn on_stage_completed(&mut self, _trace: &StageTrace) {}

    fn on_item_excluded(&mut self, _record: ExclusionRecord<'_>) {}

    fn on_item_included(&mut self, record: InclusionRecord<'_>) {
        self.placed.push(record.index);
        self.held.push(record.item.tokens());
        self.tokens = self.tokens.saturating_add(record.item.tokens());
    }
}

/// The scores of one scoreable list (and query), remembered by item identity.
struct Memo {
    items: Vec<ContextItem>,
    query: Option<Query>,
    scores: Vec<f64>,
}

/// Wraps a scorer and replays its first whole-pass result whenever it is
/// asked about the very same list again (same length, every item the same
/// allocation, compared with [`ContextItem::ptr_eq`]) in the same context
/// (the same query, or none).
///
/// Scores never depend on the budget, and every probe of one simulation
/// scores the same list (Classify does not look at the budget), so probes
/// after the first skip the Score stage's work — at N = 1k that stage is
/// most of a dry run. Items are immutable and scorers pure, so the replayed
/// scores are the ones the scorer would compute; a scorer that reads a clock
/// sees one instant for the whole simulation, which keeps probes comparable.
/// Any other list is scored by the inner scorer as usual.
///
/// Every method of [`Scorer`] is forwarded — the query-aware
/// `score_all_in`, the fallible `try_score_all*` (whose errors are never
/// remembered) and `notes_in` — so a query-aware scorer behaves under
/// analytics as in a plain run.
struct MemoScorer {
    inner: Arc<dyn Scorer>,
    memo: OnceLock<Memo>,
}

impl MemoScorer {
    fn same_list(memo: &Memo, items: &[&ContextItem], query: Option<&Query>) -> bool {
        memo.query.as_ref() == query
            && memo.items.len() == items.len()
            && memo.items.iter().zip(items).all(|(a, b)| a.ptr_eq(b))
    }

    /// The remembered scores of `items` under `query`, or `compute`'s
    /// (remembered when they are the first).
    fn memoised(
        &self,
        items: &[&ContextItem],
        query: Option<&Query>,
        compute: impl FnOnce() -> Result<Vec<f64>, CupelError>,
    ) -> Result<Vec<f64>, CupelError> {
        if let Some(memo) = self.memo.get() {
            if Self::same_list(memo, items, query) {
                return Ok(memo.scores.clone());
            }
            return compute();
        }
        let scores = compute()?;
        // Only the first list is remembered; a lost race just scores again.
        let _ = self.memo.set(Memo {
            items: items.iter().map(|&i| i.clone()).collect(),
            query: query.cloned(),
            scores: scores.clone(),
        });
        Ok(scores)
    }
}

impl Scorer for MemoScorer {
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        self.inner.score(index, items)
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        self.memoised(items, None, || Ok(self.inner.score_all(items)))
            .unwrap_or_else(|_| vec![f64::NAN; items.len()])
    }

    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        self.memoised(items, cx.query_ref(), || {
            Ok(self.inner.score_all_in(items, cx))
        })
        .unwrap_or_else(|_| vec![f64::NAN; items.len()])
    }

    fn try_score_all(&self, items: &[&ContextItem]) -> Result<Vec<f64>, CupelError> {
        self.memoised(items, None, || self.inner.try_score_all(items))
    }

    fn try_score_all_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Result<Vec<f64>, CupelError> {
        self.memoised(items, cx.query_ref(), || {
            self.inner.try_score_all_in(items, cx)
        })
    }

    fn notes_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<(usize, ScoreNote)> {
        self.inner.notes_in(items, cx)
    }
}

/// Dry runs of one pipeline's policy over one item list at many budgets.
pub(crate) struct Prober<'a> {
    policy: Policy,
    base: &'a ContextBudget,
    items: &'a [ContextItem],
}

impl<'a> Prober<'a> {
    /// A prober for `pipeline`'s policy (scores memoised, see [`MemoScorer`])
    /// whose probe sizes keep the shape of `pipeline`'s budget.
    pub(crate) fn new(
        pipeline: &'a Pipeline,
        items: &'a [ContextItem],
    ) -> Result<Self, CupelError> {
        let p = pipeline.policy();
        let memo: Arc<dyn Scorer> = Arc::new(MemoScorer {
            inner: Arc::clone(p.scorer()),
            memo: OnceLock::new(),
        });
        let policy = Policy::builder()
            .scorer_arc(memo)
            .slicer_arc(Arc::clone(p.slicer()))
            .placer_arc(Arc::clone(p.placer()))
            .overflow_strategy(p.overflow_strategy())
            .deduplication(p.deduplication())
            .build()?;
        Ok(Self {
            policy,
            base: pipeline.budget(),
            items,
        })
    }

    /// Positions (in `items`) of the included items under `budget`, in
    /// placed order.
    ///
    /// The run goes through a fresh [`Pipeline`] without the original's
    /// overflow observer, so it has no side effects, like
    /// a dry run.
    pub(crate) fn included_positions(
        &self,
        budget: &ContextBudget,
    ) -> Result<Vec<usize>, CupelError> {
        self.included_window(budget).map(|w| w.placed)
    }

    /// [`included_positions`](Self::included_positions) and the tokens the
    /// window holds (variants at their own tokens).
    pub(crate) fn included_window(&self, budget: &ContextBudget) -> Result<Window, CupelError> {
        let mut collector = IncludedIndices::default();
        Pipeline::new(self.policy.clone(), budget.clone())
            .run_with(self.items, RunOptions::new().collector(&mut collector))?;
        Ok(Window {
            placed: collector.placed,
            held: collector.held,
            tokens: collector.tokens,
        })
    }

    /// Runs the probe of size `b` (`b >= 0`).
    pub(crate) fn probe(&self, b: i64) -> Result<Probe, CupelError> {
        let outcome = probe_budget(self.base, b).and_then(|budget| self.included_window(&budget));
        match outcome {
            Ok(window) => Ok(Probe::Window(window)),
            Err(e) if is_no_window(&e) => Ok(Probe::NoWindow(e)),
            Err(e) => Err(e),
        }
    }

    /// Whether `items[target]` is included by the probe of size `b`.
    pub(crate) fn includes(&self, target: usize, b: i64) -> Result<bool, CupelError> {
        Ok(match self.probe(b)? {
            Probe::Window(w) => w.placed.contains(&target),
            Probe::NoWindow(_) => false,
        })
    }
}

/// A window a probe produced.
#[derive(Debug)]
pub(crate) struct Window {
    /// The positions of its items, in placed order.
    pub(crate) placed: Vec<usize>,
    /// Per entry of `placed`, the tokens the window holds for that item.
    pub(crate) held: Vec<i64>,
    /// Their sum.
    pub(crate) tokens: i64,
}

/// The outcome of a probe at one budget size.
#[derive(Debug)]
pub(crate) enum Probe {
    /// The run produced a window.
    Window(Window),
    /// No window exists at this size (see [`is_no_window`]); the error says why.
    NoWindow(CupelError),
}

/// Whether `e` means "no window can be formed at this budget size" rather than
/// a configuration or input problem.
///
/// * [`CupelError::OutputReserveExceedsMax`]: the probe budget itself is
///   invalid (`output_reserve > b`);
/// * [`CupelError::PinnedBudgetExceeded`]: the pinned items need more than
///   `b - output_reserve`;
/// * [`CupelError::BudgetOverflow`]: the selection exceeds the target `b`
///   under `OverflowStrategy::Throw`.
///
/// Everything else (token overflow, knapsack table guard, unmet count
/// requirements under `Throw`, misbehaving components) is propagated.
pub(crate) fn is_no_window(e: &CupelError) -> bool {
    matches!(
        e,
        CupelError::OutputReserveExceedsMax { .. }
            | CupelError::PinnedBudgetExceeded { .. }
            | CupelError::BudgetOverflow { .. }
    )
}

/// The probe budget of size `b` (clarification S-3): `base` with `max_tokens`
/// and `target_tokens` both set to `b`; output reserve, reserved slots and
/// safety margin kept.
///
/// # Errors
/// The budget rules (for `b >= 0` only `OutputReserveExceedsMax` can fail).
pub(crate) fn probe_budget(base: &ContextBudget, b: i64) -> Result<ContextBudget, CupelError> {
    base.to_builder().max_tokens(b).target_tokens(b).build()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use cupel_core::{ContextKind, OverflowStrategy, TokenSign};
    use cupel_placers::ChronologicalPlacer;
    use cupel_scorers::ReflexiveScorer;
    use cupel_slicers::GreedySlice;

    use super::*;

    fn item(content: &str, tokens: i64, hint: f64) -> ContextItem {
        ContextItem::builder(content, tokens)
            .future_relevance_hint(hint)
            .build()
            .unwrap()
    }

    fn pipeline(budget: ContextBudget, dedup: bool) -> Pipeline {
        Pipeline::builder()
            .scorer(ReflexiveScorer)
            .slicer(GreedySlice)
            .placer(ChronologicalPlacer)
            .deduplication(dedup)
            .budget(budget)
            .build()
            .unwrap()
    }

    #[test]
    fn only_budget_shaped_failures_mean_no_window() {
        assert!(is_no_window(&CupelError::OutputReserveExceedsMax {
            output_reserve: 5,
            max_tokens: 1
        }));
        assert!(is_no_window(&CupelError::PinnedBudgetExceeded {
            pinned_tokens: 5,
            available_tokens: 1
        }));
        assert!(is_no_window(&CupelError::BudgetOverflow {
            selected_tokens: 5,
            target_tokens: 1
        }));
        assert!(!is_no_window(&CupelError::TokenOverflow {
            sign: TokenSign::Positive,
            total: 1
        }));
        assert!(!is_no_window(&CupelError::PipelineConfig("x".into())));
        assert!(!is_no_window(&CupelError::TableTooLarge {
            candidates: 1,
            capacity: 2,
            cells: 2,
            keep_bytes: 8,
            row_bytes: 16,
            limit: cupel_core::TableLimit::Cells(1)
        }));
    }

    #[test]
    fn probe_budget_sets_both_sizes_and_keeps_the_rest() {
        let base = ContextBudget::builder(1_000, 800)
            .output_reserve(30)
            .reserved_slot(ContextKind::TOOL_OUTPUT, 20)
            .safety_margin_percent(5.0)
            .build()
            .unwrap();
        let p = probe_budget(&base, 300).unwrap();
        assert_eq!((p.max_tokens(), p.target_tokens()), (300, 300));
        assert_eq!(p.output_reserve(), 30);
        assert_eq!(p.reserved_slots(), base.reserved_slots());
        assert_eq!(p.estimation_safety_margin_percent(), 5.0);
        assert_eq!(
            probe_budget(&base, 29),
            Err(CupelError::OutputReserveExceedsMax {
                output_reserve: 30,
                max_tokens: 29
            })
        );
    }

    #[test]
    fn positions_tell_apart_one_allocation_at_two_positions() {
        // The same Arc at positions 0 and 2 (dedup off): both selected, and
        // the positions say which is which; pointer identity could not.
        let x = item("x", 10, 0.9);
        let items = vec![x.clone(), item("y", 10, 0.5), x];
        let budget = ContextBudget::new(100, 100).unwrap();
        let p = pipeline(budget.clone(), false);
        let prober = Prober::new(&p, &items).unwrap();
        let placed = prober.included_positions(&budget).unwrap();
        // Merged order (no timestamps): score descending, ties by position.
        assert_eq!(placed, vec![0, 2, 1]);
        // At 10 tokens only the first of the two equal-density copies fits.
        let small = ContextBudget::new(10, 10).unwrap();
        assert_eq!(prober.included_positions(&small).unwrap(), vec![0]);
    }

    #[test]
    fn probes_do_not_call_the_overflow_observer() {
        // Pinned 80 > target 50 under Proceed: a real run overflows and calls
        // the observer; a probe must not.
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let budget = ContextBudget::new(100, 50).unwrap();
        let p = Pipeline::builder()
            .scorer(ReflexiveScorer)
            .slicer(GreedySlice)
            .placer(ChronologicalPlacer)
            .overflow_strategy(OverflowStrategy::Proceed)
            .on_overflow(move |_| {
                seen.fetch_add(1, Ordering::SeqCst);
            })
            .budget(budget.clone())
            .build()
            .unwrap();
        let items = vec![
            ContextItem::builder("sys", 80)
                .pinned(true)
                .build()
                .unwrap(),
        ];
        p.run(&items).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let prober = Prober::new(&p, &items).unwrap();
        assert_eq!(prober.included_positions(&budget).unwrap(), vec![0]);
        assert!(matches!(prober.probe(100).unwrap(), Probe::Window(w) if w.placed == [0]));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn probe_reports_sizes_without_a_window() {
        let items = vec![
            ContextItem::builder("sys", 80)
                .pinned(true)
                .build()
                .unwrap(),
        ];
        let p = pipeline(ContextBudget::new(1_000, 1_000).unwrap(), true);
        let prober = Prober::new(&p, &items).unwrap();
        assert!(matches!(
            prober.probe(79).unwrap(),
            Probe::NoWindow(CupelError::PinnedBudgetExceeded {
                pinned_tokens: 80,
                available_tokens: 79
            })
        ));
        assert!(!prober.includes(0, 79).unwrap());
        assert!(prober.includes(0, 80).unwrap());
    }

    /// Counts whole passes; scores each item by its hint.
    struct Counting(Arc<AtomicUsize>);
    impl Scorer for Counting {
        fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
            items[index].future_relevance_hint().unwrap_or(0.0)
        }
        fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
            self.0.fetch_add(1, Ordering::SeqCst);
            items
                .iter()
                .map(|i| i.future_relevance_hint().unwrap_or(0.0))
                .collect()
        }
    }

    /// The memo forwards the query-aware and fallible methods: a bm25
    /// scorer sees the run's query (not the empty context of `score_all`),
    /// a second query is scored afresh, and a vector scorer's typed error
    /// comes through.
    #[test]
    fn query_aware_scorers_work_through_the_memo() {
        let memo = MemoScorer {
            inner: Arc::new(cupel_scorers::Bm25Scorer::new()),
            memo: OnceLock::new(),
        };
        let items = [item("tokyo trip", 1, 0.0), item("paris", 1, 0.0)];
        let refs: Vec<&ContextItem> = items.iter().collect();
        let tokyo = Query::new("tokyo");
        let paris = Query::new("paris");
        let cx = |q| ScoreContext::new().query(Some(q));
        assert_eq!(memo.score_all_in(&refs, &cx(&tokyo)), vec![1.0, 0.0]);
        assert_eq!(
            memo.try_score_all_in(&refs, &cx(&paris)).unwrap(),
            vec![0.0, 1.0]
        );
        assert_eq!(memo.score_all_in(&refs, &cx(&tokyo)), vec![1.0, 0.0]);
        assert_eq!(memo.notes_in(&refs, &cx(&tokyo))[0].1.terms, ["tokyo"]);
        let vector = MemoScorer {
            inner: Arc::new(cupel_scorers::VectorScorer::new()),
            memo: OnceLock::new(),
        };
        let e = vector.try_score_all_in(&refs, &cx(&tokyo)).unwrap_err();
        assert!(matches!(e, CupelError::QueryEmbeddingMissing { .. }));
        assert!(vector.memo.get().is_none(), "errors are not remembered");
    }

    #[test]
    fn scores_are_computed_once_per_simulation() {
        let passes = Arc::new(AtomicUsize::new(0));
        let p = Pipeline::builder()
            .scorer(Counting(Arc::clone(&passes)))
            .slicer(GreedySlice)
            .placer(ChronologicalPlacer)
            .budget(ContextBudget::new(1_000, 1_000).unwrap())
            .build()
            .unwrap();
        let items = vec![item("a", 60, 0.9), item("b", 50, 0.5)];
        let prober = Prober::new(&p, &items).unwrap();
        for b in 0..=200 {
            prober.probe(b).unwrap();
        }
        // 201 probes, one scoring pass (b = 0 selects nothing but still scores).
        assert_eq!(passes.load(Ordering::SeqCst), 1);
        // A different list (other allocations, same contents) is scored afresh.
        let copies: Vec<ContextItem> = items
            .iter()
            .map(|i| i.to_builder().build().unwrap())
            .collect();
        let refs: Vec<&ContextItem> = copies.iter().collect();
        let memo = MemoScorer {
            inner: Arc::new(Counting(Arc::clone(&passes))),
            memo: OnceLock::new(),
        };
        let originals: Vec<&ContextItem> = items.iter().collect();
        assert_eq!(memo.score_all(&originals), vec![0.9, 0.5]);
        assert_eq!(memo.score_all(&originals), vec![0.9, 0.5]);
        assert_eq!(passes.load(Ordering::SeqCst), 2);
        assert_eq!(memo.score_all(&refs), vec![0.9, 0.5]);
        assert_eq!(memo.score_all(&refs[..1]), vec![0.9]);
        assert_eq!(passes.load(Ordering::SeqCst), 4);
    }
}
