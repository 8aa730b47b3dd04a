//! [`QuotaSlice`]: percentage budgets per kind around an inner slicer.

use std::fmt;
use std::sync::Arc;

use cupel_core::{
    ContextKind, CupelError, ScoredItem, SliceBudget, SliceOutcome, SliceRoom, Slicer, SlicerKind,
    TokenSign, VariantOutcome,
};

use crate::inner::{selected_tokens, slice_subset_with};
use crate::kinds::KindLookup;
use crate::variants::chosen_tokens;

/// Slack allowed when checking that the require percentages sum to at most
/// 100: absorbs binary rounding (33.3 + 33.3 + 33.4 may not be exactly 100.0
/// in `f64`), nothing more.
const SUM_TOLERANCE: f64 = 1e-9;

/// One kind's quota in a [`QuotaSet`]: a guaranteed share (`require`) and a
/// ceiling (`cap`), both percentages of the slicer's target.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaEntry {
    kind: ContextKind,
    require: f64,
    cap: f64,
}

impl QuotaEntry {
    /// The kind this quota applies to (compared case-insensitively).
    pub fn kind(&self) -> &ContextKind {
        &self.kind
    }

    /// Minimum share of the target, percent in `[0, 100]` (0 when only a cap was set).
    pub fn require_percent(&self) -> f64 {
        self.require
    }

    /// Maximum share of the target, percent in `[0, 100]` (100 when only a require was set).
    pub fn cap_percent(&self) -> f64 {
        self.cap
    }
}

/// Validated per-kind percentage quotas for a [`QuotaSlice`].
///
/// Built with [`QuotaSet::builder`]. Every configured kind has a require and a
/// cap percentage; kinds that are not configured get require 0% and cap 100%.
///
/// Validation (at [`QuotaSetBuilder::build`]):
/// * every percentage is finite and within `[0, 100]`;
/// * `require <= cap` for each kind;
/// * the require percentages sum to at most 100 (with a `1e-9` allowance for
///   floating-point rounding of the sum);
/// * a kind's require, or its cap, is given at most once (kinds compare
///   case-insensitively). Setting a kind's require and its cap in two calls is
///   how the two constraints combine; setting the same one twice is rejected
///   rather than silently overwritten.
///
/// Entries keep the order in which their kinds were first configured.
///
/// ```
/// use cupel_core::ContextKind;
/// use cupel_slicers::QuotaSet;
///
/// let quotas = QuotaSet::builder()
///     .require(ContextKind::DOCUMENT, 30.0)
///     .cap(ContextKind::DOCUMENT, 60.0)
///     .quota(ContextKind::MESSAGE, 10.0, 50.0)
///     .build()?;
/// assert_eq!(quotas.require_percent(&ContextKind::new("document")?), 30.0);
/// assert_eq!(quotas.cap_percent(&ContextKind::MEMORY), 100.0); // unconfigured
///
/// let too_much = QuotaSet::builder().require(ContextKind::DOCUMENT, 60.0)
///     .require(ContextKind::MESSAGE, 50.0).build();
/// assert!(too_much.is_err()); // 60 + 50 > 100
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaSet {
    entries: Vec<QuotaEntry>,
}

impl QuotaSet {
    /// Starts an empty [`QuotaSetBuilder`].
    pub fn builder() -> QuotaSetBuilder {
        QuotaSetBuilder::default()
    }

    /// A set with no quotas: every kind gets require 0% and cap 100%.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The configured quotas, in first-configured order.
    pub fn entries(&self) -> &[QuotaEntry] {
        &self.entries
    }

    /// Whether no kind is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn find(&self, kind: &ContextKind) -> Option<&QuotaEntry> {
        self.entries.iter().find(|e| e.kind == *kind)
    }

    /// The require percentage of `kind` (0 when not configured).
    pub fn require_percent(&self, kind: &ContextKind) -> f64 {
        self.find(kind).map_or(0.0, |e| e.require)
    }

    /// The cap percentage of `kind` (100 when not configured).
    pub fn cap_percent(&self, kind: &ContextKind) -> f64 {
        self.find(kind).map_or(100.0, |e| e.cap)
    }
}

