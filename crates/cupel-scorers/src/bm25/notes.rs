//! [`Bm25Scorer`]'s report notes: which query words each item matched.

use std::collections::BTreeMap;

use cupel_core::{ContextItem, ScoreNote};

use super::{Bm25Scorer, cut};

/// One item's matched query terms: (term slot, contribution to the raw score).
type Contributions = Vec<(usize, f64)>;

impl Bm25Scorer {
    /// The notes of [`Scorer::notes_in`](cupel_core::Scorer::notes_in): for
    /// every item scoring above 0, its score and the query words it matched,
    /// by descending contribution to its raw BM25 score (ties alphabetical),
    /// each shown as the query wrote it (lower-cased); an item scoring only
    /// by the neighbour lift says so instead.
    pub(super) fn notes(
        &self,
        items: &[&ContextItem],
        query: Option<&str>,
    ) -> Vec<(usize, ScoreNote)> {
        let Some(query) = query.or(self.query.as_deref()) else {
            return Vec::new();
        };
        let scores = self.scores(items, Some(query));
        // term -> (slot, the first query word that gave it).
        let mut slots: BTreeMap<String, (usize, String)> = BTreeMap::new();
        self.analyzer.each(cut(query), |surface, term| {
            let next = slots.len();
            slots
                .entry(term)
                .or_insert_with(|| (next, surface.to_string()));
        });
        if slots.is_empty() {
            return Vec::new();
        }
        let mut surfaces = vec![String::new(); slots.len()];
        for (slot, surface) in slots.values() {
            surfaces[*slot].clone_from(surface);
        }
        let contributions = self.contributions(items, &slots);
        scores
            .iter()
            .enumerate()
            .filter(|(_, s)| **s > 0.0)
            .map(|(i, &s)| {
                let note = self.note(i, s, &contributions, &surfaces);
                let note = if note.terms.is_empty() {
                    note.with_detail(self.lifted_by(items, i, &contributions))
                } else {
                    note
                };
                (i, note)
            })
            .collect()
    }

    /// Which neighbour lifted item `i`: the one of its group whose raw score
    /// is higher (the previous one on a tie), as the lift computes it.
    fn lifted_by(
        &self,
        items: &[&ContextItem],
        i: usize,
        contributions: &[Contributions],
    ) -> String {
        let group = |k: usize| {
            self.group_key
                .as_ref()
                .map(|key| items[k].metadata().get(key).map(String::as_str))
        };
        let raw = |k: usize| contributions[k].iter().map(|c| c.1).sum::<f64>();
        let prev = i.checked_sub(1).filter(|&j| group(j) == group(i));
        let next = Some(i + 1).filter(|&j| j < items.len() && group(j) == group(i));
        let side = match (prev, next) {
            (Some(p), Some(n)) if raw(n) > raw(p) => "next",
            (Some(_), _) => "previous",
            _ => "next",
        };
        format!("lifted by a match in the {side} item")
    }

