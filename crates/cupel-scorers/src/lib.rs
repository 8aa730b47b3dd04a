//! Every scorer of the Cupel specification, with whole-pass scoring that avoids
//! the reference algorithms' all-pairs scans (O(N log N) for the rank scorers).
//!
//! A scorer gives each candidate item a relevance score, conventionally in
//! `[0, 1]`; the pipeline sorts by it before slicing. All scorers here
//! implement [`cupel_core::Scorer`], are `Send + Sync`, and are immutable once
//! built. Constructors that take parameters validate them and return
//! [`CupelError::ScorerConfig`](cupel_core::CupelError::ScorerConfig) with a
//! message naming the parameter and the offending value.
//!
//! | scorer | reads | kind |
//! | --- | --- | --- |
//! | [`RecencyScorer`] | timestamp | relative: rank among timestamped items |
//! | [`PriorityScorer`] | priority | relative: rank among prioritised items |
//! | [`PositionScorer`] | input position | relative: `index / (count - 1)`, newest 1.0 |
//! | [`FrequencyScorer`] | tags | relative: share of peers with a common tag |
//! | [`KindScorer`] | kind | absolute: weight per kind |
//! | [`TagScorer`] | tags | absolute: matched share of tag weights |
//! | [`ReflexiveScorer`] | future-relevance hint | absolute: the hint, clamped |
//! | [`MetadataTrustScorer`] | `cupel:trust` metadata | absolute: the trust value, clamped |
//! | [`MetadataKeyScorer`] | one metadata key | absolute: a boost multiplier |
//! | [`DecayScorer`] | timestamp + a clock | absolute: a [`DecayCurve`] of the age |
//! | [`Bm25Scorer`] | content + the run's query | relative: BM25, the best item 1.0 |
//! | [`CompositeScorer`] | its children | weighted average |
//! | [`ScaledScorer`] | its inner scorer | min-max normalisation |
//!
//! # One item or a whole pass
//! [`Scorer::score`](cupel_core::Scorer::score) follows the specification's
//! reference algorithm for one item. The pipeline calls
//! [`Scorer::score_all`](cupel_core::Scorer::score_all); for the absolute
//! scorers [`ReflexiveScorer`], [`MetadataTrustScorer`] and
//! [`MetadataKeyScorer`] that is the trait's default (one `score` per item,
//! already O(1) each), and every other scorer here overrides it with a
//! whole-pass algorithm returning the same scores (to the bit, for the
//! built-in scorers): the rank scorers sort once — O(N log N)
//! where the reference is O(N²), O(N³) under a [`ScaledScorer`];
//! [`FrequencyScorer`] counts tag overlaps per distinct tag set without
//! comparing item pairs — linear in N when items share few tags (its docs give
//! the general bound); [`ScaledScorer`] finds its range once;
//! [`CompositeScorer`] combines its children's passes, copying the items' tags
//! out once for all its tag-reading children; [`DecayScorer`] reads its clock
//! once. Whole passes first copy the fields they need out of the items in
//! tight loops (so the CPU can overlap the memory reads) and then work on the
//! compact copy.
//!
//! Items are identified by their index in the slice (an identical copy at
//! another index is a different item).
//!
//! This crate depends only on `cupel-core` (and `chrono` for timestamps,
//! `unicode-segmentation` and `rust-stemmers` for [`Bm25Scorer`]).
//!
//! ```
//! use cupel_core::{ContextItem, ContextKind, Scorer};
//! use cupel_scorers::{CompositeScorer, KindScorer, PriorityScorer, TagScorer};
//!
//! let scorer = CompositeScorer::builder()
//!     .add(PriorityScorer, 2.0)
//!     .add(KindScorer::default(), 1.0)
//!     .add(TagScorer::new([("billing", 1.0)])?, 1.0)
//!     .build()?;
//!
//! let question = ContextItem::builder("How do refunds work?", 6)
//!     .priority(5)
//!     .tag("billing")
//!     .build()?;
//! let doc = ContextItem::builder("Refund policy ...", 300)
//!     .kind(ContextKind::DOCUMENT)
//!     .priority(1)
//!     .build()?;
//!
//! let scores = scorer.score_all(&[&question, &doc]);
//! // question: 0.5 * 1.0 (top priority) + 0.25 * 0.2 (Message) + 0.25 * 1.0 (tag) = 0.8
//! // doc:      0.5 * 0.0                 + 0.25 * 0.4 (Document) + 0.25 * 0.0      = 0.1
//! assert!((scores[0] - 0.8).abs() < 1e-12);
//! assert!((scores[1] - 0.1).abs() < 1e-12);
//! # Ok::<(), cupel_core::CupelError>(())
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

/// A relative scorer's score of `items[index]`: its place in the whole
/// pass's scores (IDF, fusion and cosine against the query all read every
/// item); `NaN` for an index out of range, as every scorer gives.
pub(crate) fn of_pass(scores: &[f64], index: usize) -> f64 {
    scores.get(index).copied().unwrap_or(f64::NAN)
}

mod bm25;
mod composite;
mod decay;
mod frequency;
mod gather;
mod hybrid;
mod kind;
mod metadata_key;
mod position;
mod priority;
mod rank;
mod recency;
mod reflexive;
mod scaled;
mod tag;
mod trust;
mod vector;

pub use bm25::{
    Bm25Feedback, Bm25Index, Bm25Scorer, Bm25ScorerBuilder, IndexedBm25Scorer, MAX_QUERY_BYTES,
    bm25_terms,
};
pub use composite::{CompositeScorer, CompositeScorerBuilder};
pub use decay::{DecayCurve, DecayScorer, StepWindow};
pub use frequency::FrequencyScorer;
pub use hybrid::{Fusion, HybridScorer};
pub use kind::KindScorer;
pub use metadata_key::MetadataKeyScorer;
pub use position::PositionScorer;
pub use priority::PriorityScorer;
pub use recency::RecencyScorer;
pub use reflexive::ReflexiveScorer;
pub use scaled::ScaledScorer;
pub use tag::{TagMatch, TagScorer};
pub use trust::MetadataTrustScorer;
pub use vector::VectorScorer;

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn every_scorer_is_send_and_sync() {
        send_sync::<RecencyScorer>();
        send_sync::<PriorityScorer>();
        send_sync::<KindScorer>();
        send_sync::<TagScorer>();
        send_sync::<FrequencyScorer>();
        send_sync::<ReflexiveScorer>();
        send_sync::<CompositeScorer>();
        send_sync::<CompositeScorerBuilder>();
        send_sync::<ScaledScorer>();
        send_sync::<MetadataTrustScorer>();
        send_sync::<DecayScorer>();
        send_sync::<DecayCurve>();
        send_sync::<MetadataKeyScorer>();
        send_sync::<Bm25Scorer>();
    }
}
