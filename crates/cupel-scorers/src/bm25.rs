//! Lexical relevance to the run's query: Okapi BM25 over the candidates.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use cupel_core::{ContextItem, CupelError, ScoreContext, Scorer};
use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

mod ascii;
mod index;
mod notes;
mod terms;

use terms::{Docs, Terms};

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

/// A word lower-cased, a possessive `'s` dropped; `None` for a stop word.
fn fold(word: &str) -> Option<String> {
    let mut folded = if word.is_ascii() {
        word.to_ascii_lowercase()
    } else {
        word.to_lowercase()
    };
    // Possessives: "Calvin's" is "calvin".
    if let Some(stem) = folded
        .strip_suffix("'s")
        .or_else(|| folded.strip_suffix("’s"))
    {
        folded.truncate(stem.len());
    }
    STOP_WORDS
        .binary_search(&folded.as_str())
        .is_err()
        .then_some(folded)
}

/// [`fold`] into `buf` (cleared first); `false` for a stop word.
fn fold_into(word: &str, buf: &mut String) -> bool {
    buf.clear();
    if word.is_ascii() {
        buf.push_str(word);
        buf.make_ascii_lowercase();
    } else {
        buf.push_str(&word.to_lowercase());
    }
    if let Some(stem) = buf.strip_suffix("'s").or_else(|| buf.strip_suffix("’s")) {
        let len = stem.len();
        buf.truncate(len);
    }
    STOP_WORDS.binary_search(&buf.as_str()).is_err()
}

/// Whether the ASCII `word` is a stop word once folded: what [`fold`]
/// decides, without allocating (every stop word has at most
/// [`STOP_MAX`] bytes, and folding an ASCII word only drops a final `'s`).
fn is_stop_ascii(word: &[u8]) -> bool {
    let n = if word.len() >= 2 && word[word.len() - 2..].eq_ignore_ascii_case(b"'s") {
        word.len() - 2
    } else {
        word.len()
    };
    if n == 0 || n > STOP_MAX {
        return false;
    }
    let mut key = 0u64;
    for &b in &word[..n] {
        key = key << 8 | u64::from(b.to_ascii_lowercase());
    }
    STOP_KEYS.binary_search(&key).is_ok()
}

/// A word of at most 8 bytes as one number, its bytes in order (no two
/// words of letters share one).
const fn pack(word: &[u8]) -> u64 {
    let mut key = 0u64;
    let mut i = 0;
    while i < word.len() {
        key = key << 8 | word[i] as u64;
        i += 1;
    }
    key
}

/// [`STOP_WORDS`] packed ([`pack`]) and sorted, for [`is_stop_ascii`].
static STOP_KEYS: [u64; STOP_WORDS.len()] = {
    let mut keys = [0u64; STOP_WORDS.len()];
    let mut i = 0;
    while i < keys.len() {
        // Insertion sort (a const context has no `sort`).
        let key = pack(STOP_WORDS[i].as_bytes());
        let mut j = i;
        while j > 0 && keys[j - 1] > key {
            keys[j] = keys[j - 1];
            j -= 1;
        }
        keys[j] = key;
        i += 1;
    }
    keys
};

/// The length of the longest stop word.
const STOP_MAX: usize = 5;

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
///
/// Clones share a memo of the words analysed so far (word as written ->
/// index term, and the term id in the last call, so a call looks each word
/// up once; at most [`MEMO_WORDS`] words): folding and stemming are pure
/// functions of the word, so the memo changes no term, and a scorer that
/// sees the same turns query after query stems each distinct word once.
#[derive(Clone)]
struct Analyzer {
    stemmer: Option<std::sync::Arc<Stemmer>>,
    memo: std::sync::Arc<std::sync::Mutex<terms::Memo>>,
}

/// The most words an [`Analyzer`]'s memo holds (later words are analysed
/// on every sight).
const MEMO_WORDS: usize = 1 << 18;

impl Analyzer {
    fn new(stemming: bool) -> Self {
        Analyzer {
            stemmer: stemming.then(|| std::sync::Arc::new(Stemmer::create(Algorithm::English))),
            memo: std::sync::Arc::default(),
        }
    }