    fn note(
        &self,
        i: usize,
        score: f64,
        contributions: &[Contributions],
        surfaces: &[String],
    ) -> ScoreNote {
        let mut own = contributions[i].clone();
        own.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| surfaces[a.0].cmp(&surfaces[b.0]))
        });
        ScoreNote::new("bm25", "relevance", score)
            .with_terms(own.into_iter().map(|(q, _)| surfaces[q].clone()).collect())
    }

    /// Every item's matched query-term slots with their BM25 contribution
    /// `IDF(q) · tf · (k1 + 1) / (tf + k1 · (1 - b + b · dl / avgdl))`
    /// (the terms of [`Bm25Scorer`]'s formula).
    fn contributions(
        &self,
        items: &[&ContextItem],
        slots: &BTreeMap<String, (usize, String)>,
    ) -> Vec<Contributions> {
        let mut lens = Vec::with_capacity(items.len());
        let mut tfs: Vec<Vec<(usize, u32)>> = Vec::with_capacity(items.len());
        let mut df = vec![0u32; slots.len()];
        for item in items {
            let mut len = 0u32;
            let mut tf: Vec<(usize, u32)> = Vec::new();
            self.analyzer.each(item.content(), |_, t| {
                len = len.saturating_add(1);
                if let Some(&(s, _)) = slots.get(&t) {
                    match tf.iter_mut().find(|(k, _)| *k == s) {
                        Some((_, c)) => *c = c.saturating_add(1),
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
        let avgdl = lens.iter().sum::<f64>() / n.max(1.0);
        tfs.into_iter()
            .zip(lens)
            .map(|(tf, dl)| {
                let norm = if avgdl > 0.0 {
                    self.k1 * (1.0 - self.b + self.b * dl / avgdl)
                } else {
                    self.k1
                };
                tf.into_iter()
                    .map(|(s, c)| {
                        let d = f64::from(df[s]);
                        let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                        let c = f64::from(c);
                        (s, idf * c * (self.k1 + 1.0) / (c + norm))
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::{Query, ScoreContext, Scorer};

    fn notes(s: &Bm25Scorer, texts: &[&str], query: &str) -> Vec<(usize, ScoreNote)> {
        let owned: Vec<ContextItem> = texts
            .iter()
            .map(|t| ContextItem::new(*t, 1).expect("valid"))
            .collect();
        let refs: Vec<&ContextItem> = owned.iter().collect();
        let q = Query::new(query);
        s.notes_in(&refs, &ScoreContext::new().query(Some(&q)))
    }

    /// The four documents of `hand_derived_bm25_on_four_documents`, query
    /// "travel tokyo" (no stemming): IDF(tokyo) = IDF(travel) = ln 2.
    /// d0 "tokyo travel": both terms tf 1, equal contributions
    /// ln2 · 2.2 / 2.02 each: ties are alphabetical -> tokyo, travel.
    /// d1 "tokyo tokyo food": tokyo only, score 0.597633 -> "0.60".
    /// d2 "paris travel guide book": travel only, 0.368613 -> "0.37".
    /// d3 "cats": no note.
    #[test]
    fn notes_list_matched_words_by_contribution_then_alphabet() {
        let s = Bm25Scorer::builder()
            .stemming(false)
            .build()
            .expect("valid");
        let got = notes(
            &s,
            &[
                "tokyo travel",
                "tokyo tokyo food",
                "paris travel guide book",
                "cats",
            ],
            "travel tokyo",
        );
        let text: Vec<(usize, String)> = got.iter().map(|(i, n)| (*i, n.to_string())).collect();
        assert_eq!(
            text,
            [
                (0, "relevance 1.00: matched tokyo, travel".to_string()),
                (1, "relevance 0.60: matched tokyo".to_string()),
                (2, "relevance 0.37: matched travel".to_string()),
            ]
        );
        assert!(got.iter().all(|(_, n)| n.scorer == "bm25"));
    }

    /// Unequal contributions: N = 3, d0 "tokyo travel", d1 "tokyo", d2
    /// "food". n(tokyo) = 2, n(travel) = 1:
    /// IDF(tokyo) = ln((3 - 2 + 0.5)/(2 + 0.5) + 1) = ln 1.6 = 0.470;
    /// IDF(travel) = ln((3 - 1 + 0.5)/(1 + 0.5) + 1) = ln 2.667 = 0.981.
    /// In d0 both have tf 1 and the same length norm, so travel (0.981)
    /// comes before tokyo (0.470) although the query says tokyo first.
    /// Stemming shows the query's own word: "travelling" (stem "travel").
    #[test]
    fn rarer_words_come_first_and_show_as_the_query_wrote_them() {
        let s = Bm25Scorer::new();
        let got = notes(&s, &["tokyo travel", "tokyo", "food"], "Tokyo travelling?");
        assert_eq!(got[0].1.terms, ["travelling", "tokyo"]);
        assert_eq!(got[1].1.terms, ["tokyo"]);
        assert_eq!(got.len(), 2);
    }

    /// A lifted neighbour has no words of its own: its note says where its
    /// score came from (0.5 of the hit's, no group key).
    #[test]
    fn lifted_items_say_so() {
        let s = Bm25Scorer::builder()
            .neighbours(0.5)
            .build()
            .expect("valid");
        let got = notes(&s, &["tokyo trip", "it was fun", "x"], "tokyo");
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[1].1.to_string(),
            "relevance 0.50: lifted by a match in the previous item"
        );
        let got = notes(&s, &["it was fun", "tokyo trip"], "tokyo");
        assert_eq!(
            got[0].1.detail.as_deref(),
            Some("lifted by a match in the next item")
        );
    }

    #[test]
    fn no_query_no_notes() {
        let s = Bm25Scorer::new();
        assert!(notes(&s, &["tokyo"], "").is_empty());
        assert!(notes(&s, &["tokyo"], "the of").is_empty());
        let item = ContextItem::new("tokyo", 1).expect("valid");
        assert!(s.notes_in(&[&item], &ScoreContext::new()).is_empty());
    }
}
