//! Lexical relevance to the run's query: Okapi BM25 over the candidates.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use cupel_core::{ContextItem, CupelError, ScoreContext, Scorer};
use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

mod index;
mod notes;

pub use index::{Bm25Index, IndexedBm25Scorer};

/// The short English stop list: function words that match almost every
/// turn and carry no topic (articles, pronouns, auxiliaries, common
/// prepositions and conjunctions, question words).
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "being", "but",
    "by", "can", "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or",
    "our", "she", "so", "that", "the", "their", "them", "they", "this", "to", "was", "we", "were",
    "what", "when", "where", "which", "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// The longest query text read, in bytes (1 MiB): a longer query is cut at
/// the last character boundary before it (documented, never a panic).
pub const MAX_QUERY_BYTES: usize = 1 << 20;

/// Whether `c` is written without spaces between words (Han ideographs,
/// Hiragana, Katakana): such text is indexed one character per token.
fn is_unspaced_script(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF       // Hiragana, Katakana
        | 0x3400..=0x4DBF     // CJK Extension A
        | 0x4E00..=0x9FFF     // CJK Unified Ideographs
        | 0xF900..=0xFAFF     // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F) // CJK Extensions B..F, Compatibility Supplement
}

/// The analyser shared by documents and queries: UAX #29 words, lower-cased
/// (full Unicode case folding of `char::to_lowercase`), stop words dropped,
/// then (when stemming) the English Snowball stem. Han and Kana characters
/// are one token each (unigrams). Emoji and punctuation are not words and
/// give no token. Accents are kept: `café` and `cafe` are different terms.
#[derive(Clone)]
struct Analyzer {
    stemmer: Option<std::sync::Arc<Stemmer>>,
}

impl Analyzer {
    fn new(stemming: bool) -> Self {
        Analyzer {
            stemmer: stemming.then(|| std::sync::Arc::new(Stemmer::create(Algorithm::English))),
        }
    }

    /// Calls `f(surface, term)` for every token of `text`: the folded word
    /// and its index term.
    fn each(&self, text: &str, mut f: impl FnMut(&str, String)) {
        for word in text.unicode_words() {
            if word.chars().any(is_unspaced_script) {
                let mut rest = String::new();
                for c in word.chars() {
                    if is_unspaced_script(c) {
                        if !rest.is_empty() {
                            self.word(&std::mem::take(&mut rest), &mut f);
                        }
                        let s = c.to_string();
                        f(&s, s.clone());
                    } else {
                        rest.push(c);
                    }
                }
                if !rest.is_empty() {
                    self.word(&rest, &mut f);
                }
            } else {
                self.word(word, &mut f);
            }
        }
    }

    fn word(&self, word: &str, f: &mut impl FnMut(&str, String)) {
        let folded = word.to_lowercase();
        // Possessives: "Calvin's" is "calvin".
        let folded = folded
            .strip_suffix("'s")
            .or_else(|| folded.strip_suffix("’s"))
            .map_or(folded.clone(), str::to_string);
        if STOP_WORDS.binary_search(&folded.as_str()).is_ok() {
            return;
        }
        let term = match &self.stemmer {
            Some(s) => s.stem(&folded).into_owned(),
            None => folded.clone(),
        };
        f(&folded, term);
    }

    fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.each(text, |_, t| out.push(t));
        out
    }
}

/// Splits `text` into the index terms the BM25 scorer uses (see
/// [`Bm25Scorer`] for the analysis), with or without stemming.
///
/// ```
/// use cupel_scorers::bm25_terms;
/// assert_eq!(bm25_terms("The travellers travelled to Tokyo!", true), ["travel", "travel", "tokyo"]);
/// assert_eq!(bm25_terms("東京へ", false), ["東", "京", "へ"]);
/// ```
pub fn bm25_terms(text: &str, stemming: bool) -> Vec<String> {
    Analyzer::new(stemming).terms(text)
}

