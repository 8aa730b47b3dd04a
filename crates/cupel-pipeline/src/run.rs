//! The one stage engine: Classify, Score, Deduplicate, Sort, Slice and Place,
//! written once over a [`Units`] table. A plain run is the table where every
//! unit is one item ([`Plain`]); a run with atomic groups uses
//! [`Grouped`](crate::grouped::Grouped). Each table gets its own compiled
//! copy of the engine, so a group-free input builds no table and pays
//! nothing for groups. Stages pass unit ids and scores; items are cloned (an
//! `Arc` bump each) only for the returned window and for diagnostics.

use std::borrow::Cow;
use std::time::{Instant, SystemTime};

use cupel_core::{
    CapExclusion, ContextBudget, ContextItem, CupelError, ExclusionReason, ExclusionRecord,
    InclusionReason, InclusionRecord, OverflowEvent, OverflowStrategy, PipelineStage, ScoredItem,
    SliceOutcome, StageTrace, TokenTotals, TraceCollector, VariantChoice, VariantPick,
    VariantReason, check_finite, score_sort_key, sort_by_key_stable,
};

use crate::Policy;
use crate::blame::PinnedBlame;
use crate::contract::{check_permutation, checked_selection};
use crate::dedup::survivors;
use crate::grouped::{Groups, group_excluded};
use crate::pipeline::OverflowObserver;

/// What the engine needs to know about the units of one run. Unit ids are
/// `0..count()`, in the input order of each unit's first member.
pub(crate) trait Units {
    /// The input indices of a unit's members, ascending.
    type Members<'s>: ExactSizeIterator<Item = usize>
    where
        Self: 's;
    /// Whether a unit can have more than one member.
    const GROUPED: bool;
    fn count(&self) -> usize;
    fn members(&self, u: usize) -> Self::Members<'_>;
    /// The input indices of the members of `units` (ascending ids), in
    /// input order.
    fn member_items<'u>(&self, units: &'u [usize]) -> Cow<'u, [usize]>;
    /// Whether the unit has two or more members (a group).
    fn multi(&self, u: usize) -> bool;
    /// The item the slicer and placer see for the unit.
    fn item(&self, u: usize) -> &ContextItem;
    /// The reason every member of unit `u` gets when it is a group of two
    /// or more left out with `room` tokens of room (AG rules); `None` for
    /// a unit of one item.
    fn excluded_group(&self, u: usize, room: i64) -> Option<ExclusionReason> {
        (Self::GROUPED && self.multi(u)).then(|| group_excluded(self.item(u), room))
    }
}

/// The number of items in the units `ids` of `units`.
fn item_count<'u, T: Units>(units: &T, ids: impl Iterator<Item = &'u usize>) -> usize {
    if T::GROUPED {
        ids.map(|&u| units.members(u).count()).sum()
    } else {
        ids.count()
    }
}

/// The unit table of a run without groups: unit `u` is item `u`.
pub(crate) struct Plain<'a>(pub(crate) &'a [ContextItem]);

impl Units for Plain<'_> {
    type Members<'s>
        = std::iter::Once<usize>
    where
        Self: 's;
    const GROUPED: bool = false;
    fn count(&self) -> usize {
        self.0.len()
    }
    fn members(&self, u: usize) -> Self::Members<'_> {
        std::iter::once(u)
    }
    fn member_items<'u>(&self, units: &'u [usize]) -> Cow<'u, [usize]> {
        // Unit `u` is item `u`.
        Cow::Borrowed(units)
    }
    fn multi(&self, _: usize) -> bool {
        false
    }
    fn item(&self, u: usize) -> &ContextItem {
        &self.0[u]
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
    execute_with(policy, budget, items, collector, observer, true)
}

/// [`execute`], returning the window only when `keep_window` (a dry run
/// wants only what the collector records: the window's items are then not
/// copied, and the window returned is empty).
pub(crate) fn execute_with<C: TraceCollector + ?Sized>(
    policy: &Policy,
    budget: &ContextBudget,
    items: &[ContextItem],
    collector: &mut C,
    observer: Option<&OverflowObserver>,
    keep_window: bool,
) -> Result<Vec<ContextItem>, CupelError> {
    let traced = collector.is_enabled();
    if traced {
        collector.on_run_started(items, budget);
    }
    let FirstPass {
        totals,
        varied,
        scan,
        grouped,
    } = first_pass(items);
    let result = totals.check().and_then(|()| {
        if grouped.is_empty() {
            Engine::new(
                policy,
                budget,
                items,
                &Plain(items),
                scan,
                collector,
                observer,
            )
            .with_variants(varied)
            .keep_window(keep_window)
            .run()
        } else {
            // The grouped engine reads a unit table; building it turns the
            // scan's rows by item into rows by unit.
            let (mut groups, scan) = Groups::build(items, &grouped, scan)?;
            drop(grouped);
            let table = groups.table();
            Engine::new(policy, budget, items, &table, scan, collector, observer)
                .with_variants(varied)
                .keep_window(keep_window)
                .run()
        }
    });
    if traced {
        match &result {
            Ok(_) => collector.on_run_completed(),
            Err(e) => collector.on_run_failed(e),
        }
    }
    result
}

