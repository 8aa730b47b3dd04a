//! Summaries of what a run evicts (an extension: `spec/22-variants.md`,
//! "Summaries"): a two-step API that suits callers whose summariser is an
//! asynchronous model call.
//!
//! 1. [`Pipeline::plan_summary`] runs the pipeline with `reserve` tokens
//!    held back and names the units it would evict ([`SummaryPlan`]).
//! 2. The caller summarises them — with the previous summary, if the input
//!    holds one — and hands the text back to [`SummaryPlan::apply`], which
//!    places it, pinned, where the evicted units were.
//!
//! A running summary folds: the next plan treats the input's summary item
//! (metadata [`SUMMARY_METADATA_KEY`]) as the *previous* summary, never as a
//! unit to evict, so the caller always summarises one previous summary plus
//! raw units, never a summary of summaries.

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, ExclusionReason, SelectionReport,
};

use crate::{Pipeline, RunOptions};

/// The metadata key marking a summary item made by [`SummaryPlan::apply`];
/// its value is the number of input items the summary stands for, so far.
pub const SUMMARY_METADATA_KEY: &str = "cupel:summary";

/// One unit a run would evict: an item, or every evicted member of an
/// atomic group, in input order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EvictedUnit {
    /// Input positions of the unit's items, ascending.
    pub positions: Vec<usize>,
    /// The items, in input order.
    pub items: Vec<ContextItem>,
    /// Why the unit was left out (its first item's reason).
    pub reason: ExclusionReason,
}

/// The text a caller's summariser produced, with its token count: the
/// one summary type of the workspace, defined in `cupel-core` (the chat
/// path's running summary holds the same type).
pub use cupel_core::Summary;

/// What [`Pipeline::plan_summary`] found: the window without the
/// summary, the units it evicts and the previous summary to fold.
#[derive(Debug, Clone)]
pub struct SummaryPlan {
    reserve: i64,
    /// The window (placed order) with each item's input position.
    window: Vec<(usize, ContextItem)>,
    evicted: Vec<EvictedUnit>,
    previous: Option<(usize, ContextItem)>,
    report: SelectionReport,
}

/// The window with the summary in place.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SummarizedWindow {
    /// The window: the kept items and, if any, the summary item.
    pub items: Vec<ContextItem>,
    /// Where the summary sits in `items`, if there is one.
    pub summary_index: Option<usize>,
    /// The report of the run without the summary (reserve held back).
    pub report: SelectionReport,
}

