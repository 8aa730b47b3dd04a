#![allow(clippy::unwrap_used, clippy::expect_used)]
//! get_marginal_items, find_min_budget_for and find_min_budget_for_exact:
//! every rule of spec/09-analytics.md, with expected values derived by hand.
//!
//! Unless said otherwise the pipeline is ReflexiveScorer (score = hint),
//! GreedySlice, ChronologicalPlacer (no timestamps: merged order, i.e. pinned
//! then score-descending), OverflowStrategy::Throw, deduplication on.

mod common;

use std::sync::Arc;

use common::{item, kinded, pinned, pipeline, pipeline_with, roomy};
use cupel_analytics::{
    MARGINAL_ITEMS_QUOTA_MESSAGE, MIN_BUDGET_MONOTONIC_MESSAGE, find_min_budget_for,
    find_min_budget_for_exact, get_marginal_items,
};
use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, OverflowStrategy, ScoredItem, SliceBudget,
    SliceOutcome, Slicer, SlicerKind,
};
use cupel_slicers::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaSet, QuotaSlice, ScarcityBehavior,
};

fn kind(s: &str) -> ContextKind {
    ContextKind::new(s).unwrap()
}

/// Three 40-token items scored 0.9, 0.5, 0.1.
fn three() -> Vec<ContextItem> {
    vec![item("a", 40, 0.9), item("b", 40, 0.5), item("c", 40, 0.1)]
}

// ----- get_marginal_items ----------------------------------------------------------

#[test]
fn marginal_items_are_in_full_but_not_in_reduced() {
    let items = three();
    let budget = ContextBudget::new(120, 120).unwrap();
    let p = pipeline(GreedySlice, roomy());
    // Full 120: a, b, c (40 each). Reduced 120 - 40 = 80: a, b. Lost: c.
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 40).unwrap(),
        vec![2]
    );
    // Slack 0: reduced == full, nothing lost.
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 0).unwrap(),
        Vec::<usize>::new()
    );
    // Slack = target: reduced 0/0 selects nothing; everything is lost, in the
    // full run's placed order (merged order a, b, c).
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 120).unwrap(),
        vec![0, 1, 2]
    );
}

#[test]
fn marginal_uses_the_given_budget_not_the_pipelines() {
    let items = three();
    // The pipeline's own budget holds one item; the call's budget holds all three.
    let p = pipeline(GreedySlice, ContextBudget::new(40, 40).unwrap());
    let budget = ContextBudget::new(120, 120).unwrap();
    // 120 -> a, b, c; 120 - 80 = 40 -> a. Lost: b, c.
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 80).unwrap(),
        vec![1, 2]
    );
}

#[test]
fn marginal_slack_must_be_within_zero_and_target() {
    let items = three();
    let p = pipeline(GreedySlice, roomy());
    let budget = ContextBudget::new(150, 120).unwrap();
    assert_eq!(
        get_marginal_items(&p, &items, &budget, -1),
        Err(CupelError::InvalidArgument(
            "slack_tokens must be within 0..=target_tokens (120), got -1".into()
        ))
    );
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 121),
        Err(CupelError::InvalidArgument(
            "slack_tokens must be within 0..=target_tokens (120), got 121".into()
        ))
    );
    // The bound is the target (120), not max (150); 120 itself is allowed.
    assert!(get_marginal_items(&p, &items, &budget, 120).is_ok());
}

#[test]
fn marginal_refuses_quota_slice_with_the_spec_message() {
    let items = three();
    let quota = QuotaSlice::new(QuotaSet::empty(), Arc::new(GreedySlice));
    let p = pipeline(quota, roomy());
    let budget = ContextBudget::new(120, 120).unwrap();
    let err = get_marginal_items(&p, &items, &budget, 40).unwrap_err();
    assert_eq!(
        err,
        CupelError::PipelineConfig(
            "GetMarginalItems requires monotonic item inclusion. QuotaSlice produces non-monotonic inclusion as budget changes shift percentage allocations."
                .into()
        )
    );
    assert_eq!(
        err,
        CupelError::PipelineConfig(MARGINAL_ITEMS_QUOTA_MESSAGE.into())
    );
    // The slack check comes first (spec order).
    assert!(matches!(
        get_marginal_items(&p, &items, &budget, 500),
        Err(CupelError::InvalidArgument(_))
    ));
}

