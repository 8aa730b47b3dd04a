//! [`TagScorer`]: weighted tag matching, and [`TagMatch`], how tags are compared.

use std::cmp::Ordering;

use cupel_core::{ContextItem, CupelError, Scorer};

use crate::gather::{pack, tags_of};

/// Up to this many configured tags, batch lookups scan instead of bisecting.
const SCAN_LIMIT: usize = 16;

/// How [`TagScorer`] compares an item's tags with its configured tag names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TagMatch {
    /// Byte-for-byte (ordinal) comparison: `"Urgent"` does not match `"urgent"`.
    /// The specification's default.
    #[default]
    CaseSensitive,
    /// ASCII letters compare without case (the same folding as tag overlap in
    /// [`FrequencyScorer`](crate::FrequencyScorer)); other characters compare exactly.
    AsciiCaseInsensitive,
}

impl TagMatch {
    fn cmp(self, a: &str, b: &str) -> Ordering {
        match self {
            TagMatch::CaseSensitive => a.cmp(b),
            TagMatch::AsciiCaseInsensitive => {
                let fa = a.bytes().map(|c| c.to_ascii_lowercase());
                let fb = b.bytes().map(|c| c.to_ascii_lowercase());
                fa.cmp(fb)
            }
        }
    }
}

/// Scores an item by the share of the configured tag weight its tags match.
///
/// With tag weights `w` and `total = sum(w)`:
/// `score = min(sum of w[tag] for each of the item's tags that is configured / total, 1.0)`.
/// An item with no tags, or a scorer whose weights are all zero (or empty),
/// scores 0.0. Each occurrence of a tag counts, so an item carrying a
/// configured tag twice adds its weight twice (the `min(.., 1.0)` keeps the
/// score in range).
///
/// Tag names are matched [case-sensitively](TagMatch::CaseSensitive) by
/// default; choose another [`TagMatch`] with [`with_match`](Self::with_match).
/// An absolute scorer: peers are ignored.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::{TagMatch, TagScorer};
///
/// let s = TagScorer::new([("billing", 3.0), ("urgent", 1.0)])?;
/// let item = ContextItem::builder("x", 1).tags(["billing", "Urgent"]).build()?;
/// // "billing" matches (3.0); "Urgent" does not match "urgent": 3 / 4.
/// assert_eq!(s.score(0, &[&item]), 0.75);
/// let folded = s.with_match(TagMatch::AsciiCaseInsensitive)?;
/// assert_eq!(folded.score(0, &[&item]), 1.0);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TagScorer {
    /// Sorted under `matching`'s order, no two entries equal under it.
    weights: Vec<(String, f64)>,
    /// `weights[i].0` as bytes, ASCII-lowercased under
    /// [`TagMatch::AsciiCaseInsensitive`]: sorted in byte order (the same
    /// order), for lookups of gathered tag bytes.
    keys: Vec<Box<[u8]>>,
    /// `keys` packed (see `gather::pack`), for a comparison-free scan of short
    /// tags when there are few keys.
    packed: Vec<Option<u64>>,
    total_weight: f64,
    matching: TagMatch,
}

impl TagScorer {
    /// A scorer with case-sensitive matching over `weights`: anything that
    /// iterates `(name, weight)` pairs (a `BTreeMap<String, f64>`, a `Vec` of
    /// pairs, an array of `(&str, f64)`).
    ///
    /// The total weight is summed once, here (in tag-name order).
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming the tag and the value when a weight is
    /// negative or not finite, when a tag is configured twice, or when the
    /// weights add up to more than `f64` can hold.
    pub fn new<I, S>(weights: I) -> Result<Self, CupelError>
    where
        I: IntoIterator<Item = (S, f64)>,
        S: Into<String>,
    {
        let mut list = Vec::new();
        for (tag, weight) in weights {
            let tag = tag.into();
            if weight < 0.0 {
                return Err(CupelError::ScorerConfig(format!(
                    "TagScorer: weight for tag {tag:?} must be non-negative (got {weight})"
                )));
            }
            if !weight.is_finite() {
                return Err(CupelError::ScorerConfig(format!(
                    "TagScorer: weight for tag {tag:?} must be finite (got {weight})"
                )));
            }
            list.push((tag, weight));
        }
        Self::build(list, TagMatch::CaseSensitive)
    }

