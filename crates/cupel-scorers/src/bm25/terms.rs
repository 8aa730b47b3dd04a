//! One scoring call's term table: every word analysed once per call (a
//! cache keyed by the word as written), every index term interned to a
//! dense id, every item's terms in one flat array of ids.
//!
//! Only lookups go through the hash maps; nothing iterates them, so their
//! order never reaches a score.

use std::collections::HashMap;

use cupel_core::ContextItem;

use super::Analyzer;

type Fixed = foldhash::fast::FixedState;

/// The cached analysis of a stop word: no term.
const STOP: usize = usize::MAX;

/// Interned terms and the analysis of every word seen in this call.
#[derive(Default)]
pub(super) struct Terms<'t> {
    /// Word (as segmented, before folding) -> term id, or [`STOP`].
    words: HashMap<&'t str, usize, Fixed>,
    /// Term -> id.
    ids: HashMap<Box<str>, usize, Fixed>,
    /// Id -> term (for tie-breaks by term text).
    names: Vec<Box<str>>,
}

/// Documents as term ids: document `i` is `terms[ends[i - 1]..ends[i]]`.
#[derive(Default)]
pub(super) struct Docs {
    terms: Vec<usize>,
    ends: Vec<usize>,
}

impl Docs {
    /// The number of documents.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no document.
    pub(super) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Document `i`'s term ids, in text order.
    pub(super) fn doc(&self, i: usize) -> &[usize] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.terms[start..self.ends[i]]
    }

    /// Every document, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &[usize]> {
        (0..self.len()).map(|i| self.doc(i))
    }

    /// Appends a document made of `terms`.
    pub(super) fn push(&mut self, terms: impl IntoIterator<Item = usize>) {
        self.terms.extend(terms);
        self.ends.push(self.terms.len());
    }
}

impl<'t> Terms<'t> {
    /// The number of distinct terms interned.
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }

    /// The text of term `id`.
    pub(super) fn name(&self, id: usize) -> &str {
        &self.names[id]
    }

    /// The id of `term`, interned on first sight.
    fn intern(&mut self, term: String) -> usize {
        if let Some(&id) = self.ids.get(term.as_str()) {
            return id;
        }
        let id = self.names.len();
        let term = term.into_boxed_str();
        self.names.push(term.clone());
        self.ids.insert(term, id);
        id
    }

    /// The term id of one piece of text ([`Analyzer::pieces`]), or
    /// [`STOP`]: analysed on its first sight in this call, then cached.
    fn piece(&mut self, analyzer: &Analyzer, piece: &'t str, single: bool) -> usize {
        if let Some(&id) = self.words.get(piece) {
            return id;
        }
        let term = if single {
            Some(piece.to_string())
        } else {
            analyzer.term(piece)
        };
        let id = term.map_or(STOP, |t| self.intern(t));
        self.words.insert(piece, id);
        id
    }

    /// Appends the term ids of `text` to `out`.
    fn text(&mut self, analyzer: &Analyzer, text: &'t str, out: &mut Vec<usize>) {
        Analyzer::pieces(text, |p, single| {
            let id = self.piece(analyzer, p, single);
            if id != STOP {
                out.push(id);
            }
        });
    }

    /// Every item's terms.
    pub(super) fn docs(&mut self, analyzer: &Analyzer, items: &[&'t ContextItem]) -> Docs {
        self.words.reserve(items.len());
        self.ids.reserve(items.len());
        self.names.reserve(items.len());
        let mut docs = Docs {
            terms: Vec::new(),
            ends: Vec::with_capacity(items.len()),
        };
        for item in items {
            self.text(analyzer, item.content(), &mut docs.terms);
            docs.ends.push(docs.terms.len());
        }
        docs
    }

    /// The query's distinct terms, each of weight 1 (ascending ids).
    pub(super) fn query(&mut self, analyzer: &Analyzer, query: &'t str) -> Vec<(usize, f64)> {
        let mut ids = Vec::new();
        self.text(analyzer, query, &mut ids);
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|id| (id, 1.0)).collect()
    }
}