#[test]
fn marginal_does_not_refuse_count_quota_slicers() {
    // S-4: GetMarginalItems guards QuotaSlice only.
    let items = vec![
        kinded("tool", 40, 0.9, "ToolOutput"),
        kinded("msg1", 40, 0.5, "Message"),
        kinded("msg2", 40, 0.1, "Message"),
    ];
    let cq = CountQuotaSlice::new(
        vec![CountQuotaEntry::new(kind("ToolOutput"), 1, 1).unwrap()],
        Arc::new(GreedySlice),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    let p = pipeline(cq, roomy());
    let budget = ContextBudget::new(120, 120).unwrap();
    // Full 120: tool committed (40), greedy on msg1, msg2 with 80: both.
    // Reduced 80: tool committed, greedy with 40: msg1. Lost: msg2.
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 40).unwrap(),
        vec![2]
    );
}

#[test]
fn reduced_budget_keeps_reserved_slots() {
    // S-20. Four 40-token items (0.9, 0.7, 0.5, 0.3). Budget 200/200, slot 40.
    //   full:    effective target 200 - 40 = 160 -> all four (160)
    //   reduced: 200 - 60 = 140, slot kept -> 100 -> two (80)
    // Lost: the 0.5 and 0.3 items. (Without the slot the reduced run would
    // get 140 -> three items, and only one would be lost.)
    let items = vec![
        item("a", 40, 0.9),
        item("b", 40, 0.7),
        item("c", 40, 0.5),
        item("d", 40, 0.3),
    ];
    let budget = ContextBudget::builder(200, 200)
        .reserved_slot(kind("Tool"), 40)
        .build()
        .unwrap();
    let p = pipeline(GreedySlice, roomy());
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 60).unwrap(),
        vec![2, 3]
    );
}

#[test]
fn reduced_budget_keeps_output_reserve_and_margin() {
    let items = vec![
        item("a", 40, 0.9),
        item("b", 40, 0.7),
        item("c", 40, 0.5),
        item("d", 40, 0.3),
    ];
    let p = pipeline(GreedySlice, roomy());
    // Reserve 40: full effective = min(200, 200 - 40) = 160 -> all four;
    // reduced (slack 40): min(160, 160 - 40) = 120 -> three. Lost: d.
    let reserve = ContextBudget::builder(200, 200)
        .output_reserve(40)
        .build()
        .unwrap();
    assert_eq!(
        get_marginal_items(&p, &items, &reserve, 40).unwrap(),
        vec![3]
    );
    // Margin 50%: full floor(200 * 0.5) = 100 -> two; reduced (slack 50)
    // floor(150 * 0.5) = 75 -> one. Lost: b. (Without the margin the reduced
    // run would get 150 -> three, and nothing would be lost.)
    let margin = ContextBudget::builder(200, 200)
        .safety_margin_percent(50.0)
        .build()
        .unwrap();
    assert_eq!(
        get_marginal_items(&p, &items, &margin, 50).unwrap(),
        vec![1]
    );
}

#[test]
fn an_invalid_reduced_budget_is_reported() {
    // max 100, target 80, reserve 50, slack 80 -> reduced max 20 < reserve 50.
    let budget = ContextBudget::builder(100, 80)
        .output_reserve(50)
        .build()
        .unwrap();
    let p = pipeline(GreedySlice, roomy());
    assert_eq!(
        get_marginal_items(&p, &three(), &budget, 80),
        Err(CupelError::OutputReserveExceedsMax {
            output_reserve: 50,
            max_tokens: 20
        })
    );
}

#[test]
fn marginal_identity_is_position_not_content() {
    // Deduplication off; items 0 and 1 are the same allocation (same Arc).
    let x = item("x", 40, 0.9);
    let items = vec![x.clone(), x, item("y", 40, 0.1)];
    let p = pipeline_with(
        Arc::new(GreedySlice),
        roomy(),
        OverflowStrategy::Throw,
        false,
    );
    let budget = ContextBudget::new(120, 120).unwrap();
    // Full 120: positions 0, 1, 2. Reduced 40: equal densities, lower index
    // first -> position 0 only. Lost: positions 1 and 2 — although position
    // 1's content (and allocation) is still in the reduced window.
    assert_eq!(
        get_marginal_items(&p, &items, &budget, 80).unwrap(),
        vec![1, 2]
    );
}

// ----- find_min_budget_for: preconditions and guards --------------------------------

