//! Relevance runs over plain runs (issue 51, item 9), measured in
//! alternating blocks in one process (`cargo run --release -p
//! cupel-benches --example relevance_ratio [N...]`, default 1k, 10k and
//! 100k standard workload items): blocks of plain runs, relevance runs
//! (`bm25` in the composite, every item's text analysed per query) and
//! indexed runs (the `bm25` child reading an `IndexedBm25Scorer` that holds
//! every item) take turns, and each figure is the median of its blocks.
//! The same cases as `benches/relevance.rs`; taking turns cancels the
//! drift of a shared machine, which criterion's cases, minutes apart, do
//! not. Targets: relevance <= 3x plain; indexed <= 1.5x plain at 10k.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use cupel_benches::{items, median, relevance_pipeline, sizes_from_args, standard_pipeline};
use cupel_core::Query;
use cupel_pipeline::RunOptions;
use cupel_scorers::{Bm25Scorer, IndexedBm25Scorer};

/// As in `benches/relevance.rs`: matches the kind word of half the items.
const QUERY: &str = "memory document";

fn main() {
    let sizes = sizes_from_args(&[1_000, 10_000, 100_000]);
    let query = Query::new(QUERY);
    println!("items\tplain\trelevance\tindexed\trelevance/plain\tindexed/plain");
    for n in sizes {
        let (blocks, per) = match n {
            0..=2_000 => (30, 30),
            2_001..=20_000 => (20, 5),
            _ => (10, 1),
        };
        let owned = items(n);
        let plain = standard_pipeline(&owned).unwrap();
        let relevance = relevance_pipeline(&owned, Arc::new(Bm25Scorer::new())).unwrap();
        let index = IndexedBm25Scorer::new(Bm25Scorer::new());
        index.extend(&owned).unwrap();
        index.shrink_to_fit();
        let indexed = relevance_pipeline(&owned, Arc::new(index)).unwrap();
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        // One untimed block of each first (memos, allocator).
        for round in 0..=blocks {
            for (k, times) in times.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..per {
                    let out = match k {
                        0 => plain.run(black_box(&owned)).unwrap(),
                        1 => {
                            relevance
                                .run_with(black_box(&owned), RunOptions::new().query(&query))
                                .unwrap()
                                .items
                        }
                        _ => {
                            indexed
                                .run_with(black_box(&owned), RunOptions::new().query(&query))
                                .unwrap()
                                .items
                        }
                    };
                    black_box(out);
                }
                if round > 0 {
                    times.push(start.elapsed().as_secs_f64() / per as f64);
                }
            }
        }
        let [p, r, i] = times.map(median);
        println!(
            "{n}\t{:.3} ms\t{:.3} ms\t{:.3} ms\t{:.2}x\t{:.2}x",
            p * 1e3,
            r * 1e3,
            i * 1e3,
            r / p,
            i / p
        );
    }
}