impl Pipeline {
    /// Step one of a summary: runs the pipeline on `items` with `reserve`
    /// tokens held back for the summary (taken off the target, and added to
    /// the output reserve so the hard ceiling holds too) and names what it
    /// would evict.
    ///
    /// An input item whose metadata has [`SUMMARY_METADATA_KEY`] is the
    /// previous summary: it stays out of this run and is offered to the
    /// caller to fold ([`SummaryPlan::previous_summary`]).
    ///
    /// Evicted units are the items the run leaves out for lack of room
    /// (`BudgetExceeded`, `PinnedOverride`, `GroupExcluded`,
    /// `CountCapExceeded`); duplicates and negative-token items are not
    /// evicted content and are not offered.
    ///
    /// ```
    /// use cupel_core::{ContextBudget, ContextItem};
    /// use cupel_pipeline::{Pipeline, Summary};
    /// use cupel_placers::ChronologicalPlacer;
    /// use cupel_scorers::PositionScorer;
    /// use cupel_slicers::ContiguousSlice;
    ///
    /// let pipeline = Pipeline::builder()
    ///     .scorer(PositionScorer)
    ///     .slicer(ContiguousSlice)
    ///     .placer(ChronologicalPlacer)
    ///     .budget(ContextBudget::new(100, 100)?)
    ///     .build()?;
    /// let turns: Vec<ContextItem> = (1..=5)
    ///     .map(|t| {
    ///         let at = cupel_core::chrono::DateTime::from_timestamp(1_700_000_000 + t * 60, 0);
    ///         ContextItem::builder(format!("turn {t}"), 30).timestamp_opt(at).build()
    ///     })
    ///     .collect::<Result<_, _>>()?;
    /// // 20 tokens held back: 80 left, newest turns first: 5, 4 (60); 3 does not fit.
    /// let plan = pipeline.plan_summary(&turns, 20)?;
    /// let evicted: Vec<&str> = plan.to_summarise().map(ContextItem::content).collect();
    /// assert_eq!(evicted, ["turn 1", "turn 2", "turn 3"]);
    /// // The caller's model writes the summary; it goes where turns 1-3 were.
    /// let window = plan.apply(Some(Summary::new("Turns 1-3: greetings.", 6)?))?;
    /// let contents: Vec<&str> = window.items.iter().map(ContextItem::content).collect();
    /// assert_eq!(contents, ["Turns 1-3: greetings.", "turn 4", "turn 5"]);
    /// # Ok::<(), cupel_core::CupelError>(())
    /// ```
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] for a negative reserve, a reserve
    /// above the target, or two summary items in the input (with their
    /// positions); otherwise as [`run`](Self::run).
    pub fn plan_summary(
        &self,
        items: &[ContextItem],
        reserve: i64,
    ) -> Result<SummaryPlan, CupelError> {
        let budget = self.budget();
        if reserve < 0 || reserve > budget.target_tokens() {
            return Err(CupelError::InvalidArgument(format!(
                "a summary reserve must be within 0..={} (the target); got {reserve}",
                budget.target_tokens()
            )));
        }
        let marked: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, i)| i.metadata().contains_key(SUMMARY_METADATA_KEY))
            .map(|(p, _)| p)
            .collect();
        if marked.len() > 1 {
            return Err(CupelError::InvalidArgument(format!(
                "the input holds {} summary items (positions {marked:?}); a running summary is one item",
                marked.len()
            )));
        }
        let previous = marked.first().map(|&p| (p, items[p].clone()));
        // The run's input: everything but the previous summary; `back` maps
        // its positions to the caller's.
        let (input, back): (Vec<ContextItem>, Vec<usize>) = items
            .iter()
            .enumerate()
            .filter(|(p, _)| Some(*p) != marked.first().copied())
            .map(|(p, i)| (i.clone(), p))
            .unzip();
        let reduced = reduced_budget(budget, reserve)?;
        let out = self.run_with(
            &input,
            RunOptions::new().budget(&reduced).report(true).dry(true),
        )?;
        let mut report = out.report.unwrap_or_default();
        for row in &mut report.included {
            row.position = back.get(row.position).copied().unwrap_or(row.position);
        }
        for row in &mut report.excluded {
            row.position = back.get(row.position).copied().unwrap_or(row.position);
        }
        let window = report
            .included
            .iter()
            .map(|r| (r.position, r.item.clone()))
            .collect();
        let evicted = evicted_units(&report, items);
        Ok(SummaryPlan {
            reserve,
            window,
            evicted,
            previous,
            report,
        })
    }
}

/// `budget` with `reserve` tokens held back: off the target and onto the
/// output reserve.
fn reduced_budget(budget: &ContextBudget, reserve: i64) -> Result<ContextBudget, CupelError> {
    budget
        .to_builder()
        .target_tokens(budget.target_tokens() - reserve)
        .output_reserve(budget.output_reserve().saturating_add(reserve))
        .build()
}

/// The evicted rows of `report`, one unit per item or group, in input order.
fn evicted_units(report: &SelectionReport, items: &[ContextItem]) -> Vec<EvictedUnit> {
    let mut rows: Vec<(usize, &ExclusionReason)> = report
        .excluded
        .iter()
        .filter(|r| {
            matches!(
                r.reason,
                ExclusionReason::BudgetExceeded { .. }
                    | ExclusionReason::PinnedOverride { .. }
                    | ExclusionReason::GroupExcluded { .. }
                    | ExclusionReason::CountCapExceeded { .. }
            )
        })
        .map(|r| (r.position, &r.reason))
        .collect();
    rows.sort_by_key(|&(p, _)| p);
    let mut units: Vec<EvictedUnit> = Vec::new();
    // Group id -> its unit, looked up by a linear scan of the (few) units
    // with a group: no hash order can reach the output.
    for (p, reason) in rows {
        let Some(item) = items.get(p) else { continue };
        if let Some(g) = item.group()
            && let Some(unit) = units
                .iter_mut()
                .find(|u| u.items.first().and_then(ContextItem::group) == Some(g))
        {
            unit.positions.push(p);
            unit.items.push(item.clone());
            continue;
        }
        units.push(EvictedUnit {
            positions: vec![p],
            items: vec![item.clone()],
            reason: reason.clone(),
        });
    }
    units
}

impl SummaryPlan {
    /// The units the run evicts, in input order of their first item.
    pub fn evicted(&self) -> &[EvictedUnit] {
        &self.evicted
    }

