//! The three narrow stage traits — [`Scorer`], [`Slicer`], [`Placer`] — and the
//! values that flow between them.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::diagnostics::{CapExclusion, CountRequirementShortfall};
use crate::{ContextItem, CupelError, ScoreContext, SliceBudget, VariantOutcome};

/// An item paired with the relevance score the Score stage gave it.
///
/// Borrowed: stages pass indices and scores around, never cloned items.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredItem<'a> {
    /// The item.
    pub item: &'a ContextItem,
    /// Its score, conventionally in `[0, 1]` (not enforced).
    pub score: f64,
}

impl<'a> ScoredItem<'a> {
    /// Pairs an item with a score.
    pub fn new(item: &'a ContextItem, score: f64) -> Self {
        Self { item, score }
    }
}

/// Orders two scores for every score-descending sort in Cupel: higher first,
/// IEEE equality for equal values (so `-0.0 == 0.0`), and NaN after every
/// number (NaN carries no information, so it never outranks a real score).
///
/// Combine with an index tie-break (or a stable sort) for determinism.
///
/// ```
/// use std::cmp::Ordering;
/// use cupel_core::score_cmp_desc;
/// assert_eq!(score_cmp_desc(0.9, 0.1), Ordering::Less);
/// assert_eq!(score_cmp_desc(-0.0, 0.0), Ordering::Equal);
/// assert_eq!(score_cmp_desc(f64::NAN, f64::NEG_INFINITY), Ordering::Greater);
/// let mut v = [0.2, f64::NAN, 0.7];
/// v.sort_by(|a, b| score_cmp_desc(*a, *b));
/// assert_eq!(&v[..2], &[0.7, 0.2]);
/// ```
pub fn score_cmp_desc(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => b.partial_cmp(&a).unwrap_or(Ordering::Equal),
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (true, true) => Ordering::Equal,
    }
}

/// A `u64` whose ascending order is [`score_cmp_desc`]'s order on `score`:
/// larger scores first, `-0.0 == 0.0`, every NaN last (and equal).
///
/// Sorting integer keys is several times faster than calling a float
/// comparator; the pipeline's Sort stage and the greedy slicer pair this key
/// with an index and sort the pairs with [`sort_by_key_stable`].
///
/// ```
/// use cupel_core::score_sort_key;
/// assert!(score_sort_key(0.9) < score_sort_key(0.1));
/// assert!(score_sort_key(-1.0) < score_sort_key(f64::NAN));
/// assert_eq!(score_sort_key(-0.0), score_sort_key(0.0));
/// ```
pub fn score_sort_key(score: f64) -> u64 {
    if score.is_nan() {
        return u64::MAX;
    }
    // `+ 0.0` turns -0.0 into 0.0, so both get one key.
    let bits = (score + 0.0).to_bits();
    // Standard order-preserving map of IEEE doubles onto unsigned integers...
    let ascending = if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    };
    // ...reversed for descending order. Finite and infinite values never map
    // to u64::MAX (that would need ascending == 0, i.e. a NaN bit pattern).
    !ascending
}

/// Sorts `(key, index)` pairs by key, ascending; pairs with equal keys keep
/// their input order (a stable sort). Built in index order — as the
/// pipeline's Sort stage, the greedy slicer and the rank scorers build
/// them — the pairs come out ordered by key, then index.
///
/// From [`RADIX_SORT_FROM`] pairs this is a least-significant-digit radix
/// sort of the key ([`radsort`](https://docs.rs/radsort)): eight linear
/// passes at most, with no comparisons to mispredict. About two thirds of
/// the time of a comparison sort at 10k pairs, two fifths at 100k.
///
/// ```
/// use cupel_core::{score_sort_key, sort_by_key_stable};
/// let scores = [0.5, 0.9, 0.5, 0.1];
/// let mut pairs: Vec<(u64, usize)> =
///     scores.iter().enumerate().map(|(i, &s)| (score_sort_key(s), i)).collect();
/// sort_by_key_stable(&mut pairs);
/// let order: Vec<usize> = pairs.iter().map(|p| p.1).collect();
/// assert_eq!(order, [1, 0, 2, 3]); // score descending, ties in input order
/// ```
pub fn sort_by_key_stable(pairs: &mut [(u64, usize)]) {
    if pairs.len() < RADIX_SORT_FROM {
        pairs.sort_by_key(|p| p.0);
        return;
    }
    // By the high halves of the keys first: when they vary (score and
    // density keys, whose low bytes are mantissa noise), four byte passes
    // at most order the pairs up to runs of equal high halves, which are
    // then sorted by their low halves (few and short for such keys). When
    // every high half is the same (priorities, timestamps in seconds),
    // there is one run: the low halves are the whole key. Either way the
    // result is the stable order by the whole key, in at most the eight
    // passes of one sort by the whole key.
    radsort::sort_by_key(pairs, |p| high_half(p.0));
    let mut start = 0;
    while start < pairs.len() {
        let high = high_half(pairs[start].0);
        let len = pairs[start..]
            .iter()
            .position(|p| high_half(p.0) != high)
            .unwrap_or(pairs.len() - start);
        let run = &mut pairs[start..start + len];
        if len >= RADIX_SORT_FROM {
            radsort::sort_by_key(run, |p| low_half(p.0));
        } else if len > 1 {
            run.sort_by_key(|p| low_half(p.0));
        }
        start += len;
    }
}

