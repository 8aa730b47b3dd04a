//! Item variants (an extension: spec/22-variants.md): hand-derived runs
//! for each variant-aware slicer, with groups and pinned items, and the
//! invariants on random inputs — never two forms of one item, never over
//! budget, and a variant-free input sliced exactly as before.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cupel_core::{
    ContextBudget, ContextItem, ContextKind, ItemVariant, OverflowStrategy, ScoredItem,
    SelectionReport, SliceBudget, Slicer, VariantChoice, VariantReason,
};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::ReflexiveScorer;
use cupel_slicers::{
    ContiguousSlice, CountConstrainedKnapsackSlice, CountQuotaEntry, CountQuotaSlice, GreedySlice,
    KnapsackSlice, QuotaSet, QuotaSlice, ScarcityBehavior, StreamSlice,
};
use proptest::prelude::*;

fn pipeline(slicer: Arc<dyn Slicer>, max: i64, target: i64) -> Pipeline {
    Pipeline::builder()
        .scorer(ReflexiveScorer::new())
        .slicer(slicer)
        .placer(ChronologicalPlacer)
        .deduplication(false)
        .budget(ContextBudget::new(max, target).unwrap())
        .build()
        .unwrap()
}

fn item(content: &str, tokens: i64, hint: f64) -> ContextItem {
    ContextItem::builder(content, tokens)
        .future_relevance_hint(hint)
        .build()
        .unwrap()
}

/// (content, tokens, variant row) of each included item, in placed order.
fn rows(report: &SelectionReport) -> Vec<(String, i64, Option<VariantChoice>)> {
    report
        .included
        .iter()
        .map(|r| (r.item.content().to_owned(), r.item.tokens(), r.variant))
        .collect()
}

fn choice(variant: usize, reason: VariantReason, tokens_saved: i64) -> Option<VariantChoice> {
    Some(VariantChoice {
        variant,
        reason,
        tokens_saved,
    })
}

/// A 300-token log with a 60-token head+tail and a 5-token placeholder.
fn log(hint: f64, v1_value: Option<f64>) -> ContextItem {
    let v1 = ItemVariant::new("log head … tail", 60);
    let v1 = match v1_value {
        Some(v) => v1.value(v),
        None => v1,
    };
    ContextItem::builder("log: 300 tokens in full", 300)
        .future_relevance_hint(hint)
        .variant(v1)
        .variant(ItemVariant::new("[log omitted]", 5))
        .build()
        .unwrap()
}

#[test]
fn greedy_takes_the_most_complete_variant_that_fits() {
    let system = ContextItem::builder("system", 10)
        .pinned(true)
        .build()
        .unwrap();
    let items = vec![system, log(0.9, None), item("doc", 50, 0.5)];
    // Effective target 100 - 10 (pinned) = 90. Densities: doc 0.5/50 = 0.01,
    // log 0.9/300 = 0.003 for all three forms (no declared values).
    // doc: 50 <= 90, 40 left; log 300 > 40, head+tail 60 > 40, placeholder
    // 5 <= 40: taken, did_not_fit (60 > 40), saving 300 - 5 = 295.
    let report = pipeline(Arc::new(GreedySlice), 100, 100)
        .dry_run(&items)
        .unwrap();
    assert_eq!(
        rows(&report),
        vec![
            ("system".into(), 10, None),
            (
                "[log omitted]".into(),
                5,
                choice(2, VariantReason::DidNotFit, 295)
            ),
            ("doc".into(), 50, None),
        ]
    );
    // The window holds the variant's form, marked as such.
    let window = pipeline(Arc::new(GreedySlice), 100, 100)
        .run(&items)
        .unwrap();
    assert_eq!(window[1].content(), "[log omitted]");
    assert_eq!(window[1].metadata()["cupel:variant"], "2");
    assert_eq!(window[1].original_tokens(), Some(300));
    assert_eq!(window.iter().map(ContextItem::tokens).sum::<i64>(), 65); // 10 + 5 + 50
}

#[test]
fn greedy_takes_a_denser_variant_even_when_the_whole_item_fits() {
    let items = vec![log(0.9, Some(0.6)), item("doc", 50, 0.5)];
    // Densities: doc 0.5/50 = 0.01; head+tail 0.9*0.6/60 = 0.009; log and
    // placeholder 0.9/300 = 0.003. Target 400: doc (350 left), head+tail
    // 60 <= 350 although the whole log (300) fits too: denser; 290 left,
    // the log's other forms are skipped (one form per item).
    let report = pipeline(Arc::new(GreedySlice), 400, 400)
        .dry_run(&items)
        .unwrap();
    assert_eq!(
        rows(&report),
        vec![
            (
                "log head … tail".into(),
                60,
                choice(1, VariantReason::Denser, 240)
            ),
            ("doc".into(), 50, None),
        ]
    );
}

