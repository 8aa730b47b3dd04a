//! Prints per-stage durations of the standard pipeline case (a profiling aid).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use cupel_benches::{budget, items};
use cupel_core::{OverflowStrategy, Scorer};
use cupel_pipeline::Pipeline;
use cupel_placers::ChronologicalPlacer;
use cupel_scorers::{
    CompositeScorer, FrequencyScorer, KindScorer, PriorityScorer, RecencyScorer, TagScorer,
};
use cupel_slicers::GreedySlice;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let items = items(n);
    let tags = TagScorer::new([
        ("tag00", 1.0),
        ("tag01", 0.8),
        ("tag02", 0.6),
        ("tag03", 0.4),
        ("tag04", 0.2),
    ])
    .unwrap();
    let children: Vec<(Arc<dyn Scorer>, f64)> = vec![
        (Arc::new(RecencyScorer::new()), 1.0),
        (Arc::new(PriorityScorer::new()), 1.0),
        (Arc::new(KindScorer::default_weights()), 1.0),
        (Arc::new(tags), 1.0),
        (Arc::new(FrequencyScorer::new()), 1.0),
    ];
    let p = Pipeline::builder()
        .scorer(CompositeScorer::new(children.clone()).unwrap())
        .slicer(GreedySlice::new())
        .placer(ChronologicalPlacer)
        .overflow_strategy(OverflowStrategy::Proceed)
        .budget(budget(&items))
        .build()
        .unwrap();
    for _ in 0..3 {
        let r = p.dry_run(&items).unwrap();
        let parts: Vec<String> = r
            .events
            .iter()
            .map(|e| format!("{}={:.2}ms", e.stage, e.duration_ms))
            .collect();
        let t = Instant::now();
        let _ = p.run(&items).unwrap();
        println!(
            "run {:.2}ms | {}",
            t.elapsed().as_secs_f64() * 1e3,
            parts.join(" ")
        );
    }
    let refs: Vec<_> = items.iter().collect();
    for (i, (s, _)) in children.iter().enumerate() {
        let t = Instant::now();
        let _ = s.score_all(&refs);
        println!("scorer {i}: {:.2}ms", t.elapsed().as_secs_f64() * 1e3);
    }
}