/// What the first pass over the items of a run reads.
pub(crate) struct FirstPass<'a> {
    /// Every item's tokens, summed.
    pub(crate) totals: TokenTotals,
    /// Whether some item has variants.
    pub(crate) varied: bool,
    /// Classify's rows, by item.
    pub(crate) scan: Scan,
    /// (input index, group id) of every grouped item, in input order.
    pub(crate) grouped: Vec<(usize, &'a str)>,
}

/// The one pass over the items: every item's tokens (their totals are
/// checked before any stage runs), pinned flag, variants flag and group,
/// keeping what Classify needs, so that no later pass reads every item
/// again. Atomic groups (an extension) need a unit table; a run without
/// any grouped item goes through exactly the specification's stages.
/// Variants (another extension) only change which slicer method is called
/// and are otherwise looked at only once a slicer took one. The loop does
/// nothing else, so the CPU keeps the reads of many items in flight.
pub(crate) fn first_pass(items: &[ContextItem]) -> FirstPass<'_> {
    let mut pass = FirstPass {
        totals: TokenTotals::new(),
        varied: false,
        scan: Scan {
            tokens: Vec::with_capacity(items.len()),
            pinned: Vec::new(),
        },
        grouped: Vec::new(),
    };
    for (i, item) in items.iter().enumerate() {
        let tokens = item.tokens();
        pass.totals.add(tokens);
        if item.pinned() {
            pass.scan.pinned.push(i);
        }
        pass.scan.tokens.push(tokens);
        pass.varied |= item.has_variants();
        if let Some(id) = item.group() {
            pass.grouped.push((i, id));
        }
    }
    pass
}

/// What Classify needs of every unit, read by [`execute`]'s first pass (and
/// turned from items into units by [`Groups::build`] in a run with groups),
/// so that Classify does not read every item a second time.
#[derive(Default)]
pub(crate) struct Scan {
    /// Each unit's tokens: its item's, or for a group of two or more the
    /// sum of its non-negative members' tokens. Negative when the unit is
    /// excluded at Classify (a negative item, or a group with a negative
    /// member).
    pub(crate) tokens: Vec<i64>,
    /// The pinned units (a pinned item, or a group with a pinned member),
    /// ascending.
    pub(crate) pinned: Vec<usize>,
}

/// Wall-clock and monotonic start of a stage; only taken when tracing.
struct Timer {
    started_at: SystemTime,
    started: Instant,
}

/// The state of one run, shared by its stages.
struct Engine<'r, T, C: ?Sized> {
    policy: &'r Policy,
    budget: &'r ContextBudget,
    items: &'r [ContextItem],
    units: &'r T,
    collector: &'r mut C,
    observer: Option<&'r OverflowObserver>,
    traced: bool,
    /// Score of each input item: its scorer's score, 1.0 when pinned.
    score_of: Vec<f64>,
    /// Each unit's whole tokens (the first pass's [`Scan::tokens`], taken
    /// by Classify): later stages go through the units in score order, and
    /// reading each item again there is a cache miss per unit on large
    /// inputs. (0 for a unit excluded at Classify.)
    tokens_of: Vec<i64>,
    pinned_tokens: i64,
    /// The tokens of the sliced units in their chosen forms (set at Slice):
    /// with `pinned_tokens`, the merged list's total at Place, which is
    /// then not summed again.
    sliced_tokens: i64,
    /// Input indices of the pinned items, in input order.
    pinned_items: Vec<usize>,
    /// Built at Slice when tracing; shared with Truncate so that a pinned
    /// item is never blamed for more tokens than it holds over the run.
    blame: Option<PinnedBlame>,
    /// Whether some input item has variants: the slicer is then asked
    /// through `slice_variants`.
    varied: bool,
    /// The first pass's reads, taken by Classify.
    scan: Scan,
    /// The form each unit is taken in and why, when the slicer took at
    /// least one variant; empty otherwise (every unit whole).
    forms: Vec<(usize, VariantReason)>,
    /// Whether the window is returned (else Place only reports it).
    keep_window: bool,
}

