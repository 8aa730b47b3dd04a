#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `score_all` must equal `score` item by item (to 1e-12) for every relative
//! and composite scorer, on random item sets with tied and missing fields,
//! duplicate tags, case variants and repeated items.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use cupel_core::{ContextItem, ContextKind, FixedTimeProvider, Scorer};
use cupel_scorers::{
    CompositeScorer, DecayCurve, DecayScorer, FrequencyScorer, KindScorer, MetadataTrustScorer,
    PriorityScorer, RecencyScorer, ReflexiveScorer, ScaledScorer, TagMatch, TagScorer,
};
use proptest::prelude::*;

/// Tag names with case variants, a non-ASCII pair that must not fold, and
/// enough distinct names to push some items past 8 tags.
const TAGS: [&str; 16] = [
    "a", "A", "b", "B", "c", "d", "e", "f", "g", "h", "i", "j", "É", "é", "Long-Tag", "long-tag",
];

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 1, 12, 0, 0).unwrap()
}

#[derive(Debug, Clone)]
struct Spec {
    ts: Option<i64>,
    priority: Option<i64>,
    tags: Vec<usize>,
    hint: Option<f64>,
    kind: usize,
    trust: Option<&'static str>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        proptest::option::of(-3i64..4),
        proptest::option::of(-2i64..3),
        prop_oneof![
            4 => proptest::collection::vec(0..TAGS.len(), 0..4),
            1 => proptest::collection::vec(0..TAGS.len(), 8..14),
        ],
        proptest::option::of(prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            -0.5f64..1.5
        ]),
        0usize..6,
        proptest::option::of(prop_oneof![Just("0.3"), Just("x"), Just("NaN"), Just("2")]),
    )
        .prop_map(|(ts, priority, tags, hint, kind, trust)| Spec {
            ts,
            priority,
            tags,
            hint,
            kind,
            trust,
        })
}

fn build(specs: &[Spec], repeat: &[usize]) -> Vec<ContextItem> {
    let kinds = [
        "Message",
        "message",
        "Document",
        "ToolOutput",
        "Memory",
        "Custom",
    ];
    let mut items: Vec<ContextItem> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut b = ContextItem::builder(format!("item {i}"), 1 + i as i64)
                .kind(ContextKind::new(kinds[s.kind]).unwrap())
                .priority_opt(s.priority)
                // Whole and fractional minutes, so some timestamps tie.
                .timestamp_opt(s.ts.map(|m| base() + chrono::Duration::seconds(m * 90)))
                .future_relevance_hint_opt(s.hint)
                .tags(s.tags.iter().map(|&t| TAGS[t]));
            if let Some(t) = s.trust {
                b = b.metadata("cupel:trust", t);
            }
            b.build().unwrap()
        })
        .collect();
    // Repeat some items (same allocation at another index: a distinct peer).
    if !items.is_empty() {
        for &r in repeat {
            let copy = items[r % items.len()].clone();
            items.push(copy);
        }
    }
    items
}

fn assert_equivalent(name: &str, scorer: &dyn Scorer, items: &[ContextItem]) {
    let refs: Vec<&ContextItem> = items.iter().collect();
    let batch = scorer.score_all(&refs);
    assert_eq!(batch.len(), refs.len(), "{name}: length");
    for (i, b) in batch.iter().enumerate() {
        let single = scorer.score(i, &refs);
        let same = (b.is_nan() && single.is_nan()) || (b - single).abs() <= 1e-12;
        assert!(same, "{name}: item {i}: score_all {b} vs score {single}");
    }
}

fn composite() -> CompositeScorer {
    CompositeScorer::builder()
        .add(RecencyScorer, 1.0)
        .add(PriorityScorer, 2.0)
        .add(KindScorer::default(), 0.5)
        .add(TagScorer::new([("a", 1.0), ("É", 0.5)]).unwrap(), 1.0)
        .add(FrequencyScorer, 1.5)
        .add(ReflexiveScorer, 0.25)
        .add(MetadataTrustScorer::default(), 0.25)
        .build()
        .unwrap()
}

