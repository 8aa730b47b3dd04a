//! [`HybridScorer`]: lexical and vector relevance fused into one score.

use std::fmt;
use std::sync::Arc;

use cupel_core::{
    ContextItem, CupelError, ScoreContext, ScoreNote, Scorer, score_sort_key, sort_by_key_stable,
};

use crate::scaled::{merge_notes, try_checked_score_all_in};

/// How a [`HybridScorer`] fuses its children's scores.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Fusion {
    /// Reciprocal-rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009):
    /// each child contributes `w · (k + 1) / (k + rank)` for the items it
    /// scores above 0, `rank` starting at 1 for its best item. Only the
    /// order of a child's scores matters, so children on different scales
    /// fuse without calibration.
    ReciprocalRank {
        /// The rank offset `k` (the paper's 60 by default): larger values
        /// flatten the difference between the first ranks.
        k: f64,
    },
    /// The weighted mean of the children's scores, `Σ w · s` (children
    /// scoring in `[0, 1]`, as bm25 and vector do).
    Weighted,
}

impl Fusion {
    /// The usual rank offset of reciprocal-rank fusion.
    pub const DEFAULT_RRF_K: f64 = 60.0;

    /// Reciprocal-rank fusion with `k` = 60.
    pub const fn rrf() -> Self {
        Fusion::ReciprocalRank {
            k: Self::DEFAULT_RRF_K,
        }
    }
}

impl Default for Fusion {
    fn default() -> Self {
        Self::rrf()
    }
}

/// Fuses relevance scorers — typically a [`Bm25Scorer`](crate::Bm25Scorer)
/// and a [`VectorScorer`](crate::VectorScorer) — into one score in `[0, 1]`.
///
/// Weights are relative (divided by their sum at construction).
///
/// # Reciprocal-rank fusion (the default, `k` = 60)
/// ```text
/// rank_c(d) = 1 + #{ e : s_c(e) > s_c(d) }       (ties share a rank)
/// score(d)  = Σ_c w_c · [s_c(d) > 0] · (k + 1) / (k + rank_c(d))
/// ```
/// An item a child scores 0 (no matching word, no embedding) gets nothing
/// from that child, as a document a retriever did not return. The factor
/// `k + 1` makes an item ranked first by every child score exactly 1.
///
/// # Weighted
/// `score(d) = Σ_c w_c · s_c(d)`.
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{ContextItem, Query, ScoreContext, Scorer};
/// use cupel_scorers::{Bm25Scorer, Fusion, HybridScorer, VectorScorer};
///
/// let hybrid = HybridScorer::new(
///     vec![(Arc::new(Bm25Scorer::new()) as Arc<dyn Scorer>, 1.0), (Arc::new(VectorScorer::new()), 1.0)],
///     Fusion::rrf(),
/// )?;
/// let a = ContextItem::builder("trip to tokyo", 3).embedding(vec![1.0, 0.0]).build()?;
/// let b = ContextItem::builder("car repair", 2).embedding(vec![0.0, 1.0]).build()?;
/// let q = Query::new("tokyo").with_embedding(vec![1.0, 0.0]);
/// let s = hybrid.try_score_all_in(&[&a, &b], &ScoreContext::new().query(Some(&q)))?;
/// // a: first for both children -> 1. b: no word matched; second by vector
/// // -> 0.5 · 61/62.
/// assert_eq!(s[0], 1.0);
/// assert!((s[1] - 0.5 * 61.0 / 62.0).abs() < 1e-12);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct HybridScorer {
    children: Vec<(Arc<dyn Scorer>, f64)>,
    fusion: Fusion,
}

impl fmt::Debug for HybridScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let weights: Vec<f64> = self.children.iter().map(|(_, w)| *w).collect();
        f.debug_struct("HybridScorer")
            .field("children", &self.children.len())
            .field("normalized_weights", &weights)
            .field("fusion", &self.fusion)
            .finish()
    }
}