    /// The same weights compared under `matching`.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] when two configured tags become equal under
    /// the new comparison (e.g. `"Urgent"` and `"urgent"` under
    /// [`TagMatch::AsciiCaseInsensitive`]).
    pub fn with_match(self, matching: TagMatch) -> Result<Self, CupelError> {
        Self::build(self.weights, matching)
    }

    fn build(mut list: Vec<(String, f64)>, matching: TagMatch) -> Result<Self, CupelError> {
        list.sort_by(|a, b| matching.cmp(&a.0, &b.0).then_with(|| a.0.cmp(&b.0)));
        let mut total_weight = 0.0;
        for (i, (tag, weight)) in list.iter().enumerate() {
            if i > 0
                && let Some((prev, _)) = list.get(i - 1)
                && matching.cmp(prev, tag) == Ordering::Equal
            {
                return Err(CupelError::ScorerConfig(format!(
                    "TagScorer: tag {tag:?} is configured twice (as {prev:?} and {tag:?} under {matching:?} matching)"
                )));
            }
            total_weight += weight;
        }
        if !total_weight.is_finite() {
            return Err(CupelError::ScorerConfig(format!(
                "TagScorer: the tag weights add up to {total_weight}; their sum must be finite"
            )));
        }
        let fold = matching == TagMatch::AsciiCaseInsensitive;
        let keys: Vec<Box<[u8]>> = list
            .iter()
            .map(|(tag, _)| {
                let mut key = tag.as_bytes().to_vec();
                if fold {
                    key.make_ascii_lowercase();
                }
                key.into_boxed_slice()
            })
            .collect();
        let packed = keys.iter().map(|k| pack(k)).collect();
        Ok(Self {
            weights: list,
            keys,
            packed,
            total_weight,
            matching,
        })
    }

    /// The sum of all configured weights (the score's denominator).
    pub fn total_weight(&self) -> f64 {
        self.total_weight
    }

    /// How tags are compared.
    pub fn matching(&self) -> TagMatch {
        self.matching
    }

    /// The configured `(tag, weight)` pairs, in the comparison's order.
    pub fn weights(&self) -> &[(String, f64)] {
        &self.weights
    }

    /// The weight configured for `tag` under this scorer's comparison.
    pub fn weight(&self, tag: &str) -> Option<f64> {
        self.weights
            .binary_search_by(|(probe, _)| self.matching.cmp(probe, tag))
            .ok()
            .and_then(|pos| self.weights.get(pos))
            .map(|(_, w)| *w)
    }

    /// The weight of a gathered (and, if folding, lowercased) tag.
    fn weight_of_key(&self, key: &[u8], packed: Option<u64>) -> Option<f64> {
        let pos = if self.keys.len() <= SCAN_LIMIT {
            match packed {
                Some(p) => self.packed.iter().position(|k| *k == Some(p)),
                None => self.keys.iter().position(|k| k.as_ref() == key),
            }
        } else {
            self.keys
                .binary_search_by(|probe| probe.as_ref().cmp(key))
                .ok()
        };
        pos.and_then(|pos| self.weights.get(pos)).map(|(_, w)| *w)
    }

    fn score_item(&self, item: &ContextItem) -> f64 {
        let tags = item.tags();
        if self.total_weight == 0.0 || tags.is_empty() {
            return 0.0;
        }
        let matched = tags
            .iter()
            .filter_map(|t| self.weight(t))
            .fold(0.0, |acc, w| acc + w);
        (matched / self.total_weight).min(1.0)
    }
}