/// The merged list of the Place stage: (unit, score).
type Merged = Vec<(usize, f64)>;

impl<'r, T: Units, C: TraceCollector + ?Sized> Engine<'r, T, C> {
    fn new(
        policy: &'r Policy,
        budget: &'r ContextBudget,
        items: &'r [ContextItem],
        units: &'r T,
        scan: Scan,
        collector: &'r mut C,
        observer: Option<&'r OverflowObserver>,
    ) -> Self {
        let traced = collector.is_enabled();
        Engine {
            policy,
            budget,
            items,
            units,
            collector,
            observer,
            traced,
            score_of: Vec::new(),
            tokens_of: Vec::new(),
            pinned_tokens: 0,
            sliced_tokens: 0,
            pinned_items: Vec::new(),
            blame: None,
            varied: false,
            scan,
            forms: Vec::new(),
            keep_window: true,
        }
    }

    fn with_variants(mut self, varied: bool) -> Self {
        self.varied = varied;
        self
    }

    fn keep_window(mut self, keep: bool) -> Self {
        self.keep_window = keep;
        self
    }

    /// The tokens unit `u` takes in the window: its chosen form's.
    fn unit_tokens(&self, u: usize) -> i64 {
        match self.forms.get(u) {
            Some(&(form, _)) if form > 0 => self
                .units
                .item(u)
                .variant_tokens(form)
                .unwrap_or(self.tokens_of[u]),
            _ => self.tokens_of[u],
        }
    }

    /// Records the slicer's variant picks against the units (checked: each
    /// pick names a selected index, an existing variant, once).
    fn take_picks(
        &mut self,
        picks: &[VariantPick],
        keyed: &[(f64, usize)],
        selected: &[bool],
    ) -> Result<(), CupelError> {
        let mut forms = vec![(0, VariantReason::DidNotFit); self.units.count()];
        for p in picks {
            let Some(&(_, u)) = keyed.get(p.index).filter(|_| selected[p.index]) else {
                return Err(CupelError::PipelineConfig(format!(
                    "slicer picked a variant for index {}, which it did not select ({} items were given)",
                    p.index,
                    keyed.len()
                )));
            };
            let count = self.units.item(u).variants().len();
            if p.variant == 0 || p.variant > count || forms[u].0 != 0 {
                return Err(CupelError::PipelineConfig(format!(
                    "slicer picked variant {} for index {}, which has {count} variants (or picked twice)",
                    p.variant, p.index
                )));
            }
            forms[u] = (p.variant, p.reason);
        }
        self.forms = forms;
        Ok(())
    }

    /// The form member `i` of unit `u` is in, with its report row.
    fn member_form(&self, u: usize, i: usize) -> Option<(usize, VariantReason)> {
        let &(level, reason) = self.forms.get(u)?;
        let form = if T::GROUPED && self.units.multi(u) {
            crate::grouped::member_form(&self.items[i], level)
        } else {
            level
        };
        (form > 0).then_some((form, reason))
    }

    fn run(mut self) -> Result<Vec<ContextItem>, CupelError> {
        let (pinned, scoreable) = self.classify()?;
        self.score(&scoreable)?;
        let survivors = self.deduplicate(&scoreable);
        drop(scoreable);
        let merged = self.slice(survivors, &pinned)?;
        self.place(merged, pinned.len())
    }

    fn start(&self) -> Option<Timer> {
        self.traced.then(|| Timer {
            started_at: SystemTime::now(),
            started: Instant::now(),
        })
    }

    /// Reports a stage; the item counts are only computed when tracing.
    fn finish(
        &mut self,
        timer: Option<Timer>,
        stage: PipelineStage,
        counts: impl Fn() -> (usize, usize),
    ) {
        if let Some(t) = timer {
            let (count_in, count_out) = counts();
            self.collector.on_stage_completed(&StageTrace::new(
                stage,
                t.started_at,
                t.started.elapsed(),
                count_in,
                count_out,
            ));
        }
    }

