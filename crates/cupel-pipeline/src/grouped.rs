//! The stages of a run whose input holds atomic groups (an extension to the
//! specification; see `spec/18-atomic-groups.md`).
//!
//! Each group is collapsed into one *unit* after Classify, Score and
//! Deduplicate: a synthetic item whose tokens are the sum of its members',
//! whose score is the **maximum** of its members' scores, whose kind and
//! source are its first member's (input order) and whose timestamp is the
//! earliest of its members'. An item without a group is a unit of its own.
//! The unchanged slicer and placer see units; the pipeline then expands each
//! placed unit back into its members, adjacent and in input order. Truncate
//! keeps or drops whole units. All of it is O(N) on top of the usual stages.

use std::collections::hash_map::Entry;

use cupel_core::{
    CapExclusion, ContextBudget, ContextItem, CupelError, ExclusionReason, ExclusionRecord,
    InclusionRecord, OverflowEvent, OverflowStrategy, PipelineStage, ScoredItem, SliceOutcome,
    TraceCollector, check_token_totals, score_cmp_desc,
};
use rustc_hash::FxHashMap;

use crate::Policy;
use crate::pipeline::OverflowObserver;
use crate::run::{PinnedBlame, Timer, check_permutation, checked_selection, finish};

/// A group's members and what the stages need to know about it.
struct Group<'a> {
    id: &'a str,
    /// Input indices, ascending.
    members: Vec<usize>,
    pinned: bool,
    negative: bool,
    /// Sum of the non-negative members' tokens (fits: see `check_token_totals`).
    tokens: i64,
}

/// One slicing/placing unit: an ungrouped item or a whole group.
#[derive(Clone, Copy)]
enum Unit {
    Single(usize),
    Group(usize),
}

/// The unit table of one run.
struct Units<'a> {
    items: &'a [ContextItem],
    groups: Vec<Group<'a>>,
    /// Units in the input order of their first member.
    units: Vec<Unit>,
    /// One synthetic item per group (`None` for a group with a negative member).
    synthetic: Vec<Option<ContextItem>>,
}

impl<'a> Units<'a> {
    fn build(items: &'a [ContextItem]) -> Result<Self, CupelError> {
        let mut ids: FxHashMap<&str, usize> = FxHashMap::default();
        let mut groups: Vec<Group<'a>> = Vec::new();
        let mut units: Vec<Unit> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let Some(id) = item.group() else {
                units.push(Unit::Single(i));
                continue;
            };
            let g = match ids.entry(id) {
                Entry::Occupied(o) => *o.get(),
                Entry::Vacant(v) => {
                    let g = groups.len();
                    v.insert(g);
                    groups.push(Group {
                        id,
                        members: Vec::new(),
                        pinned: false,
                        negative: false,
                        tokens: 0,
                    });
                    units.push(Unit::Group(g));
                    g
                }
            };
            let group = &mut groups[g];
            group.members.push(i);
            group.pinned |= item.pinned();
            if item.tokens() < 0 {
                group.negative = true;
            } else {
                // Non-negative counts of a checked input: the sum fits in i64.
                group.tokens = group.tokens.saturating_add(item.tokens());
            }
        }
        let mut synthetic = Vec::with_capacity(groups.len());
        for g in &groups {
            synthetic.push(if g.negative {
                None
            } else {
                Some(synthetic_item(items, g)?)
            });
        }
        Ok(Units {
            items,
            groups,
            units,
            synthetic,
        })
    }

    /// The input indices of a unit's members, ascending.
    fn members<'s>(&'s self, u: &'s Unit) -> &'s [usize] {
        match u {
            Unit::Single(i) => std::slice::from_ref(i),
            Unit::Group(g) => &self.groups[*g].members,
        }
    }

    fn pinned(&self, u: &Unit) -> bool {
        match *u {
            Unit::Single(i) => self.items[i].pinned(),
            Unit::Group(g) => self.groups[g].pinned,
        }
    }

    fn tokens(&self, u: &Unit) -> i64 {
        match *u {
            Unit::Single(i) => self.items[i].tokens(),
            Unit::Group(g) => self.groups[g].tokens,
        }
    }

    /// The item the slicer and placer see for a unit. Only called for units
    /// without negative tokens, whose synthetic item exists.
    fn item(&self, u: &Unit) -> Option<&ContextItem> {
        match *u {
            Unit::Single(i) => self.items.get(i),
            Unit::Group(g) => self.synthetic.get(g).and_then(Option::as_ref),
        }
    }
}