/// The top 32 bits of a key.
fn high_half(key: u64) -> u32 {
    (key >> 32) as u32
}

/// The bottom 32 bits of a key.
fn low_half(key: u64) -> u32 {
    key as u32
}

/// The length from which [`sort_by_key_stable`] sorts by radix: below it,
/// the radix sort's fixed cost (a 256-counter histogram per key byte) is
/// more than the comparisons it saves.
pub const RADIX_SORT_FROM: usize = 256;

/// Computes a relevance score for an item among its peers.
///
/// The item is identified by its **index** in `items` (the scoreable list of
/// one run); index identity is how Cupel expresses the specification's
/// "reference identity" (two equal items at different indices are different
/// items).
///
/// Implementations must be pure: the same `(index, items)` gives the same score.
///
/// # Performance
/// The pipeline calls [`score_all`](Scorer::score_all) once per run. Its default
/// calls [`score`](Scorer::score) for every index, which is right for absolute
/// scorers (O(1) per item). Relative scorers — whose one-item method looks at
/// every peer — should override `score_all` with a whole-pass algorithm that
/// returns identical results.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// struct LengthScorer;
/// impl Scorer for LengthScorer {
///     fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
///         1.0 / (1.0 + items[index].tokens().max(0) as f64)
///     }
/// }
/// let a = ContextItem::new("a", 1)?;
/// let b = ContextItem::new("b", 3)?;
/// assert_eq!(LengthScorer.score_all(&[&a, &b]), vec![0.5, 0.25]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub trait Scorer: Send + Sync {
    /// The score of `items[index]` given all of `items`.
    ///
    /// `index` is always `< items.len()`; callers outside the pipeline must
    /// uphold that too (implementations may panic otherwise, like slice indexing).
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64;

    /// Scores every item; `result[i]` is the score of `items[i]`.
    ///
    /// Must equal `score(i, items)` for every `i` (to within floating-point
    /// evaluation-order differences). Override for speed.
    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        (0..items.len()).map(|i| self.score(i, items)).collect()
    }

    /// Scores every item of a run that carries a [`ScoreContext`] (the
    /// run's [`Query`](crate::Query), when it has one).
    ///
    /// The default ignores the context and calls
    /// [`score_all`](Scorer::score_all), so a scorer that does not read the
    /// query changes nothing. Query-aware scorers override it; scorers that
    /// hold other scorers (a composite, a scaler) override it to pass the
    /// context on. The pipeline calls it only for runs given a query
    /// (`RunOptions::query` in cupel-pipeline); other runs call `score_all`.
    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        let _ = cx;
        self.score_all(items)
    }

    /// [`score_all`](Scorer::score_all), or a typed error for input the
    /// scorer cannot score (a vector scorer's mismatched dimensions).
    ///
    /// The pipeline's Score stage calls this. The default never fails.
    ///
    /// # Errors
    /// Whatever the scorer documents; the default none.
    fn try_score_all(&self, items: &[&ContextItem]) -> Result<Vec<f64>, crate::CupelError> {
        Ok(self.score_all(items))
    }

    /// [`score_all_in`](Scorer::score_all_in), or a typed error (as
    /// [`try_score_all`](Scorer::try_score_all)). Scorers that can fail
    /// override it; scorers that hold others override it to pass their
    /// children's errors on.
    ///
    /// # Errors
    /// Whatever the scorer documents; the default none.
    fn try_score_all_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Result<Vec<f64>, crate::CupelError> {
        Ok(self.score_all_in(items, cx))
    }

    /// Short per-item explanations of the scores of
    /// [`score_all_in`](Scorer::score_all_in) over the same `items` and
    /// `cx`: `(index into items, note)` pairs, in index order, for the items
    /// the scorer has something to say about (e.g. the query words a
    /// relevance scorer matched).
    ///
    /// The pipeline calls it only when the run builds a report, so it may
    /// cost as much as a scoring pass. The default says nothing; scorers
    /// that hold others pass their children's notes on.
    fn notes_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Vec<(usize, crate::ScoreNote)> {
        let _ = (items, cx);
        Vec::new()
    }

    /// A short name for messages (the default: the implementing type's
    /// name without its module path, e.g. `ScaledScorer`).
    ///
    /// [`CupelError::NonFiniteScore`](crate::CupelError::NonFiniteScore)
    /// names the scorer with it.
    fn name(&self) -> &'static str {
        short_type_name(std::any::type_name::<Self>())
    }
}

