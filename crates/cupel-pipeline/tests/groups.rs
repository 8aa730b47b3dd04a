//! Atomic item groups (an extension: spec/18-atomic-groups.md): invariants on
//! random inputs for every built-in slicer and both placers, and the cases
//! the conformance runner cannot express (StreamSlice, errors).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, CupelError, ExclusionReason, ExclusionRecord,
    InclusionRecord, OverflowStrategy, PipelineStage, Placer, SelectionReport, Slicer,
    TraceCollector,
};
use cupel_pipeline::{Pipeline, RunOptions};
use cupel_placers::{ChronologicalPlacer, UShapedPlacer};
use cupel_scorers::ReflexiveScorer;
use cupel_slicers::{
    CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice, KnapsackSlice,
    QuotaSet, QuotaSlice, ScarcityBehavior, StreamSlice,
};
use proptest::prelude::*;

const KINDS: [ContextKind; 3] = [
    ContextKind::MESSAGE,
    ContextKind::TOOL_OUTPUT,
    ContextKind::DOCUMENT,
];

fn slicer(which: usize) -> Arc<dyn Slicer> {
    let entries = || {
        vec![
            CountQuotaEntry::new(ContextKind::TOOL_OUTPUT, 1, 2).unwrap(),
            CountQuotaEntry::new(ContextKind::DOCUMENT, 0, 1).unwrap(),
        ]
    };
    match which {
        0 => Arc::new(GreedySlice::new()),
        1 => Arc::new(KnapsackSlice::new(5).unwrap()),
        2 => Arc::new(QuotaSlice::new(
            QuotaSet::builder()
                .require(ContextKind::MESSAGE, 20.0)
                .cap(ContextKind::TOOL_OUTPUT, 50.0)
                .build()
                .unwrap(),
            Arc::new(GreedySlice::new()),
        )),
        3 => Arc::new(
            CountQuotaSlice::new(
                entries(),
                Arc::new(GreedySlice::new()),
                ScarcityBehavior::Degrade,
            )
            .unwrap(),
        ),
        4 => Arc::new(
            CountConstrainedKnapsackSlice::new(
                entries(),
                KnapsackSlice::new(5).unwrap(),
                ScarcityBehavior::Degrade,
            )
            .unwrap(),
        ),
        _ => Arc::new(StreamSlice::new()),
    }
}

fn pipeline(
    budget: ContextBudget,
    which: usize,
    u_shaped: bool,
    overflow: OverflowStrategy,
    dedup: bool,
) -> Pipeline {
    let placer: Arc<dyn Placer> = if u_shaped {
        Arc::new(UShapedPlacer)
    } else {
        Arc::new(ChronologicalPlacer)
    };
    Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(slicer(which))
        .placer(placer)
        .overflow_strategy(overflow)
        .deduplication(dedup)
        .budget(budget)
        .build()
        .unwrap()
}

prop_compose! {
    fn arb_item()(
        content in 0usize..8,
        tokens in prop_oneof![1 => -5i64..0, 1 => Just(0i64), 8 => 1i64..120],
        kind in 0usize..3,
        pinned in prop::bool::weighted(0.08),
        hint in 0.0f64..1.0,
        ts in prop::option::of(0i64..10),
        group in prop::option::of(0usize..5),
    ) -> ContextItem {
        let mut b = ContextItem::builder(format!("c{content}"), tokens)
            .kind(KINDS[kind].clone())
            .pinned(pinned)
            .future_relevance_hint(hint)
            .group_opt(group.map(|g| format!("g{g}")));
        if let Some(t) = ts {
            b = b.timestamp(chrono::DateTime::from_timestamp(1_700_000_000 + t * 60, 0).unwrap());
        }
        b.build().unwrap()
    }
}

fn overflow_strategy() -> impl Strategy<Value = OverflowStrategy> {
    prop_oneof![
        Just(OverflowStrategy::Throw),
        Just(OverflowStrategy::Truncate),
        Just(OverflowStrategy::Proceed)
    ]
}

/// Input positions of each group's members, by group id.
fn members(items: &[ContextItem]) -> BTreeMap<&str, Vec<usize>> {
    let mut m: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(g) = item.group() {
            m.entry(g).or_default().push(i);
        }
    }
    m
}