/// Builder of a [`QuotaSet`]; [`build`](Self::build) validates everything.
#[derive(Debug, Clone, Default)]
pub struct QuotaSetBuilder {
    pending: Vec<Pending>,
    duplicate: Option<(ContextKind, &'static str)>,
}

#[derive(Debug, Clone)]
struct Pending {
    kind: ContextKind,
    require: Option<f64>,
    cap: Option<f64>,
}

impl QuotaSetBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, kind: ContextKind) -> &mut Pending {
        let pos = match self.pending.iter().position(|p| p.kind == kind) {
            Some(pos) => pos,
            None => {
                self.pending.push(Pending {
                    kind,
                    require: None,
                    cap: None,
                });
                self.pending.len() - 1
            }
        };
        &mut self.pending[pos]
    }

    /// Guarantees `kind` at least `percent`% of the target.
    pub fn require(mut self, kind: ContextKind, percent: f64) -> Self {
        let slot = self.slot(kind);
        if slot.require.is_some() {
            let kind = slot.kind.clone();
            self.duplicate.get_or_insert((kind, "require"));
        } else {
            slot.require = Some(percent);
        }
        self
    }

    /// Limits `kind` to at most `percent`% of the target.
    pub fn cap(mut self, kind: ContextKind, percent: f64) -> Self {
        let slot = self.slot(kind);
        if slot.cap.is_some() {
            let kind = slot.kind.clone();
            self.duplicate.get_or_insert((kind, "cap"));
        } else {
            slot.cap = Some(percent);
        }
        self
    }

    /// Sets both the require and the cap of `kind`.
    pub fn quota(self, kind: ContextKind, require_percent: f64, cap_percent: f64) -> Self {
        self.require(kind.clone(), require_percent)
            .cap(kind, cap_percent)
    }

    /// Validates and builds the set.
    ///
    /// # Errors
    /// [`CupelError::SlicerConfig`] for a percentage that is not finite or is
    /// outside `[0, 100]`, a require above its cap, requires summing over 100%,
    /// or a require/cap given twice for one kind.
    pub fn build(self) -> Result<QuotaSet, CupelError> {
        if let Some((kind, what)) = self.duplicate {
            return Err(CupelError::SlicerConfig(format!(
                "QuotaSet: the {what} percentage of kind '{kind}' is set more than once"
            )));
        }
        let mut entries = Vec::with_capacity(self.pending.len());
        let mut sum = 0.0;
        for p in self.pending {
            let require = p.require.unwrap_or(0.0);
            let cap = p.cap.unwrap_or(100.0);
            for (what, v) in [("require", require), ("cap", cap)] {
                if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
                    return Err(CupelError::SlicerConfig(format!(
                        "QuotaSet: {what} for kind '{}' must be a percentage within [0, 100] (got {v})",
                        p.kind
                    )));
                }
            }
            if require > cap {
                return Err(CupelError::SlicerConfig(format!(
                    "QuotaSet: require ({require}%) for kind '{}' exceeds its cap ({cap}%)",
                    p.kind
                )));
            }
            sum += require;
            entries.push(QuotaEntry {
                kind: p.kind,
                require,
                cap,
            });
        }
        if sum > 100.0 + SUM_TOLERANCE {
            return Err(CupelError::SlicerConfig(format!(
                "QuotaSet: require percentages sum to {sum}%, more than 100%"
            )));
        }
        Ok(QuotaSet { entries })
    }
}

/// `floor(percent / 100.0 * target)`, evaluated in `f64` exactly in that
/// order, clamped to `[0, target]` (the clamp only matters for targets beyond
/// 2^53, where `target as f64` rounds).
fn percent_of(percent: f64, target: i64) -> i64 {
    let v = (percent / 100.0 * target as f64).floor();
    (v as i64).clamp(0, target.max(0))
}

/// One partition of the input: a kind and the indices of its items.
struct Partition {
    kind: ContextKind,
    members: Vec<usize>,
    mass: i128,
}

/// One partition's share of the target: its token budget and its cap in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KindBudget {
    budget: i64,
    cap: i64,
}