    /// Reports every member of unit `u` excluded at `stage` for `reason`,
    /// each with its own score.
    fn exclude(&mut self, stage: PipelineStage, u: usize, reason: ExclusionReason) {
        let units = self.units;
        let mut members = units.members(u).peekable();
        let mut reason = Some(reason);
        while let Some(i) = members.next() {
            let r = if members.peek().is_some() {
                reason.clone()
            } else {
                reason.take()
            };
            if let Some(r) = r {
                let record = ExclusionRecord::new(stage, i, &self.items[i], self.score_of[i], r);
                self.collector.on_item_excluded(record);
            }
        }
    }

    /// Stage 1: negative units out, pinned units aside, the rest scoreable.
    fn classify(&mut self) -> Result<(Vec<usize>, Vec<usize>), CupelError> {
        let timer = self.start();
        let units = self.units;
        let mut pinned = Vec::new();
        let mut scoreable = Vec::with_capacity(units.count());
        // The first pass read every unit's tokens and pins (its token
        // buffer becomes `tokens_of`).
        let Scan {
            tokens: mut tokens_of,
            pinned: pins,
        } = std::mem::take(&mut self.scan);
        let mut next_pinned = 0;
        debug_assert_eq!(tokens_of.len(), units.count());
        for (u, tokens_u) in tokens_of.iter_mut().enumerate() {
            let is_pinned = pins.get(next_pinned) == Some(&u);
            next_pinned += usize::from(is_pinned);
            if *tokens_u < 0 {
                *tokens_u = 0;
                if self.traced {
                    // AG-2: a negative member excludes its whole group.
                    for i in units.members(u) {
                        let tokens = self.items[i].tokens();
                        let reason = (tokens >= 0)
                            .then(|| units.excluded_group(u, 0))
                            .flatten()
                            .unwrap_or(ExclusionReason::NegativeTokens { tokens });
                        let record = ExclusionRecord::new(
                            PipelineStage::Classify,
                            i,
                            &self.items[i],
                            0.0,
                            reason,
                        );
                        self.collector.on_item_excluded(record);
                    }
                }
            } else if is_pinned {
                // Non-negative counts of a checked input: the sum fits.
                self.pinned_tokens = self.pinned_tokens.saturating_add(*tokens_u);
                pinned.push(u);
            } else {
                scoreable.push(u);
            }
        }
        let available = self.budget.available_for_pinned();
        if self.pinned_tokens > available {
            return Err(CupelError::PinnedBudgetExceeded {
                pinned_tokens: self.pinned_tokens,
                available_tokens: available,
            });
        }
        self.tokens_of = tokens_of;
        self.pinned_items = units.member_items(&pinned).into_owned();
        let count_in = self.items.len();
        self.finish(timer, PipelineStage::Classify, || {
            (count_in, item_count(units, pinned.iter().chain(&scoreable)))
        });
        Ok((pinned, scoreable))
    }

    /// Stage 2: every scoreable item, in input order, through the scorer,
    /// under its contract: one finite score per item (H-1).
    fn score(&mut self, scoreable: &[usize]) -> Result<(), CupelError> {
        let timer = self.start();
        // When every unit is scoreable (no pinned or negative one, the usual
        // case), the scoreable items are all the items, in input order:
        // `indices` is then `None`, and the scores are `score_of` as they
        // come.
        let indices =
            (scoreable.len() != self.units.count()).then(|| self.units.member_items(scoreable));
        let refs: Vec<&ContextItem> = match &indices {
            None => self.items.iter().collect(),
            Some(indices) => indices.iter().map(|&i| &self.items[i]).collect(),
        };
        let to_input = |index: usize| {
            indices
                .as_ref()
                .and_then(|indices| indices.get(index).copied())
                .unwrap_or(index)
        };
        let scores = if refs.is_empty() {
            Vec::new()
        } else {
            self.policy
                .scorer
                .try_score_all(&refs)
                .map_err(|e| match e {
                    CupelError::EmbeddingDimensionMismatch {
                        index,
                        item_dims,
                        query_dims,
                    } => CupelError::EmbeddingDimensionMismatch {
                        index: to_input(index),
                        item_dims,
                        query_dims,
                    },
                    e => e,
                })?
        };
        if scores.len() != refs.len() {
            return Err(CupelError::PipelineConfig(format!(
                "scorer returned {} scores for {} items",
                scores.len(),
                refs.len()
            )));
        }
        check_finite(scores.iter().copied(), || {
            self.policy.scorer.name().to_string()
        })
        .map_err(|e| match e {
            CupelError::NonFiniteScore {
                scorer,
                index,
                score,
            } => CupelError::NonFiniteScore {
                scorer,
                index: to_input(index),
                score,
            },
            e => e,
        })?;
        if self.traced && !refs.is_empty() && self.collector.wants_score_notes() {
            let notes = self
                .policy
                .scorer
                .notes_in(&refs, &cupel_core::ScoreContext::new())
                .into_iter()
                .map(|(i, n)| (to_input(i), n))
                .collect();
            self.collector.on_score_notes(notes);
        }
        let n = refs.len();
        drop(refs);
        self.score_of = match indices {
            None => scores,
            Some(indices) => {
                let mut score_of = vec![1.0; self.items.len()];
                for (&i, &s) in indices.iter().zip(&scores) {
                    score_of[i] = s;
                }
                score_of
            }
        };
        self.finish(timer, PipelineStage::Score, || (n, n));
        Ok(())
    }