    /// Calls `f(piece, single)` for every piece of `text` to analyse, in
    /// order: each UAX #29 word, except that inside a word holding Han or
    /// Kana each such character is a piece of its own (`single`) and each
    /// run of other characters is one piece. Pieces borrow from `text`.
    fn pieces<'t>(text: &'t str, mut f: impl FnMut(&'t str, bool)) {
        if text.is_ascii() {
            // The same words as `unicode_words`, without its tables.
            ascii::words(text, |w| f(w, false));
            return;
        }
        for word in text.unicode_words() {
            if word.is_ascii() || !word.chars().any(is_unspaced_script) {
                f(word, false);
                continue;
            }
            let mut rest: Option<usize> = None;
            for (i, c) in word.char_indices() {
                if is_unspaced_script(c) {
                    if let Some(s) = rest.take() {
                        f(&word[s..i], false);
                    }
                    f(&word[i..i + c.len_utf8()], true);
                } else if rest.is_none() {
                    rest = Some(i);
                }
            }
            if let Some(s) = rest {
                f(&word[s..], false);
            }
        }
    }

    /// Calls `f(surface, term)` for every token of `text`: the folded word
    /// and its index term.
    fn each(&self, text: &str, mut f: impl FnMut(&str, String)) {
        Self::pieces(text, |piece, single| {
            if single {
                f(piece, piece.to_string());
            } else if let Some((folded, term)) = self.word_term(piece) {
                f(&folded, term);
            }
        });
    }

    /// A word's folded form and index term; `None` for a stop word.
    fn word_term(&self, word: &str) -> Option<(String, String)> {
        let folded = fold(word)?;
        let term = self.stem(&folded).unwrap_or_else(|| folded.clone());
        Some((folded, term))
    }

    /// A word's index term, written through `buf` (no allocation for an
    /// ASCII word the stemmer leaves as it is); `None` for a stop word.
    /// The same term as [`word_term`](Self::word_term).
    fn term_in<'b>(&self, word: &str, buf: &'b mut String) -> Option<Cow<'b, str>> {
        if !fold_into(word, buf) {
            return None;
        }
        let folded: &'b str = buf;
        Some(match &self.stemmer {
            Some(s) if !folded.bytes().all(|b| b.is_ascii_digit()) => s.stem(folded),
            _ => Cow::Borrowed(folded),
        })
    }

    /// The stem of a folded word; `None` when it is the word itself.
    fn stem(&self, folded: &str) -> Option<String> {
        let s = self.stemmer.as_ref()?;
        // The English Snowball rules only rewrite letters and apostrophes:
        // a number is its own stem.
        if folded.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        match s.stem(folded) {
            std::borrow::Cow::Borrowed(b) if b == folded => None,
            t => Some(t.into_owned()),
        }
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
/// # Memory
/// A scorer and its clones remember the words they analysed (the word,
/// its term and its id in the last call) so that scoring the same turns
/// again stems nothing: at most 262,144 distinct words, about 35 MB at the
/// limit on short words; words past the limit are analysed on every sight.
/// Drop the scorer to release it (`spec/13-clarifications.md`, RC-6).
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
    feedback: Bm25Feedback,
    group_weight: f64,
}

/// Pseudo-relevance feedback (query expansion) for [`Bm25Scorer`]: after a
/// first pass, the `docs` best-scoring items vote for their terms and the
/// `terms` best terms that are not in the query join it with at most
/// `weight` (in `[0, 1]`; 0 is off) — the classic remedy for a question
/// that names a thing by other words than the turn that holds it
/// (Lavrenko and Croft's relevance model, "RM3").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Feedback {
    /// The weight of the best feedback term (the query's own terms weigh 1).
    pub weight: f64,
    /// How many first-pass documents vote (the best-scoring ones).
    pub docs: usize,
    /// How many terms join the query.
    pub terms: usize,
}

impl Bm25Feedback {
    /// No feedback.
    pub const OFF: Bm25Feedback = Bm25Feedback {
        weight: 0.0,
        docs: 0,
        terms: 0,
    };
    /// The `recall` preset's feedback: weight 0.3, 10 documents, 10 terms.
    pub const STANDARD: Bm25Feedback = Bm25Feedback {
        weight: 0.3,
        docs: 10,
        terms: 10,
    };
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
            .field("feedback", &self.feedback)
            .field("group_weight", &self.group_weight)
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
            feedback: Bm25Feedback::OFF,
            group_weight: 0.0,
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

