//! [`KindScorer`]: a weight per [`ContextKind`].

use std::collections::BTreeMap;

use cupel_core::{ContextItem, ContextKind, CupelError, Scorer};

/// Scores an item by looking its kind up in a weight map; kinds not in the map
/// score 0.0.
///
/// Kinds compare case-insensitively (ASCII folding — it is how
/// [`ContextKind`] equality works), so a weight for `"Message"` also applies to
/// `"message"` and `"MESSAGE"`.
///
/// The default map ([`KindScorer::default_weights`], also [`Default`]) is
/// exactly:
///
/// | kind | weight |
/// | --- | --- |
/// | `SystemPrompt` | 1.0 |
/// | `Memory` | 0.8 |
/// | `ToolOutput` | 0.6 |
/// | `Document` | 0.4 |
/// | `Message` | 0.2 |
///
/// Custom weights must be finite and `>= 0`; they may exceed 1.0 and are
/// returned as given (no clamping). An absolute scorer: peers are ignored.
///
/// ```
/// use cupel_core::{ContextItem, ContextKind, Scorer};
/// use cupel_scorers::KindScorer;
///
/// let memory = ContextItem::builder("fact", 1).kind(ContextKind::new("memory")?).build()?;
/// assert_eq!(KindScorer::default_weights().score(0, &[&memory]), 0.8);
///
/// let custom = KindScorer::from_names([("Memory", 2.0), ("Document", 0.5)])?;
/// assert_eq!(custom.score(0, &[&memory]), 2.0);
/// assert!(KindScorer::from_names([("Memory", -1.0)]).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct KindScorer {
    weights: BTreeMap<ContextKind, f64>,
    /// The same entries as a list, scanned linearly when short (faster than
    /// the tree for a handful of kinds: most mismatches differ in length).
    scan: Option<Vec<(ContextKind, f64)>>,
}

/// Up to this many kinds, lookups scan a list instead of walking the tree.
const SCAN_LIMIT: usize = 16;

impl KindScorer {
    /// The specification's default weight map, in descending weight order.
    pub const DEFAULT_WEIGHTS: [(ContextKind, f64); 5] = [
        (ContextKind::SYSTEM_PROMPT, 1.0),
        (ContextKind::MEMORY, 0.8),
        (ContextKind::TOOL_OUTPUT, 0.6),
        (ContextKind::DOCUMENT, 0.4),
        (ContextKind::MESSAGE, 0.2),
    ];

    /// A scorer with the default weights ([`Self::DEFAULT_WEIGHTS`]).
    pub fn default_weights() -> Self {
        Self::from_map(Self::DEFAULT_WEIGHTS.into_iter().collect())
    }

    fn from_map(weights: BTreeMap<ContextKind, f64>) -> Self {
        let scan = (weights.len() <= SCAN_LIMIT)
            .then(|| weights.iter().map(|(k, w)| (k.clone(), *w)).collect());
        Self { weights, scan }
    }

    /// A scorer with custom weights: anything that iterates `(ContextKind, f64)`
    /// pairs (a `BTreeMap`, a `HashMap`, a `Vec` of pairs, an array).
    ///
    /// An empty map is allowed (every item then scores 0.0).
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming the kind and the value when a weight
    /// is negative or not finite, or when the same kind appears twice (kinds
    /// compare case-insensitively, so `"Memory"` and `"memory"` collide).
    pub fn new<I>(weights: I) -> Result<Self, CupelError>
    where
        I: IntoIterator<Item = (ContextKind, f64)>,
    {
        let mut map = BTreeMap::new();
        for (kind, weight) in weights {
            if weight < 0.0 {
                return Err(CupelError::ScorerConfig(format!(
                    "KindScorer: weight for kind '{kind}' must be non-negative (got {weight})"
                )));
            }
            if !weight.is_finite() {
                return Err(CupelError::ScorerConfig(format!(
                    "KindScorer: weight for kind '{kind}' must be finite (got {weight})"
                )));
            }
            let shown = kind.to_string();
            if let Some(previous) = map.insert(kind, weight) {
                return Err(CupelError::ScorerConfig(format!(
                    "KindScorer: kind '{shown}' is configured twice (weights {previous} and {weight}; \
                     kinds compare case-insensitively)"
                )));
            }
        }
        Ok(Self::from_map(map))
    }