/// Lexical relevance to the query: Okapi BM25 over the scored items, the
/// best item 1.0.
///
/// # Scoring
/// For the query's distinct terms `q` and an item of `dl` terms, among `N`
/// items of mean length `avgdl`, `n(q)` of which hold `q`:
///
/// ```text
/// IDF(q)   = ln((N - n(q) + 0.5) / (n(q) + 0.5) + 1)
/// raw(d)   = Σ_q IDF(q) · tf(q,d) · (k1 + 1) / (tf(q,d) + k1 · (1 - b + b · dl / avgdl))
/// score(d) = raw(d) / max_d raw(d)          (0 for every item when the max is 0)
/// ```
///
/// `k1` (default 1.2) saturates repeated terms; `b` (default 0.75) is how
/// far long items are penalised. IDF is computed from the candidates of the
/// run (no external corpus). Dividing by the maximum puts the scores in
/// `[0, 1]` so BM25 composes in a [`CompositeScorer`](crate::CompositeScorer).
///
/// # Analysis
/// UAX #29 word segmentation (`unicode-segmentation`), lower case, a short
/// English stop list, possessive `'s` dropped, English Snowball stemming
/// (`rust-stemmers`: the reference algorithm, maintained, no data files;
/// it merges inflections — "travelled", "travels", "travel" — which plain
/// word matching misses; off with [`Bm25ScorerBuilder::stemming`]). Han
/// and Kana characters are one term each (unigrams: no dictionary needed,
/// and a two-character word still matches on both characters). Emoji and
/// punctuation give no term; accents are kept.
///
/// # The query
/// The run's query ([`RunOptions::query`] in cupel-pipeline, read through
/// [`Scorer::score_all_in`]) wins; otherwise the scorer's own
/// ([`Bm25ScorerBuilder::query`]); with neither, or a query without terms
/// (empty, only stop words, only emoji), every item scores 0. A query longer
/// than [`MAX_QUERY_BYTES`] is read up to that length.
///
/// # Context around a hit
/// With [`Bm25ScorerBuilder::neighbours`]`(share)`, an item takes at least
/// `share` times the raw score of the item just before or just after it
/// (in input order), when both have the same value of the
/// [`group_key`](Bm25ScorerBuilder::group_key) metadata (or always, with no
/// group key): the turn after the one that matches the question is often
/// the one that answers it.
///
/// [`RunOptions::query`]: https://docs.rs/cupel-rs-pipeline
///
/// ```
/// use cupel_core::{ContextItem, Query, ScoreContext, Scorer};
/// use cupel_scorers::Bm25Scorer;
///
/// let a = ContextItem::new("I travelled to Tokyo last May", 7)?;
/// let b = ContextItem::new("The weather was nice", 5)?;
/// let q = Query::new("When did Calvin travel to Tokyo?");
/// let scores = Bm25Scorer::new().score_all_in(&[&a, &b], &ScoreContext::new().query(Some(&q)));
/// assert_eq!(scores, vec![1.0, 0.0]);
/// assert_eq!(Bm25Scorer::new().matched_terms(q.text(), a.content()), ["travel", "tokyo"]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct Bm25Scorer {
    k1: f64,
    b: f64,
    analyzer: Analyzer,
    query: Option<String>,
    neighbours: f64,
    group_key: Option<String>,
}

impl fmt::Debug for Bm25Scorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bm25Scorer")
            .field("k1", &self.k1)
            .field("b", &self.b)
            .field("stemming", &self.analyzer.stemmer.is_some())
            .field("query", &self.query)
            .field("neighbours", &self.neighbours)
            .field("group_key", &self.group_key)
            .finish()
    }
}

impl Default for Bm25Scorer {
    fn default() -> Self {
        Self::new()
    }
}

impl Bm25Scorer {
    /// The default k1.
    pub const DEFAULT_K1: f64 = 1.2;
    /// The default b.
    pub const DEFAULT_B: f64 = 0.75;

    /// k1 1.2, b 0.75, stemming, no query of its own, no neighbour lift.
    pub fn new() -> Self {
        Bm25Scorer {
            k1: Self::DEFAULT_K1,
            b: Self::DEFAULT_B,
            analyzer: Analyzer::new(true),
            query: None,
            neighbours: 0.0,
            group_key: None,
        }
    }

    /// Starts a [`Bm25ScorerBuilder`].
    pub fn builder() -> Bm25ScorerBuilder {
        Bm25ScorerBuilder::new()
    }

    /// The scorer's own query, used when a run carries none.
    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// The words of `query` (lower-cased, in query order, each once) whose
    /// index term occurs in `content`: what makes an item relevant, for
    /// explanations ("relevance 0.82: matched tokyo, travel").
    pub fn matched_terms(&self, query: &str, content: &str) -> Vec<String> {
        let doc: BTreeSet<String> = self.analyzer.terms(content).into_iter().collect();
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        self.analyzer.each(cut(query), |surface, term| {
            if doc.contains(&term) && seen.insert(term) {
                out.push(surface.to_string());
            }
        });
        out
    }

