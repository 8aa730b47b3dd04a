//! The six stages of one run. Stages pass indices and scores; items are cloned
//! (an `Arc` bump each) only for the returned window and for diagnostics.

use std::collections::hash_map::Entry;
use std::time::{Instant, SystemTime};

use cupel_core::{
    CapExclusion, ContextBudget, ContextItem, CupelError, ExclusionReason, ExclusionRecord,
    InclusionReason, InclusionRecord, OverflowEvent, OverflowStrategy, PipelineStage, ScoredItem,
    SliceBudget, SliceOutcome, StageTrace, TraceCollector, check_token_totals, score_cmp_desc,
};

use rustc_hash::FxHashMap;

use crate::Policy;
use crate::pipeline::OverflowObserver;

/// Wall-clock and monotonic start of a stage; only taken when tracing.
pub(crate) struct Timer {
    started_at: SystemTime,
    started: Instant,
}

impl Timer {
    pub(crate) fn start(traced: bool) -> Option<Timer> {
        traced.then(|| Timer {
            started_at: SystemTime::now(),
            started: Instant::now(),
        })
    }
}

pub(crate) fn finish<C: TraceCollector + ?Sized>(
    collector: &mut C,
    timer: Option<Timer>,
    stage: PipelineStage,
    item_count_in: usize,
    item_count_out: usize,
) {
    if let Some(t) = timer {
        collector.on_stage_completed(&StageTrace::new(
            stage,
            t.started_at,
            t.started.elapsed(),
            item_count_in,
            item_count_out,
        ));
    }
}

/// Runs the pipeline, bracketing it with the collector's run hooks.
pub(crate) fn execute<C: TraceCollector + ?Sized>(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
    collector: &mut C,
    observer: Option<&OverflowObserver>,
) -> Result<Vec<ContextItem>, CupelError> {
    let traced = collector.is_enabled();
    if traced {
        collector.on_run_started(items, budget);
    }
    // Atomic groups (an extension) take their own path, so that a run without
    // any grouped item goes through exactly the specification's stages.
    let result = if items.iter().any(|i| i.group().is_some()) {
        crate::grouped::stages(policy, budget, items, collector, traced, observer)
    } else {
        stages(policy, budget, items, collector, traced, observer)
    };
    if traced {
        match &result {
            Ok(_) => collector.on_run_completed(),
            Err(e) => collector.on_run_failed(e),
        }
    }
    result
}

