//! The thirteen patterns: what each one checks and the message it fails with.
//!
//! Both chains delegate here, so the panicking and the `Result` forms can never
//! disagree. Every function returns `Ok(())` on success and leaves the report
//! untouched.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt::{Display, Write as _};

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, ExclusionReason, IncludedItem, SelectionReport,
    score_cmp_desc,
};

use crate::{Assertion, SelectionReportAssertionError};

type Outcome = Result<(), SelectionReportAssertionError>;

/// Number of included items shown in the diagnostic appendix of
/// `IncludeItemMatching`.
pub(crate) const INCLUDE_MATCHING_SHOWN: usize = 5;

fn fail(assertion: Assertion, message: String) -> Outcome {
    Err(SelectionReportAssertionError::new(assertion, message))
}

/// Joins displayable values with `", "`.
fn join<T: Display>(values: impl IntoIterator<Item = T>) -> String {
    let mut out = String::new();
    for (i, v) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{v}");
    }
    out
}

/// A float as failure messages print it: rounded to 6 significant digits,
/// then written in the shortest form that reads back as that rounded value
/// (so `0.6799999999999999` prints `0.68`, `1.0` prints `1`, `0.25` stays
/// `0.25`, `1234567.0` prints `1234570`). `NaN` and the infinities print as
/// Rust writes them (`NaN`, `inf`, `-inf`). Used for computed values
/// (scores); a value the caller passed (a threshold) prints as given, and the
/// utilization keeps the specification's six decimals.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rounded(pub(crate) f64);

impl Display for Rounded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if !x.is_finite() {
            return write!(f, "{x}");
        }
        // `{:.5e}` keeps 6 significant digits; reading it back gives the
        // nearest double, whose `Display` is the shortest round-trip form.
        let rounded: f64 = format!("{x:.5e}").parse().unwrap_or(x);
        write!(f, "{rounded}")
    }
}

/// How many matched items a budget-details failure names.
const MATCHED_SHOWN: usize = 5;
/// Longest content shown for a matched item, in characters.
const CONTENT_SHOWN: usize = 40;

/// An item's content, quoted, cut to [`CONTENT_SHOWN`] characters with `…`.
fn quoted_content(item: &ContextItem) -> String {
    let content = item.content();
    match content.char_indices().nth(CONTENT_SHOWN) {
        Some((cut, _)) => format!("{:?}", format!("{}…", &content[..cut])),
        None => format!("{content:?}"),
    }
}

/// Distinct kinds in order of first appearance. Kinds compare case-insensitively
/// (as [`ContextKind`] does); the first spelling seen is the one shown.
fn distinct_kinds<'r>(kinds: impl Iterator<Item = &'r ContextKind>) -> Vec<&'r ContextKind> {
    let mut seen = BTreeSet::new();
    kinds.filter(|k| seen.insert(*k)).collect()
}

/// Distinct reason names in order of first appearance.
fn distinct_reason_names<'r>(reasons: impl Iterator<Item = &'r ExclusionReason>) -> Vec<&'r str> {
    let mut seen = BTreeSet::new();
    reasons
        .map(ExclusionReason::name)
        .filter(|n| seen.insert(*n))
        .collect()
}

/// The k-th edge position (0-based) in a list of `count` items:
/// 0, count-1, 1, count-2, ... Requires `k < count`.
pub(crate) fn edge_position(k: usize, count: usize) -> usize {
    if k.is_multiple_of(2) {
        k / 2
    } else {
        count - 1 - k / 2
    }
}

pub(crate) fn include_item_with_kind(report: &SelectionReport, kind: &ContextKind) -> Outcome {
    let included = &report.included;
    if included.iter().any(|i| i.item.kind() == kind) {
        return Ok(());
    }
    let kinds = distinct_kinds(included.iter().map(|i| i.item.kind()));
    fail(
        Assertion::IncludeItemWithKind,
        format!(
            "IncludeItemWithKind({kind}) failed: Included contained 0 items with Kind={kind}. \
             Included had {count} items with kinds: [{kinds}].",
            count = included.len(),
            kinds = join(kinds),
        ),
    )
}

pub(crate) fn include_item_matching(
    report: &SelectionReport,
    mut predicate: impl FnMut(&IncludedItem) -> bool,
) -> Outcome {
    let included = &report.included;
    if included.iter().any(&mut predicate) {
        return Ok(());
    }
    let count = included.len();
    let mut message = format!(
        "IncludeItemMatching failed: no item in Included matched the predicate. \
         Included had {count} items."
    );
    if count > 0 {
        let shown = count.min(INCLUDE_MATCHING_SHOWN);
        let items = included.iter().take(shown).map(|i| {
            format!(
                "(kind={}, score={}, reason={})",
                i.item.kind(),
                Rounded(i.score),
                i.reason.name()
            )
        });
        let _ = write!(message, " Showing {shown} of {count}: [{}].", join(items));
    }
    fail(Assertion::IncludeItemMatching, message)
}