#[test]
fn search_preconditions_are_argument_errors() {
    let items = vec![item("a", 60, 0.9), item("b", 50, 0.5)];
    let p = pipeline(GreedySlice, roomy());
    for search in [find_min_budget_for, find_min_budget_for_exact] {
        assert_eq!(
            search(&p, &items, 2, 100),
            Err(CupelError::InvalidArgument(
                "targetItem must be an element of items: target_index 2 is out of range for 2 items"
                    .into()
            ))
        );
        assert_eq!(
            search(&p, &items, 1, 49),
            Err(CupelError::InvalidArgument(
                "searchCeiling must be >= targetItem.Tokens: search_ceiling is 49, the item has 50 tokens"
                    .into()
            ))
        );
        let negative = vec![item("neg", -5, 0.5)];
        assert_eq!(
            search(&p, &negative, 0, 100),
            Err(CupelError::InvalidArgument(
                "targetItem has negative tokens (-5); the pipeline excludes such items at every budget"
                    .into()
            ))
        );
        assert_eq!(
            search(&p, &[], 0, 100),
            Err(CupelError::InvalidArgument(
                "targetItem must be an element of items: target_index 0 is out of range for 0 items"
                    .into()
            ))
        );
    }
}

/// A custom slicer that admits to non-monotonic inclusion.
struct Wobbly;
impl Slicer for Wobbly {
    fn slice(&self, items: &[ScoredItem<'_>], b: SliceBudget) -> Result<SliceOutcome, CupelError> {
        GreedySlice.slice(items, b)
    }
    fn is_monotonic(&self) -> bool {
        false
    }
}

/// A custom slicer that calls itself a quota slicer but claims monotonicity.
struct QuotaLike;
impl Slicer for QuotaLike {
    fn slice(&self, items: &[ScoredItem<'_>], b: SliceBudget) -> Result<SliceOutcome, CupelError> {
        GreedySlice.slice(items, b)
    }
    fn slicer_kind(&self) -> SlicerKind {
        SlicerKind::Quota
    }
}

#[test]
fn min_budget_refuses_non_monotonic_slicers_with_the_spec_message() {
    let items = vec![
        kinded("a", 60, 0.9, "Message"),
        kinded("b", 50, 0.5, "Message"),
    ];
    let entries = || vec![CountQuotaEntry::new(kind("Message"), 1, 2).unwrap()];
    let refused: Vec<(&str, Arc<dyn Slicer>)> = vec![
        (
            "quota",
            Arc::new(QuotaSlice::new(QuotaSet::empty(), Arc::new(GreedySlice))),
        ),
        (
            "count-quota",
            Arc::new(
                CountQuotaSlice::new(entries(), Arc::new(GreedySlice), ScarcityBehavior::Degrade)
                    .unwrap(),
            ),
        ),
        (
            "count-constrained-knapsack",
            Arc::new(
                CountConstrainedKnapsackSlice::new(
                    entries(),
                    KnapsackSlice::new(1).unwrap(),
                    ScarcityBehavior::Degrade,
                )
                .unwrap(),
            ),
        ),
        ("custom non-monotonic", Arc::new(Wobbly)),
        ("custom of kind Quota", Arc::new(QuotaLike)),
    ];
    let expected = CupelError::PipelineConfig(
        "FindMinBudgetFor requires monotonic item inclusion. QuotaSlice and CountQuotaSlice produce non-monotonic inclusion as budget changes shift allocations. Use a GreedySlice or KnapsackSlice inner slicer for budget simulation."
            .into(),
    );
    assert_eq!(
        expected,
        CupelError::PipelineConfig(MIN_BUDGET_MONOTONIC_MESSAGE.into())
    );
    for (name, slicer) in refused {
        let p = pipeline_with(slicer, roomy(), OverflowStrategy::Throw, true);
        assert_eq!(
            find_min_budget_for(&p, &items, 1, 200),
            Err(expected.clone()),
            "{name}"
        );
        // Preconditions are checked before the guard.
        assert!(
            matches!(
                find_min_budget_for(&p, &items, 9, 200),
                Err(CupelError::InvalidArgument(_))
            ),
            "{name}"
        );
        // The exact search accepts every slicer.
        assert!(
            find_min_budget_for_exact(&p, &items, 1, 200).is_ok(),
            "{name}"
        );
    }
    // Greedy and knapsack are accepted.
    for slicer in [
        Arc::new(GreedySlice) as Arc<dyn Slicer>,
        Arc::new(KnapsackSlice::new(1).unwrap()),
    ] {
        let p = pipeline_with(slicer, roomy(), OverflowStrategy::Throw, true);
        assert!(find_min_budget_for(&p, &items, 1, 200).is_ok());
    }
}

// ----- find_min_budget_for: the search ------------------------------------------------

#[test]
fn binary_search_never_probes_its_lower_bound() {
    // S-2. One 50-token item: included at every b >= 50.
    // low 50, high 100: mid 75 in -> 75; 62 in -> 62; 56 -> 56; 53 -> 53;
    // 51 -> 51; stop (51 - 50 = 1); verify 51. The true minimum is 50.
    let items = vec![item("only", 50, 0.5)];
    let p = pipeline(GreedySlice, roomy());
    assert_eq!(find_min_budget_for(&p, &items, 0, 100).unwrap(), Some(51));
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 0, 100).unwrap(),
        Some(50)
    );
    // ceiling == tokens: no loop, verify 50 itself.
    assert_eq!(find_min_budget_for(&p, &items, 0, 50).unwrap(), Some(50));
    // ceiling == tokens + 1: no loop (51 - 50 = 1), verify 51.
    assert_eq!(find_min_budget_for(&p, &items, 0, 51).unwrap(), Some(51));
}

