//! A persistent BM25 index a session extends as turns are appended: each
//! item is tokenised once, queries read the stored term frequencies.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use cupel_core::{ContextItem, CupelError, ScoreContext, ScoreNote, Scorer};

use super::{Analyzer, Bm25Scorer, cut};

/// One indexed text: where its postings start in the flat arrays and how
/// many index terms it has.
#[derive(Debug, Clone, Copy)]
struct Doc {
    /// Offset of the first posting in [`Bm25Index::postings`].
    start: u32,
    /// Its length in index terms (`dl`).
    len: u32,
}

/// The index terms of every text a session added, each text analysed once.
///
/// Per distinct content (two turns with the same text share one entry):
/// its length in terms and its `(term id, term frequency)` postings, in one
/// flat array; terms are interned once for the whole index. Nothing
/// corpus-wide is stored: IDF and the mean length are computed at query
/// time over the items of the run, so scores through the index are those
/// of [`Bm25Scorer`] on the same items (to within floating-point summation
/// order). Items of a run that were never added are analysed on the fly.
///
/// Build one with [`IndexedBm25Scorer::new`], which shares it with the
/// scorer; add turns with [`IndexedBm25Scorer::extend`].
pub struct Bm25Index {
    analyzer: Analyzer,
    /// Interned terms: text -> id.
    ids: HashMap<Box<str>, u32, foldhash::fast::FixedState>,
    /// Content hash -> index in `docs`.
    by_hash: HashMap<u64, u32, foldhash::fast::FixedState>,
    docs: Vec<Doc>,
    /// `(term id, tf)` of every doc, doc after doc, term ids ascending.
    postings: Vec<(u32, u32)>,
    /// Bytes of content indexed (each distinct content once).
    text_bytes: usize,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index")
            .field("docs", &self.docs.len())
            .field("terms", &self.ids.len())
            .field("postings", &self.postings.len())
            .field("text_bytes", &self.text_bytes)
            .finish()
    }
}

impl Bm25Index {
    fn new(analyzer: Analyzer) -> Self {
        Bm25Index {
            analyzer,
            ids: HashMap::default(),
            by_hash: HashMap::default(),
            docs: Vec::new(),
            postings: Vec::new(),
            text_bytes: 0,
        }
    }

