//! The one seeded workload every Cupel benchmark draws from (see `BENCH-WORKLOAD.md`).
//!
//! Items, budgets, knapsack scores and the sort floor are all produced here, so
//! numbers are comparable across components, commits and implementations.

pub mod agent;

/// With the `mimalloc` feature (`cargo xtask bench --allocator mimalloc`),
/// every bench and example linking this crate allocates through mimalloc
/// instead of the system allocator: the same library code, to measure how
/// much of a run is the allocator's (see README "Benchmarks").
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use cupel_core::{
    ContextBudget, ContextItem, ContextItemBuilder, ContextKind, CupelError, OverflowStrategy,
    Scorer,
};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::{
    CompositeScorer, FrequencyScorer, KindScorer, PriorityScorer, RecencyScorer, TagScorer,
};
use cupel_slicers::GreedySlice;

/// The xorshift64 generator of the workload definition.
#[derive(Debug, Clone)]
pub struct XorShift64(u64);

impl XorShift64 {
    /// Seed of the item generator.
    pub const ITEM_SEED: u64 = 0x9E37_79B9_7F4A_7C15;
    /// Seed of the knapsack score generator.
    pub const KNAPSACK_SEED: u64 = 0xD1B5_4A32_D192_ED03;
    /// Seed of the sort-floor generator.
    pub const FLOOR_SEED: u64 = 0x2545_F491_4F6C_DD1D;

    /// A generator with state `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// `x ^= x << 13; x ^= x >> 7; x ^= x << 17; x`
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// `next() % n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// `(next() >> 11) as f64 / 2^53`, uniform in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const KINDS: [ContextKind; 4] = [
    ContextKind::MESSAGE,
    ContextKind::DOCUMENT,
    ContextKind::TOOL_OUTPUT,
    ContextKind::MEMORY,
];

/// The workload's epoch: 2025-01-01T00:00:00Z.
pub fn epoch() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// The first `n` items of the standard workload, drawn exactly as specified.
pub fn items(n: usize) -> Vec<ContextItem> {
    generate(n, |_, _, b| b)
}