/// The specification's DISTRIBUTE-BUDGET: each partition's token budget (and
/// cap in tokens), in partition order.
///
/// All sums are `i128`; [`partition`] guarantees that the masses are
/// non-negative and add up to at most `i64::MAX`.
fn distribute_budget(quotas: &QuotaSet, parts: &[Partition], target: i64) -> Vec<KindBudget> {
    // Step 1-2: require tokens of every configured kind (present or not).
    let total_required: i128 = quotas
        .entries
        .iter()
        .map(|e| i128::from(percent_of(e.require, target)))
        .sum();
    let unassigned = (i128::from(target) - total_required).max(0);

    let limits: Vec<(i64, i64)> = parts
        .iter()
        .map(|p| match quotas.find(&p.kind) {
            Some(e) => (percent_of(e.require, target), percent_of(e.cap, target)),
            None => (0, target),
        })
        .collect();

    // Step 3: mass of the kinds that can grow past their require.
    let total_mass: i128 = limits
        .iter()
        .zip(parts)
        .filter(|((req, cap), _)| cap > req)
        .map(|(_, p)| p.mass)
        .sum();

    // Step 4: require + proportional share, capped.
    limits
        .iter()
        .zip(parts)
        .map(|(&(req, cap), p)| {
            let proportional = if total_mass > 0 && cap > req {
                // unassigned <= 2^63 and mass <= 2^63: the product fits i128.
                unassigned * p.mass / total_mass
            } else {
                0
            };
            // min(.., cap) keeps it within i64.
            let budget = (i128::from(req) + proportional).min(i128::from(cap));
            KindBudget {
                budget: i64::try_from(budget).unwrap_or(cap),
                cap,
            }
        })
        .collect()
}

/// Splits the target across kinds by percentage quotas and runs an inner
/// slicer once per kind.
///
/// # Algorithm
/// 1. Empty input or `target_tokens <= 0`: select nothing.
/// 2. Partition the items by kind (case-insensitive). Partitions are visited
///    in **order of first appearance in the input**; within a partition items
///    keep input order.
/// 3. Each partition's *candidate token mass* is the sum of its items' tokens.
/// 4. Budget distribution, with `T = target_tokens` and every percentage
///    conversion `floor(p / 100.0 * T)` computed in `f64`:
///    * `require_tokens` and `cap_tokens` of every configured kind (present in
///      the input or not); unconfigured kinds use `0` and `T`;
///    * `unassigned = max(0, T - sum(require_tokens))`;
///    * `mass_total` = mass of the partitions whose `cap_tokens >
///      require_tokens`;
///    * `budget = min(require + floor(unassigned * mass / mass_total),
///      cap_tokens)`, the proportional term only for partitions with
///      `cap > require` and when `mass_total > 0`.
/// 5. For each partition with `budget > 0`, the inner slicer gets that
///    partition and `SliceBudget { max_tokens: cap_tokens, target_tokens:
///    budget }`. Its selections, mapped back to input indices, are
///    concatenated in partition order.
///
/// Because of the floors, the kinds' budgets may add up to less than `T`.
///
/// Shortfalls and cap exclusions that the inner slicer reports are passed
/// through (indices mapped back). [`is_monotonic`](Slicer::is_monotonic) is
/// `false`: the per-kind budgets move with the target.
///
/// # Choices where the specification is silent
/// * Partition order is the order of first appearance (the specification
///   only calls it "partition iteration order"); it affects the output order,
///   never the selected set.
/// * Items with negative token counts (which the pipeline never passes) are
///   left out of every partition and never selected.
/// * If the candidates' token mass exceeds `i64::MAX` the slice fails with
///   [`CupelError::TokenOverflow`] (the pipeline rejects such input earlier).
/// * `percent / 100.0 * T` is evaluated literally, so e.g. 29% of 100 tokens
///   is `floor(28.999999999999996) = 28`.
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{ContextItem, ContextKind, ScoredItem, SliceBudget, Slicer};
/// use cupel_slicers::{GreedySlice, QuotaSet, QuotaSlice};
///
/// let doc = ContextItem::builder("doc", 60).kind(ContextKind::DOCUMENT).build()?;
/// let msg = ContextItem::builder("msg", 40).kind(ContextKind::MESSAGE).build()?;
/// let items = [ScoredItem::new(&doc, 0.9), ScoredItem::new(&msg, 0.1)];
/// // Messages are guaranteed 40% of 100 tokens; documents get the rest.
/// let quotas = QuotaSet::builder().require(ContextKind::MESSAGE, 40.0).build()?;
/// let slicer = QuotaSlice::new(quotas, Arc::new(GreedySlice));
/// // require: msg 40; unassigned 60; masses doc 60, msg 40 (total 100):
/// // doc = 0 + floor(60*60/100) = 36, msg = 40 + floor(60*40/100) = 64.
/// // doc (60 tokens) does not fit 36; msg (40) fits 64.
/// let out = slicer.slice(&items, SliceBudget::new(100, 100))?;
/// assert_eq!(out.selected, vec![1]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct QuotaSlice {
    quotas: QuotaSet,
    inner: Arc<dyn Slicer>,
}

