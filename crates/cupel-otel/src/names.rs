//! Every name Cupel writes into telemetry: span, attribute and event names.
//!
//! Use these constants to find Cupel's spans and attributes in a collector,
//! a view, a sampler or a test instead of repeating the strings. The
//! OpenTelemetry bridge ([`OtelCollector`](crate::OtelCollector)) and the
//! `tracing` integration (`TracingCollector`, feature `tracing`) use the same
//! span names; see the collectors' docs for which tier records what, and
//! specification chapter 8 for the attribute table.
//!
//! ```text
//! cupel.pipeline                 PIPELINE_SPAN
//! ├── cupel.stage.classify       STAGE_CLASSIFY_SPAN  (stage_span_name(PipelineStage::Classify))
//! ├── cupel.stage.score          STAGE_SCORE_SPAN
//! ├── cupel.stage.deduplicate    STAGE_DEDUPLICATE_SPAN
//! ├── cupel.stage.slice          STAGE_SLICE_SPAN
//! └── cupel.stage.place          STAGE_PLACE_SPAN
//! ```
//!
//! ```
//! use cupel_core::PipelineStage;
//! use cupel_otel::names;
//!
//! assert_eq!(names::PIPELINE_SPAN, "cupel.pipeline");
//! assert_eq!(names::stage_span_name(PipelineStage::Slice), names::STAGE_SLICE_SPAN);
//! assert_eq!(names::EXCLUSION_REASON, "cupel.exclusion.reason");
//! ```
//!
//! The run-budget and context-gate names ([`BUDGET_REMAINING_TIME`],
//! [`GATE_EVENT_NAME`], ...) are re-exported here as well as at the crate root.

use cupel_core::{ExclusionReason, PipelineStage};

#[cfg(feature = "gate")]
pub use crate::gate::GATE_EVENT_NAME;
pub use crate::run_budget::{
    BUDGET_DIMENSION, BUDGET_EXCEEDED_EVENT, BUDGET_PHASE, BUDGET_REMAINING_TIME,
    BUDGET_REMAINING_TOKENS_INPUT, BUDGET_REMAINING_TOKENS_OUTPUT, BUDGET_REQUESTER_DEPTH,
    BUDGET_REQUESTER_LABEL, BUDGET_SCOPE_DEPTH, BUDGET_STATE,
};

/// The instrumentation scope (tracer) name of Cupel spans: `"cupel"`.
///
/// Configure this name in a tracer provider's filters or views to receive (or
/// silence) Cupel spans. The `tracing` integration uses the same string as its
/// target.
pub const TRACER_NAME: &str = "cupel";

/// The root span of one run: `"cupel.pipeline"`.
pub const PIPELINE_SPAN: &str = "cupel.pipeline";
/// The Classify stage's span: `"cupel.stage.classify"`.
pub const STAGE_CLASSIFY_SPAN: &str = "cupel.stage.classify";
/// The Score stage's span: `"cupel.stage.score"`.
pub const STAGE_SCORE_SPAN: &str = "cupel.stage.score";
/// The Deduplicate stage's span: `"cupel.stage.deduplicate"`.
pub const STAGE_DEDUPLICATE_SPAN: &str = "cupel.stage.deduplicate";
/// The Slice stage's span: `"cupel.stage.slice"`.
pub const STAGE_SLICE_SPAN: &str = "cupel.stage.slice";
/// The Place stage's span: `"cupel.stage.place"`.
pub const STAGE_PLACE_SPAN: &str = "cupel.stage.place";
/// The span of a stage this version does not know: `"cupel.stage.unknown"`.
pub const STAGE_UNKNOWN_SPAN: &str = "cupel.stage.unknown";

// Root span attributes.
/// Root span: the budget's `max_tokens` (int).
pub const BUDGET_MAX_TOKENS: &str = "cupel.budget.max_tokens";
/// Root span, extra: the budget's `target_tokens` (int).
pub const BUDGET_TARGET_TOKENS: &str = "cupel.budget.target_tokens";
/// Root span: the verbosity tier's name (string).
pub const VERBOSITY: &str = "cupel.verbosity";
/// Root span, extra: items given to the run (int).
pub const CANDIDATE_COUNT: &str = "cupel.candidate_count";
/// Root span, extra: items in the returned window (int).
pub const INCLUDED_COUNT: &str = "cupel.included_count";
/// Root span, extra: items excluded by every stage together (int).
pub const EXCLUDED_COUNT: &str = "cupel.excluded_count";

