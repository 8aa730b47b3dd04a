//! [`ReasonKind`]: a field-less name for each exclusion-reason variant.

use std::fmt;

use cupel_core::ExclusionReason;

/// Names an [`ExclusionReason`] variant without its fields.
///
/// The reason-matching assertions compare *variants*, never fields, so writing
/// `ExclusionReason::BudgetExceeded { item_tokens: 0, available_tokens: 0 }`
/// just to name the variant is noise. Every method that takes a reason accepts
/// `impl Into<ExclusionReason>`, so either form works:
///
/// ```
/// use cupel_core::ExclusionReason;
/// use cupel_testing::ReasonKind;
///
/// let seen = ExclusionReason::BudgetExceeded { item_tokens: 400, available_tokens: 50 };
/// assert!(ReasonKind::BudgetExceeded.matches(&seen));
/// assert!(!ReasonKind::Deduplicated.matches(&seen));
/// // Converting gives a placeholder value of that variant (zero / empty fields).
/// assert_eq!(ExclusionReason::from(ReasonKind::BudgetExceeded).name(), "BudgetExceeded");
/// ```
///
/// Reasons this version of `cupel-core` reads from other implementations
/// ([`ExclusionReason::Unknown`]) have no `ReasonKind`; pass an
/// `ExclusionReason::Unknown { reason: "Name".into() }` value instead (two
/// unknown reasons are the same variant when their names are equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ReasonKind {
    /// [`ExclusionReason::BudgetExceeded`].
    BudgetExceeded,
    /// [`ExclusionReason::ScoredTooLow`] (reserved).
    ScoredTooLow,
    /// [`ExclusionReason::Deduplicated`].
    Deduplicated,
    /// [`ExclusionReason::QuotaCapExceeded`] (reserved).
    QuotaCapExceeded,
    /// [`ExclusionReason::QuotaRequireDisplaced`] (reserved).
    QuotaRequireDisplaced,
    /// [`ExclusionReason::NegativeTokens`].
    NegativeTokens,
    /// [`ExclusionReason::PinnedOverride`].
    PinnedOverride,
    /// [`ExclusionReason::Filtered`] (reserved).
    Filtered,
    /// [`ExclusionReason::CountCapExceeded`].
    CountCapExceeded,
    /// [`ExclusionReason::GroupExcluded`] (atomic-group extension).
    GroupExcluded,
}

impl ReasonKind {
    /// Every variant, in declaration order.
    pub const ALL: [ReasonKind; 10] = [
        ReasonKind::BudgetExceeded,
        ReasonKind::ScoredTooLow,
        ReasonKind::Deduplicated,
        ReasonKind::QuotaCapExceeded,
        ReasonKind::QuotaRequireDisplaced,
        ReasonKind::NegativeTokens,
        ReasonKind::PinnedOverride,
        ReasonKind::Filtered,
        ReasonKind::CountCapExceeded,
        ReasonKind::GroupExcluded,
    ];

    /// The variant name, identical to [`ExclusionReason::name`] (it is
    /// [`ExclusionReason::variant_name`] of the variant; no allocation).
    pub fn name(self) -> &'static str {
        ExclusionReason::from(self).variant_name()
    }

    /// Whether `reason` is this variant (fields ignored).
    pub fn matches(self, reason: &ExclusionReason) -> bool {
        ExclusionReason::from(self).same_variant(reason)
    }
}

impl fmt::Display for ReasonKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<ReasonKind> for ExclusionReason {
    /// A value of the variant with zero / empty fields; only useful for variant matching.
    fn from(kind: ReasonKind) -> Self {
        match kind {
            ReasonKind::BudgetExceeded => ExclusionReason::BudgetExceeded {
                item_tokens: 0,
                available_tokens: 0,
            },
            ReasonKind::ScoredTooLow => ExclusionReason::ScoredTooLow {
                score: 0.0,
                threshold: 0.0,
            },
            ReasonKind::Deduplicated => ExclusionReason::Deduplicated {
                deduplicated_against: String::new(),
            },
            ReasonKind::QuotaCapExceeded => ExclusionReason::QuotaCapExceeded {
                kind: String::new(),
                cap: 0,
                actual: 0,
            },
            ReasonKind::QuotaRequireDisplaced => ExclusionReason::QuotaRequireDisplaced {
                displaced_by_kind: String::new(),
            },
            ReasonKind::NegativeTokens => ExclusionReason::NegativeTokens { tokens: 0 },
            ReasonKind::PinnedOverride => ExclusionReason::PinnedOverride {
                displaced_by: String::new(),
            },
            ReasonKind::Filtered => ExclusionReason::Filtered {
                filter_name: String::new(),
            },
            ReasonKind::CountCapExceeded => ExclusionReason::CountCapExceeded {
                kind: String::new(),
                cap: 0,
                count: 0,
            },
            ReasonKind::GroupExcluded => ExclusionReason::GroupExcluded {
                group: String::new(),
                group_tokens: 0,
                available_tokens: 0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_spec_variant_names() {
        // The specification's eight variants, then this implementation's
        // count-cap reason (clarification D-10) and the atomic-group one.
        let names: Vec<&str> = ReasonKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(
            names,
            [
                "BudgetExceeded",
                "ScoredTooLow",
                "Deduplicated",
                "QuotaCapExceeded",
                "QuotaRequireDisplaced",
                "NegativeTokens",
                "PinnedOverride",
                "Filtered",
                "CountCapExceeded",
                "GroupExcluded",
            ]
        );
    }

    #[test]
    fn names_agree_with_core_and_variants_are_distinct() {
        for (i, a) in ReasonKind::ALL.into_iter().enumerate() {
            let reason = ExclusionReason::from(a);
            assert_eq!(reason.name(), a.name());
            assert_eq!(a.to_string(), a.name());
            for (j, b) in ReasonKind::ALL.into_iter().enumerate() {
                assert_eq!(b.matches(&reason), i == j, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn matching_ignores_fields() {
        let r = ExclusionReason::PinnedOverride {
            displaced_by: "system prompt".into(),
        };
        assert!(ReasonKind::PinnedOverride.matches(&r));
        let unknown = ExclusionReason::Unknown {
            reason: "PinnedOverride".into(),
        };
        // An unknown reason is never a known variant, even with a colliding name.
        assert!(!ReasonKind::PinnedOverride.matches(&unknown));
    }
}
