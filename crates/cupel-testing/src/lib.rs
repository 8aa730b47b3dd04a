//! Fluent assertions over a Cupel
//! [`SelectionReport`](cupel_core::SelectionReport), for tests that state a
//! context policy in its own terms.
//!
//! "The system prompt is always included", "nothing was dropped for budget",
//! "the two best items sit at the edges": each is one call, and a failure
//! explains itself with the numbers from the report instead of an index
//! mismatch. The thirteen assertions are the specification's testing
//! vocabulary, in snake_case. Of the Cupel crates, this one depends only on
//! `cupel-core`.
//!
//! # Overview
//!
//! * [`SelectionReportAssertions`] adds two entry points to a report:
//!   * [`should()`](SelectionReportAssertions::should) returns a
//!     [`SelectionReportAssertionChain`] whose methods **panic** on failure
//!     (with `#[track_caller]`, so the test points at your line) — for
//!     `#[test]` functions;
//!   * [`check()`](SelectionReportAssertions::check) returns a
//!     [`SelectionReportCheck`] whose methods of the same names **return**
//!     `Result<Self, SelectionReportAssertionError>`, chainable with `?` —
//!     for building your own helpers.
//! * [`SelectionReportAssertionError`] carries which [`Assertion`] failed and
//!   the message; both chains produce identical messages.
//! * [`ReasonKind`] names an [`ExclusionReason`](cupel_core::ExclusionReason)
//!   variant without its fields; reasons always match by variant.
//!
//! | group | assertions |
//! | --- | --- |
//! | inclusion | `include_item_with_kind`, `include_item_matching`, `include_exactly_n_items_with_kind` |
//! | exclusion | `exclude_item_with_reason`, `exclude_item_matching_with_reason`, `exclude_item_with_budget_details`, `have_no_exclusions_for_kind` |
//! | aggregate | `have_at_least_n_exclusions`, `excluded_items_are_sorted_by_score_descending` |
//! | budget | `have_budget_utilization_above` (divides by `max_tokens`, exact `>=`) |
//! | coverage | `have_kind_coverage_count` |
//! | ordering | `place_item_at_edge`, `place_top_n_scored_at_edges` |
//!
//! Each method's rustdoc on [`SelectionReportAssertionChain`] states what it
//! checks and its exact failure message.
//!
//! # With the pipeline
//!
//! The usual shape of a policy regression test: build the pipeline you ship,
//! dry-run it on a representative input, and state what must hold.
//!
//! ```
//! use cupel_core::{ContextBudget, ContextItem, ContextKind};
//! use cupel_pipeline::{Pipeline, preset};
//! use cupel_testing::{ReasonKind, SelectionReportAssertions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ts = |s: &str| s.parse::<chrono::DateTime<chrono::Utc>>();
//! let items = vec![
//!     ContextItem::builder("You are Acme's support assistant.", 30)
//!         .kind(ContextKind::SYSTEM_PROMPT)
//!         .pinned(true)
//!         .build()?,
//!     ContextItem::builder("User: I was charged twice.", 20).timestamp(ts("2025-03-01T10:00:00Z")?).build()?,
//!     ContextItem::builder("Assistant: Let me check.", 15).timestamp(ts("2025-03-01T10:01:00Z")?).build()?,
//!     ContextItem::builder("Tool: 2 charges of $40 found", 400)
//!         .kind(ContextKind::TOOL_OUTPUT)
//!         .timestamp(ts("2025-03-01T10:02:00Z")?)
//!         .build()?,
//! ];
//! // "recent-dense" = recency 3 + kind 1, greedy, chronological. Target 120,
//! // 30 pinned: the slicer has 90 tokens; the 400-token tool output cannot fit.
//! let pipeline = Pipeline::new(preset("recent-dense")?.config.build()?, ContextBudget::new(8_000, 120)?);
//! let report = pipeline.dry_run(&items)?;
//!
//! report
//!     .should()
//!     .include_item_with_kind(ContextKind::SYSTEM_PROMPT)
//!     .include_exactly_n_items_with_kind(ContextKind::MESSAGE, 2)
//!     .exclude_item_with_reason(ReasonKind::BudgetExceeded)
//!     // room after slicing: 90 - (20 + 15) = 55
//!     .exclude_item_with_budget_details(|i| i.kind() == &ContextKind::TOOL_OUTPUT, 400, 55)
//!     .excluded_items_are_sorted_by_score_descending()
//!     .have_kind_coverage_count(2);
//! # Ok(())
//! # }
//! ```
//!
//! # Example
//!
//! A support-bot selection under a 1000-token window (target 850): the pinned
//! system prompt, a policy document and two messages made it in, placed
//! U-shaped; a large tool output did not fit and a repeated message was
//! dropped as a duplicate. (Built by hand here; in a real test the report
//! comes from the pipeline's dry run.)
//!
//! ```
//! use cupel_core::{
//!     ContextBudget, ContextItem, ContextKind, ExcludedItem, ExclusionReason, IncludedItem,
//!     InclusionReason, SelectionReport,
//! };
//! use cupel_testing::{ReasonKind, SelectionReportAssertions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let budget = ContextBudget::new(1_000, 850)?;
//! let item = |content: &str, tokens: i64, kind: ContextKind| {
//!     ContextItem::builder(content, tokens).kind(kind).build()
//! };
//! let included = |item: ContextItem, score: f64, reason: InclusionReason| {
//!     IncludedItem::new(item, score, reason)
//! };
//! let system = ContextItem::builder("You are Acme's support assistant.", 120)
//!     .kind(ContextKind::SYSTEM_PROMPT)
//!     .pinned(true)
//!     .build()?;
//!
//! // Placed order (U-shaped): scores 1.0, 0.7, 0.5, 0.8 -> best first, runner-up last.
//! // Included tokens: 120 + 200 + 180 + 300 = 800.
//! // The tool output: effective target 850 - 120 pinned = 730, sliced 200 + 180 + 300 = 680,
//! // so 730 - 680 = 50 tokens were left for its 450.
//! let mut report = SelectionReport::new(
//!     vec![
//!         included(system, 1.0, InclusionReason::Pinned),
//!         included(item("User: I was charged twice.", 200, ContextKind::MESSAGE)?, 0.7, InclusionReason::Scored),
//!         included(item("Assistant: Let me look.", 180, ContextKind::MESSAGE)?, 0.5, InclusionReason::Scored),
//!         included(item("Refund policy: ...", 300, ContextKind::DOCUMENT)?, 0.8, InclusionReason::Scored),
//!     ],
//!     vec![
//!         ExcludedItem::new(
//!             item("search results: ...", 450, ContextKind::TOOL_OUTPUT)?,
//!             0.6,
//!             ExclusionReason::BudgetExceeded { item_tokens: 450, available_tokens: 50 },
//!         ),
//!         ExcludedItem::new(
//!             item("User: I was charged twice.", 200, ContextKind::MESSAGE)?,
//!             0.3,
//!             ExclusionReason::Deduplicated {
//!                 deduplicated_against: "User: I was charged twice.".into(),
//!             },
//!         ),
//!     ],
//! );
//! report.total_candidates = 6;
//! report.total_tokens_considered = 1_450;
//!
//! report
//!     .should()
//!     .include_item_with_kind(ContextKind::SYSTEM_PROMPT)
//!     .include_item_matching(|i| i.reason == InclusionReason::Pinned && i.score == 1.0)
//!     .include_exactly_n_items_with_kind(ContextKind::MESSAGE, 2)
//!     .exclude_item_with_reason(ReasonKind::Deduplicated)
//!     .exclude_item_matching_with_reason(
//!         |item| *item.kind() == ContextKind::TOOL_OUTPUT,
//!         ReasonKind::BudgetExceeded,
//!     )
//!     .exclude_item_with_budget_details(|item| item.content().starts_with("search"), 450, 50)
//!     .have_no_exclusions_for_kind(ContextKind::SYSTEM_PROMPT)
//!     .have_at_least_n_exclusions(2)
//!     .excluded_items_are_sorted_by_score_descending()
//!     .have_budget_utilization_above(0.75, &budget) // 800 / 1000 = 0.8
//!     .have_kind_coverage_count(3)
//!     .place_item_at_edge(|i| i.item.pinned())
//!     .place_top_n_scored_at_edges(4);
//!
//! // The same checks without panicking: the first failure comes back as an error.
//! let err = report
//!     .check()
//!     .include_item_with_kind(ContextKind::SYSTEM_PROMPT)?
//!     .have_budget_utilization_above(0.9, &budget)
//!     .unwrap_err();
//! assert_eq!(
//!     err.message,
//!     "HaveBudgetUtilizationAbove(0.9) failed: computed utilization was 0.800000 \
//!      (includedTokens=800, budget.MaxTokens=1000)."
//! );
//! // What a failing test shows also names the method that failed.
//! assert!(err.to_string().ends_with("[assertion: have_budget_utilization_above]"));
//! # Ok(())
//! # }
//! ```
//!
//! # Choices where the vocabulary leaves room
//!
//! * Counts (`n`) are `usize`, so negative counts cannot be expressed.
//! * Kinds print with their display spelling; lists of distinct kinds or
//!   reason names are in order of first appearance, joined with `", "`.
//! * Scores (computed values) print rounded to 6 significant digits, in the
//!   shortest form that reads back as the rounded value: `0.5`, `1`, `NaN`,
//!   and `0.68` for the `0.6799999999999999` that `0.1 + 0.58` gives.
//!   Values you pass in (a utilisation threshold) print as given;
//!   utilisation prints with the vocabulary's six decimals.
//! * A failure's [`message`](SelectionReportAssertionError::message) is the
//!   vocabulary's text; its `Display` — and so the panic of the
//!   [`should()`](SelectionReportAssertions::should) chain — appends the
//!   snake_case method that failed: `... [assertion: have_at_least_n_exclusions]`.
//! * `exclude_item_with_budget_details` failures name the matched item(s)
//!   after the vocabulary's text: the one whose numbers differ (`Matched
//!   item: "tool-a" (kind=ToolOutput).`), or up to five matched items with
//!   their reasons; contents are cut to 40 characters.
//! * Score order (patterns 9 and 13) is the pipeline's own:
//!   [`cupel_core::score_cmp_desc`] (NaN lowest, `-0.0 == 0.0`).
//! * `max_tokens == 0` gives utilisation `0.0`.
//! * Pattern 13 checks edge-in order position by position, with equal scores
//!   interchangeable (see
//!   [`place_top_n_scored_at_edges`](SelectionReportAssertionChain::place_top_n_scored_at_edges)).
//! * Predicates are `FnMut` and run at most once per item per assertion.
//! * Snapshot assertions over whole reports are deliberately absent (tie order
//!   in `excluded` is not observable from the report).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod chain;
mod error;
mod patterns;
mod reason;

pub use chain::{SelectionReportAssertionChain, SelectionReportAssertions, SelectionReportCheck};
pub use error::{Assertion, SelectionReportAssertionError};
pub use reason::ReasonKind;