#[test]
fn none_when_the_verification_fails() {
    // A: 60 tokens 0.9 (density 0.015); B: 50 tokens 0.5 (0.010).
    // B for ceiling 100: probes 75, 87, 93, 96, 98, 99 — at each A fits and
    // leaves < 50 — and the verification at 100 leaves 40: None.
    let items = vec![item("A", 60, 0.9), item("B", 50, 0.5)];
    let p = pipeline(GreedySlice, roomy());
    assert_eq!(find_min_budget_for(&p, &items, 1, 100).unwrap(), None);
    // Yet B is selected at 50 (A does not fit there).
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 1, 100).unwrap(),
        Some(50)
    );
    // ceiling == tokens: the single verification at 50 finds B.
    assert_eq!(find_min_budget_for(&p, &items, 1, 50).unwrap(), Some(50));
}

#[test]
fn none_for_an_item_deduplication_always_removes() {
    // Same content; position 0 scores higher and survives at every budget,
    // so position 1 is never selected (identity by position, D-1).
    let items = vec![item("same", 10, 0.9), item("same", 10, 0.5)];
    let p = pipeline(GreedySlice, roomy());
    assert_eq!(find_min_budget_for(&p, &items, 1, 1_000).unwrap(), None);
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 1, 1_000).unwrap(),
        None
    );
    // Position 0 is found (exact: at its own 10 tokens; binary: S-2 -> 11).
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 0, 1_000).unwrap(),
        Some(10)
    );
    assert_eq!(find_min_budget_for(&p, &items, 0, 1_000).unwrap(), Some(11));
}

#[test]
fn probes_keep_the_output_reserve_and_reserved_slots() {
    // S-3: probe b = pipeline budget with max = target = b. Reserve 30, slot 20:
    // effective target = min(b - 20, b - 30 - 20) = b - 50; a 50-token item
    // needs b - 50 >= 50, so b = 100. Monotonic, and the minimum (100) is above
    // the lower bound (50), so the binary search finds it too.
    let budget = ContextBudget::builder(1_000, 1_000)
        .output_reserve(30)
        .reserved_slot(kind("Tool"), 20)
        .build()
        .unwrap();
    let items = vec![item("only", 50, 0.5)];
    let p = pipeline(GreedySlice, budget);
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 0, 500).unwrap(),
        Some(100)
    );
    assert_eq!(find_min_budget_for(&p, &items, 0, 500).unwrap(), Some(100));
}