/// The item a group is sliced and placed as: the group id as content (never
/// empty: the builder rejects empty ids), the members' total tokens, the first
/// member's kind and source, the earliest member timestamp.
fn synthetic_item(items: &[ContextItem], g: &Group<'_>) -> Result<ContextItem, CupelError> {
    let first = g
        .members
        .first()
        .and_then(|&i| items.get(i))
        .ok_or_else(|| CupelError::PipelineConfig(format!("group {:?} has no members", g.id)))?;
    let timestamp = g.members.iter().filter_map(|&i| items[i].timestamp()).min();
    ContextItem::builder(g.id, g.tokens)
        .kind(first.kind().clone())
        .source(first.source().clone())
        .timestamp_opt(timestamp)
        .pinned(g.pinned)
        .group(g.id)
        .build()
}

/// The maximum of the members' scores, NaN ignored (NaN only when every
/// member's score is NaN).
fn aggregate(scores: impl Iterator<Item = f64>) -> f64 {
    scores.fold(f64::NAN, |acc, s| {
        if acc.is_nan() || (!s.is_nan() && s > acc) {
            s
        } else {
            acc
        }
    })
}

fn group_excluded(group: &Group<'_>, available_tokens: i64) -> ExclusionReason {
    ExclusionReason::GroupExcluded {
        group: group.id.to_owned(),
        group_tokens: group.tokens,
        available_tokens: available_tokens.max(0),
    }
}