impl HybridScorer {
    /// Fuses `children` (scorer, relative weight) with `fusion`.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] for no children, a weight that is not
    /// finite and positive, or a reciprocal-rank `k` that is not finite and
    /// `>= 0`.
    pub fn new(children: Vec<(Arc<dyn Scorer>, f64)>, fusion: Fusion) -> Result<Self, CupelError> {
        if children.is_empty() {
            return Err(CupelError::ScorerConfig(
                "hybrid scorer needs at least one child".into(),
            ));
        }
        if let Some((i, (_, w))) = children
            .iter()
            .enumerate()
            .find(|(_, (_, w))| !(w.is_finite() && *w > 0.0))
        {
            return Err(CupelError::ScorerConfig(format!(
                "hybrid child {i} has weight {w}: weights must be finite and > 0"
            )));
        }
        if let Fusion::ReciprocalRank { k } = fusion
            && !(k.is_finite() && k >= 0.0)
        {
            return Err(CupelError::ScorerConfig(format!(
                "hybrid rrf_k must be finite and >= 0, got {k}"
            )));
        }
        let total: f64 = children.iter().map(|(_, w)| w).sum();
        let children = children.into_iter().map(|(s, w)| (s, w / total)).collect();
        Ok(HybridScorer { children, fusion })
    }

    /// The fusion in use.
    pub fn fusion(&self) -> Fusion {
        self.fusion
    }

    /// Fuses one child's `scores` (weight `w`, normalised) into `out`.
    fn fuse(&self, out: &mut [f64], scores: &[f64], w: f64) {
        match self.fusion {
            Fusion::Weighted => {
                for (acc, s) in out.iter_mut().zip(scores) {
                    *acc += w * s;
                }
            }
            Fusion::ReciprocalRank { k } => {
                for (i, rank) in ranks(scores) {
                    out[i] += w * (k + 1.0) / (k + rank as f64);
                }
            }
        }
    }

    fn combine(
        &self,
        items: &[&ContextItem],
        cx: Option<&ScoreContext<'_>>,
    ) -> Result<Vec<f64>, CupelError> {
        let mut out = vec![0.0; items.len()];
        for (child, w) in &self.children {
            let scores = try_checked_score_all_in(&**child, items, cx)?;
            self.fuse(&mut out, &scores, *w);
        }
        Ok(out)
    }
}

/// `(index, rank)` of every score above 0, rank 1 for the highest; equal
/// scores share the rank of the first of them (competition ranking, "1224").
/// O(N log N).
fn ranks(scores: &[f64]) -> Vec<(usize, usize)> {
    let mut keyed: Vec<(u64, usize)> = scores
        .iter()
        .enumerate()
        .filter(|(_, s)| **s > 0.0)
        .map(|(i, &s)| (score_sort_key(s), i))
        .collect();
    sort_by_key_stable(&mut keyed);
    let mut out = Vec::with_capacity(keyed.len());
    let mut rank = 0;
    let mut previous = None;
    for (pos, &(key, i)) in keyed.iter().enumerate() {
        if previous != Some(key) {
            rank = pos + 1;
            previous = Some(key);
        }
        out.push((i, rank));
    }
    out
}