fn decay() -> DecayScorer {
    let clock = Arc::new(FixedTimeProvider::new(base()));
    DecayScorer::new(
        clock,
        DecayCurve::exponential(Duration::from_secs(150)).unwrap(),
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn recency(specs in proptest::collection::vec(spec(), 0..40), repeat in proptest::collection::vec(0usize..40, 0..4)) {
        assert_equivalent("recency", &RecencyScorer, &build(&specs, &repeat));
    }

    #[test]
    fn priority(specs in proptest::collection::vec(spec(), 0..40), repeat in proptest::collection::vec(0usize..40, 0..4)) {
        assert_equivalent("priority", &PriorityScorer, &build(&specs, &repeat));
    }

    #[test]
    fn frequency(specs in proptest::collection::vec(spec(), 0..60), repeat in proptest::collection::vec(0usize..60, 0..6)) {
        assert_equivalent("frequency", &FrequencyScorer, &build(&specs, &repeat));
    }

    #[test]
    fn scaled(specs in proptest::collection::vec(spec(), 0..30), repeat in proptest::collection::vec(0usize..30, 0..4)) {
        let items = build(&specs, &repeat);
        assert_equivalent("scaled(recency)", &ScaledScorer::wrap(RecencyScorer), &items);
        assert_equivalent("scaled(frequency)", &ScaledScorer::wrap(FrequencyScorer), &items);
        assert_equivalent("scaled(reflexive)", &ScaledScorer::wrap(ReflexiveScorer), &items);
        assert_equivalent("scaled(scaled(priority))", &ScaledScorer::wrap(ScaledScorer::wrap(PriorityScorer)), &items);
        assert_equivalent("scaled(composite)", &ScaledScorer::wrap(composite()), &items);
    }

    #[test]
    fn composite_of_everything(specs in proptest::collection::vec(spec(), 0..40), repeat in proptest::collection::vec(0usize..40, 0..4)) {
        let items = build(&specs, &repeat);
        let inner = Arc::new(composite());
        let nested = CompositeScorer::builder()
            .add_shared(inner.clone(), 1.0)
            .add(ScaledScorer::new(inner), 1.0)
            .add(decay(), 0.5)
            .build()
            .unwrap();
        assert_equivalent("composite", &composite(), &items);
        assert_equivalent("nested composite", &nested, &items);
    }

    #[test]
    fn absolute_scorers(specs in proptest::collection::vec(spec(), 0..40)) {
        let items = build(&specs, &[]);
        let tag = TagScorer::new([("a", 1.0), ("B", 0.5), ("é", 0.25), ("Long-Tag", 2.0), ("zz", 0.0)]).unwrap();
        assert_equivalent("tag (case-sensitive)", &tag, &items);
        let folded = tag.with_match(TagMatch::AsciiCaseInsensitive).unwrap();
        assert_equivalent("tag (ASCII case-insensitive)", &folded, &items);
        assert_equivalent("kind", &KindScorer::default(), &items);
        assert_equivalent("reflexive", &ReflexiveScorer, &items);
        assert_equivalent("trust", &MetadataTrustScorer::default(), &items);
    }

    #[test]
    fn decay_curves(specs in proptest::collection::vec(spec(), 0..40)) {
        let items = build(&specs, &[]);
        let clock = Arc::new(FixedTimeProvider::new(base()));
        let curves = [
            DecayCurve::exponential_secs(100.5).unwrap(),
            DecayCurve::step_secs([(60.0, 1.0), (180.0, 0.5), (300.0, 0.1)]).unwrap(),
            DecayCurve::window_secs(90.0).unwrap(),
        ];
        for curve in curves {
            let s = DecayScorer::new(clock.clone(), curve).unwrap().with_null_timestamp_score(0.25).unwrap();
            assert_equivalent("decay", &s, &items);
        }
    }
}

/// The overlap count of the whole-pass frequency algorithm on a larger set
/// (hundreds of items, skewed tags) against the reference scan.
#[test]
fn frequency_on_a_larger_skewed_set() {
    let mut items = Vec::new();
    for i in 0..400usize {
        let mut tags = vec![format!("own-{i}")];
        if i % 2 == 0 {
            tags.push("Common".into());
        }
        if i % 7 == 0 {
            tags.push(format!("g{}", i % 5));
        }
        if i % 50 == 0 {
            tags.extend((0..12).map(|k| format!("wide{k}")));
        }
        if i % 3 == 0 {
            tags.push("COMMON".into());
        }
        items.push(
            ContextItem::builder(format!("i{i}"), 1)
                .tags(tags)
                .build()
                .unwrap(),
        );
    }
    assert_equivalent("frequency (skewed)", &FrequencyScorer, &items);
}
