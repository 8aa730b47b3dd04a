//! A persistent BM25 index a session extends as turns are appended: each
//! item is tokenised once, queries read the stored term frequencies.

use std::sync::{Arc, PoisonError, RwLock};

use hashbrown::HashTable;

use cupel_core::{ContextItem, CupelError, ScoreContext, ScoreNote, Scorer};

use super::{Analyzer, Bm25Scorer, cut};

/// One indexed text: its content hash, where its postings start in
/// [`Bm25Index::postings`] and how many index terms it has.
#[derive(Debug, Clone, Copy)]
struct Doc {
    /// The item's content hash (the key of [`Bm25Index::by_hash`]).
    hash: u64,
    /// Byte offset of its first posting.
    start: u32,
    /// Its length in index terms (`dl`).
    len: u32,
}

/// The index terms of every text a session added, each text analysed once.
///
/// Per distinct content (two turns with the same text share one entry):
/// its length in terms and its `(term id, term frequency)` postings, term
/// ids ascending, stored as LEB128 varints (the id as the gap from the
/// previous one), all docs in one byte array; terms are interned once for
/// the whole index, their text in one arena. Nothing corpus-wide is
/// stored: IDF and the mean length are computed at query time over the
/// items of the run, so scores through the index are those of
/// [`Bm25Scorer`] on the same items (to within floating-point summation
/// order). Items of a run that were never added are analysed on the fly.
///
/// Build one with [`IndexedBm25Scorer::new`], which shares it with the
/// scorer; add turns with [`IndexedBm25Scorer::extend`].
pub struct Bm25Index {
    analyzer: Analyzer,
    /// Every term's text, one after the other; term `i` ends at
    /// `term_ends[i]`.
    terms: String,
    term_ends: Vec<u32>,
    /// Interned terms: the ids, hashed by their text in `terms`.
    ids: HashTable<u32>,
    /// The docs' indices, hashed by their content hash.
    by_hash: HashTable<u32>,
    docs: Vec<Doc>,
    /// Every doc's postings, doc after doc (see the type's doc).
    postings: Vec<u8>,
    /// Bytes of content indexed (each distinct content once).
    text_bytes: usize,
}

/// The hasher of the index's tables (fixed: nothing iterates them).
fn hash_of<T: std::hash::Hash + ?Sized>(value: &T) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one(value)
}

/// Appends `v` as an LEB128 varint.
fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an LEB128 varint at `*at` (written by [`put_varint`]).
fn get_varint(bytes: &[u8], at: &mut usize) -> u32 {
    let mut v = 0u32;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        v |= u32::from(b & 0x7F) << shift;
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    v
}

/// The text of term `id` in an arena of terms (see [`Bm25Index`]).
fn term_text<'a>(terms: &'a str, ends: &[u32], id: u32) -> &'a str {
    let i = id as usize;
    let start = if i == 0 { 0 } else { ends[i - 1] as usize };
    &terms[start..ends[i] as usize]
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index")
            .field("docs", &self.docs.len())
            .field("terms", &self.term_ends.len())
            .field("posting_bytes", &self.postings.len())
            .field("text_bytes", &self.text_bytes)
            .finish()
    }
}

impl Bm25Index {
    fn new(analyzer: Analyzer) -> Self {
        Bm25Index {
            analyzer,
            terms: String::new(),
            term_ends: Vec::new(),
            ids: HashTable::new(),
            by_hash: HashTable::new(),
            docs: Vec::new(),
            postings: Vec::new(),
            text_bytes: 0,
        }
    }

    /// The id of `term`, if the index holds it.
    fn term_id(&self, term: &str) -> Option<u32> {
        let (terms, ends) = (&self.terms, &self.term_ends);
        self.ids
            .find(hash_of(term), |&id| term_text(terms, ends, id) == term)
            .copied()
    }

    /// The doc holding `hash`'s content, if indexed.
    fn doc_of(&self, hash: u64) -> Option<u32> {
        let docs = &self.docs;
        self.by_hash
            .find(hash, |&d| docs[d as usize].hash == hash)
            .copied()
    }