    /// Raw BM25 of every item for `query` (before the neighbour lift and
    /// normalisation).
    fn raw(&self, items: &[&ContextItem], query: &str) -> Vec<f64> {
        let q: BTreeSet<String> = self.analyzer.terms(cut(query)).into_iter().collect();
        if q.is_empty() || items.is_empty() {
            return vec![0.0; items.len()];
        }
        let slot: BTreeMap<&str, usize> =
            q.iter().enumerate().map(|(i, t)| (t.as_str(), i)).collect();
        // Per item: its length in terms and its query-term frequencies.
        let mut lens = Vec::with_capacity(items.len());
        let mut tfs: Vec<Vec<(usize, u32)>> = Vec::with_capacity(items.len());
        let mut df = vec![0u32; q.len()];
        for item in items {
            let mut len = 0u32;
            let mut tf: Vec<(usize, u32)> = Vec::new();
            self.analyzer.each(item.content(), |_, t| {
                len += 1;
                if let Some(&s) = slot.get(t.as_str()) {
                    match tf.iter_mut().find(|(k, _)| *k == s) {
                        Some((_, c)) => *c += 1,
                        None => tf.push((s, 1)),
                    }
                }
            });
            for &(s, _) in &tf {
                df[s] += 1;
            }
            lens.push(f64::from(len));
            tfs.push(tf);
        }
        let n = items.len() as f64;
        let avgdl = lens.iter().sum::<f64>() / n;
        let idf: Vec<f64> = df
            .iter()
            .map(|&d| {
                let d = f64::from(d);
                ((n - d + 0.5) / (d + 0.5) + 1.0).ln()
            })
            .collect();
        tfs.iter()
            .zip(&lens)
            .map(|(tf, &dl)| {
                let norm = if avgdl > 0.0 {
                    self.k1 * (1.0 - self.b + self.b * dl / avgdl)
                } else {
                    self.k1
                };
                tf.iter()
                    .map(|&(s, c)| {
                        let c = f64::from(c);
                        idf[s] * c * (self.k1 + 1.0) / (c + norm)
                    })
                    .fold(0.0, |a, x| a + x)
            })
            .collect()
    }

    /// The neighbour lift: `max(own, share * neighbour)` over the previous
    /// and next item of the same group.
    fn lift(&self, items: &[&ContextItem], raw: &[f64]) -> Vec<f64> {
        if self.neighbours <= 0.0 {
            return raw.to_vec();
        }
        let group = |i: usize| {
            self.group_key
                .as_ref()
                .map(|k| items[i].metadata().get(k).map(String::as_str))
        };
        (0..raw.len())
            .map(|i| {
                let mut s = raw[i];
                for j in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
                    if j < raw.len() && group(i) == group(j) {
                        s = s.max(self.neighbours * raw[j]);
                    }
                }
                s
            })
            .collect()
    }

    fn scores(&self, items: &[&ContextItem], query: Option<&str>) -> Vec<f64> {
        let Some(query) = query.or(self.query.as_deref()) else {
            return vec![0.0; items.len()];
        };
        let raw = self.raw(items, query);
        let lifted = self.lift(items, &raw);
        let max = lifted.iter().copied().fold(0.0_f64, f64::max);
        if max > 0.0 && max.is_finite() {
            lifted.into_iter().map(|s| s / max).collect()
        } else {
            vec![0.0; items.len()]
        }
    }
}

/// `query` cut to at most [`MAX_QUERY_BYTES`], on a character boundary.
fn cut(query: &str) -> &str {
    if query.len() <= MAX_QUERY_BYTES {
        return query;
    }
    let mut end = MAX_QUERY_BYTES;
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    &query[..end]
}

impl Scorer for Bm25Scorer {
    /// The whole pass's score of `items[index]` (BM25 is relative: IDF and
    /// the normalisation depend on every item).
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        self.score_all(items)
            .get(index)
            .copied()
            .unwrap_or(f64::NAN)
    }

    /// Scores against the scorer's own query (all 0 without one).
    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        self.scores(items, None)
    }

    /// Scores against the run's query, or the scorer's own without one.
    fn score_all_in(&self, items: &[&ContextItem], cx: &ScoreContext<'_>) -> Vec<f64> {
        self.scores(items, cx.query_ref().map(cupel_core::Query::text))
    }

    /// Per item scoring above 0: its score and the query words it matched
    /// (most contributing first, ties alphabetical).
    fn notes_in(
        &self,
        items: &[&ContextItem],
        cx: &ScoreContext<'_>,
    ) -> Vec<(usize, cupel_core::ScoreNote)> {
        self.notes(items, cx.query_ref().map(cupel_core::Query::text))
    }
}