    /// The query's words and their index terms, `(word, term)`, each term
    /// once, in query order: analyse a query once, then test many items'
    /// terms ([`bm25_terms`]) against it (what
    /// [`matched_terms`](Self::matched_terms) does for one item).
    pub fn query_words(&self, query: &str) -> Vec<(String, String)> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        self.analyzer.each(cut(query), |surface, term| {
            if seen.insert(term.clone()) {
                out.push((surface.to_string(), term));
            }
        });
        out
    }

    /// Raw BM25 of every item for `query` (before the neighbour lift and
    /// normalisation), without feedback.
    #[cfg(test)]
    fn raw(&self, items: &[&ContextItem], query: &str) -> Vec<f64> {
        let mut table = Terms::default();
        let docs = table.docs(&self.analyzer, items);
        let q = table.query(&self.analyzer, query);
        self.weighted(&docs, &q, table.len())
    }

    /// BM25 of every document for the weighted query `q` (`(term id,
    /// weight)`, each term once, ids below `n_terms`): each term's
    /// contribution is multiplied by its weight (1 for the query's own
    /// terms, less for feedback terms). An item's contributions are summed
    /// in the order its terms first occur.
    fn weighted(&self, docs: &Docs, q: &[(usize, f64)], n_terms: usize) -> Vec<f64> {
        if q.is_empty() || docs.is_empty() {
            return vec![0.0; docs.len()];
        }
        let counts = count(docs, q, n_terms);
        let n = docs.len() as f64;
        let avgdl = docs.iter().map(|d| d.len() as f64).sum::<f64>() / n;
        let idf: Vec<f64> = counts.df.iter().map(|&d| idf(n, f64::from(d))).collect();
        let mut start = 0;
        counts
            .ends
            .iter()
            .zip(docs.iter())
            .map(|(&end, doc)| {
                let dl = doc.len() as f64;
                let norm = if avgdl > 0.0 {
                    self.k1 * (1.0 - self.b + self.b * dl / avgdl)
                } else {
                    self.k1
                };
                let tf = &counts.tfs[start..end];
                start = end;
                tf.iter()
                    .map(|&(s, c)| {
                        let c = f64::from(c);
                        q[s].1 * idf[s] * c * (self.k1 + 1.0) / (c + norm)
                    })
                    .fold(0.0, |a, x| a + x)
            })
            .collect()
    }

    /// Pseudo-relevance feedback (RM3-style query expansion): the
    /// `feedback.docs` best documents of the first pass vote for their
    /// terms (`Σ raw(d)/max · tf(t,d)/|d| · IDF(t)`), and the
    /// `feedback.terms` best terms not in the query join it with weight
    /// `feedback.weight · vote / best vote`. Ties: the smaller term.
    fn expand(
        &self,
        table: &Terms<'_>,
        docs: &Docs,
        raw: &[f64],
        q: &[(usize, f64)],
    ) -> Vec<(usize, f64)> {
        let fb = self.feedback;
        let mut order: Vec<usize> = (0..raw.len()).filter(|&i| raw[i] > 0.0).collect();
        order.sort_by(|&a, &b| raw[b].total_cmp(&raw[a]).then(a.cmp(&b)));
        order.truncate(fb.docs);
        let Some(&best) = order.first() else {
            return q.to_vec();
        };
        let top = raw[best];
        let n_terms = table.len();
        let mut in_query = vec![false; n_terms];
        for &(t, _) in q {
            in_query[t] = true;
        }
        // Each candidate term's share of the feedback documents.
        let mut share = vec![0.0_f64; n_terms];
        let mut candidate = vec![false; n_terms];
        let mut candidates = Vec::new();
        for &d in &order {
            let doc = docs.doc(d);
            let len = doc.len().max(1) as f64;
            for &t in doc.iter().filter(|&&t| !in_query[t]) {
                if !candidate[t] {
                    candidate[t] = true;
                    candidates.push(t);
                }
                share[t] += raw[d] / top / len;
            }
        }
        let df = candidate_df(docs, &candidate);
        let n = docs.len() as f64;
        let mut votes: Vec<(usize, f64)> = candidates
            .into_iter()
            .map(|t| (t, share[t] * idf(n, f64::from(df[t]))))
            .collect();
        votes.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| table.name(a.0).cmp(table.name(b.0)))
        });
        votes.truncate(fb.terms);
        let mut out = q.to_vec();
        if let Some(&(_, lead)) = votes.first()
            && lead > 0.0
        {
            out.extend(votes.into_iter().map(|(t, v)| (t, fb.weight * v / lead)));
        }
        out
    }

    /// The group of item `i` (its `group_key` value; `None` without a key
    /// or without the value).
    fn group<'a>(&self, items: &[&'a ContextItem], i: usize) -> Option<&'a str> {
        self.group_key
            .as_ref()
            .and_then(|k| items[i].metadata().get(k).map(String::as_str))
    }

    /// The group prior: BM25 of each group's concatenated terms (the
    /// groups as documents), divided by the best group's, per item.
    fn group_prior(
        &self,
        items: &[&ContextItem],
        docs: &Docs,
        q: &[(usize, f64)],
        n_terms: usize,
    ) -> Vec<f64> {
        let mut index: BTreeMap<Option<&str>, usize> = BTreeMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let of: Vec<usize> = (0..items.len())
            .map(|i| {
                let g = *index.entry(self.group(items, i)).or_insert_with(|| {
                    members.push(Vec::new());
                    members.len() - 1
                });
                members[g].push(i);
                g
            })
            .collect();
        let mut groups = Docs::default();
        for m in &members {
            groups.push(m.iter().flat_map(|&i| docs.doc(i).iter().copied()));
        }
        let raw = self.weighted(&groups, q, n_terms);
        let best = raw.iter().copied().fold(0.0_f64, f64::max);
        of.iter()
            .map(|&g| if best > 0.0 { raw[g] / best } else { 0.0 })
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
        let mut table = Terms::default();
        // RC-7: feedback and the group prior read every term; without them only
        // the query's terms and each document's length count, so the
        // query is analysed first and the table closed: the documents'
        // other terms share one id (the scores are the same, bit for bit).
        let (docs, mut q) = if self.feedback.weight > 0.0 || self.group_weight > 0.0 {
            let docs = table.docs(&self.analyzer, items);
            (docs, table.query(&self.analyzer, cut(query)))
        } else {
            let q = table.query(&self.analyzer, cut(query));
            table.close();
            (table.docs(&self.analyzer, items), q)
        };
        let n_terms = table.len();
        let mut raw = self.weighted(&docs, &q, n_terms);
        if self.feedback.weight > 0.0 {
            q = self.expand(&table, &docs, &raw, &q);
            raw = self.weighted(&docs, &q, n_terms);
        }
        let mut lifted = self.lift(items, &raw);
        if self.group_weight > 0.0 {
            let top = lifted.iter().copied().fold(0.0_f64, f64::max);
            let prior = self.group_prior(items, &docs, &q, n_terms);
            for (s, p) in lifted.iter_mut().zip(prior) {
                *s += self.group_weight * top * p;
            }
        }
        let max = lifted.iter().copied().fold(0.0_f64, f64::max);
        if max > 0.0 && max.is_finite() {
            lifted.into_iter().map(|s| s / max).collect()
        } else {
            vec![0.0; items.len()]
        }
    }
}