fn stages<C: TraceCollector + ?Sized>(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
    collector: &mut C,
    traced: bool,
    observer: Option<&OverflowObserver>,
) -> Result<Vec<ContextItem>, CupelError> {
    // After this check every sum of non-negative token counts fits in i64.
    check_token_totals(items)?;

    // ----- 1. Classify ---------------------------------------------------------
    let timer = Timer::start(traced);
    let mut pinned: Vec<usize> = Vec::new();
    let mut scoreable: Vec<usize> = Vec::with_capacity(items.len());
    let mut pinned_tokens: i64 = 0;
    for (i, item) in items.iter().enumerate() {
        let tokens = item.tokens();
        if tokens < 0 {
            if traced {
                collector.on_item_excluded(ExclusionRecord::new(
                    PipelineStage::Classify,
                    i,
                    item,
                    0.0,
                    ExclusionReason::NegativeTokens { tokens },
                ));
            }
        } else if item.pinned() {
            pinned.push(i);
            pinned_tokens += tokens;
        } else {
            scoreable.push(i);
        }
    }
    let available_for_pinned = budget.available_for_pinned();
    if pinned_tokens > available_for_pinned {
        return Err(CupelError::PinnedBudgetExceeded {
            pinned_tokens,
            available_tokens: available_for_pinned,
        });
    }
    finish(
        collector,
        timer,
        PipelineStage::Classify,
        items.len(),
        pinned.len() + scoreable.len(),
    );

    // ----- 2. Score --------------------------------------------------------------
    let timer = Timer::start(traced);
    let refs: Vec<&ContextItem> = scoreable.iter().map(|&i| &items[i]).collect();
    let scores = score_items(policy, &refs, &scoreable)?;
    finish(
        collector,
        timer,
        PipelineStage::Score,
        refs.len(),
        refs.len(),
    );

    // ----- 3. Deduplicate ----------------------------------------------------------
    // Positions below are indices into `scoreable` / `scores`. The survivors go
    // straight into the Sort stage's `(score, position)` keys.
    let timer = Timer::start(traced);
    let mut keyed: Vec<(f64, usize)> = if policy.deduplication && !refs.is_empty() {
        let mut survivor = vec![true; refs.len()];
        // Only looked up, never iterated: hash order cannot reach the output.
        let mut best: FxHashMap<&str, usize> =
            FxHashMap::with_capacity_and_hasher(refs.len(), Default::default());
        for (p, item) in refs.iter().enumerate() {
            match best.entry(item.content()) {
                Entry::Vacant(v) => {
                    v.insert(p);
                }
                Entry::Occupied(mut o) => {
                    let existing = *o.get();
                    // Strictly better replaces; equal keeps the earlier position.
                    if score_cmp_desc(scores[p], scores[existing]).is_lt() {
                        survivor[existing] = false;
                        o.insert(p);
                    } else {
                        survivor[p] = false;
                    }
                }
            }
        }
        if traced {
            for (p, &alive) in survivor.iter().enumerate() {
                if !alive {
                    let item = refs[p];
                    // Byte-identical by definition: the survivor's content is this content.
                    collector.on_item_excluded(ExclusionRecord::new(
                        PipelineStage::Deduplicate,
                        scoreable[p],
                        item,
                        scores[p],
                        ExclusionReason::Deduplicated {
                            deduplicated_against: item.content().to_owned(),
                        },
                    ));
                }
            }
        }
        (0..refs.len())
            .filter(|&p| survivor[p])
            .map(|p| (scores[p], p))
            .collect()
    } else {
        scores.iter().copied().zip(0..).collect()
    };
    finish(
        collector,
        timer,
        PipelineStage::Deduplicate,
        refs.len(),
        keyed.len(),
    );

    // ----- 4. Sort (no event) --------------------------------------------------------
    // Sort (score, position) pairs: the index tie-break makes every key unique,
    // so an unstable sort gives the stable order, and the keys sit in one array.
    keyed.sort_unstable_by(|a, b| score_cmp_desc(a.0, b.0).then(a.1.cmp(&b.1)));
    let sorted: Vec<usize> = keyed.into_iter().map(|(_, p)| p).collect();
    let sorted_scored: Vec<ScoredItem<'_>> = sorted
        .iter()
        .map(|&p| ScoredItem::new(refs[p], scores[p]))
        .collect();

    // ----- 5. Slice ----------------------------------------------------------------------
    let timer = Timer::start(traced);
    let effective = budget.effective(pinned_tokens);
    let outcome = policy.slicer.slice(&sorted_scored, effective)?;
    let n_sorted = sorted_scored.len();
    let selected = checked_selection(&outcome, n_sorted)?;
    // The merged list of the Place stage, as (input index, score): pinned items
    // first with score 1.0, then the sliced items in Sort-stage order (score
    // descending, clarification D-4), not in the slicer's output order.
    let mut merged: Vec<(usize, f64)> = Vec::with_capacity(pinned.len() + outcome.selected.len());
    merged.extend(pinned.iter().map(|&i| (i, 1.0)));
    let mut sliced_tokens: i64 = 0;
    for s in (0..n_sorted).filter(|&s| selected[s]) {
        let scored = sorted_scored[s];
        sliced_tokens += scored.item.tokens();
        merged.push((scoreable[sorted[s]], scored.score));
    }
    let n_sliced = merged.len() - pinned.len();
    // Built only when tracing; shared by Slice and Truncate so that a pinned
    // item is never blamed for more tokens than it holds over the whole run.
    let mut blame = traced.then(|| PinnedBlame::new(budget, items, &pinned));
    if let Some(blame) = blame.as_mut() {
        if !outcome.shortfalls.is_empty() {
            collector.on_shortfalls(&outcome.shortfalls);
        }
        report_slice_exclusions(
            collector,
            blame,
            &scoreable,
            &sorted,
            &sorted_scored,
            &selected,
            &outcome,
            effective,
            sliced_tokens,
        );
    }
    finish(collector, timer, PipelineStage::Slice, n_sorted, n_sliced);

    // ----- 6. Place ----------------------------------------------------------------------
    let timer = Timer::start(traced);
    let merged_in = merged.len();
    // Distinct non-negative counts of the checked input: the sum fits in i64.
    let merged_tokens = pinned_tokens + sliced_tokens;
    // The real room: the target, capped at max - reserve (S-15a).
    let target = budget.overflow_limit();
    if merged_tokens > target {
        match policy.overflow_strategy {
            OverflowStrategy::Truncate => {
                merged = truncate(collector, blame.as_mut(), items, merged, target);
            }
            OverflowStrategy::Proceed => {
                let event = OverflowEvent::new(
                    merged_tokens - target,
                    merged.iter().map(|&(i, _)| items[i].clone()).collect(),
                    budget.clone(),
                );
                collector.on_overflow(&event);
                if let Some(obs) = observer {
                    obs(&event);
                }
            }
            // Throw, and any strategy this version does not know: refuse.
            _ => {
                return Err(CupelError::BudgetOverflow {
                    selected_tokens: merged_tokens,
                    target_tokens: target,
                });
            }
        }
    }

    let merged_scored: Vec<ScoredItem<'_>> = merged
        .iter()
        .map(|&(i, s)| ScoredItem::new(&items[i], s))
        .collect();
    let order = policy.placer.place(&merged_scored);
    check_permutation(&order, merged.len())?;
    if traced {
        for &m in &order {
            let (index, score) = merged[m];
            let item = &items[index];
            let reason = inclusion_reason(item.pinned(), item.tokens());
            collector.on_item_included(InclusionRecord::new(index, item, score, reason));
        }
    }
    let window: Vec<ContextItem> = order.iter().map(|&m| items[merged[m].0].clone()).collect();
    finish(
        collector,
        timer,
        PipelineStage::Place,
        merged_in,
        window.len(),
    );
    Ok(window)
}

