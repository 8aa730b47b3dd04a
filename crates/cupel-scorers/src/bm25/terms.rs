//! One scoring call's term table: every word analysed once per call (a
//! cache keyed by the word as written), every index term interned to a
//! dense id, every item's terms in one flat array of ids.
//!
//! Only lookups go through the hash maps; nothing iterates them, so their
//! order never reaches a score.

use std::borrow::Cow;
use std::collections::HashMap;

use compact_str::CompactString;
use cupel_core::ContextItem;

use super::{Analyzer, MEMO_WORDS};

type Fixed = foldhash::fast::FixedState;

/// Words analysed in earlier calls: the word as written -> its index term
/// (`None` for a stop word), and the term id the word had in the call that
/// last saw it. A call reads a word's id straight from the memo when it
/// already saw the word (one lookup per word, no per-call word table).
#[derive(Default)]
pub(super) struct Memo {
    /// Keyed by the word, stored inline when short (up to 24 bytes, most
    /// words): a lookup compares it without following a pointer.
    words: HashMap<CompactString, Known, Fixed>,
    /// The number of the current call (ids stamped with another are stale).
    call: u64,
}

/// A memo entry.
struct Known {
    term: Term,
    /// The call that last gave the word an id, and that id.
    call: u64,
    id: usize,
}

/// A word's index term, as the memo keeps it.
enum Term {
    /// A stop word: no term.
    Stop,
    /// The word itself (already folded, its own stem): nothing stored.
    Same,
    /// Another text.
    Other(Box<str>),
}

/// `term`'s bit in [`Terms::close`]'s length mask.
fn length_bit(term: &str) -> u64 {
    1 << term.len().min(63)
}

/// The cached analysis of a stop word: no term.
const STOP: usize = usize::MAX;

