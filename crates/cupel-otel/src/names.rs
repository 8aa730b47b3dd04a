//! Every name this crate writes into telemetry, in one place.

use cupel_core::{ExclusionReason, PipelineStage};

/// The instrumentation scope (tracer) name of Cupel spans: `"cupel"`.
///
/// Configure this name in a tracer provider's filters or views to receive (or
/// silence) Cupel spans. The `tracing` integration uses the same string as its
/// event target.
pub const TRACER_NAME: &str = "cupel";

pub(crate) const ROOT_SPAN: &str = "cupel.pipeline";

// Root span attributes.
pub(crate) const BUDGET_MAX_TOKENS: &str = "cupel.budget.max_tokens";
pub(crate) const BUDGET_TARGET_TOKENS: &str = "cupel.budget.target_tokens";
pub(crate) const VERBOSITY: &str = "cupel.verbosity";
pub(crate) const CANDIDATE_COUNT: &str = "cupel.candidate_count";
pub(crate) const INCLUDED_COUNT: &str = "cupel.included_count";
pub(crate) const EXCLUDED_COUNT: &str = "cupel.excluded_count";

// Stage span attributes.
pub(crate) const STAGE_NAME: &str = "cupel.stage.name";
pub(crate) const STAGE_ITEM_COUNT_IN: &str = "cupel.stage.item_count_in";
pub(crate) const STAGE_ITEM_COUNT_OUT: &str = "cupel.stage.item_count_out";
pub(crate) const EXCLUSION_COUNT: &str = "cupel.exclusion.count";

// Events and their attributes.
pub(crate) const EXCLUSION_EVENT: &str = "cupel.exclusion";
pub(crate) const EXCLUSION_REASON: &str = "cupel.exclusion.reason";
pub(crate) const EXCLUSION_ITEM_KIND: &str = "cupel.exclusion.item_kind";
pub(crate) const EXCLUSION_ITEM_TOKENS: &str = "cupel.exclusion.item_tokens";
pub(crate) const EXCLUSION_VARIANT: &str = "cupel.exclusion.variant";
pub(crate) const EXCLUSION_GROUP: &str = "cupel.exclusion.group";
pub(crate) const INCLUDED_EVENT: &str = "cupel.item.included";
pub(crate) const ITEM_KIND: &str = "cupel.item.kind";
pub(crate) const ITEM_TOKENS: &str = "cupel.item.tokens";
pub(crate) const ITEM_SCORE: &str = "cupel.item.score";
pub(crate) const OVERFLOW_EVENT: &str = "cupel.overflow";
pub(crate) const OVERFLOW_TOKENS_OVER_BUDGET: &str = "cupel.overflow.tokens_over_budget";
pub(crate) const OVERFLOW_ITEM_COUNT: &str = "cupel.overflow.item_count";
pub(crate) const SHORTFALL_EVENT: &str = "cupel.shortfall";
pub(crate) const SHORTFALL_KIND: &str = "cupel.shortfall.kind";
pub(crate) const SHORTFALL_REQUIRED_COUNT: &str = "cupel.shortfall.required_count";
pub(crate) const SHORTFALL_SATISFIED_COUNT: &str = "cupel.shortfall.satisfied_count";

/// The span name of a stage: `cupel.stage.` plus the lowercase stage name.
pub(crate) fn stage_span_name(stage: PipelineStage) -> &'static str {
    match stage {
        PipelineStage::Classify => "cupel.stage.classify",
        PipelineStage::Score => "cupel.stage.score",
        PipelineStage::Deduplicate => "cupel.stage.deduplicate",
        PipelineStage::Slice => "cupel.stage.slice",
        PipelineStage::Place => "cupel.stage.place",
        _ => "cupel.stage.unknown",
    }
}

/// The eight exclusion reason names of the specification's table, the
/// reserved ones included.
const SPEC_REASONS: [&str; 8] = [
    "BudgetExceeded",
    "ScoredTooLow",
    "Deduplicated",
    "QuotaCapExceeded",
    "QuotaRequireDisplaced",
    "NegativeTokens",
    "PinnedOverride",
    "Filtered",
];

