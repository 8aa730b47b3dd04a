//! Prints per-stage durations of the standard pipeline case and the cost of
//! each scorer's whole pass (a profiling aid: `cargo run --release -p
//! cupel-benches --example stage_times [N] [grouped]`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::Instant;

use cupel_benches::{grouped_items, items, standard_pipeline, standard_scorer_children};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let grouped = std::env::args().nth(2).is_some_and(|a| a == "grouped");
    let items = if grouped { grouped_items(n) } else { items(n) };
    let p = standard_pipeline(&items).unwrap();
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
            "run {:.2}ms | dry_run stages: {}",
            t.elapsed().as_secs_f64() * 1e3,
            parts.join(" ")
        );
    }
    let refs: Vec<_> = items.iter().collect();
    let names = ["recency", "priority", "kind", "tag", "frequency"];
    for (name, (s, _)) in names.iter().zip(standard_scorer_children().unwrap()) {
        let t = Instant::now();
        let _ = s.score_all(&refs);
        println!("{name}: {:.2}ms", t.elapsed().as_secs_f64() * 1e3);
    }
}
