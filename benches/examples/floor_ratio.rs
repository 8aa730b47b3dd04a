//! `run` over the sort floor, measured in alternating blocks in one
//! process (`cargo run --release -p cupel-benches --example floor_ratio
//! [N...]`, default 1k, 10k, 100k and 1M items): blocks of plain runs,
//! grouped runs and floor sorts take turns, and each figure is the median
//! of its blocks. On a machine whose speed drifts (a shared VM), criterion
//! measures the floor and the run minutes apart and their ratio moves with
//! the drift; taking turns cancels it. The floor is the one of
//! `BENCH-WORKLOAD.md` (a stable sort of N `(f64, u32)` pairs, the copy
//! made outside the timed part). Add `--features mimalloc` to measure
//! under mimalloc.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use cupel_benches::{
    floor_pairs, floor_sort, grouped_items, items, median, sizes_from_args, standard_pipeline,
};

fn main() {
    let sizes = sizes_from_args(&[1_000, 10_000, 100_000, 1_000_000]);
    for n in sizes {
        // (blocks, runs per block)
        let (blocks, per) = match n {
            0..=2_000 => (30, 50),
            2_001..=20_000 => (20, 10),
            20_001..=200_000 => (10, 3),
            _ => (5, 1),
        };
        let plain = items(n);
        let grouped = grouped_items(n);
        let pipeline = standard_pipeline(&plain).unwrap();
        let pairs = floor_pairs(n);
        let (mut run, mut run_grouped, mut floor) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..blocks {
            let t = Instant::now();
            for _ in 0..per {
                black_box(pipeline.run(black_box(&plain)).unwrap());
            }
            run.push(t.elapsed().as_secs_f64() * 1e3 / f64::from(per));
            let t = Instant::now();
            for _ in 0..per {
                black_box(pipeline.run(black_box(&grouped)).unwrap());
            }
            run_grouped.push(t.elapsed().as_secs_f64() * 1e3 / f64::from(per));
            let mut sorting = 0.0;
            for _ in 0..per {
                let mut v = pairs.clone();
                let t = Instant::now();
                floor_sort(black_box(&mut v));
                sorting += t.elapsed().as_secs_f64();
                black_box(v);
            }
            floor.push(sorting * 1e3 / f64::from(per));
        }
        let (run, run_grouped, floor) = (median(run), median(run_grouped), median(floor));
        println!(
            "{n:>8} items: floor {floor:.3} ms, run {run:.3} ms ({:.2}x the floor), \
             run_grouped {run_grouped:.3} ms ({:.3} of plain)",
            run / floor,
            run_grouped / run
        );
    }
}
