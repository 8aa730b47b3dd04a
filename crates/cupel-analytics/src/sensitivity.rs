//! Policy sensitivity: the same items under several policies, and what swings.

use std::collections::HashSet;

use cupel_core::{ContextBudget, ContextItem, CupelError, SelectionReport};
use cupel_pipeline::{Pipeline, Policy, RunOptions};

/// Whether an item made it into one variant's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemStatus {
    /// Some included item of the variant has this content.
    Included,
    /// No included item of the variant has this content.
    Excluded,
}

/// One content whose status differs between at least two variants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySensitivityDiffEntry {
    /// The content identifying the item (compared byte for byte).
    pub content: String,
    /// One `(label, status)` per variant, in the variants' input order.
    pub statuses: Vec<(String, ItemStatus)>,
}

/// The result of [`policy_sensitivity`] and [`policy_sensitivity_from_pipelines`].
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySensitivityReport {
    /// `(label, report)` per variant, in input order.
    pub variants: Vec<(String, SelectionReport)>,
    /// The swing items: contents whose status is not the same in every
    /// variant, in order of first appearance in `items` (clarification S-18).
    pub diffs: Vec<PolicySensitivityDiffEntry>,
}

/// The specification's error text for fewer than two variants.
const TOO_FEW_VARIANTS: &str = "policy_sensitivity requires at least 2 variants";

/// Dry-runs `items` under every `(label, policy)` with `budget` and reports
/// which items change status between policies.
///
/// * `budget` is explicit: a policy carries no budget, and borrowing one from
///   elsewhere would silently compare at the wrong size.
/// * Items are matched across variants by **content** (byte-exact), not by
///   position: an item counts as included in a variant when some included item
///   of that variant has its content. Each distinct content is considered
///   once, at its first appearance in `items`.
/// * `diffs` holds only swing items — included by some variant, excluded by
///   another — in order of first appearance in `items` (clarification S-18);
///   `variants` and each entry's `statuses` keep the input order of
///   `variants`. Labels need not be unique.
///
/// # Errors
/// * `CupelError::PipelineConfig("policy_sensitivity requires at least 2
///   variants")` for fewer than two variants;
/// * the first error of any variant's dry run.
///
/// ```
/// use cupel_analytics::{ItemStatus, policy_sensitivity};
/// use cupel_core::{ContextBudget, ContextItem};
/// use cupel_pipeline::Policy;
/// use cupel_placers::ChronologicalPlacer;
/// use cupel_scorers::{PriorityScorer, ReflexiveScorer};
/// use cupel_slicers::GreedySlice;
///
/// let items = vec![
///     ContextItem::builder("urgent", 50).priority(9).future_relevance_hint(0.1).build()?,
///     ContextItem::builder("relevant", 50).priority(1).future_relevance_hint(0.9).build()?,
/// ];
/// let by_hint = Policy::builder().scorer(ReflexiveScorer).slicer(GreedySlice)
///     .placer(ChronologicalPlacer).build()?;
/// let by_priority = Policy::builder().scorer(PriorityScorer).slicer(GreedySlice)
///     .placer(ChronologicalPlacer).build()?;
/// let budget = ContextBudget::new(50, 50)?; // room for one
/// let report = policy_sensitivity(&items, &budget, &[("hint", &by_hint), ("priority", &by_priority)])?;
/// assert_eq!(report.diffs.len(), 2);
/// assert_eq!(report.diffs[0].content, "urgent");
/// assert_eq!(
///     report.diffs[0].statuses,
///     vec![("hint".to_owned(), ItemStatus::Excluded), ("priority".to_owned(), ItemStatus::Included)]
/// );
/// // Fewer than two variants is a configuration error.
/// assert!(policy_sensitivity(&items, &budget, &[("hint", &by_hint)]).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn policy_sensitivity(
    items: &[ContextItem],
    budget: &ContextBudget,
    variants: &[(impl AsRef<str>, &Policy)],
) -> Result<PolicySensitivityReport, CupelError> {
    compare(items, variants, |policy| {
        Pipeline::new((*policy).clone(), budget.clone()).dry_run(items)
    })
}