impl fmt::Debug for QuotaSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuotaSlice")
            .field("quotas", &self.quotas)
            .field("inner", &self.inner.slicer_kind())
            .finish()
    }
}

impl QuotaSlice {
    /// Wraps `inner` with the per-kind `quotas`.
    pub fn new(quotas: QuotaSet, inner: Arc<dyn Slicer>) -> Self {
        Self { quotas, inner }
    }

    /// The quotas.
    pub fn quotas(&self) -> &QuotaSet {
        &self.quotas
    }

    /// The inner slicer.
    pub fn inner(&self) -> &Arc<dyn Slicer> {
        &self.inner
    }

    /// The token budget each kind present in `items` would get at
    /// `target_tokens`, in partition order (first appearance) — the
    /// specification's DISTRIBUTE-BUDGET, exposed for diagnostics. A target
    /// `<= 0` gives every kind 0.
    ///
    /// # Errors
    /// [`CupelError::TokenOverflow`] when the items' tokens add up past `i64::MAX`.
    pub fn kind_budgets(
        &self,
        items: &[ScoredItem<'_>],
        target_tokens: i64,
    ) -> Result<Vec<(ContextKind, i64)>, CupelError> {
        let parts = partition(items)?;
        let budgets = distribute_budget(&self.quotas, &parts, target_tokens.max(0));
        Ok(parts
            .into_iter()
            .zip(budgets)
            .map(|(p, b)| (p.kind, b.budget))
            .collect())
    }
}

/// Partitions by kind in first-appearance order, skipping negative-token items.
fn partition(items: &[ScoredItem<'_>]) -> Result<Vec<Partition>, CupelError> {
    let mut parts: Vec<Partition> = Vec::new();
    let mut index = KindLookup::default();
    let mut total: i128 = 0;
    for (i, s) in items.iter().enumerate() {
        let tokens = s.item.tokens();
        if tokens < 0 {
            continue;
        }
        let kind = s.item.kind();
        let k = match index.get(kind) {
            Some(k) => k,
            None => {
                parts.push(Partition {
                    kind: kind.clone(),
                    members: Vec::new(),
                    mass: 0,
                });
                index.insert(kind)
            }
        };
        parts[k].members.push(i);
        parts[k].mass += i128::from(tokens);
        total += i128::from(tokens);
    }
    if total > i128::from(i64::MAX) {
        return Err(CupelError::TokenOverflow {
            sign: TokenSign::Positive,
            total,
        });
    }
    Ok(parts)
}

impl Slicer for QuotaSlice {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        self.slice_with(items, budget, false).map(|o| o.outcome)
    }

    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        self.slice_with(items, budget, true)
    }

    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::Quota
    }

    fn is_monotonic(&self) -> bool {
        false
    }
}

