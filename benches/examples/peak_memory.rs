//! Runs the standard pipeline case once over N items (default 1,000,000), for
//! peak-memory measurement: `/usr/bin/time -v target/release/examples/peak_memory`.
//! Prints the window size; a second argument `items` stops after building
//! the items (their footprint alone), `grouped` runs the grouped workload.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_benches::{grouped_items, items, standard_pipeline};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mode = args.next();
    let only_items = mode.as_deref() == Some("items");
    let items = if mode.as_deref() == Some("grouped") {
        grouped_items(n)
    } else {
        items(n)
    };
    if only_items {
        println!("{} items built", items.len());
        return;
    }
    let p = standard_pipeline(&items).unwrap();
    let window = p.run(&items).unwrap();
    println!("{} items, window of {}", items.len(), window.len());
}