/// `a::b::Foo<c::Bar>` -> `Foo`.
fn short_type_name(full: &'static str) -> &'static str {
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// Checks that every score is finite (the rule of
/// [`CupelError::NonFiniteScore`]): a NaN or infinite score fails with that
/// error, naming `scorer` and the position in `scores`.
///
/// ```
/// use cupel_core::{check_finite_scores, CupelError};
/// assert!(check_finite_scores(&[0.0, 1.0], "MyScorer").is_ok());
/// let e = check_finite_scores(&[0.5, f64::INFINITY], "MyScorer").unwrap_err();
/// assert!(matches!(e, CupelError::NonFiniteScore { index: 1, .. }));
/// ```
///
/// # Errors
/// [`CupelError::NonFiniteScore`] for the first non-finite score.
pub fn check_finite_scores(scores: &[f64], scorer: &str) -> Result<(), crate::CupelError> {
    check_finite(scores.iter().copied(), || scorer.to_string())
}

/// The one non-finite-score check (spec H-1) behind
/// [`check_finite_scores`], over any sequence of scores: the pipeline's
/// Score stage and every slicer use it. `who` names the component in the
/// error and is only called when a score fails; `index` is the failing
/// score's position in the sequence.
///
/// ```
/// use cupel_core::{check_finite, CupelError};
/// let scores = [0.25, f64::NAN];
/// let e = check_finite(scores.iter().copied(), || "MySlicer".into()).unwrap_err();
/// assert!(matches!(e, CupelError::NonFiniteScore { index: 1, .. }));
/// ```
///
/// # Errors
/// [`CupelError::NonFiniteScore`] for the first non-finite score.
pub fn check_finite(
    scores: impl IntoIterator<Item = f64>,
    who: impl FnOnce() -> String,
) -> Result<(), crate::CupelError> {
    match scores.into_iter().enumerate().find(|(_, s)| !s.is_finite()) {
        Some((index, score)) => Err(crate::CupelError::NonFiniteScore {
            scorer: who(),
            index,
            score,
        }),
        None => Ok(()),
    }
}

macro_rules! forward_scorer {
    ($($ptr:ty),*) => {$(
        impl<T: Scorer + ?Sized> Scorer for $ptr {
            fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
                (**self).score(index, items)
            }
            fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
                (**self).score_all(items)
            }
            fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
                (**self).score_all_in(items, cx)
            }
            fn try_score_all(&self, items: &[&ContextItem]) -> Result<Vec<f64>, CupelError> {
                (**self).try_score_all(items)
            }
            fn try_score_all_in(
                &self,
                items: &[&ContextItem],
                cx: &ScoreContext<'_>,
            ) -> Result<Vec<f64>, CupelError> {
                (**self).try_score_all_in(items, cx)
            }
            fn notes_in(
                &self,
                items: &[&ContextItem],
                cx: &ScoreContext<'_>,
            ) -> Vec<(usize, crate::ScoreNote)> {
                (**self).notes_in(items, cx)
            }
            fn name(&self) -> &'static str {
                (**self).name()
            }
        }
    )*};
}
forward_scorer!(&T, Box<T>, Arc<T>);