// Stage span attributes.
/// Stage span: the stage's lowercase name (string).
pub const STAGE_NAME: &str = "cupel.stage.name";
/// Stage span: items the stage received (int).
pub const STAGE_ITEM_COUNT_IN: &str = "cupel.stage.item_count_in";
/// Stage span: items the stage passed on (int).
pub const STAGE_ITEM_COUNT_OUT: &str = "cupel.stage.item_count_out";
/// Stage span: items the stage excluded (int; `StageAndExclusions` and up).
pub const EXCLUSION_COUNT: &str = "cupel.exclusion.count";

// Events and their attributes.
/// Event on a stage span, one per excluded item.
pub const EXCLUSION_EVENT: &str = "cupel.exclusion";
/// Exclusion event: the reason's name, see [`exclusion_reason_name`] (string).
pub const EXCLUSION_REASON: &str = "cupel.exclusion.reason";
/// Exclusion event: the item's kind (string).
pub const EXCLUSION_ITEM_KIND: &str = "cupel.exclusion.item_kind";
/// Exclusion event: the item's tokens (int).
pub const EXCLUSION_ITEM_TOKENS: &str = "cupel.exclusion.item_tokens";
/// Exclusion event, extra: the core's variant name where the reason reads `"Unknown"` (string).
pub const EXCLUSION_VARIANT: &str = "cupel.exclusion.variant";
/// Exclusion event, extra: the item's atomic group id (string).
pub const EXCLUSION_GROUP: &str = "cupel.exclusion.group";
/// Event on the Place span, one per window item (`Full`).
pub const INCLUDED_EVENT: &str = "cupel.item.included";
/// Inclusion event: the item's kind (string).
pub const ITEM_KIND: &str = "cupel.item.kind";
/// Inclusion event: the item's tokens (int).
pub const ITEM_TOKENS: &str = "cupel.item.tokens";
/// Inclusion event: the item's score (double).
pub const ITEM_SCORE: &str = "cupel.item.score";
/// Event on the Place span, extra: the selection overflowed under `Proceed`.
pub const OVERFLOW_EVENT: &str = "cupel.overflow";
/// Overflow event: tokens above the target (int).
pub const OVERFLOW_TOKENS_OVER_BUDGET: &str = "cupel.overflow.tokens_over_budget";
/// Overflow event: items in the overflowing selection (int).
pub const OVERFLOW_ITEM_COUNT: &str = "cupel.overflow.item_count";
/// Event on the Slice span, extra: one per unmet count requirement.
pub const SHORTFALL_EVENT: &str = "cupel.shortfall";
/// Shortfall event: the kind (string).
pub const SHORTFALL_KIND: &str = "cupel.shortfall.kind";
/// Shortfall event: the configured `require_count` (int).
pub const SHORTFALL_REQUIRED_COUNT: &str = "cupel.shortfall.required_count";
/// Shortfall event: how many could be committed (int).
pub const SHORTFALL_SATISFIED_COUNT: &str = "cupel.shortfall.satisfied_count";

/// The span name of a stage: `cupel.stage.` plus the lowercase stage name
/// ([`STAGE_UNKNOWN_SPAN`] for a stage this version does not know).
pub fn stage_span_name(stage: PipelineStage) -> &'static str {
    match stage {
        PipelineStage::Classify => STAGE_CLASSIFY_SPAN,
        PipelineStage::Score => STAGE_SCORE_SPAN,
        PipelineStage::Deduplicate => STAGE_DEDUPLICATE_SPAN,
        PipelineStage::Slice => STAGE_SLICE_SPAN,
        PipelineStage::Place => STAGE_PLACE_SPAN,
        _ => STAGE_UNKNOWN_SPAN,
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
/// [`with_extras(true)`](crate::OtelCollector::with_extras) also
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
