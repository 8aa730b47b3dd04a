//! [`MetadataTrustScorer`]: the caller's `cupel:trust` metadata value.

use cupel_core::{ContextItem, CupelError, Scorer};

/// Scores an item by the trust value in its `cupel:trust` metadata entry,
/// clamped to `[0, 1]`.
///
/// The value is parsed with `str::parse::<f64>()` (so `"0.85"`, `"1e-1"` and
/// `"-0.1"` parse; `" 0.5"` with a space, `""` and `"high"` do not). The
/// configured default score is returned when the key is missing, when the
/// value does not parse, and when it parses to a non-finite number (`"NaN"`,
/// `"inf"`, `"-Infinity"`) — non-finite values are never clamped to a bound.
/// Otherwise the value is clamped to `[0, 1]`.
///
/// An absolute scorer: peers are ignored. The value is an input signal only;
/// it never excludes an item.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::MetadataTrustScorer;
///
/// let trusted = ContextItem::builder("x", 1).metadata("cupel:trust", "0.85").build()?;
/// let unknown = ContextItem::new("y", 1)?;
/// let s = MetadataTrustScorer::new(0.3)?;
/// assert_eq!(s.score_all(&[&trusted, &unknown]), vec![0.85, 0.3]);
/// assert!(MetadataTrustScorer::new(1.5).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetadataTrustScorer {
    default_score: f64,
}

impl MetadataTrustScorer {
    /// The metadata key the scorer reads.
    pub const KEY: &'static str = "cupel:trust";

    /// The default score when none is configured.
    pub const DEFAULT_SCORE: f64 = 0.5;

    /// A scorer returning `default_score` for items without a usable trust value.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] when `default_score` is outside `[0, 1]` or NaN.
    pub fn new(default_score: f64) -> Result<Self, CupelError> {
        if !(0.0..=1.0).contains(&default_score) {
            return Err(CupelError::ScorerConfig(format!(
                "MetadataTrustScorer: default_score must be within [0, 1] (got {default_score})"
            )));
        }
        Ok(Self { default_score })
    }

    /// The score for items without a usable trust value.
    pub fn default_score(&self) -> f64 {
        self.default_score
    }

    fn score_item(&self, item: &ContextItem) -> f64 {
        match item
            .metadata()
            .get(Self::KEY)
            .and_then(|raw| raw.parse::<f64>().ok())
        {
            Some(value) if value.is_finite() => value.clamp(0.0, 1.0),
            _ => self.default_score,
        }
    }
}

impl Default for MetadataTrustScorer {
    /// A default score of 0.5.
    fn default() -> Self {
        Self {
            default_score: Self::DEFAULT_SCORE,
        }
    }
}

impl Scorer for MetadataTrustScorer {
    /// The clamped trust value or the default; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        items
            .get(index)
            .map_or(f64::NAN, |item| self.score_item(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score_with(s: &MetadataTrustScorer, raw: Option<&str>) -> f64 {
        let mut b = ContextItem::builder("x", 1);
        if let Some(raw) = raw {
            b = b.metadata(MetadataTrustScorer::KEY, raw);
        }
        let item = b.build().unwrap();
        s.score(0, &[&item])
    }

    // Every row of the edge-case table, with default_score = 0.5.
    #[test]
    fn edge_case_table() {
        let s = MetadataTrustScorer::default();
        assert_eq!(score_with(&s, None), 0.5); // key absent
        assert_eq!(score_with(&s, Some("high")), 0.5); // unparseable
        assert_eq!(score_with(&s, Some("")), 0.5); // unparseable (empty)
        assert_eq!(score_with(&s, Some("NaN")), 0.5); // NaN
        assert_eq!(score_with(&s, Some("+Infinity")), 0.5); // +inf
        assert_eq!(score_with(&s, Some("-Infinity")), 0.5); // -inf
        assert_eq!(score_with(&s, Some("0.0")), 0.0);
        assert_eq!(score_with(&s, Some("0.75")), 0.75);
        assert_eq!(score_with(&s, Some("1.0")), 1.0);
        assert_eq!(score_with(&s, Some("-0.1")), 0.0); // clamped low
        assert_eq!(score_with(&s, Some("1.5")), 1.0); // clamped high
    }

    // The five conformance vector outlines.
    #[test]
    fn conformance_outlines() {
        let s = MetadataTrustScorer::new(0.5).unwrap();
        // 1. present and valid: "0.85" -> 0.85
        assert_eq!(score_with(&s, Some("0.85")), 0.85);
        // 2. key absent -> default 0.5
        assert_eq!(score_with(&s, None), 0.5);
        // 3. unparseable "high" -> default, not an error
        assert_eq!(score_with(&s, Some("high")), 0.5);
        // 4. "1.5" -> clamped to 1.0
        assert_eq!(score_with(&s, Some("1.5")), 1.0);
        // 5. "NaN" / "Infinity" -> default, not a bound
        assert_eq!(score_with(&s, Some("NaN")), 0.5);
        assert_eq!(score_with(&s, Some("Infinity")), 0.5);
    }

    #[test]
    fn rust_parse_rules_apply() {
        let s = MetadataTrustScorer::new(0.2).unwrap();
        assert_eq!(score_with(&s, Some("1e-1")), 0.1);
        assert_eq!(score_with(&s, Some(" 0.5")), 0.2); // whitespace does not parse
        assert_eq!(score_with(&s, Some("inf")), 0.2);
        // Other metadata keys are ignored.
        let item = ContextItem::builder("x", 1)
            .metadata("trust", "0.9")
            .build()
            .unwrap();
        assert_eq!(s.score(0, &[&item]), 0.2);
    }

    #[test]
    fn default_score_is_validated() {
        assert_eq!(MetadataTrustScorer::default().default_score(), 0.5);
        assert_eq!(MetadataTrustScorer::new(0.0).unwrap().default_score(), 0.0);
        assert_eq!(MetadataTrustScorer::new(1.0).unwrap().default_score(), 1.0);
        for bad in [-0.01, 1.01, f64::NAN, f64::INFINITY] {
            let e = MetadataTrustScorer::new(bad).unwrap_err();
            assert!(
                matches!(&e, CupelError::ScorerConfig(m) if m.contains("default_score") && m.contains(&bad.to_string())),
                "{e}"
            );
        }
    }
}