#[test]
fn knapsack_chooses_at_most_one_form_per_item() {
    let log = ContextItem::builder("log", 300)
        .future_relevance_hint(0.75)
        .variant(ItemVariant::new("log head … tail", 60).value(0.5))
        .variant(ItemVariant::new("[log omitted]", 5).value(0.25))
        .build()
        .unwrap();
    let items = vec![log, item("doc", 50, 0.5), item("note", 40, 0.25)];
    // Bucket 1, capacity 100. Values (score * value * 10000): log 7500 (300
    // tokens: never fits), head+tail 0.75*0.5 -> 3750 (60), placeholder
    // 0.75*0.25 -> 1875 (5), doc 5000 (50), note 2500 (40).
    // doc + note = 7500 (90); head+tail + note = 6250 (100);
    // doc + note + placeholder = 9375 (95): the best. Head+tail with the
    // placeholder would be two forms of one item: not a choice.
    // The log's room: 100 - 90 = 10 < 60 (head+tail): did_not_fit.
    let report = pipeline(Arc::new(KnapsackSlice::new(1).unwrap()), 100, 100)
        .dry_run(&items)
        .unwrap();
    assert_eq!(
        rows(&report),
        vec![
            (
                "[log omitted]".into(),
                5,
                choice(2, VariantReason::DidNotFit, 295)
            ),
            ("doc".into(), 50, None),
            ("note".into(), 40, None),
        ]
    );
}

#[test]
fn quota_degrades_within_the_kind_share() {
    let tool = ContextKind::TOOL_OUTPUT;
    let log = log(0.9, None)
        .to_builder()
        .kind(tool.clone())
        .build()
        .unwrap();
    let items = vec![log, item("msg", 60, 0.5)];
    // Target 200. Messages require 60% = 120, tool output is capped at 40%
    // = 80; unassigned 200 - 120 = 80 is shared by mass (the whole items'
    // tokens: tool 300, message 60, total 360): tool 80 * 300 / 360 = 66
    // (under its cap), messages 120 + 80 * 60 / 360 = 133. The tool share:
    // log 300 > 66, head+tail 60 <= 66: taken (did_not_fit), saving 240.
    // Messages: 60 <= 133.
    let quotas = QuotaSet::builder()
        .cap(tool, 40.0)
        .require(ContextKind::MESSAGE, 60.0)
        .build()
        .unwrap();
    let slicer = QuotaSlice::new(quotas, Arc::new(GreedySlice));
    let report = pipeline(Arc::new(slicer), 200, 200)
        .dry_run(&items)
        .unwrap();
    assert_eq!(
        rows(&report),
        vec![
            (
                "log head … tail".into(),
                60,
                choice(1, VariantReason::DidNotFit, 240)
            ),
            ("msg".into(), 60, None),
        ]
    );
}

#[test]
fn count_quota_counts_a_variant_once_against_its_kind() {
    let tool = ContextKind::TOOL_OUTPUT;
    let a = log(0.9, None)
        .to_builder()
        .kind(tool.clone())
        .build()
        .unwrap();
    let b = ContextItem::builder("second log", 100)
        .kind(tool.clone())
        .future_relevance_hint(0.8)
        .variant(ItemVariant::new("second log, short", 10))
        .build()
        .unwrap();
    let items = vec![a, b];
    // Cap 1 tool output, no requirement. Target 50; inner greedy:
    // densities a 0.9/300 = 0.003, b 0.8/100 = 0.008: b whole (100) > 50,
    // b short (10) <= 50 taken (40 left); a 300, 60 > 40, placeholder 5
    // taken. The cap of 1 then keeps b (first in the inner order) and
    // removes a in every form.
    let slicer = CountQuotaSlice::new(
        vec![CountQuotaEntry::new(tool, 0, 1).unwrap()],
        Arc::new(GreedySlice),
        ScarcityBehavior::Degrade,
    )
    .unwrap();
    let report = pipeline(Arc::new(slicer), 50, 50).dry_run(&items).unwrap();
    assert_eq!(
        rows(&report),
        vec![(
            "second log, short".into(),
            10,
            choice(1, VariantReason::DidNotFit, 90)
        )]
    );
    assert_eq!(report.excluded.len(), 1);
    assert_eq!(report.excluded[0].position, 0);
}

