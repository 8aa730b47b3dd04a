//! Report metrics: single numbers (or per-kind rows) computed from a
//! [`SelectionReport`].

use cupel_core::{ContextBudget, ContextKind, SelectionReport};
use cupel_slicers::QuotaSet;

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// How full the window is: included tokens ÷ `budget.max_tokens()`.
///
/// The denominator is the hard ceiling, not the target, so a window that used
/// its whole target shows how much of the model's context it takes. When
/// `max_tokens` is 0 the utilisation is defined as 0.0 (clarification D-13);
/// an empty window gives 0.0. A `Proceed` overflow can exceed 1.0.
///
/// ```
/// use cupel_analytics::budget_utilization;
/// use cupel_core::{ContextBudget, ContextItem, IncludedItem, InclusionReason, SelectionReport};
///
/// let mut report = SelectionReport::default();
/// for (content, tokens) in [("a", 300), ("b", 200)] {
///     report.included.push(IncludedItem::new(
///         ContextItem::new(content, tokens)?,
///         0.5,
///         InclusionReason::Scored,
///     ));
/// }
/// // (300 + 200) / 1000
/// assert_eq!(budget_utilization(&report, &ContextBudget::new(1_000, 800)?), 0.5);
/// assert_eq!(budget_utilization(&report, &ContextBudget::new(0, 0)?), 0.0);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn budget_utilization(report: &SelectionReport, budget: &ContextBudget) -> f64 {
    report.budget_utilization(budget)
}

/// The number of distinct kinds among the included items (kinds compare
/// ignoring ASCII case; 0 for an empty window; clarification S-16).
///
/// ```
/// use cupel_analytics::kind_diversity;
/// use cupel_core::{ContextItem, ContextKind, IncludedItem, InclusionReason, SelectionReport};
///
/// let mut report = SelectionReport::default();
/// for kind in ["Message", "message", "Document"] {
///     report.included.push(IncludedItem::new(
///         ContextItem::builder(kind, 1).kind(ContextKind::new(kind)?).build()?,
///         0.0,
///         InclusionReason::Scored,
///     ));
/// }
/// assert_eq!(kind_diversity(&report), 2);
/// assert_eq!(kind_diversity(&SelectionReport::default()), 0);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn kind_diversity(report: &SelectionReport) -> usize {
    report.kind_diversity()
}

/// The share of included items that carry a timestamp: timestamped ÷
/// included, and 0.0 for an empty window (clarification S-16).
///
/// ```
/// use cupel_analytics::timestamp_coverage;
/// use cupel_core::{ContextItem, IncludedItem, InclusionReason, SelectionReport, parse_timestamp};
///
/// let when = parse_timestamp("2025-01-01T00:00:00Z").expect("a valid RFC 3339 time");
/// let mut report = SelectionReport::default();
/// for (content, stamped) in [("a", true), ("b", false), ("c", true), ("d", false)] {
///     let mut b = ContextItem::builder(content, 1);
///     if stamped {
///         b = b.timestamp(when);
///     }
///     report.included.push(IncludedItem::new(b.build()?, 0.0, InclusionReason::Scored));
/// }
/// assert_eq!(timestamp_coverage(&report), 0.5); // 2 of 4
/// assert_eq!(timestamp_coverage(&SelectionReport::default()), 0.0);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn timestamp_coverage(report: &SelectionReport) -> f64 {
    report.timestamp_coverage()
}

/// What variants saved in one window (an extension: `spec/22-variants.md`):
/// from [`variant_savings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct VariantSavings {
    /// Included items the window holds as a variant.
    pub items: usize,
    /// Their whole tokens minus their variants' tokens, summed (saturating).
    pub tokens_saved: i64,
    /// Their whole tokens, summed (saturating).
    pub whole_tokens: i64,
}