    /// Like [`new`](Self::new), with kinds given as strings.
    ///
    /// # Errors
    /// As [`new`](Self::new), plus [`CupelError::ScorerConfig`] for a blank kind name.
    pub fn from_names<I, S>(weights: I) -> Result<Self, CupelError>
    where
        I: IntoIterator<Item = (S, f64)>,
        S: AsRef<str>,
    {
        let mut pairs = Vec::new();
        for (name, weight) in weights {
            let name = name.as_ref();
            let kind = ContextKind::new(name).map_err(|_| {
                CupelError::ScorerConfig(format!(
                    "KindScorer: kind name must not be empty or whitespace-only (got {name:?})"
                ))
            })?;
            pairs.push((kind, weight));
        }
        Self::new(pairs)
    }

    /// The configured weights, ordered by kind (case-folded).
    pub fn weights(&self) -> &BTreeMap<ContextKind, f64> {
        &self.weights
    }

    /// The weight for `kind`, if configured.
    pub fn weight(&self, kind: &ContextKind) -> Option<f64> {
        self.weights.get(kind).copied()
    }

    fn score_item(&self, item: &ContextItem) -> f64 {
        let kind = item.kind();
        self.lookup(kind, kind.as_str())
    }

    fn lookup(&self, kind: &ContextKind, name: &str) -> f64 {
        match &self.scan {
            // `eq_str` compares addresses first: a well-known kind shares its
            // static spelling with the configured one.
            Some(list) => list
                .iter()
                .find(|(k, _)| k.eq_str(name))
                .map_or(0.0, |(_, w)| *w),
            None => self.weights.get(kind).copied().unwrap_or(0.0),
        }
    }
}

impl Default for KindScorer {
    fn default() -> Self {
        Self::default_weights()
    }
}