#[test]
fn a_group_member_variant_keeps_the_group_whole() {
    let call = ContextItem::builder("call lookup_logs()", 20)
        .future_relevance_hint(0.5)
        .group("t1")
        .build()
        .unwrap();
    let result = ContextItem::builder("result: 200 tokens of log", 200)
        .future_relevance_hint(0.5)
        .group("t1")
        .variant(ItemVariant::new("result head … tail", 40))
        .variant(ItemVariant::new("[result omitted]", 4))
        .build()
        .unwrap();
    let items = vec![call, result, item("msg", 30, 0.25)];
    // The group: 20 + 200 = 220 tokens, score max(0.5, 0.5) = 0.5; its
    // levels: 1 -> 20 + 40 = 60, 2 -> 20 + 4 = 24. Densities: msg
    // 0.25/30 = 0.0083, group 0.5/220 = 0.0023. Target 100: msg (70 left);
    // group 220 > 70, level 1 60 <= 70: the call whole, the result as its
    // head+tail (saving 160). Total 30 + 20 + 40 = 90.
    let report = pipeline(Arc::new(GreedySlice), 100, 100)
        .dry_run(&items)
        .unwrap();
    assert_eq!(
        rows(&report),
        vec![
            ("call lookup_logs()".into(), 20, None),
            (
                "result head … tail".into(),
                40,
                choice(1, VariantReason::DidNotFit, 160)
            ),
            ("msg".into(), 30, None),
        ]
    );
}

#[test]
fn pinned_items_go_in_whole_and_contiguous_degrades_instead_of_stopping() {
    let pinned = ContextItem::builder("pinned brief", 30)
        .pinned(true)
        .variant(ItemVariant::new("brief", 3))
        .build()
        .unwrap();
    let items = vec![
        pinned,
        item("a", 40, 0.9),
        log(0.5, None),
        item("b", 10, 0.1),
    ];
    // Effective target 100 - 30 = 70, pinned item whole (pinned items are
    // never degraded). Score order a (0.9), log (0.5), b (0.1):
    // a 40 (30 left); log 300 > 30, head+tail 60 > 30, placeholder 5 (25
    // left, did_not_fit); b 10 (15 left). Without variants the walk would
    // stop at the log and leave b out.
    let report = pipeline(Arc::new(ContiguousSlice), 100, 100)
        .dry_run(&items)
        .unwrap();
    assert_eq!(
        rows(&report),
        vec![
            ("pinned brief".into(), 30, None),
            ("a".into(), 40, None),
            (
                "[log omitted]".into(),
                5,
                choice(2, VariantReason::DidNotFit, 295)
            ),
            ("b".into(), 10, None),
        ]
    );
}

#[test]
fn report_rows_carry_the_variant_in_json_and_omit_it_otherwise() {
    let items = vec![log(0.9, None), item("doc", 50, 0.5)];
    let report = pipeline(Arc::new(GreedySlice), 100, 100)
        .dry_run(&items)
        .unwrap();
    let json = serde_json::to_value(&report).unwrap();
    // Target 100: doc 50 first (density 0.01; 50 left); log 300 > 50,
    // head+tail 60 > 50, placeholder 5: taken, saving 300 - 5 = 295.
    assert_eq!(
        json["included"][0]["variant"],
        serde_json::json!({"variant": 2, "reason": "did_not_fit", "tokens_saved": 295})
    );
    assert!(json["included"][1].get("variant").is_none());
    let back: SelectionReport = serde_json::from_value(json).unwrap();
    assert_eq!(back.included[0].variant, report.included[0].variant);
}