/// Tokens the pipeline must treat as pinned: pinned ungrouped items and every
/// member of a group with a pinned member, leaving out negative-token items
/// and groups with a negative member.
fn pinned_tokens(items: &[ContextItem]) -> i64 {
    let groups = members(items);
    let mut total = 0;
    for item in items.iter().filter(|i| i.group().is_none()) {
        if item.pinned() && item.tokens() >= 0 {
            total += item.tokens();
        }
    }
    for m in groups.values() {
        let any_pinned = m.iter().any(|&i| items[i].pinned());
        let negative = m.iter().any(|&i| items[i].tokens() < 0);
        if any_pinned && !negative {
            total += m.iter().map(|&i| items[i].tokens()).sum::<i64>();
        }
    }
    total
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn no_partial_group_adjacent_in_input_order_within_budget(
        items in prop::collection::vec(arb_item(), 0..24),
        max in 0i64..600,
        target_frac in 0.0f64..=1.0,
        which in 0usize..6,
        u_shaped in any::<bool>(),
        overflow in overflow_strategy(),
        dedup in any::<bool>(),
    ) {
        let target = (max as f64 * target_frac) as i64;
        let budget = ContextBudget::new(max, target).unwrap();
        let p = pipeline(budget, which, u_shaped, overflow, dedup);
        let groups = members(&items);
        let pinned = pinned_tokens(&items);
        match p.run(&items) {
            Ok(window) => {
                // Position of each window entry in the input (items are Arc-shared).
                let pos: Vec<usize> = window
                    .iter()
                    .map(|w| items.iter().position(|i| i.ptr_eq(w)).unwrap())
                    .collect();
                for (g, m) in &groups {
                    let at: Vec<usize> = (0..window.len())
                        .filter(|&k| window[k].group() == Some(*g))
                        .collect();
                    if at.is_empty() {
                        continue;
                    }
                    // Whole: every member is in the window.
                    prop_assert_eq!(at.len(), m.len(), "group {} is partial", g);
                    // Adjacent and in input order.
                    prop_assert_eq!(at[at.len() - 1] - at[0] + 1, at.len(), "group {} not adjacent", g);
                    let order: Vec<usize> = at.iter().map(|&k| pos[k]).collect();
                    prop_assert_eq!(&order, m, "group {} out of input order", g);
                }
                let total: i64 = window.iter().map(ContextItem::tokens).sum();
                // (Count-quota requirements may commit past the budget; only
                // the overflow strategy bounds that.)
                if overflow != OverflowStrategy::Proceed || !matches!(which, 3 | 4) {
                    prop_assert!(total <= max, "total {total} > max {max}");
                }
                if overflow != OverflowStrategy::Proceed {
                    prop_assert!(total <= target.max(pinned), "total {total} target {target} pinned {pinned}");
                }
                prop_assert!(window.iter().all(|i| i.tokens() >= 0));

                let report = p.dry_run(&items).unwrap();
                prop_assert_eq!(report.included.len() + report.excluded.len(), items.len());
                let a: Vec<&ContextItem> = window.iter().collect();
                let b: Vec<&ContextItem> = report.included.iter().map(|i| &i.item).collect();
                prop_assert_eq!(a, b);
                // A member of a group of two or more is never deduplicated
                // (one alone in its group is an item like any other); a
                // dropped group's members share one reason.
                for e in &report.excluded {
                    if let Some(g) = e.item.group() {
                        let dedup = matches!(e.reason, ExclusionReason::Deduplicated { .. });
                        prop_assert!(!dedup || groups[g].len() == 1, "grouped item deduplicated");
                        if let ExclusionReason::GroupExcluded { group, .. } = &e.reason {
                            prop_assert_eq!(group.as_str(), g);
                        }
                    }
                }
                prop_assert!(report.excluded.windows(2).all(|w| w[0].score >= w[1].score));
            }
            Err(CupelError::PinnedBudgetExceeded { pinned_tokens: got, .. }) => {
                prop_assert_eq!(got, pinned);
                prop_assert!(pinned > max);
            }
            Err(CupelError::BudgetOverflow { selected_tokens, target_tokens }) => {
                prop_assert_eq!(overflow, OverflowStrategy::Throw);
                prop_assert!(selected_tokens > target_tokens);
            }
            Err(e) => prop_assert!(false, "unexpected error: {e}"),
        }
    }

    /// Giving every item a group of its own changes nothing: the same
    /// window, the same report (reasons, scores, positions, stage events)
    /// and the same decisions stage by stage, deduplication included — an
    /// item alone in its group is an item of its own (spec chapter 18).
    #[test]
    fn singleton_groups_select_and_report_like_ungrouped_items(
        items in prop::collection::vec(arb_item(), 0..20),
        max in 0i64..600,
        target_frac in 0.0f64..=1.0,
        which in 0usize..6,
        u_shaped in any::<bool>(),
        overflow in overflow_strategy(),
        dedup in any::<bool>(),
    ) {
        let target = (max as f64 * target_frac) as i64;
        let budget = ContextBudget::new(max, target).unwrap();
        let p = pipeline(budget, which, u_shaped, overflow, dedup);
        let plain: Vec<ContextItem> = items
            .iter()
            .map(|i| i.to_builder().group_opt(None).build().unwrap())
            .collect();
        let single: Vec<ContextItem> = plain
            .iter()
            .enumerate()
            .map(|(k, i)| i.to_builder().group(format!("s{k}")).build().unwrap())
            .collect();
        let strip = |w: Vec<ContextItem>| -> Vec<String> {
            w.iter().map(|i| format!("{}/{}", i.content(), i.tokens())).collect()
        };
        match (p.run(&plain), p.run(&single)) {
            (Ok(a), Ok(b)) => prop_assert_eq!(strip(a), strip(b)),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "{a:?} vs {b:?}"),
        }
        match (decisions(&p, &plain), decisions(&p, &single)) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.0, &b.0, "stage-by-stage decisions differ");
                prop_assert_eq!(report_rows(&a.1), report_rows(&b.1));
                // Every row names its item's input position.
                for r in &a.1.included {
                    prop_assert!(r.item.ptr_eq(&plain[r.position]));
                }
                for r in &a.1.excluded {
                    prop_assert!(r.item.ptr_eq(&plain[r.position]));
                }
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "{:?} vs {:?}", a.err(), b.err()),
        }
    }
}