/// Which built-in strategy a slicer is, for callers (such as budget simulation)
/// whose rules depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SlicerKind {
    /// `GreedySlice`.
    Greedy,
    /// `KnapsackSlice`.
    Knapsack,
    /// `QuotaSlice` (percentage quotas per kind).
    Quota,
    /// `CountQuotaSlice` (item-count quotas per kind).
    CountQuota,
    /// `CountConstrainedKnapsackSlice`.
    CountConstrainedKnapsack,
    /// A streaming slicer that takes items in arrival order.
    Stream,
    /// Anything else (the default for user slicers).
    Custom,
}

/// What a slicer decided: the selected items plus what the diagnostics need.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SliceOutcome {
    /// Indices into the slicer's input, in the slicer's own output order.
    /// Each index appears at most once.
    pub selected: Vec<usize>,
    /// Count requirements that could not be met (count-quota slicers, `Degrade` mode).
    pub shortfalls: Vec<CountRequirementShortfall>,
    /// Items a count cap removed after the inner selection (count-quota slicers).
    pub cap_exclusions: Vec<CapExclusion>,
    /// The room the slicer actually had when it left items out, for slicers
    /// that split the budget (a `QuotaSlice`'s per-kind shares, the phase-2
    /// target of the count-quota slicers). Diagnostics report it as
    /// `BudgetExceeded.available_tokens`; an unselected item listed in no
    /// entry gets `effective target − tokens selected`. When an item is listed
    /// in several entries the **first** counts, so a wrapping slicer appends
    /// its own, coarser rooms after those of its inner slicer.
    #[cfg_attr(feature = "serde", serde(default))]
    pub rooms: Vec<SliceRoom>,
}

/// A part of a slicer's input and the room the slicer had left for it: see
/// [`SliceOutcome::rooms`].
///
/// ```
/// use cupel_core::SliceRoom;
/// // A kind's share was 296 tokens and nothing of it was used.
/// let room = SliceRoom::new(296, vec![0, 3]);
/// assert_eq!((room.room_tokens, room.members.as_slice()), (296, &[0, 3][..]));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SliceRoom {
    /// Tokens left in this part's budget after the slicer's choices in it
    /// (the pipeline reports `max(0, room_tokens)`).
    pub room_tokens: i64,
    /// Indices into the slicer's input that this room applies to.
    pub members: Vec<usize>,
}

impl SliceRoom {
    /// A room of `room_tokens` for the items at `members`.
    pub fn new(room_tokens: i64, members: Vec<usize>) -> Self {
        Self {
            room_tokens,
            members,
        }
    }
}

impl SliceOutcome {
    /// An outcome with just a selection.
    pub fn selected(selected: Vec<usize>) -> Self {
        Self {
            selected,
            ..Self::default()
        }
    }
}

/// Chooses which scored items fit the budget.
///
/// Receives the items sorted by score descending (ties in input order) and the
/// effective [`SliceBudget`]; returns indices into that slice. Slicers hold no
/// per-run state: everything a run produces (shortfalls, cap exclusions) comes
/// back in the [`SliceOutcome`], so one slicer can serve many threads at once.
///
/// ```
/// use cupel_core::{ContextItem, ScoredItem, SliceBudget, SliceOutcome, Slicer, CupelError};
/// /// Takes items in order while they fit.
/// struct PrefixSlice;
/// impl Slicer for PrefixSlice {
///     fn slice(&self, items: &[ScoredItem<'_>], budget: SliceBudget) -> Result<SliceOutcome, CupelError> {
///         let mut used = 0;
///         let mut out = Vec::new();
///         for (i, s) in items.iter().enumerate() {
///             if used + s.item.tokens() > budget.target_tokens { break; }
///             used += s.item.tokens();
///             out.push(i);
///         }
///         Ok(SliceOutcome::selected(out))
///     }
/// }
/// let a = ContextItem::new("a", 5)?;
/// let b = ContextItem::new("b", 5)?;
/// let items = [ScoredItem::new(&a, 0.9), ScoredItem::new(&b, 0.5)];
/// assert_eq!(PrefixSlice.slice(&items, SliceBudget::new(8, 8))?.selected, vec![0]);
/// # Ok::<(), CupelError>(())
/// ```
pub trait Slicer: Send + Sync {
    /// Selects items within `budget`.
    ///
    /// # Errors
    /// Slicer-specific: e.g. a knapsack table over its size guard, or an unmet
    /// count requirement under `ScarcityBehavior::Throw`.
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError>;