impl Scorer for TagScorer {
    /// The item's matched weight share; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        items
            .get(index)
            .map_or(f64::NAN, |item| self.score_item(item))
    }

    /// Gathers all tags into one buffer first and numbers the distinct ones
    /// (see the crate's notes on whole-pass scoring; inside a
    /// [`CompositeScorer`](crate::CompositeScorer) both are shared with
    /// [`FrequencyScorer`](crate::FrequencyScorer)), looks each distinct tag
    /// up once, then sums each item's matched weights in tag order, exactly
    /// as [`score`](Scorer::score) does.
    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        if self.total_weight == 0.0 {
            return vec![0.0; items.len()];
        }
        let arena = tags_of(items);
        let fold = self.matching == TagMatch::AsciiCaseInsensitive;
        let mut lowered: Vec<u8> = Vec::new();
        let mut weight_of = |t: usize| {
            let mut tag = arena.tag(t);
            if fold {
                lowered.clear();
                lowered.extend(tag.iter().map(u8::to_ascii_lowercase));
                tag = &lowered;
            }
            self.weight_of_key(tag, pack(tag))
        };
        // With the tags interned (shared with the composite's other
        // children), each distinct tag is looked up once.
        let by_id: Option<(&[u32], Vec<Option<f64>>)> = arena.interned().map(|interned| {
            (
                &interned.ids[..],
                interned.first.iter().map(|&t| weight_of(t)).collect(),
            )
        });
        arena
            .offsets
            .windows(2)
            .map(|w| {
                if w[0] == w[1] {
                    return 0.0;
                }
                // The matched weights summed in tag order either way, so
                // both paths give the same bits.
                let matched = match &by_id {
                    Some((ids, weights)) => ids[w[0]..w[1]]
                        .iter()
                        .filter_map(|&id| weights[id as usize])
                        .fold(0.0, |acc, w| acc + w),
                    None => (w[0]..w[1])
                        .filter_map(&mut weight_of)
                        .fold(0.0, |acc, w| acc + w),
                };
                (matched / self.total_weight).min(1.0)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(tags: &[&str]) -> ContextItem {
        ContextItem::builder("x", 1)
            .tags(tags.iter().copied())
            .build()
            .unwrap()
    }

    /// The one-item score, checked against the whole-pass path.
    fn score(s: &TagScorer, tags: &[&str]) -> f64 {
        let item = tagged(tags);
        let other = tagged(&["a", "Urgent"]);
        let single = s.score(0, &[&item, &other]);
        assert_eq!(s.score_all(&[&item, &other])[0], single);
        single
    }

    fn abc() -> TagScorer {
        // total = 0.5 + 0.3 + 0.2 = 1.0
        TagScorer::new([("a", 0.5), ("b", 0.3), ("c", 0.2)]).unwrap()
    }

    // Edge-case table row 1: no tags -> 0.0.
    #[test]
    fn no_tags_scores_zero() {
        assert_eq!(score(&abc(), &[]), 0.0);
    }

    // Row 2: totalWeight 0.0 (all weights zero, or no weights) -> 0.0.
    #[test]
    fn zero_total_weight_scores_zero() {
        let z = TagScorer::new([("a", 0.0), ("b", 0.0)]).unwrap();
        assert_eq!(z.total_weight(), 0.0);
        assert_eq!(score(&z, &["a", "b"]), 0.0);
        let empty = TagScorer::new(Vec::<(String, f64)>::new()).unwrap();
        assert_eq!(score(&empty, &["a"]), 0.0);
    }

    // Row 3: tags present but none match -> 0.0.
    #[test]
    fn no_match_scores_zero() {
        assert_eq!(score(&abc(), &["x", "y"]), 0.0);
    }

    // Row 4: all configured tags matched -> 1.0.
    #[test]
    fn all_matched_scores_one() {
        // (0.5 + 0.3 + 0.2) / 1.0 = 1.0
        assert_eq!(score(&abc(), &["c", "a", "b"]), 1.0);
        // Partial: "a" + "c" = 0.7 / 1.0.
        assert!((score(&abc(), &["a", "c"]) - 0.7).abs() < 1e-12);
    }

    // Row 5: duplicate tags each add their weight; clamped to 1.0.
    #[test]
    fn duplicate_tags_add_and_clamp() {
        let s = TagScorer::new([("a", 2.0), ("b", 2.0)]).unwrap(); // total 4
        // "a" twice: (2 + 2) / 4 = 1.0
        assert_eq!(score(&s, &["a", "a"]), 1.0);
        // "a" three times + "b": (2+2+2+2)/4 = 2.0 -> clamped to 1.0
        assert_eq!(score(&s, &["a", "a", "a", "b"]), 1.0);
        // "a" once: 2 / 4 = 0.5
        assert_eq!(score(&s, &["a"]), 0.5);
    }

    #[test]
    fn lookup_is_case_sensitive_by_default() {
        let s = TagScorer::new([("Urgent", 1.0), ("billing", 1.0)]).unwrap();
        assert_eq!(s.matching(), TagMatch::CaseSensitive);
        // only "billing" matches: 1 / 2
        assert_eq!(score(&s, &["urgent", "billing"]), 0.5);
        let folded = s.with_match(TagMatch::AsciiCaseInsensitive).unwrap();
        // both match: 2 / 2
        assert_eq!(score(&folded, &["URGENT", "Billing"]), 1.0);
    }

    #[test]
    fn invalid_weights_are_rejected() {
        let e = TagScorer::new([("a", -1.0)]).unwrap_err();
        assert_eq!(
            e,
            CupelError::ScorerConfig(
                "TagScorer: weight for tag \"a\" must be non-negative (got -1)".into()
            )
        );
        for bad in [f64::NAN, f64::INFINITY] {
            let e = TagScorer::new([("a", bad)]).unwrap_err();
            assert!(matches!(e, CupelError::ScorerConfig(m) if m.contains("finite")));
        }
        let e = TagScorer::new([("a", f64::MAX), ("b", f64::MAX)]).unwrap_err();
        assert!(matches!(e, CupelError::ScorerConfig(m) if m.contains("sum")));
        let e = TagScorer::new([("a", 1.0), ("a", 2.0)]).unwrap_err();
        assert!(matches!(e, CupelError::ScorerConfig(m) if m.contains("twice")));
        let s = TagScorer::new([("A", 1.0), ("a", 2.0)]).unwrap();
        let e = s.with_match(TagMatch::AsciiCaseInsensitive).unwrap_err();
        assert!(matches!(e, CupelError::ScorerConfig(m) if m.contains("twice")));
    }

    #[test]
    fn many_and_long_tags_agree_between_paths() {
        // 20 tags "tag-number-00".."tag-number-19" (13 bytes, > 7: unpacked),
        // weight 1 each plus "x" weight 20 -> total 40. Over the scan limit.
        let mut weights: Vec<(String, f64)> = (0..20)
            .map(|i| (format!("tag-number-{i:02}"), 1.0))
            .collect();
        weights.push(("x".into(), 20.0));
        let s = TagScorer::new(weights).unwrap();
        // "x" + two numbered tags: (20 + 1 + 1) / 40 = 0.55
        assert_eq!(
            score(&s, &["tag-number-03", "x", "tag-number-19", "y"]),
            0.55
        );
        let f = s.with_match(TagMatch::AsciiCaseInsensitive).unwrap();
        // folded: "TAG-NUMBER-07" and "X" match: (1 + 20) / 40 = 0.525
        assert_eq!(score(&f, &["TAG-NUMBER-07", "X"]), 0.525);
    }

    #[test]
    fn weight_lookup_and_total() {
        let s = abc();
        assert_eq!(s.weight("b"), Some(0.3));
        assert_eq!(s.weight("B"), None);
        assert_eq!(s.weight("z"), None);
        assert!((s.total_weight() - 1.0).abs() < 1e-15);
    }
}