/// Builds a [`Bm25Scorer`]; [`build`](Self::build) validates the parameters.
#[derive(Debug, Clone)]
pub struct Bm25ScorerBuilder {
    k1: f64,
    b: f64,
    stemming: bool,
    query: Option<String>,
    neighbours: f64,
    group_key: Option<String>,
}

impl Default for Bm25ScorerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl Bm25ScorerBuilder {
    /// The defaults of [`Bm25Scorer::new`].
    pub fn new() -> Self {
        Bm25ScorerBuilder {
            k1: Bm25Scorer::DEFAULT_K1,
            b: Bm25Scorer::DEFAULT_B,
            stemming: true,
            query: None,
            neighbours: 0.0,
            group_key: None,
        }
    }

    /// Term-frequency saturation, finite and `>= 0` (default 1.2).
    #[must_use]
    pub fn k1(mut self, k1: f64) -> Self {
        self.k1 = k1;
        self
    }

    /// Length normalisation, in `[0, 1]` (default 0.75).
    #[must_use]
    pub fn b(mut self, b: f64) -> Self {
        self.b = b;
        self
    }

    /// English Snowball stemming (default on).
    #[must_use]
    pub fn stemming(mut self, on: bool) -> Self {
        self.stemming = on;
        self
    }

    /// The scorer's own query, used by runs that carry none.
    #[must_use]
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// The neighbour lift: a hit gives its previous and next item at least
    /// `share` (in `[0, 1]`, default 0: off) of its raw score.
    #[must_use]
    pub fn neighbours(mut self, share: f64) -> Self {
        self.neighbours = share;
        self
    }

    /// The metadata key whose value groups items (a session, a thread):
    /// the lift stays inside a group. Without it, every item is one group.
    #[must_use]
    pub fn group_key(mut self, key: impl Into<String>) -> Self {
        self.group_key = Some(key.into());
        self
    }