    /// Adds `item`'s content (nothing when the same content is indexed).
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] when the index would exceed `u32`
    /// postings or terms (4 billion).
    pub fn push(&mut self, item: &ContextItem) -> Result<(), CupelError> {
        if self.by_hash.contains_key(&item.content_hash()) {
            return Ok(());
        }
        let too_big =
            || CupelError::InvalidArgument("the BM25 index is full (2^32 entries)".into());
        let start = u32::try_from(self.postings.len()).map_err(|_| too_big())?;
        let doc_id = u32::try_from(self.docs.len()).map_err(|_| too_big())?;
        let mut terms: Vec<u32> = Vec::new();
        let mut fail = false;
        let (ids, analyzer) = (&mut self.ids, &self.analyzer);
        analyzer.each(item.content(), |_, t| {
            let next = ids.len();
            let id = match ids.get(t.as_str()) {
                Some(&id) => id,
                None => {
                    let Ok(id) = u32::try_from(next) else {
                        fail = true;
                        return;
                    };
                    ids.insert(t.into_boxed_str(), id);
                    id
                }
            };
            terms.push(id);
        });
        if fail {
            return Err(too_big());
        }
        let len = u32::try_from(terms.len()).map_err(|_| too_big())?;
        terms.sort_unstable();
        for run in terms.chunk_by(|a, b| a == b) {
            // A run's length is at most `len`, which fits.
            self.postings.push((run[0], run.len() as u32));
        }
        self.docs.push(Doc { start, len });
        self.by_hash.insert(item.content_hash(), doc_id);
        self.text_bytes += item.content().len();
        Ok(())
    }

    /// The number of distinct contents indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Bytes of text indexed (each distinct content once).
    pub fn text_bytes(&self) -> usize {
        self.text_bytes
    }

    /// The heap bytes the index holds: its tables' capacities (hash-table
    /// buckets at their entry size plus one control byte) and the interned
    /// terms' bytes. What the issue's "memory of the index" measures.
    pub fn heap_bytes(&self) -> usize {
        fn table<K, V, S>(m: &HashMap<K, V, S>) -> usize {
            // hashbrown: buckets = capacity * 8 / 7 rounded up to a power of two.
            let buckets = (m.capacity() * 8 / 7).next_power_of_two();
            buckets * (std::mem::size_of::<(K, V)>() + 1)
        }
        let term_bytes: usize = self.ids.keys().map(|k| k.len()).sum();
        table(&self.ids)
            + term_bytes
            + table(&self.by_hash)
            + self.docs.capacity() * std::mem::size_of::<Doc>()
            + self.postings.capacity() * std::mem::size_of::<(u32, u32)>()
    }

    /// Releases spare capacity (after a bulk load).
    pub fn shrink_to_fit(&mut self) {
        self.ids.shrink_to_fit();
        self.by_hash.shrink_to_fit();
        self.docs.shrink_to_fit();
        self.postings.shrink_to_fit();
    }

    /// The ids of the query's distinct terms that the index knows, each
    /// with its slot (query terms the index never saw can still occur in
    /// items analysed on the fly: those get slots too, by text).
    fn query_terms(&self, query: &str) -> Vec<String> {
        let mut terms = self.analyzer.terms(cut(query));
        terms.sort_unstable();
        terms.dedup();
        terms
    }

    /// Raw BM25 of every item for `query` (the formula of [`Bm25Scorer`]),
    /// reading stored postings, analysing only unindexed items.
    fn raw(&self, k1: f64, b: f64, items: &[&ContextItem], query: &str) -> Vec<f64> {
        let q = self.query_terms(query);
        if q.is_empty() || items.is_empty() {
            return vec![0.0; items.len()];
        }
        // slot of each query term, by term id (terms the index knows).
        let known: Vec<(u32, usize)> = {
            let mut v: Vec<(u32, usize)> = q
                .iter()
                .enumerate()
                .filter_map(|(s, t)| self.ids.get(t.as_str()).map(|&id| (id, s)))
                .collect();
            v.sort_unstable();
            v
        };
        let mut counts = Counts {
            lens: Vec::with_capacity(items.len()),
            ends: Vec::with_capacity(items.len()),
            tfs: Vec::new(),
            df: vec![0u32; q.len()],
        };
        for item in items {
            let start = counts.tfs.len();
            let len = match self.by_hash.get(&item.content_hash()) {
                Some(&d) => self.doc_tf(d, &known, &mut counts.tfs),
                None => self.analyse(item, &q, &mut counts.tfs),
            };
            for &(s, _) in &counts.tfs[start..] {
                counts.df[s] += 1;
            }
            counts.lens.push(f64::from(len));
            counts.ends.push(counts.tfs.len());
        }
        bm25_from_counts(k1, b, &counts)
    }

    /// Appends doc `d`'s query-term frequencies to `out`; its stored length.
    fn doc_tf(&self, d: u32, known: &[(u32, usize)], out: &mut Vec<(usize, u32)>) -> u32 {
        let doc = self.docs[d as usize];
        if !known.is_empty() {
            let end = self
                .docs
                .get(d as usize + 1)
                .map_or(self.postings.len(), |n| n.start as usize);
            for &(id, c) in &self.postings[doc.start as usize..end] {
                if let Ok(k) = known.binary_search_by_key(&id, |p| p.0) {
                    out.push((known[k].1, c));
                }
            }
        }
        doc.len
    }

    /// Appends an unindexed item's query-term frequencies, analysed now, to
    /// `out`; its length.
    fn analyse(&self, item: &ContextItem, q: &[String], out: &mut Vec<(usize, u32)>) -> u32 {
        let start = out.len();
        let mut len = 0u32;
        self.analyzer.each(item.content(), |_, t| {
            len = len.saturating_add(1);
            if let Ok(s) = q.binary_search(&t) {
                match out[start..].iter_mut().find(|(k, _)| *k == s) {
                    Some((_, c)) => *c = c.saturating_add(1),
                    None => out.push((s, 1)),
                }
            }
        });
        len
    }
}