/// Per document, the `(query slot, tf)` of the query terms it holds, in
/// the order they first occur in it; per slot, how many documents hold it.
struct Counts {
    tfs: Vec<(usize, u32)>,
    /// Where each document's pairs end in `tfs`.
    ends: Vec<usize>,
    df: Vec<u32>,
}

/// Counts the query terms `q` (ids below `n_terms`) in every document.
fn count(docs: &Docs, q: &[(usize, f64)], n_terms: usize) -> Counts {
    const NONE: usize = usize::MAX;
    let mut slot = vec![NONE; n_terms];
    for (s, &(t, _)) in q.iter().enumerate() {
        slot[t] = s;
    }
    // Per slot, where its pair sits in `tfs` for the current document.
    let mut at = vec![NONE; q.len()];
    let mut c = Counts {
        tfs: Vec::new(),
        ends: Vec::with_capacity(docs.len()),
        df: vec![0; q.len()],
    };
    for doc in docs.iter() {
        let start = c.tfs.len();
        for &t in doc {
            let s = slot[t];
            if s == NONE {
                continue;
            }
            match at[s] {
                NONE => {
                    at[s] = c.tfs.len();
                    c.tfs.push((s, 1));
                }
                k => c.tfs[k].1 = c.tfs[k].1.saturating_add(1),
            }
        }
        for &(s, _) in &c.tfs[start..] {
            c.df[s] = c.df[s].saturating_add(1);
            at[s] = NONE;
        }
        c.ends.push(c.tfs.len());
    }
    c
}