    /// [`slice`](Self::slice), with each item's token count handed in:
    /// `tokens[i]` is `items[i].item.tokens()`.
    ///
    /// The pipeline calls this (when no item of the run has variants) with
    /// the counts it read once, in input order, at Classify. A slicer that
    /// reads every item's tokens can override it to read `tokens` instead:
    /// on large inputs, reading each item again in score order costs a cache
    /// miss per item. The result must be the one `slice` gives.
    ///
    /// The default ignores `tokens` and calls `slice`.
    ///
    /// # Errors
    /// As [`slice`](Self::slice); an overriding implementation returns
    /// [`CupelError::InvalidArgument`] when `tokens` and `items` differ in
    /// length (see [`check_counted`]).
    fn slice_counted(
        &self,
        items: &[ScoredItem<'_>],
        tokens: &[i64],
        budget: SliceBudget,
    ) -> Result<SliceOutcome, CupelError> {
        let _ = tokens;
        self.slice(items, budget)
    }

    /// Selects items within `budget`, free to take a cheaper form of any
    /// item that has [variants](crate::ContextItem::variants) (an extension:
    /// `spec/22-variants.md`). The pipeline calls this instead of
    /// [`slice`](Self::slice) only when some item of the run has variants.
    ///
    /// The default ignores variants: it is `slice`, every item whole or not
    /// at all. A variant-aware slicer overrides it, takes at most one form of
    /// each item and keeps the chosen forms' tokens within the target.
    ///
    /// # Errors
    /// As [`slice`](Self::slice).
    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<VariantOutcome, CupelError> {
        self.slice(items, budget).map(VariantOutcome::from)
    }

    /// Which built-in strategy this is ([`SlicerKind::Custom`] by default).
    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::Custom
    }

    /// Whether the slicer claims *monotonic inclusion*: that lowering the budget
    /// never brings in an item that a higher budget left out.
    ///
    /// This is the assumption the specification's budget simulation makes. It
    /// holds only approximately even for greedy and knapsack slicing (see
    /// `cupel-analytics` for a counterexample and exact alternatives); quota
    /// and count-quota slicers return `false` because their per-kind
    /// allocations shift with the budget. Default: `true`.
    fn is_monotonic(&self) -> bool {
        true
    }
}

/// Checks the counts handed to [`Slicer::slice_counted`]: one per item.
///
/// # Errors
/// [`CupelError::InvalidArgument`] naming both lengths when they differ.
///
/// ```
/// use cupel_core::{ContextItem, ScoredItem, check_counted};
/// let a = ContextItem::new("a", 5)?;
/// let items = [ScoredItem::new(&a, 0.5)];
/// assert!(check_counted(&items, &[5]).is_ok());
/// assert!(check_counted(&items, &[]).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn check_counted(items: &[ScoredItem<'_>], tokens: &[i64]) -> Result<(), CupelError> {
    if items.len() == tokens.len() {
        Ok(())
    } else {
        Err(CupelError::InvalidArgument(format!(
            "slice_counted was given {} token counts for {} items; pass one count per item",
            tokens.len(),
            items.len()
        )))
    }
}