/// The value recorded as `cupel.exclusion.reason`: the reason's variant name
/// when it is one of the specification's eight (`"BudgetExceeded"`,
/// `"Deduplicated"`, `"PinnedOverride"`, ...), otherwise `"Unknown"`.
///
/// `"Unknown"` covers a reason this implementation adds (`CountCapExceeded`,
/// the count-quota slicers' cap exclusion; `GroupExcluded`, the atomic-group
/// extension's), any variant added to `cupel-core`
/// later, and [`ExclusionReason::Unknown`] — a reason read from another
/// implementation's data, whose free-text wire name this version cannot vouch
/// for. So the attribute always stays within the specification's set plus
/// one fallback. A collector built
/// [`with_extras(true)`](crate::CupelOtelTraceCollector::with_extras) also
/// records the core's variant name as `cupel.exclusion.variant` when it
/// differs from this value.
///
/// The result is `'static`, so recording it allocates nothing.
///
/// ```
/// use cupel_core::ExclusionReason;
/// use cupel_otel::exclusion_reason_name;
/// let budget = ExclusionReason::BudgetExceeded { item_tokens: 400, available_tokens: 50 };
/// assert_eq!(exclusion_reason_name(&budget), "BudgetExceeded");
/// let cap = ExclusionReason::CountCapExceeded { kind: "ToolOutput".into(), cap: 2, count: 2 };
/// assert_eq!(exclusion_reason_name(&cap), "Unknown");
/// let group = ExclusionReason::GroupExcluded { group: "call-1".into(), group_tokens: 80, available_tokens: 10 };
/// assert_eq!(exclusion_reason_name(&group), "Unknown");
/// let foreign = ExclusionReason::Unknown { reason: "Embargoed".into() };
/// assert_eq!(exclusion_reason_name(&foreign), "Unknown");
/// ```
pub fn exclusion_reason_name(reason: &ExclusionReason) -> &'static str {
    let name = reason.variant_name();
    if SPEC_REASONS.contains(&name) {
        name
    } else {
        "Unknown"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_reasons_keep_their_names_and_others_are_unknown() {
        // One value of every variant cupel-core knows: the specification's
        // eight keep their wire name; CountCapExceeded (ours) is "Unknown".
        let spec = [
            ExclusionReason::BudgetExceeded {
                item_tokens: 1,
                available_tokens: 0,
            },
            ExclusionReason::ScoredTooLow {
                score: 0.1,
                threshold: 0.5,
            },
            ExclusionReason::Deduplicated {
                deduplicated_against: "x".into(),
            },
            ExclusionReason::QuotaCapExceeded {
                kind: "Message".into(),
                cap: 1,
                actual: 2,
            },
            ExclusionReason::QuotaRequireDisplaced {
                displaced_by_kind: "Memory".into(),
            },
            ExclusionReason::NegativeTokens { tokens: -1 },
            ExclusionReason::PinnedOverride {
                displaced_by: "sys".into(),
            },
            ExclusionReason::Filtered {
                filter_name: "f".into(),
            },
        ];
        let names: Vec<&str> = spec.iter().map(exclusion_reason_name).collect();
        assert_eq!(names, SPEC_REASONS);
        for r in &spec {
            assert_eq!(exclusion_reason_name(r), r.name());
        }
        let ours = ExclusionReason::CountCapExceeded {
            kind: "Message".into(),
            cap: 1,
            count: 1,
        };
        assert_eq!(exclusion_reason_name(&ours), "Unknown");
    }

    #[test]
    fn foreign_reason_names_fall_back_to_unknown() {
        for wire in ["Embargoed", "", "a very long free-text reason"] {
            let r = ExclusionReason::Unknown {
                reason: wire.into(),
            };
            assert_eq!(exclusion_reason_name(&r), "Unknown");
        }
    }

    #[test]
    fn stage_span_names_are_prefixed_lowercase_stage_names() {
        for stage in PipelineStage::ALL {
            assert_eq!(
                stage_span_name(stage),
                format!("cupel.stage.{}", stage.lowercase_name())
            );
        }
        assert_eq!(
            stage_span_name(PipelineStage::Unknown),
            "cupel.stage.unknown"
        );
    }
}
