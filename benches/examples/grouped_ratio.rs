//! The grouped workload's run time over the plain one's, measured in
//! alternating blocks in one process (`cargo run --release -p
//! cupel-benches --example grouped_ratio`). On a machine whose speed drifts
//! (a shared VM), criterion's back-to-back cases can differ by more than the
//! grouped path costs; alternating blocks of each and taking the median of
//! the blocks cancels that drift. Add `--features mimalloc` to measure under
//! mimalloc.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use cupel_benches::{grouped_items, items, standard_pipeline};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // (items, blocks, runs per block)
    for (n, blocks, per) in [(1_000, 40, 50), (10_000, 30, 10), (100_000, 10, 3)] {
        let plain = items(n);
        let grouped = grouped_items(n);
        let pipeline = standard_pipeline(&plain).unwrap();
        let block = |input: &[cupel_core::ContextItem]| {
            let t = Instant::now();
            for _ in 0..per {
                black_box(pipeline.run(black_box(input)).unwrap());
            }
            t.elapsed().as_secs_f64() * 1e3 / f64::from(per)
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..blocks {
            a.push(block(&plain));
            b.push(block(&grouped));
        }
        let (a, b) = (median(a), median(b));
        println!(
            "{n:>7} items: run {a:.4} ms, run_grouped {b:.4} ms, grouped/plain {:.3}",
            b / a
        );
    }
}