impl Scorer for KindScorer {
    /// The item's kind weight, or 0.0; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        items
            .get(index)
            .map_or(f64::NAN, |item| self.score_item(item))
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        // Gather every item's kind first — a loop without data-dependent
        // branches, so the CPU overlaps the reads of many items — then look
        // them up from the local list.
        let kinds: Vec<(&ContextKind, &str)> = items
            .iter()
            .map(|item| {
                let kind = item.kind();
                (kind, kind.as_str())
            })
            .collect();
        kinds
            .into_iter()
            .map(|(kind, name)| self.lookup(kind, name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item_of(kind: &str) -> ContextItem {
        ContextItem::builder("x", 1)
            .kind(ContextKind::new(kind).unwrap())
            .build()
            .unwrap()
    }

    fn score(s: &KindScorer, kind: &str) -> f64 {
        let item = item_of(kind);
        s.score(0, &[&item])
    }

    #[test]
    fn default_map_is_exactly_the_five_well_known_kinds() {
        let s = KindScorer::default();
        assert_eq!(s.weights().len(), 5);
        assert_eq!(score(&s, "SystemPrompt"), 1.0);
        assert_eq!(score(&s, "Memory"), 0.8);
        assert_eq!(score(&s, "ToolOutput"), 0.6);
        assert_eq!(score(&s, "Document"), 0.4);
        assert_eq!(score(&s, "Message"), 0.2);
    }

    // Edge-case table row 1: kind in the map -> its weight (case-insensitively).
    #[test]
    fn lookup_folds_ascii_case() {
        let s = KindScorer::default();
        for k in ["message", "MESSAGE", "mEsSaGe"] {
            assert_eq!(score(&s, k), 0.2, "{k}");
        }
        assert_eq!(score(&s, "toolOUTPUT"), 0.6);
    }

    // Row 2: kind not in the map -> 0.0.
    #[test]
    fn unknown_kind_scores_zero() {
        assert_eq!(score(&KindScorer::default(), "Screenshot"), 0.0);
    }

    // Row 3: empty custom map -> every item 0.0.
    #[test]
    fn empty_map_scores_zero() {
        let s = KindScorer::new([]).unwrap();
        assert_eq!(score(&s, "Message"), 0.0);
        assert_eq!(score(&s, "SystemPrompt"), 0.0);
    }

    // Row 4: a custom weight above 1.0 is returned as-is.
    #[test]
    fn weights_above_one_are_not_clamped() {
        let s = KindScorer::from_names([("Document", 3.5)]).unwrap();
        assert_eq!(score(&s, "document"), 3.5);
        // Zero is a valid weight.
        let z = KindScorer::from_names([("Document", 0.0)]).unwrap();
        assert_eq!(score(&z, "Document"), 0.0);
    }

    #[test]
    fn invalid_weights_are_rejected_naming_kind_and_value() {
        let neg = KindScorer::from_names([("Memory", -0.5)]).unwrap_err();
        assert_eq!(
            neg,
            CupelError::ScorerConfig(
                "KindScorer: weight for kind 'Memory' must be non-negative (got -0.5)".into()
            )
        );
        for bad in [f64::NAN, f64::INFINITY] {
            let e = KindScorer::from_names([("Memory", bad)]).unwrap_err();
            let CupelError::ScorerConfig(msg) = e else {
                panic!("wrong variant")
            };
            assert!(msg.contains("'Memory'") && msg.contains("finite"), "{msg}");
            assert!(msg.contains(&bad.to_string()), "{msg}");
        }
        let ninf = KindScorer::from_names([("Memory", f64::NEG_INFINITY)]).unwrap_err();
        assert!(matches!(ninf, CupelError::ScorerConfig(m) if m.contains("non-negative")));
    }

    #[test]
    fn case_variant_duplicates_and_blank_names_are_rejected() {
        let e = KindScorer::from_names([("Memory", 1.0), ("memory", 2.0)]).unwrap_err();
        assert!(matches!(e, CupelError::ScorerConfig(m) if m.contains("twice")));
        let e = KindScorer::from_names([("  ", 1.0)]).unwrap_err();
        assert!(matches!(e, CupelError::ScorerConfig(m) if m.contains("\"  \"")));
    }

    #[test]
    fn many_kinds_use_the_tree_and_agree() {
        // 20 custom kinds k0..k19 with weight i / 10 (over the scan limit).
        let names: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
        let s = KindScorer::from_names(names.iter().enumerate().map(|(i, n)| (n, i as f64 / 10.0)))
            .unwrap();
        assert!(s.scan.is_none());
        assert_eq!(score(&s, "K13"), 1.3);
        assert_eq!(score(&s, "k0"), 0.0);
        assert_eq!(score(&s, "Message"), 0.0);
    }

    #[test]
    fn accepts_maps_and_pair_lists() {
        let map: BTreeMap<ContextKind, f64> = [(ContextKind::MEMORY, 0.3)].into_iter().collect();
        let a = KindScorer::new(map).unwrap();
        let b = KindScorer::new(vec![(ContextKind::MEMORY, 0.3)]).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.weight(&ContextKind::new("MEMORY").unwrap()), Some(0.3));
    }

    #[test]
    fn well_known_kinds_share_one_spelling_across_crates() {
        // `new` runs in cupel-core, the constant is inlined here: both
        // point at the static spelling, so the scorer's address check hits.
        let built = ContextKind::new("Message").unwrap();
        let here = ContextKind::MESSAGE;
        assert!(std::ptr::eq(
            built.as_str().as_ptr(),
            here.as_str().as_ptr()
        ));
        let default = &KindScorer::DEFAULT_WEIGHTS[4].0;
        assert!(std::ptr::eq(
            built.as_str().as_ptr(),
            default.as_str().as_ptr()
        ));
        // A spelling that only folds to a well-known one is its own string.
        let folded = ContextKind::new("message").unwrap();
        assert!(!std::ptr::eq(
            folded.as_str().as_ptr(),
            here.as_str().as_ptr()
        ));
        assert_eq!(folded, here);
    }
}