/// How many included items went in as a variant and how many tokens that
/// saved against including them whole.
///
/// ```
/// use cupel_analytics::variant_savings;
/// use cupel_core::{ContextItem, IncludedItem, InclusionReason, SelectionReport, VariantChoice, VariantReason};
///
/// let mut report = SelectionReport::default();
/// let mut row = IncludedItem::new(ContextItem::new("[log omitted]", 5)?, 0.9, InclusionReason::Scored);
/// row.variant = Some(VariantChoice { variant: 2, reason: VariantReason::DidNotFit, tokens_saved: 295 });
/// report.included.push(row);
/// report.included.push(IncludedItem::new(ContextItem::new("doc", 50)?, 0.5, InclusionReason::Scored));
/// let s = variant_savings(&report);
/// // One variant: 295 saved on a 300-token item (5 + 295).
/// assert_eq!((s.items, s.tokens_saved, s.whole_tokens), (1, 295, 300));
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn variant_savings(report: &SelectionReport) -> VariantSavings {
    let mut out = VariantSavings::default();
    for row in &report.included {
        if let Some(v) = row.variant {
            out.items += 1;
            out.tokens_saved = out.tokens_saved.saturating_add(v.tokens_saved);
            out.whole_tokens = out
                .whole_tokens
                .saturating_add(row.item.tokens().saturating_add(v.tokens_saved));
        }
    }
    out
}

/// How one kind's included tokens compare with its quota; a row of
/// [`quota_utilization`].
#[derive(Debug, Clone, PartialEq)]
pub struct KindQuotaUtilization {
    /// The kind.
    pub kind: ContextKind,
    /// The kind's require percentage (0 when the quota set does not configure it).
    pub require_percent: f64,
    /// The kind's cap percentage (100 when the quota set does not configure it).
    pub cap_percent: f64,
    /// The slicer's effective target: `budget.effective(pinned tokens).target_tokens`,
    /// the amount the percentages are taken of.
    pub slice_target: i64,
    /// `floor(require_percent / 100 × slice_target)`.
    pub require_tokens: i64,
    /// `floor(cap_percent / 100 × slice_target)`.
    pub cap_tokens: i64,
    /// Tokens of the included, non-pinned items of this kind.
    pub included_tokens: i64,
    /// `included_tokens ÷ cap_tokens`: 1.0 means the cap is used up. When
    /// `cap_tokens` is 0 it is 0.0 for an empty kind and `f64::INFINITY`
    /// otherwise.
    pub utilization: f64,
    /// `included_tokens >= require_tokens`.
    pub require_met: bool,
    /// `included_tokens <= cap_tokens`.
    pub within_cap: bool,
}

