//! Vector similarity to the run's query: cosine between caller-supplied
//! embeddings.

use cupel_core::{
    ContextItem, CupelError, Query, ScoreContext, ScoreNote, Scorer, check_embedding,
};

/// Semantic relevance to the query: the cosine similarity between each
/// item's [embedding](ContextItem::embedding) and the query's
/// [embedding](Query::embedding), mapped to `[0, 1]`.
///
/// # Scoring
/// ```text
/// cos(d)   = (e_d · e_q) / (|e_d| |e_q|)        (clamped to [-1, 1])
/// score(d) = (1 + cos(d)) / 2                   (item with an embedding)
/// score(d) = 0                                  (item without one)
/// ```
///
/// The map is linear, so it keeps the cosine's order and spacing: opposite
/// vectors score 0, orthogonal ones 0.5, parallel ones 1. An item without
/// an embedding scores 0 — the same as an opposite one — so a run mixing
/// embedded and plain items ranks every embedded item at least as high as
/// the plain ones (caller-supplied vectors are the evidence this scorer
/// reads; an item without one offers none). Arithmetic is in `f64`.
///
/// No model runs inside the library: callers embed the items and the query
/// with their provider and pass the vectors in.
///
/// # Errors
/// Through [`Scorer::try_score_all_in`] (what the pipeline calls):
/// [`CupelError::QueryEmbeddingMissing`] when the run has no query
/// embedding; [`CupelError::InvalidEmbedding`] for a query embedding that is
/// empty, holds a NaN or infinity, or is all zeros (item embeddings are
/// checked when the item is built);
/// [`CupelError::EmbeddingDimensionMismatch`] for an item whose embedding
/// has another length than the query's. The infallible
/// [`score_all_in`](Scorer::score_all_in) gives every item NaN instead,
/// which a pipeline reports as a non-finite score.
///
/// ```
/// use cupel_core::{ContextItem, Query, ScoreContext, Scorer};
/// use cupel_scorers::VectorScorer;
///
/// let a = ContextItem::builder("tokyo trip", 3).embedding(vec![1.0, 0.0]).build()?;
/// let b = ContextItem::builder("car repair", 3).embedding(vec![0.0, 1.0]).build()?;
/// let c = ContextItem::new("no vector", 2)?;
/// let q = Query::new("travel").with_embedding(vec![1.0, 0.0]);
/// let cx = ScoreContext::new().query(Some(&q));
/// // cos = 1 -> 1.0; cos = 0 -> 0.5; no embedding -> 0.
/// assert_eq!(VectorScorer::new().try_score_all_in(&[&a, &b, &c], &cx)?, vec![1.0, 0.5, 0.0]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct VectorScorer;

impl VectorScorer {
    /// The scorer (it has no parameters).
    pub fn new() -> Self {
        VectorScorer
    }

    /// The score of an item whose cosine to the query is `cos`:
    /// `(1 + cos) / 2`, `cos` clamped to `[-1, 1]`.
    ///
    /// ```
    /// use cupel_scorers::VectorScorer;
    /// assert_eq!(VectorScorer::map_cosine(-1.0), 0.0);
    /// assert_eq!(VectorScorer::map_cosine(0.6), 0.8);
    /// ```
    pub fn map_cosine(cos: f64) -> f64 {
        f64::midpoint(1.0, cos.clamp(-1.0, 1.0))
    }

    /// The cosine similarity of two vectors of equal length (`None` when
    /// the lengths differ or either has zero length).
    ///
    /// ```
    /// use cupel_scorers::VectorScorer;
    /// // (3·4 + 4·3) / (5 · 5) = 24 / 25
    /// assert_eq!(VectorScorer::cosine(&[3.0, 4.0], &[4.0, 3.0]), Some(0.96));
    /// ```
    pub fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
        if a.len() != b.len() {
            return None;
        }
        let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
        for (&x, &y) in a.iter().zip(b) {
            let (x, y) = (f64::from(x), f64::from(y));
            dot += x * y;
            na += x * x;
            nb += y * y;
        }
        let denom = na.sqrt() * nb.sqrt();
        (denom > 0.0).then(|| (dot / denom).clamp(-1.0, 1.0))
    }

    /// The run's query embedding, checked.
    fn query_embedding<'a>(&self, cx: &ScoreContext<'a>) -> Result<&'a [f32], CupelError> {
        let q = cx.query_ref().and_then(Query::embedding).ok_or_else(|| {
            CupelError::QueryEmbeddingMissing {
                scorer: self.name().to_string(),
            }
        })?;
        check_embedding(q, "query")?;
        Ok(q)
    }

    /// Every item's cosine to `q` (`None`: the item has no embedding).
    fn cosines(items: &[&ContextItem], q: &[f32]) -> Result<Vec<Option<f64>>, CupelError> {
        items
            .iter()
            .enumerate()
            .map(|(index, item)| match item.embedding() {
                None => Ok(None),
                Some(e) if e.len() != q.len() => Err(CupelError::EmbeddingDimensionMismatch {
                    index,
                    item_dims: e.len(),
                    query_dims: q.len(),
                }),
                Some(e) => Ok(Self::cosine(e, q)),
            })
            .collect()
    }
}