/// Every decision of one run as the collector saw it: `(stage, input
/// position, score, reason)`, in call order (included items as stage
/// `Place`), with the run's report built from the same run.
type Decisions = Vec<(PipelineStage, usize, String, String)>;

#[derive(Default)]
struct Recorder(Decisions);

impl TraceCollector for Recorder {
    fn is_enabled(&self) -> bool {
        true
    }
    fn on_item_excluded(&mut self, r: ExclusionRecord<'_>) {
        self.0.push((
            r.stage,
            r.index,
            format!("{:?}", r.score),
            format!("{:?}", r.reason),
        ));
    }
    fn on_item_included(&mut self, r: InclusionRecord<'_>) {
        let reason = format!("{:?}", r.reason);
        self.0.push((
            PipelineStage::Place,
            r.index,
            format!("{:?}", r.score),
            reason,
        ));
    }
}

fn decisions(
    p: &Pipeline,
    items: &[ContextItem],
) -> Result<(Decisions, SelectionReport), CupelError> {
    let mut rec = Recorder::default();
    let out = p.run_with(
        items,
        RunOptions::new().collector(&mut rec).dry(true).report(true),
    )?;
    Ok((rec.0, out.report.unwrap()))
}

/// A report without what legitimately differs between the two inputs (the
/// items' group field, stage durations): positions, scores, reasons, item
/// contents and tokens, stage events, totals and shortfalls.
fn report_rows(r: &SelectionReport) -> String {
    let included: Vec<String> = r
        .included
        .iter()
        .map(|i| {
            format!(
                "{} {:?} {:?} {}/{}",
                i.position,
                i.score,
                i.reason,
                i.item.content(),
                i.item.tokens()
            )
        })
        .collect();
    let excluded: Vec<String> = r
        .excluded
        .iter()
        .map(|e| {
            format!(
                "{} {:?} {:?} {}/{}",
                e.position,
                e.score,
                e.reason,
                e.item.content(),
                e.item.tokens()
            )
        })
        .collect();
    let events: Vec<String> = r
        .events
        .iter()
        .map(|e| format!("{:?} {} {:?}", e.stage, e.item_count, e.message))
        .collect();
    format!(
        "{included:#?}\n{excluded:#?}\n{events:#?}\n{} {} {:?}",
        r.total_candidates, r.total_tokens_considered, r.count_requirement_shortfalls
    )
}