    /// A unit's score: its item's, or the maximum of its members' (AG-5;
    /// NaN ignored, NaN only if every member's is).
    #[inline]
    fn unit_score(&self, u: usize) -> f64 {
        let mut members = self.units.members(u);
        // Every unit has a member; NaN stands for none all the same.
        let first = members.next().map_or(f64::NAN, |i| self.score_of[i]);
        if !T::GROUPED || members.len() == 0 {
            return first;
        }
        members.map(|i| self.score_of[i]).fold(first, |acc, s| {
            if acc.is_nan() || (!s.is_nan() && s > acc) {
                s
            } else {
                acc
            }
        })
    }

    /// Stage 3: byte-identical contents among single-item units; the best
    /// score survives, ties keep the earlier item. A multi-member group is
    /// never compared (AG-4). Returns the survivors as `(score, unit)`.
    fn deduplicate(&mut self, scoreable: &[usize]) -> Vec<(f64, usize)> {
        let timer = self.start();
        let units = self.units;
        let mut keyed: Vec<(f64, usize)> =
            scoreable.iter().map(|&u| (self.unit_score(u), u)).collect();
        if self.policy.deduplication && !keyed.is_empty() {
            // Every hash read first, in a loop that does not branch on what
            // it reads, so the CPU overlaps the reads of many items (one
            // cache miss each on a large input); the hash map then works on
            // the local copy. (A multi-member group is never compared: its
            // unit item's hash is read with the others but never looked up.)
            let hashes: Vec<u64> = keyed
                .iter()
                .map(|&(_, u)| units.item(u).content_hash())
                .collect();
            let survivor = survivors(
                keyed.len(),
                |k| (!(T::GROUPED && units.multi(keyed[k].1))).then(|| hashes[k]),
                |k| units.item(keyed[k].1).content(),
                |k| keyed[k].0,
            );
            if self.traced {
                for (k, &(_, u)) in keyed.iter().enumerate() {
                    if !survivor[k] {
                        // Byte-identical by definition: the survivor's content is this content.
                        let against = units.item(u).content().to_owned();
                        let reason = ExclusionReason::Deduplicated {
                            deduplicated_against: against,
                        };
                        self.exclude(PipelineStage::Deduplicate, u, reason);
                    }
                }
            }
            let mut k = 0;
            keyed.retain(|_| {
                k += 1;
                survivor[k - 1]
            });
        }
        self.finish(timer, PipelineStage::Deduplicate, || {
            let count_in = item_count(units, scoreable.iter());
            (count_in, item_count(units, keyed.iter().map(|(_, u)| u)))
        });
        keyed
    }