impl QuotaSlice {
    /// The quota pass; with `variants`, each kind's inner slicer may take
    /// variants of that kind's items, within that kind's share.
    fn slice_with(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
        variants: bool,
    ) -> Result<VariantOutcome, CupelError> {
        if crate::inner::nothing_to_slice("QuotaSlice", items, budget)? {
            return Ok(VariantOutcome::default());
        }
        let target = budget.target_tokens;
        let parts = partition(items)?;
        let budgets = distribute_budget(&self.quotas, &parts, target);

        let mut out = SliceOutcome::default();
        let mut picks = Vec::new();
        // Each kind's own room (its share minus what the inner slicer took of
        // it) is what its left-out items actually had; the inner slicer's
        // finer rooms, if any, go first (the first listed room counts).
        let mut kind_rooms = Vec::with_capacity(parts.len());
        for (part, KindBudget { budget, cap }) in parts.into_iter().zip(budgets) {
            if budget <= 0 {
                kind_rooms.push(SliceRoom::new(0, part.members));
                continue;
            }
            let sub = SliceBudget::new(cap, budget);
            let got = slice_subset_with(
                "QuotaSlice",
                &*self.inner,
                items,
                &part.members,
                sub,
                variants,
            )?;
            let used = if got.picks.is_empty() {
                selected_tokens(items, &got.outcome.selected)
            } else {
                chosen_tokens(items, &got)
            };
            picks.extend(got.picks);
            let got = got.outcome;
            kind_rooms.push(SliceRoom::new(budget.saturating_sub(used), part.members));
            out.selected.extend(got.selected);
            out.shortfalls.extend(got.shortfalls);
            out.cap_exclusions.extend(got.cap_exclusions);
            out.rooms.extend(got.rooms);
        }
        out.rooms.extend(kind_rooms);
        Ok(VariantOutcome {
            outcome: out,
            picks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{budget, item, item_kind, scored};
    use crate::{GreedySlice, KnapsackSlice};
    use std::sync::Mutex;

    fn kind(s: &str) -> ContextKind {
        ContextKind::new(s).unwrap()
    }

    fn greedy(quotas: QuotaSet) -> QuotaSlice {
        QuotaSlice::new(quotas, Arc::new(GreedySlice))
    }

    /// DISTRIBUTE-BUDGET's budgets for partitions given as `(kind, mass)`.
    fn budgets(q: &QuotaSet, parts: &[(&str, i128)], target: i64) -> Vec<i64> {
        let parts: Vec<Partition> = parts
            .iter()
            .map(|&(k, mass)| Partition {
                kind: kind(k),
                members: Vec::new(),
                mass,
            })
            .collect();
        distribute_budget(q, &parts, target)
            .into_iter()
            .map(|b| b.budget)
            .collect()
    }

    #[test]
    fn each_kind_reports_its_own_room() {
        // The issue's repro: target 800, Message require 10%.
        // req Message = floor(0.1 * 800) = 80; unassigned 720; masses 300, 300, 100.
        // Message 80 + floor(720 * 300 / 700) = 80 + 308 = 388;
        // Document floor(720 * 300 / 700) = 308; Memory floor(720 * 100 / 700) = 102.
        // Greedy: a (300) and a2 (0) fit 388 -> room 88; b (300) fits 308 -> 8;
        // d (100) fits 102 -> 2.
        let items = [
            item_kind("a", 300, "Message"),
            item_kind("b", 300, "Document"),
            item_kind("a2", 0, "Message"),
            item_kind("d", 100, "Memory"),
        ];
        let s = scored(&items, &[0.9, 0.8, 0.7, 0.6]);
        let q = QuotaSet::builder()
            .require(kind("Message"), 10.0)
            .build()
            .unwrap();
        let out = greedy(q).slice(&s, budget(800)).unwrap();
        // a2 has 0 tokens and is taken; the rooms still cover every member.
        assert_eq!(out.selected, vec![2, 0, 1, 3]);
        assert_eq!(
            out.rooms,
            vec![
                SliceRoom::new(88, vec![0, 2]),
                SliceRoom::new(8, vec![1]),
                SliceRoom::new(2, vec![3]),
            ]
        );
        // A kind with no share: target 800, Message require 100% -> 800 for
        // Message, unassigned 0, Document 0 -> room 0 and nothing run for it.
        let q = QuotaSet::builder()
            .require(kind("Message"), 100.0)
            .build()
            .unwrap();
        let out = greedy(q).slice(&s, budget(800)).unwrap();
        assert_eq!(out.rooms[1], SliceRoom::new(0, vec![1]));
        assert_eq!(out.rooms[0], SliceRoom::new(800 - 300, vec![0, 2]));
    }

    /// Records every sub-budget the inner slicer is given, selects nothing.
    #[derive(Default)]
    struct Spy(Mutex<Vec<(Vec<String>, SliceBudget)>>);
    impl Slicer for Spy {
        fn slice(
            &self,
            items: &[ScoredItem<'_>],
            b: SliceBudget,
        ) -> Result<SliceOutcome, CupelError> {
            let names = items.iter().map(|s| s.item.content().to_owned()).collect();
            self.0.lock().unwrap().push((names, b));
            Ok(SliceOutcome::default())
        }
    }

    // ----- validation -----

    #[test]
    fn require_above_cap_is_rejected() {
        let err = QuotaSet::builder()
            .quota(kind("Doc"), 50.0, 40.0)
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            CupelError::SlicerConfig(
                "QuotaSet: require (50%) for kind 'Doc' exceeds its cap (40%)".into()
            )
        );
    }

    #[test]
    fn requires_over_100_are_rejected_and_exactly_100_accepted() {
        let err = QuotaSet::builder()
            .require(kind("a"), 60.0)
            .require(kind("b"), 40.5)
            .build()
            .unwrap_err();
        assert!(matches!(err, CupelError::SlicerConfig(m) if m.contains("100.5%")));
        assert!(
            QuotaSet::builder()
                .require(kind("a"), 60.0)
                .require(kind("b"), 40.0)
                .build()
                .is_ok()
        );
        // 33.3 + 33.3 + 33.4 is 100 up to binary rounding: accepted.
        assert!(
            QuotaSet::builder()
                .require(kind("a"), 33.3)
                .require(kind("b"), 33.3)
                .require(kind("c"), 33.4)
                .build()
                .is_ok()
        );
    }

    #[test]
    fn out_of_range_and_non_finite_percentages_are_rejected() {
        for bad in [-0.1, 100.1, f64::NAN, f64::INFINITY] {
            assert!(
                QuotaSet::builder().require(kind("a"), bad).build().is_err(),
                "require {bad}"
            );
            assert!(
                QuotaSet::builder().cap(kind("a"), bad).build().is_err(),
                "cap {bad}"
            );
        }
        assert!(
            QuotaSet::builder()
                .quota(kind("a"), 0.0, 0.0)
                .build()
                .is_ok()
        );
        assert!(
            QuotaSet::builder()
                .quota(kind("a"), 100.0, 100.0)
                .build()
                .is_ok()
        );
    }

    #[test]
    fn require_and_cap_merge_but_repeats_are_rejected_case_insensitively() {
        let q = QuotaSet::builder()
            .require(kind("Tool"), 10.0)
            .cap(kind("TOOL"), 20.0)
            .build()
            .unwrap();
        assert_eq!(q.entries().len(), 1);
        assert_eq!(
            (
                q.require_percent(&kind("tool")),
                q.cap_percent(&kind("tool"))
            ),
            (10.0, 20.0)
        );
        assert_eq!(q.entries()[0].kind().as_str(), "Tool"); // first spelling kept
        let err = QuotaSet::builder()
            .require(kind("Tool"), 10.0)
            .require(kind("tool"), 20.0)
            .build();
        assert_eq!(
            err.unwrap_err(),
            CupelError::SlicerConfig(
                "QuotaSet: the require percentage of kind 'Tool' is set more than once".into()
            )
        );
        assert!(
            QuotaSet::builder()
                .cap(kind("a"), 10.0)
                .quota(kind("A"), 0.0, 5.0)
                .build()
                .is_err()
        );
    }

    #[test]
    fn unconfigured_kinds_default_to_0_and_100() {
        let q = QuotaSet::empty();
        assert!(q.is_empty());
        assert_eq!(
            (q.require_percent(&kind("x")), q.cap_percent(&kind("x"))),
            (0.0, 100.0)
        );
        let q = QuotaSet::builder().cap(kind("a"), 30.0).build().unwrap();
        assert_eq!(q.require_percent(&kind("a")), 0.0);
        let q = QuotaSet::builder()
            .require(kind("a"), 30.0)
            .build()
            .unwrap();
        assert_eq!(q.cap_percent(&kind("a")), 100.0);
    }

    // ----- budget distribution -----

    #[test]
    fn spec_example_two_kinds_at_33_percent() {
        // T = 1000: require A = floor(0.33 * 1000) = 330, B = 330, total 660,
        // unassigned 340. Masses A 300, B 100 (cap 100% > require for both):
        // A = 330 + floor(340 * 300 / 400) = 330 + 255 = 585,
        // B = 330 + floor(340 * 100 / 400) = 330 + 85 = 415. Sum 1000.
        let q = QuotaSet::builder()
            .require(kind("A"), 33.0)
            .require(kind("B"), 33.0)
            .build()
            .unwrap();
        let b = budgets(&q, &[("A", 300), ("B", 100)], 1000);
        assert_eq!(b, vec![585, 415]);
        // Masses 1 and 2: A = 330 + floor(340/3) = 443, B = 330 + floor(680/3) = 556;
        // sum 999 < 1000 — the floors leave a token unassigned.
        let b = budgets(&q, &[("A", 1), ("B", 2)], 1000);
        assert_eq!(b, vec![443, 556]);
    }

    #[test]
    fn percentages_are_evaluated_literally_in_f64() {
        // 29 / 100.0 = 0.29 (binary ~0.28999999999999998), * 100 = 28.999999999999996 -> 28.
        assert_eq!(percent_of(29.0, 100), 28);
        assert_eq!(percent_of(33.0, 1000), 330);
        assert_eq!(percent_of(100.0, 12345), 12345);
        assert_eq!(percent_of(0.0, 12345), 0);
        assert_eq!(percent_of(100.0, i64::MAX), i64::MAX); // clamped, no overflow
    }

    #[test]
    fn require_100_takes_the_entire_budget() {
        // A require 100% -> 1000; unassigned 0. B: 0 + 0 = 0.
        let q = QuotaSet::builder()
            .require(kind("A"), 100.0)
            .build()
            .unwrap();
        assert_eq!(budgets(&q, &[("A", 50), ("B", 50)], 1000), vec![1000, 0]);
    }

    #[test]
    fn cap_zero_excludes_the_kind() {
        // A cap 0: cap (0) not > require (0) -> no share; min(0, 0) = 0.
        // B takes the whole unassigned 1000 (mass_total = B's mass only).
        let q = QuotaSet::builder().cap(kind("A"), 0.0).build().unwrap();
        assert_eq!(budgets(&q, &[("A", 50), ("B", 50)], 1000), vec![0, 1000]);
    }

    #[test]
    fn cap_limits_the_proportional_share() {
        // A cap 20% -> 200. Masses 900 / 100: A = min(0 + 900, 200) = 200, B = 100.
        let q = QuotaSet::builder().cap(kind("A"), 20.0).build().unwrap();
        assert_eq!(budgets(&q, &[("A", 900), ("B", 100)], 1000), vec![200, 100]);
    }

    #[test]
    fn require_equal_to_cap_gets_no_proportional_share() {
        // A 30/30: require = cap = 300, not in mass_total; unassigned 700 all to B.
        let q = QuotaSet::builder()
            .quota(kind("A"), 30.0, 30.0)
            .build()
            .unwrap();
        assert_eq!(budgets(&q, &[("A", 500), ("B", 500)], 1000), vec![300, 700]);
    }

    #[test]
    fn zero_mass_kind_gets_only_its_require() {
        // A require 10% -> 100, mass 0 -> no proportional part. B: 0 + 900*50/50 = 900.
        let q = QuotaSet::builder()
            .require(kind("A"), 10.0)
            .build()
            .unwrap();
        assert_eq!(budgets(&q, &[("A", 0), ("B", 50)], 1000), vec![100, 900]);
    }

    #[test]
    fn absent_kind_still_consumes_its_require() {
        // Z (absent) require 50% -> 500 counted in total_required; unassigned 500.
        // Only B present: 0 + floor(500 * 10 / 10) = 500.
        let q = QuotaSet::builder()
            .require(kind("Z"), 50.0)
            .build()
            .unwrap();
        assert_eq!(budgets(&q, &[("B", 10)], 1000), vec![500]);
    }

    #[test]
    fn no_quotas_split_proportionally_to_mass() {
        // unassigned 1000; masses 300 / 100 / 100: 600, 200, 200.
        let q = QuotaSet::empty();
        assert_eq!(
            budgets(&q, &[("a", 300), ("b", 100), ("c", 100)], 1000),
            vec![600, 200, 200]
        );
    }

    // ----- slicing -----

    #[test]
    fn edge_empty_input_and_non_positive_target() {
        let s = greedy(QuotaSet::empty());
        assert!(s.slice(&[], budget(100)).unwrap().selected.is_empty());
        let items = [item("a", 0)];
        assert!(
            s.slice(&scored(&items, &[1.0]), budget(0))
                .unwrap()
                .selected
                .is_empty()
        );
        assert!(
            s.slice(&scored(&items, &[1.0]), budget(-3))
                .unwrap()
                .selected
                .is_empty()
        );
    }

    #[test]
    fn inner_slicer_sees_each_partition_with_cap_and_budget() {
        // T = 1000. Doc require 20 cap 50 -> req 200, cap 500; Msg unconfigured.
        // Masses: doc 300 + 100 = 400, msg 200. unassigned 800, mass_total 600:
        // doc = min(200 + floor(800*400/600) = 200 + 533, 500) = 500,
        // msg = 0 + floor(800*200/600) = 266 (cap 1000).
        let q = QuotaSet::builder()
            .quota(kind("Doc"), 20.0, 50.0)
            .build()
            .unwrap();
        let spy = Arc::new(Spy::default());
        let s = QuotaSlice::new(q, spy.clone());
        let items = [
            item_kind("m1", 200, "Msg"),
            item_kind("d1", 300, "doc"),
            item_kind("d2", 100, "DOC"),
        ];
        s.slice(
            &scored(&items, &[0.9, 0.8, 0.7]),
            SliceBudget::new(5000, 1000),
        )
        .unwrap();
        let calls = spy.0.lock().unwrap().clone();
        assert_eq!(
            calls,
            vec![
                (vec!["m1".to_owned()], SliceBudget::new(1000, 266)),
                (
                    vec!["d1".to_owned(), "d2".to_owned()],
                    SliceBudget::new(500, 500)
                ),
            ]
        );
    }

    #[test]
    fn kinds_partition_case_insensitively_in_first_appearance_order() {
        let s = greedy(QuotaSet::empty());
        let items = [
            item_kind("b1", 10, "B"),
            item_kind("a1", 10, "a"),
            item_kind("b2", 10, "b"),
        ];
        // Masses B 20, a 10 of T = 300: B 200, a 100 -> everything fits.
        // Partition order B (indices 0, 2), then a (1).
        let out = s
            .slice(&scored(&items, &[0.5, 0.5, 0.5]), budget(300))
            .unwrap();
        assert_eq!(out.selected, vec![0, 2, 1]);
        let budgets = s.kind_budgets(&scored(&items, &[0.5; 3]), 300).unwrap();
        assert_eq!(budgets, vec![(kind("B"), 200), (kind("a"), 100)]);
        let budgets = s.kind_budgets(&scored(&items, &[0.5; 3]), -5).unwrap();
        assert_eq!(budgets, vec![(kind("B"), 0), (kind("a"), 0)]);
    }

    #[test]
    fn kind_with_zero_budget_is_skipped_even_for_zero_token_items() {
        // A cap 0% -> budget 0 -> its partition (even a zero-token item) is never sliced.
        let q = QuotaSet::builder().cap(kind("A"), 0.0).build().unwrap();
        let s = greedy(q);
        let items = [item_kind("a0", 0, "A"), item_kind("b", 10, "B")];
        assert_eq!(
            s.slice(&scored(&items, &[0.9, 0.1]), budget(100))
                .unwrap()
                .selected,
            vec![1]
        );
    }

    #[test]
    fn quota_forces_a_lower_scored_kind_in() {
        // T = 100; Msg require 30 -> 30. unassigned 70, masses doc 90, msg 30
        // (total 120): doc = floor(70*90/120) = 52, msg = 30 + floor(70*30/120) = 47.
        // Greedy per kind: doc items 50 (0.9) + 40 (0.8): densities .018, .02 ->
        // d2 (40 <= 52, 12 left), d1 50 > 12 skipped. msg 30 <= 47 taken.
        let q = QuotaSet::builder()
            .require(kind("Msg"), 30.0)
            .build()
            .unwrap();
        let items = [
            item_kind("d1", 50, "Doc"),
            item_kind("d2", 40, "Doc"),
            item_kind("m", 30, "Msg"),
        ];
        let out = greedy(q)
            .slice(&scored(&items, &[0.9, 0.8, 0.1]), budget(100))
            .unwrap();
        assert_eq!(out.selected, vec![1, 2]);
    }

    #[test]
    fn works_with_a_knapsack_inner_slicer() {
        // Single kind gets T = 100 (no quotas); knapsack bucket 1 picks b + c.
        let s = QuotaSlice::new(QuotaSet::empty(), Arc::new(KnapsackSlice::new(1).unwrap()));
        let items = [item("a", 51), item("b", 50), item("c", 50)];
        let out = s
            .slice(&scored(&items, &[0.9, 0.6, 0.6]), budget(100))
            .unwrap();
        assert_eq!(out.selected, vec![2, 1]);
    }

    #[test]
    fn negative_token_items_are_dropped_before_partitioning() {
        let s = greedy(QuotaSet::empty());
        let items = [item("neg", -100), item("a", 100)];
        // Without the guard the mass would be 0 and a would get no budget.
        assert_eq!(
            s.slice(&scored(&items, &[0.9, 0.5]), budget(100))
                .unwrap()
                .selected,
            vec![1]
        );
    }

    #[test]
    fn overflowing_token_mass_is_an_error() {
        let items = [item("a", i64::MAX), item("b", 1)];
        let err = greedy(QuotaSet::empty())
            .slice(&scored(&items, &[0.5, 0.5]), budget(10))
            .unwrap_err();
        assert_eq!(
            err,
            CupelError::TokenOverflow {
                sign: TokenSign::Positive,
                total: i128::from(i64::MAX) + 1
            }
        );
    }

    #[test]
    fn reports_kind_and_non_monotonicity() {
        let s = greedy(QuotaSet::empty());
        assert_eq!(s.slicer_kind(), SlicerKind::Quota);
        assert!(!s.is_monotonic());
        assert!(format!("{s:?}").contains("Greedy"));
    }
}
