//! Every Cupel slicer: the strategies that choose which scored items fit the
//! token budget.
//!
//! A slicer implements [`cupel_core::Slicer`]: it receives the scored items
//! (score-descending in the pipeline) and the effective [`SliceBudget`], and
//! returns the indices it selects plus what the diagnostics need
//! ([`SliceOutcome`]). This crate depends only on `cupel-core`.
//!
//! | slicer | selects by | monotonic |
//! | --- | --- | --- |
//! | [`GreedySlice`] | score per token, one pass, skip-not-defer | yes |
//! | [`KnapsackSlice`] | 0/1 knapsack DP over token buckets (bit keep table, size guard) | yes |
//! | [`QuotaSlice`] | per-kind percentage budgets ([`QuotaSet`]) around an inner slicer | no |
//! | [`CountQuotaSlice`] | per-kind item counts ([`CountQuotaEntry`]) around an inner slicer | no |
//! | [`CountConstrainedKnapsackSlice`] | per-kind item counts around a knapsack | no |
//! | [`StreamSlice`] | first fit in arrival order (the optional streaming slicer) | yes |
//! | [`ContiguousSlice`] | score order until the first item that does not fit (no holes) | yes |
//!
//! Every slicer here also takes item variants (an extension,
//! `spec/22-variants.md`): [`Slicer::slice_variants`] selects each item in
//! at most one of its forms — greedy by each form's density, knapsack as a
//! multiple-choice knapsack, quota and count-quota through their inner
//! slicer by the item's kind, contiguous and stream in the most complete
//! form that fits.
//!
//! [`Slicer::slice_variants`]: cupel_core::Slicer::slice_variants
//!
//! Slicers keep no per-run state: count shortfalls
//! ([`ScarcityBehavior::Degrade`]) and cap exclusions come back in the
//! [`SliceOutcome`], so one slicer can serve many threads at once. Bad
//! configuration (a zero bucket size, quotas over 100%, `require > cap`, a
//! knapsack inside a [`CountQuotaSlice`], ...) is a
//! [`CupelError::SlicerConfig`](cupel_core::CupelError::SlicerConfig) at
//! construction; a knapsack table over its guard is
//! [`CupelError::TableTooLarge`](cupel_core::CupelError::TableTooLarge).
//!
//! ```
//! use std::sync::Arc;
//! use cupel_core::{ContextItem, ContextKind, ScoredItem, SliceBudget, Slicer};
//! use cupel_slicers::{GreedySlice, KnapsackSlice, QuotaSet, QuotaSlice};
//!
//! let a = ContextItem::builder("a", 51).kind(ContextKind::DOCUMENT).build()?;
//! let b = ContextItem::builder("b", 50).kind(ContextKind::DOCUMENT).build()?;
//! let c = ContextItem::builder("c", 50).kind(ContextKind::DOCUMENT).build()?;
//! let items = [ScoredItem::new(&a, 0.9), ScoredItem::new(&b, 0.6), ScoredItem::new(&c, 0.6)];
//! let budget = SliceBudget::new(100, 100);
//!
//! // Greedy takes the densest item first (a: 0.9 / 51), then nothing else fits.
//! assert_eq!(GreedySlice.slice(&items, budget)?.selected, vec![0]);
//! // The exact knapsack (bucket 1) finds b + c (value 12000 > 9000).
//! let knapsack = KnapsackSlice::new(1)?;
//! assert_eq!(knapsack.slice(&items, budget)?.selected, vec![2, 1]);
//! // Cap documents at 50% of the target: the inner knapsack gets 50 tokens,
//! // where only b or c fits (equal value: the earlier one wins).
//! let quotas = QuotaSet::builder().cap(ContextKind::DOCUMENT, 50.0).build()?;
//! let capped = QuotaSlice::new(quotas, Arc::new(knapsack));
//! assert_eq!(capped.slice(&items, budget)?.selected, vec![1]);
//! # Ok::<(), cupel_core::CupelError>(())
//! ```
//!
//! [`SliceBudget`]: cupel_core::SliceBudget
//! [`SliceOutcome`]: cupel_core::SliceOutcome
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod contiguous;
mod count_knapsack;
mod count_quota;
mod greedy;
mod inner;
mod kinds;
mod knapsack;
mod quota;
mod score_order;
mod stream;
#[cfg(test)]
mod test_util;
mod variants;

pub use contiguous::ContiguousSlice;
pub use count_knapsack::CountConstrainedKnapsackSlice;
pub use count_quota::{CountQuotaEntry, CountQuotaSlice, ScarcityBehavior};
pub use greedy::GreedySlice;
pub use knapsack::{
    DEFAULT_BUCKET_SIZE, DEFAULT_MAX_TABLE_BYTES, DEFAULT_MAX_TABLE_CELLS, KnapsackSlice,
    KnapsackTableSize, SCORE_SCALE,
};
pub use quota::{QuotaEntry, QuotaSet, QuotaSetBuilder, QuotaSlice};
pub use score_order::ScoreOrderSlice;
pub use stream::{StreamSelection, StreamSlice};

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn every_slicer_is_send_and_sync() {
        assert_send_sync::<GreedySlice>();
        assert_send_sync::<KnapsackSlice>();
        assert_send_sync::<QuotaSlice>();
        assert_send_sync::<CountQuotaSlice>();
        assert_send_sync::<CountConstrainedKnapsackSlice>();
        assert_send_sync::<StreamSlice>();
    }
}