/// A slicer that selects everything and picks the variants it is told to.
struct Picky(Vec<cupel_core::VariantPick>);
impl Slicer for Picky {
    fn slice(
        &self,
        items: &[ScoredItem<'_>],
        _: SliceBudget,
    ) -> Result<cupel_core::SliceOutcome, cupel_core::CupelError> {
        Ok(cupel_core::SliceOutcome::selected(
            (0..items.len()).collect(),
        ))
    }
    fn slice_variants(
        &self,
        items: &[ScoredItem<'_>],
        budget: SliceBudget,
    ) -> Result<cupel_core::VariantOutcome, cupel_core::CupelError> {
        let mut out: cupel_core::VariantOutcome = self.slice(items, budget)?.into();
        out.picks.clone_from(&self.0);
        Ok(out)
    }
}

#[test]
fn a_slicer_that_picks_a_missing_variant_or_an_unselected_item_is_a_config_error() {
    use cupel_core::{CupelError, VariantPick};
    let items = vec![log(0.9, None)];
    let run = |picks: Vec<VariantPick>| pipeline(Arc::new(Picky(picks)), 1_000, 1_000).run(&items);
    // The log has 2 variants: variant 3 does not exist.
    assert_eq!(
        run(vec![VariantPick::new(0, 3, VariantReason::DidNotFit)]),
        Err(CupelError::PipelineConfig(
            "slicer picked variant 3 for index 0, which has 2 variants (or picked twice)".into()
        ))
    );
    assert!(matches!(
        run(vec![VariantPick::new(5, 1, VariantReason::DidNotFit)]),
        Err(CupelError::PipelineConfig(m)) if m.contains("index 5")
    ));
    // A valid pick is honoured.
    let window = run(vec![VariantPick::new(0, 1, VariantReason::Denser)]).unwrap();
    assert_eq!(window[0].content(), "log head … tail");
}

/// One token per whitespace-separated word.
struct Words;
impl cupel_core::TokenCounter for Words {
    fn count_tokens(&self, text: &str) -> i64 {
        text.split_whitespace().count() as i64
    }
}

#[test]
fn a_policy_declares_generators_and_a_caller_applies_them_with_its_counter() {
    use cupel_pipeline::PolicyConfig;
    let cfg = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"reflexive\"\n[variants]\nhead_tail = 20\nplaceholder = \"[{tokens} tokens omitted]\"\nmin_tokens = 50\n",
    )
    .unwrap();
    let words: Vec<String> = (1..=100).map(|i| format!("w{i}")).collect();
    let items = vec![
        ContextItem::new(words.join(" "), 100).unwrap(),
        ContextItem::new("short note", 2).unwrap(),
    ];
    let out = cfg.with_variants(&items, &Words).unwrap();
    // 100 > 50: head+tail to 20 words, then "[100 tokens omitted]" (3 words).
    let tokens: Vec<i64> = out[0].variants().iter().map(ItemVariant::tokens).collect();
    assert_eq!(tokens, [20, 3]);
    assert_eq!(out[0].variants()[1].content(), "[100 tokens omitted]");
    // 2 <= 50: unchanged, the very same item.
    assert!(out[1].ptr_eq(&items[1]));
    // Without the table, nothing changes; the key round-trips.
    let json = serde_json::to_value(&cfg).unwrap();
    assert_eq!(json["variants"]["head_tail"], 20);
    // Keys are checked like every other policy key.
    let err = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"reflexive\"\n[variants]\nhead_tial = 20\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("head_tial"), "{err}");
    // A bad size is an error when the generators are made.
    let bad = PolicyConfig::from_toml_str(
        "[[scorers]]\ntype = \"reflexive\"\n[variants]\nhead_tail = 0\n",
    )
    .unwrap();
    assert!(bad.with_variants(&items, &Words).is_err());
}

// ----- properties ---------------------------------------------------------

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
            Arc::new(KnapsackSlice::new(3).unwrap()),
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
        5 => Arc::new(ContiguousSlice::new()),
        _ => Arc::new(StreamSlice::new()),
    }
}