pub(crate) fn include_exactly_n_items_with_kind(
    report: &SelectionReport,
    kind: &ContextKind,
    n: usize,
) -> Outcome {
    let included = &report.included;
    let actual = included.iter().filter(|i| i.item.kind() == kind).count();
    if actual == n {
        return Ok(());
    }
    fail(
        Assertion::IncludeExactlyNItemsWithKind,
        format!(
            "IncludeExactlyNItemsWithKind({kind}, {n}) failed: expected {n} items with \
             Kind={kind} in Included, but found {actual}. Included had {count} items total.",
            count = included.len(),
        ),
    )
}

pub(crate) fn exclude_item_with_reason(
    report: &SelectionReport,
    reason: &ExclusionReason,
) -> Outcome {
    let excluded = &report.excluded;
    if excluded.iter().any(|e| e.reason.same_variant(reason)) {
        return Ok(());
    }
    let names = distinct_reason_names(excluded.iter().map(|e| &e.reason));
    fail(
        Assertion::ExcludeItemWithReason,
        format!(
            "ExcludeItemWithReason({name}) failed: no excluded item had reason {name}. \
             Excluded had {count} items with reasons: [{names}].",
            name = reason.name(),
            count = excluded.len(),
            names = join(names),
        ),
    )
}

pub(crate) fn exclude_item_matching_with_reason(
    report: &SelectionReport,
    mut predicate: impl FnMut(&ContextItem) -> bool,
    reason: &ExclusionReason,
) -> Outcome {
    // One pass; the predicate runs at most once per excluded item.
    let mut matched = Vec::new();
    for e in &report.excluded {
        if predicate(&e.item) {
            if e.reason.same_variant(reason) {
                return Ok(());
            }
            matched.push(&e.reason);
        }
    }
    let names = distinct_reason_names(matched.iter().copied());
    fail(
        Assertion::ExcludeItemMatchingWithReason,
        format!(
            "ExcludeItemMatchingWithReason(reason={name}) failed: predicate matched \
             {matched_count} excluded item(s) but none had reason {name}. \
             Matched items had reasons: [{names}].",
            name = reason.name(),
            matched_count = matched.len(),
            names = join(names),
        ),
    )
}

pub(crate) fn exclude_item_with_budget_details(
    report: &SelectionReport,
    mut predicate: impl FnMut(&ContextItem) -> bool,
    expected_item_tokens: i64,
    expected_available_tokens: i64,
) -> Outcome {
    let mut first_budget: Option<(&ContextItem, i64, i64)> = None;
    let mut matched: Vec<&ContextItem> = Vec::new();
    let mut matched_reasons = Vec::new();
    for e in &report.excluded {
        if !predicate(&e.item) {
            continue;
        }
        matched.push(&e.item);
        matched_reasons.push(&e.reason);
        if let ExclusionReason::BudgetExceeded {
            item_tokens,
            available_tokens,
        } = e.reason
        {
            if item_tokens == expected_item_tokens && available_tokens == expected_available_tokens
            {
                return Ok(());
            }
            first_budget.get_or_insert((&e.item, item_tokens, available_tokens));
        }
    }
    let head = format!(
        "ExcludeItemWithBudgetDetails failed: expected BudgetExceeded with \
         item_tokens={expected_item_tokens}, available_tokens={expected_available_tokens}, "
    );
    let message = match first_budget {
        Some((item, item_tokens, available_tokens)) => format!(
            "{head}but found item_tokens={item_tokens}, available_tokens={available_tokens}. \
             Matched item: {content} (kind={kind}).",
            content = quoted_content(item),
            kind = item.kind(),
        ),
        None => {
            let mut message = format!(
                "{head}but no matching item had reason BudgetExceeded. \
                 Predicate matched {count} excluded item(s) with reasons: [{names}].",
                count = matched_reasons.len(),
                names = join(distinct_reason_names(matched_reasons.iter().copied())),
            );
            if !matched.is_empty() {
                let shown = matched.len().min(MATCHED_SHOWN);
                let items =
                    matched
                        .iter()
                        .zip(&matched_reasons)
                        .take(shown)
                        .map(|(item, reason)| {
                            format!(
                                "({} kind={}, reason={})",
                                quoted_content(item),
                                item.kind(),
                                reason.name()
                            )
                        });
                let _ = write!(
                    message,
                    " Matched items ({shown} of {count}): [{items}].",
                    count = matched.len(),
                    items = join(items),
                );
            }
            message
        }
    };
    fail(Assertion::ExcludeItemWithBudgetDetails, message)
}