impl Scorer for HybridScorer {
    /// The whole pass's score of `items[index]` (fusion is relative).
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        crate::of_pass(&self.score_all(items), index)
    }

    /// The fused scores without a query (NaN for every item when a child
    /// fails: see [`try_score_all`](Scorer::try_score_all)).
    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        self.combine(items, None)
            .unwrap_or_else(|_| vec![f64::NAN; items.len()])
    }

    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        self.combine(items, Some(cx))
            .unwrap_or_else(|_| vec![f64::NAN; items.len()])
    }

    /// The first child error, else the fused scores.
    fn try_score_all(&self, items: &[&ContextItem]) -> Result<Vec<f64>, CupelError> {
        self.combine(items, None)
    }

    /// The first child error, else the fused scores.
    fn try_score_all_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Result<Vec<f64>, CupelError> {
        self.combine(items, Some(cx))
    }

    /// Every child's notes, in index order.
    fn notes_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<(usize, ScoreNote)> {
        merge_notes(self.children.iter().map(|(c, _)| c.notes_in(items, cx)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child returning fixed scores.
    struct Fixed(Vec<f64>);
    impl Scorer for Fixed {
        fn score(&self, index: usize, _: &[&ContextItem]) -> f64 {
            self.0[index]
        }
    }

    fn run(children: Vec<(Vec<f64>, f64)>, fusion: Fusion) -> Vec<f64> {
        let owned: Vec<ContextItem> = (0..children[0].0.len())
            .map(|_| ContextItem::new("x", 1).expect("valid"))
            .collect();
        let refs: Vec<&ContextItem> = owned.iter().collect();
        let children = children
            .into_iter()
            .map(|(s, w)| (Arc::new(Fixed(s)) as Arc<dyn Scorer>, w))
            .collect();
        HybridScorer::new(children, fusion)
            .expect("valid")
            .try_score_all(&refs)
            .expect("ok")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// RRF by hand, k = 60, weights 1 and 1 (0.5 each after normalising).
    /// lexical (1.0, 0.5, 0, 0.5): ranks 1, 2, -, 2 (a tie shares rank 2).
    /// vector  (0.2, 0.9, 0.6, 0): ranks 3, 1, 2, -.
    /// d0 = 0.5·61/61 + 0.5·61/63 = 0.5 + 0.484127 = 0.984127
    /// d1 = 0.5·61/62 + 0.5·61/61 = 0.491935 + 0.5 = 0.991935
    /// d2 = 0.5·61/62                              = 0.491935
    /// d3 = 0.5·61/62                              = 0.491935
    #[test]
    fn reciprocal_rank_fusion_by_hand() {
        let got = run(
            vec![
                (vec![1.0, 0.5, 0.0, 0.5], 1.0),
                (vec![0.2, 0.9, 0.6, 0.0], 1.0),
            ],
            Fusion::rrf(),
        );
        assert!(close(got[0], 0.5 + 0.5 * 61.0 / 63.0), "{got:?}");
        assert!((got[0] - 0.984_127).abs() < 1e-6, "{got:?}");
        assert!(close(got[1], 0.5 * 61.0 / 62.0 + 0.5), "{got:?}");
        assert!(close(got[2], 0.5 * 61.0 / 62.0), "{got:?}");
        assert!(close(got[3], 0.5 * 61.0 / 62.0), "{got:?}");
        assert!((got[1] - 0.991_935).abs() < 1e-6);
    }

    /// RRF with k = 0 and weights 3 : 1 (0.75, 0.25):
    /// a (0.9, 0.1) ranks 1 and 2 -> 0.75·1/1 + 0.25·1/2 = 0.875;
    /// b (0.1, 0.9) ranks 2 and 1 -> 0.75·1/2 + 0.25·1/1 = 0.625.
    #[test]
    fn rrf_weights_and_k() {
        let got = run(
            vec![(vec![0.9, 0.1], 3.0), (vec![0.1, 0.9], 1.0)],
            Fusion::ReciprocalRank { k: 0.0 },
        );
        assert!(close(got[0], 0.875) && close(got[1], 0.625), "{got:?}");
    }

    /// Weighted by hand, weights 1 : 3 (0.25, 0.75):
    /// d0 = 0.25·1.0 + 0.75·0.2 = 0.25 + 0.15 = 0.40
    /// d1 = 0.25·0.5 + 0.75·0.9 = 0.125 + 0.675 = 0.80
    /// d2 = 0.25·0.0 + 0.75·0.6 = 0.45
    #[test]
    fn weighted_fusion_by_hand() {
        let got = run(
            vec![(vec![1.0, 0.5, 0.0], 1.0), (vec![0.2, 0.9, 0.6], 3.0)],
            Fusion::Weighted,
        );
        assert!(
            close(got[0], 0.40) && close(got[1], 0.80) && close(got[2], 0.45),
            "{got:?}"
        );
    }

    #[test]
    fn competition_ranks() {
        assert_eq!(
            ranks(&[0.5, 0.9, 0.5, 0.0, 0.1]),
            [(1, 1), (0, 2), (2, 2), (4, 4)]
        );
    }

    #[test]
    fn bad_configuration_is_a_typed_error() {
        let one = || vec![(Arc::new(Fixed(vec![])) as Arc<dyn Scorer>, 1.0)];
        assert!(HybridScorer::new(Vec::new(), Fusion::rrf()).is_err());
        assert!(HybridScorer::new(one(), Fusion::ReciprocalRank { k: -1.0 }).is_err());
        assert!(HybridScorer::new(one(), Fusion::ReciprocalRank { k: f64::NAN }).is_err());
        let zero = vec![(Arc::new(Fixed(vec![])) as Arc<dyn Scorer>, 0.0)];
        assert!(matches!(
            HybridScorer::new(zero, Fusion::Weighted),
            Err(CupelError::ScorerConfig(_))
        ));
    }
}