/// The workload's items, each finished by `extend(i, tokens, builder)`
/// before it is built. Every item is built once, in order, by every
/// variant of the workload: a variant that rebuilt a share of the items
/// afterwards would scatter those items' allocations through the heap, and
/// its benchmarks would measure that layout as well as the pipeline.
fn generate(
    n: usize,
    mut extend: impl FnMut(usize, i64, ContextItemBuilder) -> ContextItemBuilder,
) -> Vec<ContextItem> {
    let mut rng = XorShift64::new(XorShift64::ITEM_SEED);
    let epoch = epoch();
    let mut out: Vec<ContextItem> = Vec::with_capacity(n);
    for i in 0..n {
        let tokens = 10 + rng.below(1991) as i64;
        let age_s = rng.below(2_592_000) as i64;
        let pflag = rng.below(100);
        let pval = rng.below(101) as i64;
        let kind = KINDS[rng.below(4) as usize].clone();
        let ntags = 1 + rng.below(3) as usize;
        let mut tags: Vec<u64> = Vec::with_capacity(ntags);
        while tags.len() < ntags {
            let t = rng.below(20);
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        let dflag = rng.below(100);
        let dsel = rng.below(i.max(1) as u64) as usize;
        let payload = rng.next();
        // A duplicate copies item `dsel`'s content (read back from the item:
        // no second copy of every content is kept while generating).
        let content = match out.get(dsel) {
            Some(earlier) if dflag < 5 && i > 0 => earlier.content().to_owned(),
            _ => format!("item-{i:06} {kind} synthetic payload {payload:016x}"),
        };
        let mut b = ContextItem::builder(content, tokens)
            .kind(kind)
            .timestamp(epoch - Duration::seconds(age_s))
            .tags(tags.iter().map(|t| format!("tag{t:02}")));
        if pflag < 70 {
            b = b.priority(pval);
        }
        match extend(i, tokens, b).build() {
            Ok(item) => out.push(item),
            Err(e) => unreachable_content(&e),
        }
    }
    out
}

/// The grouped variant of the workload (atomic groups, an extension): the
/// same `n` items, with items `10k` and `10k + 1` (k = 0, 1, ...) in group
/// `pair-{k}` — a fifth of the items, in pairs, like a tool call and its
/// result. Nothing else changes (no extra random draws), so the grouped and
/// the standard case differ only by the groups; same budget, same pipeline.
pub fn grouped_items(n: usize) -> Vec<ContextItem> {
    generate(n, |i, _, b| {
        if i % 10 < 2 {
            b.group(format!("pair-{}", i / 10))
        } else {
            b
        }
    })
}

/// The variant workload (item variants, an extension): the same `n`
/// items, every fifth (`i % 5 == 0`) with two variants — a quarter of its
/// tokens (`head … tail`) and an 8-token placeholder. No extra random draws,
/// so it differs from the standard case only by the variants.
pub fn variant_items(n: usize) -> Vec<ContextItem> {
    generate(n, |i, tokens, b| {
        if i % 5 == 0 {
            b.variant(cupel_core::ItemVariant::new(
                format!("item-{i:06} head … tail"),
                (tokens / 4).max(8),
            ))
            .variant(cupel_core::ItemVariant::new(
                format!("[item-{i:06} omitted]"),
                8,
            ))
        } else {
            b
        }
    })
}

#[cold]
fn unreachable_content(e: &cupel_core::CupelError) {
    // Generated content is never empty; report loudly if that ever changes.
    eprintln!("workload generator produced an invalid item: {e}");
}

/// The standard budget for `items`: max = total tokens, target = total / 4.
pub fn budget(items: &[ContextItem]) -> ContextBudget {
    let total: i64 = items.iter().map(ContextItem::tokens).sum();
    ContextBudget::new(total, total / 4)
        .unwrap_or_else(|_| ContextBudget::new(0, 0).unwrap_or_else(|_| unreachable_budget()))
}

fn unreachable_budget() -> ContextBudget {
    // new(0, 0) always validates; this is never reached.
    std::process::abort()
}

/// The standard case's scorer: a composite of recency, priority, kind
/// (default weights), tag (tag00 1.0, tag01 0.8, tag02 0.6, tag03 0.4, tag04
/// 0.2) and frequency, each with weight 1.0.
///
/// # Errors
/// Never in practice; construction errors are passed through.
pub fn standard_scorer() -> Result<CompositeScorer, CupelError> {
    CompositeScorer::new(standard_scorer_children()?)
}

/// A composite child: a shared scorer and its weight.
pub type WeightedScorer = (Arc<dyn Scorer>, f64);

/// The five children of [`standard_scorer`], with their weights.
///
/// # Errors
/// Never in practice; construction errors are passed through.
pub fn standard_scorer_children() -> Result<Vec<WeightedScorer>, CupelError> {
    let tags = TagScorer::new([
        ("tag00", 1.0),
        ("tag01", 0.8),
        ("tag02", 0.6),
        ("tag03", 0.4),
        ("tag04", 0.2),
    ])?;
    let children: Vec<WeightedScorer> = vec![
        (Arc::new(RecencyScorer::new()), 1.0),
        (Arc::new(PriorityScorer::new()), 1.0),
        (Arc::new(KindScorer::default_weights()), 1.0),
        (Arc::new(tags), 1.0),
        (Arc::new(FrequencyScorer::new()), 1.0),
    ];
    Ok(children)
}

/// The standard pipeline case for `items`: [`standard_scorer`], greedy
/// slicing, chronological placement, deduplication on, overflow `Proceed`,
/// under [`budget`]`(items)`.
///
/// # Errors
/// Never in practice; construction errors are passed through.
pub fn standard_pipeline(items: &[ContextItem]) -> Result<Pipeline, CupelError> {
    pipeline_around(items, standard_scorer()?)
}

/// The standard case's stages around `scorer`: greedy slicing,
/// chronological placement, deduplication on, overflow `Proceed`, under
/// [`budget`]`(items)`.
fn pipeline_around(items: &[ContextItem], scorer: CompositeScorer) -> Result<Pipeline, CupelError> {
    Pipeline::builder()
        .scorer(scorer)
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .overflow_strategy(OverflowStrategy::Proceed)
        .deduplication(true)
        .budget(budget(items))
        .build()
}

/// [`standard_pipeline`] with `relevance` added to its composite at weight
/// 1: the relevance case of issue 51 (`benches/relevance.rs`,
/// `examples/relevance_ratio.rs`).
///
/// # Errors
/// Never in practice; construction errors are passed through.
pub fn relevance_pipeline(
    items: &[ContextItem],
    relevance: Arc<dyn Scorer>,
) -> Result<Pipeline, CupelError> {
    let mut b = CompositeScorer::builder();
    for (child, weight) in standard_scorer_children()? {
        b = b.add_shared(child, weight);
    }
    pipeline_around(items, b.add_shared(relevance, 1.0).build()?)
}

/// `n` knapsack scores from the second generator, in item order.
pub fn knapsack_scores(n: usize) -> Vec<f64> {
    let mut rng = XorShift64::new(XorShift64::KNAPSACK_SEED);
    (0..n).map(|_| rng.unit_f64()).collect()
}

/// The floor input: `n` `(f64, u32)` pairs.
pub fn floor_pairs(n: usize) -> Vec<(f64, u32)> {
    let mut rng = XorShift64::new(XorShift64::FLOOR_SEED);
    (0..n).map(|i| (rng.unit_f64(), i as u32)).collect()
}

/// The floor operation: stable sort, descending, index tie-break.
pub fn floor_sort(v: &mut [(f64, u32)]) {
    v.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
}

/// The median of `v` (the upper one of an even count); `NaN` for none.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The item counts given on the command line, or `default` without any.
pub fn sizes_from_args(default: &[usize]) -> Vec<usize> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    if sizes.is_empty() {
        default.to_vec()
    } else {
        sizes
    }
}