pub(crate) fn have_no_exclusions_for_kind(report: &SelectionReport, kind: &ContextKind) -> Outcome {
    let mut of_kind = report.excluded.iter().filter(|e| e.item.kind() == kind);
    let Some(first) = of_kind.next() else {
        return Ok(());
    };
    let count = 1 + of_kind.count();
    fail(
        Assertion::HaveNoExclusionsForKind,
        format!(
            "HaveNoExclusionsForKind({kind}) failed: found {count} excluded item(s) with \
             Kind={kind}. First: score={score}, reason={reason}.",
            score = Rounded(first.score),
            reason = first.reason.name(),
        ),
    )
}

pub(crate) fn have_at_least_n_exclusions(report: &SelectionReport, n: usize) -> Outcome {
    let actual = report.excluded.len();
    if actual >= n {
        return Ok(());
    }
    fail(
        Assertion::HaveAtLeastNExclusions,
        format!(
            "HaveAtLeastNExclusions({n}) failed: expected at least {n} excluded items, \
             but Excluded had {actual}."
        ),
    )
}

pub(crate) fn excluded_items_are_sorted_by_score_descending(report: &SelectionReport) -> Outcome {
    // `score_cmp_desc` is the report's own order: descending, -0.0 == 0.0, NaN last.
    let violation = report
        .excluded
        .windows(2)
        .enumerate()
        .find_map(|(i, pair)| match pair {
            [a, b] if score_cmp_desc(a.score, b.score) == Ordering::Greater => {
                Some((i, a.score, b.score))
            }
            _ => None,
        });
    let Some((i, si, si1)) = violation else {
        return Ok(());
    };
    fail(
        Assertion::ExcludedItemsAreSortedByScoreDescending,
        format!(
            "ExcludedItemsAreSortedByScoreDescending failed: item at index {next} \
             (score={si1}) is higher than item at index {i} (score={si}). \
             Expected non-increasing scores.",
            next = i + 1,
            si = Rounded(si),
            si1 = Rounded(si1),
        ),
    )
}

pub(crate) fn have_budget_utilization_above(
    report: &SelectionReport,
    threshold: f64,
    budget: &ContextBudget,
) -> Outcome {
    let tokens = report.included_tokens();
    let max_tokens = budget.max_tokens();
    let actual = report.budget_utilization(budget);
    if actual >= threshold {
        return Ok(());
    }
    fail(
        Assertion::HaveBudgetUtilizationAbove,
        format!(
            "HaveBudgetUtilizationAbove({threshold}) failed: computed utilization was \
             {actual:.6} (includedTokens={tokens}, budget.MaxTokens={max_tokens})."
        ),
    )
}

pub(crate) fn have_kind_coverage_count(report: &SelectionReport, n: usize) -> Outcome {
    let kinds = distinct_kinds(report.included.iter().map(|i| i.item.kind()));
    let actual = kinds.len();
    if actual >= n {
        return Ok(());
    }
    fail(
        Assertion::HaveKindCoverageCount,
        format!(
            "HaveKindCoverageCount({n}) failed: expected at least {n} distinct ContextKind \
             values in Included, but found {actual}: [{kinds}].",
            kinds = join(kinds),
        ),
    )
}

pub(crate) fn place_item_at_edge(
    report: &SelectionReport,
    mut predicate: impl FnMut(&IncludedItem) -> bool,
) -> Outcome {
    let included = &report.included;
    let count = included.len();
    let (Some(first_item), Some(last_item)) = (included.first(), included.last()) else {
        return fail(
            Assertion::PlaceItemAtEdge,
            "PlaceItemAtEdge failed: no item in Included matched the predicate.".to_string(),
        );
    };
    if predicate(first_item) || (count > 1 && predicate(last_item)) {
        return Ok(());
    }
    // Both edges are known not to match; look in between (indices 1..count-1).
    let inner = included.get(1..count.saturating_sub(1)).unwrap_or(&[]);
    let message = match inner.iter().position(predicate) {
        Some(p) => format!(
            "PlaceItemAtEdge failed: item matching predicate was at index {actual} \
             (not at edge). Edge positions: 0 and {last}. Included had {count} items.",
            actual = p + 1,
            last = count - 1,
        ),
        None => "PlaceItemAtEdge failed: no item in Included matched the predicate.".to_string(),
    };
    fail(Assertion::PlaceItemAtEdge, message)
}

