//! (c) The pipeline with arbitrary items, budgets and policies
//! (structure-aware), in up to four atomic groups. Asserts: no panic; every
//! group whole or absent in the window, its members adjacent; the window
//! within the budget unless the overflow strategy is `proceed` (a pinned
//! member's group counts as pinned); every input item in the report
//! exactly once; `run` and `dry_run` give the same window; identical input
//! gives identical output.
#![no_main]

use std::collections::HashMap;

use arbitrary::Arbitrary;
use chrono::{TimeZone, Utc};
use cupel_core::{ContextBudget, ContextItem};
use cupel_pipeline::{
    CountQuotaConfig, CurveConfig, InnerScorer, KindWeightConfig, Pipeline, PlacerType,
    KnapsackSlicerConfig, PolicyConfig, QuotaConfig, ScorerConfig, ScorerType, SlicerConfig,
    SlicerType, TagWeightConfig,
};
use libfuzzer_sys::fuzz_target;

const KINDS: [&str; 5] = [
    "Message",
    "Document",
    "ToolOutput",
    "Memory",
    "SystemPrompt",
];
const CONTENTS: [&str; 6] = ["a", "b", "c", "same", "ok", "x y z"];
const TAGS: [&str; 4] = ["t1", "t2", "urgent", "Urgent"];

#[derive(Debug, Arbitrary)]
struct Item {
    content: u8,
    tokens: Tokens,
    kind: u8,
    priority: Option<i8>,
    pinned: bool,
    hint: Option<i8>,
    age_secs: Option<u16>,
    tags: Vec<u8>,
    trust: Option<u8>,
    /// An atomic group among four ids, so that groups repeat, interleave
    /// and hold pinned, negative and duplicate members.
    group: Option<u8>,
}

#[derive(Debug, Arbitrary)]
enum Tokens {
    Small(u8),
    Medium(u16),
    Negative(i8),
    Huge(i64),
}