#[test]
fn sizes_without_a_window_count_as_not_selected() {
    // Reserve 30 and a 10-token item: probes b < 30 break the budget rules
    // (output_reserve > max); they count as "not selected", not as errors.
    // Effective target b - 30 >= 10 at b = 40.
    let budget = ContextBudget::builder(1_000, 1_000)
        .output_reserve(30)
        .build()
        .unwrap();
    let items = vec![item("small", 10, 0.5)];
    let p = pipeline(GreedySlice, budget);
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 0, 500).unwrap(),
        Some(40)
    );
    assert_eq!(find_min_budget_for(&p, &items, 0, 500).unwrap(), Some(40));

    // Pinned 100 tokens: below b = 100 the run fails (PinnedBudgetExceeded);
    // the 10-token item needs b - 100 >= 10, so b = 110.
    let items = vec![pinned("system", 100), item("t", 10, 0.5)];
    let p = pipeline(GreedySlice, roomy());
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 1, 500).unwrap(),
        Some(110)
    );
    assert_eq!(find_min_budget_for(&p, &items, 1, 500).unwrap(), Some(110));
    // The pinned item itself: in as soon as a window exists (b = 100); the
    // binary search reports 101 (S-2).
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 0, 500).unwrap(),
        Some(100)
    );
    assert_eq!(find_min_budget_for(&p, &items, 0, 500).unwrap(), Some(101));
}

#[test]
fn a_throw_overflow_is_a_size_without_a_window() {
    // CountQuotaSlice commits the required 100-token document whatever the
    // budget, so for 0 < b < 100 the selection overflows b and Throw fails the
    // run: no window. For 100 <= b < 110 the window is the document alone
    // (greedy gets b - 100 < 10). At 110 the 10-token message fits.
    let items = vec![
        kinded("doc", 100, 0.1, "Document"),
        kinded("msg", 10, 0.5, "Message"),
    ];
    let cq = CountQuotaSlice::new(
        vec![CountQuotaEntry::new(kind("Document"), 1, 1).unwrap()],
        Arc::new(GreedySlice),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    let p = pipeline(cq, roomy());
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 1, 300).unwrap(),
        Some(110)
    );
}

#[test]
fn other_probe_errors_are_returned() {
    // A knapsack guard of 10 cells: every probe is over it (b = 75, the
    // binary search's first probe: 1 candidate x (75 + 1) = 76 cells; b = 50,
    // the exact search's first: 51 cells). That is a configuration error,
    // not "not selected", so it is returned.
    let knapsack = KnapsackSlice::new(1).unwrap().with_max_table_cells(10);
    let items = vec![item("only", 50, 0.5)];
    let p = pipeline(knapsack, roomy());
    assert!(matches!(
        find_min_budget_for(&p, &items, 0, 100),
        Err(CupelError::TableTooLarge {
            limit: cupel_core::TableLimit::Cells(10),
            ..
        })
    ));
    assert!(matches!(
        find_min_budget_for_exact(&p, &items, 0, 100),
        Err(CupelError::TableTooLarge {
            limit: cupel_core::TableLimit::Cells(10),
            ..
        })
    ));
}

#[test]
fn exact_search_works_with_a_quota_slicer() {
    // Documents and messages; messages are guaranteed 40% of the target.
    // At target T: require(msg) = floor(0.4 T); unassigned = T - that;
    // doc gets floor(unassigned * 60 / 100) (masses 60 and 40). The 60-token
    // doc fits when T - floor(0.4 T) >= 100:
    //   T = 165: 165 - 66 = 99 -> doc budget 59, no
    //   T = 166: 166 - 66 = 100 -> doc budget 60, yes
    let items = vec![
        kinded("doc", 60, 0.9, "Document"),
        kinded("msg", 40, 0.1, "Message"),
    ];
    let quotas = QuotaSet::builder()
        .require(kind("Message"), 40.0)
        .build()
        .unwrap();
    let p = pipeline(QuotaSlice::new(quotas, Arc::new(GreedySlice)), roomy());
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 0, 400).unwrap(),
        Some(166)
    );
    assert_eq!(common::dry_run_includes(&p, &items, 0, 166), Some(true));
    assert_eq!(common::dry_run_includes(&p, &items, 0, 165), Some(false));
}

#[test]
fn exact_returns_none_when_no_size_in_range_works() {
    // A: 60 tokens 0.9 (density 0.015); C: 70 tokens 0.1 (0.0014). From
    // b = 70 up, A fits first; C then needs b - 60 >= 70, i.e. b >= 130.
    // (C can never be in without A: A is the smaller one.) Ceiling 129: None.
    let items = vec![item("A", 60, 0.9), item("C", 70, 0.1)];
    let p = pipeline(GreedySlice, roomy());
    assert_eq!(find_min_budget_for_exact(&p, &items, 1, 129).unwrap(), None);
    assert_eq!(find_min_budget_for(&p, &items, 1, 129).unwrap(), None);
    assert_eq!(
        find_min_budget_for_exact(&p, &items, 1, 130).unwrap(),
        Some(130)
    );
}