impl Scorer for VectorScorer {
    /// The whole pass's score of `items[index]` without a query: NaN (a
    /// vector scorer needs a query embedding).
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        crate::of_pass(&self.score_all(items), index)
    }

    /// Without a query: NaN for every item (see
    /// [`try_score_all`](Scorer::try_score_all) for the typed error).
    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        self.score_all_in(items, &ScoreContext::new())
    }

    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        self.try_score_all_in(items, cx)
            .unwrap_or_else(|_| vec![f64::NAN; items.len()])
    }

    /// [`CupelError::QueryEmbeddingMissing`]: a run without a query has no
    /// query embedding.
    fn try_score_all(&self, items: &[&ContextItem]) -> Result<Vec<f64>, CupelError> {
        self.try_score_all_in(items, &ScoreContext::new())
    }

    fn try_score_all_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Result<Vec<f64>, CupelError> {
        let q = self.query_embedding(cx)?;
        Ok(Self::cosines(items, q)?
            .into_iter()
            .map(|c| c.map_or(0.0, Self::map_cosine))
            .collect())
    }

    /// Per item with an embedding: `similarity S (cosine C)`.
    fn notes_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<(usize, ScoreNote)> {
        let Ok(q) = self.query_embedding(cx) else {
            return Vec::new();
        };
        let Ok(cosines) = Self::cosines(items, q) else {
            return Vec::new();
        };
        cosines
            .into_iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let c = c?;
                let note = ScoreNote::new("vector", "similarity", Self::map_cosine(c))
                    .with_detail(format!("cosine {c:.3}"));
                Some((i, note))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(v: Option<Vec<f32>>) -> ContextItem {
        ContextItem::builder("x", 1)
            .embedding_opt(v)
            .build()
            .expect("valid")
    }

    fn score(items: &[ContextItem], q: Query) -> Result<Vec<f64>, CupelError> {
        let refs: Vec<&ContextItem> = items.iter().collect();
        VectorScorer::new().try_score_all_in(&refs, &ScoreContext::new().query(Some(&q)))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Cosine by hand, query q = (1, 2, 2), |q| = 3:
    /// a = (2, 1, 2): a·q = 2 + 2 + 4 = 8, |a| = 3 -> cos 8/9 -> (1 + 8/9)/2 = 17/18.
    /// b = (0, 0, 5): b·q = 10, |b| = 5 -> cos 10/15 = 2/3 -> 5/6.
    /// c = (-1, -2, -2) = -q -> cos -1 -> 0.
    /// d = (2, -1, 0): d·q = 2 - 2 = 0 -> 0.5.
    /// e: no embedding -> 0.
    #[test]
    fn cosine_by_hand() {
        let items = [
            item(Some(vec![2.0, 1.0, 2.0])),
            item(Some(vec![0.0, 0.0, 5.0])),
            item(Some(vec![-1.0, -2.0, -2.0])),
            item(Some(vec![2.0, -1.0, 0.0])),
            item(None),
        ];
        let got = score(&items, Query::new("q").with_embedding(vec![1.0, 2.0, 2.0])).expect("ok");
        assert!(close(got[0], 17.0 / 18.0), "{got:?}");
        assert!(close(got[1], 5.0 / 6.0), "{got:?}");
        assert!(close(got[2], 0.0), "{got:?}");
        assert!(close(got[3], 0.5), "{got:?}");
        assert_eq!(got[4], 0.0);
    }

    #[test]
    fn mismatched_dimensions_name_the_item_and_both_lengths() {
        let items = [item(Some(vec![1.0, 0.0])), item(Some(vec![1.0, 0.0, 0.0]))];
        let e = score(&items, Query::new("q").with_embedding(vec![1.0, 0.0])).unwrap_err();
        assert_eq!(
            e,
            CupelError::EmbeddingDimensionMismatch {
                index: 1,
                item_dims: 3,
                query_dims: 2
            }
        );
        assert!(
            e.to_string()
                .contains("item 1's embedding has 3 dimensions but the query's has 2")
        );
    }

    #[test]
    fn bad_query_embeddings_are_typed_errors() {
        let items = [item(Some(vec![1.0, 0.0]))];
        for (q, needle) in [
            (vec![f32::NAN, 1.0], "component 0 is NaN"),
            (vec![1.0, f32::INFINITY], "component 1 is inf"),
            (vec![0.0, 0.0], "all 2 components are zero"),
            (vec![], "no components"),
        ] {
            let e = score(&items, Query::new("q").with_embedding(q)).unwrap_err();
            assert!(matches!(&e, CupelError::InvalidEmbedding { owner, .. } if owner == "query"));
            assert!(e.to_string().contains(needle), "{e}");
        }
        let e = score(&items, Query::new("no vector")).unwrap_err();
        assert!(matches!(e, CupelError::QueryEmbeddingMissing { .. }));
        let refs: Vec<&ContextItem> = items.iter().collect();
        assert!(VectorScorer::new().try_score_all(&refs).is_err());
        // The infallible path never panics: NaN, which the pipeline rejects.
        assert!(VectorScorer::new().score_all(&refs)[0].is_nan());
    }

    #[test]
    fn bad_item_embeddings_fail_when_the_item_is_built() {
        for v in [
            vec![f32::NAN],
            vec![0.0, 0.0],
            vec![],
            vec![f32::NEG_INFINITY],
        ] {
            let e = ContextItem::builder("x", 1)
                .embedding(v)
                .build()
                .unwrap_err();
            assert!(matches!(e, CupelError::InvalidEmbedding { .. }), "{e}");
        }
    }

    #[test]
    fn notes_give_similarity_and_cosine() {
        let items = [item(Some(vec![3.0, 4.0])), item(None)];
        let refs: Vec<&ContextItem> = items.iter().collect();
        let q = Query::new("q").with_embedding(vec![4.0, 3.0]);
        let notes = VectorScorer::new().notes_in(&refs, &ScoreContext::new().query(Some(&q)));
        // cos = 24/25 = 0.96 -> (1 + 0.96)/2 = 0.98.
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].1.to_string(), "similarity 0.98: cosine 0.960");
    }
}