    /// Stages 4 and 5: sort the units (score descending, ties by input
    /// order), slice them, and build the merged list: pinned units first
    /// (score 1.0), then the sliced units in sort order (D-4).
    fn slice(&mut self, keyed: Vec<(f64, usize)>, pinned: &[usize]) -> Result<Merged, CupelError> {
        // (score key, position in `keyed`), sorted stably by the key: score
        // descending, then position, which is unit order, i.e. input order
        // (D-3). Integer keys sort several times faster than a float
        // comparator.
        let mut keys: Vec<(u64, usize)> = keyed
            .iter()
            .enumerate()
            .map(|(k, &(s, _))| (score_sort_key(s), k))
            .collect();
        sort_by_key_stable(&mut keys);
        // The (score, unit) pairs in sorted order; the scores are carried,
        // not recomputed. (Collected into the keys' buffer: same layout.)
        let keyed: Vec<(f64, usize)> = keys.into_iter().map(|(_, k)| keyed[k]).collect();
        let timer = self.start();
        let units = self.units;
        let sorted: Vec<ScoredItem<'_>> = keyed
            .iter()
            .map(|&(s, u)| ScoredItem::new(units.item(u), s))
            .collect();
        let effective = self.budget.effective(self.pinned_tokens);
        // Each sorted unit's whole tokens, in sort order: handed to the
        // slicer, and summed for the selected ones below.
        let tokens: Vec<i64> = keyed.iter().map(|&(_, u)| self.tokens_of[u]).collect();
        let (outcome, picks) = if self.varied {
            let v = self.policy.slicer.slice_variants(&sorted, effective)?;
            (v.outcome, v.picks)
        } else {
            let outcome = self
                .policy
                .slicer
                .slice_counted(&sorted, &tokens, effective)?;
            (outcome, Vec::new())
        };
        drop(sorted);
        let selected = checked_selection(&outcome, keyed.len())?;
        if !picks.is_empty() {
            self.take_picks(&picks, &keyed, &selected)?;
        }
        let mut merged: Merged = Vec::with_capacity(pinned.len() + outcome.selected.len());
        merged.extend(pinned.iter().map(|&u| (u, 1.0)));
        let mut sliced_tokens: i64 = 0;
        for ((&(score, u), &whole), _) in keyed
            .iter()
            .zip(&tokens)
            .zip(&selected)
            .filter(|(_, sel)| **sel)
        {
            // A unit taken whole (every unit, unless the slicer took a
            // variant) counts the tokens already in hand, read in order.
            let taken = if self.forms.is_empty() {
                whole
            } else {
                self.unit_tokens(u)
            };
            sliced_tokens = sliced_tokens.saturating_add(taken);
            merged.push((u, score));
        }
        drop(tokens);
        if self.traced {
            if !outcome.shortfalls.is_empty() {
                self.collector.on_shortfalls(&outcome.shortfalls);
            }
            let whole_room = effective.target_tokens.saturating_sub(sliced_tokens);
            self.report_slice_exclusions(&keyed, &selected, &outcome, whole_room);
        }
        self.sliced_tokens = sliced_tokens;
        let n_pinned = pinned.len();
        self.finish(timer, PipelineStage::Slice, || {
            let sliced = merged[n_pinned..].iter().map(|(u, _)| u);
            (
                item_count(units, keyed.iter().map(|(_, u)| u)),
                item_count(units, sliced),
            )
        });
        Ok(merged)
    }

    /// Reports every sorted unit the slicer left out (D-8..D-10, AG rules):
    /// a count cap's reason, else a group's `GroupExcluded`, else pinned
    /// blame, else `BudgetExceeded` with the room the unit had.
    fn report_slice_exclusions(
        &mut self,
        keyed: &[(f64, usize)],
        selected: &[bool],
        outcome: &SliceOutcome,
        whole_room: i64,
    ) {
        let n = keyed.len();
        // Indices were validated by `checked_selection`.
        let mut capped: Vec<Option<&CapExclusion>> = vec![None; n];
        for cap in &outcome.cap_exclusions {
            if let Some(slot) = capped.get_mut(cap.index) {
                *slot = Some(cap);
            }
        }
        // The room each unit actually had: the first room the slicer lists
        // it in, else the whole effective target minus everything selected.
        let mut room_of: Vec<Option<i64>> =
            vec![None; if outcome.rooms.is_empty() { 0 } else { n }];
        for room in &outcome.rooms {
            for &m in &room.members {
                if let Some(slot) = room_of.get_mut(m) {
                    slot.get_or_insert(room.room_tokens);
                }
            }
        }
        let mut blame = PinnedBlame::new(self.budget, self.items, &self.pinned_items);
        let units = self.units;
        let mut last_block = usize::MAX;
        let mut ahead_list = Vec::new();
        for (s, &(_, u)) in keyed.iter().enumerate().filter(|&(s, _)| !selected[s]) {
            if s / TOUCH_AHEAD != last_block {
                // The block's items read ahead of their report rows.
                last_block = s / TOUCH_AHEAD;
                let ahead = n.min(s + TOUCH_AHEAD);
                let block = keyed[s..ahead].iter().map(|&(_, u)| u);
                let rows = Some((self.score_of.as_slice(), self.tokens_of.as_slice()));
                touch(self.items, units, block, true, rows, &mut ahead_list);
            }
            let tokens = self.tokens_of[u];
            let room = room_of.get(s).copied().flatten().unwrap_or(whole_room);
            let reason = if let Some(cap) = capped[s] {
                ExclusionReason::CountCapExceeded {
                    kind: cap.kind.to_string(),
                    cap: i64::try_from(cap.cap).unwrap_or(i64::MAX),
                    count: i64::try_from(cap.count).unwrap_or(i64::MAX),
                }
            } else if let Some(reason) = units.excluded_group(u, room) {
                reason
            } else if let Some(reason) = blame.at_slice(tokens) {
                reason
            } else {
                ExclusionReason::BudgetExceeded {
                    item_tokens: tokens,
                    available_tokens: room.max(0),
                }
            };
            self.exclude(PipelineStage::Slice, u, reason);
        }
        self.blame = Some(blame);
    }