impl Tokens {
    fn value(&self) -> i64 {
        match self {
            Tokens::Small(t) => i64::from(*t),
            Tokens::Medium(t) => i64::from(*t),
            Tokens::Negative(t) => i64::from(*t).min(0) - 1,
            Tokens::Huge(t) => *t,
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Scorer {
    kind: u8,
    weight: u8,
    nested: Option<Box<Scorer>>,
    children: Vec<Scorer>,
}

#[derive(Debug, Arbitrary)]
struct Policy {
    scorers: Vec<Scorer>,
    slicer: u8,
    bucket: u8,
    placer: bool,
    dedup: bool,
    overflow: u8,
    quota_kind: u8,
    require: u8,
    cap: u8,
    inner_knapsack: bool,
    throw_scarcity: bool,
}

#[derive(Debug, Arbitrary)]
struct Input {
    items: Vec<Item>,
    max_tokens: u16,
    target_tokens: u16,
    output_reserve: u8,
    wide_budget: bool,
    policy: Policy,
}

fn reference() -> chrono::DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000, 0)
        .single()
        .unwrap_or_default()
}

fn scorer(s: &Scorer, depth: usize) -> ScorerConfig {
    let names = [
        "recency",
        "priority",
        "frequency",
        "reflexive",
        "kind",
        "tag",
        "composite",
        "scaled",
        "decay",
        "metadata_trust",
        "metadata_key",
    ];
    let name = names[usize::from(s.kind) % names.len()];
    let t = ScorerType::from_name(name).unwrap_or(ScorerType::Priority);
    let c = match (name, ScorerConfig::new(t)) {
        ("kind", ScorerConfig::Kind(mut k)) if s.weight % 2 == 0 => {
            k.weights = Some(vec![KindWeightConfig::new(
                KINDS[usize::from(s.weight) % KINDS.len()],
                0.7,
            )]);
            ScorerConfig::Kind(k)
        }
        (_, ScorerConfig::Tag(mut tag)) => {
            tag.tag_weights = Some(vec![
                TagWeightConfig::new("urgent", 2.0),
                TagWeightConfig::new("t1", 1.0),
            ]);
            tag.case_insensitive_tags = Some(s.weight % 2 == 0);
            ScorerConfig::Tag(tag)
        }
        (_, ScorerConfig::Composite(mut comp)) => {
            let mut children: Vec<ScorerConfig> = if depth < 3 {
                s.children
                    .iter()
                    .take(3)
                    .map(|k| scorer(k, depth + 1))
                    .collect()
            } else {
                Vec::new()
            };
            if children.is_empty() {
                children.push(ScorerConfig::new(ScorerType::Priority));
            }
            comp.children = Some(children);
            ScorerConfig::Composite(comp)
        }
        (_, ScorerConfig::Scaled(mut scaled)) => {
            let inner = match (&s.nested, depth < 3) {
                (Some(n), true) => scorer(n, depth + 1),
                _ => ScorerConfig::new(ScorerType::Recency),
            };
            scaled.inner_scorer = Some(InnerScorer::Config(Box::new(inner)));
            ScorerConfig::Scaled(scaled)
        }
        (_, ScorerConfig::Decay(mut d)) => {
            d.reference_time = Some(reference());
            d.curve = Some(match s.weight % 3 {
                0 => CurveConfig::Exponential {
                    half_life_secs: 600.0,
                },
                1 => CurveConfig::Window {
                    max_age_secs: 3000.0,
                },
                _ => CurveConfig::Step {
                    windows: vec![cupel_pipeline::StepWindowConfig::new(1000.0, 0.9)],
                },
            });
            ScorerConfig::Decay(d)
        }
        (_, ScorerConfig::MetadataKey(mut m)) => {
            m.key = Some("src".into());
            m.value = Some("a".into());
            m.boost = Some(2.0);
            ScorerConfig::MetadataKey(m)
        }
        (_, other) => other,
    };
    c.weight(f64::from(s.weight % 5) + 0.5)
}

fn policy(p: &Policy) -> PolicyConfig {
    let mut scorers: Vec<ScorerConfig> = p.scorers.iter().take(4).map(|s| scorer(s, 1)).collect();
    if scorers.is_empty() {
        scorers.push(ScorerConfig::new(ScorerType::Priority));
    }
    let slicers = [
        "greedy",
        "knapsack",
        "quota",
        "count_quota",
        "count_constrained_knapsack",
    ];
    let name = slicers[usize::from(p.slicer) % slicers.len()];
    let kind = KINDS[usize::from(p.quota_kind) % KINDS.len()].to_string();
    let mut bucket = KnapsackSlicerConfig::default();
    bucket.bucket_size = Some(i64::from(p.bucket % 50) + 1);
    let scarcity = Some(if p.throw_scarcity {
        cupel_slicers::ScarcityBehavior::Throw
    } else {
        cupel_slicers::ScarcityBehavior::Degrade
    });
    let require = i64::from(p.require % 4);
    let count = vec![CountQuotaConfig::new(
        kind.clone(),
        require,
        require + i64::from(p.cap % 4),
    )];
    let inner = p.inner_knapsack.then_some(SlicerType::Knapsack);
    let slicer = match SlicerConfig::new(SlicerType::from_name(name).unwrap_or(SlicerType::Greedy)) {
        SlicerConfig::Quota(mut q) => {
            let require = f64::from(p.require % 60);
            q.quotas = vec![QuotaConfig::new(kind, require, require + f64::from(p.cap % 40))];
            q.inner_slicer = inner;
            SlicerConfig::Quota(q)
        }
        SlicerConfig::CountQuota(mut q) => {
            (q.entries, q.scarcity_behavior, q.inner_slicer) = (count, scarcity, inner);
            SlicerConfig::CountQuota(q)
        }
        SlicerConfig::CountConstrainedKnapsack(mut q) => {
            (q.entries, q.scarcity_behavior) = (count, scarcity);
            SlicerConfig::CountConstrainedKnapsack(q)
        }
        other => other,
    };
    // A knapsack, or a decorator over a knapsack, gets a bucket size.
    let slicer = if matches!(name, "knapsack" | "count_constrained_knapsack") || inner.is_some() {
        slicer.with_knapsack_keys(&bucket)
    } else {
        slicer
    };
    let mut cfg = PolicyConfig::from_toml_str("scorers = [{ type = \"priority\" }]")
        .unwrap_or_else(|_| unreachable!());
    cfg.scorers = scorers;
    cfg.slicer = slicer;
    cfg.placer = if p.placer {
        cupel_pipeline::ComponentType::Builtin(PlacerType::Chronological)
    } else {
        cupel_pipeline::ComponentType::Builtin(PlacerType::UShaped)
    };
    cfg.deduplication = p.dedup;
    cfg.overflow_strategy = match p.overflow % 3 {
        0 => cupel_core::OverflowStrategy::Throw,
        1 => cupel_core::OverflowStrategy::Truncate,
        _ => cupel_core::OverflowStrategy::Proceed,
    };
    cfg
}

fn item(it: &Item) -> Option<ContextItem> {
    let content = CONTENTS[usize::from(it.content) % CONTENTS.len()];
    let mut b = ContextItem::builder(content, it.tokens.value())
        .kind(cupel_core::ContextKind::new(KINDS[usize::from(it.kind) % KINDS.len()]).ok()?)
        .priority_opt(it.priority.map(i64::from))
        .pinned(it.pinned)
        .future_relevance_hint_opt(it.hint.map(|h| f64::from(h) / 64.0))
        .timestamp_opt(
            it.age_secs
                .map(|a| reference() - chrono::TimeDelta::seconds(i64::from(a))),
        )
        .tags(
            it.tags
                .iter()
                .take(3)
                .map(|t| TAGS[usize::from(*t) % TAGS.len()].to_string()),
        );
    let mut meta = std::collections::BTreeMap::new();
    if let Some(t) = it.trust {
        meta.insert(
            "cupel:trust".to_string(),
            format!("{}", f64::from(t) / 200.0),
        );
        meta.insert(
            "src".to_string(),
            if t % 2 == 0 { "a" } else { "b" }.to_string(),
        );
    }
    b = b
        .metadata_map(meta)
        .group_opt(it.group.map(|g| format!("g{}", g % 4)));
    b.build().ok()
}

fn window_ids(items: &[ContextItem]) -> Vec<usize> {
    items.iter().map(ContextItem::ptr_id).collect()
}

fuzz_target!(|input: Input| {
    let items: Vec<ContextItem> = input.items.iter().take(64).filter_map(item).collect();
    let (max, target) = if input.wide_budget {
        (i64::MAX, i64::MAX - 1)
    } else {
        (i64::from(input.max_tokens), i64::from(input.target_tokens))
    };
    let Ok(budget) = ContextBudget::builder(max, target)
        .output_reserve(i64::from(input.output_reserve))
        .build()
    else {
        return;
    };
    let cfg = policy(&input.policy);
    let Ok(built) = cfg.build() else {
        return;
    };
    let pipeline = Pipeline::new(built.clone(), budget.clone());
    let run = pipeline.run(&items);
    let dry = pipeline.dry_run(&items);
    // Identical input, identical output (a second pipeline from the same config).
    let again = Pipeline::new(cfg.build().unwrap_or(built), budget.clone()).run(&items);
    assert_eq!(
        run.as_ref()
            .map(|w| window_ids(w))
            .map_err(ToString::to_string),
        again
            .as_ref()
            .map(|w| window_ids(w))
            .map_err(ToString::to_string),
        "identical input, different output"
    );
    match (&run, &dry) {
        (Ok(window), Ok(report)) => {
            // A group is in the window whole or not at all, its members
            // next to each other.
            let mut sizes: HashMap<&str, usize> = HashMap::new();
            for g in items.iter().filter_map(ContextItem::group) {
                *sizes.entry(g).or_default() += 1;
            }
            for (g, n) in &sizes {
                let at: Vec<usize> = (0..window.len())
                    .filter(|&k| window[k].group() == Some(*g))
                    .collect();
                if let (Some(first), Some(last)) = (at.first(), at.last()) {
                    assert_eq!(at.len(), *n, "group {g} is partial");
                    assert_eq!(last - first + 1, *n, "group {g} is not adjacent");
                }
            }
            // run and dry_run agree on the window.
            let from_report: Vec<usize> = report.included.iter().map(|i| i.item.ptr_id()).collect();
            assert_eq!(window_ids(window), from_report, "run and dry_run differ");
            // Every input item in the report exactly once.
            let mut seen: HashMap<usize, usize> = HashMap::new();
            for id in report
                .included
                .iter()
                .map(|i| i.item.ptr_id())
                .chain(report.excluded.iter().map(|e| e.item.ptr_id()))
            {
                *seen.entry(id).or_default() += 1;
            }
            assert_eq!(seen.len(), items.len(), "report does not hold every item");
            for it in &items {
                assert_eq!(seen.get(&it.ptr_id()), Some(&1), "item not exactly once");
            }
            // Within the budget unless overflow is proceed.
            if cfg.overflow_strategy != cupel_core::OverflowStrategy::Proceed {
                let total: i128 = window.iter().map(|i| i128::from(i.tokens())).sum();
                // A pinned member pins its whole group (AG-1).
                let pinned_groups: Vec<&str> = items
                    .iter()
                    .filter(|i| i.pinned())
                    .filter_map(ContextItem::group)
                    .collect();
                let pinned: i128 = window
                    .iter()
                    .filter(|i| i.pinned() || i.group().is_some_and(|g| pinned_groups.contains(&g)))
                    .map(|i| i128::from(i.tokens()))
                    .sum();
                let target = i128::from(budget.target_tokens());
                assert!(
                    total <= target.max(pinned),
                    "window of {total} tokens over target {target} (pinned {pinned})"
                );
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        (a, b) => panic!(
            "run and dry_run disagree: {:?} vs {:?}",
            a.is_ok(),
            b.is_ok()
        ),
    }
});