pub(crate) fn place_top_n_scored_at_edges(report: &SelectionReport, n: usize) -> Outcome {
    let included = &report.included;
    let count = included.len();
    if n == 0 {
        return Ok(());
    }
    if n > count {
        return fail(
            Assertion::PlaceTopNScoredAtEdges,
            format!(
                "PlaceTopNScoredAtEdges({n}) failed: expected at least {n} items in Included \
                 to fill {n} edge positions, but Included had {count}."
            ),
        );
    }
    let score = |i: usize| included.get(i).map_or(f64::NAN, |it| it.score);

    // Rank: score descending (NaN last, -0.0 == 0.0), ties by position.
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by(|&a, &b| score_cmp_desc(score(a), score(b)));

    // The first n edge positions form a set: each top-n item must sit on one
    // of them, in any order (the specification's step 3). Which edge holds
    // which of them is not checked.
    let edges: Vec<usize> = (0..n).map(|k| edge_position(k, count)).collect();
    let mut is_edge = vec![false; count];
    for &e in &edges {
        is_edge[e] = true;
    }

    // Equal scores are interchangeable (a report cannot tell tied items apart
    // by anything but position), so the top n are chosen run by run of equal
    // scores: a run that straddles rank n (or lies inside the top n) fills its
    // share of the n slots with its members on an edge first, then with the
    // rest in rank order. Every chosen member off an edge is one failure.
    let mut chosen: Vec<usize> = Vec::with_capacity(n);
    let mut fail_count = 0usize;
    let mut start = 0usize;
    while start < n {
        let s0 = score(order[start]);
        let end = order[start..]
            .iter()
            .position(|&i| score_cmp_desc(score(i), s0) != Ordering::Equal)
            .map_or(count, |p| start + p);
        let run = &order[start..end];
        let slots = end.min(n) - start;
        let on_edge = run.iter().filter(|&&i| is_edge[i]).count();
        let take_on_edge = on_edge.min(slots);
        fail_count += slots - take_on_edge;
        let (mut edge_left, mut off_left) = (take_on_edge, slots - take_on_edge);
        for &i in run {
            let take = if is_edge[i] {
                &mut edge_left
            } else {
                &mut off_left
            };
            if *take > 0 {
                *take -= 1;
                chosen.push(i);
            }
        }
        start = end;
    }
    if fail_count == 0 {
        return Ok(());
    }
    let top_items = chosen.iter().filter_map(|&i| {
        included.get(i).map(|it| {
            format!(
                "(kind={}, score={}, idx={i})",
                it.item.kind(),
                Rounded(it.score)
            )
        })
    });
    fail(
        Assertion::PlaceTopNScoredAtEdges,
        format!(
            "PlaceTopNScoredAtEdges({n}) failed: {fail_count} of the top-{n} scored items were \
             not at expected edge positions. Top-{n} items (by score): [{items}]. \
             Expected edge positions: [{edges}].",
            items = join(top_items),
            edges = join(edges.iter()),
        ),
    )
}

/// Extension (atomic groups): every group is wholly included or wholly
/// excluded, and its included members sit next to each other.
pub(crate) fn have_no_partial_groups(report: &SelectionReport) -> Outcome {
    // group id -> positions in Included; BTreeMap keeps messages deterministic.
    let mut included: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (pos, inc) in report.included.iter().enumerate() {
        if let Some(g) = inc.item.group() {
            included.entry(g).or_default().push(pos);
        }
    }
    for (g, positions) in &included {
        let left_out: Vec<&str> = report
            .excluded
            .iter()
            .filter(|e| e.item.group() == Some(*g))
            .map(|e| e.item.content())
            .collect();
        if !left_out.is_empty() {
            return fail(
                Assertion::HaveNoPartialGroups,
                format!(
                    "HaveNoPartialGroups failed: group {g:?} has {inc} member(s) in Included \
                     and {exc} in Excluded: [{names}].",
                    inc = positions.len(),
                    exc = left_out.len(),
                    names = join(left_out.iter().map(|c| format!("{c:?}"))),
                ),
            );
        }
        let (first, last) = (positions[0], positions[positions.len() - 1]);
        if last - first + 1 != positions.len() {
            return fail(
                Assertion::HaveNoPartialGroups,
                format!(
                    "HaveNoPartialGroups failed: the members of group {g:?} are not adjacent \
                     in Included: positions [{}].",
                    join(positions)
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_positions_alternate_from_both_ends() {
        // Spec example: n = 4, count = 6 -> 0, 5, 1, 4.
        let e: Vec<usize> = (0..4).map(|k| edge_position(k, 6)).collect();
        assert_eq!(e, [0, 5, 1, 4]);
        // n = count = 5 visits every position once: 0, 4, 1, 3, 2.
        let e: Vec<usize> = (0..5).map(|k| edge_position(k, 5)).collect();
        assert_eq!(e, [0, 4, 1, 3, 2]);
        assert_eq!(edge_position(0, 1), 0);
    }

    #[test]
    fn join_separates_with_comma_space() {
        assert_eq!(join(["a", "b", "c"]), "a, b, c");
        assert_eq!(join(Vec::<&str>::new()), "");
    }
}