/// Per-kind use of a percentage quota policy by a selection.
///
/// Quotas are percentages of the **slicer's** target, and pinned items never
/// reach the slicer, so this mirrors what a `QuotaSlice` saw:
///
/// * `slice_target = budget.effective(P).target_tokens`, with `P` the tokens of
///   the included pinned items (output reserve, reserved slots and safety
///   margin applied as in a run);
/// * per kind, `require_tokens` and `cap_tokens` convert the percentages with
///   the slicer's own rule, `floor(percent / 100 × slice_target)` in `f64`
///   (clarification S-14);
/// * `included_tokens` sums the included **non-pinned** items of the kind;
/// * `utilization = included_tokens ÷ cap_tokens`, plus `require_met` and
///   `within_cap` flags.
///
/// Rows: first every kind the quota set configures, in its order (also when no
/// item of the kind was included), then every other kind found among the
/// included non-pinned items, in placed order of first appearance (these have
/// require 0% and cap 100%). Pass the same `budget` the run used.
///
/// ```
/// use cupel_analytics::quota_utilization;
/// use cupel_core::{ContextBudget, ContextItem, ContextKind, IncludedItem, InclusionReason, SelectionReport};
/// use cupel_slicers::QuotaSet;
///
/// let doc = |c: &str, t| ContextItem::builder(c, t).kind(ContextKind::DOCUMENT).build();
/// let mut report = SelectionReport::default();
/// for item in [doc("d1", 300)?, doc("d2", 100)?, ContextItem::new("m1", 150)?] {
///     report.included.push(IncludedItem::new(item, 0.5, InclusionReason::Scored));
/// }
/// let quotas = QuotaSet::builder()
///     .quota(ContextKind::DOCUMENT, 20.0, 50.0)
///     .require(ContextKind::MEMORY, 10.0)
///     .build()?;
/// let rows = quota_utilization(&report, &quotas, &ContextBudget::new(1_000, 1_000)?);
/// // Document: 400 tokens of a 500-token cap (50% of 1000); requires 200.
/// assert_eq!((rows[0].included_tokens, rows[0].cap_tokens), (400, 500));
/// assert_eq!(rows[0].utilization, 0.8);
/// assert!(rows[0].require_met && rows[0].within_cap);
/// // Memory: requires 100 tokens, has none.
/// assert!(!rows[1].require_met);
/// // Message is not configured: cap 100% = 1000 tokens.
/// assert_eq!((rows[2].kind.as_str(), rows[2].utilization), ("Message", 0.15));
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn quota_utilization(
    report: &SelectionReport,
    quotas: &QuotaSet,
    budget: &ContextBudget,
) -> Vec<KindQuotaUtilization> {
    let pinned: i128 = report
        .included
        .iter()
        .filter(|i| i.item.pinned())
        .map(|i| i128::from(i.item.tokens()))
        .sum();
    let slice_target = budget.effective(saturate(pinned)).target_tokens;

    // One pass over the window: (kind, included non-pinned tokens), configured
    // kinds first, then the others in placed order of first appearance.
    let mut kinds: Vec<(&ContextKind, i128)> =
        quotas.entries().iter().map(|e| (e.kind(), 0)).collect();
    for inc in report.included.iter().filter(|i| !i.item.pinned()) {
        let kind = inc.item.kind();
        let tokens = i128::from(inc.item.tokens());
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, sum)) => *sum += tokens,
            None => kinds.push((kind, tokens)),
        }
    }

    kinds
        .into_iter()
        .map(|(kind, tokens)| {
            let tokens = saturate(tokens);
            let require_percent = quotas.require_percent(kind);
            let cap_percent = quotas.cap_percent(kind);
            let require_tokens = percent_of(require_percent, slice_target);
            let cap_tokens = percent_of(cap_percent, slice_target);
            let utilization = if cap_tokens == 0 {
                if tokens == 0 { 0.0 } else { f64::INFINITY }
            } else {
                tokens as f64 / cap_tokens as f64
            };
            KindQuotaUtilization {
                kind: kind.clone(),
                require_percent,
                cap_percent,
                slice_target,
                require_tokens,
                cap_tokens,
                included_tokens: tokens,
                utilization,
                require_met: tokens >= require_tokens,
                within_cap: tokens <= cap_tokens,
            }
        })
        .collect()
}

/// `floor(percent / 100.0 * target)` in `f64`, in that order (as `QuotaSlice`
/// converts), clamped to `[0, target]`.
fn percent_of(percent: f64, target: i64) -> i64 {
    let v = (percent / 100.0 * target as f64).floor();
    (v as i64).clamp(0, target.max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_conversion_is_literal() {
        // S-14: 29% of 100 is floor(28.999999999999996) = 28.
        assert_eq!(percent_of(29.0, 100), 28);
        assert_eq!(percent_of(50.0, 801), 400);
        assert_eq!(percent_of(100.0, 0), 0);
        assert_eq!(percent_of(100.0, -5), 0);
    }

    #[test]
    fn saturation() {
        assert_eq!(saturate(i128::from(i64::MAX) + 1), i64::MAX);
        assert_eq!(saturate(i128::from(i64::MIN) - 1), i64::MIN);
        assert_eq!(saturate(-3), -3);
    }
}