    /// The scorer.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] for `k1` negative or not finite, `b` or
    /// `neighbours` outside `[0, 1]`, or a query over [`MAX_QUERY_BYTES`].
    pub fn build(self) -> Result<Bm25Scorer, CupelError> {
        if !(self.k1.is_finite() && self.k1 >= 0.0) {
            return Err(CupelError::ScorerConfig(format!(
                "bm25 k1 must be finite and >= 0, got {}",
                self.k1
            )));
        }
        if !(0.0..=1.0).contains(&self.b) {
            return Err(CupelError::ScorerConfig(format!(
                "bm25 b must be in [0, 1], got {}",
                self.b
            )));
        }
        if !(0.0..=1.0).contains(&self.neighbours) {
            return Err(CupelError::ScorerConfig(format!(
                "bm25 neighbours must be in [0, 1], got {}",
                self.neighbours
            )));
        }
        if let Some(q) = &self.query
            && q.len() > MAX_QUERY_BYTES
        {
            return Err(CupelError::ScorerConfig(format!(
                "bm25 query is {} bytes, over the {MAX_QUERY_BYTES}-byte limit",
                q.len()
            )));
        }
        Ok(Bm25Scorer {
            k1: self.k1,
            b: self.b,
            analyzer: Analyzer::new(self.stemming),
            query: self.query,
            neighbours: self.neighbours,
            group_key: self.group_key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::Query;

    fn items(texts: &[&str]) -> Vec<ContextItem> {
        texts
            .iter()
            .map(|t| ContextItem::new(*t, 1).expect("valid item"))
            .collect()
    }

    fn run(s: &Bm25Scorer, texts: &[&str], query: &str) -> Vec<f64> {
        let owned = items(texts);
        let refs: Vec<&ContextItem> = owned.iter().collect();
        let q = Query::new(query);
        s.score_all_in(&refs, &ScoreContext::new().query(Some(&q)))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn stop_list_is_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    /// Four documents, query "tokyo travel", no stemming, k1 1.2, b 0.75.
    ///
    /// Terms: d0 "tokyo travel" (dl 2), d1 "tokyo tokyo food" (dl 3),
    /// d2 "paris travel guide book" (dl 4), d3 "cats" (dl 1).
    /// N = 4, avgdl = 10 / 4 = 2.5.
    /// IDF(tokyo) = IDF(travel) = ln((4 - 2 + 0.5) / (2 + 0.5) + 1) = ln 2.
    /// norm(dl) = k1 (1 - b + b dl / avgdl):
    ///   d0: 1.2 (0.25 + 0.75 * 2/2.5) = 1.02; d1: 1.2 (0.25 + 0.9) = 1.38;
    ///   d2: 1.2 (0.25 + 1.2) = 1.74.
    /// raw(d0) = ln2 (1 * 2.2 / (1 + 1.02)) * 2 = ln2 * 2.178218 (both terms)
    /// raw(d1) = ln2 * 2 * 2.2 / (2 + 1.38)     = ln2 * 1.301775
    /// raw(d2) = ln2 * 1 * 2.2 / (1 + 1.74)     = ln2 * 0.802920
    /// raw(d3) = 0.
    /// Divided by the max (d0): 1, 0.597633, 0.368613, 0.
    #[test]
    fn hand_derived_bm25_on_four_documents() {
        let s = Bm25Scorer::builder()
            .stemming(false)
            .build()
            .expect("valid");
        let docs = [
            "tokyo travel",
            "tokyo tokyo food",
            "paris travel guide book",
            "cats",
        ];
        let got = s.raw(&items(&docs).iter().collect::<Vec<_>>(), "tokyo travel");
        let ln2 = std::f64::consts::LN_2;
        assert!(close(got[0], ln2 * 2.0 * 2.2 / 2.02), "{got:?}");
        assert!(close(got[1], ln2 * 4.4 / 3.38), "{got:?}");
        assert!(close(got[2], ln2 * 2.2 / 2.74), "{got:?}");
        assert_eq!(got[3], 0.0);
        let norm = run(&s, &docs, "tokyo travel");
        assert_eq!(norm[0], 1.0);
        assert!(close(norm[1], (4.4 / 3.38) / (4.4 / 2.02)), "{norm:?}");
        assert!(close(norm[1], 0.597_633), "{norm:?}");
        assert!(close(norm[2], 0.368_613), "{norm:?}");
        assert_eq!(norm[3], 0.0);
    }

    #[test]
    fn segmentation_folding_stop_words_and_stemming() {
        assert_eq!(
            bm25_terms("Calvin's TRAVELS: he travelled, traveling!", true),
            ["calvin", "travel", "travel", "travel"]
        );
        assert_eq!(bm25_terms("Running runs ran", true), ["run", "run", "ran"]);
        assert_eq!(bm25_terms("Calvin's TRAVELS", false), ["calvin", "travels"]);
        assert!(bm25_terms("the and of to", true).is_empty());
    }

    #[test]
    fn cjk_is_one_term_per_character() {
        assert_eq!(
            bm25_terms("我去东京旅行", true),
            ["我", "去", "东", "京", "旅", "行"]
        );
        assert_eq!(
            bm25_terms("東京タワー", false),
            ["東", "京", "タ", "ワ", "ー"]
        );
        // Hangul is spaced: whole words.
        assert_eq!(bm25_terms("도쿄 여행", false), ["도쿄", "여행"]);
        let s = Bm25Scorer::new();
        let got = run(&s, &["我去东京旅行", "我喜欢猫", "天气很好"], "东京");
        assert_eq!(got, vec![1.0, 0.0, 0.0]);
    }

    #[test]
    fn accents_are_kept_and_case_folded() {
        assert_eq!(bm25_terms("CAFÉ Zoë", false), ["café", "zoë"]);
        let s = Bm25Scorer::new();
        let got = run(
            &s,
            &["un café à Paris", "a cafe in Rome", "nothing"],
            "Café",
        );
        assert_eq!(got, vec![1.0, 0.0, 0.0]);
    }

    #[test]
    fn emoji_give_no_terms_and_never_panic() {
        assert!(bm25_terms("🎉🍣👍🏽", true).is_empty());
        assert_eq!(bm25_terms("sushi🍣night", true), ["sushi", "night"]);
        let s = Bm25Scorer::new();
        assert_eq!(run(&s, &["🍣 sushi", "🎉"], "🍣"), vec![0.0, 0.0]);
        assert_eq!(run(&s, &["🍣 sushi", "🎉"], "sushi 🍣"), vec![1.0, 0.0]);
    }

    #[test]
    fn empty_or_missing_query_scores_zero() {
        let s = Bm25Scorer::new();
        assert_eq!(run(&s, &["a b", "c"], ""), vec![0.0, 0.0]);
        assert_eq!(run(&s, &["a b", "c"], "the of"), vec![0.0, 0.0]);
        let owned = items(&["tokyo"]);
        let refs: Vec<&ContextItem> = owned.iter().collect();
        assert_eq!(s.score_all(&refs), vec![0.0]);
        assert!(run(&s, &[], "tokyo").is_empty());
    }

    #[test]
    fn own_query_is_used_when_the_run_has_none() {
        let s = Bm25Scorer::builder().query("tokyo").build().expect("valid");
        let owned = items(&["tokyo trip", "paris trip"]);
        let refs: Vec<&ContextItem> = owned.iter().collect();
        assert_eq!(s.score_all(&refs), vec![1.0, 0.0]);
        assert_eq!(s.score(1, &refs), 0.0);
        // The run's query wins.
        assert_eq!(
            run(&s, &["tokyo trip", "paris trip"], "paris"),
            vec![0.0, 1.0]
        );
    }

    #[test]
    fn a_one_megabyte_query_is_read_without_panic() {
        let big = "tokyo travel ".repeat(90_000); // 1.17 MB
        let s = Bm25Scorer::new();
        let got = run(&s, &["tokyo", "x"], &big);
        assert_eq!(got, vec![1.0, 0.0]);
        // Cut on a char boundary.
        let wide = "東".repeat(400_000); // 1.2 MB, 3 bytes each
        assert!(cut(&wide).len() <= MAX_QUERY_BYTES);
        assert_eq!(run(&s, &["東京"], &wide), vec![1.0]);
        let e = Bm25Scorer::builder().query(big).build().unwrap_err();
        assert!(e.to_string().contains("byte limit"), "{e}");
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        for b in [
            Bm25Scorer::builder().k1(-1.0),
            Bm25Scorer::builder().k1(f64::NAN),
            Bm25Scorer::builder().b(1.5),
            Bm25Scorer::builder().neighbours(2.0),
        ] {
            assert!(matches!(b.build(), Err(CupelError::ScorerConfig(_))));
        }
    }

    #[test]
    fn matched_terms_name_the_query_words() {
        let s = Bm25Scorer::new();
        assert_eq!(
            s.matched_terms(
                "When did Calvin first travel to Tokyo?",
                "Calvin's travels in Tokyo"
            ),
            ["calvin", "travel", "tokyo"]
        );
        assert!(s.matched_terms("", "anything").is_empty());
    }

    /// Neighbour lift by hand: query "tokyo", items in order
    /// s1: "trip to tokyo", s1: "it was great", s2: "new job", and no stemming.
    /// Only item 0 holds "tokyo": raw = (r, 0, 0). With share 0.5 and group
    /// key "session", item 1 (same session) gets 0.5 r, item 2 (another
    /// session) keeps 0. Normalised: 1, 0.5, 0.
    #[test]
    fn neighbour_lift_by_hand() {
        let s = Bm25Scorer::builder()
            .neighbours(0.5)
            .group_key("session")
            .build()
            .expect("valid");
        let mk = |t: &str, sess: &str| {
            ContextItem::builder(t, 1)
                .metadata("session", sess)
                .build()
                .expect("valid")
        };
        let owned = [
            mk("trip to tokyo", "1"),
            mk("it was great", "1"),
            mk("tokyo again", "2"),
            mk("new job", "2"),
            mk("unrelated", "3"),
        ];
        let refs: Vec<&ContextItem> = owned.iter().collect();
        let q = Query::new("tokyo trip");
        let got = s.score_all_in(&refs, &ScoreContext::new().query(Some(&q)));
        let raw = s.raw(&refs, "tokyo trip");
        assert_eq!(got[0], 1.0);
        assert!(close(got[1], 0.5), "{got:?}");
        assert!(close(got[2], raw[2] / raw[0]), "{got:?}");
        assert!(close(got[3], 0.5 * raw[2] / raw[0]), "{got:?}");
        assert_eq!(got[4], 0.0);
    }

    #[test]
    fn deterministic() {
        let s = Bm25Scorer::new();
        let docs = ["tokyo travel", "food in tokyo", "paris"];
        assert_eq!(run(&s, &docs, "tokyo food"), run(&s, &docs, "tokyo food"));
    }
}