#[allow(clippy::too_many_lines)]
pub(crate) fn stages<C: TraceCollector + ?Sized>(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
    collector: &mut C,
    traced: bool,
    observer: Option<&OverflowObserver>,
) -> Result<Vec<ContextItem>, CupelError> {
    check_token_totals(items)?;

    // ----- 1. Classify ---------------------------------------------------------
    let timer = Timer::start(traced);
    let table = Units::build(items)?;
    let mut pinned_units: Vec<Unit> = Vec::new();
    let mut scoreable_units: Vec<Unit> = Vec::with_capacity(table.units.len());
    let mut pinned_tokens: i64 = 0;
    for u in &table.units {
        match *u {
            Unit::Single(i) if items[i].tokens() < 0 => {
                if traced {
                    collector.on_item_excluded(ExclusionRecord::new(
                        PipelineStage::Classify,
                        i,
                        &items[i],
                        0.0,
                        ExclusionReason::NegativeTokens {
                            tokens: items[i].tokens(),
                        },
                    ));
                }
            }
            Unit::Group(g) if table.groups[g].negative => {
                if traced {
                    let group = &table.groups[g];
                    for &i in &group.members {
                        let tokens = items[i].tokens();
                        let reason = if tokens < 0 {
                            ExclusionReason::NegativeTokens { tokens }
                        } else {
                            group_excluded(group, 0)
                        };
                        collector.on_item_excluded(ExclusionRecord::new(
                            PipelineStage::Classify,
                            i,
                            &items[i],
                            0.0,
                            reason,
                        ));
                    }
                }
            }
            _ if table.pinned(u) => {
                pinned_units.push(*u);
                pinned_tokens += table.tokens(u);
            }
            _ => scoreable_units.push(*u),
        }
    }
    let available_for_pinned = budget.available_for_pinned();
    if pinned_tokens > available_for_pinned {
        return Err(CupelError::PinnedBudgetExceeded {
            pinned_tokens,
            available_tokens: available_for_pinned,
        });
    }
    // Input indices of the pinned items (every member of a pinned group) and
    // of the scoreable items, each in input order.
    let mut is_pinned = vec![false; items.len()];
    let mut is_scoreable = vec![false; items.len()];
    for u in &pinned_units {
        for &i in table.members(u) {
            is_pinned[i] = true;
        }
    }
    for u in &scoreable_units {
        for &i in table.members(u) {
            is_scoreable[i] = true;
        }
    }
    let pinned: Vec<usize> = (0..items.len()).filter(|&i| is_pinned[i]).collect();
    let scoreable: Vec<usize> = (0..items.len()).filter(|&i| is_scoreable[i]).collect();
    finish(
        collector,
        timer,
        PipelineStage::Classify,
        items.len(),
        pinned.len() + scoreable.len(),
    );

    // ----- 2. Score (every scoreable item, as usual) -------------------------------
    let timer = Timer::start(traced);
    let refs: Vec<&ContextItem> = scoreable.iter().map(|&i| &items[i]).collect();
    // The same contract as ungrouped runs: one finite score per item (H-1).
    let scores = crate::run::score_items(policy, &refs, &scoreable)?;
    // Score and scoreable position of each input index (pinned items: 1.0).
    let mut score_of = vec![1.0_f64; items.len()];
    let mut position_of = vec![usize::MAX; items.len()];
    for (p, &i) in scoreable.iter().enumerate() {
        score_of[i] = scores[p];
        position_of[i] = p;
    }
    finish(
        collector,
        timer,
        PipelineStage::Score,
        refs.len(),
        refs.len(),
    );

    // ----- 3. Deduplicate (ungrouped items only) ----------------------------------
    // Grouped items are exempt: they are never removed and never remove
    // another item, so deduplication cannot break a group.
    let timer = Timer::start(traced);
    let mut survivor = vec![true; scoreable_units.len()];
    if policy.deduplication {
        let mut best: FxHashMap<&str, usize> = FxHashMap::default();
        for (k, u) in scoreable_units.iter().enumerate() {
            let Unit::Single(i) = *u else { continue };
            match best.entry(items[i].content()) {
                Entry::Vacant(v) => {
                    v.insert(k);
                }
                Entry::Occupied(mut o) => {
                    let existing = *o.get();
                    let Unit::Single(e) = scoreable_units[existing] else {
                        continue;
                    };
                    if score_cmp_desc(score_of[i], score_of[e]).is_lt() {
                        survivor[existing] = false;
                        o.insert(k);
                    } else {
                        survivor[k] = false;
                    }
                }
            }
        }
        if traced {
            for (k, u) in scoreable_units.iter().enumerate() {
                if let (false, Unit::Single(i)) = (survivor[k], *u) {
                    collector.on_item_excluded(ExclusionRecord::new(
                        PipelineStage::Deduplicate,
                        i,
                        &items[i],
                        score_of[i],
                        ExclusionReason::Deduplicated {
                            deduplicated_against: items[i].content().to_owned(),
                        },
                    ));
                }
            }
        }
    }
    // (aggregate score, scoreable position of the first member, unit)
    let mut keyed: Vec<(f64, usize, Unit)> = Vec::with_capacity(scoreable_units.len());
    let mut surviving_items = 0usize;
    for (k, u) in scoreable_units.iter().enumerate() {
        if !survivor[k] {
            continue;
        }
        let members = table.members(u);
        surviving_items += members.len();
        let score = aggregate(members.iter().map(|&i| score_of[i]));
        keyed.push((score, position_of[members[0]], *u));
    }
    finish(
        collector,
        timer,
        PipelineStage::Deduplicate,
        refs.len(),
        surviving_items,
    );

    // ----- 4. Sort (units; no event) ----------------------------------------------------
    keyed.sort_unstable_by(|a, b| score_cmp_desc(a.0, b.0).then(a.1.cmp(&b.1)));
    let mut sorted_scored: Vec<ScoredItem<'_>> = Vec::with_capacity(keyed.len());
    for &(score, _, u) in &keyed {
        let item = table.item(&u).ok_or_else(|| {
            CupelError::PipelineConfig("a unit without negative tokens has no item".into())
        })?;
        sorted_scored.push(ScoredItem::new(item, score));
    }

    // ----- 5. Slice (units) -------------------------------------------------------------
    let timer = Timer::start(traced);
    let effective = budget.effective(pinned_tokens);
    let outcome = policy.slicer.slice(&sorted_scored, effective)?;
    let n_sorted = sorted_scored.len();
    let selected = checked_selection(&outcome, n_sorted)?;
    // The merged list of units: pinned units first (input order, score 1.0),
    // then the sliced units in Sort-stage order.
    let mut merged: Vec<(Unit, f64)> =
        Vec::with_capacity(pinned_units.len() + outcome.selected.len());
    merged.extend(pinned_units.iter().map(|&u| (u, 1.0)));
    let mut sliced_tokens: i64 = 0;
    let mut sliced_items = 0usize;
    for s in (0..n_sorted).filter(|&s| selected[s]) {
        let (score, _, u) = keyed[s];
        sliced_tokens += table.tokens(&u);
        sliced_items += table.members(&u).len();
        merged.push((u, score));
    }
    let mut blame = traced.then(|| PinnedBlame::new(budget, items, &pinned));
    if let Some(blame) = blame.as_mut() {
        if !outcome.shortfalls.is_empty() {
            collector.on_shortfalls(&outcome.shortfalls);
        }
        let whole_room = effective.target_tokens.saturating_sub(sliced_tokens);
        report_slice_exclusions(
            collector, blame, &table, &keyed, &selected, &outcome, &score_of, whole_room,
        );
    }
    let sorted_items: usize = keyed.iter().map(|k| table.members(&k.2).len()).sum();
    finish(
        collector,
        timer,
        PipelineStage::Slice,
        sorted_items,
        sliced_items,
    );

    // ----- 6. Place (units, then expanded) ----------------------------------------------
    let timer = Timer::start(traced);
    let merged_in: usize = merged.iter().map(|m| table.members(&m.0).len()).sum();
    let merged_tokens = pinned_tokens + sliced_tokens;
    // The real room: the target, capped at max - reserve (S-15a).
    let target = budget.overflow_limit();
    if merged_tokens > target {
        match policy.overflow_strategy {
            OverflowStrategy::Truncate => {
                merged = truncate(collector, blame.as_mut(), &table, &score_of, merged, target);
            }
            OverflowStrategy::Proceed => {
                let event = OverflowEvent::new(
                    merged_tokens - target,
                    merged
                        .iter()
                        .flat_map(|(u, _)| table.members(u).iter().map(|&i| items[i].clone()))
                        .collect(),
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

    let mut merged_scored: Vec<ScoredItem<'_>> = Vec::with_capacity(merged.len());
    for (u, score) in &merged {
        let item = table.item(u).ok_or_else(|| {
            CupelError::PipelineConfig("a unit without negative tokens has no item".into())
        })?;
        merged_scored.push(ScoredItem::new(item, *score));
    }
    let order = policy.placer.place(&merged_scored);
    check_permutation(&order, merged.len())?;
    let mut window: Vec<ContextItem> = Vec::with_capacity(merged_in);
    for &m in &order {
        let (u, _) = &merged[m];
        let unit_pinned = table.pinned(u);
        for &index in table.members(u) {
            let item = &items[index];
            if traced {
                let reason = crate::run::inclusion_reason(unit_pinned, item.tokens());
                collector.on_item_included(InclusionRecord::new(
                    index,
                    item,
                    score_of[index],
                    reason,
                ));
            }
            window.push(item.clone());
        }
    }
    finish(
        collector,
        timer,
        PipelineStage::Place,
        merged_in,
        window.len(),
    );
    Ok(window)
}

/// Reports every member of every sorted unit the slicer left out. An
/// ungrouped item gets the usual reason (D-8..D-10); a group's members get
/// `CountCapExceeded` when a count cap removed the group, else `GroupExcluded`
/// with the room the group had.
#[allow(clippy::too_many_arguments)]
fn report_slice_exclusions<C: TraceCollector + ?Sized>(
    collector: &mut C,
    blame: &mut PinnedBlame,
    table: &Units<'_>,
    keyed: &[(f64, usize, Unit)],
    selected: &[bool],
    outcome: &SliceOutcome,
    score_of: &[f64],
    whole_room: i64,
) {
    let n = keyed.len();
    let mut capped: Vec<Option<&CapExclusion>> = vec![None; n];
    for cap in &outcome.cap_exclusions {
        if let Some(slot) = capped.get_mut(cap.index) {
            *slot = Some(cap);
        }
    }
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
        let u = &keyed[s].2;
        let tokens = table.tokens(u);
        let room = room_of.get(s).copied().flatten().unwrap_or(whole_room);
        let reason = if let Some(cap) = capped[s] {
            ExclusionReason::CountCapExceeded {
                kind: cap.kind.to_string(),
                cap: i64::try_from(cap.cap).unwrap_or(i64::MAX),
                count: i64::try_from(cap.count).unwrap_or(i64::MAX),
            }
        } else if let Unit::Group(g) = *u {
            group_excluded(&table.groups[g], room)
        } else if let Some(reason) = blame.at_slice(tokens) {
            reason
        } else {
            ExclusionReason::BudgetExceeded {
                item_tokens: tokens,
                available_tokens: room.max(0),
            }
        };
        for &index in table.members(u) {
            collector.on_item_excluded(ExclusionRecord::new(
                PipelineStage::Slice,
                index,
                &table.items[index],
                score_of[index],
                reason.clone(),
            ));
        }
    }
}

/// Truncate over units: keep pinned units, keep others from the front while
/// they fit, drop the rest whole. Every member of a dropped group is reported
/// as `GroupExcluded`; an ungrouped item as usual.
fn truncate<C: TraceCollector + ?Sized>(
    collector: &mut C,
    blame: Option<&mut PinnedBlame>,
    table: &Units<'_>,
    score_of: &[f64],
    merged: Vec<(Unit, f64)>,
    target: i64,
) -> Vec<(Unit, f64)> {
    let mut kept = Vec::with_capacity(merged.len());
    // (unit, non-pinned tokens kept before it, room it had)
    let mut removed: Vec<(Unit, i64, i64)> = Vec::new();
    let mut current: i64 = 0;
    let mut kept_unpinned: i64 = 0;
    for entry in merged {
        let tokens = table.tokens(&entry.0);
        if table.pinned(&entry.0) {
            current += tokens;
            kept.push(entry);
        } else if current + tokens <= target {
            current += tokens;
            kept_unpinned += tokens;
            kept.push(entry);
        } else {
            removed.push((entry.0, kept_unpinned, target.saturating_sub(current)));
        }
    }
    if let Some(blame) = blame {
        for (u, kept_before, room) in removed {
            let tokens = table.tokens(&u);
            let reason = match u {
                Unit::Group(g) => group_excluded(&table.groups[g], room),
                Unit::Single(_) => blame.at_truncate(tokens, kept_before, target).unwrap_or(
                    ExclusionReason::BudgetExceeded {
                        item_tokens: tokens,
                        available_tokens: room.max(0),
                    },
                ),
            };
            for &index in table.members(&u) {
                collector.on_item_excluded(ExclusionRecord::new(
                    PipelineStage::Place,
                    index,
                    &table.items[index],
                    score_of[index],
                    reason.clone(),
                ));
            }
        }
    }
    kept
}