    /// Adds `item`'s content (nothing when the same content is indexed).
    ///
    /// # Errors
    /// [`CupelError::InvalidArgument`] when the index would exceed `u32`
    /// posting bytes, term bytes or terms (4 billion).
    pub fn push(&mut self, item: &ContextItem) -> Result<(), CupelError> {
        let hash = item.content_hash();
        if self.doc_of(hash).is_some() {
            return Ok(());
        }
        let too_big =
            || CupelError::InvalidArgument("the BM25 index is full (2^32 entries)".into());
        let start = u32::try_from(self.postings.len()).map_err(|_| too_big())?;
        let doc_id = u32::try_from(self.docs.len()).map_err(|_| too_big())?;
        let mut ids: Vec<u32> = Vec::new();
        let mut fail = false;
        let (table, terms, ends, analyzer) = (
            &mut self.ids,
            &mut self.terms,
            &mut self.term_ends,
            &self.analyzer,
        );
        analyzer.each(item.content(), |_, t| {
            let h = hash_of(t.as_str());
            let found = table
                .find(h, |&id| term_text(terms, ends, id) == t)
                .copied();
            let id = match found {
                Some(id) => id,
                None => {
                    let (Ok(id), Ok(end)) = (
                        u32::try_from(ends.len()),
                        u32::try_from(terms.len() + t.len()),
                    ) else {
                        fail = true;
                        return;
                    };
                    terms.push_str(&t);
                    ends.push(end);
                    table.insert_unique(h, id, |&k| hash_of(term_text(terms, ends, k)));
                    id
                }
            };
            ids.push(id);
        });
        if fail {
            return Err(too_big());
        }
        let len = u32::try_from(ids.len()).map_err(|_| too_big())?;
        ids.sort_unstable();
        let mut prev = 0u32;
        for run in ids.chunk_by(|a, b| a == b) {
            // A run's length is at most `len`, which fits.
            put_varint(&mut self.postings, run[0] - prev);
            put_varint(&mut self.postings, run.len() as u32);
            prev = run[0];
        }
        if u32::try_from(self.postings.len()).is_err() {
            self.postings.truncate(start as usize);
            return Err(too_big());
        }
        self.docs.push(Doc { hash, start, len });
        let docs = &self.docs;
        self.by_hash
            .insert_unique(hash, doc_id, |&d| docs[d as usize].hash);
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
        fn table<T>(t: &HashTable<T>) -> usize {
            // hashbrown: buckets = capacity * 8 / 7 rounded up to a power
            // of two, each a value and a control byte.
            let buckets = (t.capacity() * 8 / 7).next_power_of_two();
            buckets * (std::mem::size_of::<T>() + 1)
        }
        table(&self.ids)
            + self.terms.capacity()
            + self.term_ends.capacity() * std::mem::size_of::<u32>()
            + table(&self.by_hash)
            + self.docs.capacity() * std::mem::size_of::<Doc>()
            + self.postings.capacity()
    }

    /// Releases spare capacity (after a bulk load).
    pub fn shrink_to_fit(&mut self) {
        let (terms, ends, docs) = (&self.terms, &self.term_ends, &self.docs);
        self.ids
            .shrink_to_fit(|&k| hash_of(term_text(terms, ends, k)));
        self.by_hash.shrink_to_fit(|&d| docs[d as usize].hash);
        self.terms.shrink_to_fit();
        self.term_ends.shrink_to_fit();
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
                .filter_map(|(s, t)| self.term_id(t).map(|id| (id, s)))
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
            let len = match self.doc_of(item.content_hash()) {
                Some(d) => self.doc_tf(d, &known, &mut counts.tfs),
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
            let bytes = &self.postings[..end];
            let (mut at, mut id) = (doc.start as usize, 0u32);
            while at < end {
                id = id.wrapping_add(get_varint(bytes, &mut at));
                let c = get_varint(bytes, &mut at);
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
        crate::of_pass(&self.score_all(items), index)
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
