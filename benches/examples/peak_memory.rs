//! Runs the standard pipeline case once over N items (default 1,000,000), for
//! peak-memory measurement: `/usr/bin/time -v target/release/examples/peak_memory`.
//! Prints the window size; `items` prints the footprint of the items alone.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_benches::{items, standard_pipeline};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let only_items = args.next().as_deref() == Some("items");
    let items = items(n);
    if only_items {
        println!("{} items built", items.len());
        return;
    }
    let p = standard_pipeline(&items).unwrap();
    let window = p.run(&items).unwrap();
    println!("{} items, window of {}", items.len(), window.len());
}