    /// The previous summary found in the input, to fold into the new one.
    pub fn previous_summary(&self) -> Option<&ContextItem> {
        self.previous.as_ref().map(|(_, i)| i)
    }

    /// What the caller's summariser should read, in order: the previous
    /// summary (if any), then every evicted item in input order.
    pub fn to_summarise(&self) -> impl Iterator<Item = &ContextItem> {
        self.previous_summary()
            .into_iter()
            .chain(self.evicted.iter().flat_map(|u| u.items.iter()))
    }

    /// Whether anything is evicted (with nothing evicted, the previous
    /// summary, if any, is kept as it is: pass `None` to [`apply`](Self::apply)).
    pub fn needs_summary(&self) -> bool {
        !self.evicted.is_empty()
    }

    /// The tokens held back for the summary.
    pub fn reserve(&self) -> i64 {
        self.reserve
    }

    /// The report of the run without the summary, positions as in the
    /// caller's input.
    pub fn report(&self) -> &SelectionReport {
        &self.report
    }

    /// Step two: places the summary, pinned, where the evicted units (and
    /// the previous summary) were — just before the first window item whose
    /// input position comes after the earliest of them, or last. The
    /// summary item has kind `Memory`, the metadata entry
    /// [`SUMMARY_METADATA_KEY`] (the number of input items it stands for,
    /// the previous summary's included) and `original_tokens` (their
    /// tokens, the previous summary's `original_tokens` included).
    ///
    /// `None` keeps the previous summary as it is (where it was); with
    /// neither, the window is the plan's.
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] when the summary (or the previous
    /// one, kept) holds more tokens than the reserve, or when units were
    /// evicted and no summary is given while a previous one exists (it would
    /// silently lose them).
    pub fn apply(self, summary: Option<Summary>) -> Result<SummarizedWindow, CupelError> {
        let SummaryPlan {
            reserve,
            window,
            evicted,
            previous,
            report,
        } = self;
        let placed: Option<(usize, ContextItem)> = match (summary, previous) {
            (Some(s), previous) => {
                let first_evicted = evicted.first().and_then(|u| u.positions.first().copied());
                let at = match (&previous, first_evicted) {
                    (Some((p, _)), Some(e)) => (*p).min(e),
                    (Some((p, _)), None) => *p,
                    (None, Some(e)) => e,
                    (None, None) => window.last().map_or(0, |(p, _)| p + 1),
                };
                Some((at, summary_item(s, reserve, previous.as_ref(), &evicted)?))
            }
            (None, Some((p, item))) => {
                if !evicted.is_empty() {
                    return Err(CupelError::InvalidArgument(format!(
                        "{} units were evicted and no summary was given; the previous summary alone would lose them",
                        evicted.len()
                    )));
                }
                if item.tokens() > reserve {
                    return Err(CupelError::InvalidArgument(format!(
                        "the previous summary holds {} tokens, more than the {reserve} reserved",
                        item.tokens()
                    )));
                }
                Some((p, item))
            }
            (None, None) => None,
        };
        let mut items: Vec<ContextItem> = window.iter().map(|(_, i)| i.clone()).collect();
        let summary_index = placed.map(|(at, item)| {
            let k = window
                .iter()
                .position(|&(p, _)| p > at)
                .unwrap_or(items.len());
            items.insert(k, item);
            k
        });
        Ok(SummarizedWindow {
            items,
            summary_index,
            report,
        })
    }
}

/// The summary item for `s`, standing for `evicted` and `previous`.
fn summary_item(
    s: Summary,
    reserve: i64,
    previous: Option<&(usize, ContextItem)>,
    evicted: &[EvictedUnit],
) -> Result<ContextItem, CupelError> {
    if s.tokens() > reserve {
        return Err(CupelError::InvalidArgument(format!(
            "the summary holds {} tokens, more than the {reserve} reserved",
            s.tokens()
        )));
    }
    let (mut count, mut original) = match previous {
        Some((_, p)) => (
            p.metadata()
                .get(SUMMARY_METADATA_KEY)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(1),
            p.original_tokens().unwrap_or(p.tokens()).max(0),
        ),
        None => (0, 0),
    };
    for item in evicted.iter().flat_map(|u| u.items.iter()) {
        count += 1;
        original = original.saturating_add(item.tokens().max(0));
    }
    let tokens = s.tokens();
    ContextItem::builder(s.into_text(), tokens)
        .kind(ContextKind::MEMORY)
        .pinned(true)
        .original_tokens(original)
        .metadata(SUMMARY_METADATA_KEY, count.to_string())
        .build()
}