/// Per term id, how many documents hold it, for the marked candidates
/// (0 for the others).
fn candidate_df(docs: &Docs, candidate: &[bool]) -> Vec<u32> {
    let mut df = vec![0u32; candidate.len()];
    let mut last = vec![usize::MAX; candidate.len()];
    for (i, doc) in docs.iter().enumerate() {
        for &t in doc {
            if candidate[t] && last[t] != i {
                last[t] = i;
                df[t] = df[t].saturating_add(1);
            }
        }
    }
    df
}

/// BM25's IDF of a term held by `d` of `n` documents.
fn idf(n: f64, d: f64) -> f64 {
    ((n - d + 0.5) / (d + 0.5) + 1.0).ln()
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
        crate::of_pass(&self.score_all(items), index)
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
    feedback: Bm25Feedback,
    group_weight: f64,
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
            feedback: Bm25Feedback::OFF,
            group_weight: 0.0,
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

    /// Pseudo-relevance feedback (default [`Bm25Feedback::OFF`]).
    #[must_use]
    pub fn feedback(mut self, feedback: Bm25Feedback) -> Self {
        self.feedback = feedback;
        self
    }

    /// The group prior (in `[0, 1]`, default 0: off): every item gains
    /// `weight` times the best item's score times its group's relevance,
    /// where a group (the items sharing the
    /// [`group_key`](Self::group_key) value) is scored as one document by
    /// BM25 and divided by the best group's. A turn of the conversation
    /// that is about the question rises above an equally matching turn of
    /// one that is not.
    #[must_use]
    pub fn group_weight(mut self, weight: f64) -> Self {
        self.group_weight = weight;
        self
    }

    /// The scorer.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] for `k1` negative or not finite, `b`,
    /// `neighbours`, `group_weight` or the feedback weight outside `[0, 1]`
    /// (or not a number), or a query over [`MAX_QUERY_BYTES`].
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
        for (name, v) in [
            ("group_weight", self.group_weight),
            ("feedback weight", self.feedback.weight),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(CupelError::ScorerConfig(format!(
                    "bm25 {name} must be in [0, 1], got {v}"
                )));
            }
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
            feedback: self.feedback,
            group_weight: self.group_weight,
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// A table closed after the query (no feedback, no group prior)
        /// gives the scores of the whole table, bit for bit: the same query
        /// terms, counts and document lengths. The memo is warm for every
        /// pass but the first (the same scorer scores twice).
        #[test]
        fn closing_the_table_changes_no_score(
            texts in proptest::collection::vec(
                proptest::collection::vec(
                    "(cat|cats|Cat's|DOG|dogs|the|The|IT'S|running|ran|東京|café|x1|0a9f|\
                      12|[a-zA-Z']{1,9}|[a-z]{1,3})", 0..8),
                1..8,
            ),
            query in proptest::collection::vec(
                "(cat|dogs|the|run|東|café|0a|12|[a-zA-Z]{1,9}|[a-z]{1,3})", 0..4),
        ) {
            let texts: Vec<String> = texts.iter().map(|w| format!("w {}", w.join(" "))).collect();
            let query = query.join(" ");
            let owned: Vec<ContextItem> = texts
                .iter()
                .map(|t| ContextItem::new(t.as_str(), 1).expect("valid item"))
                .collect();
            let refs: Vec<&ContextItem> = owned.iter().collect();
            let s = Bm25Scorer::new();
            for _ in 0..2 {
                let whole = s.raw(&refs, &query);
                let mut table = terms::Terms::default();
                let q = table.query(&s.analyzer, &query);
                table.close();
                let docs = table.docs(&s.analyzer, &refs);
                let closed = s.weighted(&docs, &q, table.len());
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                proptest::prop_assert_eq!(bits(&whole), bits(&closed));
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The closed table's shortcut (`Terms::outside`): an ASCII word's
        /// term, when it has one, begins with the word's first byte lower-
        /// cased, and `is_stop_ascii` decides what `fold` decides.
        #[test]
        fn first_byte_survives_stemming(word in "[a-zA-Z0-9][a-zA-Z0-9'._]{0,14}") {
            let a = Analyzer::new(true);
            let mut buf = String::new();
            let term = a.term_in(&word, &mut buf).map(|t| t.into_owned());
            proptest::prop_assert_eq!(is_stop_ascii(word.as_bytes()), term.is_none());
            if let Some(t) = term.filter(|t| !t.is_empty()) {
                proptest::prop_assert_eq!(
                    t.as_bytes()[0],
                    word.as_bytes()[0].to_ascii_lowercase(),
                    "{} -> {}", word, t
                );
            }
        }
    }

    /// The Snowball exceptions and the rules that rewrite short words keep
    /// the first letter too; every stop word fits [`STOP_MAX`].
    #[test]
    fn first_byte_survives_the_snowball_exceptions() {
        let a = Analyzer::new(true);
        for w in [
            "skis",
            "skies",
            "dying",
            "lying",
            "tying",
            "idly",
            "gently",
            "ugly",
            "early",
            "only",
            "singly",
            "sky",
            "news",
            "howe",
            "atlas",
            "cosmos",
            "bias",
            "andes",
            "ies",
            "ied",
            "ing",
            "eed",
            "yes",
            "Yearly",
            "y",
            "s",
            "ss",
            "sses",
            "generously",
            "communism",
            "arsenal",
            "conflated",
            "hopping",
            "Tokyo's",
            "IT'S",
            "WHO'S",
        ] {
            let mut buf = String::new();
            match a.term_in(w, &mut buf) {
                Some(t) => {
                    assert!(!is_stop_ascii(w.as_bytes()), "{w}");
                    assert_eq!(
                        t.as_bytes()[0],
                        w.as_bytes()[0].to_ascii_lowercase(),
                        "{w} -> {t}"
                    );
                }
                None => assert!(is_stop_ascii(w.as_bytes()), "{w}"),
            }
        }
        assert_eq!(STOP_WORDS.iter().map(|w| w.len()).max(), Some(STOP_MAX));
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

    /// Feedback by hand. Items "tokyo trip sushi", "sushi dinner",
    /// "paris museum" (terms unchanged by stemming); query "tokyo";
    /// feedback weight 0.5, 1 document, 2 terms. N = 3, avgdl = 7/3.
    ///
    /// First pass: only item 0 holds "tokyo", so it alone votes; its other
    /// terms have share raw/top/len = 1/3 each. IDF(df 1) = ln(2.5/1.5 + 1)
    /// = 0.980829, IDF(df 2) = ln(1.5/2.5 + 1) = 0.470004.
    /// votes: trip = 0.326943, sushi = 0.156668 → weights trip 0.5,
    /// sushi 0.5 · 0.156668 / 0.326943 = 0.239592.
    ///
    /// Second pass (k1 1.2, b 0.75): item 0 (len 3): norm = 1.2 · (0.25 +
    /// 0.75 · 3 / (7/3)) = 1.457143, tf part 2.2 / 2.457143 = 0.895349;
    /// raw = (0.980829 + 0.5 · 0.980829 + 0.239592 · 0.470004) · 0.895349
    /// = 1.418102. Item 1 (len 2): norm = 1.071429, tf part 2.2 / 2.071429
    /// = 1.062069; raw = 0.239592 · 0.470004 · 1.062069 = 0.119598.
    /// Normalised: 1, 0.084335, 0 — "sushi dinner" now scores, a little.
    #[test]
    fn feedback_by_hand() {
        let s = Bm25Scorer::builder()
            .feedback(Bm25Feedback {
                weight: 0.5,
                docs: 1,
                terms: 2,
            })
            .build()
            .expect("valid");
        let got = run(
            &s,
            &["tokyo trip sushi", "sushi dinner", "paris museum"],
            "tokyo",
        );
        assert_eq!(got[0], 1.0);
        assert!((got[1] - 0.084335).abs() < 1e-5, "{got:?}");
        assert_eq!(got[2], 0.0);
        let off = run(
            &Bm25Scorer::new(),
            &["tokyo trip sushi", "sushi dinner", "paris museum"],
            "tokyo",
        );
        assert_eq!(off, vec![1.0, 0.0, 0.0]);
    }

    /// The group prior by hand: a "tokyo" (session 1), b "flight" (1),
    /// c "tokyo" (2), d "tokyo" (2); query "tokyo flight"; group weight
    /// 0.5. Items: N 4, all of length 1 = avgdl, so the tf part is 1;
    /// IDF(tokyo, df 3) = ln(1.5/3.5 + 1) = 0.356675, IDF(flight, df 1) =
    /// ln(3.5/1.5 + 1) = 1.203973. Groups as documents (N 2, both of
    /// length 2 = avgdl, norm 1.2): IDF(tokyo, df 2) = ln(1.2) = 0.182322,
    /// IDF(flight, df 1) = ln 2 = 0.693147; session 1 = 0.182322 +
    /// 0.693147 = 0.875469; session 2 (tokyo twice) = 0.182322 · 2 · 2.2 /
    /// 3.2 = 0.250693; priors 1 and 0.286356. With the best item 1.203973:
    /// a = 0.356675 + 0.5 · 1.203973 = 0.958662, b = 1.805960, c = d =
    /// 0.356675 + 0.601987 · 0.286356 = 0.529058; normalised 0.530832, 1,
    /// 0.292951, 0.292951: the "tokyo" of the flight's session wins.
    #[test]
    fn group_prior_by_hand() {
        let s = Bm25Scorer::builder()
            .group_key("session")
            .group_weight(0.5)
            .build()
            .expect("valid");
        let mk = |t: &str, sess: &str| {
            ContextItem::builder(t, 1)
                .metadata("session", sess)
                .build()
                .expect("valid")
        };
        let owned = [
            mk("tokyo", "1"),
            mk("flight", "1"),
            mk("tokyo", "2"),
            mk("tokyo", "2"),
        ];
        let refs: Vec<&ContextItem> = owned.iter().collect();
        let q = Query::new("tokyo flight");
        let got = s.score_all_in(&refs, &ScoreContext::new().query(Some(&q)));
        let want = [0.530832, 1.0, 0.292951, 0.292951];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{got:?}");
        }
    }

    #[test]
    fn feedback_and_group_weight_out_of_range_are_typed_errors() {
        let bad = Bm25Scorer::builder().group_weight(1.5).build();
        assert!(matches!(bad, Err(CupelError::ScorerConfig(m)) if m.contains("group_weight")));
        let bad = Bm25Scorer::builder()
            .feedback(Bm25Feedback {
                weight: f64::NAN,
                ..Bm25Feedback::STANDARD
            })
            .build();
        assert!(matches!(bad, Err(CupelError::ScorerConfig(m)) if m.contains("feedback")));
    }

    /// The fast paths agree with Snowball: a number is its own stem (the
    /// English rules only rewrite letters and apostrophes).
    #[test]
    fn numbers_are_their_own_stem() {
        let snowball = Stemmer::create(Algorithm::English);
        for n in ["0", "42", "000123", "2023", "31415926535"] {
            assert_eq!(snowball.stem(n), n);
            assert_eq!(bm25_terms(n, true), [n]);
        }
    }

    #[test]
    fn deterministic() {
        let s = Bm25Scorer::new();
        let docs = ["tokyo travel", "food in tokyo", "paris"];
        assert_eq!(run(&s, &docs, "tokyo food"), run(&s, &docs, "tokyo food"));
    }
}