    /// Stage 6: the overflow rule, then the placer over the merged units,
    /// each placed unit expanded into its members (AG-7). The first
    /// `n_pinned` merged units are the pinned ones (and stay first: Truncate
    /// keeps every pinned unit and the order).
    fn place(
        &mut self,
        mut merged: Merged,
        n_pinned: usize,
    ) -> Result<Vec<ContextItem>, CupelError> {
        let timer = self.start();
        let units = self.units;
        let merged_in = item_count(units, merged.iter().map(|(u, _)| u));
        // `merged` is the pinned units (whole: no unit is both pinned and
        // sliced, and only sliced units take variants) then the sliced ones,
        // as Slice built it. All counts are non-negative, so the saturating
        // sum does not depend on the order of the additions.
        let merged_tokens = self.pinned_tokens.saturating_add(self.sliced_tokens);
        debug_assert_eq!(
            merged_tokens,
            merged
                .iter()
                .fold(0i64, |acc, &(u, _)| acc.saturating_add(self.unit_tokens(u)))
        );
        // The real room: the target, capped at max - reserve (S-15a).
        let target = self.budget.overflow_limit();
        if merged_tokens > target {
            match self.policy.overflow_strategy {
                OverflowStrategy::Truncate => {
                    merged = self.truncate(merged, n_pinned, target);
                }
                OverflowStrategy::Proceed => {
                    let items = merged
                        .iter()
                        .flat_map(|&(u, _)| units.members(u).map(move |i| (u, i)))
                        .map(|(u, i)| self.window_item(u, i).0.into_owned())
                        .collect();
                    let event =
                        OverflowEvent::new(merged_tokens - target, items, self.budget.clone());
                    self.collector.on_overflow(&event);
                    if let Some(obs) = self.observer {
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
        let scored: Vec<ScoredItem<'_>> = merged
            .iter()
            .map(|&(u, s)| ScoredItem::new(units.item(u), s))
            .collect();
        let order = self.policy.placer.place(&scored);
        check_permutation(&order, merged.len())?;
        let mut window = Vec::with_capacity(if self.keep_window { merged_in } else { 0 });
        let mut count_out = 0;
        let mut ahead_list = Vec::new();
        for (c, &m) in order.iter().enumerate() {
            if c % TOUCH_AHEAD == 0 {
                let ahead = order.len().min(c + TOUCH_AHEAD);
                let placed = order[c..ahead].iter().filter_map(|&m| merged.get(m));
                let block = placed.map(|&(u, _)| u);
                // An inclusion row reads the member's score (its tokens
                // come from the item): no unit tokens to read ahead.
                let rows = self.traced.then_some((self.score_of.as_slice(), &[][..]));
                touch(self.items, units, block, false, rows, &mut ahead_list);
            }
            let u = merged[m].0;
            for i in units.members(u) {
                let (item, variant) = self.window_item(u, i);
                if self.traced {
                    let reason = inclusion_reason(m < n_pinned, item.tokens());
                    let mut record = InclusionRecord::new(i, &item, self.score_of[i], reason);
                    if let Some(v) = variant {
                        record = record.with_variant(v);
                    }
                    self.collector.on_item_included(record);
                }
                if self.keep_window {
                    window.push(item.into_owned());
                }
                count_out += 1;
            }
        }
        self.finish(timer, PipelineStage::Place, || (merged_in, count_out));
        Ok(window)
    }

    /// Member `i` of unit `u` as the window holds it: the input item
    /// (borrowed: copied only into a window that is returned), or the
    /// chosen variant's form with its report row.
    fn window_item(&self, u: usize, i: usize) -> (Cow<'r, ContextItem>, Option<VariantChoice>) {
        let item = &self.items[i];
        match self.member_form(u, i) {
            Some((form, reason)) => match item.as_variant(form) {
                Some(v) => {
                    let choice = VariantChoice {
                        variant: form,
                        reason,
                        tokens_saved: item.tokens().saturating_sub(v.tokens()),
                    };
                    (Cow::Owned(v), Some(choice))
                }
                None => (Cow::Borrowed(item), None),
            },
            None => (Cow::Borrowed(item), None),
        }
    }

    /// The Truncate strategy (S-10, AG-8): pinned units (the first
    /// `n_pinned`) are kept, any other unit is kept while it fits, else
    /// dropped whole.
    fn truncate(&mut self, merged: Merged, n_pinned: usize, target: i64) -> Merged {
        let units = self.units;
        let mut kept = Vec::with_capacity(merged.len());
        // (unit, non-pinned tokens kept before it, room it had)
        let mut removed: Vec<(usize, i64, i64)> = Vec::new();
        let mut current: i64 = 0;
        let mut kept_unpinned: i64 = 0;
        for (k, (u, score)) in merged.into_iter().enumerate() {
            let tokens = self.unit_tokens(u);
            if k < n_pinned {
                current = current.saturating_add(tokens);
                kept.push((u, score));
            } else if current.saturating_add(tokens) <= target {
                current += tokens;
                kept_unpinned += tokens;
                kept.push((u, score));
            } else {
                removed.push((u, kept_unpinned, target.saturating_sub(current)));
            }
        }
        if let Some(mut blame) = self.blame.take() {
            for (u, kept_before, room) in removed {
                let tokens = self.unit_tokens(u);
                let reason = match units.excluded_group(u, room) {
                    Some(reason) => reason,
                    None => blame.at_truncate(tokens, kept_before, target).unwrap_or(
                        ExclusionReason::BudgetExceeded {
                            item_tokens: tokens,
                            available_tokens: room.max(0),
                        },
                    ),
                };
                self.exclude(PipelineStage::Place, u, reason);
            }
        }
        kept
    }
}

/// How many units [`touch`] reads ahead of the copies of their items.
const TOUCH_AHEAD: usize = 128;

/// Reads the first line (the tokens) of the member items of each unit of
/// `ids` and, with `group_items`, of a group's own item (what a report row
/// of a left-out group reads), in a loop that does nothing else, so the CPU
/// has the reads of many of them in flight at once. With `rows` (the run's
/// scores by item and tokens by unit, the latter empty when the rows do not
/// read it), it also reads what a report row takes from those: on a large
/// input they are arrays of megabytes read in score or placement order, one
/// miss per row otherwise.
///
/// Placement order and score order are random walks over the input, and
/// taking an item — for the window, or for a report row — writes its
/// reference count with a locked instruction, which lets no later read
/// start before it completes: taken in such an order straight away, every
/// item would be a cache miss waited out in turn. Read first, the lines are
/// in cache when the copies come. In a run with groups the items to read
/// are listed first (in `list`, reused from block to block), from the
/// table alone: a loop that also walked the table would have fewer reads in
/// flight. (`black_box` keeps the reads, whose values are not needed, from
/// being optimised away.)
fn touch<'a, T: Units>(
    items: &'a [ContextItem],
    units: &'a T,
    ids: impl Iterator<Item = usize> + Clone,
    group_items: bool,
    rows: Option<(&[f64], &[i64])>,
    list: &mut Vec<&'a ContextItem>,
) {
    if let Some((score_of, tokens_of)) = rows {
        let read = ids.clone().fold(0u64, |acc, u| {
            let tokens = tokens_of.get(u).copied().unwrap_or(0);
            let scores = units.members(u).fold(0u64, |acc, i| {
                acc ^ score_of.get(i).map_or(0, |s| s.to_bits())
            });
            acc.wrapping_add(tokens.unsigned_abs()) ^ scores
        });
        std::hint::black_box(read);
    }
    let sum = if T::GROUPED {
        list.clear();
        for u in ids {
            if !units.multi(u) {
                list.push(units.item(u));
                continue;
            }
            if group_items {
                list.push(units.item(u));
            }
            list.extend(units.members(u).filter_map(|i| items.get(i)));
        }
        list.iter()
            .fold(0i64, |acc, item| acc.wrapping_add(item.tokens()))
    } else {
        ids.fold(0i64, |acc, u| acc.wrapping_add(units.item(u).tokens()))
    };
    std::hint::black_box(sum);
}

/// Why an item in the window is there: pinned (an item, or a member of a
/// pinned group), zero tokens, or its score.
fn inclusion_reason(pinned: bool, tokens: i64) -> InclusionReason {
    if pinned {
        InclusionReason::Pinned
    } else if tokens == 0 {
        InclusionReason::ZeroToken
    } else {
        InclusionReason::Scored
    }
}