prop_compose! {
    fn arb_item(with_variants: bool)(
        content in 0usize..8,
        tokens in prop_oneof![1 => Just(0i64), 9 => 1i64..150],
        kind in 0usize..3,
        pinned in prop::bool::weighted(0.08),
        hint in 0.0f64..1.0,
        group in prop::option::of(0usize..4),
        shrink in prop::collection::vec((0.0f64..=1.0, prop::option::of(0.0f64..=1.0)), 0..3),
    ) -> ContextItem {
        let mut b = ContextItem::builder(format!("c{content}"), tokens)
            .kind(KINDS[kind].clone())
            .pinned(pinned)
            .future_relevance_hint(hint)
            .group_opt(group.map(|g| format!("g{g}")));
        if with_variants {
            let mut previous = tokens;
            for (k, (frac, value)) in shrink.into_iter().enumerate() {
                let t = (previous as f64 * frac) as i64;
                let mut v = ItemVariant::new(format!("c{content} v{}", k + 1), t);
                if let Some(value) = value {
                    v = v.value(value);
                }
                b = b.variant(v);
                previous = t;
            }
        }
        b.build().unwrap()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// One form per item at most, each row's form and saving consistent
    /// with the input, and the budget held.
    #[test]
    fn one_form_per_item_and_never_over_budget(
        items in prop::collection::vec(arb_item(true), 0..20),
        max in 0i64..500,
        target_frac in 0.0f64..=1.0,
        which in 0usize..7,
        truncate in any::<bool>(),
    ) {
        let target = (max as f64 * target_frac) as i64;
        let p = Pipeline::builder()
            .scorer(ReflexiveScorer::new())
            .slicer(slicer(which))
            .placer(ChronologicalPlacer)
            .deduplication(false)
            .overflow_strategy(if truncate { OverflowStrategy::Truncate } else { OverflowStrategy::Throw })
            .budget(ContextBudget::new(max, target).unwrap())
            .build()
            .unwrap();
        let Ok(report) = p.dry_run(&items) else { return Ok(()) };
        let mut seen = vec![false; items.len()];
        let mut total = 0i64;
        let mut pinned = 0i64;
        for row in &report.included {
            prop_assert!(!seen[row.position], "item {} twice", row.position);
            seen[row.position] = true;
            let input = &items[row.position];
            match row.variant {
                None => prop_assert!(row.item.ptr_eq(input)),
                Some(v) => {
                    let form = &input.variants()[v.variant - 1];
                    prop_assert_eq!(row.item.content(), form.content());
                    prop_assert_eq!(row.item.tokens(), form.tokens());
                    prop_assert_eq!(v.tokens_saved, input.tokens() - form.tokens());
                    prop_assert!(!row.item.pinned());
                }
            }
            total += row.item.tokens();
            if row.item.pinned() || row.reason == cupel_core::InclusionReason::Pinned {
                pinned += row.item.tokens();
            }
        }
        for row in &report.excluded {
            prop_assert!(!seen[row.position], "item {} both in and out", row.position);
        }
        // Count-quota requirements may commit past the target (as without
        // variants); the overflow strategy then bounds the window.
        prop_assert!(total <= target.max(pinned), "total {} target {} pinned {}", total, target, pinned);
        prop_assert!(total <= max);
    }

    /// Without variants, `slice_variants` is `slice`: same selection, same
    /// rooms, shortfalls and cap exclusions, no picks — for every built-in slicer.
    #[test]
    fn variant_free_input_slices_exactly_as_before(
        items in prop::collection::vec(arb_item(false), 0..20),
        target in 0i64..400,
        which in 0usize..7,
    ) {
        let s = slicer(which);
        let scored: Vec<ScoredItem<'_>> = items
            .iter()
            .map(|i| ScoredItem::new(i, i.future_relevance_hint().unwrap_or(0.0)))
            .collect();
        let budget = SliceBudget::new(target, target);
        let plain = s.slice(&scored, budget);
        let varied = s.slice_variants(&scored, budget);
        match (plain, varied) {
            (Ok(a), Ok(b)) => {
                prop_assert!(b.picks.is_empty());
                prop_assert_eq!(a, b.outcome);
            }
            (a, b) => prop_assert_eq!(a.err(), b.err()),
        }
    }

    /// Variants without declared values are fallbacks: when every item fits
    /// whole (target = all tokens), a window is the same with or without
    /// them, for every slicer whose room is the whole target (quota shares
    /// are smaller than their kinds' tokens, so quota is left out).
    #[test]
    fn fallback_variants_change_nothing_when_everything_fits(
        items in prop::collection::vec(arb_item(true), 0..16),
        which in prop::sample::select(vec![0usize, 1, 3, 4, 5, 6]),
    ) {
        let plain: Vec<ContextItem> = items
            .iter()
            .map(|i| {
                let undeclared: Vec<ItemVariant> = i
                    .variants()
                    .iter()
                    .map(|v| ItemVariant::new(v.content(), v.tokens()))
                    .collect();
                i.to_builder().variants(undeclared).build().unwrap()
            })
            .collect();
        let stripped: Vec<ContextItem> = plain
            .iter()
            .map(|i| i.to_builder().clear_variants().build().unwrap())
            .collect();
        // Room for every item whole, also after the knapsack's bucket
        // rounding (bucket 5: each weight rounds up by at most 4 tokens).
        let total: i64 = items.iter().map(ContextItem::tokens).sum::<i64>() + 5 * items.len() as i64 + 5;
        let p = pipeline(slicer(which), total, total);
        let with = p.run(&plain).map(|w| w.iter().map(|i| i.content().to_owned()).collect::<Vec<_>>());
        let without = p.run(&stripped).map(|w| w.iter().map(|i| i.content().to_owned()).collect::<Vec<_>>());
        prop_assert_eq!(with, without);
    }

    /// Runs are deterministic: the same input gives the same window bytes.
    #[test]
    fn same_input_same_window(
        items in prop::collection::vec(arb_item(true), 0..16),
        which in 0usize..7,
    ) {
        let p = pipeline(slicer(which), 300, 200);
        let a = p.run(&items).ok().map(|w| serde_json::to_string(&w).unwrap());
        let b = p.run(&items).ok().map(|w| serde_json::to_string(&w).unwrap());
        prop_assert_eq!(a, b);
    }
}