/// Reports every sorted item the slicer left out (see clarifications D-8..D-10).
#[allow(clippy::too_many_arguments)]
fn report_slice_exclusions<C: TraceCollector + ?Sized>(
    collector: &mut C,
    blame: &mut PinnedBlame,
    scoreable: &[usize],
    sorted: &[usize],
    sorted_scored: &[ScoredItem<'_>],
    selected: &[bool],
    outcome: &SliceOutcome,
    effective: SliceBudget,
    sliced_tokens: i64,
) {
    let n = sorted_scored.len();
    // Indices were validated by the caller.
    let mut capped: Vec<Option<&CapExclusion>> = vec![None; n];
    for cap in &outcome.cap_exclusions {
        if let Some(slot) = capped.get_mut(cap.index) {
            *slot = Some(cap);
        }
    }
    // The room each item actually had: the first room the slicer lists it in,
    // else the whole effective target minus everything selected (D-8).
    let whole_room = effective.target_tokens.saturating_sub(sliced_tokens);
    let mut room_of: Vec<Option<i64>> = vec![None; if outcome.rooms.is_empty() { 0 } else { n }];
    for room in &outcome.rooms {
        for &m in &room.members {
            if let Some(slot) = room_of.get_mut(m) {
                slot.get_or_insert(room.room_tokens);
            }
        }
    }
    for s in 0..n {
        if selected[s] {
            continue;
        }
        let scored = sorted_scored[s];
        let tokens = scored.item.tokens();
        let reason = if let Some(cap) = capped[s] {
            ExclusionReason::CountCapExceeded {
                kind: cap.kind.to_string(),
                cap: i64::try_from(cap.cap).unwrap_or(i64::MAX),
                count: i64::try_from(cap.count).unwrap_or(i64::MAX),
            }
        } else if let Some(reason) = blame.at_slice(tokens) {
            reason
        } else {
            let room = room_of.get(s).copied().flatten().unwrap_or(whole_room);
            ExclusionReason::BudgetExceeded {
                item_tokens: tokens,
                available_tokens: room.max(0),
            }
        };
        collector.on_item_excluded(ExclusionRecord::new(
            PipelineStage::Slice,
            scoreable[sorted[s]],
            scored.item,
            scored.score,
            reason,
        ));
    }
}

/// Decides which exclusions the pinned items are to blame for (clarification
/// D-9), keeping count of the tokens blamed on each pinned item so that no
/// pinned item is ever said to have displaced more tokens than it holds.
pub(crate) struct PinnedBlame {
    /// Content of each pinned item, in input order.
    names: Vec<String>,
    /// Tokens of the pinned items `0..=k` together.
    cumulative: Vec<i64>,
    /// Effective target with the pinned items `0..=k` subtracted (non-increasing).
    targets: Vec<i64>,
    /// Effective target with no pinned tokens subtracted.
    target_without: i64,
    /// Tokens each pinned item can still be blamed for.
    unblamed: Vec<i64>,
}

impl PinnedBlame {
    pub(crate) fn new(budget: &ContextBudget, items: &[ContextItem], pinned: &[usize]) -> Self {
        let mut b = PinnedBlame {
            names: Vec::with_capacity(pinned.len()),
            cumulative: Vec::with_capacity(pinned.len()),
            targets: Vec::with_capacity(pinned.len()),
            target_without: budget.effective(0).target_tokens,
            unblamed: Vec::with_capacity(pinned.len()),
        };
        let mut sum: i64 = 0;
        for &i in pinned {
            let item = &items[i];
            // Pinned tokens were checked against the budget: the sum fits.
            sum = sum.saturating_add(item.tokens());
            b.names.push(item.content().to_owned());
            b.cumulative.push(sum);
            b.targets.push(budget.effective(sum).target_tokens);
            b.unblamed.push(item.tokens());
        }
        b
    }

    /// At Slice: the item alone is larger than the effective target computed
    /// with the pinned tokens yet fits the one computed without them. Names
    /// the first pinned item (input order) whose tokens, added to those before
    /// it, make the item too large.
    pub(crate) fn at_slice(&mut self, tokens: i64) -> Option<ExclusionReason> {
        let with_all = *self.targets.last()?;
        if tokens <= with_all || tokens > self.target_without {
            return None;
        }
        let k = self.targets.partition_point(|&t| tokens <= t);
        self.charge(k, tokens)
    }

    /// At Truncate: the item, dropped with `kept_unpinned` non-pinned tokens
    /// kept before it, would have been kept had the pinned tokens not counted.
    /// Names the first pinned item at which the pinned tokens so far push it
    /// over `target`.
    pub(crate) fn at_truncate(
        &mut self,
        tokens: i64,
        kept_unpinned: i64,
        target: i64,
    ) -> Option<ExclusionReason> {
        if self.names.is_empty() || kept_unpinned.saturating_add(tokens) > target {
            return None;
        }
        let k = self
            .cumulative
            .partition_point(|&p| kept_unpinned.saturating_add(p).saturating_add(tokens) <= target);
        self.charge(k, tokens)
    }

    /// Blames pinned item `k` for `tokens`, if it still holds that many.
    fn charge(&mut self, k: usize, tokens: i64) -> Option<ExclusionReason> {
        let left = self.unblamed.get_mut(k)?;
        if tokens > *left {
            return None;
        }
        *left -= tokens;
        Some(ExclusionReason::PinnedOverride {
            displaced_by: self.names[k].clone(),
        })
    }
}

/// The Truncate strategy: keep pinned items, keep others from the front while they fit.
fn truncate<C: TraceCollector + ?Sized>(
    collector: &mut C,
    blame: Option<&mut PinnedBlame>,
    items: &[ContextItem],
    merged: Vec<(usize, f64)>,
    target: i64,
) -> Vec<(usize, f64)> {
    let mut kept = Vec::with_capacity(merged.len());
    // (entry, non-pinned tokens kept before it, room it had)
    let mut removed: Vec<((usize, f64), i64, i64)> = Vec::new();
    let mut current: i64 = 0;
    let mut kept_unpinned: i64 = 0;
    for entry in merged {
        let tokens = items[entry.0].tokens();
        if items[entry.0].pinned() {
            current += tokens;
            kept.push(entry);
        } else if current + tokens <= target {
            current += tokens;
            kept_unpinned += tokens;
            kept.push(entry);
        } else {
            removed.push((entry, kept_unpinned, target.saturating_sub(current)));
        }
    }
    if let Some(blame) = blame {
        for ((index, score), kept_before, room) in removed {
            let item = &items[index];
            let tokens = item.tokens();
            let reason = blame.at_truncate(tokens, kept_before, target).unwrap_or(
                ExclusionReason::BudgetExceeded {
                    item_tokens: tokens,
                    available_tokens: room.max(0),
                },
            );
            collector.on_item_excluded(ExclusionRecord::new(
                PipelineStage::Place,
                index,
                item,
                score,
                reason,
            ));
        }
    }
    kept
}

/// The slicer's selection as flags over its input, after checking that every
/// index it returned (selected, rooms, cap exclusions) is in range and that
/// nothing is selected twice or both selected and cap-excluded.
pub(crate) fn checked_selection(
    outcome: &SliceOutcome,
    n_sorted: usize,
) -> Result<Vec<bool>, CupelError> {
    let mut selected = vec![false; n_sorted];
    for &s in &outcome.selected {
        match selected.get_mut(s) {
            Some(flag) if !*flag => *flag = true,
            Some(_) => {
                return Err(CupelError::PipelineConfig(format!(
                    "slicer selected index {s} more than once"
                )));
            }
            None => {
                return Err(CupelError::PipelineConfig(format!(
                    "slicer selected index {s}, but only {n_sorted} items were given"
                )));
            }
        }
    }
    // Checked on every path (not only when tracing) so `run` and `dry_run` agree.
    if let Some(m) = outcome
        .rooms
        .iter()
        .flat_map(|r| r.members.iter())
        .find(|&&m| m >= n_sorted)
    {
        return Err(CupelError::PipelineConfig(format!(
            "slicer reported a room for index {m}, but only {n_sorted} items were given"
        )));
    }
    if let Some(cap) = outcome
        .cap_exclusions
        .iter()
        .find(|c| selected.get(c.index).is_none_or(|&sel| sel))
    {
        return Err(CupelError::PipelineConfig(format!(
            "slicer reported a cap exclusion for index {} which is selected or out of range ({n_sorted} items)",
            cap.index
        )));
    }
    Ok(selected)
}

pub(crate) fn check_permutation(order: &[usize], n: usize) -> Result<(), CupelError> {
    if order.len() != n {
        return Err(CupelError::PipelineConfig(format!(
            "placer returned {} positions for {n} items",
            order.len()
        )));
    }
    let mut seen = vec![false; n];
    for &i in order {
        match seen.get_mut(i) {
            Some(flag) if !*flag => *flag = true,
            _ => {
                return Err(CupelError::PipelineConfig(format!(
                    "placer output is not a permutation of 0..{n} (index {i} repeated or out of range)"
                )));
            }
        }
    }
    Ok(())
}

/// Scores `refs` (the items at input indices `indices`) with the policy's
/// scorer, checking its contract: one score per item, and the one rule for
/// non-finite scores (spec H-1) — an error naming the scorer and the item's
/// input index, before any later stage sees the score. Shared by the plain
/// and the grouped paths.
pub(crate) fn score_items(
    policy: &Policy,
    refs: &[&ContextItem],
    indices: &[usize],
) -> Result<Vec<f64>, CupelError> {
    let scores: Vec<f64> = if refs.is_empty() {
        Vec::new()
    } else {
        policy.scorer.score_all(refs)
    };
    if scores.len() != refs.len() {
        return Err(CupelError::PipelineConfig(format!(
            "scorer returned {} scores for {} items",
            scores.len(),
            refs.len()
        )));
    }
    if let Some(p) = scores.iter().position(|s| !s.is_finite()) {
        return Err(CupelError::NonFiniteScore {
            scorer: policy.scorer.name().to_string(),
            index: indices.get(p).copied().unwrap_or(p),
            score: scores[p],
        });
    }
    Ok(scores)
}

/// Why an item in the window is there: pinned (an item, or a member of a
/// pinned group), zero tokens, or its score. Shared by both paths.
pub(crate) fn inclusion_reason(pinned: bool, tokens: i64) -> InclusionReason {
    if pinned {
        InclusionReason::Pinned
    } else if tokens == 0 {
        InclusionReason::ZeroToken
    } else {
        InclusionReason::Scored
    }
}