fn item(content: &str, tokens: i64, hint: f64, group: Option<&str>) -> ContextItem {
    ContextItem::builder(content, tokens)
        .future_relevance_hint(hint)
        .group_opt(group.map(str::to_owned))
        .build()
        .unwrap()
}

fn contents(w: &[ContextItem]) -> Vec<&str> {
    w.iter().map(ContextItem::content).collect()
}

#[test]
fn stream_slice_takes_a_group_whole_or_not_at_all() {
    // Units in score order: g (0.9, 30 + 50 = 80), a (0.8, 40), b (0.5, 20).
    // First fit, target 100: g -> 20 left; a 40 > 20 skipped; b 20 -> 0 left.
    let items = [
        item("call", 30, 0.2, Some("g")),
        item("a", 40, 0.8, None),
        item("result", 50, 0.9, Some("g")),
        item("b", 20, 0.5, None),
    ];
    let p = pipeline(
        ContextBudget::new(100, 100).unwrap(),
        5,
        false,
        OverflowStrategy::Throw,
        true,
    );
    // Chronological without timestamps: merged order (g, b).
    assert_eq!(contents(&p.run(&items).unwrap()), ["call", "result", "b"]);
    // Target 70: g (80) does not fit; a -> 30 left; b -> 10 left.
    let p = pipeline(
        ContextBudget::new(100, 70).unwrap(),
        5,
        false,
        OverflowStrategy::Throw,
        true,
    );
    let report = p.dry_run(&items).unwrap();
    assert_eq!(contents(&p.run(&items).unwrap()), ["a", "b"]);
    let excluded: Vec<(&str, &ExclusionReason)> = report
        .excluded
        .iter()
        .map(|e| (e.item.content(), &e.reason))
        .collect();
    let gone = ExclusionReason::GroupExcluded {
        group: "g".into(),
        group_tokens: 80,
        available_tokens: 10,
    };
    assert_eq!(excluded, [("result", &gone), ("call", &gone)]);
}

#[test]
fn a_pinned_group_over_the_budget_is_a_typed_error() {
    // One pinned member pins the group: 60 + 50 = 110 pinned tokens > max 100.
    let items = [
        ContextItem::builder("call", 60)
            .pinned(true)
            .group("g")
            .build()
            .unwrap(),
        item("result", 50, 0.5, Some("g")),
    ];
    let p = pipeline(
        ContextBudget::new(100, 100).unwrap(),
        0,
        false,
        OverflowStrategy::Throw,
        true,
    );
    assert_eq!(
        p.run(&items),
        Err(CupelError::PinnedBudgetExceeded {
            pinned_tokens: 110,
            available_tokens: 100
        })
    );
}

#[test]
fn group_ids_compare_byte_for_byte_and_members_need_not_be_contiguous() {
    // "G" and "g" are different groups; g's members are split in the input.
    let items = [
        item("g-call", 10, 0.9, Some("g")),
        item("x", 10, 0.5, None),
        item("G-call", 10, 0.1, Some("G")),
        item("g-result", 10, 0.1, Some("g")),
        item("G-result", 10, 0.1, Some("G")),
    ];
    // Target 30: units g (20, 0.9) and x (10) fit; G (20) does not.
    let p = pipeline(
        ContextBudget::new(100, 30).unwrap(),
        0,
        true,
        OverflowStrategy::Throw,
        true,
    );
    // U-shaped over [g 0.9, x 0.5]: g first, x last.
    assert_eq!(
        contents(&p.run(&items).unwrap()),
        ["g-call", "g-result", "x"]
    );
}