/// What a query pass counted over the run's items.
struct Counts {
    /// Each item's length in terms.
    lens: Vec<f64>,
    /// Where each item's `(query slot, tf)` pairs end in `tfs`.
    ends: Vec<usize>,
    /// Every item's `(query slot, tf)` pairs, item after item.
    tfs: Vec<(usize, u32)>,
    /// Per query slot, how many items hold the term.
    df: Vec<u32>,
}

/// The BM25 formula of [`Bm25Scorer`] over counted items.
fn bm25_from_counts(k1: f64, b: f64, c: &Counts) -> Vec<f64> {
    let n = c.lens.len() as f64;
    let avgdl = c.lens.iter().sum::<f64>() / n;
    let idf: Vec<f64> =
        c.df.iter()
            .map(|&d| {
                let d = f64::from(d);
                ((n - d + 0.5) / (d + 0.5) + 1.0).ln()
            })
            .collect();
    let mut start = 0;
    c.ends
        .iter()
        .zip(&c.lens)
        .map(|(&end, &dl)| {
            let norm = if avgdl > 0.0 {
                k1 * (1.0 - b + b * dl / avgdl)
            } else {
                k1
            };
            let raw = c.tfs[start..end]
                .iter()
                .map(|&(s, tf)| {
                    let tf = f64::from(tf);
                    idf[s] * tf * (k1 + 1.0) / (tf + norm)
                })
                .fold(0.0, |a, x| a + x);
            start = end;
            raw
        })
        .collect()
}

/// Scores divided by their maximum (all 0 when it is 0), as [`Bm25Scorer`].
fn normalise(lifted: Vec<f64>) -> Vec<f64> {
    let max = lifted.iter().copied().fold(0.0_f64, f64::max);
    if max > 0.0 && max.is_finite() {
        lifted.into_iter().map(|s| s / max).collect()
    } else {
        vec![0.0; lifted.len()]
    }
}

/// [`Bm25Scorer`] reading a [`Bm25Index`]: the same scores (to within
/// floating-point summation order), without analysing the indexed items'
/// text on every query.
///
/// Cheap to clone: clones share the index. A session keeps a clone, adds
/// each turn as it is appended ([`extend`](Self::extend)), and gives
/// another clone to its policy.
///
/// ```
/// use std::sync::Arc;
/// use cupel_core::{ContextItem, Query, ScoreContext, Scorer};
/// use cupel_scorers::{Bm25Scorer, IndexedBm25Scorer};
///
/// let scorer = IndexedBm25Scorer::new(Bm25Scorer::new());
/// let turns = [ContextItem::new("my trip to Tokyo", 4)?, ContextItem::new("the car broke", 3)?];
/// scorer.extend(&turns)?; // analysed once, here
/// let refs: Vec<&ContextItem> = turns.iter().collect();
/// let q = Query::new("tokyo travel");
/// let cx = ScoreContext::new().query(Some(&q));
/// assert_eq!(scorer.score_all_in(&refs, &cx), Bm25Scorer::new().score_all_in(&refs, &cx));
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone)]
pub struct IndexedBm25Scorer {
    scorer: Bm25Scorer,
    index: Arc<RwLock<Bm25Index>>,
}

impl IndexedBm25Scorer {
    /// An empty index analysed like `scorer` (its stemming), scoring with
    /// its parameters, query and neighbour lift.
    pub fn new(scorer: Bm25Scorer) -> Self {
        let index = Bm25Index::new(scorer.analyzer.clone());
        IndexedBm25Scorer {
            scorer,
            index: Arc::new(RwLock::new(index)),
        }
    }