/// [`policy_sensitivity`] with whole pipelines as the variants, each dry-run
/// with `budget` (not its own budget).
///
/// Use it when a [`Policy`] built from configuration cannot express what you
/// compare (for example a count-quota slicer configured in code). Same
/// ordering, matching and error rules as [`policy_sensitivity`].
///
/// # Errors
/// As [`policy_sensitivity`].
///
/// ```
/// use cupel_analytics::policy_sensitivity_from_pipelines;
/// use cupel_core::{ContextBudget, ContextItem};
/// use cupel_pipeline::Pipeline;
/// use cupel_placers::ChronologicalPlacer;
/// use cupel_scorers::ReflexiveScorer;
/// use cupel_slicers::{GreedySlice, KnapsackSlice};
///
/// let items = vec![
///     ContextItem::builder("a", 51).future_relevance_hint(0.9).build()?,
///     ContextItem::builder("b", 50).future_relevance_hint(0.6).build()?,
///     ContextItem::builder("c", 50).future_relevance_hint(0.6).build()?,
/// ];
/// let budget = ContextBudget::new(100, 100)?;
/// let greedy = Pipeline::builder().scorer(ReflexiveScorer).slicer(GreedySlice)
///     .placer(ChronologicalPlacer).budget(budget.clone()).build()?;
/// let knapsack = Pipeline::builder().scorer(ReflexiveScorer).slicer(KnapsackSlice::new(1)?)
///     .placer(ChronologicalPlacer).budget(budget.clone()).build()?;
/// // Greedy takes the densest item a; the exact knapsack prefers b + c.
/// let report = policy_sensitivity_from_pipelines(
///     &items, &budget, &[("greedy", &greedy), ("knapsack", &knapsack)])?;
/// let swings: Vec<&str> = report.diffs.iter().map(|d| d.content.as_str()).collect();
/// assert_eq!(swings, ["a", "b", "c"]);
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
pub fn policy_sensitivity_from_pipelines(
    items: &[ContextItem],
    budget: &ContextBudget,
    variants: &[(impl AsRef<str>, &Pipeline)],
) -> Result<PolicySensitivityReport, CupelError> {
    compare(items, variants, |pipeline| {
        let options = RunOptions::new().budget(budget).dry(true).report(true);
        Ok(pipeline
            .run_with(items, options)?
            .report
            .unwrap_or_default())
    })
}

/// Checks the variant count, dry-runs every variant in input order (stopping
/// at the first error) and diffs the reports.
fn compare<V>(
    items: &[ContextItem],
    variants: &[(impl AsRef<str>, V)],
    dry_run: impl Fn(&V) -> Result<SelectionReport, CupelError>,
) -> Result<PolicySensitivityReport, CupelError> {
    check_variant_count(variants.len())?;
    let reports = variants
        .iter()
        .map(|(label, variant)| Ok((label.as_ref().to_owned(), dry_run(variant)?)))
        .collect::<Result<Vec<_>, CupelError>>()?;
    Ok(build_report(items, reports))
}

fn check_variant_count(n: usize) -> Result<(), CupelError> {
    if n < 2 {
        return Err(CupelError::PipelineConfig(TOO_FEW_VARIANTS.to_owned()));
    }
    Ok(())
}

/// Builds the diffs: one pass over `items` in order, each distinct content once.
fn build_report(
    items: &[ContextItem],
    variants: Vec<(String, SelectionReport)>,
) -> PolicySensitivityReport {
    // Sets are only queried, never iterated, so their order cannot leak. An
    // item the window holds as a variant (spec chapter 22) is matched by its
    // input item's content: it is in, in another form.
    let included: Vec<HashSet<&str>> = variants
        .iter()
        .map(|(_, r)| {
            r.included
                .iter()
                .map(|row| match (row.variant, items.get(row.position)) {
                    (Some(_), Some(input)) => input.content(),
                    _ => row.item.content(),
                })
                .collect()
        })
        .collect();
    let mut seen: HashSet<&str> = HashSet::with_capacity(items.len());
    let mut diffs = Vec::new();
    for item in items {
        let content = item.content();
        if !seen.insert(content) {
            continue;
        }
        let statuses: Vec<ItemStatus> = included
            .iter()
            .map(|set| {
                if set.contains(content) {
                    ItemStatus::Included
                } else {
                    ItemStatus::Excluded
                }
            })
            .collect();
        if statuses.windows(2).any(|w| w[0] != w[1]) {
            diffs.push(PolicySensitivityDiffEntry {
                content: content.to_owned(),
                statuses: variants
                    .iter()
                    .zip(statuses)
                    .map(|((label, _), status)| (label.clone(), status))
                    .collect(),
            });
        }
    }
    PolicySensitivityReport { variants, diffs }
}

#[cfg(test)]
mod tests {
    use cupel_core::{IncludedItem, InclusionReason};

    use super::*;

    fn report(included: &[&str]) -> SelectionReport {
        {
            let mut r = SelectionReport::default();
            r.included = included
                .iter()
                .map(|c| {
                    IncludedItem::new(
                        ContextItem::new(*c, 1).unwrap(),
                        0.5,
                        InclusionReason::Scored,
                    )
                })
                .collect();
            r
        }
    }

    #[test]
    fn diffs_follow_items_and_skip_unanimous_contents() {
        let items: Vec<ContextItem> = ["z", "a", "z", "m", "q"]
            .iter()
            .map(|c| ContextItem::new(*c, 1).unwrap())
            .collect();
        // z: in v1 only; a: in both; m: in v2 only; q: in neither.
        let out = build_report(
            &items,
            vec![
                ("v1".into(), report(&["a", "z"])),
                ("v2".into(), report(&["m", "a"])),
            ],
        );
        let got: Vec<(&str, Vec<ItemStatus>)> = out
            .diffs
            .iter()
            .map(|d| (d.content.as_str(), d.statuses.iter().map(|s| s.1).collect()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("z", vec![ItemStatus::Included, ItemStatus::Excluded]),
                ("m", vec![ItemStatus::Excluded, ItemStatus::Included]),
            ]
        );
    }

    #[test]
    fn too_few_variants() {
        assert_eq!(
            check_variant_count(1),
            Err(CupelError::PipelineConfig(
                "policy_sensitivity requires at least 2 variants".into()
            ))
        );
        assert!(check_variant_count(2).is_ok());
    }
}