/// Whether `CUPEL_BENCH_QUICK` asks for a short run (`cargo xtask bench --quick`).
pub fn quick() -> bool {
    std::env::var_os("CUPEL_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_is_deterministic_and_prefix_stable() {
        let a = items(200);
        let b = items(50);
        assert_eq!(&a[..50], &b[..]);
        assert!(a.iter().all(|i| (10..=2000).contains(&i.tokens())));
        assert!(a.iter().all(|i| (1..=3).contains(&i.tags().len())));
    }

    #[test]
    fn grouped_workload_pairs_a_fifth_of_the_items() {
        let plain = items(100);
        let grouped = grouped_items(100);
        assert_eq!(grouped.iter().filter(|i| i.group().is_some()).count(), 20);
        assert_eq!(grouped[10].group(), Some("pair-1"));
        assert_eq!(grouped[11].group(), Some("pair-1"));
        assert_eq!(grouped[12].group(), None);
        for (a, b) in plain.iter().zip(&grouped) {
            assert_eq!((a.content(), a.tokens()), (b.content(), b.tokens()));
        }
    }

    #[test]
    fn grouped_and_variant_items_are_the_standard_items_with_their_additions() {
        // Built in one pass, they must equal the standard items given the
        // group or the variants afterwards (field for field).
        let plain = items(60);
        for (i, (a, b)) in plain.iter().zip(grouped_items(60)).enumerate() {
            let expected = if i % 10 < 2 {
                a.to_builder()
                    .group(format!("pair-{}", i / 10))
                    .build()
                    .unwrap()
            } else {
                a.clone()
            };
            assert!(expected == b, "grouped item {i}");
        }
        for (i, (a, b)) in plain.iter().zip(variant_items(60)).enumerate() {
            let expected = if i % 5 == 0 {
                a.to_builder()
                    .variant(cupel_core::ItemVariant::new(
                        format!("item-{i:06} head … tail"),
                        (a.tokens() / 4).max(8),
                    ))
                    .variant(cupel_core::ItemVariant::new(
                        format!("[item-{i:06} omitted]"),
                        8,
                    ))
                    .build()
                    .unwrap()
            } else {
                a.clone()
            };
            assert!(expected == b, "variant item {i}");
        }
    }

    #[test]
    fn xorshift_first_values() {
        // x0 = 0x9E3779B97F4A7C15 stepped once by hand-checked shifts.
        let mut r = XorShift64::new(1);
        // 1 ^ (1<<13) = 0x2001; ^ (>>7) = 0x2001 ^ 0x40 = 0x2041; ^ (<<17) = 0x2041 ^ 0x40820000
        assert_eq!(r.next(), 0x4082_2041);
    }
}