    /// Adds `items` to the shared index (contents already indexed are
    /// skipped).
    ///
    /// # Errors
    /// As [`Bm25Index::push`].
    pub fn extend<'a>(
        &self,
        items: impl IntoIterator<Item = &'a ContextItem>,
    ) -> Result<(), CupelError> {
        let mut index = self.index.write().unwrap_or_else(PoisonError::into_inner);
        items.into_iter().try_for_each(|i| index.push(i))
    }

    /// Reads the index (its size, its memory).
    pub fn with_index<R>(&self, f: impl FnOnce(&Bm25Index) -> R) -> R {
        f(&self.index.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Releases the index's spare capacity.
    pub fn shrink_to_fit(&self) {
        self.index
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .shrink_to_fit();
    }

    fn scores(&self, items: &[&ContextItem], query: Option<&str>) -> Vec<f64> {
        let s = &self.scorer;
        let Some(query) = query.or(s.query.as_deref()) else {
            return vec![0.0; items.len()];
        };
        let raw = self
            .index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .raw(s.k1, s.b, items, query);
        normalise(s.lift(items, &raw))
    }
}

impl Scorer for IndexedBm25Scorer {
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        self.score_all(items)
            .get(index)
            .copied()
            .unwrap_or(f64::NAN)
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        self.scores(items, None)
    }

    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        self.scores(items, cx.query_ref().map(cupel_core::Query::text))
    }

    /// The notes of [`Bm25Scorer`] (computed from the text: reports are
    /// rare, queries frequent).
    fn notes_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<(usize, ScoreNote)> {
        self.scorer.notes_in(items, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::Query;

    fn scored(s: &dyn Scorer, items: &[ContextItem], q: &str) -> Vec<f64> {
        let refs: Vec<&ContextItem> = items.iter().collect();
        let q = Query::new(q);
        s.score_all_in(&refs, &ScoreContext::new().query(Some(&q)))
    }

    /// The index gives the hand-derived four-document scores of
    /// `hand_derived_bm25_on_four_documents` (1, 2.02/3.38, 2.02/5.48, 0).
    #[test]
    fn indexed_scores_equal_the_hand_derived_ones() {
        let plain = Bm25Scorer::builder()
            .stemming(false)
            .build()
            .expect("valid");
        let s = IndexedBm25Scorer::new(plain.clone());
        let docs: Vec<ContextItem> = [
            "tokyo travel",
            "tokyo tokyo food",
            "paris travel guide book",
            "cats",
        ]
        .iter()
        .map(|t| ContextItem::new(*t, 1).expect("valid"))
        .collect();
        s.extend(&docs).expect("fits");
        let got = scored(&s, &docs, "tokyo travel");
        assert_eq!(got[0], 1.0);
        assert!((got[1] - 2.02 / 3.38).abs() < 1e-12, "{got:?}");
        assert!((got[2] - 2.02 / 5.48).abs() < 1e-12, "{got:?}");
        assert_eq!(got[3], 0.0);
    }

    /// Same scores as the plain scorer with stemming, neighbour lift,
    /// unindexed items in the run (analysed on the fly), a duplicate
    /// content and a subset of the indexed turns.
    #[test]
    fn indexed_equals_plain_on_mixed_runs() {
        let plain = Bm25Scorer::builder()
            .neighbours(0.5)
            .group_key("s")
            .build()
            .expect("valid");
        let s = IndexedBm25Scorer::new(plain.clone());
        let mk = |t: &str, g: &str| {
            ContextItem::builder(t, 1)
                .metadata("s", g)
                .build()
                .expect("valid")
        };
        let turns = vec![
            mk("Calvin travelled to Tokyo in May", "1"),
            mk("that sounds amazing", "1"),
            mk("my car broke down", "2"),
            mk("Tokyo travels again!", "2"),
            mk("that sounds amazing", "3"),
        ];
        s.extend(&turns[..4]).expect("fits");
        for q in ["when did Calvin travel to Tokyo", "car", "the", "東京", ""] {
            let a = scored(&s, &turns, q);
            let b = scored(&plain, &turns, q);
            assert!(
                a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-12),
                "{q}: {a:?} {b:?}"
            );
            let a = scored(&s, &turns[1..3], q);
            let b = scored(&plain, &turns[1..3], q);
            assert!(
                a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-12),
                "{q}: {a:?} {b:?}"
            );
        }
        assert_eq!(s.with_index(Bm25Index::len), 4);
        s.extend(&turns).expect("fits");
        // "that sounds amazing" is indexed once.
        assert_eq!(s.with_index(Bm25Index::len), 4);
    }

    #[test]
    fn memory_is_counted() {
        let s = IndexedBm25Scorer::new(Bm25Scorer::new());
        assert_eq!(s.with_index(Bm25Index::text_bytes), 0);
        let t = ContextItem::new("tokyo tokyo travel", 3).expect("valid");
        s.extend([&t]).expect("fits");
        // Two terms, two postings, one doc.
        assert_eq!(s.with_index(Bm25Index::text_bytes), 18);
        assert!(s.with_index(Bm25Index::heap_bytes) > 0);
    }
}