macro_rules! forward_slicer {
    ($($ptr:ty),*) => {$(
        impl<T: Slicer + ?Sized> Slicer for $ptr {
            fn slice(&self, items: &[ScoredItem<'_>], budget: SliceBudget) -> Result<SliceOutcome, CupelError> {
                (**self).slice(items, budget)
            }
            fn slice_counted(&self, items: &[ScoredItem<'_>], tokens: &[i64], budget: SliceBudget) -> Result<SliceOutcome, CupelError> {
                (**self).slice_counted(items, tokens, budget)
            }
            fn slice_variants(&self, items: &[ScoredItem<'_>], budget: SliceBudget) -> Result<VariantOutcome, CupelError> {
                (**self).slice_variants(items, budget)
            }
            fn slicer_kind(&self) -> SlicerKind {
                (**self).slicer_kind()
            }
            fn is_monotonic(&self) -> bool {
                (**self).is_monotonic()
            }
        }
    )*};
}
forward_slicer!(&T, Box<T>, Arc<T>);

/// Orders the final selection.
///
/// Receives the merged list (pinned items first, with score 1.0, then the
/// sliced items in score order) and returns a permutation of its indices.
///
/// ```
/// use cupel_core::{ContextItem, Placer, ScoredItem};
/// /// Reverses the merged list.
/// struct Reverse;
/// impl Placer for Reverse {
///     fn place(&self, items: &[ScoredItem<'_>]) -> Vec<usize> {
///         (0..items.len()).rev().collect()
///     }
/// }
/// let a = ContextItem::new("a", 1)?;
/// let b = ContextItem::new("b", 1)?;
/// assert_eq!(Reverse.place(&[ScoredItem::new(&a, 1.0), ScoredItem::new(&b, 0.5)]), vec![1, 0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub trait Placer: Send + Sync {
    /// Returns every index of `items` exactly once, in presentation order.
    fn place(&self, items: &[ScoredItem<'_>]) -> Vec<usize>;
}

macro_rules! forward_placer {
    ($($ptr:ty),*) => {$(
        impl<T: Placer + ?Sized> Placer for $ptr {
            fn place(&self, items: &[ScoredItem<'_>]) -> Vec<usize> {
                (**self).place(items)
            }
        }
    )*};
}
forward_placer!(&T, Box<T>, Arc<T>);

/// What the pipeline does when the merged selection exceeds `target_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum OverflowStrategy {
    /// Fail with [`CupelError::BudgetOverflow`] (the default).
    #[default]
    Throw,
    /// Walk the merged list (pinned items first, then the sliced items by score)
    /// keeping every pinned item and every other item that still fits the
    /// target; drop the rest. Pinned items are never dropped, so the result
    /// can still exceed the target when pinned items alone do.
    Truncate,
    /// Keep the over-budget selection and report an `OverflowEvent`.
    Proceed,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    proptest::proptest! {
        /// Both sides of the radix threshold give the order of the standard
        /// library's stable sort, ties included (keys drawn from a few
        /// values, so most keys repeat; or from all of `u64`).
        #[test]
        fn stable_key_sort_equals_the_standard_stable_sort(
            keys in proptest::prop_oneof![
                proptest::collection::vec(0u64..4, 0..600),
                proptest::collection::vec(proptest::num::u64::ANY, 0..600),
                // A few high halves, each over many low halves: runs of
                // equal high halves, some long enough (>= 256) to be radix
                // sorted themselves, some short.
                proptest::collection::vec(
                    (0u64..3, proptest::prop_oneof![0u64..5, proptest::num::u64::ANY])
                        .prop_map(|(high, low)| (high << 32) | (low & 0xFFFF_FFFF)),
                    0..1500,
                ),
                // Score keys, as the Sort stage and the greedy slicer build
                // them: high halves vary, low halves are mantissa bits.
                proptest::collection::vec(
                    proptest::prop_oneof![0.0f64..1.0, (0u32..8).prop_map(|k| f64::from(k) / 8.0)]
                        .prop_map(score_sort_key),
                    0..1500,
                ),
            ],
        ) {
            let mut pairs: Vec<(u64, usize)> = keys.into_iter().zip(0..).collect();
            let mut expected = pairs.clone();
            expected.sort_by_key(|p| p.0);
            sort_by_key_stable(&mut pairs);
            proptest::prop_assert_eq!(pairs, expected);
        }
    }

    #[test]
    fn radix_path_orders_scores_then_input() {
        // 300 pairs (radix path): scores 0.0, 0.5, 1.0 repeating. Descending
        // score order: every index i with i % 3 == 2 (score 1.0) in input
        // order, then i % 3 == 1 (0.5), then i % 3 == 0 (0.0).
        const { assert!(300 >= RADIX_SORT_FROM) };
        let mut pairs: Vec<(u64, usize)> = (0..300)
            .map(|i| (score_sort_key((i % 3) as f64 / 2.0), i))
            .collect();
        sort_by_key_stable(&mut pairs);
        let order: Vec<usize> = pairs.iter().map(|p| p.1).collect();
        let expected: Vec<usize> = [2, 1, 0]
            .iter()
            .flat_map(|&r| (0..300).filter(move |i| i % 3 == r))
            .collect();
        assert_eq!(order, expected);
    }
}