/// Interned terms and the analysis of every word seen in this call.
#[derive(Default)]
pub(super) struct Terms<'t> {
    /// Word (as segmented, before folding) -> term id, or [`STOP`].
    words: HashMap<&'t str, usize, Fixed>,
    /// Term -> id. A term that is its word as written (already folded,
    /// its own stem: numbers, codes, most lower-case words) borrows the
    /// item's text; only the others are allocated, once per call.
    ids: HashMap<Cow<'t, str>, usize, Fixed>,
    /// Id -> term (for tie-breaks by term text).
    names: Vec<Cow<'t, str>>,
    /// The folded word being analysed (reused: no allocation per word).
    buf: String,
    /// Set by [`close`](Self::close): the id every term not yet interned
    /// maps to (nothing more is interned), and a bit per length of the
    /// terms interned before (bit `min(len, 63)`): a term of another
    /// length is none of them, without a lookup.
    closed: Option<(usize, u64)>,
    /// Set by [`close`](Self::close): a bit per ASCII first byte of the
    /// terms interned before. An ASCII word's term begins with the word's
    /// first byte, lower-cased (folding lower-cases; the Snowball rules
    /// rewrite endings only: `first_byte_survives_stemming`), so a word
    /// whose first byte has no bit is none of them: it is only told apart
    /// from a stop word, with no memo lookup and no stemming.
    firsts: u128,
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

    /// The id of `term`, interned on first sight: borrowed from `piece`
    /// (the word as written) when it is the same text, else allocated.
    fn intern(
        ids: &mut HashMap<Cow<'t, str>, usize, Fixed>,
        names: &mut Vec<Cow<'t, str>>,
        closed: Option<(usize, u64)>,
        piece: &'t str,
        term: &str,
    ) -> usize {
        if let Some((other, lens)) = closed
            && lens & length_bit(term) == 0
        {
            return other;
        }
        if let Some(&id) = ids.get(term) {
            return id;
        }
        if let Some((other, _)) = closed {
            return other;
        }
        let id = names.len();
        let term: Cow<'t, str> = if term == piece {
            Cow::Borrowed(piece)
        } else {
            Cow::Owned(term.to_owned())
        };
        names.push(term.clone());
        ids.insert(term, id);
        id
    }

    /// The term id of one piece of text ([`Analyzer::pieces`]), or
    /// [`STOP`]: analysed on its first sight in this call, then cached (in
    /// the memo, stamped with this call, or in this call's word table).
    fn piece(
        &mut self,
        analyzer: &Analyzer,
        memo: Option<&mut Memo>,
        piece: &'t str,
        single: bool,
    ) -> usize {
        let (ids, names, closed) = (&mut self.ids, &mut self.names, self.closed);
        if let Some((other, _)) = closed
            && !single
            && let Some(id) = Self::outside(self.firsts, other, piece)
        {
            return id;
        }
        // A number is its own term (no letter to fold or stem, never a stop
        // word): no analysis and no memo entry, which would mostly hold
        // ids, counters and dates seen once.
        if !single && piece.bytes().all(|b| b.is_ascii_digit()) {
            return Self::intern(ids, names, closed, piece, piece);
        }
        if let Some(m) = memo.filter(|_| !single) {
            let now = m.call;
            if let Some(k) = m.words.get_mut(piece) {
                if k.call != now {
                    k.id = match &k.term {
                        Term::Stop => STOP,
                        Term::Same => Self::intern(ids, names, closed, piece, piece),
                        Term::Other(t) => Self::intern(ids, names, closed, piece, t),
                    };
                    k.call = now;
                }
                return k.id;
            }
            if m.words.len() < MEMO_WORDS {
                let term = analyzer.term_in(piece, &mut self.buf);
                let id = term
                    .as_deref()
                    .map_or(STOP, |t| Self::intern(ids, names, closed, piece, t));
                let term = match term.as_deref() {
                    None => Term::Stop,
                    Some(t) if t == piece => Term::Same,
                    Some(t) => Term::Other(t.into()),
                };
                let known = Known {
                    term,
                    call: now,
                    id,
                };
                m.words.insert(CompactString::from(piece), known);
                return id;
            }
        }
        if let Some(&id) = self.words.get(piece) {
            return id;
        }
        let id = if single {
            Self::intern(ids, names, closed, piece, piece)
        } else {
            let term = analyzer.term_in(piece, &mut self.buf);
            term.map_or(STOP, |t| Self::intern(ids, names, closed, piece, &t))
        };
        self.words.insert(piece, id);
        id
    }

    /// In a closed table, the id of an ASCII `piece` whose first byte
    /// begins none of the interned terms: `other`, or [`STOP`] for a stop
    /// word. `None` when the piece may be an interned term (or is not
    /// ASCII): the caller analyses it.
    fn outside(firsts: u128, other: usize, piece: &str) -> Option<usize> {
        let bytes = piece.as_bytes();
        let first = bytes.first()?.to_ascii_lowercase();
        if first >= 128 || firsts & (1 << first) != 0 || !piece.is_ascii() {
            return None;
        }
        Some(if super::is_stop_ascii(bytes) {
            STOP
        } else {
            other
        })
    }

    /// Appends the term ids of `text` to `out`.
    fn text(
        &mut self,
        analyzer: &Analyzer,
        mut memo: Option<&mut Memo>,
        text: &'t str,
        out: &mut Vec<usize>,
    ) {
        Analyzer::pieces(text, |p, single| {
            let id = self.piece(analyzer, memo.as_deref_mut(), p, single);
            if id != STOP {
                out.push(id);
            }
        });
    }

    /// Interns nothing more: every term not interned yet gets one shared
    /// id (its name empty), the last. A scoring pass that needs only the
    /// query's terms and each document's length analyses the query, closes
    /// the table, then reads the documents: their other terms then cost no
    /// interning (no table of every term in the candidates).
    pub(super) fn close(&mut self) {
        let lens = self.names.iter().fold(0, |m, t| m | length_bit(t));
        self.closed = Some((self.names.len(), lens));
        self.firsts = self
            .names
            .iter()
            .fold(0, |m, t| match t.as_bytes().first() {
                Some(&b) if b < 128 => m | 1 << b,
                _ => m,
            });
        self.names.push(Cow::Borrowed(""));
    }

    /// Every item's terms.
    pub(super) fn docs(&mut self, analyzer: &Analyzer, items: &[&'t ContextItem]) -> Docs {
        // Locked for the whole pass; a memo in use by another thread (or
        // poisoned) is skipped: the terms are the same without it.
        let mut memo = analyzer.memo.try_lock().ok();
        match memo.as_deref_mut() {
            // A new call: every id in the memo is now stale.
            Some(m) => m.call = m.call.wrapping_add(1),
            // Only a call without the memo keeps its own word table.
            None => self.words.reserve(items.len()),
        }
        if self.closed.is_none() {
            self.ids.reserve(items.len());
            self.names.reserve(items.len());
        }
        // About one term per ten bytes of text, to start with.
        let bytes = items.iter().map(|i| i.content().len()).sum::<usize>();
        let mut docs = Docs {
            terms: Vec::with_capacity(bytes / 10),
            ends: Vec::with_capacity(items.len()),
        };
        for item in items {
            self.text(
                analyzer,
                memo.as_deref_mut(),
                item.content(),
                &mut docs.terms,
            );
            docs.ends.push(docs.terms.len());
        }
        docs
    }

    /// The query's distinct terms, each of weight 1 (ascending ids).
    pub(super) fn query(&mut self, analyzer: &Analyzer, query: &'t str) -> Vec<(usize, f64)> {
        let mut ids = Vec::new();
        self.text(analyzer, None, query, &mut ids);
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|id| (id, 1.0)).collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    use super::{Analyzer, Terms};
    use cupel_core::ContextItem;

    /// The straightforward analysis: `unicode_words`, each word folded and
    /// stemmed into fresh strings (`Analyzer::word_term`), Han and Kana
    /// split by `Analyzer::pieces`' rule applied to the word alone.
    fn reference(analyzer: &Analyzer, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for word in text.unicode_words() {
            if word.is_ascii() {
                out.extend(analyzer.word_term(word).map(|(_, t)| t));
            } else {
                // A non-ASCII word: `pieces` of the word alone is the
                // non-ASCII path itself (no ASCII fast path).
                Analyzer::pieces(word, |p, single| {
                    if single {
                        out.push(p.to_string());
                    } else {
                        out.extend(analyzer.word_term(p).map(|(_, t)| t));
                    }
                });
            }
        }
        out
    }

    fn fast(analyzer: &Analyzer, text: &str) -> Vec<String> {
        let item = ContextItem::new(text, 1).expect("valid item");
        let mut table = Terms::default();
        let docs = table.docs(analyzer, &[&item]);
        docs.doc(0)
            .iter()
            .map(|&t| table.name(t).to_string())
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// The table's terms (ASCII segmentation, folding into a reused
        /// buffer, stems borrowed, the memo) are the reference analysis's.
        #[test]
        fn fast_analysis_equals_the_reference(
            words in prop::collection::vec(
                "(The|the|CALVIN'S|calvin’s|travelled|Travels|running|ran|1,000|3.14|\
                  e\\.g\\.|a_b|0123abcdef|item-000123|café|CAFÉ|東京|タワー|ΣΑΣ|über|'s|I|\
                  [a-zA-Z0-9'’.,:;_\\- ]{1,8}|\\PC{1,3})",
                0..12,
            ),
            stemming in any::<bool>(),
        ) {
            let text = format!("x {}", words.join(" "));
            let analyzer = Analyzer::new(stemming);
            let want = reference(&analyzer, &text);
            // The first pass fills the memo, the second reads it.
            prop_assert_eq!(&fast(&analyzer, &text), &want);
            prop_assert_eq!(&fast(&analyzer, &text), &want);
        }
    }
}
