//! [`MetadataKeyScorer`]: a multiplier for items whose metadata matches.

use cupel_core::{ContextItem, CupelError, Scorer};

/// Returns `boost` for items whose metadata has `key` set to exactly `value`,
/// and the neutral multiplier 1.0 for every other item.
///
/// The value comparison is exact string equality (no parsing, no case
/// folding). The result is a *multiplier*, not a score in `[0, 1]`: it is not
/// clamped. An absolute scorer: peers are ignored.
///
/// ```
/// use cupel_core::{ContextItem, Scorer};
/// use cupel_scorers::MetadataKeyScorer;
///
/// let s = MetadataKeyScorer::new("cupel:priority", "high", 1.5)?;
/// let high = ContextItem::builder("x", 1).metadata("cupel:priority", "high").build()?;
/// let plain = ContextItem::new("y", 1)?;
/// assert_eq!(s.score_all(&[&high, &plain]), vec![1.5, 1.0]);
/// assert!(MetadataKeyScorer::new("cupel:priority", "high", 0.0).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataKeyScorer {
    key: String,
    value: String,
    boost: f64,
}

impl MetadataKeyScorer {
    /// The multiplier for items that do not match.
    pub const NEUTRAL: f64 = 1.0;

    /// A scorer boosting items whose `metadata[key] == value`.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] when `boost` is not a finite number `> 0`.
    pub fn new(
        key: impl Into<String>,
        value: impl Into<String>,
        boost: f64,
    ) -> Result<Self, CupelError> {
        if !(boost > 0.0 && boost.is_finite()) {
            return Err(CupelError::ScorerConfig(format!(
                "MetadataKeyScorer: boost must be a finite number greater than 0 (got {boost})"
            )));
        }
        Ok(Self {
            key: key.into(),
            value: value.into(),
            boost,
        })
    }

    /// The metadata key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value that triggers the boost.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The multiplier for matching items.
    pub fn boost(&self) -> f64 {
        self.boost
    }

    fn score_item(&self, item: &ContextItem) -> f64 {
        match item.metadata().get(&self.key) {
            Some(raw) if *raw == self.value => self.boost,
            _ => Self::NEUTRAL,
        }
    }
}

impl Scorer for MetadataKeyScorer {
    /// `boost` or 1.0; an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        items
            .get(index)
            .map_or(f64::NAN, |item| self.score_item(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_meta(value: Option<&str>) -> ContextItem {
        let mut b = ContextItem::builder("x", 1);
        if let Some(v) = value {
            b = b.metadata("cupel:priority", v);
        }
        b.build().unwrap()
    }

    fn high() -> MetadataKeyScorer {
        MetadataKeyScorer::new("cupel:priority", "high", 1.5).unwrap()
    }

    // Outline 1 / table row 2: match -> boost.
    #[test]
    fn match_returns_boost() {
        assert_eq!(high().score(0, &[&with_meta(Some("high"))]), 1.5);
    }

    // Outline 2 / row 3: value differs -> 1.0 (comparison is exact).
    #[test]
    fn mismatch_returns_neutral() {
        assert_eq!(high().score(0, &[&with_meta(Some("normal"))]), 1.0);
        assert_eq!(high().score(0, &[&with_meta(Some("High"))]), 1.0);
        assert_eq!(high().score(0, &[&with_meta(Some("high "))]), 1.0);
    }

    // Outline 3 / row 1: key missing -> 1.0 regardless of boost.
    #[test]
    fn missing_key_returns_neutral() {
        assert_eq!(high().score(0, &[&with_meta(None)]), 1.0);
        let big = MetadataKeyScorer::new("cupel:priority", "high", 40.0).unwrap();
        assert_eq!(big.score(0, &[&with_meta(None)]), 1.0);
    }

    // Outlines 4 and 5, rows 4-6: zero, negative, NaN, infinite boost rejected.
    #[test]
    fn invalid_boosts_are_scorer_config_errors() {
        for bad in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let e = MetadataKeyScorer::new("cupel:priority", "high", bad).unwrap_err();
            assert!(
                matches!(&e, CupelError::ScorerConfig(m) if m.contains("boost") && m.contains(&bad.to_string())),
                "{e}"
            );
        }
        assert_eq!(
            MetadataKeyScorer::new("k", "v", -1.0).unwrap_err(),
            CupelError::ScorerConfig(
                "MetadataKeyScorer: boost must be a finite number greater than 0 (got -1)".into()
            )
        );
    }

    #[test]
    fn boosts_below_one_are_allowed_and_unclamped() {
        let s = MetadataKeyScorer::new("k", "v", 0.25).unwrap();
        let item = ContextItem::builder("x", 1)
            .metadata("k", "v")
            .build()
            .unwrap();
        assert_eq!(s.score(0, &[&item]), 0.25);
        assert_eq!((s.key(), s.value(), s.boost()), ("k", "v", 0.25));
    }
}
