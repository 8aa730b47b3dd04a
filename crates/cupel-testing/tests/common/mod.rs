//! Hand-built reports and the pass / fail macros shared by the integration tests.
#![allow(dead_code, unused_macros, clippy::unwrap_used, clippy::expect_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};

use cupel_core::{
    ContextItem, ContextKind, ExcludedItem, ExclusionReason, IncludedItem, InclusionReason,
    SelectionReport,
};

/// A kind from any spelling.
pub(crate) fn kind(s: &str) -> ContextKind {
    ContextKind::new(s).unwrap()
}

/// An item of the given kind.
pub(crate) fn item(content: &str, tokens: i64, kind: &ContextKind) -> ContextItem {
    ContextItem::builder(content, tokens)
        .kind(kind.clone())
        .build()
        .unwrap()
}

/// An included item with reason `Scored`.
pub(crate) fn inc(content: &str, tokens: i64, kind: &ContextKind, score: f64) -> IncludedItem {
    inc_r(content, tokens, kind, score, InclusionReason::Scored)
}

/// An included item with an explicit reason.
pub(crate) fn inc_r(
    content: &str,
    tokens: i64,
    kind: &ContextKind,
    score: f64,
    reason: InclusionReason,
) -> IncludedItem {
    IncludedItem::new(item(content, tokens, kind), score, reason)
}

/// An excluded item.
pub(crate) fn exc(
    content: &str,
    tokens: i64,
    kind: &ContextKind,
    score: f64,
    reason: ExclusionReason,
) -> ExcludedItem {
    ExcludedItem::new(item(content, tokens, kind), score, reason)
}

/// Included items of kind Message with the given scores, content `"i0"`, `"i1"`, ...
/// and 10 tokens each, in the given (placed) order.
pub(crate) fn scored(scores: &[f64]) -> Vec<IncludedItem> {
    scores
        .iter()
        .enumerate()
        .map(|(i, &s)| inc(&format!("i{i}"), 10, &ContextKind::MESSAGE, s))
        .collect()
}

/// Excluded items of kind Message with the given scores (reason BudgetExceeded 10/0).
pub(crate) fn excluded_scored(scores: &[f64]) -> Vec<ExcludedItem> {
    scores
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            exc(
                &format!("e{i}"),
                10,
                &ContextKind::MESSAGE,
                s,
                budget(10, 0),
            )
        })
        .collect()
}

pub(crate) fn budget(item_tokens: i64, available_tokens: i64) -> ExclusionReason {
    ExclusionReason::BudgetExceeded {
        item_tokens,
        available_tokens,
    }
}

pub(crate) fn dedup(against: &str) -> ExclusionReason {
    ExclusionReason::Deduplicated {
        deduplicated_against: against.to_string(),
    }
}

/// A report with consistent totals.
pub(crate) fn report(included: Vec<IncludedItem>, excluded: Vec<ExcludedItem>) -> SelectionReport {
    let total_tokens_considered = included
        .iter()
        .map(|i| i.item.tokens())
        .chain(excluded.iter().map(|e| e.item.tokens()))
        .fold(0i64, i64::saturating_add);
    {
        let mut r = SelectionReport::default();
        r.total_candidates = included.len() + excluded.len();
        r.total_tokens_considered = total_tokens_considered;
        r.included = included;
        r.excluded = excluded;
        r
    }
}

/// Runs `f`, which must panic with a string payload, and returns the payload.
pub(crate) fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("the chain should have panicked");
    match payload.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .expect("panic payload should be a string"),
    }
}

/// Asserts that an assertion passes in both forms.
///
/// `passes!(report, c => c.method(args))` expands the call once with `c` bound
/// to `report.check()` (must be `Ok`) and once with `c` bound to
/// `report.should()` (must not panic).
macro_rules! passes {
    ($report:expr, $c:ident => $call:expr) => {{
        let report: &cupel_core::SelectionReport = &$report;
        {
            let $c = cupel_testing::SelectionReportAssertions::check(report);
            if let Err(e) = $call {
                panic!("check form failed unexpectedly: {e}");
            }
        }
        {
            let $c = cupel_testing::SelectionReportAssertions::should(report);
            let _ = $call;
        }
    }};
}

/// Asserts that an assertion fails in both forms with exactly `expected`.
///
/// The check form must return `Err` whose `assertion` is `$assertion` and
/// whose message equals `expected`; its `Display` and the panicking form's
/// panic must be `expected` followed by ` [assertion: <method name>]`.
macro_rules! fails {
    ($report:expr, $c:ident => $call:expr, $assertion:expr, $expected:expr) => {{
        let report: &cupel_core::SelectionReport = &$report;
        let expected: &str = $expected;
        let err = {
            let $c = cupel_testing::SelectionReportAssertions::check(report);
            match $call {
                Ok(_) => panic!("check form passed, expected failure: {expected}"),
                Err(e) => e,
            }
        };
        assert_eq!(err.assertion, $assertion);
        assert_eq!(err.message, expected);
        // Display and the panic add the snake_case method name.
        let shown = format!("{expected} [assertion: {}]", $assertion.method_name());
        assert_eq!(err.to_string(), shown);
        let panicked = common::panic_message(|| {
            let $c = cupel_testing::SelectionReportAssertions::should(report);
            let _ = $call;
        });
        assert_eq!(panicked, shown);
    }};
}
